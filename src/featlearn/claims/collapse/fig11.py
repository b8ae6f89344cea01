"""Claims of Fig 11: the ResNet-18's NFA correlation and train loss at the end of training."""

from __future__ import annotations

from featlearn.claims.collapse.networks import nfa_claims
from featlearn.claims.core import Claim

STORES = ("collapse_resnet",)

CLAIMS: list[Claim] = nfa_claims("11", "collapse_resnet", "resnet", ("cifar10", 0.74, 0.17))
