"""Fig 7: NC1 through the SVD of each head layer, MLP; rows MNIST, CIFAR-10, SVHN (App. D)."""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from featlearn.figures.collapse.nn_panels import svd_figure, svd_rows

EXPERIMENTS = ("collapse_mlp",)


def render(stores: dict[str, xr.Dataset], out: Path) -> None:
    svd_figure(svd_rows(stores["collapse_mlp"]), out, "Fig 7 · MLP")
