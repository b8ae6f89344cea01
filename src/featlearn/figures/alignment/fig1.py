"""Fig 1: EGOP, NFM, AGOP and the corrupted AGOP WᵀQW after training on the chain monomial."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import xarray as xr

from featlearn.figures.alignment.panels import with_divergence
from featlearn.figures.style import apply_style, finish

EXPERIMENTS = ("chain_fig1",)


def _mean_sd(values: xr.DataArray) -> str:
    v = np.asarray(values, dtype=float).ravel()
    return f"{np.nanmean(v):.2f} ± {np.nanstd(v):.2f}"


def render(stores: dict[str, xr.Dataset], out: Path) -> None:
    """1×4 heatmaps (seed 0), each divided by its largest |entry|; the titles report ρ over all
    seeds (mean ± sd) next to the paper's values."""
    apply_style()
    ds = stores["chain_fig1"]
    last = ds.sel(step=ds.attrs["final_step"], convention="cosine")
    plotted = ds.isel(seed=0)
    panels = [
        ("EGOP (analytic)", plotted.egop, ""),
        ("NFM  F = WᵀW", plotted.nfm, f"ρ(F, Ḡ) = {_mean_sd(last.uc_nfc.sel(layer=1))}  (paper 0.93)"),
        ("AGOP  Ḡ = WᵀKW", plotted.agop,
         f"eig std/mean of K = {_mean_sd(last.k_dispersion.sel(layer=1))}  (paper 5.9)"),
        ("corrupted  WᵀQW", plotted.corrupted_agop, f"ρ(F, WᵀQW) = {_mean_sd(ds.rho_nfm_corrupted)}  (paper 0.53)"),
    ]
    fig, axes = plt.subplots(1, 4, figsize=(11, 3.2), constrained_layout=True)
    for ax, (title, matrix, note) in zip(axes, panels):
        m = np.asarray(matrix)
        m = m / np.abs(m).max()
        ax.imshow(m, cmap="RdBu_r", vmin=-1, vmax=1)
        ax.set_title(title)
        ax.set_xlabel(note, fontsize=7)
        ax.set_xticks([])
        ax.set_yticks([])
    n_seeds = ds.sizes["seed"]
    title = (f"Fig 1 · chain monomial r=5, layer 1 after training (seed 0 shown; ρ over {n_seeds} seeds, "
             f"{ds.sizes['q_draw']} Q draws)")
    fig.suptitle(with_divergence(title, ds) + (" — values at the last finite step" if ds.diverged.any() else ""),
                 fontsize=9)
    finish(fig, out, ds)
