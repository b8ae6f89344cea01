from featlearn.config import spec_json
from featlearn.jobs import start
from featlearn.rfm.experiment import combine_datasets
from featlearn.store import provenance, read_store, write_store

log = start(snakemake.log[0])
exp = snakemake.params.experiment
ds = combine_datasets(exp, [read_store(path) for path in snakemake.input.parts])
attrs = provenance(spec_json(exp), snakemake.config["scale"], snakemake.rule, ds.attrs["data_source"])
write_store(ds, snakemake.output[0], attrs)
log.info("%s: %d datasets", snakemake.output[0], ds.sizes["dataset"])
