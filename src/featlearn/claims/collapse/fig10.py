"""Claims of Fig 10: the MLP's NFA correlation and train loss at the end of training."""

from __future__ import annotations

from featlearn.claims.collapse.networks import nfa_claims
from featlearn.claims.core import Claim

STORES = ("collapse_mlp",)

CLAIMS: list[Claim] = nfa_claims("10", "collapse_mlp", "mlp", ("mnist", 0.74, 0.13))
