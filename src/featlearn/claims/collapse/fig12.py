"""Claims of Fig 12: the VGG-11's NFA correlation and train loss at the end of training."""

from __future__ import annotations

from featlearn.claims.collapse.networks import nfa_claims
from featlearn.claims.core import Claim

STORES = ("collapse_vgg",)

CLAIMS: list[Claim] = nfa_claims("12", "collapse_vgg", "vgg")
