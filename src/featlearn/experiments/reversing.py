"""Kind ``reversing``: alignment Fig 3, observed ρ_2nd against the free-probability prediction on the
alignment-reversing data (App. F, G), in one unit over every (γ, data seed) dataset."""

from __future__ import annotations

from typing import Any

from featlearn.experiments.single import check, combine, entries, units

__all__ = ["check", "combine", "datasets", "entries", "measure", "units"]


def datasets(unit: dict) -> list[dict]:
    fixed = {k: unit[k] for k in ("n", "d", "eps1", "eps2", "x_scale")}
    return [{"task": "alignment_reversing", "gamma": g, "seed": s, **fixed}
            for g in unit["gammas"] for s in range(unit["data_seeds"])]


def measure(unit: dict, data: list[dict], run: None, device: Any) -> Any:
    from featlearn.metrics.theory import reversing_store

    keyed = {(p["gamma"], p["seed"]): d for p, d in zip(datasets(unit), data)}
    return reversing_store(unit, keyed).assign_attrs(data_source="synthetic (generated)")
