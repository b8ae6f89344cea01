"""The one way Jacobians are taken: ∂f_j/∂z at every sample, for every output j, from backward passes of sums over
samples.

Samples do not interact in these networks (no BatchNorm; attention mixes positions of one sequence only), so the
gradient of Σ_α f_j(x_α) with respect to an intermediate z (a zero shift added to a pre-activation, or a layer's own
output) holds ∂f_j(x_α)/∂z(x_α) at every sample α at once: c backward passes in all, never a loop over samples.
Every measurement takes its Jacobians this way:

* ``layer_jacobians`` (through ``output_gradients``, one pass per output): J_ℓ[α, j, :] = ∂f_j(x_α)/∂h_ℓ(x_α) of an
  MLP's hidden pre-activations (alignment paper);
* ``metrics.k_sum.covariances``, the one K sum of the library API and of the MLP, conv and attention families
  (``mlp_nfa``, ``conv_nfa`` for Fig 2C, ``attention_nfa`` for Fig 2D's exact form): ∂f_j/∂(each layer's output),
  the passes batched over outputs (``is_grads_batched``), and in the library's sum started from the readout's input
  where f is a Linear readout's (``readout``);
* ``metrics.tangent``: δ = ∂f/∂(each nn.Linear output), the factor of the tangent features (docs/figures/tangent.md);
* ``metrics.collapse_measure.preactivation_jacobians`` (the collapse head's J_ℓ) keeps its own loop for now: that
  module is being retuned elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch
from torch import nn


def output_gradients(
    out: torch.Tensor, wrt: Sequence[torch.Tensor], allow_unused: bool = False
) -> Iterator[tuple[torch.Tensor, ...]]:
    """For each output j of ``out`` (n, c) in turn: the gradients of Σ_α out[α, j] with respect to every tensor of
    ``wrt`` (each shaped like the intermediate it shifts, samples first). The graph is kept until the last output.
    ``allow_unused``: zeros for a tensor the outputs do not depend on (a layer of any nn.Module)."""
    c = out.shape[1]
    for j in range(c):
        yield torch.autograd.grad(out[:, j].sum(), wrt, retain_graph=j < c - 1, allow_unused=allow_unused,
                                  materialize_grads=allow_unused)


def zero_shifts(shapes: Sequence[Sequence[int]], dtype: torch.dtype, device: torch.device) -> list[torch.Tensor]:
    """One zero tensor per shape, to add to intermediates and differentiate against."""
    return [torch.zeros(tuple(s), dtype=dtype, device=device, requires_grad=True) for s in shapes]


def layer_jacobians(model: nn.Module, x: torch.Tensor) -> list[torch.Tensor]:
    """J_ℓ for every hidden layer ℓ of an MLP (``models.mlp``: ``hidden`` layers, ``forward(x, shifts)``), each of
    shape (n, c, k_{ℓ+1})."""
    shifts = zero_shifts([(x.shape[0], layer.weight.shape[0]) for layer in model.hidden], x.dtype, x.device)
    per_output = list(output_gradients(model(x, shifts), shifts))
    return [torch.stack([grads[i] for grads in per_output], dim=1) for i in range(len(shifts))]
