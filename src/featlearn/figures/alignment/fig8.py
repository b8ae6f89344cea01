"""Fig 8: UC/C-NFC and train/test loss vs step across the first-layer init s₀, isotropic Gaussian inputs."""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from featlearn.figures.alignment.panels import spectrum_figure

EXPERIMENTS = ("init_sweep",)


def render(stores: dict[str, xr.Dataset], out: Path) -> None:
    """The shared Figs 8–10 grid for spectrum isotropic."""
    spectrum_figure(stores, out, "isotropic", 8)
