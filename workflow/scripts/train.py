from featlearn.jobs import load_tensors, start
from featlearn.train import train

log = start(snakemake.log[0], snakemake.threads, snakemake.resources.get("gpu", 0))
data = load_tensors(snakemake.input.data)
record = train(snakemake.params.spec, data, snakemake.output[0], snakemake.params.checkpoint)
log.info("%s: %s after %.1f s", snakemake.output[0], record["status"], record["seconds"])
