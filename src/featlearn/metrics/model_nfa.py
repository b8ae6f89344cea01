"""The papers' NFA measurements on any nn.Module: per layer, the NFM, the AGOP and the UC/C-NFC (``featlearn.
measure_nfa``), computed by the pipeline's own functions (``nfa``, ``jacobians.output_gradients``). Its K sum,
``covariances`` (K̄ too, against an init model), is the pipeline's only one: the MLP, conv and attention families
(``mlp_nfa``, ``conv_nfa``, ``attention_nfa``) call it on their models, so the API and the stores cannot drift apart.

For every layer of ``layers.find_layers``, h = W p at every sample and position p, and

    K = (1/n) Σ_samples Σ_positions Σ_outputs (∂f_j/∂h)(∂f_j/∂h)ᵀ,   AGOP = WᵀKW = (1/n) Σ Σ Σ (∂f_j/∂p)(∂f_j/∂p)ᵀ,

the pipeline's convention for MLPs (alignment spec §1.3), conv layers in patch space (§1.11) and attention
projections (§1.12). Gradients come from zero shifts on the layer outputs, one backward pass per output (or per
Gaussian probe) for a whole batch at once, so samples must not interact: the model runs in eval mode (BatchNorm on
its running statistics, dropout off) and is put back in its modes afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from contextlib import ExitStack, contextmanager

import numpy as np
import torch
import xarray as xr
from torch import nn

from featlearn.metrics import nfa
from featlearn.metrics.jacobians import output_gradients
from featlearn.metrics.layers import Layer, Shifts, find_layers, output_shifts

Outputs = Callable[[object], torch.Tensor]
Covariances = dict[str, torch.Tensor]
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


def _passes(outs: list[torch.Tensor], wrts: list[list[torch.Tensor]], probes: int | None,
            generator: torch.Generator) -> Iterator[tuple[tuple[torch.Tensor, ...], ...]]:
    """Per pass, the gradients of every model's outputs ``outs`` with respect to its ``wrts``, each model given the
    same output j or probe u (so that an init model's gradients subtract from the trained one's). Exact: of Σ_samples
    f_j for each output j of the flattened outputs (``output_gradients``). Probes: of Σ uᵀf with u ~ N(0, I) drawn on
    the CPU, M times; E[uuᵀ] = I makes their K unbiased (``attention_nfa``'s estimator for the GPT's T·V logits)."""
    if any(out.shape != outs[0].shape for out in outs):
        raise ValueError(f"the model and init give outputs of shapes {[tuple(out.shape) for out in outs]}")
    if probes is None:
        # not zip: it caches its result tuple, which would hold one more pass's gradients through the next pass
        passes, *init_passes = (output_gradients(out.flatten(1), wrt, allow_unused=True)
                                for out, wrt in zip(outs, wrts))
        for grads in passes:
            yield (grads, *(next(p) for p in init_passes))
        return
    for m in range(probes):
        u = torch.randn(outs[0].shape, generator=generator, dtype=outs[0].dtype).to(outs[0].device)
        yield tuple(torch.autograd.grad((u * out).sum(), wrt, retain_graph=m < probes - 1, allow_unused=True,
                                        materialize_grads=True) for out, wrt in zip(outs, wrts))


def _add(ks: Covariances, layer: Layer, g: torch.Tensor) -> None:
    """K += Σ g gᵀ over every sample and position of one site's gradient g, in float64, on the layer's rows. Features
    last (a Linear's) are read in place as (positions, features); any other feature dimension (a conv's channels) is
    copied to the front, (features, positions): its tall product runs ~1.5× faster that way than transposed."""
    dim = layer.dim % g.dim()
    if dim == g.dim() - 1:
        flat = g[..., layer.rows]
        flat = flat.reshape(-1, flat.shape[-1]).to(torch.float64).T
    else:
        flat = g.movedim(dim, 0)[layer.rows]
        flat = flat.reshape(len(flat), -1).to(torch.float64)
    if layer.name not in ks:
        ks[layer.name] = flat.new_zeros(len(flat), len(flat))
    ks[layer.name].addmm_(flat, flat.T)


def _run(run: Callable[[object], tuple[object, Shifts]], batch: torch.Tensor, sites: Collection[str],
         output: Outputs) -> tuple[torch.Tensor, list[str], list[torch.Tensor]]:
    """One forward pass: f, and the site of every shift with the shifts, in call order."""
    returned, shifts = run(batch)
    missing = set(sites) - set(shifts)
    if missing:
        raise ValueError(f"layers {sorted(missing)} did not run in the forward pass; leave them out (layers=)")
    calls = [(site, shift) for site, each in shifts.items() for shift in each]
    return output(returned), [site for site, _ in calls], [shift for _, shift in calls]


def _add_batch(sums: list[Covariances], runs: list[Callable], batch: torch.Tensor, by_site: dict[str, list[Layer]],
               probes: int | None, generator: torch.Generator, output: Outputs) -> None:
    """K (sums[0]) and, with an init model's run, K̄ (sums[1]) over one batch. A function of its own so that the
    batch's graph, shifts and gradients are freed before the next batch's forward pass (``mlp_nfa``'s memory plan)."""
    outs, sites, wrts = zip(*(_run(run, batch, by_site, output) for run in runs))
    if any(s != sites[0] for s in sites):
        raise ValueError("the model and init call their layers in different orders")
    for now, *then in _passes(list(outs), list(wrts), probes, generator):  # unpacked: no pass held past the next
        for i, (site, g) in enumerate(zip(sites[0], now)):
            diff = g - then[0][i] if then else None
            for layer in by_site[site]:
                _add(sums[0], layer, g)
                if diff is not None:
                    _add(sums[1], layer, diff)


def _covariances(model: nn.Module, x: torch.Tensor, layers: list[Layer], init: nn.Module | None, batch_size: int,
                 probes: int | None, generator: torch.Generator | None, output: Outputs) -> list[Covariances]:
    """[K] of every layer over the samples x, or [K, K̄] with ``init``; (k_{ℓ+1}, k_{ℓ+1}) float64 on x's device."""
    generator = torch.Generator().manual_seed(0) if generator is None else generator
    by_site: dict[str, list[Layer]] = {}
    for layer in layers:
        by_site.setdefault(layer.site, []).append(layer)
    models = [model] if init is None else [model, init]
    sums: list[Covariances] = [{} for _ in models]
    with ExitStack() as stack:
        for net in models:
            stack.enter_context(_measuring(net))
        runs = [stack.enter_context(output_shifts(net, layers)) for net in models]
        for batch in x.split(batch_size):
            _add_batch(sums, runs, batch, by_site, probes, generator, output)
    scale = len(x) * (probes or 1)
    return [{name: k.div_(scale) for name, k in ks.items()} for ks in sums]


def covariances(model: nn.Module, x: torch.Tensor, layers: Collection[str] | None = None, *,
                init: nn.Module | None = None, batch_size: int = 256, probes: int | None = None,
                generator: torch.Generator | None = None,
                output: Outputs = logits) -> tuple[Covariances, Covariances | None]:
    """K = (1/n) Σ g gᵀ, g = ∂f/∂h (float64, on x's device), of every layer of ``model`` over the samples ``x``, by
    layer name, and with ``init`` (the same network at initialization) K̄ from g − g₀, g₀ init's gradient of the same
    output j (or probe u) at the same sample and position; None in its place without. The one K sum of the library
    and of the pipeline's families (``mlp_nfa``, ``conv_nfa``, ``attention_nfa``).

    ``batch_size``: samples per forward pass; their graph is held through all its backward passes. Other options as
    ``measure_nfa``; the probes are drawn per batch, so their K depends on ``batch_size`` as well as the seed.
    """
    ks = _covariances(model, x, find_layers(model, layers), init, batch_size, probes, generator, output)
    return ks[0], ks[1] if init is not None else None


def agop(model: nn.Module, x: torch.Tensor, layers: Collection[str] | None = None, *, batch_size: int = 256,
         probes: int | None = None, generator: torch.Generator | None = None,
         output: Outputs = logits) -> dict[str, torch.Tensor]:
    """The AGOP WᵀKW (float64, on x's device) of every layer of ``model`` over the samples ``x`` (n, …), by layer
    name; ``layers`` picks some by name. Options as ``measure_nfa``."""
    found = find_layers(model, layers)
    (ks,) = _covariances(model, x, found, None, batch_size, probes, generator, output)
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
    (ks,) = _covariances(model, x, found, None, batch_size, probes, generator, output)
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
