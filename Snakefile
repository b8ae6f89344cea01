# featlearn: every figure of three feature-learning papers as a file target.
# data -> train -> metrics -> figures -> claims/report; see README.md.
from featlearn.pipeline import numerics

numerics.pin()  # first: every job inherits the CPU settings that decide its bits (featlearn.pipeline.numerics)

from featlearn.pipeline import validation
from featlearn.pipeline.gpus import gpu_count

validation.check_own_code(workflow.basedir)
validation.check_yaml("config.yaml", workflow.basedir)


configfile: "config.yaml"


validation.validate(config, workflow.source_path("workflow/schemas/config.schema.yaml"))
numerics.use(config.get("numerics", "pinned"))  # native lifts the pins again, before any job starts
validation.check_output_dirs("results", "figures")
validation.check_future_dates("results", "figures")  # before any stamp is written: an edit must look newer


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/metrics.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/projection.smk"
include: "workflow/rules/reproduction.smk"


rule all:
    default_target: True
    input:
        PLAN.all_figures,
        PLAN.shortcuts,
        PLAN.report_files,
        [f"{RESULTS}/projection.md"] if REHEARSE else [f"{RESULTS}/reproduction/check.txt"],


rule alignment:
    input:
        [f for f in PLAN.all_figures if f.startswith(f"{FIGURES}/alignment/")],


rule collapse:
    input:
        [f for f in PLAN.all_figures if f.startswith(f"{FIGURES}/collapse/")],


rule tangent:
    input:
        [f for f in PLAN.all_figures if f.startswith(f"{FIGURES}/tangent/")],


# Faults lose nothing (featlearn.pipeline.reruns), decided before Snakemake plans: an output whose digest checks out is kept
# whatever Snakemake's incomplete marker says (an orphan of a killed snakemake finished it); a shared output-cache
# entry is read-only and checked before it is linked; every job records whether its experiment's config as parsed
# now is the committed one (a config.yaml edited mid-build is not what ran).
# A missing run or store that something made from it still stands on is rebuilt (Snakemake alone keeps its readers
# and rebuilds nothing); an input newer than a job's outputs is compared by content, so an identical copy reruns
# nothing; a cache that cannot take an entry never costs the local result (featlearn.pipeline.snakemake_patches).
from featlearn.pipeline import reruns
from featlearn.pipeline import snakemake_patches as patches

reruns.keep_finished(workflow)
patches.guard_cache()
patches.check_cache_location(workflow.workflow_settings.cache is not None)
patches.compare_by_content(workflow)
if workflow.is_main_process:
    reruns.rebuild_missing(workflow, PLAN.missing_intermediates())
reruns.record_config_edits(config, PLAN.experiments, PLAN.units, workflow.basedir)


# Once the plan is made and before any job runs (never in a dry run): `device: cuda` needs a GPU here unless a cluster
# executor sends the jobs elsewhere; the disk must hold what a rehearsal projected this build to write; one card must
# hold each GPU job (a dry run finds an oversized job when it reaches it).
onstart:
    validation.check_device(config["device"], workflow.local_exec, gpu_count)
    reruns.refuse_duplicates(workflow.dag.needrun_jobs())  # an orphan still computing is named, never run twice
    reruns.refuse_damaged_inputs(workflow.dag)  # before a job deletes its outputs to read a broken input
    patches.note_sigterm()
    fr.check_disk(PLAN.projection, RESULTS)
    check_gpu_jobs(workflow.dag.needrun_jobs())


onerror:
    reruns.explain_stop()
