"""Fig 1: Deep RFM Gram matrices of M^{1/2}X_l: (A) CIFAR-10 with σ = cos, (B) MNIST with σ = ReLU."""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from featlearn.figures.collapse.panels import gram_figure

EXPERIMENTS = ("deep_rfm_cos", "deep_rfm_relu")


def render(stores: dict[str, xr.Dataset], out: Path) -> None:
    gram_figure([("(A)", stores["deep_rfm_cos"], "cifar10"), ("(B)", stores["deep_rfm_relu"], "mnist")], out,
                "Fig 1 · Deep RFM Gram matrices")
