"""Fig 8: NC1 through the SVD of each head layer, ResNet-18 + MLP head; rows MNIST, CIFAR-10, SVHN (App. D)."""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from featlearn.figures.collapse.nn_panels import svd_figure, svd_rows

EXPERIMENTS = ("collapse_resnet",)


def render(stores: dict[str, xr.Dataset], out: Path) -> None:
    svd_figure(svd_rows(stores["collapse_resnet"]), out, "Fig 8 · ResNet-18 + MLP head")
