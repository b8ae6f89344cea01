import time

from featlearn.config import check_spec, spec_json
from featlearn.pipeline import numerics, usage
from featlearn.pipeline.experiments import kind_of
from featlearn.pipeline.jobs import job_device, load_tensors, start
from featlearn.pipeline.store import provenance, write_store

gpus = snakemake.resources.get("gpu", 0)
log = start(snakemake.log[0], snakemake.params.unit["threads"], gpus)
device = job_device(snakemake.config["device"], gpus)
began = time.monotonic()
unit = snakemake.params.unit
data = [load_tensors(path) for path in snakemake.input.data]
run = load_tensors(snakemake.input.run[0]) if snakemake.input.run else None
if run is not None:  # the run must be the one this unit names, not one left over from another configuration
    check_spec(snakemake.input.run[0], run["spec"], unit)
# A store that cannot land is rescued with its usage record: put back alone, it would be measured again.
with usage.recorded(snakemake.output.usage, str(device), [snakemake.output.store],
                    [*snakemake.input.data, *snakemake.input.run]):
    ds = kind_of(unit["kind"]).measure(unit, data, run, device)
    attrs = provenance(spec_json(unit), snakemake.params.scale, snakemake.rule, ds.attrs["data_source"],
                       numerics.describe(unit["threads"], device))
    write_store(ds, snakemake.output.store, attrs)
    log.info("%s: measured on %s in %.1f s", snakemake.output.store, device, time.monotonic() - began)
