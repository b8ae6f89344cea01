from pathlib import Path

from featlearn.pipeline.jobs import start
from featlearn.pipeline.manifests import REBUILD, read_manifest

log = start(snakemake.log[0])
built = Path(snakemake.input.built)
read_manifest(built, REBUILD)  # sealed as the manifest rule wrote it
published = Path(snakemake.params.published)
published.parent.mkdir(parents=True, exist_ok=True)
published.write_text(built.read_text())
message = f"{published}: published from {built}"
log.info(message)
Path(snakemake.output[0]).write_text(message + "\n")
