from pathlib import Path

from featlearn.pipeline import projection
from featlearn.pipeline.jobs import start

log = start(snakemake.log[0])
t = snakemake.params.tables
jobs = projection.plan(t["planned"], t["rehearsed"], t["kinds"], set(t["trained"]), t["datasets"], t["figures"],
                       t["usage"])
table = projection.rows(jobs)
Path(snakemake.output.csv).write_text(projection.to_csv(table))
Path(snakemake.output.md).write_text(projection.to_markdown(table, snakemake.params.title))
log.info("%s: %d paper jobs, %.2f projected hours", snakemake.output.md, len(table), sum(r.hours for r in table))
