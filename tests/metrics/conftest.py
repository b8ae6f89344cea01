"""Fixtures of the measurement tests."""

import copy

import pytest
import torch


@pytest.fixture(scope="session")
def moved():
    """A function: a copy of a model with every parameter moved by scale·N(0, 1), a 'trained' network against its
    init."""

    def move(model, seed, scale):
        trained = copy.deepcopy(model)
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for p in trained.parameters():
                p.add_(scale * torch.randn(p.shape, generator=g, dtype=p.dtype))
        return trained

    return move
