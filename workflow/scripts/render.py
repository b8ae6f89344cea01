import importlib
from pathlib import Path

from featlearn.jobs import start
from featlearn.store import read_store

log = start(snakemake.log[0])
module = importlib.import_module(f"featlearn.figures.{snakemake.wildcards.paper}.fig{snakemake.wildcards.n}")
stores = {name: read_store(path) for name, path in zip(snakemake.params.experiments, snakemake.input.stores)}
module.render(stores, Path(snakemake.output[0]))
