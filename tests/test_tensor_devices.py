"""Device-correctness without a GPU: every tensor is created on its inputs' device.

Each heavy code path runs with model and data on torch's ``meta`` device. A tensor created without ``device=`` lands
on the CPU, and torch refuses to mix it with meta tensors ("Tensor on device cpu is not on the expected device
meta"), exactly as it refuses cpu with cuda on a GPU machine. So a mix-up fails here, in CI, before anyone has a GPU.
Paths that turn results into Python numbers (``float``) cannot run on meta; their device logic is covered by the
GPU parity test at the end, which runs where CUDA exists.
"""

from __future__ import annotations

import pytest
import torch

from featlearn.metrics import nfa
from featlearn.metrics import tangent as tg
from featlearn.metrics.attention_nfa import attention_feature_covariances
from featlearn.metrics.collapse_measure import _head_inputs, agop_and_sqrt, preactivation_jacobians
from featlearn.metrics.conv_nfa import conv_feature_covariances
from featlearn.metrics.jacobians import layer_jacobians
from featlearn.models.collapse_nets import CollapseNet, init_collapse_net
from featlearn.models.gpt import GPT, GPTConfig, init_gpt
from featlearn.models.mlp import MLP, init_mlp
from featlearn.models.vgg import VGG11, init_vgg

META = torch.device("meta")


def _gen() -> torch.Generator:
    return torch.Generator().manual_seed(0)


def _on_meta(t: torch.Tensor | dict | list) -> None:
    items = t.values() if isinstance(t, dict) else t if isinstance(t, list | tuple) else [t]
    for item in items:
        assert item.device == META, f"result on {item.device}, not on the inputs' device"


def test_mlp_layer_jacobians_and_nfa_algebra():
    model = init_mlp(MLP(8, [16, 16], out=3), [1.0, 1.0], _gen()).to(META)
    x = torch.empty(5, 8, device=META)
    jacs = layer_jacobians(model, x)
    _on_meta(jacs)
    assert jacs[0].shape == (5, 3, 16)
    k = nfa.ptk_feature_covariance(jacs[0])
    w = model.hidden[0].weight
    pairs = nfa.nfc_pairs(w, w, k, k)
    _on_meta([m for pair in pairs.values() for m in pair])


def test_conv_feature_covariances():
    model = init_vgg(VGG11(width_divisor=32, classes=3), _gen()).to(META)
    _on_meta(conv_feature_covariances(model, torch.empty(2, 3, 32, 32, device=META)))


def test_attention_feature_covariances():
    model = init_gpt(GPT(GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=12)), _gen()).to(META)
    idx = torch.zeros(3, 5, dtype=torch.long, device=META)
    _on_meta(attention_feature_covariances(model, idx, probes=2, generator=_gen()))


def test_collapse_head_agop():
    model = init_collapse_net(CollapseNet(None, 1, 12, classes=3, width=8), 1.0, _gen()).to(META)
    x = torch.empty(6, 12, device=META)
    hs = _head_inputs(model, x, batch_size=4)
    _on_meta(hs)
    k = nfa.ptk_feature_covariance(preactivation_jacobians(model, 1, hs[0]))
    _on_meta(list(agop_and_sqrt(model.head[0].weight, k)))


def test_tangent_features_and_kernels():
    model = torch.nn.Sequential(torch.nn.Linear(4, 7), torch.nn.ReLU(), torch.nn.Linear(7, 1)).to(META)
    x = torch.empty(6, 4, device=META)
    blocks = tg.tangent_feature_blocks(model, x)
    _on_meta(blocks)
    _on_meta(tg.tangent_kernel(blocks))
    theta = tg.parameters(model)
    _on_meta(tg.linearized_change(blocks, theta, theta))


def test_the_old_layer_jacobians_mistake_is_caught():
    """The bug this file guards against: zero shifts made without ``device=`` (alignment Fig 12 crashed on CUDA)."""
    model = MLP(8, [16]).to(META)
    x = torch.empty(5, 8, device=META)
    shifts = [torch.zeros(5, 16, requires_grad=True)]
    with pytest.raises(RuntimeError, match="device"):
        model(x, shifts)
