"""Fully connected networks: bias-free in the alignment paper (docs/figures/alignment.md), with optional biases and
He-normal weights in the tangent paper (docs/figures/tangent.md)."""

from __future__ import annotations

import math

import torch
from torch import nn

ACTIVATIONS = {"relu": torch.relu, "quadratic": torch.square}
INIT_CONVENTIONS = ("torch_std", "v1_variance", "he_normal")


class MLP(nn.Module):
    """f(x) = W_L φ(W_{L-1} ⋯ φ(W_0 x)), no biases unless ``bias`` (then every layer, readout included, adds one).

    ``forward`` takes optional ``shifts``, one zero tensor per hidden layer added to the
    pre-activation h_ℓ before φ: differentiating with respect to them gives ∂f/∂h_ℓ for every
    sample and every layer in one backward pass (the Jacobians).
    """

    def __init__(self, d: int, widths: list[int], out: int = 1, activation: str = "relu", bias: bool = False) -> None:
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; allowed: {sorted(ACTIVATIONS)}")
        dims = [d, *widths, out]
        self.layers = nn.ModuleList(nn.Linear(a, b, bias=bias) for a, b in zip(dims[:-1], dims[1:]))
        self.activation = activation
        self.phi = ACTIVATIONS[activation]

    @property
    def hidden(self) -> list[nn.Linear]:
        """The hidden weight matrices W^(0) … W^(L-1): the layers every figure measures."""
        return list(self.layers[:-1])

    def forward(self, x: torch.Tensor, shifts: list[torch.Tensor] | None = None) -> torch.Tensor:
        *hidden, readout = self.layers
        for i, layer in enumerate(hidden):
            h = layer(x)
            if shifts is not None:
                h = h + shifts[i]
            x = self.phi(h)
        return readout(x)

    def layer_inputs(self, x: torch.Tensor) -> list[torch.Tensor]:
        """x_0 … x_{L-1}: the input of every hidden layer, shape (n, k_ℓ) each."""
        inputs = []
        for layer in self.hidden:
            inputs.append(x)
            x = self.phi(layer(x))
        return inputs


def init_mlp(
    model: MLP,
    scales: list[float],
    generator: torch.Generator,
    convention: str = "torch_std",
    readout_scale: float = 1.0,
) -> MLP:
    """Draw every weight matrix (and bias), layer by layer; ``scales`` has one entry per hidden layer.

    ``torch_std``: W = s · U(−1/√fan_in, 1/√fan_in), i.e. s times nn.Linear's default, so s
    multiplies the standard deviation. ``v1_variance``: W ~ N(0, s/fan_in) as in the paper's
    first version, so s multiplies the variance. ``he_normal``: W ~ N(0, 2s/fan_in), He et al.'s
    init for ReLU (the tangent paper's networks, [C]). The readout is drawn at s = 1 and then
    multiplied by ``readout_scale``. A layer's bias, drawn right after its weight, is nn.Linear's
    default U(−1/√fan_in, 1/√fan_in) under every convention.
    """
    if len(scales) != len(model.hidden):
        raise ValueError(f"{len(scales)} init scales for {len(model.hidden)} hidden layers")
    with torch.no_grad():
        for layer, s in zip(model.layers, [*scales, 1.0]):
            fan_in = layer.weight.shape[1]
            if convention == "torch_std":
                bound = 1.0 / math.sqrt(fan_in)
                w = torch.empty_like(layer.weight).uniform_(-bound, bound, generator=generator) * s
            elif convention == "v1_variance":
                w = torch.randn(layer.weight.shape, generator=generator) * math.sqrt(s / fan_in)
            elif convention == "he_normal":
                w = torch.randn(layer.weight.shape, generator=generator) * math.sqrt(2 * s / fan_in)
            else:
                raise ValueError(f"unknown init convention {convention!r}; allowed: {INIT_CONVENTIONS}")
            layer.weight.copy_(w)
            if layer.bias is not None:
                bound = 1.0 / math.sqrt(fan_in)
                layer.bias.copy_(torch.empty_like(layer.bias).uniform_(-bound, bound, generator=generator))
        model.layers[-1].weight.mul_(readout_scale)
    return model


def build(m: dict, shape: tuple[int, ...], out: int, generator: torch.Generator) -> MLP:
    """The MLP of a run's ``model`` block (``models.build_model``); bias-free unless ``model.bias``."""
    model = MLP(shape[0], m["widths"], out=out, activation=m["activation"], bias=m.get("bias", False))
    return init_mlp(model, m["init_scales"], generator, m["init_convention"], m["readout_scale"])
