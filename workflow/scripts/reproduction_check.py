import json
from pathlib import Path

from featlearn.pipeline.jobs import start
from featlearn.pipeline.manifests import check, read_manifest

log = start(snakemake.log[0])
where = Path(snakemake.output[0]).parents[1]  # results/<tag>/reproduction/check.txt
built = json.loads(Path(snakemake.input.built).read_text())
if snakemake.input.published:
    text, _ = check(built, read_manifest(Path(snakemake.input.published[0])), where)
else:
    text = (f"Reproduction check of {where}: no published manifest ({snakemake.params.published}) "
            f"for this scale; `snakemake publish_manifest` writes one from this build\n")
Path(snakemake.output[0]).write_text(text)
print(text, end="")
log.info("%s", text)
