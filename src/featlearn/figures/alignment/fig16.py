"""Fig 16: CelebA eyeglasses: diag F⁽⁰⁾, diag Ḡ⁽⁰⁾ and the corrupted diag W⁽⁰⁾ᵀQW⁽⁰⁾ as images."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from featlearn.figures.alignment.panels import with_divergence
from featlearn.figures.alignment.real_panels import diag_image, divergence, present_seeds
from featlearn.figures.spread import mean_sd, spread_note
from featlearn.figures.style import apply_style, figure, finish, suptitle

EXPERIMENTS = ("celeba_glasses",)


def rho_note(values: xr.DataArray) -> str:
    """'0.91' for one value, '0.91 ± 0.02 (n = 10)' for several (NaNs of missing runs ignored), '–' for none."""
    n = int(np.isfinite(values).sum())
    return mean_sd(values) + (f" (n = {n})" if n > 1 else "")


def draw(stores: dict[str, xr.Dataset]) -> Figure:
    """Three images of the first seed present (Q draw 0), each ÷ its max; the Pearson correlations
    of the diagonals over all seeds (and Q draws) beside the paper's 0.91 and 0.04."""
    apply_style()
    ds = present_seeds(stores["celeba_glasses"], "train_loss")
    shown = ds.isel(seed=0)
    rho_g = f"ρ̄(diag F, diag Ḡ) = {rho_note(ds.rho_diag_agop)}  (paper 0.91)"
    rho_q = f"ρ̄(diag F, diag WᵀQW) = {rho_note(ds.rho_diag_corrupted)}  (paper 0.04)"
    fig = figure(9, 3.6, [ds])
    axes = fig.subplots(1, 3)
    diag_image(axes[0], shown.nfm_diag, "diag F⁽⁰⁾ = diag W⁽⁰⁾ᵀW⁽⁰⁾ (NFM)")
    diag_image(axes[1], shown.agop_diag, "diag Ḡ⁽⁰⁾ = diag W⁽⁰⁾ᵀKW⁽⁰⁾ (AGOP)", rho_g)
    diag_image(axes[2], shown.corrupted_diag, "diag W⁽⁰⁾ᵀQW⁽⁰⁾ (Q: K's spectrum, random eigvecs)", rho_q)
    side = f"{ds.sizes['row']}×{ds.sizes['col']}"
    title = (f"Fig 16 · CelebA eyeglasses, 2-hidden-layer MLP, first layer after training; {side} pixels, "
             f"channel-averaged, seed {shown.seed.item()} shown (Q draw 0), each ÷ its max; ρ̄: "
             f"{spread_note(ds.sizes['seed'])}, {ds.sizes['q_draw']} Q draws")
    suptitle(fig, with_divergence(title, divergence(ds, "train_loss"), "\n"))
    return fig


def render(stores: dict[str, xr.Dataset], out: Path) -> None:
    """Draw Fig 16 and save it with the shared footer."""
    finish(draw(stores), out)
