# Stage 3: every unit of an experiment measured into its own netCDF store (a trained run's snapshots, one Deep RFM
# dataset, or a whole one-job experiment), then the units combined into the experiment's store. What a unit is and
# how it is measured and combined is its kind's module (featlearn.pipeline.experiments); these two rules are all kinds'.


rule measure:
    input:
        data=lambda w: [PLAN.data_path(p) for p in PLAN.kind[w.experiment].datasets(current_unit(w))],
        run=lambda w: [PLAN.run_path(w.experiment, w.unit)] if w.experiment in PLAN.trained else [],
        code=lambda w: PLAN.measure_code(w.experiment, current_unit(w)),
        stamp=lambda w: PLAN.spec_stamp(w.experiment),
    output:
        store=f"{RESULTS}/metrics/{{experiment}}/{{unit}}.{{spec}}.nc",
        usage=f"{RESULTS}/usage/measure/{{experiment}}/{{unit}}.{{spec}}.json",
    log:
        f"{RESULTS}/logs/measure/{{experiment}}/{{unit}}.{{spec}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/measure/{{experiment}}/{{unit}}.{{spec}}.tsv"
    wildcard_constraints:
        experiment=planning.one_of(PLAN.experiments),
        spec="[0-9a-f]{10}",
    threads: THREADS
    resources:
        runtime=job_request("runtime", "measure"),
        mem_mb=job_request("mem_mb", "measure"),
        gpu=job_request("gpu", "measure"),
        gpu_mem_mb=job_request("gpu_mem_mb", "measure"),
        cpus_per_task=THREADS,
    params:
        unit=current_unit,
        scale=TAG,
    script:
        "../scripts/measure.py"


# Light (seconds: reading the unit stores and concatenating them): on a cluster it runs where Snakemake runs.
rule combine:
    input:
        parts=lambda w: [PLAN.unit_store_path(w.experiment, u) for u in PLAN.units[w.experiment]],
        code=lambda w: PLAN.combine_code(w.experiment),
        stamp=lambda w: PLAN.spec_stamp(w.experiment),
    output:
        f"{RESULTS}/metrics/{{experiment}}.{{spec}}.nc",
    log:
        f"{RESULTS}/logs/combine/{{experiment}}.{{spec}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/combine/{{experiment}}.{{spec}}.tsv"
    wildcard_constraints:
        experiment=planning.one_of(PLAN.experiments),
        spec="[0-9a-f]{10}",
    localrule: True
    resources:
        runtime=request("runtime", "light"),
        mem_mb=request("mem_mb", "light"),
    params:
        experiment=current_experiment,
        scale=TAG,
        units=lambda w: PLAN.units[w.experiment],
    script:
        "../scripts/combine.py"
