import json
from pathlib import Path

from featlearn.pipeline.jobs import start
from featlearn.pipeline.reproduction import manifest

log = start(snakemake.log[0])
files = [Path(f) for f in snakemake.input.files]
results = Path(snakemake.output[0]).parents[1]  # results/<tag>/reproduction/manifest.json
built = manifest(results, files, [Path(c) for c in snakemake.input.claims],
                 snakemake.params.scale)
Path(snakemake.output[0]).write_text(json.dumps(built, indent=1, sort_keys=True) + "\n")
log.info("%s: %d runs and stores digested", snakemake.output[0], len(files))
