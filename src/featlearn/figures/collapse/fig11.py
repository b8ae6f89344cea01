"""Fig 11: ResNet-18 + MLP head, NC ratios of h⁶, NFA per layer and train loss; rows MNIST, CIFAR-10, SVHN (App. D)."""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from featlearn.figures.collapse.nn_panels import nfa_figure

EXPERIMENTS = ("collapse_resnet",)


def render(stores: dict[str, xr.Dataset], out: Path) -> None:
    nfa_figure(stores["collapse_resnet"], out, "Fig 11 · ResNet-18 + MLP head")
