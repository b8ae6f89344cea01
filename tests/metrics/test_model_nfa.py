"""measure_nfa / agop on any nn.Module against closed forms and against the pipeline's own measurements."""

import copy

import numpy as np
import pytest
import torch
import xarray
from torch import nn

from featlearn.metrics import mlp_nfa, nfa
from featlearn.metrics.attention_nfa import attention_feature_covariances, exact_attention_feature_covariances
from featlearn.metrics.conv_nfa import conv_feature_covariances, conv_weight_matrix
from featlearn.metrics.model_nfa import agop, covariances, measure_nfa
from featlearn.models.gpt import GPT, GPTConfig, attention_weights, init_gpt
from featlearn.models.mlp import MLP, init_mlp
from featlearn.models.vgg import VGG11, init_vgg

TOL = 1e-6


def _assert_pipeline_agrees(ds, name, w, w0, k):
    """uc/c NFC (both conventions), R_C, ‖ΔW‖/‖W‖, NFM and AGOP of one layer as the pipeline computes them."""
    pairs = nfa.nfc_pairs(w.double(), w0.double(), k)
    for var in ("uc_nfc", "c_nfc"):
        expected = [nfa.correlation(*pairs[var], c) for c in nfa.CONVENTIONS]
        assert ds[var].sel(layer=name).values == pytest.approx(expected, abs=TOL)
    assert float(ds.ratio_c_uc.sel(layer=name)) == pytest.approx(nfa.ratio_c_uc(pairs), abs=TOL)
    assert float(ds.dw_rel.sel(layer=name)) == pytest.approx(nfa.relative_weight_change(w, w0), abs=TOL)
    for var, matrix in zip(("nfm", "agop"), pairs["uc_nfc"]):
        got = torch.from_numpy(ds[f"{var}[{name}]"].values)
        torch.testing.assert_close(got, matrix, rtol=0, atol=TOL * float(matrix.abs().max()))


def test_agop_of_a_linear_network_is_the_end_to_end_map_exactly():
    # f(x) = W2 W1 x: ∂f/∂x = W2 W1 at every x, so AGOP_1 = (W2W1)ᵀ(W2W1), AGOP_2 = W2ᵀW2 and NFM_1 = W1ᵀW1
    g = torch.Generator().manual_seed(0)
    net = nn.Sequential(nn.Linear(5, 7, bias=False), nn.Linear(7, 3, bias=False)).double()
    w1, w2 = net[0].weight.detach(), net[1].weight.detach()
    x = torch.randn(9, 5, dtype=torch.float64, generator=g)
    got = agop(net, x, batch_size=4)
    torch.testing.assert_close(got["0"], (w2 @ w1).T @ (w2 @ w1), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(got["1"], w2.T @ w2, rtol=1e-12, atol=1e-12)
    ds = measure_nfa(net, x)
    torch.testing.assert_close(torch.from_numpy(ds["nfm[0]"].values), w1.T @ w1, rtol=1e-12, atol=0)
    # the readout's K is the identity, so its NFC is exactly 1 in both conventions
    assert ds.uc_nfc.sel(layer="1").values == pytest.approx([1.0, 1.0], abs=1e-12)
    # on sequences (n, T, d) a Linear acts on every token, and K sums over the T positions of each sample
    tokens = torch.randn(4, 6, 5, dtype=torch.float64, generator=g)
    torch.testing.assert_close(agop(net, tokens)["0"], 6 * (w2 @ w1).T @ (w2 @ w1), rtol=1e-12, atol=1e-12)


def test_mlp_measurement_equals_the_pipelines(moved):
    g = torch.Generator().manual_seed(1)
    init = init_mlp(MLP(6, [9, 8], out=3), [1.0, 1.0], g).double()
    model = moved(init, 2, 0.3)
    x = torch.randn(13, 6, dtype=torch.float64, generator=g)
    ks, _ = mlp_nfa.mlp_feature_covariances(model, x, chunk=5)
    ds = measure_nfa(model, x, init, batch_size=4)
    assert list(ds.layer.values) == ["layers.0", "layers.1", "layers.2"]  # the readout too
    for ell, (layer, layer0) in enumerate(zip(model.hidden, init.hidden)):
        _assert_pipeline_agrees(ds, f"layers.{ell}", layer.weight.detach(), layer0.weight.detach(), ks[ell])


def test_vgg_conv_measurement_equals_the_pipelines_in_patch_space(moved):
    g = torch.Generator().manual_seed(3)
    init = init_vgg(VGG11(width_divisor=32, classes=3), g).double()
    model = moved(init, 4, 0.05)
    model.train()  # dropout: the API measures in eval mode as the pipeline does, then restores the mode
    x = torch.randn(4, 3, 32, 32, dtype=torch.float64, generator=g)
    ks = conv_feature_covariances(model, x, batch_size=3, drop_biases=False)
    names = [f"conv_layers.{i}" for i in range(8)]
    ds = measure_nfa(model, x, init, names, batch_size=3)
    assert model.training and list(ds.layer.values) == names
    for name, conv, conv0, k in zip(names, model.conv_layers, init.conv_layers, ks):
        _assert_pipeline_agrees(ds, name, conv_weight_matrix(conv), conv_weight_matrix(conv0), k)


def _tiny_gpt(moved):
    config = GPTConfig(vocab_size=7, block_size=6, n_layer=2, n_head=2, n_embd=8)
    init = init_gpt(GPT(config), torch.Generator().manual_seed(5)).double()
    model = moved(init, 6, 0.2)
    return init, model, torch.randint(0, 7, (3, 5), generator=torch.Generator().manual_seed(7))


def test_gpt_attention_measurement_equals_the_pipelines(moved):
    init, model, idx = _tiny_gpt(moved)
    ks = exact_attention_feature_covariances(model, idx)  # over all T·V logits of each sequence
    weights, weights0 = attention_weights(model), attention_weights(init)
    names = {(b, p): f"blocks.{b - 1}.attn.c_attn.{p}" for b, p in ks}
    ds = measure_nfa(model, idx, init, list(names.values()))
    for key, name in names.items():
        _assert_pipeline_agrees(ds, name, weights[key], weights0[key], ks[key])


def test_gpt_random_probe_estimate_equals_the_pipelines(moved):
    _, model, idx = _tiny_gpt(moved)
    ks = attention_feature_covariances(model, idx, probes=3, generator=torch.Generator().manual_seed(8))
    got = agop(model, idx, ["blocks.1.attn.c_attn.v"], probes=3, generator=torch.Generator().manual_seed(8))
    expected = nfa.agop(attention_weights(model)[(2, "v")], ks[(2, "v")])
    torch.testing.assert_close(got["blocks.1.attn.c_attn.v"], expected, rtol=1e-10, atol=1e-12)


def test_a_layer_the_outputs_do_not_use_has_zero_agop():
    class Unused(nn.Module):
        def __init__(self):
            super().__init__()
            self.used, self.aside = nn.Linear(3, 2), nn.Linear(3, 4)

        def forward(self, x):
            self.aside(x)
            return self.used(x)

    got = agop(Unused(), torch.randn(5, 3))
    assert torch.count_nonzero(got["aside"]) == 0 and torch.count_nonzero(got["used"]) > 0


@pytest.mark.gpu
def test_on_the_gpu_every_tensor_stays_on_the_inputs_device_and_agrees_with_the_cpu(moved):
    init, model, idx = _tiny_gpt(moved)
    cpu = measure_nfa(model, idx, init)
    cuda = measure_nfa(model.cuda(), idx.cuda(), init.cuda())
    assert all(k.device.type == "cuda" for k in agop(model, idx.cuda()).values())
    for var in ("uc_nfc", "c_nfc", "ratio_c_uc"):
        assert cuda[var].values == pytest.approx(cpu[var].values, abs=TOL)


def test_the_dataset_saves_to_netcdf_with_its_per_layer_matrices(tmp_path):
    pytest.importorskip("netCDF4")  # the netcdf extra
    net = nn.Sequential(nn.Conv2d(2, 3, 3), nn.Flatten(), nn.Linear(12, 2))
    ds = measure_nfa(net, torch.randn(4, 2, 4, 4), copy.deepcopy(net))
    ds.to_netcdf(tmp_path / "nfa.nc")
    back = xarray.load_dataset(tmp_path / "nfa.nc")
    assert back["agop[0]"].shape == (18, 18) and back.uc_nfc.equals(ds.uc_nfc)


@pytest.mark.parametrize("probes", [None, 2])
def test_agop_creates_every_tensor_on_the_inputs_device(probes):
    """On the meta device (which computes nothing), a tensor made on the CPU by mistake would fail to mix with the
    inputs' or come back on the wrong device: the CPU's stand-in for a GPU run."""
    conv = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 3))
    attention = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 1)
    mlp = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3))  # the readout's shortcuts, ReLU's closed form
    for model, x in ((conv, torch.randn(5, 3, 8, 8)), (attention, torch.randn(3, 4, 8)), (mlp, torch.randn(5, 4))):
        found = agop(model.to("meta"), x.to("meta"), probes=probes)
        assert found and {g.device.type for g in found.values()} == {"meta"}
        # K and K̄ against an init network, the pipeline's path (``covariances``)
        ks, k_bars = covariances(model, x.to("meta"), init=copy.deepcopy(model), probes=probes)
        assert ks.keys() == k_bars.keys() and {k.device.type for k in (*ks.values(), *k_bars.values())} == {"meta"}


def _mlp_net():
    torch.manual_seed(20)
    return nn.Sequential(nn.Linear(5, 6), nn.ReLU(), nn.Linear(6, 3)).double()


class _Named(nn.Module):
    """Outputs in a dict, as torchvision's segmentation models return them."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return {"out": self.net(x)}


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda net, x: measure_nfa(net, x[:0]), ValueError, r"x= has no samples"),
    (lambda net, x: measure_nfa(net, x[0]), ValueError, r"unbatched"),
    (lambda net, x: measure_nfa(net, x, layers=[]), ValueError, r"layers=\[\] selects no layer"),
    (lambda net, x: measure_nfa(net, x, layers="0"), TypeError, r"not the string '0': pass \['0'\]"),
    (lambda net, x: measure_nfa(net, x, layers=["9"]), ValueError, r"no measurable layers named \['9'\]"),
    (lambda net, x: measure_nfa(net, x, probes=0), ValueError, r"probes= must be a positive number"),
    (lambda net, x: measure_nfa(net, x, batch_size=0), ValueError, r"batch_size= must be a positive"),
    (lambda net, x: measure_nfa(net, x, sample_dim=2), ValueError, r"sample_dim= must be a dimension of x"),
    (lambda net, x: measure_nfa(nn.Sequential(nn.ReLU()), x), ValueError, r"no measurable layer in this Sequential"),
    (lambda net, x: measure_nfa(net, x, nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 3)).double()),
     ValueError, r"init=: layer '0' has W of shape \(6, 5\) in the model but \(7, 5\) in init"),
    (lambda net, x: measure_nfa(net, x, nn.Sequential(nn.Linear(5, 6)).double()), ValueError,
     r"init= has no module '2'"),
    (lambda net, x: measure_nfa(net, x, output=lambda out: out.sum()), ValueError, r"output= gave a scalar"),
    (lambda net, x: measure_nfa(_Named(net), x), TypeError, r"returned \(dict\); pass output=.*out\[\"out\"\]"),
    (lambda net, x: measure_nfa(torch.jit.script(net), x), TypeError, r"model= is a TorchScript module"),
    (lambda net, x: measure_nfa(net, x, torch.jit.trace(net, x)), TypeError, r"init= is a TorchScript module"),
])
@pytest.mark.filterwarnings("ignore:`torch.jit:FutureWarning")  # deprecated, but users still hold scripted models
def test_every_bad_input_gets_a_message_naming_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call(_mlp_net(), torch.randn(4, 5, dtype=torch.float64))


def test_a_compiled_or_data_parallel_model_is_measured_through_the_module_it_wraps():
    """torch.compile's graph runs without the forward hooks that measure, nn.DataParallel's replicas would run them on
    other devices: the module they wrap is measured instead, under its own layer names."""
    net, x = _mlp_net(), torch.randn(4, 5, dtype=torch.float64)
    init = copy.deepcopy(net)
    with torch.no_grad():
        for layer in (net[0], net[2]):
            layer.weight.add_(0.1)
    xarray.testing.assert_identical(measure_nfa(torch.compile(net), x, torch.compile(init)), measure_nfa(net, x, init))
    assert agop(torch.compile(net), x).keys() == {"0", "2"}
    xarray.testing.assert_identical(measure_nfa(nn.DataParallel(torch.compile(net)), x), measure_nfa(net, x))
    got, expected = covariances(torch.compile(net), x, init=torch.compile(init)), covariances(net, x, init=init)
    assert all(torch.equal(got[i][name], expected[i][name]) for i in (0, 1) for name in expected[0])


def test_called_under_inference_mode_it_says_so_and_inference_tensors_are_fine_outside():
    net = _mlp_net()
    with torch.inference_mode():
        x = torch.randn(4, 5, dtype=torch.float64)
        with pytest.raises(RuntimeError, match="inside torch.inference_mode"):
            measure_nfa(net, x)
    with torch.no_grad():  # gradients are turned back on inside
        torch.testing.assert_close(agop(net, x)["2"], 1.0 * net[2].weight.detach().T @ net[2].weight.detach())


def test_samples_that_interact_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="samples interact.*BatchNorm without running statistics"):
        measure_nfa(nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6, track_running_stats=False), nn.Linear(6, 2)),
                    torch.randn(10, 4))

    class Centred(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            return self.fc(x - x.mean(0))

    with pytest.raises(ValueError, match="samples interact at layer 'fc'"):
        agop(Centred(), torch.randn(6, 4))
    # in half precision too, whose rounding unit (bfloat16's 0.0078) is coarser than what the interaction moves
    for dtype in (torch.bfloat16, torch.float16):
        net = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6, track_running_stats=False), nn.Linear(6, 2))
        with pytest.raises(ValueError, match="samples interact"):
            agop(net.to(dtype), torch.randn(10, 4, dtype=dtype))
    # BatchNorm with running statistics, in train mode: measured in eval mode, where samples are independent
    bn = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.Linear(6, 2)).train()
    assert set(agop(bn, torch.randn(10, 4))) == {"0", "2"} and bn.training


def test_sequence_first_inputs_are_measured_with_sample_dim_and_refused_without():
    torch.manual_seed(21)
    first = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=False).double()
    batch_first = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True).double()
    batch_first.load_state_dict(first.state_dict())
    x = torch.randn(5, 3, 8, dtype=torch.float64)  # (T, N, E)
    with pytest.raises(ValueError, match="pass sample_dim="):
        measure_nfa(first, x)
    got = measure_nfa(first, x, sample_dim=1)
    expected = measure_nfa(batch_first, x.transpose(0, 1))  # the batch-first path, checked against torch.func
    assert got.attrs["k_samples"] == 3 and got.attrs["sample_dim"] == 1
    for name in expected.layer.values:
        torch.testing.assert_close(torch.from_numpy(got[f"agop[{name}]"].values),
                                   torch.from_numpy(expected[f"agop[{name}]"].values), rtol=1e-10, atol=1e-12)


def test_layers_not_measured_are_named_in_one_warning_and_the_attributes():
    class Zoo(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb, self.rnn = nn.Embedding(7, 4), nn.LSTM(4, 4, batch_first=True)
            self.up, self.bil, self.fc = nn.ConvTranspose1d(4, 4, 2), nn.Bilinear(4, 4, 4), nn.Linear(4, 2)
            # matrices outside any layer module: a raw weight, stacked experts; a token (one long dimension) is not
            self.raw, self.experts = nn.Parameter(torch.randn(4, 4)), nn.Parameter(torch.randn(2, 4, 4))
            self.token = nn.Parameter(torch.zeros(1, 1, 4))

        def forward(self, idx):
            h, _ = self.rnn(self.emb(idx))
            h = self.up(h.transpose(1, 2)).transpose(1, 2)
            h = h @ self.raw + torch.einsum("btd,edf->btf", h, self.experts) + self.token
            return self.fc(self.bil(h, h)).sum(1)

    with pytest.warns(UserWarning, match="does not measure") as caught:
        ds = measure_nfa(Zoo(), torch.randint(0, 7, (3, 5)))
    (warning,) = [w for w in caught if "does not measure" in str(w.message)]
    for name in ("emb: Embedding: an embedding is a Linear on one-hot inputs", "rnn: LSTM", "up: ConvTranspose1d",
                 "bil: Bilinear", "raw: (4, 4) in Zoo: a parameter of matrix shape", "experts: (2, 4, 4) in Zoo"):
        assert name in str(warning.message) and name in ds.attrs["skipped_layers"]
    assert "token" not in ds.attrs["skipped_layers"]
    assert list(ds.layer.values) == ["fc"]
    with pytest.raises(ValueError, match="'emb' is not measured"):
        agop(Zoo(), torch.randint(0, 7, (3, 5)), ["emb"])


def test_a_linear_like_module_is_recognised_by_what_it_computes():
    class Transposed(nn.Module):  # weight stored in×out, as transformers' Conv1D
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(5, 3, dtype=torch.float64))

        def forward(self, x):
            return x @ self.weight

    class Squared(nn.Module):  # a 2-D weight that is not a linear map
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(3, 3, dtype=torch.float64))

        def forward(self, x):
            return (x @ self.weight.T) ** 2

    net = nn.Sequential(Transposed(), nn.Tanh(), Squared(), nn.Linear(3, 2).double())
    with pytest.warns(UserWarning, match="2: Squared: has a 2-D weight but computes neither"):
        got = agop(net, torch.randn(4, 5, dtype=torch.float64))
    assert set(got) == {"0", "3"} and got["0"].shape == (5, 5)


def test_nan_results_explain_themselves():
    torch.manual_seed(22)
    net = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3))
    nn.init.zeros_(net[2].weight)  # a zero-initialised head, as torchvision's ViT
    with pytest.warns(UserWarning, match="AGOP is zero") as caught:
        ds = measure_nfa(net, torch.randn(5, 4), copy.deepcopy(net))
    message = " ".join(str(w.message) for w in caught)
    assert "0: its AGOP is zero" in message and "2: its W is zero" in message and "equals init's" in message
    assert np.isnan(ds.uc_nfc.values).all() and "AGOP is zero" in ds.attrs["notes"]


def test_matrices_false_builds_no_matrix_and_gives_the_same_numbers(moved):
    g = torch.Generator().manual_seed(23)
    net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 4 * 4, 50), nn.ReLU(),
                        nn.Linear(50, 3)).double()  # patches of 27 > 4 channels; 50 > 64 inputs: both forms
    init = copy.deepcopy(net)
    net = moved(net, 24, 0.2)
    x = torch.randn(6, 3, 6, 6, dtype=torch.float64, generator=g)
    full, lean = measure_nfa(net, x, init), measure_nfa(net, x, init, matrices=False)
    assert not [name for name in lean.data_vars if "[" in name]
    for var in ("uc_nfc", "c_nfc", "ratio_c_uc", "dw_rel"):
        np.testing.assert_allclose(lean[var].values, full[var].values, rtol=1e-10, atol=1e-12)
