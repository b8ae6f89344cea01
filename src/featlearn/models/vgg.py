"""VGG-11 without BatchNorm and with a CIFAR head (docs/figures/alignment.md, Fig 2).

torchvision's config A (eight 3×3 convs, padding 1, with biases, five 2×2 max-pools) with the BatchNorm layers of
``vgg11_bn`` removed, followed by the authors' CIFAR head (``Conv/vgg.py``): global average pool to 1×1, then
512→4096→4096→classes with ReLU and Dropout(0.5). ≈28.1M parameters at 10 classes.

Deviation: ``width_divisor`` divides every conv width and the 4096 hidden sizes (the quick scale uses 8); the paper
uses 1. Inputs must be at least 32×32 (five halvings down to 1×1), as in torchvision.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

CONFIG_A = [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"]
# Index (0-based, among the 8 convs) of every conv whose ReLU output goes through a 2×2 max-pool: the "M"s above.
POOL_AFTER = frozenset({0, 1, 3, 5, 7})
HIDDEN = 4096


class VGG11(nn.Module):
    """f(x) = head(pool(φ(conv_8(⋯ pool(φ(conv_1(x))) ⋯)))) with φ = ReLU, no BatchNorm.

    ``forward`` takes optional ``shifts``, one tensor per conv layer shaped like its output (n, C_out, H, W), added
    to the conv output h_ℓ before ReLU, as ``MLP.forward`` does: differentiating one output with respect to them
    gives ∂f/∂h_ℓ at every image, position and layer in one backward pass.
    """

    def __init__(self, in_channels: int = 3, classes: int = 10, width_divisor: int = 1, dropout: float = 0.5) -> None:
        super().__init__()
        widths = [v // width_divisor for v in CONFIG_A if v != "M"]
        self.conv_layers = nn.ModuleList(
            nn.Conv2d(a, b, kernel_size=3, padding=1) for a, b in zip([in_channels, *widths[:-1]], widths)
        )
        hidden = HIDDEN // width_divisor
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(
            nn.Linear(widths[-1], hidden),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, classes),
        )

    def forward(self, x: torch.Tensor, shifts: list[torch.Tensor] | None = None) -> torch.Tensor:
        """(n, in_channels, H, W) -> (n, classes)."""
        for i, conv in enumerate(self.conv_layers):
            h = conv(x)
            if shifts is not None:
                h = h + shifts[i]
            x = F.relu(h)
            if i in POOL_AFTER:
                x = F.max_pool2d(x, kernel_size=2, stride=2)
        return self.classifier(self.avgpool(x).flatten(1))


def init_vgg(model: VGG11, generator: torch.Generator) -> VGG11:
    """The authors' init (torchvision's VGG init): convs kaiming_normal_(fan_out, relu), linears N(0, 0.01²), every
    bias 0; drawn in module order from ``generator`` so that a seed fixes the network."""
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu", generator=generator)
                nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, 0.0, 0.01, generator=generator)
                nn.init.zeros_(module.bias)
    return model


def build(m: dict, shape: tuple[int, ...], out: int, generator: torch.Generator) -> VGG11:
    """VGG-11 for a run's ``model`` block (``models.build_model``)."""
    model = VGG11(in_channels=shape[0], classes=out, width_divisor=m.get("width_divisor", 1),
                  dropout=m.get("dropout", 0.5))
    return init_vgg(model, generator)
