"""Fig 10: UC/C-NFC and train/test loss vs step across the first-layer init s₀, inputs with λ_k ∝ 1/(1+k²)."""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from featlearn.figures.alignment.panels import spectrum_figure

EXPERIMENTS = ("init_sweep",)


def render(stores: dict[str, xr.Dataset], out: Path) -> None:
    """The shared Figs 8–10 grid for spectrum 1/(1+k^2)."""
    spectrum_figure(stores, out, "1/(1+k^2)", 10)
