# The build's plan (featlearn.pipeline.planning: importable and unit-tested without Snakemake): config.yaml at this
# scale as the tables, file names, code inputs and resources the rules read. Here only what needs Snakemake: the
# config, the GPU memory of this machine or profile, and each job's wildcards turned into the plan's arguments.
from featlearn.pipeline import deps
from featlearn.pipeline import planning
from featlearn.pipeline import resources as fr
from featlearn.pipeline import snakemake_patches

PLAN = planning.Plan(config)
# Each experiment's spec, the scale and every code stamp, rewritten only when they change; a dry run writes none and
# has Snakemake plan as if it had written those that are new or changed (featlearn.pipeline.snakemake_patches).
if snakemake_patches.dry_run():
    deps.WRITE_STAMPS = False
    deps.UNWRITTEN.update(PLAN.unwritten_stamps())  # the code stamps join as the rules compute them
    snakemake_patches.plan_unwritten(deps.UNWRITTEN)
else:
    PLAN.write_stamps()
RESULTS, FIGURES, TAG, THREADS, REHEARSE = PLAN.results, PLAN.figures, PLAN.tag, PLAN.threads, PLAN.rehearse

# The GPU memory jobs share: this machine's cards (nvidia-smi, once per call) or the gpu_mem_mb given in --resources
# or a profile. Snakemake caps a job's request at the global resource silently, so a job larger than one card is
# refused by job_request instead, and the global gpu_mem_mb (cards × the smallest card) keeps jobs on shared cards
# from overcommitting them (featlearn.pipeline.gpus.claim_gpu picks the card).
GPU_CARDS = fr.gpu_cards(workflow.global_resources.get("gpu_mem_mb").value, workflow.local_exec)
if GPU_CARDS.total_mb is not None:
    workflow.register_resource("gpu_mem_mb", GPU_CARDS.total_mb)


def current_unit(w):
    """The unit a train or measure job builds, refused when its file name carries another spec's hash."""
    return PLAN.unit(w.experiment, w.unit, w.spec)


def current_experiment(w):
    return PLAN.experiment(w.experiment, w.spec)


def request(what, weight):
    """A `resources` entry of a light rule that never uses a GPU, by weight, growing with the attempt."""
    return lambda w, attempt: PLAN.fixed_resources(weight, attempt)[what]


def data_request(what, weight):
    """A `resources` entry of a data job (its projection, else the table's by weight)."""
    return lambda w, attempt: PLAN.data_resources(w.key, weight, attempt)[what]


def job_request(what, stage):
    """A `resources` entry (runtime, mem_mb, gpu, gpu_mem_mb) of a `stage` job; a GPU job no card here holds stops
    the plan."""
    return lambda w, attempt: PLAN.job_resources(stage, w.experiment, w.unit, attempt, GPU_CARDS)[what]


def check_gpu_jobs(jobs):
    """Refuse, before any job runs, every GPU job of the DAG's `jobs` that one card cannot hold (Snakefile, onstart)."""
    stages = [j for j in jobs if j.rule.name in planning.STAGES]
    PLAN.check_gpu_jobs([(j.rule.name, j.wildcards.experiment, j.wildcards.unit) for j in stages], GPU_CARDS)


def projection_tables(w):
    """What the projection script of target {which} needs of the DAG (report.smk, projection.smk)."""
    return PLAN.projection_tables(PLAN.figure_experiments_of(planning.projection_figure(w.which)))
