"""Claims of Fig 7: where the MLP's NC1 falls within a layer (its SVD stages)."""

from __future__ import annotations

from featlearn.claims.collapse.networks import svd_claims
from featlearn.claims.core import Claim

STORES = ("collapse_mlp",)

CLAIMS: list[Claim] = svd_claims("7", "collapse_mlp", "mlp", "2A, 7")
