from featlearn.config import spec_json
from featlearn.jobs import job_device, load_tensors, start
from featlearn.rfm.experiment import deep_rfm_dataset
from featlearn.store import provenance, write_store

gpus = snakemake.resources.get("gpu", 0)
log = start(snakemake.log[0], snakemake.threads, gpus)
exp = snakemake.params.experiment
data = load_tensors(snakemake.input.data)
ds = deep_rfm_dataset(exp, snakemake.wildcards.dataset, data, job_device(snakemake.config["device"], gpus))
attrs = provenance(spec_json(exp), snakemake.config["scale"], snakemake.rule, data["source"])
write_store(ds, snakemake.output[0], attrs)
