"""Fig 1: a more difficult task yields higher label kernel alignment (K0; K and K_ŷ for ŷ_i = y_i and sign(y_i))."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize

from featlearn.figures.spread import mean_sd, spread_note
from featlearn.figures.style import apply_style, figure, finish, suptitle

EXPERIMENTS = ("tangent_mnist",)
CMAP = "berlin"  # dark-centred diverging map, matplotlib's stand-in for the paper's cmasher.wildfire
VMAX = {"K0": 4.0, "K": 10.0, "K_yhat": 2.0}  # the paper's colour scales (App. B.1)
PAPER_SIM = {"linear": 0.17, "binary": 0.40}  # read from the authors' rendered notebook figure


def label_kernel(run: xr.Dataset) -> np.ndarray:
    """K_ŷ = r rᵀ, r = f_θ̂ − f_θ0 on the kernel points (Eq. 9)."""
    r = (run.f_final - run.f_init).values
    return np.outer(r, r)


def _sim_note(ds: xr.Dataset, task: str) -> str:
    values = ds.alignment.sel(task=task).values
    spread = f"\n{len(values)} seeds: {mean_sd(values)}" if len(values) > 1 else ""
    return f"sim = {values[0]:.2f}{spread}\n(paper {PAPER_SIM[task]:.2f})"


def render(stores: dict[str, xr.Dataset], out: Path) -> None:
    """1×5 heatmaps of the first seed, rows and columns ordered by increasing y_i, each (K, K_ŷ) pair grouped;
    under each panel its largest entry, under each K the alignment cos(K, K_ŷ) of the seed shown, its mean ± sd
    over seeds and the paper's value."""
    apply_style()
    ds = stores["tangent_mnist"]
    first = ds.isel(seed=0)
    linear, binary = first.sel(task="linear"), first.sel(task="binary")
    panels = [
        ("$K_0$", linear.K0.values, VMAX["K0"], ""),
        ("$K,\\ \\hat y_i = y_i$", linear.K.values, VMAX["K"], _sim_note(ds, "linear")),
        ("$K_{\\hat y}$", label_kernel(linear), VMAX["K_yhat"], ""),
        ("$K,\\ \\hat y_i = \\mathrm{sign}(y_i)$", binary.K.values, VMAX["K"], _sim_note(ds, "binary")),
        ("$K_{\\hat y}$", label_kernel(binary), VMAX["K_yhat"], ""),
    ]
    fig = figure(7.5, 3.0, ds)
    groups = fig.subfigures(1, 3, width_ratios=[1, 2, 2.2], wspace=0.02)  # K0, then each (K, K_ŷ) pair drawn closer
    axes = [groups[0].subplots(), *groups[1].subplots(1, 2), *groups[2].subplots(1, 2)]
    for ax, (title, matrix, vmax, note) in zip(axes, panels):
        ax.imshow(matrix, cmap=CMAP, vmin=-vmax, vmax=vmax, interpolation="nearest")
        ax.set_title(title)
        ax.set_xlabel(f"max {matrix.max():.1f}" + (f"\n{note}" if note else ""), fontsize=7)
        ax.set_xticks([])
        ax.set_yticks([])
    groups[2].colorbar(ScalarMappable(Normalize(-1, 1), cmap=CMAP), ax=axes[-1], ticks=[0], fraction=0.06)
    n, seeds = ds.sizes["sample_i"], ds.sizes["seed"]
    suptitle(fig, f"Fig 1 · MNIST 2 vs 3, N = {n} kernel points ordered by $y_i$ (seed {int(ds.seed[0])} shown; "
                  f"sim: {spread_note(seeds)}); colour limits ±{VMAX['K0']:g}, ±{VMAX['K']:g}, "
                  f"±{VMAX['K_yhat']:g}")
    finish(fig, out)
