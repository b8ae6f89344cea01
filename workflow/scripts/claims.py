from featlearn.claims import core, records
from featlearn.claims.registry import claims_of
from featlearn.claims.report import write_text
from featlearn.pipeline.jobs import start
from featlearn.pipeline.store import read_store
from featlearn.pipeline.twins import twin_name

log = start(snakemake.log[0])
paper = snakemake.wildcards.paper
claims = claims_of(paper)
built = dict(zip(snakemake.params.experiments, snakemake.input.stores))
specs = snakemake.params.specs  # each store must come from the configuration config.yaml names now
stores = {name: read_store(built[name], specs[name]) if name in built else None for name in core.store_names(claims)}
twins = {name: read_store(built[twin], specs[twin]) for name in stores if (twin := twin_name(name)) in built}
checks = core.evaluate_all(claims, paper, stores, twins)
write_text(snakemake.output[0], records.to_json(paper, snakemake.params.scale, checks, stores))
