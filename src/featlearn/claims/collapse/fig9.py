"""Claims of Fig 9: where the VGG-11's NC1 falls within a layer (its SVD stages)."""

from __future__ import annotations

from featlearn.claims.collapse.networks import svd_claims
from featlearn.claims.core import Claim

STORES = ("collapse_vgg",)

CLAIMS: list[Claim] = svd_claims("9", "collapse_vgg", "vgg", "9")
