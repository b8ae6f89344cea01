"""nanoGPT's optimizer set-up (alignment Fig 2D, the paper's nanoGPT set-up): AdamW with decay on matrices only."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch
    from torch import nn


def configure_adamw(
    model: nn.Module, lr: float, betas: tuple[float, float], weight_decay: float
) -> torch.optim.AdamW:
    """AdamW as nanoGPT: weight decay on ≥2-D parameters (matmul weights, embeddings) only, none on gains/biases."""
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=lr, betas=betas)


def make(model: nn.Module, train: dict) -> torch.optim.AdamW:
    """``configure_adamw`` with the run's ``train.betas`` (default PyTorch's) and ``train.weight_decay`` (default 0)."""
    return configure_adamw(model, train["lr"], tuple(train.get("betas", (0.9, 0.999))), train.get("weight_decay", 0.0))


def state_copies(train: dict) -> int:
    """Copies of the parameters AdamW keeps as state (a job's memory request): its two moments."""
    return 2


def check(exp: dict, where: str, name: str) -> list[str]:
    """The training kind's train block has no betas or weight_decay to set AdamW with."""
    if exp["kind"] == "training":
        return [f"{where}: optimizer adamw is not offered in kind training (its train block has no betas or "
                "weight_decay); use adam there, or kind network"]
    return []
