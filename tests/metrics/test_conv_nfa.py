import torch
import torch.nn.functional as F

from featlearn.metrics import nfa
from featlearn.metrics.conv_nfa import conv_feature_covariances, conv_weight_matrix
from featlearn.models.vgg import POOL_AFTER, VGG11, init_vgg


def _tiny_vgg_with_biases(seed=0):
    g = torch.Generator().manual_seed(seed)
    model = init_vgg(VGG11(width_divisor=32, classes=3), g).double()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 1:  # trained networks have nonzero biases: make the bias quirk visible
                p.normal_(0, 0.1, generator=g)
        for layer in model.classifier:
            if isinstance(layer, torch.nn.Linear):
                layer.weight.mul_(30)  # N(0, 0.01²) outputs are ~1e-4: scale them to O(1) for a sharp check
    x = torch.randn(5, 3, 32, 32, dtype=torch.float64, generator=g)
    return model, x


def _patch_agop(model, x, ell, with_biases):
    """(1/n) Σ_images Σ_positions Σ_j (∂f_j/∂p)(∂f_j/∂p)ᵀ with the unfolded patches p of conv ℓ a leaf, so that
    patches that overlap in the image are independent variables; conv ℓ runs as W p + b."""
    convs = model.conv_layers
    bias = [c.bias if with_biases else torch.zeros_like(c.bias) for c in convs]
    with torch.no_grad():
        for i in range(ell):
            x = F.relu(F.conv2d(x, convs[i].weight, bias[i], padding=1))
            x = F.max_pool2d(x, 2) if i in POOL_AFTER else x
    n, _, height, width = x.shape
    patches = F.unfold(x, 3, padding=1).requires_grad_(True)  # (n, C_in·9, H·W)
    h = (conv_weight_matrix(convs[ell]) @ patches + bias[ell][:, None]).reshape(n, -1, height, width)
    for i in range(ell, len(convs)):
        if i > ell:
            h = F.conv2d(x, convs[i].weight, bias[i], padding=1)
        x = F.relu(h)
        x = F.max_pool2d(x, 2) if i in POOL_AFTER else x
    out = model.classifier(model.avgpool(x).flatten(1))
    g = torch.stack([torch.autograd.grad(out[:, j].sum(), patches, retain_graph=True)[0] for j in range(out.shape[1])])
    flat = g.permute(2, 0, 1, 3).reshape(g.shape[2], -1)  # (C_in·9, classes·n·H·W)
    return flat @ flat.T / n


def test_agop_from_conv_k_equals_autograd_patch_agop_at_every_layer():
    model, x = _tiny_vgg_with_biases()
    model.eval()
    ks = conv_feature_covariances(model, x, batch_size=2)
    for ell, conv in enumerate(model.conv_layers):
        w = conv_weight_matrix(conv)
        assert ks[ell].shape == (conv.out_channels, conv.out_channels) and ks[ell].dtype == torch.float64
        assert w.shape == (conv.out_channels, conv.in_channels * 9)
        expected = _patch_agop(model, x, ell, with_biases=False)
        torch.testing.assert_close(nfa.agop(w, ks[ell]), expected, rtol=1e-8, atol=1e-8 * expected.abs().max())


def test_drop_biases_flag_measures_the_network_with_or_without_conv_biases():
    model, x = _tiny_vgg_with_biases(1)
    model.eval()
    k_with = conv_feature_covariances(model, x, drop_biases=False)
    k_without = conv_feature_covariances(model, x, drop_biases=True)
    for ell in (0, 4):
        w = conv_weight_matrix(model.conv_layers[ell])
        with_b = _patch_agop(model, x, ell, with_biases=True)
        torch.testing.assert_close(nfa.agop(w, k_with[ell]), with_b, rtol=1e-8, atol=1e-8 * with_b.abs().max())
        assert not torch.allclose(k_with[ell], k_without[ell], rtol=1e-3)


def test_measurement_uses_eval_mode_and_leaves_the_model_untouched():
    model, x = _tiny_vgg_with_biases(2)
    biases = [c.bias.clone() for c in model.conv_layers]
    model.train()
    k_train_mode = conv_feature_covariances(model, x)
    assert model.training and all(torch.equal(c.bias, b) for c, b in zip(model.conv_layers, biases))
    assert all(p.requires_grad for p in model.parameters())
    # Dropout would make two calls differ; eval mode makes them equal and equal to an eval-mode model's K.
    for a, b in zip(k_train_mode, conv_feature_covariances(model.eval(), x, batch_size=3)):
        torch.testing.assert_close(a, b)


def test_conv_weight_matrix_matches_unfold_order():
    conv = torch.nn.Conv2d(3, 4, 3, padding=1, bias=False)
    x = torch.randn(2, 3, 6, 5)
    via_unfold = (conv_weight_matrix(conv) @ F.unfold(x, 3, padding=1)).reshape(2, 4, 6, 5)
    torch.testing.assert_close(via_unfold, conv(x).detach())
