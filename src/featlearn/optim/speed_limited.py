"""Speed Limited Optimization (alignment paper Sec. 5.2, App. K; docs/figures/alignment.md).

Every weight matrix moves at its own fixed speed: W_ℓ ← W_ℓ − η C_ℓ g_ℓ / (ε + ‖g_ℓ‖_F).
ε = 0 is plain SLO; ε > 0 the relaxed form the experiments use. (v1 prints "+", a typo.)
"""

from __future__ import annotations

from collections.abc import Iterable

import torch


class SLO(torch.optim.Optimizer):
    """One parameter group per weight matrix, each with its speed C_ℓ."""

    def __init__(self, weights: Iterable[torch.Tensor], lr: float, speeds: list[float], eps: float = 0.0) -> None:
        weights = list(weights)
        if len(weights) != len(speeds):
            raise ValueError(f"SLO needs one speed per weight matrix: {len(speeds)} speeds, {len(weights)} matrices")
        groups = [{"params": [w], "speed": c} for w, c in zip(weights, speeds)]
        super().__init__(groups, {"lr": lr, "eps": eps})

    def set_speeds(self, speeds: list[float]) -> None:
        """Change every C_ℓ (adaptive SLO reassigns them at every step)."""
        for group, c in zip(self.param_groups, speeds, strict=True):
            group["speed"] = c

    @torch.no_grad()
    def step(self, closure=None):  # noqa: ANN001, ANN201 - torch.optim.Optimizer's signature
        for group in self.param_groups:
            for w in group["params"]:
                if w.grad is not None:
                    g = w.grad
                    w.add_(g, alpha=-group["lr"] * group["speed"] / (group["eps"] + float(g.norm())))


def adaptive_speeds(uc_nfc: list[float], n_matrices: int, s: float) -> list[float]:
    """Adaptive SLO's speeds: the hidden layer with the lowest UC-NFC gets C = s, every other
    weight matrix, the readout included, gets 1/s (App. K; the readout's speed is unstated)."""
    slowest = min(range(len(uc_nfc)), key=lambda i: uc_nfc[i])
    return [s if i == slowest else 1.0 / s for i in range(n_matrices)]
