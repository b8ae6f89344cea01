"""Fig 4: Deep RFM NC1 and NC2 against layer, σ = cos (random Fourier features) (rows CIFAR-10, MNIST, SVHN)."""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from featlearn.figures.collapse.panels import nc_figure

EXPERIMENTS = ("deep_rfm_cos",)


def render(stores: dict[str, xr.Dataset], out: Path) -> None:
    nc_figure(stores["deep_rfm_cos"], out, 4)
