"""NFA quantities of attention layers (docs/figures/alignment.md, Attention layers; Fig 2D).

In block b, q_t = W_q a_t with a_t = LN_1(x_t) the layer input (likewise k, v), so NFM_q = W_qᵀW_q and
AGOP_q = W_qᵀ K_q W_q (``nfa.nfm``, ``nfa.agop`` on ``gpt.attention_weights``), with
K_q = (1/B) Σ_sequences Σ_t Σ_outputs (∂f/∂q_t)(∂f/∂q_t)ᵀ ∈ R^{C×C}: 1/B over sequences as ``nfa`` has 1/n over
samples. The outputs f of a sequence are its T×V next-token logits by default ([U], our choice). Every gradient comes
from zero shifts on the c_attn outputs (``model_nfa.covariances``'s hooks, as ``GPT.forward(idx, qkv_shifts)`` would
add them): one backward pass gives ∂/∂q_t, ∂/∂k_t and ∂/∂v_t of every block, sequence and position.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
import torch.nn.functional as F
import xarray as xr

from featlearn.metrics import model_nfa, nfa
from featlearn.metrics.layers import module_names
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
    ``targets``_t) per sequence, the alternative; ``probes`` and ``generator`` are unused.
    Measured in eval mode (dropout off), the model's modes restored after; no parameter gradient is made.
    """
    if target not in TARGETS:
        raise ValueError(f"unknown attention NFA target {target!r}; allowed: {TARGETS}")
    if target == "loss":
        if targets is None:
            raise ValueError('target="loss" needs targets, the next-token ids of shape (B, T)')
        return _measured(model, idx, output=functools.partial(_sequence_losses, targets=targets))
    if probes < 1:
        raise ValueError(f"probes must be >= 1 (got {probes})")
    return _measured(model, idx, probes=probes, generator=generator)


def exact_attention_feature_covariances(model: GPT, idx: torch.Tensor) -> Covariances:
    """The exact K of ``attention_feature_covariances`` (target logits): one backward pass per logit (t, v), batched
    over sequences. T·V passes: for tests on tiny models."""
    return _measured(model, idx)  # the outputs of a sequence are its T·V logits, in (t, v) order


def _sequence_losses(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Σ_t cross-entropy(logits_t, targets_t) of every sequence, (B, 1): one output per sequence."""
    return F.cross_entropy(logits.transpose(1, 2), targets, reduction="none").sum(1, keepdim=True)


def _measured(model: GPT, idx: torch.Tensor, **options: object) -> Covariances:
    """K of every block's q, k, v from the library's sum (``model_nfa.covariances``, in eval mode), by
    (block, proj). All sequences make one batch: the probes are drawn per batch, over (B, T, V) as documented above,
    and the loss target's ``targets`` are the whole batch's."""
    paths = module_names(model, [block.attn.c_attn for block in model.blocks])
    keys = {f"{path}.{proj}": (b, proj) for b, path in enumerate(paths, start=1) for proj in "qkv"}
    ks, _ = model_nfa.covariances(model, idx, keys, batch_size=len(idx), **options)
    return {key: ks[name] for name, key in keys.items()}


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
