"""Spreads over seeds, drawn and written alike: every band (``sample_sd``) and every '± sd' in text (``mean_sd``) is
the sample sd (ddof = 1), and ``spread_note`` says what a mean curve is drawn over in each figure's title.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from numpy.typing import ArrayLike


def spread_note(n: int, unit: str = "seed") -> str:
    """What a mean curve is drawn over, said once in each figure's title: '1 seed' (no band) or 'mean ± sample sd
    over 3 seeds' (band)."""
    return f"mean ± sample sd over {n} {unit}s" if n > 1 else f"{n} {unit}{'' if n == 1 else 's'}"


def sample_sd(values: xr.DataArray, dim: str, skipna: bool | None = None) -> xr.DataArray | None:
    """Half-width of a mean ± sd band over ``dim``: the sample sd (ddof = 1), the sd readers of ML papers expect (the
    population sd is √((n − 1)/n) of it, 29% narrower for 2 seeds). None for a single value along ``dim``, whose
    sample sd is undefined: draw no band rather than a 0-wide one (where NaNs leave one value, the band is NaN:
    not drawn)."""
    return values.std(dim, ddof=1, skipna=skipna) if values.sizes[dim] > 1 else None


def mean_sd(values: ArrayLike) -> str:
    """'0.74 ± 0.13': the mean and sample sd (ddof = 1, as the bands) of the finite values, for a panel's text;
    '0.74' for one value (its sample sd is undefined), '–' for none."""
    v = np.asarray(values, dtype=float).ravel()
    v = v[np.isfinite(v)]
    if v.size == 0:
        return "–"
    return f"{v.mean():.2f}" + (f" ± {v.std(ddof=1):.2f}" if v.size > 1 else "")
