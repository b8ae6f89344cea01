"""Claim of Fig 13: on the MLP's real data, UC-NFC converges toward C-NFC late in training."""

from __future__ import annotations

import xarray as xr

from featlearn.claims.alignment.real import gap
from featlearn.claims.core import Claim
from featlearn.claims.reading import final, first, values
from featlearn.claims.terms import Outcome, at_least

STORES = ("real_mlp",)


def uc_rises_toward_c(ds: xr.Dataset) -> Outcome:
    """Share of (dataset, layer) curves whose final C − UC gap is below the initial one."""
    g = gap(ds)
    shrinks = values(final(g), "final gap") < values(first(g), "initial gap")
    share = float(shrinks.mean())
    return Outcome(f"gap shrinks in {int(shrinks.sum())} of {shrinks.size} (dataset, layer) curves",
                   (at_least("share of curves", share, 0.5),), share)


CLAIMS: list[Claim] = [
    Claim("fig13.uc_rises_toward_c", "13", "UC-NFC converges toward C-NFC late in training in most settings.", "",
          "final C − UC gap below the initial gap in ≥ 50% of (dataset, layer) curves", ("real_mlp",),
          uc_rises_toward_c),
]
