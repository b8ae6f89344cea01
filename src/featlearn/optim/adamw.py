"""nanoGPT's optimizer set-up (alignment Fig 2D, spec §1.12): AdamW with decay on matrices only, and its schedule."""

from __future__ import annotations

import math

import torch
from torch import nn


def configure_adamw(
    model: nn.Module, lr: float, betas: tuple[float, float], weight_decay: float
) -> torch.optim.AdamW:
    """AdamW as nanoGPT: weight decay on ≥2-D parameters (matmul weights, embeddings) only, none on gains/biases."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=lr, betas=betas)


def cosine_lr(it: int, lr: float, min_lr: float, warmup: int, decay_iters: int) -> float:
    """nanoGPT's schedule: linear warmup lr·(it+1)/(warmup+1), cosine decay to ``min_lr`` at ``decay_iters``, then
    constant ``min_lr``."""
    if it < warmup:
        return lr * (it + 1) / (warmup + 1)
    if it > decay_iters:
        return min_lr
    ratio = (it - warmup) / (decay_iters - warmup)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (lr - min_lr)
