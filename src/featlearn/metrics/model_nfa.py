"""The papers' NFA measurements on any nn.Module: per layer, the NFM, the AGOP and the UC/C-NFC (``featlearn.
measure_nfa``), computed by the pipeline's own functions (``nfa``, ``jacobians.output_gradients``).

For every layer of ``layers.find_layers``, h = W p at every sample and position p, and

    K = (1/n) Σ_samples Σ_positions Σ_outputs (∂f_j/∂h)(∂f_j/∂h)ᵀ,   AGOP = WᵀKW = (1/n) Σ Σ Σ (∂f_j/∂p)(∂f_j/∂p)ᵀ,

the pipeline's convention for MLPs (alignment spec §1.3), conv layers in patch space (§1.11) and attention
projections (§1.12). Gradients come from zero shifts on the layer outputs, one backward pass per output (or per
Gaussian probe) for a whole batch at once, so samples must not interact: the model runs in eval mode (BatchNorm on
its running statistics, dropout off) and is put back in its modes afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager

import numpy as np
import torch
import xarray as xr
from torch import nn

from featlearn.metrics import nfa
from featlearn.metrics.jacobians import output_gradients
from featlearn.metrics.layers import Layer, find_layers, output_shifts

Outputs = Callable[[object], torch.Tensor]
LONG_NAMES = nfa.LONG_NAMES | {
    "nfm": "NFM WᵀW",
    "agop": "AGOP WᵀKW with respect to the layer input",
}


def logits(out: object) -> torch.Tensor:
    """The network's outputs f: the tensor a model returns, a Hugging Face output's ``logits``, or a tuple's first."""
    if isinstance(out, torch.Tensor):
        return out
    if hasattr(out, "logits"):
        return out.logits
    if isinstance(out, tuple | list):
        return out[0]
    raise TypeError(f"cannot read the outputs from a {type(out).__name__}; pass output=, a function returning them")


@contextmanager
def _measuring(model: nn.Module) -> Iterator[None]:
    """Eval mode and gradients on, then every module's own mode back."""
    modes = {module: module.training for module in model.modules()}
    model.eval()
    try:
        with torch.enable_grad():
            yield
    finally:
        for module, training in modes.items():
            module.training = training


def _passes(out: torch.Tensor, wrt: list[torch.Tensor], probes: int | None,
            generator: torch.Generator) -> Iterator[tuple[torch.Tensor, ...]]:
    """Exact: the gradients of Σ_samples f_j for each output j of the flattened outputs (``output_gradients``).
    Probes: of Σ uᵀf with u ~ N(0, I) drawn on the CPU, M times; E[uuᵀ] = I makes their K unbiased (as
    ``attention_nfa``'s estimator for the GPT's T·V logits)."""
    if probes is None:
        yield from output_gradients(out.flatten(1), wrt, allow_unused=True)
        return
    for m in range(probes):
        u = torch.randn(out.shape, generator=generator, dtype=out.dtype).to(out.device)
        yield torch.autograd.grad((u * out).sum(), wrt, retain_graph=m < probes - 1, allow_unused=True,
                                  materialize_grads=True)


def _covariances(model: nn.Module, x: torch.Tensor, layers: list[Layer], batch_size: int, probes: int | None,
                 generator: torch.Generator | None, output: Outputs) -> dict[str, torch.Tensor]:
    """K (k_{ℓ+1}, k_{ℓ+1}) float64 of every layer over the samples x, on x's device, by name."""
    generator = torch.Generator().manual_seed(0) if generator is None else generator
    by_site: dict[str, list[Layer]] = {}
    for layer in layers:
        by_site.setdefault(layer.site, []).append(layer)
    ks: dict[str, torch.Tensor] = {}
    with _measuring(model), output_shifts(model, layers) as run:
        for batch in x.split(batch_size):
            returned, shifts = run(batch)
            missing = set(by_site) - set(shifts)
            if missing:
                raise ValueError(f"layers {sorted(missing)} did not run in the forward pass; leave them out (layers=)")
            sites = [site for site, calls in shifts.items() for _ in calls]
            wrt = [shift for calls in shifts.values() for shift in calls]
            for grads in _passes(output(returned), wrt, probes, generator):
                for site, g in zip(sites, grads):
                    for layer in by_site[site]:
                        flat = g.movedim(layer.dim, -1)[..., layer.rows]
                        flat = flat.reshape(-1, flat.shape[-1]).to(torch.float64)
                        if layer.name not in ks:
                            ks[layer.name] = flat.new_zeros(flat.shape[1], flat.shape[1])
                        ks[layer.name].addmm_(flat.T, flat)
    return {name: k.div_(len(x) * (probes or 1)) for name, k in ks.items()}


def agop(model: nn.Module, x: torch.Tensor, layers: Collection[str] | None = None, *, batch_size: int = 256,
         probes: int | None = None, generator: torch.Generator | None = None,
         output: Outputs = logits) -> dict[str, torch.Tensor]:
    """The AGOP WᵀKW (float64, on x's device) of every layer of ``model`` over the samples ``x`` (n, …), by layer
    name; ``layers`` picks some by name. Options as ``measure_nfa``."""
    found = find_layers(model, layers)
    ks = _covariances(model, x, found, batch_size, probes, generator, output)
    return {layer.name: nfa.agop(layer.matrix(model), ks[layer.name]) for layer in found}


def measure_nfa(model: nn.Module, x: torch.Tensor, init: nn.Module | None = None,
                layers: Collection[str] | None = None, *, batch_size: int = 256, probes: int | None = None,
                generator: torch.Generator | None = None, output: Outputs = logits,
                matrices: bool = True) -> xr.Dataset:
    """NFA quantities of every nn.Linear, conv and attention projection of ``model`` over the samples ``x`` (n, …,
    sample dimension first, as the outputs), on x's device.

    ``init``: the same network at initialization (W₀ for the centered NFC). ``layers``: names to measure (default
    all found). ``probes``: estimate K from that many Gaussian probes of the outputs instead of one backward pass per
    output (worth it past ~100 outputs per sample), drawn from ``generator`` (default seed 0). ``output``: f from
    what the model returns, any shape with samples first. ``matrices``: keep every layer's NFM and AGOP, float64
    (in patch space a 512-channel 3×3 conv's are 4608² each).

    Returns, on the dimensions ``layer`` (module names; a fused or nn.MultiheadAttention projection as
    ``<module>.q``, ``.k``, ``.v``, ``.out_proj``) and ``convention`` (cosine, the paper's ρ; pearson, the authors'
    Fig 2 code): ``uc_nfc``; with ``init`` also ``c_nfc``, ``ratio_c_uc``, ``dw_rel``; with ``matrices``
    ``nfm[<layer>]`` and ``agop[<layer>]`` on ``input_i[<layer>]``, ``input_j[<layer>]``. Variable names are the
    pipeline's stores'.
    """
    found = find_layers(model, layers)
    ks = _covariances(model, x, found, batch_size, probes, generator, output)
    conventions = list(nfa.CONVENTIONS)
    rows: dict[str, list] = {name: [] for name in ("uc_nfc", "c_nfc", "ratio_c_uc", "dw_rel")}
    arrays = {}
    for layer in found:
        w, k = layer.matrix(model).to(torch.float64), ks[layer.name]
        if init is None:
            pairs = {"uc_nfc": (nfa.nfm(w), nfa.agop(w, k))}
        else:
            w0 = layer.matrix(init).to(device=w.device, dtype=torch.float64)
            pairs = nfa.nfc_pairs(w, w0, k)
            rows["c_nfc"].append([nfa.correlation(*pairs["c_nfc"], c) for c in conventions])
            rows["ratio_c_uc"].append(nfa.ratio_c_uc(pairs))
            rows["dw_rel"].append(nfa.relative_weight_change(w, w0))
        rows["uc_nfc"].append([nfa.correlation(*pairs["uc_nfc"], c) for c in conventions])
        if matrices:
            dims = (f"input_i[{layer.name}]", f"input_j[{layer.name}]")
            for name, matrix in zip(("nfm", "agop"), pairs["uc_nfc"]):
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
    ds.attrs.update(k_normalization="K = (1/n) Σ_samples Σ_positions Σ_outputs g gᵀ, g = ∂f/∂h; AGOP = WᵀKW",
                    k_samples=len(x), k_estimator="exact" if probes is None else f"{probes} Gaussian probes",
                    conv_layers="W = weight as (C_out, C_in·kernel), the AGOP over unfolded patches")
    return ds
