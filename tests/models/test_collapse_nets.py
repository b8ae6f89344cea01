import math

import pytest
import torch
import torchvision
from torch import nn
from torchvision.models import vgg

from featlearn.models.collapse_nets import CollapseNet, init_collapse_net

IMAGES = {"mnist": (1, 28), "cifar": (3, 32)}


def _net(backbone, image="cifar", seed=0, gain=0.2, divisor=1):
    c, side = IMAGES[image]
    model = CollapseNet(backbone, c, c * side * side, width_divisor=divisor)
    return init_collapse_net(model, gain, torch.Generator().manual_seed(seed)).requires_grad_(False)


@pytest.mark.parametrize("image", sorted(IMAGES))
@pytest.mark.parametrize(("backbone", "divisor", "d_features"),
                         [(None, 1, None), ("resnet18", 1, 512), ("resnet18", 4, 128), ("vgg11", 1, 8192),
                          ("vgg11", 4, 2048)])
def test_shapes(image, backbone, divisor, d_features):
    c, side = IMAGES[image]
    model = _net(backbone, image, divisor=divisor).eval()
    x = torch.randn(2, c, side, side)
    hs = model.head_inputs(x)
    assert [h.shape[1] for h in hs] == [d_features or c * side * side] + [512] * 5
    assert model(x).shape == (2, 10)


def test_resnet_backbone_is_torchvision_resnet18():
    """At divisor 1 the backbone holds torchvision's parameters and computes its function (fc = Identity)."""
    reference = torchvision.models.resnet18(weights=None).eval()
    reference.fc = nn.Identity()
    model = CollapseNet("resnet18", 3, None).eval()
    model.backbone.load_state_dict({k: v for k, v in reference.state_dict().items() if not k.startswith("fc.")})
    x = torch.randn(2, 3, 32, 32)
    torch.testing.assert_close(model.features(x), reference(x))


def test_vgg_backbone_is_torchvision_vgg11_features_15():
    reference = vgg.make_layers(vgg.cfgs["A"])[:15]  # vgg11().features without building its 120M-weight classifier
    reference[0] = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
    model = CollapseNet("vgg11", 3, None)
    missing = model.backbone.load_state_dict(reference.state_dict(), strict=False)
    assert not missing.unexpected_keys and not missing.missing_keys
    x = torch.randn(2, 3, 32, 32)
    torch.testing.assert_close(model.features(x), nn.Flatten()(nn.AdaptiveAvgPool2d(4)(reference(x))))


@pytest.mark.parametrize("backbone", [None, "resnet18"])
def test_init_is_deterministic_per_seed(backbone):
    a, b, c = (_net(backbone, "mnist", seed=s, divisor=4).state_dict() for s in (0, 0, 1))
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not torch.equal(a["head.2.weight"], c["head.2.weight"])
    if backbone:
        assert not torch.equal(a["backbone.layer1.0.conv1.weight"], c["backbone.layer1.0.conv1.weight"])


@pytest.mark.parametrize(("backbone", "xavier_layers"), [(None, range(5)), ("vgg11", range(1, 5))])
def test_xavier_gain_on_head_and_default_elsewhere(backbone, xavier_layers):
    gain = 0.3
    model = _net(backbone, "mnist", gain=gain, divisor=4)
    for i, fc in enumerate(model.head):
        fan_out, fan_in = fc.weight.shape
        bound = gain * math.sqrt(6 / (fan_in + fan_out)) if i in xavier_layers else 1 / math.sqrt(fan_in)
        top = float(fc.weight.abs().max())
        assert 0.99 * bound < top <= bound, (i, top, bound)  # uniform on (−a, a): the max is close to a
    top = float(model.readout.weight.abs().max())
    assert 0.9 / math.sqrt(512) < top <= 1 / math.sqrt(512)


def test_head_from_continues_the_forward_pass_at_every_layer():
    model = _net("resnet18", "mnist", divisor=8).eval()
    x = torch.randn(3, 1, 28, 28)
    hs = model.head_inputs(x)
    for layer in range(1, 7):
        torch.testing.assert_close(model.head_from(layer, hs[layer - 1]), model(x))


def test_errors_name_the_fix():
    with pytest.raises(ValueError, match="needs d_in"):
        CollapseNet(None, 1, None)
    with pytest.raises(ValueError, match="unknown backbone 'vgg16'"):
        CollapseNet("vgg16", 3, None)
