"""Claim of Fig 17: on SVHN, SLO raises layer 1's UC-NFC, C-NFC and R_C over standard training."""

from __future__ import annotations

import xarray as xr

from featlearn.claims.alignment.common import COSINE, final_seed_mean
from featlearn.claims.core import Claim
from featlearn.claims.reading import convention, fmt, scalar
from featlearn.claims.terms import Outcome, above

STORES = ("svhn_slo",)


def slo_raises(ds: xr.Dataset) -> Outcome:
    parts, raised, terms = [], [], []
    for var, name in (("uc_nfc", "UC"), ("c_nfc", "C"), ("ratio_c_uc", "R_C")):
        da = final_seed_mean(convention(ds[var], COSINE).sel(layer=1))
        slo, gd = scalar(da.sel(optimizer="slo"), f"SLO {name}"), scalar(da.sel(optimizer="gd"), f"GD {name}")
        raised.append(slo > gd)
        terms.append(above(f"SLO − GD {name}", slo - gd, 0))
        parts.append(f"{name} {fmt(gd)} → {fmt(slo)}")
    return Outcome("; ".join(parts) + " (GD → SLO, layer 1)", tuple(terms), float(sum(raised)))


CLAIMS: list[Claim] = [
    Claim("fig17.slo_raises", "17", "On SVHN, SLO raises layer-1 UC-NFC, C-NFC and R_C over standard training.", "",
          "final seed-mean SLO > GD for all three, layer 1", ("svhn_slo",), slo_raises),
]
