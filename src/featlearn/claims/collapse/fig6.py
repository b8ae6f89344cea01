"""Claims of Fig 6: the ReLU Deep RFM's Gram reaches the simplex ETF in the last layer, every dataset."""

from __future__ import annotations

from featlearn.claims.collapse.deep_rfm import BETWEEN, ETF, ETF_BETWEEN, ETF_WITHIN, between_reaches_etf, etf_emerges
from featlearn.claims.core import Claim

STORES = ("deep_rfm_relu",)

CLAIMS: list[Claim] = [
    Claim("fig6.etf", "6", "The ReLU Deep RFM Gram reaches the ETF in the last layer, every dataset.", "1",
          ETF + "; the paper's within-class 1 against the lowest dataset's", ("deep_rfm_relu",), etf_emerges(),
          paper_number=ETF_WITHIN),
    Claim("fig6.etf_between", "6", "Between classes the ReLU Deep RFM Gram reaches −1/(K−1), every dataset.",
          "−1/9", BETWEEN + "; the paper's −1/9 against the dataset farthest from it", ("deep_rfm_relu",),
          between_reaches_etf(), paper_number=ETF_BETWEEN),
]
