"""Claims of Fig 15: VGG-11's and the GPT's weights move substantially from their init."""

from __future__ import annotations

from featlearn.claims.alignment.real import weights_move
from featlearn.claims.core import Claim

STORES = ("vgg_cifar", "gpt_shakespeare")

CLAIMS: list[Claim] = [
    Claim("fig15.vgg_weights_move", "15A", "VGG weights move substantially from init in every conv layer.", "",
          "final ‖W − W₀‖/‖W‖ ≥ 0.1 in every layer", ("vgg_cifar",), weights_move),
    Claim("fig15.gpt_weights_move", "15B", "GPT Q, K, V weights move substantially from init in every block.", "",
          "final ‖W − W₀‖/‖W‖ ≥ 0.1 in every block and projection", ("gpt_shakespeare",), weights_move),
]
