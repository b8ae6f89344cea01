"""The papers' NFA measurements on any nn.Module: per layer, the NFM, the AGOP and the UC/C-NFC (``featlearn.
measure_nfa``), computed by the pipeline's own functions (``nfa``) from the one K sum, ``k_sum.covariances``, which
the MLP, conv and attention families (``mlp_nfa``, ``conv_nfa``, ``attention_nfa``) call on their models too, so the
API and the stores cannot drift apart. The library takes the sum's fast float64 products (``gram.fast``); the
pipeline's families keep the pinned ones their published stores were computed with.

K, its conventions and the checks (samples must not interact) are ``k_sum``'s and ``interaction``'s; ``covariances``
and ``logits`` are importable from here too, as the families call ``model_nfa.covariances``.
"""

from __future__ import annotations

import warnings
from collections.abc import Collection

import numpy as np
import torch
import xarray as xr
from torch import nn

from featlearn.metrics import nfa
from featlearn.metrics.interaction import Outputs
from featlearn.metrics.k_sum import (
    checked_init,
    checked_x,
    chosen_layers,
    covariances,
    k_sums,
    listed,
    logits,
    unwrapped,
)
from featlearn.metrics.layers import Layer

__all__ = ["LONG_NAMES", "agop", "covariances", "logits", "measure_nfa"]
# A layer's K is zero to rounding when its trace is at most (ROUNDING·ε)² of the largest of the layers measured with
# it, ε its gradients' dtype's: gradients ~100 roundings below every other layer's (a float64 attention's q and k over
# one token gave K ~1e-44 of the v's; float32's smallest legitimate ratios, vanishing gradients, lie far above).
ROUNDING = 100.0
LONG_NAMES = nfa.LONG_NAMES | {
    "nfm": "NFM WᵀW",
    "agop": "AGOP WᵀKW with respect to the layer input",
}


def agop(model: nn.Module, x: torch.Tensor, layers: Collection[str] | None = None, *, batch_size: int = 256,
         probes: int | None = None, generator: torch.Generator | None = None, output: Outputs = logits,
         sample_dim: int = 0, mask: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """The AGOP WᵀKW (float64, on x's device) of every layer of ``model`` over the samples ``x`` (n, …), by layer
    name; ``layers`` picks some by name. Options as ``measure_nfa``."""
    x, sample_dim = checked_x(x, batch_size, probes, sample_dim)
    model = unwrapped(model)
    found, _ = chosen_layers(model, layers, warn=True)
    (ks,) = k_sums(model, x, found, None, batch_size, probes, generator, output, sample_dim, fast=True, mask=mask)
    return {layer.name: nfa.agop(layer.matrix(model), ks[layer.name]) for layer in found}


class _Pair:
    """One NFC's two sides, A = WᵀW and B = WᵀKW (k_ℓ × k_ℓ), as the Frobenius products the NFCs and R_C need. Built
    as matrices when they are returned or k_ℓ ≤ k_{ℓ+1}; otherwise from G = WWᵀ (k_{ℓ+1} × k_{ℓ+1}): ⟨A, B⟩ = ⟨G², K⟩,
    ‖A‖² = ‖G‖², ‖B‖² = ⟨KG, GK⟩, ΣA = ‖W1‖², ΣB = (W1)ᵀK(W1). A 512-channel 3×3 conv's G is 512², its A 4608²."""

    def __init__(self, w: torch.Tensor, k: torch.Tensor, matrices: bool) -> None:
        self.matrices = (nfa.nfm(w), nfa.agop(w, k)) if matrices or w.shape[1] <= w.shape[0] else None
        if self.matrices is not None:
            a, b = self.matrices
            self.inner = float((a * b).sum())
            return
        g, s = w @ w.T, w.sum(1)
        kg = k @ g
        self.inner = float((g @ g * k).sum())
        self.norms2 = (float((g * g).sum()), float((kg * kg.T).sum()))
        self.sums = (float(s @ s), float(s @ k @ s))
        self.entries = w.shape[1] ** 2

    def correlation(self, convention: str) -> float:
        """ρ(A, B) in ``convention``, as ``nfa.correlation``; NaN when either side is zero."""
        if self.matrices is not None:
            return nfa.correlation(*self.matrices, convention)
        if convention not in nfa.CONVENTIONS:
            raise ValueError(f"unknown correlation convention {convention!r}; allowed: {nfa.CONVENTIONS}")
        inner, (aa, bb) = self.inner, self.norms2
        if convention == "pearson":
            (sa, sb), m = self.sums, self.entries
            inner, aa, bb = inner - sa * sb / m, aa - sa * sa / m, bb - sb * sb / m
        denom = max(aa, 0.0) ** 0.5 * max(bb, 0.0) ** 0.5
        return inner / denom if denom > 0 else float("nan")


def _rounding(k: torch.Tensor, dtype: torch.dtype, top: float) -> bool:
    """Whether K is not zero but zero to rounding (``ROUNDING``; ``top``, the largest trace of the layers measured
    with it): its NFCs would be noise's."""
    trace = float(k.diagonal().sum())
    return 0 < trace <= (ROUNDING * torch.finfo(dtype).eps) ** 2 * top


def _notes(layer: Layer, w: torch.Tensor, w0: torch.Tensor | None, k: torch.Tensor, rounding: bool) -> dict[str, str]:
    """Why a layer's NFCs would be NaN (or R_C zero), by cause."""
    notes = {}
    if not torch.any(k != 0):
        notes["zero_agop"] = ("its AGOP is zero: no output depends on it at these inputs (a zero-initialised layer "
                              "after it, as torchvision's ViT head at init, or an unused layer), so its NFCs are NaN")
    if rounding:
        notes["rounding_agop"] = (f"its K is zero to rounding (its trace is at most ({ROUNDING:g}·ε)² of the largest "
                                  "layer's, ε its dtype's): no output depends on it beyond rounding (attention over "
                                  "a single token, whose softmax passes no gradient to q and k), so its NFCs are NaN "
                                  "(its AGOP is kept as computed)")
    if not torch.any(w != 0):
        notes["zero_w"] = "its W is zero (a zero-initialised layer), so its NFM and NFCs are zero or NaN"
    if w0 is not None and torch.equal(w, w0):
        notes["unmoved"] = ("its W equals init's (W − W₀ = 0: init= is the model itself, or the layer has not moved), "
                            "so its centered NFC is NaN and R_C zero")
    return notes


def measure_nfa(model: nn.Module, x: torch.Tensor, init: nn.Module | None = None,
                layers: Collection[str] | None = None, *, batch_size: int = 256, probes: int | None = None,
                generator: torch.Generator | None = None, output: Outputs = logits,
                matrices: bool = True, sample_dim: int = 0, mask: torch.Tensor | None = None) -> xr.Dataset:
    """NFA quantities of every Linear(-like), conv and attention projection of ``model`` over the samples ``x``, on
    x's device.

    ``x``: the model's input, samples on dimension ``sample_dim`` (1 for a sequence-first (T, N, …) input); the
    outputs f must have one row per sample too (any dimension; checked). Samples must not interact: one sample of a
    small batch is changed first, and a model whose other outputs move (BatchNorm without running statistics, batch
    centring) is refused. ``init``: the same network at initialization (W₀ for the centered NFC). ``layers``: a list
    of names to measure (default all found; layers with weights that are not measured, such as embeddings, are
    named in one warning and in ``attrs["skipped_layers"]``). ``probes``: estimate K from that many Gaussian probes
    of the outputs instead of the exact sum over outputs (worth it past ~100 outputs per sample), drawn from
    ``generator`` (default seed 0). ``output``: f from what the model returns. ``matrices``: keep every layer's NFM
    and AGOP, float64 (in patch space a 512-channel 3×3 conv's are 4608² each); without, they are not built.
    ``mask``: boolean over f's leading dimensions (f's order, e.g. (n, T) for per-token logits (n, T, V)), True where
    an output is a sample's own, False at padding, whose outputs then add nothing to K (padded batches: the model
    must keep padding out of the real positions' outputs, with an attention mask or right padding under causal
    attention; docs/own-model.md).

    A layer whose output the samples of a batch share (computed once and broadcast: a table or prototypes through a
    layer) is summed one sample at a time, with a warning; an adapted layer (LoRA: W + BA) is measured as the one
    map it computes; a layer whose K is zero to rounding gets NaN NFCs and a note.

    Returns, on the dimensions ``layer`` (module names; a fused or nn.MultiheadAttention projection as
    ``<module>.q``, ``.k``, ``.v``, ``.out_proj``) and ``convention`` (cosine, the paper's ρ; pearson, the authors'
    Fig 2 code): ``uc_nfc``; with ``init`` also ``c_nfc``, ``ratio_c_uc``, ``dw_rel``; with ``matrices``
    ``nfm[<layer>]`` and ``agop[<layer>]`` on ``input_i[<layer>]``, ``input_j[<layer>]``. Variable names are the
    pipeline's stores'. Where a result is NaN for a reason (a zero AGOP, an init equal to the model), a warning and
    ``attrs["notes"]`` say which layers and why.
    """
    x, sample_dim = checked_x(x, batch_size, probes, sample_dim)
    model, init = unwrapped(model), unwrapped(init, "init")
    found, skipped = chosen_layers(model, layers, warn=True)
    if init is not None:
        checked_init(model, init, found)
    (ks,) = k_sums(model, x, found, None, batch_size, probes, generator, output, sample_dim, fast=True, mask=mask)
    top = max((float(k.diagonal().sum()) for k in ks.values()), default=0.0)
    conventions = list(nfa.CONVENTIONS)
    rows: dict[str, list] = {name: [] for name in ("uc_nfc", "c_nfc", "ratio_c_uc", "dw_rel")}
    arrays, notes = {}, {}
    for layer in found:
        w, k = layer.matrix(model), ks[layer.name]
        noise = _rounding(k, w.dtype, top)
        w = w.to(torch.float64)
        w0 = None if init is None else layer.matrix(init).to(device=w.device, dtype=torch.float64)
        for cause, why in _notes(layer, w, w0, k, noise).items():
            notes.setdefault(cause, (why, []))[1].append(layer.name)
        uc = _Pair(w, k, matrices)
        nan = [float("nan")] * len(conventions)
        rows["uc_nfc"].append(nan if noise else [uc.correlation(c) for c in conventions])
        if w0 is not None:
            c_pair = _Pair(w - w0, k, False)
            rows["c_nfc"].append(nan if noise else [c_pair.correlation(c) for c in conventions])
            rows["ratio_c_uc"].append(c_pair.inner / uc.inner if uc.inner != 0 and not noise else float("nan"))
            rows["dw_rel"].append(nfa.relative_weight_change(w, w0))
        if matrices:
            dims = (f"input_i[{layer.name}]", f"input_j[{layer.name}]")
            for name, matrix in zip(("nfm", "agop"), uc.matrices):
                arrays[f"{name}[{layer.name}]"] = (dims, matrix.cpu().numpy(), {"long_name": LONG_NAMES[name],
                                                                                "units": "1"})
    ds = xr.Dataset(coords={
        "layer": ("layer", [layer.name for layer in found], {"long_name": "module name (.q/.k/.v: an attention part)"}),
        "convention": ("convention", conventions, {"long_name": "correlation convention: cosine = the paper's ρ, "
                                                                "pearson = the authors' Fig 2 code"}),
        "kind": ("layer", [layer.kind for layer in found], {"long_name": "linear, conv or attention"}),
    })
    for name, values in rows.items():
        if values:
            dims = ("layer", "convention") if name.endswith("nfc") else ("layer",)
            ds[name] = (dims, np.array(values), {"long_name": LONG_NAMES[name], "units": "1"})
    ds = ds.assign(arrays)
    told = {", ".join(names): why for why, names in notes.values()}
    if told:
        warnings.warn("measure_nfa: some results are NaN or zero, and why:\n" + listed(told), stacklevel=2)
    ds.attrs.update(k_normalization="K = (1/n) Σ_samples Σ_positions Σ_outputs g gᵀ, g = ∂f/∂h; AGOP = WᵀKW",
                    k_samples=x.shape[sample_dim], sample_dim=sample_dim,
                    k_estimator="exact" if probes is None else f"{probes} Gaussian probes",
                    conv_layers="W = weight as (C_out, C_in·kernel), the AGOP over unfolded patches",
                    skipped_layers="; ".join(f"{name}: {why}" for name, why in skipped.items()) or "none",
                    notes="; ".join(f"{names}: {why}" for names, why in told.items()) or "none")
    return ds
