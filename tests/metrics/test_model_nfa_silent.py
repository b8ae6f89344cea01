"""measure_nfa / agop never silently wrong (issue 43): layers whose output every sample shares, padded batches,
adapted (LoRA) layers, K zero to rounding and parametrized custom weights."""

import copy

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn.utils import parametrize

from featlearn.metrics.model_nfa import agop, covariances, measure_nfa

F64 = torch.float64
TOL = 1e-10
SHARED = "compute their output once for the whole batch"


def _relative(got, expected):
    return float((got - expected).norm() / expected.norm())


class _Table(nn.Module):
    """The issue's case: per-sample features against a table projected once for the whole batch."""

    def __init__(self):
        super().__init__()
        self.enc, self.table, self.proj = nn.Linear(5, 4), nn.Parameter(torch.randn(3, 6)), nn.Linear(6, 4)

    def forward(self, x):
        return torch.tanh(self.enc(x)) @ self.proj(self.table).T


@pytest.mark.filterwarnings("ignore:measure_nfa does not measure:UserWarning")  # the table, a raw matrix
def test_a_layer_computed_once_for_the_batch_is_summed_per_sample_and_says_so():
    torch.manual_seed(0)
    model, x = _Table().double(), torch.randn(8, 5, dtype=F64)
    with pytest.warns(UserWarning, match=rf"layers \['proj'\] {SHARED}") as caught:
        got = agop(model, x)
    (message,) = [str(w.message) for w in caught if SHARED in str(w.message)]
    assert "8 forward passes" in message and "compute them per sample" in message
    # closed form: f_ik = Σ_m t_im (proj table)_km, t = tanh(enc x): ∂f_ij/∂h_k = δ_jk t_i, so K = 3 · mean t tᵀ
    t = torch.tanh(model.enc(x)).detach()
    w = model.proj.weight.detach()
    assert _relative(got["proj"], w.T @ (3 * t.T @ t / len(x)) @ w) <= TOL  # was 3.89 off
    one = agop(model, x, batch_size=1)  # each batch one sample: right by construction, and not checked
    assert all(_relative(got[name], one[name]) <= TOL for name in one)


class _TwoTowers(nn.Module):
    """A second tower on fixed inputs (class prompts) through two layers, and a relative-position bias network on a
    fixed grid, beside per-sample layers: the shared layers reached only through inputs no sample changes."""

    def __init__(self):
        super().__init__()
        self.image, self.text1, self.text2 = nn.Linear(6, 5), nn.Linear(4, 7), nn.Linear(7, 5)
        self.bias_net, self.head = nn.Linear(2, 1), nn.Linear(3, 3)
        self.register_buffer("prompts", torch.randn(3, 4))
        self.register_buffer("grid", torch.randn(3, 2))

    def forward(self, x):
        classes = self.text2(torch.tanh(self.text1(self.prompts)))
        scores = torch.tanh(self.image(x)) @ classes.T + self.bias_net(self.grid).T
        return self.head(torch.tanh(scores))


def test_shared_towers_and_bias_networks_match_per_sample_sums_in_every_layer_and_with_init():
    torch.manual_seed(1)
    model, x = _TwoTowers().double(), torch.randn(10, 6, dtype=F64)
    init = copy.deepcopy(model)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.2 * torch.randn_like(p))
    with pytest.warns(UserWarning, match=rf"\['bias_net', 'text1', 'text2'\] {SHARED}"):
        got, got_bar = covariances(model, x, init=init, batch_size=4)
    expected, expected_bar = covariances(model, x, init=init, batch_size=1)
    for name in expected:  # K̄ of the readout is I − I = 0: exactly, in both
        assert float((got[name] - expected[name]).norm()) <= TOL * float(expected[name].norm()), name
        assert float((got_bar[name] - expected_bar[name]).norm()) <= TOL * float(expected_bar[name].norm()), name
    with pytest.warns(UserWarning, match=SHARED):
        ds = measure_nfa(model, x, init, batch_size=4)
    for name in expected:
        w = model.get_submodule(name).weight.detach()
        assert _relative(torch.from_numpy(ds[f"agop[{name}]"].values), w.T @ expected[name] @ w) <= TOL, name


class _Tagger(nn.Module):
    """A token classifier: causal attention, so a right-padded sequence's real tokens never see its padding."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(4, 8)
        self.block = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        causal = nn.Transformer.generate_square_subsequent_mask(x.shape[1], dtype=x.dtype)
        return self.head(self.block(self.embed(x), src_mask=causal, is_causal=True))


def test_a_mask_leaves_padding_out_and_matches_the_trimmed_sequences():
    torch.manual_seed(2)
    model, lengths = _Tagger().double(), [6, 4, 2, 5]
    x = torch.randn(len(lengths), 6, 4, dtype=F64)
    mask = torch.arange(6)[None, :] < torch.tensor(lengths)[:, None]  # (n, T): real tokens
    x[~mask] = 0.0  # the padding
    trimmed = [agop(model, x[i:i + 1, :length]) for i, length in enumerate(lengths)]  # K per sequence, n = 1
    expected = {name: sum(each[name] for each in trimmed) / len(lengths) for name in trimmed[0]}
    got, unmasked = agop(model, x, mask=mask, batch_size=3), agop(model, x)
    assert sorted(got) == sorted(expected)
    for name, reference in expected.items():
        assert _relative(got[name], reference) <= TOL, name
    assert _relative(unmasked["head"], expected["head"]) > 0.1  # padded positions counted as outputs: 0.41 off
    # probes see the same mask: their K estimates the masked one
    probed = agop(model, x, ["head"], mask=mask, probes=400)
    assert _relative(probed["head"], expected["head"]) < 0.15


@pytest.mark.parametrize(("mask", "error", "match"), [
    (torch.ones(4, 6), TypeError, r"mask= must be a boolean tensor .* got a torch.float32 tensor of shape \(4, 6\)"),
    ([True] * 4, TypeError, r"mask= must be a boolean tensor .* got a list"),
    (torch.ones(3, 6, dtype=torch.bool), ValueError, r"mask= has shape \(3, 6\).* the 4 samples on dimension 0"),
    (torch.ones(4, 5, dtype=torch.bool), ValueError, r"a batch of f has shape \(4, 6, 3\), its mask \(4, 5\)"),
])
def test_a_bad_mask_is_refused_naming_its_form(mask, error, match):
    with pytest.raises(error, match=match):
        agop(_Tagger().double(), torch.randn(4, 6, 4, dtype=F64), mask=mask)


class _LoRA(nn.Module):
    """A plain adapted Linear, W x + b + B A x (its own, not peft's)."""

    def __init__(self, d_in, d_out, rank):
        super().__init__()
        self.base, self.A, self.B = nn.Linear(d_in, d_out), nn.Linear(d_in, rank, bias=False), nn.Linear(rank, d_out,
                                                                                                          bias=False)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.base(x) + self.B(self.A(self.drop(x)))


def _merged(adapted):
    """The same network with each _LoRA replaced by one nn.Linear of weight W + BA."""
    merged = copy.deepcopy(adapted)
    for name, module in adapted.named_children():
        if isinstance(module, _LoRA):
            linear = nn.Linear(module.base.in_features, module.base.out_features).double()
            with torch.no_grad():
                linear.weight.copy_(module.base.weight + module.B.weight @ module.A.weight)
                linear.bias.copy_(module.base.bias)
            setattr(merged, name, linear)
    return merged


def test_an_adapted_linear_is_measured_as_the_map_it_computes_not_as_its_parts():
    torch.manual_seed(3)
    net = nn.Sequential(_LoRA(5, 6, 2), nn.Tanh(), nn.Sequential(nn.Linear(6, 6), nn.Linear(6, 4)), nn.Tanh(),
                        _LoRA(4, 3, 1)).double().train()  # dropout on: measured in eval mode
    x = torch.randn(7, 5, dtype=F64)
    with pytest.warns(UserWarning, match=r"0.base: Linear: part of the adapted layer '0'") as caught:
        ds = measure_nfa(net, x)
    message = str(caught[0].message)
    assert "0.A: Linear: part of" in message and "4.B: Linear: part of" in message
    # the Linears in series (2.0 then 2.1) are no adapter: each measured as itself
    assert list(ds.layer.values) == ["0", "2.0", "2.1", "4"] and net.training and net[0].drop.training
    expected = measure_nfa(_merged(net), x)
    for name in ds.layer.values:
        for var in ("nfm", "agop"):
            got, reference = (torch.from_numpy(d[f"{var}[{name}]"].values) for d in (ds, expected))
            assert _relative(got, reference) <= TOL, (var, name)
    np.testing.assert_allclose(ds.uc_nfc.values, expected.uc_nfc.values, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match=r"'0.base' is not measured \(Linear: part of the adapted layer '0'"):
        agop(net, x, ["0.base"])


def test_peft_lora_and_dora_linears_are_measured_merged_and_a_lora_conv_is_refused_with_how_to_merge():
    peft = pytest.importorskip("peft", reason="peft is a test extra (pip install -e .[dev])")
    torch.manual_seed(4)
    net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 6),
                        nn.Tanh(), nn.Linear(6, 3)).double()
    x = torch.randn(5, 3, 4, 4, dtype=F64)
    config = peft.LoraConfig(r=2, target_modules=["3", "5"], init_lora_weights=False, lora_dropout=0.3)
    for model in (peft.get_peft_model(copy.deepcopy(net), config),
                  peft.get_peft_model(copy.deepcopy(net), peft.LoraConfig(r=2, target_modules=["3"], use_dora=True,
                                                                          init_lora_weights=False))):
        model.train()
        with pytest.warns(UserWarning, match="base_layer: Linear: part of the adapted layer 'base_model.model.3'"):
            got = agop(model, x)
        expected = agop(copy.deepcopy(model).merge_and_unload(), x)
        assert sorted(got) == [f"base_model.model.{name}" for name in sorted(expected)]
        for name, reference in expected.items():
            assert _relative(got[f"base_model.model.{name}"], reference) <= TOL, name
    conv = peft.get_peft_model(copy.deepcopy(net), peft.LoraConfig(r=2, target_modules=["0"]))
    with pytest.warns(UserWarning, match=r"base_model.model.0: Conv2d: a peft adapter around a Conv2d, not "
                                         r"measured.*model.merge_and_unload\(\)"):
        assert "base_model.model.0" not in agop(conv, x)


class _Gate(nn.Module):
    """q reaches f only through Σ softmax = 1: its gradient is zero analytically, rounding noise numerically."""

    def __init__(self):
        super().__init__()
        self.q, self.v, self.out = nn.Linear(5, 6), nn.Linear(5, 6), nn.Linear(6, 3)

    def forward(self, x):
        return self.out(self.v(x) * torch.softmax(self.q(x), -1).sum(-1, keepdim=True))


@pytest.mark.parametrize("dtype", [F64, torch.float32])
def test_a_k_zero_to_rounding_gets_nan_nfcs_and_a_note(dtype):
    torch.manual_seed(5)
    model, x = _Gate().to(dtype), torch.randn(9, 5, dtype=dtype)
    assert 0 < float(agop(model, x)["q"].abs().max()) < 1e-6  # not zero: the note is rounding's, not an unused layer's
    with pytest.warns(UserWarning, match=r"q: its K is zero to rounding"):
        ds = measure_nfa(model, x, copy.deepcopy(model))
    assert np.isnan(ds.uc_nfc.sel(layer="q").values).all() and np.isnan(ds.c_nfc.sel(layer="q").values).all()
    assert np.isnan(float(ds.ratio_c_uc.sel(layer="q")))
    assert np.isfinite(ds.uc_nfc.sel(layer=["v", "out"]).values).all() and "zero to rounding" in ds.attrs["notes"]


class _Custom(nn.Module):
    def __init__(self, square=False):
        super().__init__()
        self.weight, self.square = nn.Parameter(torch.randn(4, 4, dtype=F64)), square

    def forward(self, x):
        h = x @ self.weight.T
        return h ** 2 if self.square else h


class _Symmetric(nn.Module):
    def forward(self, w):
        return (w + w.T) / 2


def test_a_parametrized_custom_weight_is_measured_as_computed_or_skipped_naming_the_module():
    torch.manual_seed(6)
    net = nn.Sequential(_Custom(), nn.Tanh(), _Custom(square=True), nn.Tanh(), nn.Linear(4, 2).double())
    for i in (0, 2):
        parametrize.register_parametrization(net[i], "weight", _Symmetric())
    x = torch.randn(5, 4, dtype=F64)
    with pytest.warns(UserWarning, match="does not measure") as caught:
        got = agop(net, x)
    message = str(caught[0].message)
    assert "2: Parametrized_Custom: has a 2-D weight but computes neither" in message and "original" not in message
    assert sorted(got) == ["0", "4"]
    plain = copy.deepcopy(net)
    plain[0] = nn.Linear(4, 4, bias=False).double()
    with torch.no_grad():
        plain[0].weight.copy_(net[0].weight)  # the symmetric weight the module computes with
    assert torch.equal(plain[0].weight, plain[0].weight.T)
    assert _relative(got["0"], agop(plain, x, ["0"])["0"]) <= TOL
