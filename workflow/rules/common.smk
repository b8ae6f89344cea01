# Tables derived from config.yaml, and the source files each stage depends on.
import ast
import re

from featlearn import resources as fr

SRC = "src/featlearn/"
SCALE = config["scale"]

EXPERIMENTS = {name: fc.experiment(config, name) for name in config["experiments"]}
# Experiments trained run by run: synthetic MLPs ("training") and networks on real data ("network").
TRAINING = [n for n, e in EXPERIMENTS.items() if e["kind"] in ("training", "network")]
RUNS = {name: fc.runs(config, name) for name in TRAINING}
# Deep RFM experiments run one job per dataset, then stack them (rules deep_rfm_dataset, combine_deep_rfm).
DEEP_RFM = [n for n, e in EXPERIMENTS.items() if e["kind"] == "deep_rfm"]
DATASETS = {key: params for name in EXPERIMENTS for key, params in fc.datasets(config, name).items()}
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


def _module_tree(path):
    return ast.parse(open(path).read())


def figure_experiments(paper, n):
    """The EXPERIMENTS literal of a figure module, read without importing it (matplotlib and
    seaborn would add seconds to every DAG build)."""
    for node in _module_tree(f"{SRC}figures/{paper}/fig{n}.py").body:
        target = getattr(node, "target", None) or (node.targets[0] if hasattr(node, "targets") else None)
        if getattr(target, "id", None) == "EXPERIMENTS":
            return ast.literal_eval(node.value)
    raise ValueError(f"{SRC}figures/{paper}/fig{n}.py defines no EXPERIMENTS tuple")


def figure_imports(path):
    """Every featlearn.figures module ``path`` imports, transitively: a figure reruns when any changes."""
    found, todo = [], [path]
    while todo:
        for node in ast.walk(_module_tree(todo.pop())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("featlearn.figures."):
                dep = SRC + node.module.removeprefix("featlearn.").replace(".", "/") + ".py"
                if dep not in found:
                    found.append(dep)
                    todo.append(dep)
    return sorted(found)


FIGURE_STORES = {
    (paper, n): figure_experiments(paper, n) for paper, numbers in FIGURE_NUMBERS.items() for n in numbers
}
ALL_FIGURES = [f"figures/{paper}/fig{n}.pdf" for paper, n in FIGURE_STORES]


def sources(*modules):
    """Snakemake does not see Python imports: a rule lists the library files it runs."""
    return [SRC + m for m in modules]


DATA_SOURCES = sources("data/synthetic.py")
REAL_DATA_SOURCES = sources("data/__init__.py", "data/real.py", "data/standins.py", "data/text.py")
MODEL_SOURCES = sources("models/__init__.py", "models/mlp.py", "optim/slo.py", "train.py")
# The module of each architecture beyond the MLP, so a VGG edit never retrains the MLPs.
ARCH_SOURCES = {
    "mlp": [],
    "vgg11": sources("models/vgg.py"),
    "gpt": sources("models/gpt.py"),
    "collapse_mlp": sources("models/collapse_nets.py"),
    "resnet18_mlp": sources("models/collapse_nets.py"),
    "vgg11_mlp": sources("models/collapse_nets.py"),
}
# Metric code per measurement family (spec["measure"]["family"]; synthetic runs are "nfa").
FAMILY_SOURCES = {
    "nfa": [],
    "conv_nfa": sources("metrics/conv_nfa.py"),
    "attention_nfa": sources("metrics/attention_nfa.py"),
    "collapse": sources("metrics/collapse.py", "metrics/collapse_measure.py"),
}
# Adaptive SLO measures UC-NFC inside training, so only its runs depend on the metric code.
ADAPTIVE_SOURCES = sources("metrics/jacobians.py", "metrics/nfa.py")
MEASURE_SOURCES = MODEL_SOURCES + sources(
    "metrics/jacobians.py", "metrics/nfa.py", "metrics/measure.py", "store.py"
)
THEORY_SOURCES = sources(
    "models/mlp.py", "metrics/jacobians.py", "metrics/nfa.py", "metrics/theory.py", "store.py"
)
# Experiments that build their store in one job, by kind (training experiments go run by run).
STORE_SOURCES = {
    "reversing": THEORY_SOURCES,
    "first_order": THEORY_SOURCES,
    "tangent_mnist": sources("metrics/tangent.py", "tangent_experiment.py", "store.py"),
    "tangent_penalties": sources("metrics/tangent.py", "store.py"),
}
DEEP_RFM_SOURCES = sources(
    "rfm/experiment.py", "rfm/deep_rfm.py", "rfm/features.py", "rfm/kernels.py", "rfm/linalg.py",
    "metrics/collapse.py", "store.py",
)


def data_path(params):
    return f"results/data/{fc.dataset_key(params)}.pt"


def train_sources(spec):
    adaptive = spec["train"]["optimizer"] == "slo_adaptive"
    return MODEL_SOURCES + ARCH_SOURCES[spec["model"].get("arch", "mlp")] + (ADAPTIVE_SOURCES if adaptive else [])


def measure_sources(spec):
    family = spec["measure"].get("family", "nfa")
    return MEASURE_SOURCES + ARCH_SOURCES[spec["model"].get("arch", "mlp")] + FAMILY_SOURCES[family]


def figure_stores(paper, n):
    if (paper, int(n)) not in FIGURE_STORES:
        raise ValueError(
            f"figures/{paper}/fig{n}.pdf is not a figure this pipeline builds; targets: {', '.join(ALL_FIGURES)}"
        )
    return FIGURE_STORES[(paper, int(n))]


def figure_sources(paper, n):
    path = f"{SRC}figures/{paper}/fig{n}.py"
    return [path, *figure_imports(path)]


def store_path(experiment):
    return f"results/metrics/{experiment}.nc"


# What each job asks of a scheduler (featlearn.resources: one table, and the one rule for who gets a GPU). The SLURM
# profile turns these into sbatch options; a cluster with other limits overrides one rule there with `set-resources`.
def request(what, weight):
    """A `resources` entry of a rule that never uses a GPU, by weight: light, cpu or gpu."""
    return fr.fixed_resources(SCALE, weight)[what]


def job_request(what, stage):
    """A `resources` entry (runtime, mem_mb or gpu) of a `stage` job, from its experiment's kind and `device`."""
    return lambda w: fr.job_resources(config["device"], SCALE, stage, EXPERIMENTS[w.experiment]["kind"])[what]


THREADS = config.get("threads", 1)
