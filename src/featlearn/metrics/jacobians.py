"""Per-layer Jacobians with respect to the pre-activations (alignment spec §1.2).

J_ℓ[α, j, :] = ∂f_j(x_α)/∂h_ℓ(x_α). Samples do not interact in these networks, so one
backward pass of Σ_α f_j(x_α) with respect to a zero shift on every h_ℓ gives all samples and
all layers at once: c backward passes in total, never a loop over samples.
"""

from __future__ import annotations

import torch

from featlearn.models.mlp import MLP


def layer_jacobians(model: MLP, x: torch.Tensor) -> list[torch.Tensor]:
    """J_ℓ for every hidden layer ℓ, each of shape (n, c, k_{ℓ+1})."""
    n = x.shape[0]
    shifts = [
        torch.zeros(n, layer.weight.shape[0], dtype=x.dtype, device=x.device, requires_grad=True)
        for layer in model.hidden
    ]
    out = model(x, shifts)
    c = out.shape[1]
    per_output = [
        torch.autograd.grad(out[:, j].sum(), shifts, retain_graph=j < c - 1) for j in range(c)
    ]
    return [torch.stack([grads[i] for grads in per_output], dim=1) for i in range(len(shifts))]
