"""Claims of Fig 1: Deep RFM Grams move from unstructured to the simplex ETF, on two stores (CIFAR-10 with cos
features, MNIST with ReLU)."""

from __future__ import annotations

import xarray as xr

from featlearn.claims.collapse.deep_rfm import BETWEEN, ETF, ETF_BETWEEN, ETF_WITHIN, between_reaches_etf, etf_emerges
from featlearn.claims.core import Claim
from featlearn.claims.terms import Outcome, named

STORES = ("deep_rfm_cos", "deep_rfm_relu")


def etf(cos: xr.Dataset, relu: xr.Dataset) -> Outcome:
    """Fig 1's two rows come from two stores: (A) CIFAR-10 with cos features, (B) MNIST with ReLU."""
    a, b = etf_emerges(("cifar10",))(cos), etf_emerges(("mnist",))(relu)
    return Outcome(f"cos {a.measured}; ReLU {b.measured}", named("cos", a.terms) + named("ReLU", b.terms),
                   float(a.passed and b.passed), compared=min(a.compared, b.compared))


def between(cos: xr.Dataset, relu: xr.Dataset) -> Outcome:
    """The between-class cosines of Fig 1's two rows; the paper's −1/9 held to the row farther from it."""
    a, b = between_reaches_etf(("cifar10",))(cos), between_reaches_etf(("mnist",))(relu)
    farthest = max((a, b), key=lambda o: abs(o.compared - ETF_BETWEEN.value))
    return Outcome(f"cos {a.measured}; ReLU {b.measured}", named("cos", a.terms) + named("ReLU", b.terms),
                   farthest.value, compared=farthest.compared)


CLAIMS: list[Claim] = [
    Claim("fig1.etf", "1", "Deep RFM Grams move from unstructured to the simplex ETF (CIFAR-10 cos, MNIST ReLU).",
          "1", ETF + "; the paper's within-class 1 against the lower row's", ("deep_rfm_cos", "deep_rfm_relu"),
          etf, paper_number=ETF_WITHIN),
    Claim("fig1.etf_between", "1", "Between classes the Deep RFM Gram reaches −1/(K−1) (CIFAR-10 cos, MNIST ReLU).",
          "−1/9", BETWEEN + "; the paper's −1/9 against the row farther from it", ("deep_rfm_cos", "deep_rfm_relu"),
          between, paper_number=ETF_BETWEEN),
]
