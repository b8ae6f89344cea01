# Tables derived from config.yaml, and the source files each stage depends on.
import ast
import os

SRC = "src/featlearn/"
SCALE = config["scale"]

EXPERIMENTS = {name: fc.experiment(config, name) for name in config["experiments"]}
TRAINING = [n for n, e in EXPERIMENTS.items() if e["kind"] == "training"]
RUNS = {name: fc.runs(config, name) for name in TRAINING}
DATASETS = {key: params for name in EXPERIMENTS for key, params in fc.datasets(config, name).items()}

# Figures: each figure module names the experiments (stores) it reads.
FIGURE_NUMBERS = {
    "alignment": [1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
    "collapse": [1, 3, 4, 5, 6],
    "tangent": [1, 2, 3],
}


def figure_experiments(paper, n):
    """The EXPERIMENTS literal of a figure module, read without importing it (matplotlib and
    seaborn would add seconds to every DAG build)."""
    tree = ast.parse(open(f"{SRC}figures/{paper}/fig{n}.py").read())
    for node in tree.body:
        target = getattr(node, "target", None) or (node.targets[0] if hasattr(node, "targets") else None)
        if getattr(target, "id", None) == "EXPERIMENTS":
            return ast.literal_eval(node.value)
    raise ValueError(f"{SRC}figures/{paper}/fig{n}.py defines no EXPERIMENTS tuple")


FIGURE_STORES = {
    (paper, n): figure_experiments(paper, n) for paper, numbers in FIGURE_NUMBERS.items() for n in numbers
}
ALL_FIGURES = [f"figures/{paper}/fig{n}.pdf" for paper, n in FIGURE_STORES]


def sources(*modules):
    """Snakemake does not see Python imports: a rule lists the library files it runs."""
    return [SRC + m for m in modules]


DATA_SOURCES = sources("data/synthetic.py")
MODEL_SOURCES = sources("models/mlp.py", "optim/slo.py", "train.py")
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
    "deep_rfm": sources(
        "rfm/experiment.py", "rfm/deep_rfm.py", "rfm/features.py", "rfm/kernels.py", "rfm/linalg.py",
        "metrics/collapse.py", "data/standins.py", "data/real.py", "store.py",
    ),
}


def data_path(params):
    return f"results/data/{fc.dataset_key(params)}.pt"


def train_sources(spec):
    adaptive = spec["train"]["optimizer"] == "slo_adaptive"
    return MODEL_SOURCES + (ADAPTIVE_SOURCES if adaptive else [])


def figure_stores(paper, n):
    if (paper, int(n)) not in FIGURE_STORES:
        raise ValueError(
            f"figures/{paper}/fig{n}.pdf is not a figure this pipeline builds; targets: {', '.join(ALL_FIGURES)}"
        )
    return FIGURE_STORES[(paper, int(n))]


def figure_sources(paper, n):
    shared = [f"figures/{paper}/panels.py"] if os.path.exists(f"{SRC}figures/{paper}/panels.py") else []
    return sources("figures/style.py", *shared, f"figures/{paper}/fig{n}.py")


def store_path(experiment):
    return f"results/metrics/{experiment}.nc"


# Resources grow with the scale; the SLURM profile turns them into requests.
RUNTIME_MIN = {"smoke": 5, "quick": 20, "paper": 240}[SCALE]
MEM_MB = {"smoke": 1000, "quick": 2000, "paper": 8000}[SCALE]
