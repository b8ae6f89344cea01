# Tables derived from config.yaml (through each experiment kind's module), and the code each job depends on.
import re
from pathlib import PurePosixPath

from featlearn.pipeline import deps
from featlearn.pipeline import experiments as fx
from featlearn.pipeline import rehearsal
from featlearn.pipeline import resources as fr
from featlearn.data.prepare import module as data_module
from featlearn.figures import figure_numbers

SCALE = config["scale"]
REHEARSE = config.get("rehearse", False)
REHEARSE_STEPS = config.get("rehearse_steps", rehearsal.STEPS)
# The threads every compute job runs with: part of each result's identity (featlearn.pipeline.numerics), so every experiment
# and unit spec carries it and another count is another file.
THREADS = config.get("threads", 1)
# A build's label: the scale, or '<scale>-rehearsal'. Each keeps its own data, runs, stores, claims, logs, benchmarks
# (results/<tag>/) and figures (figures/<tag>/), so the scales and a rehearsal coexist and never replace each other.
TAG = rehearsal.scale_tag(SCALE, REHEARSE)
RESULTS = f"results/{TAG}"
FIGURES = f"figures/{TAG}"

# The configured scale's experiments, and what this build runs of them: the same, or their rehearsal.
PLANNED = {name: fc.experiment(config, name) for name in config["experiments"]}
EXPERIMENTS = {
    name: (
        rehearsal.cut(e, fx.KINDS[e["kind"]]["repeats"], config.get("rehearse_max_n"), REHEARSE_STEPS)
        if REHEARSE
        else e
    )
    | {"threads": THREADS}
    for name, e in PLANNED.items()
}
# Each experiment's units (its independent jobs: runs, datasets, or the whole experiment), from its kind's module.
KIND = {name: fx.kind_of(e["kind"]) for name, e in EXPERIMENTS.items()}
UNITS = {name: fx.with_threads(KIND[name].units(name, e), THREADS) for name, e in EXPERIMENTS.items()}
if REHEARSE:  # real datasets absent from data_dir are rehearsed on labelled stand-ins of their real size
    UNITS = {name: rehearsal.cut_units(units, config["data_dir"], REHEARSE_STEPS) for name, units in UNITS.items()}
PLANNED_UNITS = {name: fx.with_threads(KIND[name].units(name, e), THREADS) for name, e in PLANNED.items()}


def needs_absent_data(units):
    """Whether a unit reads a real dataset that data_dir lacks and that no download will fetch."""
    blocks = [u.get("data", {}) | {"dataset": u.get("data", {}).get("dataset", u.get("dataset"))} for u in units]
    return any(b.get("source") == "real" and not rehearsal.present(b["dataset"], config["data_dir"]) for b in blocks)


# Experiments whose real data this machine lacks (and will not download): their figures fail at the data stage with
# the fix, and their claims are "not measured" instead of holding back every other claim of the paper.
UNREACHABLE = set() if config["download"] else {n for n, units in UNITS.items() if needs_absent_data(units.values())}
# Experiments whose units go through the training loop before they are measured.
TRAINED = [n for n, e in EXPERIMENTS.items() if fx.KINDS[e["kind"]]["trained"]]
DATASETS = {fc.dataset_key(p): p for n, units in UNITS.items() for u in units.values() for p in KIND[n].datasets(u)}
SYNTHETIC_DATA = {key: p for key, p in DATASETS.items() if "task" in p}
REAL_DATA = {key: p for key, p in DATASETS.items() if "dataset" in p}


def one_of(names):
    """A wildcard constraint matching exactly these names (never empty: Snakemake needs a regex)."""
    return "|".join(re.escape(n) for n in names) or "NONE"


# Figures: each figure module names the experiments (stores) it reads.
FIGURE_NUMBERS = figure_numbers()


def figure_experiments(paper, n):
    """The EXPERIMENTS a figure module reads (its stores), without importing the module."""
    return deps.literal(f"featlearn.figures.{paper}.fig{n}", "EXPERIMENTS")


FIGURE_STORES = {(paper, n): figure_experiments(paper, n) for paper, numbers in FIGURE_NUMBERS.items() for n in numbers}
ALL_FIGURES = [f"{FIGURES}/{paper}/fig{n}.pdf" for paper, n in FIGURE_STORES]
# figures/<paper>/figN.pdf and figures/figN.pdf (alignment): shortcuts to the configured scale's figures, copies that
# `all` keeps current; a rehearsal makes none (its figures never stand where a real one is looked for)
SHORTCUTS = (
    []
    if REHEARSE
    else [f"figures/{paper}/fig{n}.pdf" for paper, n in FIGURE_STORES]
    + [f"figures/fig{n}.pdf" for paper, n in FIGURE_STORES if paper == "alignment"]
)


# Code inputs: the import closure of each job's script and of the modules it dispatches to (featlearn.pipeline.deps), never a
# hand-written list, as one fingerprint stamp per file (results/code/), so an edit reruns exactly the jobs whose code
# imports the edited file, and only when it changes what the code does (comments and docstrings rerun nothing).
ARCH_MODULES = deps.dispatch("featlearn.models")


def data_path(params):
    return f"{RESULTS}/data/{fc.dataset_key(params)}.pt"


def data_code(params):
    """The prepare_data script and the one module that prepares this data block (its dataset's or its source's)."""
    return deps.job_code("prepare_data", data_module(params))


OPTIMIZER_MODULES = deps.dispatch("featlearn.optim")
TRAIN_METRICS = deps.dispatch("workflow/scripts/train.py")  # optimizers that measure the network while training


def train_code(spec):
    """The train script, the run's architecture and optimizer modules and, for an optimizer steered by a metric, the
    metric's module."""
    optimizer = spec["train"]["optimizer"]
    metric = [TRAIN_METRICS[optimizer]] if optimizer in TRAIN_METRICS else []
    arch = ARCH_MODULES[spec["model"].get("arch", "mlp")]
    return deps.job_code("train", arch, OPTIMIZER_MODULES[optimizer], *metric)


def measure_code(experiment, unit):
    """The measure script, the experiment's kind module and what the unit dispatches to (architecture, family)."""
    choices = [deps.dispatch(dispatcher)[choice] for dispatcher, choice in KIND[experiment].entries(unit)]
    return deps.job_code("measure", kind_code(experiment, "measure"), *choices)


def kind_code(experiment, function):
    """The experiment's kind module as a job that calls only its `function` runs it (featlearn.pipeline.deps.closure)."""
    return f'{fx.KINDS[EXPERIMENTS[experiment]["kind"]]["module"]}:{function}'


def figure_stores(paper, n):
    """The stores a figure reads; a figure that does not exist, or reads an experiment config.yaml no longer
    defines (whose old store may still lie in results/), stops the DAG with the fix."""
    if (paper, int(n)) not in FIGURE_STORES or n != str(int(n)):
        raise ValueError(
            f"{FIGURES}/{paper}/fig{n}.pdf is not a figure this pipeline builds (a figure is a module "
            f"src/featlearn/figures/<paper>/fig<N>.py, found by featlearn.figures.figure_numbers); "
            f"targets: {', '.join(ALL_FIGURES)}"
        )
    stores = FIGURE_STORES[(paper, int(n))]
    missing = [e for e in stores if e not in EXPERIMENTS]
    if missing:
        raise ValueError(
            f"{FIGURES}/{paper}/fig{n}.pdf reads experiment(s) {missing}, which config.yaml does not define (a store left "
            f"in {RESULTS}/metrics/ would be stale); define them again in config.yaml, or build other targets"
        )
    return stores


def figure_code(paper, n):
    return deps.job_code("render", f"featlearn.figures.{paper}.fig{n}")


# Each experiment's resolved spec, and the configured scale, as files rewritten only when they change: every job of an
# experiment reads its stamp, and every shortcut the scale's, so a config change or a scale switch reruns what it
# affects by file times alone, even where Snakemake's metadata is gone (a fresh clone with copied results,
# `rm -rf .snakemake`), which would otherwise find the old results "up to date".
SCALE_STAMP = "results/scale.txt"  # the scale the figures/figN.pdf shortcuts show
if not REHEARSE:
    fc.write_if_changed(SCALE_STAMP, f"{SCALE}\n")


def spec_stamp(experiment):
    return f"{RESULTS}/specs/{experiment}.json"


for _name, _exp in EXPERIMENTS.items():
    fc.write_if_changed(spec_stamp(_name), fc.spec_json(_exp) + "\n")


def run_path(experiment, unit, suffix="pt"):
    """A trained run (or its checkpoint): the spec's hash is in the name, so another configuration is another file."""
    return f"{RESULTS}/runs/{experiment}/{unit}.{fc.spec_hash(UNITS[experiment][unit])}.{suffix}"


def unit_store_path(experiment, unit):
    return f"{RESULTS}/metrics/{experiment}/{unit}.{fc.spec_hash(UNITS[experiment][unit])}.nc"


def current_unit(w):
    """The unit a job builds; a file name carrying another spec's hash is refused rather than rebuilt mislabelled."""
    unit = UNITS[w.experiment][w.unit]
    if w.spec != fc.spec_hash(unit):
        raise ValueError(
            f"{w.experiment}/{w.unit}.{w.spec}: no unit of config.yaml has spec hash {w.spec} "
            f"(the current one is {fc.spec_hash(unit)})"
        )
    return unit


def store_path(experiment):
    """An experiment's store, named by its spec's hash like every run and unit store."""
    return f"{RESULTS}/metrics/{experiment}.{fc.spec_hash(EXPERIMENTS[experiment])}.nc"


def current_experiment(w):
    exp = EXPERIMENTS[w.experiment]
    if w.spec != fc.spec_hash(exp):
        raise ValueError(f"{w.experiment}.{w.spec}: config.yaml's {w.experiment} has spec hash {fc.spec_hash(exp)}")
    return exp


# What each job asks of a scheduler (featlearn.pipeline.resources: one table, and the one rule for who gets a GPU). The SLURM
# profile turns these into sbatch options; a cluster with other limits overrides one rule there with `set-resources`.
# A rehearsal of this scale, where one was run, measured every job: its projection sets their runtime and memory.
PROJECTION = {} if REHEARSE else fr.load_projection(f"results/{rehearsal.scale_tag(SCALE, True)}/projection.csv")


def request(what, weight):
    """A `resources` entry of a light rule that never uses a GPU, by weight, growing with the attempt."""
    return lambda w, attempt: fr.fixed_resources(SCALE, weight, attempt)[what]


def data_request(what, weight):
    """A `resources` entry of a data job: its projection where there is one, else the table's, by weight."""
    return lambda w, attempt: {
        **fr.fixed_resources(SCALE, weight, attempt),
        **fr.projected(PROJECTION.get(f"data/{w.key}"), 0, attempt),
    }[what]


def job_request(what, stage):
    """A `resources` entry (runtime, mem_mb, gpu, gpu_mem_mb) of a `stage` job, from its projection where there is
    one, else from its experiment's kind, `device` and, for GPU memory, its unit's analytic need; a GPU job no card
    here holds stops the plan (GPU_CARDS)."""

    def resources(w, attempt):
        out = unit_resources(stage, w, attempt)
        fr.check_cards({f"{stage} {w.experiment}/{w.unit}": out["gpu_mem_mb"]}, GPU_CARDS)
        return out[what]

    return resources


def unit_resources(stage, w, attempt=1):
    """Every `resources` entry of the `stage` job of unit `w.unit` (featlearn.pipeline.resources.job_resources)."""
    unit = UNITS[w.experiment][w.unit]
    blocks = KIND[w.experiment].datasets(unit)
    row = PROJECTION.get(f"{stage}/{w.experiment}/{w.unit}")
    kind = EXPERIMENTS[w.experiment]["kind"]
    return fr.job_resources(config["device"], SCALE, stage, kind, row, attempt, unit, blocks)


def check_gpu_jobs(jobs):
    """Refuse, before any job runs, every GPU job of the plan that one card cannot hold, all named at once: Snakemake
    asks for a job's resources only when it is ready, maybe hours in (onstart calls this with the DAG's jobs)."""
    needs = {}
    for job in jobs:
        if job.rule.name in ("train", "measure"):
            w = job.wildcards
            needs[f"{job.rule.name} {w.experiment}/{w.unit}"] = unit_resources(job.rule.name, w)["gpu_mem_mb"]
    fr.check_cards(needs, GPU_CARDS)


# The GPU memory jobs share: this machine's cards (nvidia-smi, once per call) or the gpu_mem_mb given in --resources
# or a profile. Snakemake caps a job's request at the global resource silently, so a job larger than one card is
# refused by job_request instead, and the global gpu_mem_mb (cards × the smallest card) keeps jobs on shared cards
# from overcommitting them (featlearn.pipeline.gpus.claim_gpu picks the card).
GPU_CARDS = fr.gpu_cards(workflow.global_resources.get("gpu_mem_mb").value, workflow.local_exec)
if GPU_CARDS.total_mb is not None:
    workflow.register_resource("gpu_mem_mb", GPU_CARDS.total_mb)


# What report.smk and projection.smk ask of the DAG (Snakemake's linter wants functions apart from rules).
def claim_stores(paper):
    """The STORES a claims module reads, without importing it; only experiments config.yaml defines and whose data
    this machine has (UNREACHABLE): the others' claims are reported as not measured, so a paper-scale build of the
    figures that fit a machine still evaluates theirs."""
    return [e for e in deps.literal(f"featlearn.claims.{paper}", "STORES") if e in EXPERIMENTS and e not in UNREACHABLE]


def usage_path(stage, experiment, unit):
    return f"{RESULTS}/usage/{stage}/{experiment}/{unit}.{fc.spec_hash(UNITS[experiment][unit])}.json"


def projection_tables(experiments):
    """What the projection script needs of the DAG, for these experiments: both builds' units, their data blocks, the
    figures reading each experiment and the usage record of every rehearsed job."""
    datasets, usage = {}, {}
    for e in experiments:
        for build, units in (("paper", PLANNED_UNITS[e]), ("rehearsal", UNITS[e])):
            for uid, unit in units.items():
                datasets[f"{build}/{e}/{uid}"] = KIND[e].datasets(unit)
        for uid in UNITS[e]:
            for stage in (["train"] if e in TRAINED else []) + ["measure"]:
                usage[f"{stage}/{e}/{uid}"] = usage_path(stage, e, uid)
            for block in KIND[e].datasets(UNITS[e][uid]):
                usage[f"data/{fc.dataset_key(block)}"] = f"{RESULTS}/usage/data/{fc.dataset_key(block)}.json"
    figures = {e: [f"{p}/fig{n}" for (p, n), stores in FIGURE_STORES.items() if e in stores] for e in experiments}
    return {
        "planned": {e: PLANNED_UNITS[e] for e in experiments},
        "rehearsed": {e: UNITS[e] for e in experiments},
        "kinds": {e: EXPERIMENTS[e]["kind"] for e in experiments},
        "trained": [e for e in experiments if e in TRAINED],
        "datasets": datasets,
        "figures": figures,
        "usage": usage,
    }


def projection_figure(which):
    """The one figure ('alignment/fig4') a projection target's {which} names (projection/alignment/fig4.csv), or None
    for all figures (projection.csv)."""
    figure = which.strip("/")
    return figure or None


def figure_experiments_of(figure):
    """The experiments of one figure ('alignment/fig4'), or of all figures (None)."""
    if figure is None:
        return sorted({e for stores in FIGURE_STORES.values() for e in stores if e in EXPERIMENTS})
    paper, name = PurePosixPath(figure).parts
    return figure_stores(paper, name.removeprefix("fig"))
