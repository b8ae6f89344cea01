from featlearn.config import spec_json
from featlearn.jobs import start
from featlearn.metrics.measure import combine_runs
from featlearn.store import provenance, read_store, write_store

log = start(snakemake.log[0])
points = snakemake.params.points
stores = {run: (points[run], read_store(path)) for run, path in zip(points, snakemake.input.runs)}
# one line per distinct source (the datasets of a sweep; stand-ins named as such)
source = ";\n".join(sorted({str(ds.attrs["data_source"]) for _, ds in stores.values()}))
attrs = provenance(spec_json(snakemake.params.experiment), snakemake.config["scale"], snakemake.rule, source)
write_store(combine_runs(stores), snakemake.output[0], attrs)
