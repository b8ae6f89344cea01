from pathlib import Path

from featlearn.claims import records
from featlearn.claims.report import README_SCALES, readme_block, scale_of, update_readme, write_text
from featlearn.pipeline.jobs import start

log = start(snakemake.log[0])
doc = Path(snakemake.params.doc)
papers = {}
for path in snakemake.input.claims:
    header, checks = records.from_json(Path(path).read_text(encoding="utf-8"))
    papers[header["paper"]] = (header, checks)
scale = scale_of(papers)  # the stores' label: "paper-rehearsal" for a rehearsal, never a block of the claims page
if scale in README_SCALES:
    write_text(doc, update_readme(doc.read_text(encoding="utf-8"),
                                     readme_block(papers, snakemake.params.figures), scale))
    message = f"{doc}: the {scale} scale's claims block rewritten from {', '.join(snakemake.input.claims)}"
else:
    message = f"{doc} left alone: it shows the scales {', '.join(README_SCALES)}, this build is {scale}"
log.info(message)
write_text(snakemake.output[0], message + "\n")
