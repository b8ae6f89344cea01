import time

from featlearn.config import spec_json
from featlearn.jobs import job_device, load_tensors, start
from featlearn.metrics.measure import measure_run
from featlearn.store import provenance, write_store

gpus = snakemake.resources.get("gpu", 0)
log = start(snakemake.log[0], snakemake.threads, gpus)
device = job_device(snakemake.config["device"], gpus)
began = time.monotonic()
spec = snakemake.params.spec
data = load_tensors(snakemake.input.data)
ds = measure_run(load_tensors(snakemake.input.run), data, spec, device)
source = data.get("source", "synthetic (generated)")
attrs = provenance(spec_json(spec), snakemake.config["scale"], snakemake.rule, source)
write_store(ds, snakemake.output[0], attrs)
log.info("%s: measured on %s in %.1f s", snakemake.output[0], device, time.monotonic() - began)
