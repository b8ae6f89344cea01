from featlearn import tangent_experiment
from featlearn.config import spec_json
from featlearn.jobs import load_tensors, start
from featlearn.metrics import tangent, theory
from featlearn.store import provenance, write_store

log = start(snakemake.log[0], snakemake.threads, snakemake.resources.get("gpu", 0))
exp = snakemake.params.experiment
kind = exp["kind"]
if kind in ("reversing", "first_order"):
    data = {}
    for params, path in zip(snakemake.params.datasets, snakemake.input.data):
        key = (params["gamma"], params["seed"]) if kind == "reversing" else (params["task"], params["alpha"])
        data[key] = load_tensors(path)
    ds = (theory.reversing_store if kind == "reversing" else theory.first_order_store)(exp, data)
elif kind == "tangent_mnist":
    ds = tangent_experiment.tangent_mnist_store(exp)
else:
    ds = tangent.penalties_store(exp)
source = ds.attrs.get("data_source", "none (analytic)" if kind == "tangent_penalties" else "synthetic (generated)")
write_store(ds, snakemake.output[0], provenance(spec_json(exp), snakemake.config["scale"], snakemake.rule, source))
