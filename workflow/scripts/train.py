import importlib

from featlearn import optim
from featlearn.pipeline import usage
from featlearn.pipeline.jobs import job_device, load_tensors, start
from featlearn.train import train, training_tensors

gpus = snakemake.resources.get("gpu", 0)
log = start(snakemake.log[0], snakemake.params.spec["threads"], gpus)
device = job_device(snakemake.config["device"], gpus)
spec = snakemake.params.spec
metric = optim.metrics(spec["train"]["optimizer"])  # what steers the optimizer, if anything (its table says)
layer_nfcs = importlib.import_module(metric).hidden_layer_nfcs if metric else None
data = load_tensors(snakemake.input.data)
points = training_tensors(data)
n = len(points.get("x", points.get("tokens")))
# A run that cannot land is rescued with its usage record: put back alone, it would be trained again.
with usage.recorded(snakemake.output.usage, str(device), [snakemake.output.run], [snakemake.input.data], n=n):
    record = train(spec, data, snakemake.output.run, snakemake.params.checkpoint, device, layer_nfcs)
    log.info("%s: %s on %s after %.1f s", snakemake.output.run, record["status"], device, record["seconds"])
