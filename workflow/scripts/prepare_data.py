from featlearn.data.prepare import prepare
from featlearn.pipeline import usage
from featlearn.pipeline.jobs import save_tensors, start

log = start(snakemake.log[0])
params = snakemake.params.spec
usage.start("item")
if snakemake.params.warmup and isinstance(params.get("n"), int):  # a rehearsal times images after a warm-up
    usage.tick(len(prepare({**params, "n": 10}, snakemake.config["data_dir"], False).get("x_train", [])))
data = prepare(params, snakemake.config["data_dir"], snakemake.config["download"])
usage.tick(len(data.get("x_train", data.get("x", [None]))))  # images or digits; a text corpus is one item
log.info("%s: %s", snakemake.output.data, data["source"])
save_tensors(data, snakemake.output.data)
usage.write(snakemake.output.usage, "cpu", [snakemake.output.data])
