# Stage 3: metric extraction into netCDF stores, one per experiment.


rule measure_run:
    output:
        "results/metrics/{experiment}/{run}.nc",
    input:
        run="results/runs/{experiment}/{run}.pt",
        data=lambda w: data_path(RUNS[w.experiment][w.run]["data"]),
        code=lambda w: measure_sources(RUNS[w.experiment][w.run]),
    params:
        spec=lambda w: RUNS[w.experiment][w.run],
    wildcard_constraints:
        experiment=one_of(TRAINING),
    log:
        "results/logs/measure/{experiment}/{run}.log",
    benchmark:
        "results/benchmarks/measure/{experiment}/{run}.tsv",
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
        "results/metrics/{experiment}.nc",
    input:
        runs=lambda w: [f"results/metrics/{w.experiment}/{r}.nc" for r in RUNS[w.experiment]],
        code=sources("metrics/measure.py", "store.py"),
    params:
        points=lambda w: {r: spec["sweep"] for r, spec in RUNS[w.experiment].items()},
        experiment=lambda w: EXPERIMENTS[w.experiment],
    wildcard_constraints:
        experiment=one_of(TRAINING),
    log:
        "results/logs/combine/{experiment}.log",
    benchmark:
        "results/benchmarks/combine/{experiment}.tsv",
    resources:
        runtime=request("runtime", "light"),
        mem_mb=request("mem_mb", "light"),
    script:
        "../scripts/combine.py"


rule build_store:
    output:
        "results/metrics/{experiment}.nc",
    input:
        data=lambda w: [data_path(p) for p in fc.datasets(config, w.experiment).values()],
        code=lambda w: STORE_SOURCES[EXPERIMENTS[w.experiment]["kind"]],
    params:
        experiment=lambda w: EXPERIMENTS[w.experiment],
        datasets=lambda w: list(fc.datasets(config, w.experiment).values()),
    wildcard_constraints:
        experiment=one_of(n for n in EXPERIMENTS if n not in TRAINING + DEEP_RFM),
    log:
        "results/logs/stores/{experiment}.log",
    benchmark:
        "results/benchmarks/stores/{experiment}.tsv",
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
        "results/metrics/{experiment}/{dataset}.nc",
    input:
        data=lambda w: data_path(fc.deep_rfm_data(EXPERIMENTS[w.experiment], w.dataset)),
        code=DEEP_RFM_SOURCES,
    params:
        experiment=lambda w: EXPERIMENTS[w.experiment],
    wildcard_constraints:
        experiment=one_of(DEEP_RFM),
    log:
        "results/logs/deep_rfm/{experiment}/{dataset}.log",
    benchmark:
        "results/benchmarks/deep_rfm/{experiment}/{dataset}.tsv",
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
        "results/metrics/{experiment}.nc",
    input:
        parts=lambda w: [f"results/metrics/{w.experiment}/{d}.nc" for d in EXPERIMENTS[w.experiment]["data"]["datasets"]],
        code=sources("rfm/experiment.py", "store.py"),
    params:
        experiment=lambda w: EXPERIMENTS[w.experiment],
    wildcard_constraints:
        experiment=one_of(DEEP_RFM),
    log:
        "results/logs/combine/{experiment}.log",
    benchmark:
        "results/benchmarks/combine/{experiment}.tsv",
    resources:
        runtime=request("runtime", "light"),
        mem_mb=request("mem_mb", "light"),
    script:
        "../scripts/combine_deep_rfm.py"
