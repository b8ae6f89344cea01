from pathlib import Path

from featlearn.claims import records
from featlearn.claims.report import html_page, markdown_table, write_text
from featlearn.pipeline.jobs import start

log = start(snakemake.log[0])
papers = {}
for path in snakemake.input.claims:
    header, checks = records.from_json(Path(path).read_text(encoding="utf-8"))
    papers[header["paper"]] = (header, checks)
write_text(snakemake.output.table, markdown_table(papers))
write_text(snakemake.output.html, html_page(papers))
