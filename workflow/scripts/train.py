from featlearn.jobs import job_device, load_tensors, start
from featlearn.train import train

gpus = snakemake.resources.get("gpu", 0)
log = start(snakemake.log[0], snakemake.threads, gpus)
device = job_device(snakemake.config["device"], gpus)
data = load_tensors(snakemake.input.data)
record = train(snakemake.params.spec, data, snakemake.output[0], snakemake.params.checkpoint, device)
log.info("%s: %s on %s after %.1f s", snakemake.output[0], record["status"], device, record["seconds"])
