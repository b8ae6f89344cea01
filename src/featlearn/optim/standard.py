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


def check(exp: dict, where: str, name: str) -> list[str]:
    """No cross-field rules: the schema says all these optimizers need."""
    return []
