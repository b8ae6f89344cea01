# Stage 3: metric extraction into netCDF stores, one per experiment.


rule measure_run:
    output:
        RESULTS + "/metrics/{experiment}/{run}.nc",
    input:
        run=RESULTS + "/runs/{experiment}/{run}.pt",
        data=lambda w: data_path(RUNS[w.experiment][w.run]["data"]),
        code=lambda w: measure_code(RUNS[w.experiment][w.run]),
    params:
        spec=lambda w: RUNS[w.experiment][w.run],
    wildcard_constraints:
        experiment=one_of(TRAINING),
    log:
        RESULTS + "/logs/measure/{experiment}/{run}.log",
    benchmark:
        RESULTS + "/benchmarks/measure/{experiment}/{run}.tsv",
    threads: THREADS
    resources:
        runtime=job_request("runtime", "measure"),
        mem_mb=job_request("mem_mb", "measure"),
        gpu=job_request("gpu", "measure"),
        cpus_per_task=THREADS,
    script:
        "../scripts/measure.py"


rule combine_runs:
    output:
        RESULTS + "/metrics/{experiment}.nc",
    input:
        runs=lambda w: [f"{RESULTS}/metrics/{w.experiment}/{r}.nc" for r in RUNS[w.experiment]],
        code=deps.job_code("combine"),
    params:
        points=lambda w: {r: spec["sweep"] for r, spec in RUNS[w.experiment].items()},
        experiment=lambda w: EXPERIMENTS[w.experiment],
    wildcard_constraints:
        experiment=one_of(TRAINING),
    log:
        RESULTS + "/logs/combine/{experiment}.log",
    benchmark:
        RESULTS + "/benchmarks/combine/{experiment}.tsv",
    resources:
        runtime=request("runtime", "light"),
        mem_mb=request("mem_mb", "light"),
    script:
        "../scripts/combine.py"


rule build_store:
    output:
        RESULTS + "/metrics/{experiment}.nc",
    input:
        data=lambda w: [data_path(p) for p in fc.datasets(config, w.experiment).values()],
        code=deps.job_code("build_store"),
    params:
        experiment=lambda w: EXPERIMENTS[w.experiment],
        datasets=lambda w: list(fc.datasets(config, w.experiment).values()),
    wildcard_constraints:
        experiment=one_of(n for n in EXPERIMENTS if n not in TRAINING + DEEP_RFM),
    log:
        RESULTS + "/logs/stores/{experiment}.log",
    benchmark:
        RESULTS + "/benchmarks/stores/{experiment}.tsv",
    threads: THREADS
    resources:
        runtime=job_request("runtime", "store"),
        mem_mb=job_request("mem_mb", "store"),
        cpus_per_task=THREADS,
    script:
        "../scripts/build_store.py"


# Deep RFM: the datasets are independent runs, one job each (in parallel locally; one GPU each on a cluster).
rule deep_rfm_dataset:
    output:
        RESULTS + "/metrics/{experiment}/{dataset}.nc",
    input:
        data=lambda w: data_path(fc.deep_rfm_data(EXPERIMENTS[w.experiment], w.dataset)),
        code=deps.job_code("deep_rfm"),
    params:
        experiment=lambda w: EXPERIMENTS[w.experiment],
    wildcard_constraints:
        experiment=one_of(DEEP_RFM),
    log:
        RESULTS + "/logs/deep_rfm/{experiment}/{dataset}.log",
    benchmark:
        RESULTS + "/benchmarks/deep_rfm/{experiment}/{dataset}.tsv",
    threads: THREADS
    resources:
        runtime=job_request("runtime", "deep_rfm"),
        mem_mb=job_request("mem_mb", "deep_rfm"),
        gpu=job_request("gpu", "deep_rfm"),
        cpus_per_task=THREADS,
    script:
        "../scripts/deep_rfm.py"


rule combine_deep_rfm:
    output:
        RESULTS + "/metrics/{experiment}.nc",
    input:
        parts=lambda w: [f"{RESULTS}/metrics/{w.experiment}/{d}.nc" for d in EXPERIMENTS[w.experiment]["data"]["datasets"]],
        code=deps.job_code("combine_deep_rfm"),
    params:
        experiment=lambda w: EXPERIMENTS[w.experiment],
    wildcard_constraints:
        experiment=one_of(DEEP_RFM),
    log:
        RESULTS + "/logs/combine/{experiment}.log",
    benchmark:
        RESULTS + "/benchmarks/combine/{experiment}.tsv",
    resources:
        runtime=request("runtime", "light"),
        mem_mb=request("mem_mb", "light"),
    script:
        "../scripts/combine_deep_rfm.py"
