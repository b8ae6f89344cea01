import math

import pytest
import torch

from featlearn.models.mlp import MLP, build, init_mlp


def _he(bias, widths=(300, 200), d=400, seed=0):
    return init_mlp(MLP(d, list(widths), bias=bias), [1.0] * len(widths), torch.Generator().manual_seed(seed),
                    "he_normal")


def test_bias_option_adds_one_bias_per_layer_readout_included():
    assert [name for name, _ in MLP(5, [4, 3]).named_parameters()] == [
        "layers.0.weight", "layers.1.weight", "layers.2.weight"]
    model = MLP(5, [4, 3], bias=True)
    assert [tuple(p.shape) for p in model.parameters()] == [(4, 5), (4,), (3, 4), (3,), (1, 3), (1,)]
    x = torch.randn(7, 5, generator=torch.Generator().manual_seed(1))
    h = torch.relu(x @ model.layers[0].weight.T + model.layers[0].bias)
    h = torch.relu(h @ model.layers[1].weight.T + model.layers[1].bias)
    torch.testing.assert_close(model(x), h @ model.layers[2].weight.T + model.layers[2].bias)


def test_he_normal_weights_have_variance_two_over_fan_in_and_biases_pytorch_default():
    model = _he(bias=True)
    for layer in model.layers:
        fan_in = layer.weight.shape[1]
        w = layer.weight.detach()
        if w.numel() > 1000:  # the readout (200 values) is too few for a variance test
            assert float(w.var()) == pytest.approx(2 / fan_in, rel=0.05)
            assert float(w.mean()) == pytest.approx(0.0, abs=4 * math.sqrt(2 / fan_in / w.numel()))
        bound, b = 1 / math.sqrt(fan_in), layer.bias.detach()
        assert float(b.abs().max()) <= bound
        if b.numel() > 100:  # U(±bound) spreads over its whole range
            assert float(b.abs().max()) > 0.9 * bound


def test_draws_go_weight_then_bias_layer_by_layer():
    """The tangent runs' inits depend on this order: W1, b1, W2, b2, … from one generator."""
    model, gen = _he(bias=True, widths=(6,), d=4), torch.Generator().manual_seed(0)
    w1 = torch.randn(6, 4, generator=gen) * math.sqrt(2 / 4)
    b1 = torch.empty(6).uniform_(-1 / 2, 1 / 2, generator=gen)
    w2 = torch.randn(1, 6, generator=gen) * math.sqrt(2 / 6)
    assert torch.equal(model.layers[0].weight, w1) and torch.equal(model.layers[0].bias, b1)
    assert torch.equal(model.layers[1].weight, w2)


def test_without_bias_he_normal_draws_equal_v1_variance_at_scale_two_in_the_hidden_layers():
    he = _he(bias=False, widths=(8, 8), d=5)
    v1 = init_mlp(MLP(5, [8, 8]), [2.0, 2.0], torch.Generator().manual_seed(0), "v1_variance")
    for a, b in zip(he.hidden, v1.hidden):
        assert torch.equal(a.weight, b.weight)


def test_build_reads_the_bias_option_and_rejects_an_unknown_convention():
    m = {"widths": [3], "activation": "relu", "init_scales": [1.0], "init_convention": "he_normal",
         "readout_scale": 1.0, "bias": True}
    assert build(m, (2,), 1, torch.Generator().manual_seed(0)).layers[0].bias is not None
    with pytest.raises(ValueError, match="unknown init convention 'he'; allowed"):
        build({**m, "init_convention": "he"}, (2,), 1, torch.Generator().manual_seed(0))
