# Stage 1: datasets, one file per parameter set, shared by every experiment that reads it.


rule synthetic_data:
    output:
        "results/data/{key}.pt",
    input:
        DATA_SOURCES,
    params:
        spec=lambda w: SYNTHETIC_DATA[w.key],
    wildcard_constraints:
        key=one_of(SYNTHETIC_DATA),
    log:
        "results/logs/data/{key}.log",
    benchmark:
        "results/benchmarks/data/{key}.tsv",
    resources:
        runtime=RUNTIME_MIN,
        mem_mb=MEM_MB,
    script:
        "../scripts/make_data.py"


# Real datasets (or their labelled offline stand-ins), preprocessed once: training never reads raw files.
# A dataset that is absent stops here, naming the folder and both fixes, before anything is written.
rule real_data:
    output:
        "results/data/{key}.pt",
    input:
        REAL_DATA_SOURCES,
    params:
        spec=lambda w: REAL_DATA[w.key],
    wildcard_constraints:
        key=one_of(REAL_DATA),
    log:
        "results/logs/data/{key}.log",
    benchmark:
        "results/benchmarks/data/{key}.tsv",
    resources:
        runtime=RUNTIME_MIN,
        mem_mb=MEM_MB,
    script:
        "../scripts/prepare_data.py"
