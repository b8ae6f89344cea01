import importlib
from pathlib import Path

import matplotlib

from featlearn.pipeline.jobs import start
from featlearn.pipeline.store import read_store

matplotlib.use("Agg")  # a batch job draws to files: never a window, whatever the machine's default backend
log = start(snakemake.log[0])
module = importlib.import_module(f"featlearn.figures.{snakemake.wildcards.paper}.fig{snakemake.wildcards.n}")
specs = snakemake.params.specs  # each store must come from the configuration config.yaml names now
paths = dict(zip(snakemake.params.experiments, snakemake.input.stores))
stores = {name: read_store(path, specs[name]) for name, path in paths.items()}
module.render(stores, Path(snakemake.output[0]))
