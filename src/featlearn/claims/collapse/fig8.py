"""Claims of Fig 8: where the ResNet-18's NC1 falls within a layer (its SVD stages)."""

from __future__ import annotations

from featlearn.claims.collapse.networks import svd_claims
from featlearn.claims.core import Claim

STORES = ("collapse_resnet",)

CLAIMS: list[Claim] = svd_claims("8", "collapse_resnet", "resnet", "2B, 8")
