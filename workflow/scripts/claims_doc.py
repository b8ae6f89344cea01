from pathlib import Path

from featlearn.claims import records
from featlearn.claims.report import README_SCALES, readme_block, scale_of, summary, update_readme, write_text
from featlearn.pipeline.jobs import start

log = start(snakemake.log[0])
doc, readme = Path(snakemake.params.doc), Path(snakemake.params.readme)
papers = {}
for path in snakemake.input.claims:
    header, checks = records.from_json(Path(path).read_text(encoding="utf-8"))
    papers[header["paper"]] = (header, checks)
scale = scale_of(papers)  # the stores' label: "paper-rehearsal" for a rehearsal, never a block of the claims page
if scale in README_SCALES:
    # the whole table on the claims page; the README shows its summary line, the counts of each tier
    write_text(doc, update_readme(doc.read_text(encoding="utf-8"),
                                     readme_block(papers, snakemake.params.figures), scale, str(doc)))
    write_text(readme, update_readme(readme.read_text(encoding="utf-8"), summary(papers), scale, str(readme)))
    message = f"{doc} and {readme}: the {scale} scale's claims rewritten from {', '.join(snakemake.input.claims)}"
else:
    message = f"{doc} and {readme} left alone: they show the scales {', '.join(README_SCALES)}, this build is {scale}"
log.info(message)
write_text(snakemake.output[0], message + "\n")
