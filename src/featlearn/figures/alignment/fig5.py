"""Fig 5: ratio R_DC of the double-centered to the centered unnormalized NFC vs step, per layer and s₀."""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from featlearn.figures.alignment.panels import experiment_config, layer_row, seeds_note
from featlearn.figures.style import apply_style, figure, finish, grid, suptitle

EXPERIMENTS = ("init_sweep",)


def render(stores: dict[str, xr.Dataset], out: Path) -> None:
    """R_DC = ⟨W̄ᵀW̄, W̄ᵀK̄W̄⟩ / ⟨W̄ᵀW̄, W̄ᵀKW̄⟩ on the isotropic runs of the Fig 8 sweep (the same
    setting); log y, because the claim is that it starts orders of magnitude below 1."""
    apply_style()
    ds = stores["init_sweep"]
    fig = figure(7.5, 2.8, ds)
    axes = grid(fig, 1, ds.sizes["layer"])
    layer_row(axes[0], ds, "isotropic", "ratio_dc_c", "$R_{DC}$", log=True)
    cfg = experiment_config(ds)
    suptitle(fig, f"Fig 5 · double-centered / centered NFC numerators · chain monomial r={cfg['data']['r']}, "
                  f"GD lr {cfg['train']['lr']}; {seeds_note(ds)}")
    finish(fig, out)
