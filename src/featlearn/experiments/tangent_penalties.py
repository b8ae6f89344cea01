"""Kind ``tangent_penalties``: the tangent paper's effective penalties (Fig 2), computed in one unit; no data."""

from __future__ import annotations

from typing import Any

from featlearn.experiments.single import check, combine, datasets, entries, units

__all__ = ["check", "combine", "datasets", "entries", "measure", "units"]


def measure(unit: dict, data: list[dict], run: None, device: Any) -> Any:
    from featlearn.metrics.tangent import penalties_store

    return penalties_store(unit).assign_attrs(data_source="none (analytic)")
