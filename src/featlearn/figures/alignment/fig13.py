"""Fig 13: UC vs C-NFC of the five-hidden-layer MLP on every dataset (rows) and layer (columns)."""

from __future__ import annotations

from pathlib import Path

import xarray as xr
from matplotlib.figure import Figure

from featlearn.figures.alignment.real_panels import (
    NFC_LABEL,
    PEARSON,
    dataset_name,
    missing_datasets,
    nfc_panel,
    present_seeds,
    run_label,
)
from featlearn.figures.style import apply_style, figure, finish, legend_right, suptitle

EXPERIMENTS = ("real_mlp",)


def draw(stores: dict[str, xr.Dataset]) -> Figure:
    """The Fig 2A panels for every dataset the store holds, Pearson ρ̄ as in Fig 2."""
    apply_style()
    ds = stores["real_mlp"]
    # rows tall enough for their y label's longest line, 'mean ± sample sd over 10 seeds' or a divergence
    fig = figure(2.2 * ds.sizes["layer"] + 0.6, 2.1 * ds.sizes["dataset"] + 0.9, [ds])
    axes = fig.subplots(ds.sizes["dataset"], ds.sizes["layer"], sharey="row", squeeze=False)
    for row, dataset in zip(axes, ds.dataset.values):
        run = present_seeds(ds.sel(dataset=dataset), "train_loss")
        for ax, layer in zip(row, ds.layer.values):
            handles = nfc_panel(ax, run, PEARSON, f"{dataset_name(dataset)} · layer {layer}", "epoch", layer=layer)
        row[0].set_ylabel(run_label(dataset_name(dataset), run, "train_loss", "\n") + "\n" + NFC_LABEL)
    for ax in axes[-1]:
        ax.set_xlabel("epoch (0 = after warm-up)")
    legend_right(axes[0, -1], handles)
    title = (r"Fig 13 · five-hidden-layer MLP (width 256, init scale 1), UC (blue) vs C-NFC (green), "
             r"$\bar\rho$ = Pearson")
    if missing := missing_datasets(ds):
        title += f"\nnot in this store: {', '.join(missing)}"
    suptitle(fig, title)
    return fig


def render(stores: dict[str, xr.Dataset], out: Path) -> None:
    """Draw Fig 13 and save it with the shared footer."""
    finish(draw(stores), out)
