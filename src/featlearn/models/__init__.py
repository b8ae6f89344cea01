"""Small explicit networks: read them top to bottom. ``build_model`` draws a run's network at init.

Input and output sizes come from the run's dataset file (its tensors' shapes, or the corpus
vocabulary), so the config names only what the paper chooses: architecture, widths, init.
The VGG, GPT and collapse modules import torchvision or attention code only when a run needs it.
"""

from __future__ import annotations

import torch
from torch import nn

from featlearn.models.mlp import MLP, init_mlp

ARCHS = ("mlp", "vgg11", "gpt", "collapse_mlp", "resnet18_mlp", "vgg11_mlp")


def _shapes(data: dict) -> tuple[tuple[int, ...], int]:
    """(one input's shape, outputs) of a synthetic or image dataset file."""
    x = data["x"] if "x" in data else data["x_train"]
    y = data["y"] if "y" in data else data["y_train"]
    return tuple(x.shape[1:]), 1 if y.dim() == 1 else y.shape[1]


def build_model(spec: dict, data: dict) -> nn.Module:
    """The run's network at initialization, drawn from a generator seeded with the run's seed."""
    m = spec["model"]
    arch = m.get("arch", "mlp")
    generator = torch.Generator().manual_seed(spec["seed"])
    if arch == "gpt":
        from featlearn.models.gpt import GPT, GPTConfig, init_gpt

        config = GPTConfig(vocab_size=len(data["vocab"]), block_size=m["block_size"], n_layer=m["n_layer"],
                           n_head=m["n_head"], n_embd=m["n_embd"], dropout=m.get("dropout", 0.0),
                           bias=m.get("bias", False))
        return init_gpt(GPT(config), generator)
    shape, out = _shapes(data)
    if arch == "mlp":
        model = MLP(shape[0], m["widths"], out=out, activation=m["activation"])
        return init_mlp(model, m["init_scales"], generator, m["init_convention"], m["readout_scale"])
    if arch == "vgg11":
        from featlearn.models.vgg import VGG11, init_vgg

        model = VGG11(in_channels=shape[0], classes=out, width_divisor=m.get("width_divisor", 1),
                      dropout=m.get("dropout", 0.5))
        return init_vgg(model, generator)
    if arch in ("collapse_mlp", "resnet18_mlp", "vgg11_mlp"):
        from featlearn.models.collapse_nets import CollapseNet, init_collapse_net

        backbone = {"collapse_mlp": None, "resnet18_mlp": "resnet18", "vgg11_mlp": "vgg11"}[arch]
        model = CollapseNet(backbone, in_channels=shape[0], d_in=shape[0] if backbone is None else None,
                            classes=out, width=m["width"], depth=m["depth"],
                            width_divisor=m.get("width_divisor", 1))
        # the authors' code: head layer 1 of the ResNet/VGG heads keeps PyTorch's default init (spec §2.6)
        default = () if backbone is None else (1,)
        return init_collapse_net(model, m["gain"], generator, default)
    raise ValueError(f"unknown model.arch {arch!r}; choose one of {ARCHS}")
