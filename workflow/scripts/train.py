import importlib

from featlearn.jobs import job_device, load_tensors, start
from featlearn.train import train

# Optimizers that measure the network while training, and the metric module they need (featlearn.deps reads this).
DISPATCH = {"slo_adaptive": "featlearn.metrics.nfa"}

gpus = snakemake.resources.get("gpu", 0)
log = start(snakemake.log[0], snakemake.threads, gpus)
device = job_device(snakemake.config["device"], gpus)
spec = snakemake.params.spec
optimizer = spec["train"]["optimizer"]
layer_nfcs = importlib.import_module(DISPATCH[optimizer]).hidden_layer_nfcs if optimizer in DISPATCH else None
data = load_tensors(snakemake.input.data)
record = train(spec, data, snakemake.output[0], snakemake.params.checkpoint, device, layer_nfcs)
log.info("%s: %s on %s after %.1f s", snakemake.output[0], record["status"], device, record["seconds"])
