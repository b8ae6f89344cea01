"""Claims of Fig 11: how F and Ḡ keep the chain monomial's EGOP structure across the init scale s₀, GD and SLO."""

from __future__ import annotations

import xarray as xr

from featlearn.claims.alignment.common import by_s0, series
from featlearn.claims.core import Claim
from featlearn.claims.reading import fmt, slash
from featlearn.claims.terms import Outcome, above, at_least, at_most

STORES = ("slo_sweep",)


def f_loses_faster(ds: xr.Dataset) -> Outcome:
    s0, f = by_s0(ds, "rho_nfm_egop", "gd", None)
    _, g = by_s0(ds, "rho_agop_egop", "gd", None)
    drop_f, drop_g = float(f[-1] - f[0]), float(g[-1] - g[0])
    return Outcome(f"ρ(F, EGOP) {series(s0, f)}; ρ(Ḡ, EGOP) {slash(g)}",
                   (above("F's drop − Ḡ's drop", drop_f - drop_g, 0), above("ρ(Ḡ) − ρ(F) at s₀ = 1", g[0] - f[0], 0)),
                   drop_f - drop_g)


def small_init_egop(ds: xr.Dataset) -> Outcome:
    _, f = by_s0(ds, "rho_nfm_egop", "gd", None)
    _, g = by_s0(ds, "rho_agop_egop", "gd", None)
    low = float(min(f[-1], g[-1]))
    return Outcome(f"ρ(F, EGOP) {fmt(f[-1])}, ρ(Ḡ, EGOP) {fmt(g[-1])} at the smallest s₀",
                   (at_least("lower of the two", low, 0.8),), low)


def _slo_invariant(ds: xr.Dataset, var: str, name: str) -> Outcome:
    """Under SLO, ρ(``name``, EGOP) ≥ 0.7 at every s₀ and spread over s₀ ≤ 0.1."""
    s0, v = by_s0(ds, var, "slo", None)
    return Outcome(f"ρ({name}, EGOP) {series(s0, v)}", (at_least(f"lowest ρ({name}, EGOP)", v.min(), 0.7),
                                                         at_most("spread over s₀", v.max() - v.min(), 0.1)),
                   float(v.min()))


def slo_invariant(ds: xr.Dataset) -> Outcome:
    return _slo_invariant(ds, "rho_nfm_egop", "F")


def slo_agop_invariant(ds: xr.Dataset) -> Outcome:
    """The AGOP half of "the quality of the features in the AGOP and NFM becomes invariant to the init scale"."""
    return _slo_invariant(ds, "rho_agop_egop", "Ḡ")


CLAIMS: list[Claim] = [
    Claim("fig11.gd_f_loses_faster", "4, 11", "Under GD, as s₀ grows F loses the EGOP structure faster than Ḡ.",
          "", "ρ(F, EGOP) drops more than ρ(Ḡ, EGOP) from the smallest s₀ to s₀ = 1, and is lower at s₀ = 1",
          ("slo_sweep",), f_loses_faster),
    Claim("fig11.small_init_egop", "11", "At small s₀, F ≈ Ḡ ≈ the EGOP pattern.", "",
          "ρ(F, EGOP) and ρ(Ḡ, EGOP) ≥ 0.8 at the smallest s₀ (GD)", ("slo_sweep",), small_init_egop),
    Claim("fig11.slo_invariant", "4, 11", "With SLO the learned features match the EGOP at every s₀, even s₀ = 1.",
          "", "ρ(F, EGOP) ≥ 0.7 at every s₀ and spread ≤ 0.1", ("slo_sweep",), slo_invariant),
    Claim("fig11.slo_agop_invariant", "4, 11", "With SLO the AGOP Ḡ matches the EGOP at every s₀, even s₀ = 1.", "",
          "ρ(Ḡ, EGOP) ≥ 0.7 at every s₀ and spread ≤ 0.1 (as for F)", ("slo_sweep",), slo_agop_invariant),
]
