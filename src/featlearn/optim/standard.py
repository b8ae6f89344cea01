"""PyTorch's own optimizers: gradient descent (``gd``: full batch unless ``train.batch_size``), SGD with optional
momentum and weight decay, and Adam at its default betas."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch
    from torch import nn


def make(model: nn.Module, train: dict) -> torch.optim.Optimizer:
    """``torch.optim.SGD`` for gd and sgd, ``torch.optim.Adam`` for adam, over every parameter."""
    import torch

    if train["optimizer"] == "adam":
        return torch.optim.Adam(model.parameters(), lr=train["lr"])
    return torch.optim.SGD(model.parameters(), lr=train["lr"], momentum=train.get("momentum", 0.0),
                           weight_decay=train.get("weight_decay", 0.0))


def state_copies(train: dict) -> int:
    """Copies of the parameters the optimizer keeps as state (a job's memory request): Adam's two moments, else one
    (SGD's momentum buffer; counted for gd too, which a momentum setting turns into heavy-ball)."""
    return 2 if train["optimizer"] == "adam" else 1


def check(exp: dict, where: str, name: str) -> list[str]:
    """No cross-field rules: the schema says all these optimizers need."""
    return []
