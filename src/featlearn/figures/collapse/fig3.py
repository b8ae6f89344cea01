"""Fig 3: Deep RFM NC1 and NC2 against layer, σ = ReLU (rows CIFAR-10, MNIST, SVHN)."""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from featlearn.figures.collapse.panels import nc_figure

EXPERIMENTS = ("deep_rfm_relu",)


def render(stores: dict[str, xr.Dataset], out: Path) -> None:
    nc_figure(stores["deep_rfm_relu"], out, 3)
