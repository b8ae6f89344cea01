"""Kind ``training``: bias-free MLPs on synthetic data, one run per sweep point (alignment Figs 1, 4–6, 8–12).

Each unit is a self-contained run spec: the sweep is the product of ``sweep``'s lists; ``init_scale`` replaces the
first hidden layer's scale, ``alpha`` and ``seed`` select the data, ``optimizer`` the optimizer, and a list-valued
``train.lr`` (``train.epochs``, ``model.gain``) follows the sweep key named by ``train.lr_follows``. Runs train
through ``featlearn.train``; a unit's store is ``metrics.measure.measure_run``'s, the experiment's store
``combine_runs``'s, with the sweep keys as dimensions.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

from featlearn.config import key

# The kind's flags (featlearn.pipeline.experiments): what its units go through and where they compute.
KIND = {"trained": True, "device": True, "heavy": False, "repeats": {}, "twin": True}

SWEEP_DIMS = ("dataset", "alpha", "init_scale", "optimizer", "seed")
# Config values that may be lists with one entry per value of the sweep key ``train.lr_follows``.
FOLLOWING = (("train", "lr"), ("train", "epochs"), ("model", "gain"))


def units(name: str, exp: dict) -> dict[str, dict]:
    """Every run of the sweep, keyed by its run id ('init_scale-0.01_seed-0')."""
    sweep = exp.get("sweep", {})
    dims = [d for d in SWEEP_DIMS if d in sweep]
    table = {}
    for values in itertools.product(*(sweep[d] for d in dims)):
        point = dict(zip(dims, values))
        spec = {k: copy.deepcopy(exp[k]) for k in ("data", "model", "train", "measure")}
        spec["experiment"], spec["kind"], spec["sweep"] = name, exp["kind"], point
        spec["seed"] = point.get("seed", 0)
        if exp["kind"] == "training":  # synthetic data is drawn per seed; a real dataset is one fixed set
            spec["data"]["seed"] = spec["seed"]
        if "dataset" in point:
            spec["data"]["dataset"] = point["dataset"]
        if "alpha" in point:
            spec["data"]["alpha"] = point["alpha"]
        if "init_scale" in point:
            spec["model"]["init_scales"][0] = point["init_scale"]
        if "optimizer" in point:
            spec["train"]["optimizer"] = point["optimizer"]
        for block, field in FOLLOWING:
            value = spec[block].get(field)
            if isinstance(value, list):
                follows = spec["train"]["lr_follows"]
                spec[block][field] = value[sweep[follows].index(point[follows])]
        table[key(point)] = spec
    return table


def datasets(unit: dict) -> list[dict]:
    return [unit["data"]]


def entries(unit: dict) -> list[tuple[str, str]]:
    """(dispatcher, choice) of what measuring the run reaches: its architecture and its measurement family."""
    return [("featlearn.models", unit["model"].get("arch", "mlp")),
            ("featlearn.metrics.measure", unit["measure"].get("family", "nfa"))]


def check(exp: dict, where: str) -> list[str]:
    problems = []
    train, model = exp["train"], exp["model"]
    if len(model["init_scales"]) != len(model["widths"]):
        problems.append(
            f"{where}.model.init_scales has {len(model['init_scales'])} entries for "
            f"{len(model['widths'])} hidden layers; give one scale per hidden layer"
        )
    problems += following_errors(exp, where)
    data = exp["data"]
    if data.get("task") == "chain_monomial" and data["r"] > data["d"]:
        problems.append(f"{where}.data.r ({data['r']}) exceeds data.d ({data['d']}): the chain monomial multiplies "
                        "r of the d coordinates; take r <= d")
    if train["steps"] < train["measure_every"]:
        problems.append(
            f"{where}.train.measure_every ({train['measure_every']}) exceeds train.steps ({train['steps']})"
        )
    return problems


def following_errors(exp: dict, where: str) -> list[str]:
    """List-valued settings need ``train.lr_follows`` to name a sweep key with as many values."""
    problems = []
    train, sweep = exp["train"], exp.get("sweep", {})
    for block, field in FOLLOWING:
        if isinstance(exp[block].get(field), list):
            follows, n = train.get("lr_follows"), len(exp[block][field])
            if follows not in sweep:
                problems.append(f"{where}.{block}.{field} is a list, so train.lr_follows must name a sweep key "
                                f"{sorted(sweep)}")
            elif n != len(sweep[follows]):
                problems.append(f"{where}.{block}.{field} has {n} values for {len(sweep[follows])} "
                                f"values of sweep.{follows}")
    return problems


def measure(unit: dict, data: list[dict], run: dict, device: Any) -> Any:
    """The run's metric dataset, on ``device``, labelled with where its data came from."""
    from featlearn.metrics.measure import measure_run

    ds = measure_run(run, data[0], unit, device)
    return ds.assign_attrs(data_source=data[0].get("source", "synthetic (generated)"))


def combine(exp: dict, parts: dict[str, tuple[dict, Any]]) -> Any:
    """One store for the sweep: the runs on the sweep's named dimensions; one source line per distinct source."""
    from featlearn.metrics.measure import combine_runs

    store = combine_runs({run: (unit["sweep"], ds) for run, (unit, ds) in parts.items()})
    sources = sorted({str(ds.attrs["data_source"]) for _, ds in parts.values()})
    return store.assign_attrs(data_source=";\n".join(sources))
