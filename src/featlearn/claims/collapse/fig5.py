"""Claim of Fig 5: the cos Deep RFM's Gram reaches the simplex ETF in the last layer, every dataset."""

from __future__ import annotations

from featlearn.claims.collapse.deep_rfm import ETF, etf_emerges
from featlearn.claims.core import Claim

STORES = ("deep_rfm_cos",)

CLAIMS: list[Claim] = [
    Claim("fig5.etf", "5", "The cos Deep RFM Gram reaches the ETF in the last layer, every dataset.", "1 / −1/9",
          ETF, ("deep_rfm_cos",), etf_emerges()),
]
