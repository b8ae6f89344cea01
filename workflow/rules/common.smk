# Tables derived from config.yaml (through each experiment kind's module), and the code each job depends on.
import re

from featlearn import deps
from featlearn import experiments as fx
from featlearn import resources as fr

SCALE = config["scale"]
# Each scale keeps its own data, runs, stores, claims, logs and benchmarks, so the scales coexist; figures/ holds the
# configured scale's figures (switching back to a built scale redraws them from its stores, nothing retrains).
RESULTS = f"results/{SCALE}"

EXPERIMENTS = {name: fc.experiment(config, name) for name in config["experiments"]}
# Each experiment's units (its independent jobs: runs, datasets, or the whole experiment), from its kind's module.
KIND = {name: fx.kind_of(e["kind"]) for name, e in EXPERIMENTS.items()}
UNITS = {name: KIND[name].units(name, e) for name, e in EXPERIMENTS.items()}
# Experiments whose units go through the training loop before they are measured.
TRAINED = [n for n, e in EXPERIMENTS.items() if fx.KINDS[e["kind"]]["trained"]]
DATASETS = {fc.dataset_key(p): p for n, units in UNITS.items() for u in units.values() for p in KIND[n].datasets(u)}
SYNTHETIC_DATA = {key: p for key, p in DATASETS.items() if "task" in p}
REAL_DATA = {key: p for key, p in DATASETS.items() if "dataset" in p}


def one_of(names):
    """A wildcard constraint matching exactly these names (never empty: Snakemake needs a regex)."""
    return "|".join(re.escape(n) for n in names) or "NONE"

# Figures: each figure module names the experiments (stores) it reads.
FIGURE_NUMBERS = {
    "alignment": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17],
    "collapse": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
    "tangent": [1, 2, 3],
}


def figure_experiments(paper, n):
    """The EXPERIMENTS a figure module reads (its stores), without importing the module."""
    return deps.literal(f"featlearn.figures.{paper}.fig{n}", "EXPERIMENTS")


FIGURE_STORES = {
    (paper, n): figure_experiments(paper, n) for paper, numbers in FIGURE_NUMBERS.items() for n in numbers
}
ALL_FIGURES = [f"figures/{paper}/fig{n}.pdf" for paper, n in FIGURE_STORES]
# figures/figN.pdf: the README's shortcut to alignment Fig N, a copy that `all` keeps current
SHORTCUTS = [f"figures/fig{n}.pdf" for paper, n in FIGURE_STORES if paper == "alignment"]


# Code inputs: the import closure of each job's script and of the modules it dispatches to (featlearn.deps), never a
# hand-written list, so an edit reruns exactly the jobs whose code imports the edited file.
ARCH_MODULES = deps.dispatch("featlearn.models")


def data_path(params):
    return f"{RESULTS}/data/{fc.dataset_key(params)}.pt"


OPTIMIZER_MODULES = deps.dispatch("workflow/scripts/train.py")


def train_code(spec):
    optimizer = OPTIMIZER_MODULES.get(spec["train"]["optimizer"])
    return deps.job_code("train", ARCH_MODULES[spec["model"].get("arch", "mlp")], *([optimizer] if optimizer else []))


def measure_code(experiment, unit):
    """The measure script, the experiment's kind module and what the unit dispatches to (architecture, family)."""
    choices = [deps.dispatch(dispatcher)[choice] for dispatcher, choice in KIND[experiment].entries(unit)]
    return deps.job_code("measure", fx.KINDS[EXPERIMENTS[experiment]["kind"]]["module"], *choices)


def figure_stores(paper, n):
    """The stores a figure reads; a figure that does not exist, or reads an experiment config.yaml no longer
    defines (whose old store may still lie in results/), stops the DAG with the fix."""
    if (paper, int(n)) not in FIGURE_STORES or n != str(int(n)):
        raise ValueError(
            f"figures/{paper}/fig{n}.pdf is not a figure this pipeline builds; targets: {', '.join(ALL_FIGURES)}"
        )
    stores = FIGURE_STORES[(paper, int(n))]
    missing = [e for e in stores if e not in EXPERIMENTS]
    if missing:
        raise ValueError(
            f"figures/{paper}/fig{n}.pdf reads experiment(s) {missing}, which config.yaml does not define (a store left "
            f"in {RESULTS}/metrics/ would be stale); define them again in config.yaml, or build other targets"
        )
    return stores


def figure_code(paper, n):
    return deps.job_code("render", f"featlearn.figures.{paper}.fig{n}")


# Each experiment's resolved spec, and the configured scale, as files rewritten only when they change: every job of an
# experiment reads its stamp, and every figure the scale's, so a config change or a scale switch reruns what it
# affects by file times alone, even where Snakemake's metadata is gone (a fresh clone with copied results,
# `rm -rf .snakemake`), which would otherwise find the old results "up to date".
SCALE_STAMP = "results/scale.txt"
fc.write_if_changed(SCALE_STAMP, SCALE + "\n")


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
        raise ValueError(f"{w.experiment}/{w.unit}.{w.spec}: no unit of config.yaml has spec hash {w.spec} "
                         f"(the current one is {fc.spec_hash(unit)})")
    return unit


def store_path(experiment):
    """An experiment's store, named by its spec's hash like every run and unit store."""
    return f"{RESULTS}/metrics/{experiment}.{fc.spec_hash(EXPERIMENTS[experiment])}.nc"


def current_experiment(w):
    exp = EXPERIMENTS[w.experiment]
    if w.spec != fc.spec_hash(exp):
        raise ValueError(f"{w.experiment}.{w.spec}: config.yaml's {w.experiment} has spec hash {fc.spec_hash(exp)}")
    return exp


# What each job asks of a scheduler (featlearn.resources: one table, and the one rule for who gets a GPU). The SLURM
# profile turns these into sbatch options; a cluster with other limits overrides one rule there with `set-resources`.
def request(what, weight):
    """A `resources` entry of a rule that never uses a GPU, by weight: light, cpu or gpu."""
    return fr.fixed_resources(SCALE, weight)[what]


def job_request(what, stage):
    """A `resources` entry (runtime, mem_mb or gpu) of a `stage` job, from its experiment's kind and `device`."""
    return lambda w: fr.job_resources(config["device"], SCALE, stage, EXPERIMENTS[w.experiment]["kind"])[what]


THREADS = config.get("threads", 1)
