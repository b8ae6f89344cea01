"""Claims of Fig 3: collapse through depth in the ReLU Deep RFM."""

from __future__ import annotations

from featlearn.claims.collapse.deep_rfm import claims
from featlearn.claims.core import Claim

STORES = ("deep_rfm_relu",)

CLAIMS: list[Claim] = claims("3", "deep_rfm_relu", "ReLU")
