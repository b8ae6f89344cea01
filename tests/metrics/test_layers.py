"""Layers of any nn.Module: which are found, their weight matrices, and AGOPs through attention and grouped convs
checked against gradients taken another way."""

import copy

import pytest
import torch
import torch.nn.functional as F
import torchvision
from torch import nn

from featlearn.metrics.layers import find_layers
from featlearn.metrics.model_nfa import agop, covariances, measure_nfa

F64 = torch.float64


def _input_agop(grads):
    """(1/n) Σ over samples, positions and passes of g gᵀ, from per-pass gradients (n, T, E) of one input shift."""
    flat = torch.cat([g.reshape(-1, g.shape[-1]) for g in grads])
    return flat.T @ flat / grads[0].shape[0]


class _Attention(nn.Module):
    """x (n, T, E) -> readout(MultiheadAttention(x, kv, kv)); kv = x, or a Linear of x when kdim differs."""

    def __init__(self, kdim=None):
        super().__init__()
        self.kv = nn.Linear(6, kdim) if kdim else nn.Identity()
        self.attn = nn.MultiheadAttention(6, 2, batch_first=True, kdim=kdim, vdim=kdim)
        self.readout = nn.Linear(6, 3)

    def forward(self, x, shifts=(0, 0, 0)):
        kv = self.kv(x)
        return self.readout(self.attn(x + shifts[0], kv + shifts[1], kv + shifts[2], need_weights=False)[0])


@pytest.mark.parametrize("kdim", [None, 4])
def test_attention_projection_agops_equal_the_gradients_with_respect_to_query_key_value(kdim):
    torch.manual_seed(0)
    model = _Attention(kdim).double().eval()
    x = torch.randn(3, 5, 6, dtype=F64)
    got = agop(model, x)
    assert {"attn.q", "attn.k", "attn.v", "attn.out_proj", "readout"} <= set(got)
    assert "attn.out_proj" in got and not any(name.startswith("attn.out_proj.") for name in got)
    # reference: zero shifts on the projections' inputs, so ∂f/∂shift = Wᵀ ∂f/∂(q, k, v), through torch's own path
    shifts = [torch.zeros(3, 5, d, dtype=F64, requires_grad=True) for d in (6, kdim or 6, kdim or 6)]
    out = model(x, shifts).flatten(1)
    grads = [torch.autograd.grad(out[:, j].sum(), shifts, retain_graph=True) for j in range(out.shape[1])]
    for i, proj in enumerate("qkv"):
        expected = _input_agop([g[i] for g in grads])
        torch.testing.assert_close(got[f"attn.{proj}"], expected, rtol=1e-10, atol=1e-12)
    # out_proj feeds the readout alone: its K is T·W_rᵀW_r (5 positions)
    w_o, w_r = model.attn.out_proj.weight.detach(), model.readout.weight.detach()
    torch.testing.assert_close(got["attn.out_proj"], 5 * w_o.T @ w_r.T @ w_r @ w_o, rtol=1e-10, atol=1e-12)


def test_grouped_strided_conv_agop_is_over_unfolded_patches():
    torch.manual_seed(1)
    conv = nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2)
    model = nn.Sequential(conv, nn.ReLU(), nn.Flatten(), nn.Linear(6 * 4 * 4, 3)).double()
    x = torch.randn(2, 4, 8, 8, dtype=F64)
    (layer,) = find_layers(model, ["0"])
    w = layer.matrix(model)
    assert w.shape == (6, 4 * 9) and torch.count_nonzero(w[:3, 18:]) == 0  # block-diagonal over the 2 groups
    patches = F.unfold(x, 3, padding=1, stride=2).requires_grad_(True)  # (n, C_in·9, 16)
    h = (w @ patches + conv.bias.detach()[:, None]).reshape(2, 6, 4, 4)
    torch.testing.assert_close(h, conv(x))  # W in patch space is the conv
    out = model[1:](h)
    grads = [torch.autograd.grad(out[:, j].sum(), patches, retain_graph=True)[0].transpose(1, 2) for j in range(3)]
    torch.testing.assert_close(agop(model, x)["0"], _input_agop(grads), rtol=1e-10, atol=1e-12)


def test_plain_sequential_gives_one_row_per_linear_and_sensible_shapes():
    model = nn.Sequential(nn.Flatten(), nn.Linear(12, 8), nn.ReLU(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 2))
    init = copy.deepcopy(model)
    with torch.no_grad():
        model[1].weight.mul_(2)
    ds = measure_nfa(model, torch.randn(10, 3, 4), init)
    assert list(ds.layer.values) == ["1", "3", "5"] and list(ds.kind.values) == ["linear"] * 3
    assert ds.uc_nfc.shape == (3, 2) and ds["agop[1]"].shape == (12, 12) and ds["nfm[5]"].shape == (8, 8)
    assert float(ds.dw_rel.sel(layer="1")) == pytest.approx(0.5)
    assert ds.c_nfc.sel(layer="3").isnull().all()  # W̄ = 0: undefined, as the pipeline stores at init


def test_torchvision_resnet_runs_in_eval_mode_and_leaves_the_model_as_it_was():
    model = torchvision.models.resnet18(weights=None, num_classes=3)
    init = copy.deepcopy(model)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.01 * torch.randn_like(p))
    model.train()
    state = copy.deepcopy(model.state_dict())
    x = torch.randn(2, 3, 32, 32)
    ds = measure_nfa(model, x, matrices=False)
    assert ds.sizes == {"layer": 21, "convention": 2}  # 20 convs (3 of them downsample) and fc
    assert ((ds.uc_nfc > -1) & (ds.uc_nfc <= 1 + 1e-9)).all()
    assert ds.uc_nfc.sel(layer="fc").values == pytest.approx([1, 1], abs=1e-6)  # readout: K = I
    picked = measure_nfa(model, x, init, ["conv1", "layer3.1.conv2", "fc"])
    assert picked["nfm[conv1]"].shape == (3 * 49, 3 * 49) and picked["agop[layer3.1.conv2]"].shape == (2304, 2304)
    assert picked.c_nfc.notnull().all()
    assert model.training and all(m.training for m in model.modules())  # BatchNorm ran on running stats, then back
    assert all(torch.equal(v, state[k]) for k, v in model.state_dict().items())  # running stats untouched
    assert not any(m._forward_hooks for m in model.modules())


def test_transformer_encoder_fast_path_is_measured_through_its_hooks():
    # frozen and in eval mode, nn.TransformerEncoderLayer would run its fused kernel, which no hook sees
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True, dropout=0.0)
    model = nn.Sequential(nn.TransformerEncoder(layer, 2, enable_nested_tensor=False), nn.Linear(8, 3))
    model.eval().requires_grad_(False)
    got = agop(model, torch.randn(4, 5, 8))
    names = [f"0.layers.{i}.{part}" for i in (0, 1) for part in
             ("self_attn.q", "self_attn.k", "self_attn.v", "self_attn.out_proj", "linear1", "linear2")]
    assert list(got) == [*names, "1"]
    assert all(torch.count_nonzero(k) > 0 for k in got.values())


def test_unknown_or_unrun_layers_are_errors():
    model = nn.Sequential(nn.Linear(3, 2))
    with pytest.raises(ValueError, match="no measurable layers named"):
        measure_nfa(model, torch.randn(2, 3), layers=["2"])
    aux = nn.ModuleDict({"main": nn.Linear(3, 2), "aux": nn.Linear(3, 2)})
    aux.forward = lambda x: aux["main"](x)
    with pytest.raises(ValueError, match=r"layers \['aux'\] were not called.*leave them out, layers=\['main'\]"):
        agop(aux, torch.randn(2, 3))

    class Functional(nn.Module):  # as torchvision's Swin attention: its qkv's weight, through F.linear
        def __init__(self):
            super().__init__()
            self.qkv, self.head = nn.Linear(4, 4), nn.Linear(4, 2)

        def forward(self, x):
            return self.head(torch.nn.functional.linear(x, self.qkv.weight, self.qkv.bias).relu())

    net, x = Functional(), torch.randn(5, 4)
    with pytest.raises(ValueError, match=r"\['qkv'\] were not called.*torch.nn.functional.*layers=\['head'\]"):
        measure_nfa(net, x)
    assert list(measure_nfa(net, x, layers=["head"]).layer.values) == ["head"]


def test_a_layer_that_some_batches_do_not_call_adds_nothing_there():
    """A mixture of experts routes each sample to one expert; a batch that routes none to an expert adds nothing to
    its K, as the sum over the samples that reach it says (only a layer the first batch never calls is refused)."""
    class Routed(nn.Module):
        def __init__(self):
            super().__init__()
            self.experts, self.head = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)]), nn.Linear(4, 2)
            self.route = 1

        def forward(self, x):
            to_second = self.route * x[:, 0] > 0
            h = torch.zeros_like(x)
            for e, chosen in enumerate((~to_second, to_second)):
                if chosen.any():
                    h = h.index_put((chosen.nonzero()[:, 0],), self.experts[e](x[chosen]))
            return self.head(h.tanh())

    torch.manual_seed(0)
    net, x = Routed().double(), torch.randn(8, 4, dtype=torch.float64)
    x[:, 0] = x[:, 0].abs() * torch.tensor([-1, 1, -1, 1, 1, 1, 1, 1])  # the second batch of 4 never reaches expert 0
    whole, batched = agop(net, x), agop(net, x, batch_size=4)
    for name in ("experts.0", "experts.1", "head"):
        torch.testing.assert_close(batched[name], whole[name], rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match=r"\['experts.0'\] were not called"):
        agop(net, x.flip(0), batch_size=4)  # now the first batch never reaches expert 0
    # K̄ pairs the model's gradients with init's at the same call: an init routing its samples otherwise is refused
    rerouted = copy.deepcopy(net)
    rerouted.route = -1
    with pytest.raises(ValueError, match="routing alike; measure without init="):
        covariances(net, x, init=rerouted)


def test_layers_run_without_autograd_are_refused_and_non_reentrant_checkpoints_measured():
    """A reentrant torch.utils.checkpoint runs its forward without autograd: no gradient would reach the layers
    inside (K = 0 and NaN NFCs). The non-reentrant one records the graph as usual."""
    from torch.utils.checkpoint import checkpoint

    class Checkpointed(nn.Module):
        def __init__(self, reentrant):
            super().__init__()
            self.a, self.b, self.reentrant = nn.Linear(4, 6), nn.Linear(6, 3), reentrant

        def forward(self, x):
            return self.b(checkpoint(lambda h: self.a(h).tanh(), x, use_reentrant=self.reentrant))

    torch.manual_seed(0)
    x, net = torch.randn(5, 4, dtype=torch.float64), Checkpointed(None).double()
    plain = nn.Sequential(net.a, nn.Tanh(), net.b)
    expected = agop(plain, x)
    net.reentrant = False
    got = agop(net, x)
    torch.testing.assert_close(got["a"], expected["0"], rtol=1e-12, atol=0)
    net.reentrant = True
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad"), \
            pytest.raises(ValueError, match=r"layers \['a'\] ran without autograd.*use_reentrant=False"):
        agop(net, x)
