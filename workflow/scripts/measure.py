from featlearn.config import spec_json
from featlearn.jobs import load_tensors, start
from featlearn.metrics.measure import measure_run
from featlearn.store import provenance, write_store

log = start(snakemake.log[0], snakemake.threads)
spec = snakemake.params.spec
ds = measure_run(load_tensors(snakemake.input.run), load_tensors(snakemake.input.data), spec)
attrs = provenance(spec_json(spec), snakemake.config["scale"], snakemake.rule, "synthetic (generated)")
write_store(ds, snakemake.output[0], attrs)
