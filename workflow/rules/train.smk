# Stage 2: one job per training run; snapshots on the measurement schedule.


rule train:
    output:
        RESULTS + "/runs/{experiment}/{run}.pt",
    input:
        data=lambda w: data_path(UNITS[w.experiment][w.run]["data"]),
        code=lambda w: train_code(UNITS[w.experiment][w.run]),
    params:
        spec=lambda w: UNITS[w.experiment][w.run],
        checkpoint=lambda w: f"{RESULTS}/runs/{w.experiment}/{w.run}.ckpt",
    wildcard_constraints:
        experiment=one_of(TRAINED),
    log:
        RESULTS + "/logs/train/{experiment}/{run}.log",
    benchmark:
        RESULTS + "/benchmarks/train/{experiment}/{run}.tsv",
    threads: THREADS
    resources:
        runtime=job_request("runtime", "train"),
        mem_mb=job_request("mem_mb", "train"),
        gpu=job_request("gpu", "train"),
        cpus_per_task=THREADS,
    script:
        "../scripts/train.py"
