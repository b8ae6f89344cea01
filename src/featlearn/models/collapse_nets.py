"""The collapse paper's networks: an optional conv backbone + a 5-layer bias-free ReLU MLP head.
Their settings and where each comes from: docs/figures/collapse.md, 'Networks'.

    x ─ backbone (none | ResNet-18 | VGG-11 features[:15]) ─ h¹ ─ W₁ ─ ReLU ─ h² ─ … ─ W₅ ─ ReLU ─ h⁶ ─ readout ─ f(x)

h^l is the input of head layer l (post-ReLU); h¹ is the flattened input (MLP) or the backbone output. Every figure
measures the head: NC1 of h^l through the SVD of W_l (Figs 2, 7–9) and ρ(W_lᵀW_l, AGOP_l^{1/2}) (Figs 10–12).

Both backbones are built here from the torchvision layer layout with a channel ``width_divisor``: at divisor 1 they
hold exactly the parameters of ``torchvision.models.resnet18().{conv1..layer4}`` (torchvision's own ``BasicBlock``)
and ``vgg11().features[:15]`` (tests load torchvision's weights into them and compare outputs); divisor 4 is the
quick scale's cheap variant (channels ÷ 4, a documented deviation).
"""

from __future__ import annotations

import math
from collections import OrderedDict

import torch
from torch import nn
from torchvision.models.resnet import BasicBlock

BACKBONES = (None, "resnet18", "vgg11")
# Head layers left at PyTorch's default init [C]: head layer 1 behind a backbone, none in the plain MLP.
DEFAULT_INIT_HEAD_LAYERS: dict[str | None, tuple[int, ...]] = {None: (), "resnet18": (1,), "vgg11": (1,)}
VGG11_FEATURES = (64, "M", 128, "M", 256, 256, "M", 512, 512)  # vgg11 "A" config up to the ReLU before the last 2 pools


def resnet18_backbone(in_channels: int, width_divisor: int = 1) -> nn.Sequential:
    """torchvision ResNet-18 without ``fc``: conv1 → BN → ReLU → maxpool → 4 × 2 BasicBlocks → global avgpool,
    (n, C, H, W) → (n, 512 / width_divisor). conv1 is Conv2d(C, 64, 7, 2, 3, bias=False) so MNIST works [C]."""
    widths = [64 // width_divisor * 2**i for i in range(4)]
    layers: OrderedDict[str, nn.Module] = OrderedDict({
        "conv1": nn.Conv2d(in_channels, widths[0], 7, 2, 3, bias=False),
        "bn1": nn.BatchNorm2d(widths[0]),
        "relu": nn.ReLU(inplace=True),
        "maxpool": nn.MaxPool2d(3, 2, 1),
    })
    inplanes = widths[0]
    for i, planes in enumerate(widths):
        stride = 1 if i == 0 else 2
        downsample = None
        if stride != 1 or inplanes != planes:
            downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))
        blocks = [BasicBlock(inplanes, planes, stride, downsample), BasicBlock(planes, planes)]
        layers[f"layer{i + 1}"] = nn.Sequential(*blocks)
        inplanes = planes
    layers["avgpool"] = nn.AdaptiveAvgPool2d(1)
    layers["flatten"] = nn.Flatten()
    return nn.Sequential(layers)


def vgg11_backbone(in_channels: int, width_divisor: int = 1) -> nn.Sequential:
    """torchvision ``vgg11().features[:15]`` (no BN), first conv Conv2d(C, 64, 3, 1, 1, bias=False) [C], then
    AdaptiveAvgPool2d(4) + Flatten: (n, C, H, W) → (n, 8192 / width_divisor) (MNIST's 3×3 maps are upsampled to 4×4)."""
    layers: list[nn.Module] = []
    channels = in_channels
    for item in VGG11_FEATURES:
        if item == "M":
            layers.append(nn.MaxPool2d(2, 2))
            continue
        out = int(item) // width_divisor
        first = not layers  # the replaced first conv is bias-free [C]; the others keep torchvision's biases
        layers += [nn.Conv2d(channels, out, 3, 1, 1, bias=not first), nn.ReLU(inplace=True)]
        channels = out
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(4), nn.Flatten())


class CollapseNet(nn.Module):
    """Backbone (or flatten) → ``depth`` bias-free Linear+ReLU layers of ``width`` (``head``) → bias-free ``readout``.

    ``backbone``: None (MLP on flattened inputs of size ``d_in``), "resnet18" or "vgg11"; ``in_channels`` is the
    image's channel count (ignored by the MLP).
    """

    def __init__(self, backbone: str | None, in_channels: int, d_in: int | None, classes: int = 10, width: int = 512,
                 depth: int = 5, width_divisor: int = 1) -> None:
        super().__init__()
        if backbone is None:
            if d_in is None:
                raise ValueError("CollapseNet: the MLP (backbone=None) needs d_in, the flattened input size")
            self.backbone: nn.Module = nn.Flatten()
            d_features = d_in
        elif backbone == "resnet18":
            self.backbone = resnet18_backbone(in_channels, width_divisor)
            d_features = 512 // width_divisor
        elif backbone == "vgg11":
            self.backbone = vgg11_backbone(in_channels, width_divisor)
            d_features = 512 // width_divisor * 16
        else:
            raise ValueError(f"CollapseNet: unknown backbone {backbone!r}; allowed: {BACKBONES}")
        self.backbone_name = backbone
        dims = [d_features] + [width] * depth
        self.head = nn.ModuleList(nn.Linear(a, b, bias=False) for a, b in zip(dims[:-1], dims[1:]))
        self.readout = nn.Linear(width, classes, bias=False)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """h¹: the backbone output, or the flattened input for the MLP, (n, d_1)."""
        return self.backbone(x)

    def head_inputs(self, x: torch.Tensor) -> list[torch.Tensor]:
        """[h¹, …, h^{depth+1}]: the input of every head layer and, last, the readout's input, (n, d_l) each."""
        hs = [self.features(x)]
        for layer in self.head:
            hs.append(torch.relu(layer(hs[-1])))
        return hs

    def head_from(self, layer: int, h: torch.Tensor) -> torch.Tensor:
        """f as a function of h^layer (1-based): head layers layer..depth, then the readout, (n, classes).

        With h a leaf that requires grad, its autograd gives J_i = ∂f(x_i)/∂h^layer for the layer's AGOP.
        """
        for fc in self.head[layer - 1:]:
            h = torch.relu(fc(h))
        return self.readout(h)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head_from(1, self.features(x))


def _default_init(weight: torch.Tensor, generator: torch.Generator) -> None:
    """PyTorch's default Linear/Conv2d init, kaiming_uniform(a=√5) = U(−1/√fan_in, 1/√fan_in), from ``generator``."""
    nn.init.kaiming_uniform_(weight, a=math.sqrt(5), generator=generator)


def init_collapse_net(model: CollapseNet, gain: float, generator: torch.Generator,
                      head_default_layers: tuple[int, ...] | None = None) -> CollapseNet:
    """Draw every parameter from ``generator``, in module order (the authors' order):

    * backbone: torchvision's init (convs kaiming_normal fan_out/ReLU, conv biases 0, BN weight 1 and bias 0), except
      the replaced first conv, which keeps nn.Conv2d's default init as in the authors' code [C];
    * head layer l: xavier_uniform_(gain) — the paper's "init scale" — unless l is in ``head_default_layers``
      (default: ``DEFAULT_INIT_HEAD_LAYERS[backbone]``), which get PyTorch's default init;
    * readout: PyTorch's default init.
    """
    if head_default_layers is None:
        head_default_layers = DEFAULT_INIT_HEAD_LAYERS[model.backbone_name]
    with torch.no_grad():
        convs = [m for m in model.backbone.modules() if isinstance(m, nn.Conv2d)]
        for m in model.backbone.modules():
            if isinstance(m, nn.Conv2d):
                if m is convs[0]:
                    _default_init(m.weight, generator)
                else:
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu", generator=generator)
                if m.bias is not None:
                    m.bias.zero_()
            elif isinstance(m, nn.BatchNorm2d):
                m.weight.fill_(1.0)
                m.bias.zero_()
        for layer, fc in enumerate(model.head, start=1):
            if layer in head_default_layers:
                _default_init(fc.weight, generator)
            else:
                nn.init.xavier_uniform_(fc.weight, gain=gain, generator=generator)
        _default_init(model.readout.weight, generator)
    return model


BACKBONES = {"collapse_mlp": None, "resnet18_mlp": "resnet18", "vgg11_mlp": "vgg11"}


def build(m: dict, shape: tuple[int, ...], out: int, generator: torch.Generator) -> CollapseNet:
    """The collapse paper's network for a run's ``model`` block (``models.build_model``)."""
    backbone = BACKBONES[m["arch"]]
    model = CollapseNet(backbone, in_channels=shape[0], d_in=shape[0] if backbone is None else None, classes=out,
                        width=m["width"], depth=m["depth"], width_divisor=m.get("width_divisor", 1))
    # the authors' code: head layer 1 of the ResNet/VGG heads keeps PyTorch's default init
    default = () if backbone is None else (1,)
    return init_collapse_net(model, m["gain"], generator, default)
