"""Fig 7: observed ρ_2nd vs the first-order (mean-𝒦) prediction at layer 0 of 2-hidden-layer MLPs."""

from __future__ import annotations

from pathlib import Path

import xarray as xr
from matplotlib.lines import Line2D

from featlearn.figures.alignment.panels import RHO_2ND, experiment_config
from featlearn.figures.spread import sample_sd, spread_note
from featlearn.figures.style import apply_style, figure, finish, grid, legend_right, suptitle

EXPERIMENTS = ("first_order",)
ROWS = {"quadratic": r"quadratic $\phi(z) = z^2$", "relu": "ReLU"}
COLUMNS = {"chain_monomial": "chain monomial (low rank)", "high_rank_quadratic": r"$\sum_i (Qx)_i^2$ (high rank)"}
COLORS = {"predicted": "tab:orange", "observed": "tab:blue"}
NARROW_STYLES = ("--", ":", "-.")  # every width but the widest; the widest is solid


def render(stores: dict[str, xr.Dataset], out: Path) -> None:
    """2×2 grid (rows activation, columns task), x = data decay α: predicted (orange) and
    observed (blue, mean ± sd over nets) ρ_2nd; dashed k = n = d (proportional), solid widest k."""
    apply_style()
    ds = stores["first_order"]
    cfg = experiment_config(ds)
    widths = sorted(int(w) for w in ds.width.values)
    styles = dict(zip(widths, (*NARROW_STYLES[: len(widths) - 1], "-")))
    acts, tasks = list(ds.activation.values), list(ds.task.values)
    fig = figure(8.5, 2.9 * len(acts), ds)
    axes = grid(fig, len(acts), len(tasks))
    alphas = ds.alpha.values
    for row, act in zip(axes, acts):
        for ax, task in zip(row, tasks):
            for width in widths:
                cell = ds.sel(activation=act, task=task, width=width)
                ax.plot(
                    alphas,
                    cell.rho_predicted.values,
                    color=COLORS["predicted"],
                    linestyle=styles[width],
                    marker=".",
                )
                mean, sd = cell.rho_observed.mean("net"), sample_sd(cell.rho_observed, "net")
                ax.plot(alphas, mean.values, color=COLORS["observed"], linestyle=styles[width], marker=".")
                if sd is not None:
                    ax.fill_between(
                        alphas,
                        (mean - sd).values,
                        (mean + sd).values,
                        color=COLORS["observed"],
                        alpha=0.15,
                        linewidth=0,
                    )
            ax.set_title(f"{ROWS.get(act, act)} · {COLUMNS.get(task, task)}")
            ax.set_xscale("symlog", linthresh=1.0)  # linear up to α = 1, where the dip sits; log beyond
            ax.set_xticks(alphas, [f"{a:g}" for a in alphas])
            ax.minorticks_off()
            ax.set_xlabel(r"data decay $\alpha$  ($\lambda_k = 1/(1 + k^\alpha)$)")
            ax.set_ylabel(RHO_2ND)
    handles = [Line2D([], [], color=c, label=name) for name, c in COLORS.items()]
    handles += [Line2D([], [], color="0.3", linestyle=styles[w], label=f"k = {w}") for w in widths]
    legend_right(axes[0, -1], handles)
    suptitle(fig, f"Fig 7 · layer 0 of 2-hidden-layer MLPs, n = {cfg['n']}, d = {cfg['d']} · prediction: "
                  f"{cfg['mc_inits']} Monte-Carlo nets · observed: {spread_note(ds.sizes['net'], 'net')}")
    finish(fig, out)
