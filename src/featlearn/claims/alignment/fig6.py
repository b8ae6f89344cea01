"""Claim of Fig 6: the PTK-centered NFC decreases during training (init sweep, isotropic and 1/(1+k²) spectra)."""

from __future__ import annotations

import xarray as xr

from featlearn.claims.alignment.common import COSINE
from featlearn.claims.core import Claim
from featlearn.claims.reading import NotMeasured, convention, final, fmt, seed_mean, values
from featlearn.claims.terms import Outcome, at_least

STORES = ("init_sweep",)


def ptkc_decreases(ds: xr.Dataset) -> Outcome:
    spectra = [s for s in ("isotropic", "1/(1+k^2)") if s in ds.spectrum.values]
    if not spectra:
        raise NotMeasured("init_sweep has neither spectrum of Fig 6")
    p = seed_mean(convention(ds.ptkc_nfc, COSINE).sel(spectrum=spectra))
    start = values(p.isel(step=min(1, p.sizes["step"] - 1)), "PTK-centered NFC at step 1")
    end = values(final(p), "PTK-centered NFC final")
    share = float((end < start).mean())
    return Outcome(f"falls in {int((end < start).sum())} of {end.size} curves "
                   f"({fmt(start.mean())} → {fmt(end.mean())} on average)", (at_least("share of curves", share, 0.75),),
                   share)


CLAIMS: list[Claim] = [
    Claim("fig6.ptkc_decreases", "6", "The PTK-centered NFC decreases during training.", "",
          "final < step-1 value in ≥ 75% of (spectrum, s₀, layer) curves", ("init_sweep",), ptkc_decreases),
]
