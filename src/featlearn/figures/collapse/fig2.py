"""Fig 2: NC1 through the SVD of each layer, (A) MLP on MNIST and (B) ResNet-18 + MLP head on CIFAR-10 (main text)."""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from featlearn.figures.collapse.nn_panels import svd_figure

EXPERIMENTS = ("collapse_mlp", "collapse_resnet")


def render(stores: dict[str, xr.Dataset], out: Path) -> None:
    rows = [("(A) MLP", stores["collapse_mlp"], "mnist"), ("(B) ResNet", stores["collapse_resnet"], "cifar10")]
    svd_figure([row for row in rows if row[2] in row[1].dataset.values], out, "Fig 2")
