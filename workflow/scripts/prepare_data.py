from featlearn.data.prepare import prepare
from featlearn.jobs import save_tensors, start

log = start(snakemake.log[0])
params = snakemake.params.spec
data = prepare(params, snakemake.config["data_dir"], snakemake.config["download"])
log.info("%s: %s", snakemake.output[0], data["source"])
save_tensors(data, snakemake.output[0])
