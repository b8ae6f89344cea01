# Stage 3: every unit of an experiment measured into its own netCDF store (a trained run's snapshots, one Deep RFM
# dataset, or a whole one-job experiment), then the units combined into the experiment's store. What a unit is and
# how it is measured and combined is its kind's module (featlearn.experiments); these two rules are all kinds'.


rule measure:
    output:
        RESULTS + "/metrics/{experiment}/{unit}.nc",
    input:
        data=lambda w: [data_path(p) for p in KIND[w.experiment].datasets(UNITS[w.experiment][w.unit])],
        run=lambda w: [f"{RESULTS}/runs/{w.experiment}/{w.unit}.pt"] if w.experiment in TRAINED else [],
        code=lambda w: measure_code(w.experiment, UNITS[w.experiment][w.unit]),
    params:
        unit=lambda w: UNITS[w.experiment][w.unit],
    wildcard_constraints:
        experiment=one_of(EXPERIMENTS),
    log:
        RESULTS + "/logs/measure/{experiment}/{unit}.log",
    benchmark:
        RESULTS + "/benchmarks/measure/{experiment}/{unit}.tsv",
    threads: THREADS
    resources:
        runtime=job_request("runtime", "measure"),
        mem_mb=job_request("mem_mb", "measure"),
        gpu=job_request("gpu", "measure"),
        cpus_per_task=THREADS,
    script:
        "../scripts/measure.py"


rule combine:
    output:
        RESULTS + "/metrics/{experiment}.nc",
    input:
        parts=lambda w: [f"{RESULTS}/metrics/{w.experiment}/{u}.nc" for u in UNITS[w.experiment]],
        code=lambda w: deps.job_code("combine", fx.KINDS[EXPERIMENTS[w.experiment]["kind"]]["module"]),
    params:
        experiment=lambda w: EXPERIMENTS[w.experiment],
        units=lambda w: UNITS[w.experiment],
    wildcard_constraints:
        experiment=one_of(EXPERIMENTS),
    log:
        RESULTS + "/logs/combine/{experiment}.log",
    benchmark:
        RESULTS + "/benchmarks/combine/{experiment}.tsv",
    resources:
        runtime=request("runtime", "light"),
        mem_mb=request("mem_mb", "light"),
    script:
        "../scripts/combine.py"
