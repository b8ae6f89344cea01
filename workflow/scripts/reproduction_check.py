from pathlib import Path

from featlearn.pipeline.jobs import start
from featlearn.pipeline.manifests import REBUILD, check, published_manifest, read_manifest

log = start(snakemake.log[0])
summary_path, details_path = Path(snakemake.output.summary), Path(snakemake.output.details)
where = summary_path.parents[1]  # results/<tag>/reproduction/check.txt
built = read_manifest(Path(snakemake.input.built), REBUILD)
reference = Path(snakemake.params.published)
published = published_manifest(reference)  # refused, with the git command, if a tracked one was deleted
if published is not None:
    report = check(built, published, str(where), str(reference), str(details_path))
    text, details = report.summary, report.details
else:
    text = (f"Reproduction check of {where}: scale {built['scale']} has no published manifest ({reference} was "
            "never committed), so there is nothing to hold this build to; `make manifest` publishes this build as "
            "the reference every later build of this scale is held to: do it on purpose, and commit it\n")
    details = text
summary_path.write_text(text)
details_path.write_text(details)
print(text, end="")
log.info("%s", text)
