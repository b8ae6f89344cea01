"""Fig 10: MLP, NC ratios of h⁶, NFA per layer and train loss; rows MNIST, CIFAR-10, SVHN (App. D)."""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from featlearn.figures.collapse.nn_panels import nfa_figure

EXPERIMENTS = ("collapse_mlp",)


def render(stores: dict[str, xr.Dataset], out: Path) -> None:
    nfa_figure(stores["collapse_mlp"], out, "Fig 10 · MLP")
