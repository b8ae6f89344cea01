from pathlib import Path

from featlearn.claims.report import update_readme, write_text
from featlearn.jobs import start

log = start(snakemake.log[0])
readme, scale = Path(snakemake.params.readme), snakemake.config["scale"]
if scale == snakemake.params.readme_scale:
    table = Path(snakemake.input.table).read_text(encoding="utf-8")
    write_text(readme, update_readme(readme.read_text(encoding="utf-8"), table))
    message = f"{readme}: claims block rewritten from {snakemake.input.table} (scale {scale})"
else:
    message = f"{readme} left alone: it shows the {snakemake.params.readme_scale} scale, this build is {scale}"
log.info(message)
write_text(snakemake.output[0], message + "\n")
