"""Kind ``deep_rfm``: Deep Recursive Feature Machines, one unit per dataset (collapse Figs 1, 3–6; spec §2.3).

A unit reads the data stage's prepared dataset (the first N training images, standardized per feature over those N,
±1 one-hot, flattened, sorted by class; real files at paper scale, the labelled offline stand-ins at quick scale),
runs ``rfm.experiment.deep_rfm_dataset`` on the job's device, and the experiment's store stacks the datasets.
"""

from __future__ import annotations

from typing import Any


def data_block(exp: dict, dataset: str) -> dict:
    """The data block of one dataset (collapse spec §1); the same block a network experiment holds, so the data
    rule prepares (and shares) it."""
    return {"dataset": dataset, "source": exp["data"]["source"], "n": exp["data"]["n"], "n_test": 0,
            "standardize": "feature", "targets": "signed", "flatten": True, "sort_by_class": True}


def units(name: str, exp: dict) -> dict[str, dict]:
    return {d: {**exp, "experiment": name, "dataset": d} for d in exp["data"]["datasets"]}


def datasets(unit: dict) -> list[dict]:
    return [data_block(unit, unit["dataset"])]


def entries(unit: dict) -> list[tuple[str, str]]:
    return []


def check(exp: dict, where: str) -> list[str]:
    if max(exp["gram"]["layers"]) > exp["model"]["depth"]:
        return [f"{where}.gram.layers go past model.depth ({exp['model']['depth']})"]
    return []


def measure(unit: dict, data: list[dict], run: None, device: Any) -> Any:
    from featlearn.rfm.experiment import deep_rfm_dataset

    return deep_rfm_dataset(unit, unit["dataset"], data[0], device)


def combine(exp: dict, parts: dict[str, tuple[dict, Any]]) -> Any:
    from featlearn.rfm.experiment import combine_datasets

    return combine_datasets(exp, [parts[d][1] for d in exp["data"]["datasets"]])
