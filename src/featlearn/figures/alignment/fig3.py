"""Fig 3: free-probability prediction vs observed ρ_2nd on the alignment-reversing data (App. F, G)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.axes import Axes

from featlearn.figures.alignment.panels import experiment_config, sequential_colors
from featlearn.figures.style import apply_style, finish, subplots

EXPERIMENTS = ("reversing",)
MEAN_COLOR = "tab:blue"


def _seed_curves(ax: Axes, rho: xr.DataArray, shaded: int, title: str) -> None:
    """The first ``shaded`` data seeds as light curves, the mean over all seeds solid blue."""
    gammas = rho.gamma.values
    for seed, color in zip(rho.data_seed.values[:shaded], sequential_colors(shaded)):
        ax.plot(
            gammas,
            rho.sel(data_seed=seed).values,
            color=color,
            alpha=0.6,
            linewidth=1,
            label=f"data seed {seed}",
        )
    ax.plot(
        gammas,
        rho.mean("data_seed").values,
        color=MEAN_COLOR,
        linewidth=2,
        label=f"mean over {rho.sizes['data_seed']} seeds",
    )
    ax.set_title(title)
    ax.set_xlabel("balance γ")
    ax.set_ylabel("ρ_2nd")


def render(stores: dict[str, xr.Dataset], out: Path) -> None:
    """Three squares: predicted ρ vs γ, observed ρ vs γ (shaded seeds + solid mean), and the
    seed means predicted (x) vs observed (y), one point per γ, against y = x."""
    apply_style()
    ds = stores["reversing"]
    cfg = experiment_config(ds)
    fig, axes = subplots(1, 3, 10.5, 3.8)
    left, middle, right = axes[0]
    _seed_curves(left, ds.rho_predicted, cfg["shaded_seeds"], "predicted (free probability)")
    _seed_curves(middle, ds.rho_observed, cfg["shaded_seeds"], "observed (one fixed net)")
    values = np.concatenate([ds.rho_predicted.values.ravel(), ds.rho_observed.values.ravel()])
    low, high = float(values.min()), float(values.max())
    pad = 0.05 * (high - low) + 1e-3
    for ax in (left, middle):
        ax.set_ylim(low - pad, high + pad)
    middle.legend(loc="best", fontsize=6, frameon=False)

    predicted, observed = ds.rho_predicted.mean("data_seed"), ds.rho_observed.mean("data_seed")
    points = right.scatter(
        predicted.values, observed.values, c=ds.gamma.values, cmap="viridis", s=18, zorder=3
    )
    lo, hi = (
        min(float(predicted.min()), float(observed.min())),
        max(float(predicted.max()), float(observed.max())),
    )
    margin = 0.05 * (hi - lo) + 1e-3
    right.plot(
        [lo - margin, hi + margin], [lo - margin, hi + margin], color="0.5", linestyle="--", label="y = x"
    )
    right.set_xlim(lo - margin, hi + margin)
    right.set_ylim(lo - margin, hi + margin)
    right.set_xlabel("predicted ρ (seed mean)")
    right.set_ylabel("observed ρ (seed mean)")
    gap = float(np.abs(predicted - observed).max())
    right.set_title(f"one point per γ · max |pred − obs| = {gap:.3f}")
    right.legend(loc="upper left", fontsize=6, frameon=False)
    fig.colorbar(points, ax=right, label="γ", shrink=0.8)
    for ax in axes[0]:
        ax.set_box_aspect(1)
    fig.suptitle(
        f"Fig 3 · alignment-reversing data, n = {cfg['n']}, d = {cfg['d']}, quadratic net k = {cfg['k']} · "
        f"R-moments over {cfg['r_seeds']} nets, Den2 {cfg['den2']} · x scale {ds.attrs['x_scale_used']:.3g}, "
        f"ε₂ = {cfg['eps2']:g}"
    )
    finish(fig, out, ds)
