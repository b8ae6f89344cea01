"""Fig 14: the MLP's losses and relative weight change ‖W − W₀‖/‖W‖ per layer, for every dataset."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from featlearn.figures.alignment.real_panels import (
    WEIGHT_CHANGE,
    dataset_name,
    loss_panel,
    missing_datasets,
    present_seeds,
    run_label,
    weight_change_panel,
)
from featlearn.figures.style import apply_style, figure, finish, suptitle

EXPERIMENTS = ("real_mlp",)

PER_ROW = 3  # datasets side by side; each takes a loss and a weight-change panel


def draw(stores: dict[str, xr.Dataset]) -> Figure:
    """One two-panel subfigure per dataset: train (solid) and test (dashed) loss on a log axis, and
    ‖W − W₀‖_F/‖W‖_F vs epoch with one line per layer (dark = layer 1), mean ± sd over seeds."""
    apply_style()
    ds = stores["real_mlp"]
    n = ds.sizes["dataset"]
    ncols, nrows = min(n, PER_ROW), int(np.ceil(n / PER_ROW))
    fig = figure(5.2 * ncols, 2.6 * nrows + 0.6, [ds])
    subs = fig.subfigures(nrows, ncols, squeeze=False).ravel()
    for i, (sub, dataset) in enumerate(zip(subs, ds.dataset.values)):
        run = present_seeds(ds.sel(dataset=dataset), "train_loss")
        loss_ax, dw_ax = sub.subplots(1, 2)
        losses = loss_panel(loss_ax, [(run.train_loss, "k", "train", "-"), (run.test_loss, "k", "test", "--")],
                            "MSE loss", "epoch")
        layers = weight_change_panel(dw_ax, run, "layer", "layer", "relative weight change", "epoch")
        for ax in (loss_ax, dw_ax):
            ax.set_xlabel("epoch")
        if i == 0:
            loss_ax.legend(handles=losses, frameon=False)
            dw_ax.legend(handles=layers, frameon=False, fontsize=6)
        suptitle(sub, run_label(dataset_name(dataset), run, "train_loss"))
    title = f"Fig 14 · five-hidden-layer MLP (width 256, init scale 1): losses and {WEIGHT_CHANGE}"
    if missing := missing_datasets(ds):
        title += f"\nnot in this store: {', '.join(missing)}"
    suptitle(fig, title)
    return fig


def render(stores: dict[str, xr.Dataset], out: Path) -> None:
    """Draw Fig 14 and save it with the shared footer."""
    finish(draw(stores), out)
