import importlib

from featlearn.pipeline import usage
from featlearn.pipeline.jobs import job_device, load_tensors, start
from featlearn.train import train, training_tensors

# Optimizers that measure the network while training, and the metric module they need (featlearn.pipeline.deps reads
# this).
DISPATCH = {"slo_adaptive": "featlearn.metrics.nfa"}

gpus = snakemake.resources.get("gpu", 0)
log = start(snakemake.log[0], snakemake.params.spec["threads"], gpus)
device = job_device(snakemake.config["device"], gpus)
spec = snakemake.params.spec
optimizer = spec["train"]["optimizer"]
layer_nfcs = importlib.import_module(DISPATCH[optimizer]).hidden_layer_nfcs if optimizer in DISPATCH else None
data = load_tensors(snakemake.input.data)
points = training_tensors(data)
n = len(points.get("x", points.get("tokens")))
# A run that cannot land is rescued with its usage record: put back alone, it would be trained again.
with usage.recorded(snakemake.output.usage, str(device), [snakemake.output.run], [snakemake.input.data], n=n):
    record = train(spec, data, snakemake.output.run, snakemake.params.checkpoint, device, layer_nfcs)
    log.info("%s: %s on %s after %.1f s", snakemake.output.run, record["status"], device, record["seconds"])
