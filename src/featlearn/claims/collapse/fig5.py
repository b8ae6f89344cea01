"""Claims of Fig 5: the cos Deep RFM's Gram reaches the simplex ETF in the last layer, every dataset."""

from __future__ import annotations

from featlearn.claims.collapse.deep_rfm import BETWEEN, ETF, ETF_BETWEEN, ETF_WITHIN, between_reaches_etf, etf_emerges
from featlearn.claims.core import Claim

STORES = ("deep_rfm_cos",)

CLAIMS: list[Claim] = [
    Claim("fig5.etf", "5", "The cos Deep RFM Gram reaches the ETF in the last layer, every dataset.", "1",
          ETF + "; the paper's within-class 1 against the lowest dataset's", ("deep_rfm_cos",), etf_emerges(),
          paper_number=ETF_WITHIN),
    Claim("fig5.etf_between", "5", "Between classes the cos Deep RFM Gram reaches −1/(K−1), every dataset.",
          "−1/9", BETWEEN + "; the paper's −1/9 against the dataset farthest from it", ("deep_rfm_cos",),
          between_reaches_etf(), paper_number=ETF_BETWEEN),
]
