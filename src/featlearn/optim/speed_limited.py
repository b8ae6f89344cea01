"""Speed Limited Optimization (alignment paper Sec. 5.2, App. K; docs/figures/alignment.md).

Every weight matrix moves at its own fixed speed: W_ℓ ← W_ℓ − η C_ℓ g_ℓ / (ε + ‖g_ℓ‖_F).
ε = 0 is plain SLO; ε > 0 the relaxed form the experiments use. (v1 prints "+", a typo.) ``relax="product"`` divides
by ε‖g_ℓ‖_F instead, App. K's literal wording for Fig 12, kept so that reading can be run against ours.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

RELAX = ("sum", "product")  # g/(ε + ‖g‖), ours and the experiments' form; g/(ε‖g‖), Fig 12's literal text


class SLO(torch.optim.Optimizer):
    """One parameter group per weight matrix, each with its speed C_ℓ."""

    def __init__(self, weights: Iterable[torch.Tensor], lr: float, speeds: list[float], eps: float = 0.0,
                 relax: str = "sum") -> None:
        weights = list(weights)
        if relax not in RELAX:
            raise ValueError(f"SLO relax must be one of {RELAX} (got {relax!r})")
        if len(weights) != len(speeds):
            raise ValueError(f"SLO needs one speed per weight matrix: {len(speeds)} speeds, {len(weights)} matrices")
        groups = [{"params": [w], "speed": c} for w, c in zip(weights, speeds)]
        super().__init__(groups, {"lr": lr, "eps": eps, "relax": relax})

    def set_speeds(self, speeds: list[float]) -> None:
        """Change every C_ℓ (adaptive SLO reassigns them at every step)."""
        for group, c in zip(self.param_groups, speeds, strict=True):
            group["speed"] = c

    @torch.no_grad()
    def step(self, closure=None):  # noqa: ANN001, ANN201 - torch.optim.Optimizer's signature
        for group in self.param_groups:
            for w in group["params"]:
                if w.grad is not None:
                    g, eps = w.grad, group["eps"]
                    norm = eps * float(g.norm()) if group["relax"] == "product" else eps + float(g.norm())
                    if norm > 0:  # a zero gradient (every unit of a layer dead) has no direction to move along
                        w.add_(g, alpha=-group["lr"] * group["speed"] / norm)


def adaptive_speeds(uc_nfc: list[float], n_matrices: int, s: float, readout: float | None = None) -> list[float]:
    """Adaptive SLO's speeds: the hidden layer with the lowest UC-NFC gets C = s, every other weight matrix gets 1/s
    (App. K). The readout's speed is unstated: 1/s as one of the "other layers" unless ``readout`` gives it (the
    readout outside the rule, which picks among the hidden layers only)."""
    slowest = min(range(len(uc_nfc)), key=lambda i: uc_nfc[i])
    speeds = [s if i == slowest else 1.0 / s for i in range(n_matrices)]
    if readout is not None:
        speeds[len(uc_nfc):] = [readout] * (n_matrices - len(uc_nfc))
    return speeds
