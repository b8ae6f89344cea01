import json
from pathlib import Path

from featlearn.jobs import start
from featlearn.reproduction import check, read_manifest

log = start(snakemake.log[0])
built = json.loads(Path(snakemake.input.built).read_text())
if snakemake.input.published:
    text, _ = check(built, read_manifest(Path(snakemake.input.published[0])), snakemake.params.where)
else:
    text = (f"Reproduction check of {snakemake.params.where}: no published manifest ({snakemake.params.published}) "
            f"for this scale; `snakemake publish_manifest` writes one from this build\n")
Path(snakemake.output[0]).write_text(text)
print(text, end="")
log.info("%s", text)
