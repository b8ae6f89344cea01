"""What several figures' claims of the alignment paper read the same way: the correlation conventions, the end of
training, the first layer across the init scale s₀, one spectrum of the init sweep."""

from __future__ import annotations

import numpy as np
import xarray as xr

from featlearn.claims.diagnoses import AT_PAPER, seeds
from featlearn.claims.reading import NotMeasured, convention, final, seed_mean, slash, values

COSINE, PEARSON = "cosine", "pearson"

# The quick scale runs the synthetic sweeps at the paper's settings with one seed (adaptive SLO and Fig 1 with the
# paper's seeds); the paper scale with three.
PAPER_3_SEEDS = AT_PAPER & seeds(3)


def final_seed_mean(da: xr.DataArray) -> xr.DataArray:
    """Mean over the seeds that ran of each run's value at the end of its training."""
    return seed_mean(final(da))


def early_index(da: xr.DataArray) -> int:
    """The first measurement after step 1 ("early" in training: step 10 of 800 at quick scale)."""
    return min(2, da.sizes["step"] - 1)


def by_s0(ds: xr.Dataset, var: str, optimizer: str, layer: int | None = 1) -> tuple[np.ndarray, np.ndarray]:
    """(s₀ largest first, the final seed-mean value of var for each)."""
    da = convention(ds[var], COSINE).sel(optimizer=optimizer)
    if layer is not None and "layer" in da.dims:
        da = da.sel(layer=layer)
    da = final_seed_mean(da).sortby("init_scale", ascending=False)
    return da.init_scale.values, values(da, f"{var} ({optimizer})")


def series(s0: np.ndarray, v: np.ndarray) -> str:
    """'0.6 / 0.9 / 0.95 at s₀ = 1 / 0.1 / 0.01': a value along the init-scale sweep."""
    return slash(v) + f" at s₀ = {' / '.join(f'{s:g}' for s in s0)}"


def spectrum(ds: xr.Dataset, name: str) -> xr.Dataset:
    """The init sweep on one input spectrum; NotMeasured where this scale's sweep does not run it."""
    if name not in ds.spectrum.values:
        present = ", ".join(map(str, ds.spectrum.values))
        raise NotMeasured(f"spectrum {name} is not in this scale's sweep ({present})")
    return ds.sel(spectrum=name)
