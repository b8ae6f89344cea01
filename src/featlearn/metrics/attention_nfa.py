"""NFA quantities of attention layers (alignment spec §1.12, Fig 2D).

In block b, q_t = W_q a_t with a_t = LN_1(x_t) the layer input (likewise k, v), so NFM_q = W_qᵀW_q and
AGOP_q = W_qᵀ K_q W_q (``nfa.nfm``, ``nfa.agop`` on ``gpt.attention_weights``), with
K_q = (1/B) Σ_sequences Σ_t Σ_outputs (∂f/∂q_t)(∂f/∂q_t)ᵀ ∈ R^{C×C}: 1/B over sequences as ``nfa`` has 1/n over
samples. The outputs f of a sequence are its T×V next-token logits by default ([U], spec §1.12). Every gradient comes
from zero shifts on the c_attn outputs (``GPT.forward(idx, qkv_shifts)``): one backward pass gives ∂/∂q_t, ∂/∂k_t and
∂/∂v_t of every block, sequence and position.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable

import numpy as np
import torch
import torch.nn.functional as F
import xarray as xr

from featlearn.metrics import nfa
from featlearn.metrics.jacobians import output_gradients, zero_shifts
from featlearn.models.gpt import GPT, attention_weights
from featlearn.train import evaluate, token_batch, training_tensors

TARGETS = ("logits", "loss")
Covariances = dict[tuple[int, str], torch.Tensor]


def attention_feature_covariances(
    model: GPT,
    idx: torch.Tensor,
    probes: int,
    generator: torch.Generator,
    target: str = "logits",
    targets: torch.Tensor | None = None,
) -> Covariances:
    """K for every (block, proj), block 1-based and proj in "q", "k", "v"; C×C float64; ``idx`` (B, T) token ids.

    ``target="logits"``: random-probe estimate K ≈ (1/M) Σ_m (1/B) Σ_{b,t} g gᵀ with g = ∂(uᵀ logits)/∂q_t and
    u ~ N(0, I) over (B, T, V) drawn on the CPU from ``generator`` (M = ``probes``). Unbiased because E[uuᵀ] = I,
    and sequences do not interact, so u's other sequences add nothing in expectation. One forward pass, then one
    backward pass per probe. ``target="loss"``: the exact K of the one output Σ_t cross-entropy(logits_t,
    ``targets``_t) per sequence, the spec's alternative; ``probes`` and ``generator`` are unused.
    Measured on an eval-mode copy (dropout off); ``model`` is left untouched.
    """
    if target not in TARGETS:
        raise ValueError(f"unknown attention NFA target {target!r}; allowed: {TARGETS}")
    net = copy.deepcopy(model).eval().requires_grad_(False)
    shifts = _zero_shifts(net, idx)
    logits = net(idx, shifts)
    if target == "loss":
        if targets is None:
            raise ValueError('target="loss" needs targets, the next-token ids of shape (B, T)')
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
        return _covariances([torch.autograd.grad(loss, shifts)], net, len(idx))
    if probes < 1:
        raise ValueError(f"probes must be >= 1 (got {probes})")
    passes = (
        torch.autograd.grad((_probe(logits, generator) * logits).sum(), shifts, retain_graph=m < probes - 1)
        for m in range(probes)
    )
    return _covariances(passes, net, probes * len(idx))


def exact_attention_feature_covariances(model: GPT, idx: torch.Tensor) -> Covariances:
    """The exact K of ``attention_feature_covariances`` (target logits): one backward pass per logit (t, v), batched
    over sequences. T·V passes: for tests on tiny models."""
    net = copy.deepcopy(model).eval().requires_grad_(False)
    shifts = _zero_shifts(net, idx)
    # the outputs of a sequence are its T·V logits, in (t, v) order
    return _covariances(output_gradients(net(idx, shifts).flatten(1), shifts), net, len(idx))


def _probe(logits: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """u ~ N(0, I) shaped like ``logits`` (B, T, V), drawn on the CPU so a seed gives the same u on any device."""
    return torch.randn(logits.shape, generator=generator, dtype=logits.dtype).to(logits.device)


def _zero_shifts(net: GPT, idx: torch.Tensor) -> list[torch.Tensor]:
    """One (B, T, 3C) zero tensor per block, in the model's dtype, to differentiate against."""
    shape = (*idx.shape, 3 * net.config.n_embd)
    return zero_shifts([shape] * len(net.blocks), net.lm_head.weight.dtype, idx.device)


def _covariances(passes: Iterable[tuple[torch.Tensor, ...]], net: GPT, denominator: int) -> Covariances:
    """Σ over passes, sequences and positions of g gᵀ for q, k, v of every block, divided by ``denominator``."""
    C = net.config.n_embd
    ks = {}
    for grads in passes:
        for b, g in enumerate(grads, start=1):
            for i, proj in enumerate("qkv"):
                flat = g[..., i * C : (i + 1) * C].reshape(-1, C).to(torch.float64)
                ks[(b, proj)] = ks.get((b, proj), 0) + flat.T @ flat
    return {key: k / denominator for key, k in ks.items()}


class Measurement:
    """Family ``attention_nfa`` of ``metrics.measure``: UC/C-NFC of every block's W_q, W_k, W_v (input LN₁(x_t)) with
    the random-probe K over all next-token logits on fixed training windows, and the validation loss, per snapshot."""

    def __init__(self, spec: dict, data: dict, init: GPT, device: torch.device) -> None:
        m = spec["measure"]
        tensors, block = training_tensors(data), spec["model"]["block_size"]
        windows = torch.Generator().manual_seed(0)  # the same windows for every snapshot and seed, on any device
        self.idx, _ = (t.to(device) for t in token_batch(tensors["tokens"], m["windows"], block, windows))
        self.val = [t.to(device) for t in token_batch(tensors["val_tokens"], m["windows"], block, windows)]
        self.w0 = {k: w.clone() for k, w in attention_weights(init).items()}
        self.blocks = sorted({b for b, _ in self.w0})
        self.keys = [(b, proj) for b in self.blocks for proj in "qkv"]
        self.probes, self.seed = m["probes"], spec["seed"]
        self.estimator = f"{m['probes']} Gaussian probes over all next-token logits, {m['windows']} windows"

    def snapshot(self, step: int, model: GPT) -> dict[str, object]:
        ks = attention_feature_covariances(model, self.idx, self.probes, torch.Generator().manual_seed(self.seed))
        weights = attention_weights(model)
        w, w0, k = ([d[key] for key in self.keys] for d in (weights, self.w0, ks))
        nfcs = nfa.nfc_columns(w, w0, k, step == 0)  # one row per (block, projection)
        return {**{name: v.reshape(len(self.blocks), 3, *v.shape[1:]) for name, v in nfcs.items()
                   if name != "ratio_c_uc"}, "val_loss": evaluate(model, *self.val, "cross_entropy")}

    def dataset(self, values: dict[str, np.ndarray], time_labels: xr.Dataset) -> xr.Dataset:
        ds = time_labels.assign_coords(block=self.blocks, proj=list("qkv"), convention=list(nfa.CONVENTIONS))
        for name, v in values.items():
            ds[name] = (("step", "block", "proj", "convention")[: v.ndim], v)
        ds.attrs["k_estimator"] = self.estimator
        return ds

    def extras(self) -> xr.Dataset:
        return xr.Dataset()
