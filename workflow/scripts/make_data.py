from featlearn.data.synthetic import make_dataset
from featlearn.pipeline import usage
from featlearn.pipeline.jobs import save_tensors, start

log = start(snakemake.log[0])
log.info("generating %s", snakemake.params.spec)
usage.start("job")
save_tensors(make_dataset(snakemake.params.spec), snakemake.output.data)
usage.write(snakemake.output.usage, "cpu", [snakemake.output.data])
