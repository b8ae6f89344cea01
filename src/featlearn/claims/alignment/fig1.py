"""Claims of Fig 1: the chain monomial's first-layer NFM F against the AGOP Ḡ, the corrupted AGOP WᵀQW and the
EGOP, and the spread of K⁽⁰⁾'s eigenvalues."""

from __future__ import annotations

import xarray as xr

from featlearn.claims.alignment.common import COSINE
from featlearn.claims.core import Claim
from featlearn.claims.reading import convention, final, fmt, mean_sd, values
from featlearn.claims.terms import Outcome, at_least, at_most
from featlearn.claims.tiers import PaperNumber

STORES = ("chain_fig1",)


def _final(ds: xr.Dataset, var: str) -> xr.DataArray:
    return final(convention(ds[var], COSINE).sel(layer=1))


def rho_nfm_agop(ds: xr.Dataset) -> Outcome:
    v = values(_final(ds, "uc_nfc"), "ρ(F, Ḡ)")
    return Outcome(mean_sd(v), (at_most("|mean ρ(F, Ḡ) − 0.93|", abs(v.mean() - 0.93), 0.1),), float(v.mean()),
                   compared=float(v.mean()))


def corrupted_lower(ds: xr.Dataset) -> Outcome:
    rho = values(_final(ds, "uc_nfc"), "ρ(F, Ḡ)").mean()
    corrupted = values(ds.rho_nfm_corrupted, "ρ(F, WᵀQW)")
    return Outcome(f"{mean_sd(corrupted)} (vs ρ(F, Ḡ) {fmt(rho)})",
                   (at_least("ρ(F, Ḡ) − mean ρ(F, WᵀQW)", rho - corrupted.mean(), 0.1),), float(corrupted.mean()),
                   compared=float(corrupted.mean()))


def k_dispersion(ds: xr.Dataset) -> Outcome:
    v = values(final(ds.k_dispersion.sel(layer=1)), "eig std/mean of K⁽⁰⁾")
    return Outcome(mean_sd(v), (at_most("|mean / 5.9 − 1|", abs(v.mean() / 5.9 - 1), 0.3),), float(v.mean()),
                   compared=float(v.mean()))


def egop_structure(ds: xr.Dataset) -> Outcome:
    f = values(final(ds.rho_nfm_egop), "ρ(F, EGOP)")
    g = values(final(ds.rho_agop_egop), "ρ(Ḡ, EGOP)")
    return Outcome(f"ρ(F, EGOP) {mean_sd(f)}, ρ(Ḡ, EGOP) {mean_sd(g)}",
                   (at_least("lower of mean ρ(F, EGOP), ρ(Ḡ, EGOP)", min(f.mean(), g.mean()), 0.8),),
                   float(min(f.mean(), g.mean())))


CLAIMS: list[Claim] = [
    Claim("fig1.rho_nfm_agop", "1", "The trained first-layer NFM F and AGOP Ḡ are highly correlated.", "0.93",
          "|ρ(F, Ḡ) − 0.93| ≤ 0.1 (mean over seeds, cosine)", ("chain_fig1",), rho_nfm_agop,
          paper_number=PaperNumber(0.93)),
    Claim("fig1.corrupted_lower", "1", "Replacing K's eigenvectors by random ones (WᵀQW) destroys the alignment.",
          "0.53", "mean ρ(F, WᵀQW) at least 0.1 below ρ(F, Ḡ)", ("chain_fig1",), corrupted_lower,
          paper_number=PaperNumber(0.53)),
    Claim("fig1.k_dispersion", "1", "K⁽⁰⁾ is far from the identity: its eigenvalues are widely spread.", "5.9",
          "eig std/mean within ±30% of 5.9", ("chain_fig1",), k_dispersion, paper_number=PaperNumber(5.9)),
    Claim("fig1.egop_structure", "1", "F and Ḡ both show the chain monomial's 5×5 cyclic EGOP block.", "",
          "ρ(F, EGOP) and ρ(Ḡ, EGOP) ≥ 0.8", ("chain_fig1",), egop_structure),
]
