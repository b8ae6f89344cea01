"""Fig 6: Deep RFM Gram matrices of M^{1/2}X_l, σ = ReLU (rows CIFAR-10, SVHN, MNIST)."""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from featlearn.figures.collapse.panels import gram_figure

EXPERIMENTS = ("deep_rfm_relu",)


def render(stores: dict[str, xr.Dataset], out: Path) -> None:
    ds = stores["deep_rfm_relu"]
    gram_figure([("(A)", ds, "cifar10"), ("(B)", ds, "svhn"), ("(C)", ds, "mnist")], out,
                "Fig 6 · Deep RFM Gram matrices, σ = ReLU")
