# Stage 1: datasets, one file per parameter set, shared by every experiment that reads it.


rule synthetic_data:
    output:
        "results/data/{key}.pt",
    input:
        DATA_SOURCES,
    params:
        spec=lambda w: DATASETS[w.key],
    wildcard_constraints:
        key="|".join(DATASETS) or "NONE",
    log:
        "results/logs/data/{key}.log",
    resources:
        runtime=RUNTIME_MIN,
        mem_mb=MEM_MB,
    script:
        "../scripts/make_data.py"
