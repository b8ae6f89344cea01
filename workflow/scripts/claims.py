from featlearn.claims import REGISTRY, core, records
from featlearn.claims.report import write_text
from featlearn.pipeline.jobs import start
from featlearn.pipeline.store import read_store

log = start(snakemake.log[0])
paper = snakemake.wildcards.paper
claims = REGISTRY[paper]
built = dict(zip(snakemake.params.experiments, snakemake.input.stores))
specs = snakemake.params.specs  # each store must come from the configuration config.yaml names now
stores = {name: read_store(built[name], specs[name]) if name in built else None for name in core.store_names(claims)}
checks = core.evaluate_all(claims, paper, stores)
write_text(snakemake.output[0], records.to_json(paper, snakemake.params.scale, checks, stores))
