from featlearn.config import spec_json
from featlearn.jobs import load_tensors, start
from featlearn.metrics import theory
from featlearn.store import provenance, write_store

log = start(snakemake.log[0], snakemake.threads)
exp = snakemake.params.experiment
data = {}
for params, path in zip(snakemake.params.datasets, snakemake.input.data):
    key = (params["gamma"], params["seed"]) if exp["kind"] == "reversing" else (params["task"], params["alpha"])
    data[key] = load_tensors(path)
build = theory.reversing_store if exp["kind"] == "reversing" else theory.first_order_store
attrs = provenance(spec_json(exp), snakemake.config["scale"], snakemake.rule, "synthetic (generated)")
write_store(build(exp, data), snakemake.output[0], attrs)
