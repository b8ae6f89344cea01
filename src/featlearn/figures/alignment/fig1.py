"""Fig 1: EGOP, NFM, AGOP and the corrupted AGOP WᵀQW after training on the chain monomial."""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from featlearn.figures.alignment.panels import heatmap, with_divergence
from featlearn.figures.spread import mean_sd, spread_note
from featlearn.figures.style import apply_style, figure, finish, grid, suptitle

EXPERIMENTS = ("chain_fig1",)


def render(stores: dict[str, xr.Dataset], out: Path) -> None:
    """1×4 heatmaps (seed 0), each divided by its largest |entry|; the titles report ρ over all
    seeds (mean ± sd) next to the paper's values."""
    apply_style()
    ds = stores["chain_fig1"]
    last = ds.sel(step=ds.attrs["final_step"], convention="cosine")
    plotted = ds.isel(seed=0)
    panels = [
        ("EGOP (analytic)", plotted.egop, ""),
        ("NFM  $F = W^\\top W$", plotted.nfm,
         f"$\\rho(F, \\bar G)$ = {mean_sd(last.uc_nfc.sel(layer=1))}\n(paper 0.93)"),
        ("AGOP  $\\bar G = W^\\top K W$", plotted.agop,
         f"eig std/mean of $K$ = {mean_sd(last.k_dispersion.sel(layer=1))}\n(paper 5.9)"),
        ("corrupted  $W^\\top Q W$", plotted.corrupted_agop,
         f"$\\rho(F, W^\\top Q W)$ = {mean_sd(ds.rho_nfm_corrupted)}\n(paper 0.53)"),
    ]
    fig = figure(11, 3.4, ds)
    for ax, (title, matrix, note) in zip(grid(fig, 1, 4)[0], panels):
        heatmap(ax, matrix, title, note)
    title = (f"Fig 1 · chain monomial r=5, layer 1 after training (seed 0 shown; ρ: {spread_note(ds.sizes['seed'])}, "
             f"{ds.sizes['q_draw']} Q draws)")
    suptitle(fig, with_divergence(title, ds) + (" — values at the last finite step" if ds.diverged.any() else ""))
    finish(fig, out)
