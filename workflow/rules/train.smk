# Stage 2: one job per training run; snapshots on the measurement schedule. Cacheable between workflows (`--cache`,
# docs/running.md), hence no benchmark file: the usage record (seconds, peak memory) stands in for it.


rule train:
    input:
        data=lambda w: PLAN.data_path(current_unit(w)["data"]),
        code=lambda w: PLAN.train_code(current_unit(w)),
        stamp=lambda w: PLAN.spec_stamp(w.experiment),
    output:
        run=f"{RESULTS}/runs/{{experiment}}/{{unit}}.{{spec}}.pt",
        usage=f"{RESULTS}/usage/train/{{experiment}}/{{unit}}.{{spec}}.json",
    log:
        f"{RESULTS}/logs/train/{{experiment}}/{{unit}}.{{spec}}.log",
    wildcard_constraints:
        experiment=planning.one_of(PLAN.trained),
        spec="[0-9a-f]{10}",
    cache: True
    threads: THREADS
    resources:
        runtime=job_request("runtime", "train"),
        mem_mb=job_request("mem_mb", "train"),
        gpu=job_request("gpu", "train"),
        gpu_mem_mb=job_request("gpu_mem_mb", "train"),
        cpus_per_task=THREADS,
    params:
        spec=current_unit,
        checkpoint=lambda w: PLAN.run_path(w.experiment, w.unit, "ckpt"),
    script:
        "../scripts/train.py"
