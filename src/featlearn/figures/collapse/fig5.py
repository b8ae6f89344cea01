"""Fig 5: Deep RFM Gram matrices of M^{1/2}X_l, σ = cos (rows CIFAR-10, SVHN, MNIST)."""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from featlearn.figures.collapse.panels import gram_figure

EXPERIMENTS = ("deep_rfm_cos",)


def render(stores: dict[str, xr.Dataset], out: Path) -> None:
    ds = stores["deep_rfm_cos"]
    gram_figure([("(A)", ds, "cifar10"), ("(B)", ds, "svhn"), ("(C)", ds, "mnist")], out,
                "Fig 5 · Deep RFM Gram matrices, σ = cos")
