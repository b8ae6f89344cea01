"""Claim of Fig 1: Deep RFM Grams move from unstructured to the simplex ETF, on two stores (CIFAR-10 with cos
features, MNIST with ReLU)."""

from __future__ import annotations

import xarray as xr

from featlearn.claims.collapse.deep_rfm import ETF, etf_emerges
from featlearn.claims.core import Claim
from featlearn.claims.terms import Outcome, named

STORES = ("deep_rfm_cos", "deep_rfm_relu")


def etf(cos: xr.Dataset, relu: xr.Dataset) -> Outcome:
    """Fig 1's two rows come from two stores: (A) CIFAR-10 with cos features, (B) MNIST with ReLU."""
    a, b = etf_emerges(("cifar10",))(cos), etf_emerges(("mnist",))(relu)
    return Outcome(f"cos {a.measured}; ReLU {b.measured}", named("cos", a.terms) + named("ReLU", b.terms),
                   float(a.passed and b.passed))


CLAIMS: list[Claim] = [
    Claim("fig1.etf", "1", "Deep RFM Grams move from unstructured to the simplex ETF (CIFAR-10 cos, MNIST ReLU).",
          "1 / −1/9", ETF, ("deep_rfm_cos", "deep_rfm_relu"), etf),
]
