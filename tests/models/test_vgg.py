import torch

from featlearn.models.vgg import VGG11, init_vgg


def _vgg(seed, **kwargs):
    return init_vgg(VGG11(**kwargs), torch.Generator().manual_seed(seed))


def test_paper_vgg11_has_eight_biased_convs_and_28m_parameters():
    model = VGG11()
    assert [(c.in_channels, c.out_channels) for c in model.conv_layers] == [
        (3, 64), (64, 128), (128, 256), (256, 256), (256, 512), (512, 512), (512, 512), (512, 512)
    ]
    assert all(c.kernel_size == (3, 3) and c.padding == (1, 1) and c.bias is not None for c in model.conv_layers)
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in model.modules())
    # 9,220,480 conv + 2,101,248 + 16,781,312 + 40,970 head (the paper's ≈28M).
    assert sum(p.numel() for p in model.parameters()) == 28_144_010


def test_width_divisor_shrinks_convs_and_head_and_output_shape():
    model = _vgg(0, width_divisor=32, classes=7)
    assert [c.out_channels for c in model.conv_layers] == [2, 4, 8, 8, 16, 16, 16, 16]
    assert model.classifier[0].weight.shape == (128, 16)
    assert model.classifier[-1].weight.shape == (7, 128)
    assert model(torch.randn(3, 3, 32, 32)).shape == (3, 7)


def test_init_is_deterministic_per_seed_and_follows_the_authors_scales():
    a, b, c = _vgg(5, width_divisor=8), _vgg(5, width_divisor=8), _vgg(6, width_divisor=8)
    for pa, pb, pc in zip(a.parameters(), b.parameters(), c.parameters()):
        assert torch.equal(pa, pb)
        assert pa.dim() == 1 or not torch.equal(pa, pc)
    assert all(torch.all(m.bias == 0) for m in a.modules() if hasattr(m, "bias") and m.bias is not None)
    conv = a.conv_layers[5]  # fan_out = 64·9: std √(2/576)
    assert abs(conv.weight.std().item() / (2 / (conv.out_channels * 9)) ** 0.5 - 1) < 0.05
    assert abs(a.classifier[3].weight.std().item() / 0.01 - 1) < 0.05


def test_zero_shifts_change_nothing_and_a_shift_enters_before_the_relu():
    model = _vgg(1, width_divisor=32).eval()
    x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    hs = []
    hooks = [c.register_forward_hook(lambda _m, _i, o: hs.append(o)) for c in model.conv_layers]
    out = model(x)
    for h in hooks:
        h.remove()
    torch.testing.assert_close(model(x, [torch.zeros_like(h) for h in hs]), out, rtol=0, atol=0)
    # Shifting conv 1 by −h_1 zeroes every pre-activation, so the ReLU output and everything after it is as for a
    # zero first layer: the bias-free network then outputs the head's constant.
    shifts = [torch.zeros_like(h) for h in hs]
    shifts[0] = -hs[0].detach()
    zeroed = model(x, shifts)
    torch.testing.assert_close(zeroed[0], zeroed[1])
    assert not torch.allclose(out[0], out[1])


def test_dropout_is_active_in_train_mode_only():
    model = _vgg(2, width_divisor=32)
    with torch.no_grad():
        for layer in model.classifier:
            if isinstance(layer, torch.nn.Linear):
                layer.weight.normal_(0, 0.5)
    x = torch.randn(2, 3, 32, 32)
    model.eval()
    assert torch.equal(model(x), model(x))
    model.train()
    assert not torch.equal(model(x), model(x))
