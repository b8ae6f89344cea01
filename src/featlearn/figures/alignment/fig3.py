"""Fig 3: free-probability prediction vs observed ρ_2nd on the alignment-reversing data (App. F, G)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.axes import Axes

from featlearn.figures.alignment.panels import RHO_2ND, experiment_config
from featlearn.figures.style import apply_style, figure, finish, grid, ordered_colors, suptitle

EXPERIMENTS = ("reversing",)
MEAN_COLOR = "tab:blue"
RHO_RANGE = (0.0, 1.0)  # every panel shows ρ on its whole range, so a flat curve reads as flat


def span(rho: xr.DataArray) -> str:
    """How the seed-mean ρ moves over γ: 'ρ 0.21 at γ = 0.05 → 0.98 at γ = 1', our acceptance
    test (docs/figures/alignment.md, Fig 3: low at small γ, high at γ = 1)."""
    mean = rho.mean("data_seed")
    g = rho.gamma.values
    return f"{float(mean[0]):.3f} at γ = {g[0]:g} → {float(mean[-1]):.3f} at γ = {g[-1]:g}"


def _seed_curves(ax: Axes, rho: xr.DataArray, shaded: int, title: str) -> None:
    """The first ``shaded`` data seeds as light curves, the mean over all seeds solid blue; the title says where
    the mean starts and ends."""
    gammas = rho.gamma.values
    for seed, color in zip(rho.data_seed.values[:shaded], ordered_colors(shaded)):
        ax.plot(gammas, rho.sel(data_seed=seed).values, color=color, alpha=0.6, linewidth=1, label=f"data seed {seed}")
    n = rho.sizes["data_seed"]
    ax.plot(gammas, rho.mean("data_seed").values, color=MEAN_COLOR, linewidth=2,
            label=f"mean over {n} seeds" if n > 1 else f"data seed {rho.data_seed.values[0]}")
    ax.set_title(f"{title}\n{span(rho)}")
    ax.set_xlabel("balance γ")
    ax.set_ylabel(RHO_2ND)


def render(stores: dict[str, xr.Dataset], out: Path) -> None:
    """Three squares: predicted ρ vs γ, observed ρ vs γ (shaded seeds + solid mean), and the seed means predicted
    (x) vs observed (y), one point per γ, against y = x. Every axis spans ρ's whole range [0, 1] (wider if the data
    leave it), so that whether ρ falls with γ, the paper's effect, is visible on the figure's face rather than
    hidden by an axis zoomed onto the data."""
    apply_style()
    ds = stores["reversing"]
    cfg = experiment_config(ds)
    fig = figure(10.5, 4.0, ds)
    axes = grid(fig, 1, 3)
    left, middle, right = axes[0]
    _seed_curves(left, ds.rho_predicted, cfg["shaded_seeds"], "predicted (free probability)")
    _seed_curves(middle, ds.rho_observed, cfg["shaded_seeds"], "observed (one fixed net)")
    values = np.concatenate([ds.rho_predicted.values.ravel(), ds.rho_observed.values.ravel()])
    low, high = min(RHO_RANGE[0], float(np.nanmin(values))), max(RHO_RANGE[1], float(np.nanmax(values)))
    pad = 0.03 * (high - low)
    limits = (low - pad, high + pad)
    for ax in (left, middle):
        ax.set_ylim(*limits)
    middle.legend(loc="lower right", fontsize=6, frameon=False)

    predicted, observed = ds.rho_predicted.mean("data_seed"), ds.rho_observed.mean("data_seed")
    points = right.scatter(predicted.values, observed.values, c=ds.gamma.values, cmap="viridis", s=18, zorder=3)
    right.plot(limits, limits, color="0.5", linestyle="--", label="y = x")
    right.set(xlim=limits, ylim=limits, xlabel=f"predicted {RHO_2ND} (seed mean)",
              ylabel=f"observed {RHO_2ND} (seed mean)")
    change = {name: float(rho[-1] - rho[0]) for name, rho in (("predicted", predicted), ("observed", observed))}
    right.set_title(f"one point per γ · change from γ = {ds.gamma.values[0]:g} to {ds.gamma.values[-1]:g}:\n"
                    f"predicted {change['predicted']:+.3f}, observed {change['observed']:+.3f}")
    right.legend(loc="upper left", fontsize=6, frameon=False)
    fig.colorbar(points, ax=right, label="γ", shrink=0.8)
    for ax in axes[0]:
        ax.set_box_aspect(1)
    suptitle(fig, f"Fig 3 · alignment-reversing data, n = {cfg['n']}, d = {cfg['d']}, quadratic net k = {cfg['k']} · "
                  f"R-moments over {cfg['r_seeds']} nets, Den2 {cfg['den2']} · x scale {ds.attrs['x_scale_used']:.3g}, "
                  f"ε₂ = {cfg['eps2']:g} · paper: {RHO_2ND} low at small γ, rising to high at γ = 1")
    finish(fig, out)
