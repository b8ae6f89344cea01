"""Claim of Fig 6: the ReLU Deep RFM's Gram reaches the simplex ETF in the last layer, every dataset."""

from __future__ import annotations

from featlearn.claims.collapse.deep_rfm import ETF, etf_emerges
from featlearn.claims.core import Claim

STORES = ("deep_rfm_relu",)

CLAIMS: list[Claim] = [
    Claim("fig6.etf", "6", "The ReLU Deep RFM Gram reaches the ETF in the last layer, every dataset.", "1 / −1/9",
          ETF, ("deep_rfm_relu",), etf_emerges()),
]
