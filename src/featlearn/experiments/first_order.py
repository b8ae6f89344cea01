"""Kind ``first_order``: alignment Fig 7, observed ρ_2nd at layer 0 against the first-order prediction, in one unit
over every (task, α) dataset."""

from __future__ import annotations

from typing import Any

from featlearn.experiments.single import check, combine, entries, units

__all__ = ["check", "combine", "datasets", "entries", "measure", "units"]


def datasets(unit: dict) -> list[dict]:
    return [{"task": t, "n": unit["n"], "n_test": 0, "d": unit["d"], "alpha": a, "seed": unit["seed"], "r": unit["r"]}
            for t in unit["tasks"] for a in unit["alphas"]]


def measure(unit: dict, data: list[dict], run: None, device: Any) -> Any:
    from featlearn.metrics.theory import first_order_store

    keyed = {(p["task"], p["alpha"]): d for p, d in zip(datasets(unit), data)}
    return first_order_store(unit, keyed).assign_attrs(data_source="synthetic (generated)")
