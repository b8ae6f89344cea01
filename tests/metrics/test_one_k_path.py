"""The pipeline's K (and K̄) of every family come from the library's one sum, ``model_nfa.covariances``, and agree to
1e-12 with K computed independently: per-sample Jacobians by torch.func (jacrev, vmapped over samples) through the
models' own ``shifts`` arguments, which the library's hooks do not use."""

import copy

import pytest
import torch
import torch.nn.functional as F
from torch.func import jacrev, vmap

from featlearn.metrics import attention_nfa, conv_nfa, mlp_nfa, model_nfa
from featlearn.models.gpt import GPT, GPTConfig, init_gpt
from featlearn.models.mlp import MLP, init_mlp
from featlearn.models.vgg import VGG11, init_vgg

TOL = 1e-12
# functorch has no batching rule for the CPU flash attention kernel yet and says so; its fallback is exact
pytestmark = pytest.mark.filterwarnings("ignore:There is a performance drop:UserWarning")


def _relative(a, b):
    return float((a - b).norm() / b.norm())


def _k(jac, n):
    """(1/n) Σ g gᵀ over every index of ``jac`` but its last (the features)."""
    return torch.einsum("...i,...j->ij", jac, jac) / n


def _per_sample_jacobians(f, x, zeros):
    """[∂f(x_α)/∂s_ℓ at s = 0 for every sample α], one array per shift, (n, *f's shape, *s_ℓ's shape)."""
    return [jac.detach() for jac in vmap(jacrev(f, argnums=1), in_dims=(0, None))(x, zeros)]


def _mlp_jacobians(model, x):
    def f(xa, shifts):
        return model(xa[None], [s[None] for s in shifts])[0]

    return _per_sample_jacobians(f, x, [torch.zeros(layer.out_features, dtype=x.dtype) for layer in model.hidden])


def _mlp(moved, widths, out, seed, bias=False):
    """A float64 MLP at init, a 'trained' copy of it, and 11 inputs."""
    g = torch.Generator().manual_seed(seed)
    init = init_mlp(MLP(7, widths, out=out, bias=bias), [1.0] * len(widths), g).double()
    return init, moved(init, seed + 1, 0.3), torch.randn(11, 7, dtype=torch.float64, generator=g)


@pytest.mark.parametrize("chunk", [4, 11])
def test_real_mlp_k_is_the_per_sample_jacobian_formula(chunk, moved):
    """A real_mlp-like network (five bias-free hidden layers, several outputs), in blocks with a short last one."""
    _, model, x = _mlp(moved, [9, 8, 8, 6, 5], 4, 0)
    ks, k_bars = mlp_nfa.mlp_feature_covariances(model, x, chunk)
    assert k_bars is None
    for k, jac in zip(ks, _mlp_jacobians(model, x), strict=True):
        assert k.dtype == torch.float64 and _relative(k, _k(jac, len(x))) <= TOL


@pytest.mark.parametrize("bias", [False, True])
def test_synthetic_mlp_k_and_k_bar_are_the_per_sample_jacobian_formulas(bias, moved):
    """A synthetic-task network (one output) with its init: K̄ from J_t − J_0 at the same sample and output."""
    init, model, x = _mlp(moved, [16, 12], 1, 3, bias)
    ks, k_bars = mlp_nfa.mlp_feature_covariances(model, x, 5, init)
    jacs, jacs0 = _mlp_jacobians(model, x), _mlp_jacobians(init, x)
    for k, k_bar, jac, jac0 in zip(ks, k_bars, jacs, jacs0, strict=True):
        assert _relative(k, _k(jac, len(x))) <= TOL
        assert _relative(k_bar, _k(jac - jac0, len(x))) <= TOL


def test_k_bar_from_probes_gives_the_model_and_its_init_the_same_probe(moved):
    """K̄ estimated by probes: each batch draws u (b, c) per probe, in order, and both models are differentiated along
    it, so K̄ = (1/(nM)) Σ ((J_t − J_0)ᵀu)((J_t − J_0)ᵀu)ᵀ with those very draws."""
    init, model, x = _mlp(moved, [16, 12], 3, 5)
    names = ["layers.0", "layers.1"]
    batch, probes = 4, 3
    ks, k_bars = model_nfa.covariances(model, x, names, init=init, batch_size=batch, probes=probes,
                                       generator=torch.Generator().manual_seed(9))
    draws = torch.Generator().manual_seed(9)
    us = torch.cat([torch.stack([torch.randn(len(xb), 3, generator=draws, dtype=x.dtype) for _ in range(probes)], 1)
                    for xb in x.split(batch)])  # (n, M, c)
    for name, jac, jac0 in zip(names, _mlp_jacobians(model, x), _mlp_jacobians(init, x), strict=True):
        assert _relative(ks[name], _k(torch.einsum("amc,ack->amk", us, jac), len(x) * probes)) <= TOL
        expected = _k(torch.einsum("amc,ack->amk", us, jac - jac0), len(x) * probes)
        assert _relative(k_bars[name], expected) <= TOL


def _vgg_jacobians(net, x):
    """∂f/∂h_ℓ (n, classes, C, H, W) of every conv output of an eval-mode VGG11, through its ``shifts`` argument."""
    shapes = []
    handles = [conv.register_forward_hook(lambda _m, _i, out: shapes.append(out.shape[1:])) for conv in net.conv_layers]
    with torch.no_grad():
        net(x[:1])
    for handle in handles:
        handle.remove()

    def f(image, shifts):
        return net(image[None], [s[None] for s in shifts])[0]

    return _per_sample_jacobians(f, x, [torch.zeros(shape, dtype=x.dtype) for shape in shapes])


@pytest.mark.parametrize("drop_biases", [True, False])
def test_vgg_conv_k_is_the_per_sample_jacobian_formula(drop_biases):
    g = torch.Generator().manual_seed(11)
    model = init_vgg(VGG11(width_divisor=32, classes=3), g).double()
    with torch.no_grad():
        for p in model.parameters():  # nonzero biases, and outputs of order one
            p.add_(0.1 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    x = torch.randn(5, 3, 32, 32, dtype=torch.float64, generator=g)
    model.train()  # dropout on: the measurement must run in eval mode on a copy
    ks = conv_nfa.conv_feature_covariances(model, x, batch_size=2, drop_biases=drop_biases)
    assert model.training
    net = copy.deepcopy(model).eval()
    if drop_biases:
        with torch.no_grad():
            for conv in net.conv_layers:
                conv.bias.zero_()
    for k, jac in zip(ks, _vgg_jacobians(net, x), strict=True):
        assert _relative(k, _k(jac.movedim(2, -1), len(x))) <= TOL


def _gpt(moved):
    config = GPTConfig(vocab_size=7, block_size=6, n_layer=2, n_head=2, n_embd=8)
    model = moved(init_gpt(GPT(config), torch.Generator().manual_seed(13)).double(), 14, 0.2)
    return model, torch.randint(0, 7, (3, 5), generator=torch.Generator().manual_seed(15))


def _qkv(jacs, key, width):
    """∂/∂q, k or v of block ``key[0]`` (1-based) out of the Jacobians with respect to its c_attn output."""
    part = "qkv".index(key[1])
    return jacs[key[0] - 1][..., part * width : (part + 1) * width]


def _gpt_jacobians(model, idx, f=None):
    """∂f/∂[q, k, v] per sequence, (B, *f's shape, T, 3C) per block, through ``GPT.forward``'s ``qkv_shifts``; f the
    logits (T, V) of the sequence unless given (a function of the sequence, its logits and its index)."""
    width = model.config.n_embd

    def of(seq, shifts, *rest):
        logits = model(seq[None], [s[None] for s in shifts])[0]
        return logits if f is None else f(logits, *rest)

    zeros = [torch.zeros(idx.shape[1], 3 * width, dtype=torch.float64) for _ in model.blocks]
    rest = () if f is None else (torch.roll(idx, -1, dims=1),)
    return [jac.detach() for jac in vmap(jacrev(of, argnums=1), in_dims=(0, None, *[0] * len(rest)))(idx, zeros, *rest)]


def test_gpt_exact_attention_k_is_the_per_sequence_jacobian_formula(moved):
    model, idx = _gpt(moved)
    ks = attention_nfa.exact_attention_feature_covariances(model, idx)
    jacs = _gpt_jacobians(model, idx)
    assert sorted(ks) == sorted((b, p) for b in (1, 2) for p in "qkv")
    for key, k in ks.items():
        assert _relative(k, _k(_qkv(jacs, key, 8), len(idx))) <= TOL


def test_gpt_probe_attention_k_uses_the_documented_draws(moved):
    """u ~ N(0, I) over (B, T, V) per probe, drawn in turn from the generator: K = (1/(MB)) Σ (Jᵀu)(Jᵀu)ᵀ."""
    model, idx = _gpt(moved)
    probes = 3
    ks = attention_nfa.attention_feature_covariances(model, idx, probes, torch.Generator().manual_seed(16))
    jacs = _gpt_jacobians(model, idx)
    draws = torch.Generator().manual_seed(16)
    us = torch.stack([torch.randn(*idx.shape, 7, generator=draws, dtype=torch.float64) for _ in range(probes)])
    for key, k in ks.items():
        along = torch.einsum("mbtv,btvsi->mbsi", us, _qkv(jacs, key, 8))
        assert _relative(k, _k(along, probes * len(idx))) <= TOL


def test_gpt_loss_target_k_is_the_per_sequence_loss_gradient_formula(moved):
    model, idx = _gpt(moved)
    targets = torch.roll(idx, -1, dims=1)
    ks = attention_nfa.attention_feature_covariances(model, idx, 1, torch.Generator(), "loss", targets)

    def loss(logits, target):
        return F.cross_entropy(logits, target, reduction="sum")

    jacs = _gpt_jacobians(model, idx, loss)  # (B, T, 3C) per block
    for key, k in ks.items():
        assert _relative(k, _k(_qkv(jacs, key, 8), len(idx))) <= TOL


def test_every_family_sums_k_through_the_library(monkeypatch, moved):
    """One K sum: the MLP, conv and attention families each call ``model_nfa.covariances`` for all their layers."""
    calls = []
    covariances = model_nfa.covariances

    def spy(model, x, layers, **options):
        calls.append(sorted(layers))
        return covariances(model, x, layers, **options)

    monkeypatch.setattr(model_nfa, "covariances", spy)
    _, mlp, x = _mlp(moved, [9, 8], 2, 17)
    mlp_nfa.mlp_feature_covariances(mlp, x, 4)
    conv_nfa.conv_feature_covariances(init_vgg(VGG11(width_divisor=32, classes=3), torch.Generator()),
                                      torch.randn(2, 3, 32, 32))
    model, idx = _gpt(moved)
    attention_nfa.attention_feature_covariances(model, idx, 2, torch.Generator())
    assert calls == [["layers.0", "layers.1"], [f"conv_layers.{i}" for i in range(8)],
                     sorted(f"blocks.{b}.attn.c_attn.{p}" for b in (0, 1) for p in "qkv")]
