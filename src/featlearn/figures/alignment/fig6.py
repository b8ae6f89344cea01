"""Fig 6: PTK-centered NFC ρ(W₀ᵀW₀, W₀ᵀK̄W₀) vs step, per layer and s₀, for two input spectra."""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from featlearn.figures.alignment.panels import experiment_config, layer_row, seeds_note
from featlearn.figures.style import apply_style, figure, finish, grid, suptitle

EXPERIMENTS = ("init_sweep",)

SPECTRA = {"(a)": "isotropic", "(b)": "1/(1+k^2)"}


def render(stores: dict[str, xr.Dataset], out: Path) -> None:
    """Row (a) isotropic and row (b) λ_k ∝ 1/(1+k²) inputs, from the Figs 8 and 10 runs."""
    apply_style()
    ds = stores["init_sweep"]
    fig = figure(7.5, 5.2, ds)
    axes = grid(fig, len(SPECTRA), ds.sizes["layer"])
    for row, (letter, spectrum) in zip(axes, SPECTRA.items()):
        layer_row(row, ds, spectrum, "ptkc_nfc", "PTK-centered NFC")
        row[0].set_ylabel(letter, fontweight="bold", rotation=0, labelpad=12)
    cfg = experiment_config(ds)
    suptitle(fig, f"Fig 6 · PTK-centered NFC, ρ = cosine · chain monomial r={cfg['data']['r']}, "
                  f"GD lr {cfg['train']['lr']}; {seeds_note(ds)}")
    finish(fig, out)
