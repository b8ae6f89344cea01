"""Claims of Fig 17: on SVHN, SLO raises layer 1's UC-NFC, C-NFC and R_C over standard training (a), and the
quality of its features, drawn as the diagonals of F and Ḡ (b, c)."""

from __future__ import annotations

import xarray as xr

from featlearn.claims.alignment.common import COSINE, final_seed_mean
from featlearn.claims.core import Claim
from featlearn.claims.reading import convention, fmt, scalar, seed_mean
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


def centre_share(diag: xr.DataArray) -> xr.DataArray:
    """The share of a first-layer diagonal (diag F or diag Ḡ as an image) on the middle half of the columns, where an
    SVHN image's labelled digit is (its neighbours are cut off at the sides): 0.5 for a map that weighs every pixel
    alike, as at init on per-pixel standardised inputs; a digit-shaped map puts more there."""
    cols = diag.sizes["col"]
    middle = diag.isel(col=slice(cols // 4, cols - cols // 4)).sum(("row", "col"))
    return middle / diag.sum(("row", "col"))


def features_centred(ds: xr.Dataset) -> Outcome:
    """Fig 17 (b, c)'s "feature quality" as a number: SLO's diag F and diag Ḡ put a larger share on the digit's
    columns than standard training's (seed means)."""
    parts, terms = [], []
    for var, name in (("nfm_diag", "diag F"), ("agop_diag", "diag Ḡ")):
        share = seed_mean(centre_share(ds[var]))
        slo, gd = scalar(share.sel(optimizer="slo"), f"SLO {name}"), scalar(share.sel(optimizer="gd"), f"GD {name}")
        terms.append(above(f"SLO − GD centre share of {name}", slo - gd, 0))
        parts.append(f"{name} {fmt(gd)} → {fmt(slo)}")
    return Outcome("; ".join(parts) + " (centre share, GD → SLO)", tuple(terms), min(t.value for t in terms))


CLAIMS: list[Claim] = [
    Claim("fig17.slo_raises", "17", "On SVHN, SLO raises layer-1 UC-NFC, C-NFC and R_C over standard training.", "",
          "final seed-mean SLO > GD for all three, layer 1", ("svhn_slo",), slo_raises),
    Claim("fig17.slo_features_centred", "17",
          "On SVHN, SLO improves the feature quality of layer 1's diag F and diag Ḡ.", "",
          "seed-mean share of diag F and of diag Ḡ on the middle half of the columns (the digit's) SLO > GD (ours: the "
          "paper shows the maps)", ("svhn_slo",), features_centred),
]
