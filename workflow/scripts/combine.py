from featlearn.config import spec_json
from featlearn.pipeline import numerics
from featlearn.pipeline.experiments import kind_of
from featlearn.pipeline.jobs import start
from featlearn.pipeline.store import provenance, read_store, write_store

log = start(snakemake.log[0])
exp, units = snakemake.params.experiment, snakemake.params.units
parts = {unit: (units[unit], read_store(path, units[unit])) for unit, path in zip(units, snakemake.input.parts)}
ds = kind_of(exp["kind"]).combine(exp, parts)
numerics_of_units = numerics.merged([store.attrs.get("numerics", "{}") for _, store in parts.values()])
# one line per distinct source (the datasets of a sweep; stand-ins named as such)
attrs = provenance(spec_json(exp), snakemake.params.scale, snakemake.rule, ds.attrs["data_source"], numerics_of_units)
write_store(ds, snakemake.output[0], attrs)
log.info("%s: %d units", snakemake.output[0], len(parts))
