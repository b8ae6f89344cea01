# Stage 1: datasets, one file per parameter set, shared by every experiment that reads it.
# Both rules may be cached between workflows (`--cache`, docs/running.md): a cached rule may have no benchmark file (a run
# taken from the cache has no time to record), so the job's usage record (seconds, peak memory) stands in for it.


rule synthetic_data:
    input:
        deps.job_code("make_data"),
    output:
        data=f"{RESULTS}/data/{{key}}.pt",
        usage=f"{RESULTS}/usage/data/{{key}}.json",
    log:
        f"{RESULTS}/logs/data/{{key}}.log",
    wildcard_constraints:
        key=planning.one_of(PLAN.synthetic_data),
    cache: True
    resources:
        runtime=data_request("runtime", "light"),
        mem_mb=data_request("mem_mb", "light"),
    params:
        spec=lambda w: PLAN.synthetic_data[w.key],
    script:
        "../scripts/make_data.py"


# Real datasets (or their labelled offline stand-ins), preprocessed once: training never reads raw files.
# A dataset that is absent stops here, naming the folder and both fixes, before anything is written.
rule real_data:
    input:
        lambda w: PLAN.data_code(PLAN.real_data[w.key]),
    output:
        data=f"{RESULTS}/data/{{key}}.pt",
        usage=f"{RESULTS}/usage/data/{{key}}.json",
    log:
        f"{RESULTS}/logs/data/{{key}}.log",
    wildcard_constraints:
        key=planning.one_of(PLAN.real_data),
    cache: True
    resources:
        runtime=data_request("runtime", "cpu"),
        mem_mb=data_request("mem_mb", "cpu"),
    params:
        spec=lambda w: PLAN.real_data[w.key],
        warmup=REHEARSE,
    script:
        "../scripts/prepare_data.py"


# Every real dataset the configured scale reads. Compute nodes often have no internet: build this once where there
# is (`snakemake datasets --cores 2 --config scale=paper download=true`), then send the rest to the cluster.
rule datasets:
    input:
        [PLAN.data_path(p) for p in PLAN.real_data.values()],
