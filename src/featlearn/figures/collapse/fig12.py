"""Fig 12: VGG-11 (truncated) + MLP head, NC ratios of h⁶, NFA per layer, train loss; rows MNIST, CIFAR-10, SVHN."""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from featlearn.figures.collapse.nn_panels import nfa_figure

EXPERIMENTS = ("collapse_vgg",)


def render(stores: dict[str, xr.Dataset], out: Path) -> None:
    nfa_figure(stores["collapse_vgg"], out, "Fig 12 · VGG-11 (truncated) + MLP head")
