"""Claim of Fig 14: the MLP's weights move substantially from their init on real data."""

from __future__ import annotations

from featlearn.claims.alignment.real import weights_move
from featlearn.claims.core import Claim
from featlearn.claims.diagnoses import BELOW_PAPER, OPEN, Diagnosis

STORES = ("real_mlp",)

MLP_MOVES_QUICK = Diagnosis(
    OPEN, "the smallest relative movement is {min:.2g} (the largest {max:.2g}) after the quick scale's 10–20 epochs "
    "on ≤ 4,500 images; that longer training closes the gap is likely but not measured", when=BELOW_PAPER)

CLAIMS: list[Claim] = [
    Claim("fig14.mlp_weights_move", "14", "MLP weights move substantially from init in every layer.", "",
          "final ‖W − W₀‖/‖W‖ ≥ 0.1 in every layer and dataset", ("real_mlp",), weights_move, (MLP_MOVES_QUICK,)),
]
