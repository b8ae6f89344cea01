"""The papers' NFA measurements on any nn.Module: per layer, the NFM, the AGOP and the UC/C-NFC (``featlearn.
measure_nfa``), computed by the pipeline's own functions (``nfa``). Its K sum, ``covariances`` (K̄ too, against an
init model), is the pipeline's only one: the MLP, conv and attention families (``mlp_nfa``, ``conv_nfa``,
``attention_nfa``) call it on their models, so the API and the stores cannot drift apart.

For every layer of ``layers.find_layers``, h = W p at every sample and position p, and

    K = (1/n) Σ_samples Σ_positions Σ_outputs (∂f_j/∂h)(∂f_j/∂h)ᵀ,   AGOP = WᵀKW = (1/n) Σ Σ Σ (∂f_j/∂p)(∂f_j/∂p)ᵀ,

the pipeline's convention for MLPs, conv layers in patch space and attention projections. Gradients come from zero
shifts on the layer outputs: one backward pass of Σ_samples f_j gives ∂f_j/∂h at every sample of a batch, and
batched backward passes (``is_grads_batched``) take a chunk of outputs (or Gaussian probes) at a time, the chunk
sized so that its gradients fit ``CHUNK_BYTES``. That needs samples that do not interact: the model runs in eval
mode (BatchNorm on its running statistics, dropout off), and before measuring, one sample of a small batch is
changed to check that no other sample's output or layer output moves (``_sample_dims``); a model that fails is
refused, not measured wrong.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Collection, Iterator
from contextlib import ExitStack, contextmanager

import numpy as np
import torch
import xarray as xr
from torch import nn

from featlearn.metrics import nfa
from featlearn.metrics.layers import Layer, Shifts, output_shifts, scan, select

Outputs = Callable[[object], torch.Tensor]
Covariances = dict[str, torch.Tensor]
Run = Callable[[object], tuple[object, Shifts, Shifts]]
LONG_NAMES = nfa.LONG_NAMES | {
    "nfm": "NFM WᵀW",
    "agop": "AGOP WᵀKW with respect to the layer input",
}
# Bytes for one chunk of batched backward passes (the gradients of every shift for each output of the chunk, their
# backward temporaries and one site's float64 copy). Fixed, not sized from the free memory, so that results do not
# depend on the machine; a chunk holds at least one output.
CHUNK_BYTES = 1 << 28
# Samples the interaction check runs on (a small batch: two forward passes of it).
CHECK_SAMPLES = 16
# Bytes of the float64 rows one product of ``_accumulate`` converts at a time.
ROW_BYTES = 1 << 24
INTERACTION = ("the model mixes samples (BatchNorm without running statistics, batch centring or normalisation, "
               "attention over the batch dimension), or x's samples are not on dimension {dim}. K sums per-sample "
               "gradients over a whole batch, so this would be measured wrong: pass sample_dim= the dimension of x "
               "holding the samples (1 for a sequence-first (T, N, …) input), or measure a model whose samples are "
               "independent (BatchNorm with running statistics, in eval mode)")


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


def _checked_x(x: object, batch_size: int, probes: int | None, sample_dim: int) -> tuple[torch.Tensor, int]:
    """x (an inference tensor copied, so autograd may save it) and its sample dimension, or an error naming the
    argument and the fix."""
    if torch.is_inference_mode_enabled():
        raise RuntimeError("measure_nfa needs autograd and was called inside torch.inference_mode(): call it outside "
                           "that block (inside torch.no_grad() is fine: it turns gradients back on itself)")
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x= must be a tensor of samples (n, …), not a {type(x).__name__}; for inputs the model takes "
                        "otherwise, wrap the model in a module taking one tensor")
    if x.dim() == 0:
        raise ValueError("x= is a 0-d tensor: pass a batch of samples (n, …), x[None] for a single sample")
    if isinstance(sample_dim, bool) or not isinstance(sample_dim, int) or not -x.dim() <= sample_dim < x.dim():
        raise ValueError(f"sample_dim= must be a dimension of x (shape {tuple(x.shape)}); got {sample_dim!r}")
    sample_dim %= x.dim()
    if x.shape[sample_dim] == 0:
        raise ValueError(f"x= has no samples (shape {tuple(x.shape)}, sample_dim={sample_dim}): pass at least one")
    if probes is not None and (isinstance(probes, bool) or not isinstance(probes, int) or probes < 1):
        raise ValueError(f"probes= must be a positive number of Gaussian probes, or None for the exact sum over "
                         f"outputs; got {probes!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size= must be a positive number of samples per forward pass; got {batch_size!r}")
    return (x.clone() if x.is_inference() else x), sample_dim


def _checked_init(model: nn.Module, init: nn.Module, layers: list[Layer]) -> None:
    """An error naming the layer unless ``init`` has every layer of ``model`` with a W of the same shape."""
    fix = "init= must be the same network (architecture and widths) at initialization, e.g. a copy.deepcopy(model) " \
          "taken before training"
    for layer in layers:
        try:
            w0 = layer.matrix(init)
        except AttributeError:
            raise ValueError(f"init= has no module {layer.path!r} (layer {layer.name!r} of the model): {fix}") from None
        w = layer.matrix(model)
        if w0.shape != w.shape:
            raise ValueError(f"init=: layer {layer.name!r} has W of shape {tuple(w.shape)} in the model but "
                             f"{tuple(w0.shape)} in init: {fix}")


def _changed(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Where b differs from a beyond rounding (bool, a's shape)."""
    if not a.is_floating_point():
        return a != b
    scale = float(a.abs().max()) if a.numel() else 0.0
    return (a - b).abs() > 1e3 * torch.finfo(a.dtype).eps * scale


def _following(changed: torch.Tensor, b: int, blocks: bool) -> list[int]:
    """The dimensions along which ``changed`` has the b samples' rows (or, with ``blocks``, b equal blocks of rows,
    a (b·T, …) flattening) and changes in sample 0's alone."""
    dims = []
    for d, size in enumerate(changed.shape):
        if size == b or (blocks and size and size % b == 0):
            rows = changed.movedim(d, 0).reshape(size, -1).any(1)
            if not rows[size // b:].any():
                dims.append(d)
    return dims


def _sample_dims(run: Run, x: torch.Tensor, sample_dim: int, output: Outputs) -> int:
    """The dimension of f holding the samples, after checking that samples do not interact: sample 0 of a small
    batch is replaced by another sample, and no other sample's rows of f or of a measured layer's output may change.
    An error says which output failed and why; where no two samples differ (or on the meta device) only the sizes
    are checked."""
    b = min(x.shape[sample_dim], CHECK_SAMPLES)
    batch = x.narrow(sample_dim, 0, b)
    pool = x.narrow(sample_dim, 0, min(x.shape[sample_dim], 4 * CHECK_SAMPLES))
    first = pool.select(sample_dim, 0)
    other = None if x.is_meta else next((j for j in range(1, pool.shape[sample_dim])
                                         if not torch.equal(pool.select(sample_dim, j), first)), None)
    returned, _, values = run(batch)
    f = output(returned).detach()
    where = f"the {b} samples given (dimension {sample_dim} of x, shape {tuple(x.shape)})"
    if f.dim() == 0:
        raise ValueError("output= gave a scalar; it must give the outputs f with one row per sample, (n, …)")
    sized = [d for d, size in enumerate(f.shape) if size == b]
    if not sized:
        raise ValueError(f"the outputs f have shape {tuple(f.shape)}, no dimension of {where}: is x one unbatched "
                         "sample? Pass x[None] for one sample, or sample_dim= the dimension of x holding the samples")
    preferred = [d for d in dict.fromkeys((sample_dim, 0, *sized)) if d in sized]
    if other is None:
        return preferred[0]
    values = {site: [v.detach() for v in each] for site, each in values.items()}
    moved = batch.clone()
    moved.select(sample_dim, 0).copy_(pool.select(sample_dim, other))
    returned2, _, values2 = run(moved)
    for site, each in values.items():  # in call order: the first layer that mixes samples is named
        for h, h2 in zip(each, values2[site]):
            if not _following(_changed(h, h2.detach()), b, blocks=True):
                raise ValueError(f"samples interact at layer {site!r}: changing sample 0 of x changed other samples' "
                                 f"rows of its output (shape {tuple(h.shape)}): " + INTERACTION.format(dim=sample_dim))
    follows = _following(_changed(f, output(returned2).detach()), b, blocks=False)
    if not follows:
        raise ValueError(f"samples interact: changing sample 0 of x changed other samples' outputs f (shape "
                         f"{tuple(f.shape)}): " + INTERACTION.format(dim=sample_dim))
    return next(d for d in preferred if d in follows) if set(preferred) & set(follows) else follows[0]


def _chunk(wrts: list[list[torch.Tensor]], outputs: int, chunk_bytes: int) -> int:
    """Outputs (or probes) per batched backward pass: per output, every shift's gradient and as much again for the
    backward's temporaries, for each model, and the largest site's float64 copy, within ``chunk_bytes``."""
    per_output = sum(2 * t.numel() * t.element_size() for wrt in wrts for t in wrt)
    per_output += 8 * max((t.numel() for t in wrts[0]), default=0)
    return max(1, min(outputs, chunk_bytes // max(per_output, 1)))


def _batched_grads(out: torch.Tensor, wrt: list[torch.Tensor], v: torch.Tensor,
                   retain: bool) -> tuple[torch.Tensor, ...]:
    """∂⟨v_i, out⟩/∂wrt for every row v_i of v, (len(v), *wrt's shape) each: one batched backward pass, or one pass
    per row where an operation of the graph has no batched backward."""
    try:
        if len(v) == 1:  # vmap's overhead, for nothing
            grads = tuple(None if g is None else g[None]
                          for g in torch.autograd.grad(out, wrt, v[0], retain_graph=retain, allow_unused=True))
        else:
            grads = torch.autograd.grad(out, wrt, v, retain_graph=True, allow_unused=True, is_grads_batched=True)
    except RuntimeError:
        rows = [torch.autograd.grad(out, wrt, row, retain_graph=retain or i < len(v) - 1, allow_unused=True)
                for i, row in enumerate(v)]
        grads = tuple(None if row[0] is None else torch.stack(row) for row in zip(*rows))
    return tuple(torch.zeros((len(v), *w.shape), dtype=w.dtype, device=w.device) if g is None else g
                 for g, w in zip(grads, wrt))


def _passes(outs: list[torch.Tensor], wrts: list[list[torch.Tensor]], probes: int | None, generator: torch.Generator,
            chunk_bytes: int = CHUNK_BYTES) -> Iterator[tuple[tuple[torch.Tensor, ...], ...]]:
    """Per chunk of outputs j (or probes u), the gradients of every model's outputs ``outs`` (samples first) with
    respect to its ``wrts``, batched over the chunk (B, *shift's shape), each model given the same j or u (so that an
    init model's gradients subtract from the trained one's). Exact: of Σ_samples f_j for each output j of the
    flattened outputs. Probes: of Σ uᵀf with u ~ N(0, I) drawn on the CPU in turn, M times; E[uuᵀ] = I makes their
    K unbiased (``attention_nfa``'s estimator for the GPT's T·V logits)."""
    if any(out.shape != outs[0].shape for out in outs):
        raise ValueError(f"the model and init give outputs of shapes {[tuple(out.shape) for out in outs]}: init= must "
                         "be the same network at initialization")
    shape, dtype, device = outs[0].shape, outs[0].dtype, outs[0].device
    count = outs[0][0].numel() if probes is None else probes
    step = _chunk(wrts, count, chunk_bytes)
    flat = [out.reshape(len(out), -1) for out in outs] if probes is None else outs
    for start in range(0, count, step):
        size = min(step, count - start)
        if probes is None:
            v = torch.zeros((size, shape[0], count), dtype=dtype, device=device)
            picks = torch.arange(size, device=device)
            v[picks, :, picks + start] = 1
        else:
            v = torch.stack([torch.randn(shape, generator=generator, dtype=dtype) for _ in range(size)]).to(device)
        last = start + size >= count
        yield tuple(_batched_grads(out, wrt, v, not last) for out, wrt in zip(flat, wrts))


def _add(ks: Covariances, layer: Layer, g: torch.Tensor) -> None:
    """K += Σ g gᵀ over every output, sample and position of one site's batched gradient g (B, *site's shape), in
    float64, on the layer's rows (``_accumulate``). The layer's feature dimension is moved first as a view, (features,
    rows); a conv's channels are copied there first, as its tall product runs ~1.5× faster that way."""
    dim = layer.dim % (g.dim() - 1) + 1
    if dim == g.dim() - 1:
        flat = g[..., layer.rows]
        flat = flat.reshape(-1, flat.shape[-1]).T
    else:
        flat = g.movedim(dim, 0)[layer.rows]
        flat = flat.reshape(len(flat), -1)
    if layer.name not in ks:
        ks[layer.name] = torch.zeros(len(flat), len(flat), dtype=torch.float64, device=flat.device)
    _accumulate(ks[layer.name], flat)


def _accumulate(k: torch.Tensor, flat: torch.Tensor) -> None:
    """The upper triangle of K += A Aᵀ (A = ``flat``, (features, rows)) in float64: A converted ``ROW_BYTES`` of rows at
    a time (no float64 copy of the whole chunk) and, past 128 features, in up to four blocks of rows of K, each
    multiplied only from its diagonal on (62% of the products at four). ``_symmetric`` fills the lower triangle."""
    features = len(flat)
    blocks = max(1, min(4, features // 64))
    edges = [features * i // blocks for i in range(blocks + 1)]
    step = max(1, ROW_BYTES // (8 * features))
    for start in range(0, flat.shape[1], step):
        a = flat[:, start:start + step].to(torch.float64)
        for lo, hi in zip(edges[:-1], edges[1:]):
            k[lo:hi, lo:].addmm_(a[lo:hi], a[lo:].T)


def _symmetric(k: torch.Tensor) -> torch.Tensor:
    """K from its upper triangle (``_accumulate``), in place."""
    lower = torch.ones_like(k, dtype=torch.bool).tril_(-1)
    return k.copy_(torch.where(lower, k.T, k))


def _run(run: Run, batch: torch.Tensor, sites: Collection[str], output: Outputs,
         dims: tuple[int, int]) -> tuple[torch.Tensor, list[str], list[torch.Tensor]]:
    """One forward pass: f with its samples first, and the site of every shift with the shifts, in call order."""
    returned, shifts, _ = run(batch)
    missing = set(sites) - set(shifts)
    if missing:
        raise ValueError(f"layers {sorted(missing)} did not run in the forward pass; leave them out (layers=)")
    calls = [(site, shift) for site, each in shifts.items() for shift in each]
    f, (sample_dim, out_dim) = output(returned), dims
    if f.dim() <= out_dim or f.shape[out_dim] != batch.shape[sample_dim]:
        raise ValueError(f"the outputs f of a batch of {batch.shape[sample_dim]} samples have shape {tuple(f.shape)}, "
                         f"not one row per sample along dimension {out_dim} as on the first batch")
    return f.movedim(out_dim, 0), [site for site, _ in calls], [shift for _, shift in calls]


def _add_batch(sums: list[Covariances], runs: list[Run], batch: torch.Tensor, by_site: dict[str, list[Layer]],
               probes: int | None, generator: torch.Generator, output: Outputs, dims: tuple[int, int],
               chunk_bytes: int) -> None:
    """K (sums[0]) and, with an init model's run, K̄ (sums[1]) over one batch. A function of its own so that the
    batch's graph, shifts and gradients are freed before the next batch's forward pass (``mlp_nfa``'s memory plan)."""
    outs, sites, wrts = zip(*(_run(run, batch, by_site, output, dims) for run in runs))
    if any(s != sites[0] for s in sites):
        raise ValueError("the model and init call their layers in different orders: init= must be the same network")
    # unpacked: no chunk held past the next
    for now, *then in _passes(list(outs), list(wrts), probes, generator, chunk_bytes):
        for i, (site, g) in enumerate(zip(sites[0], now)):
            diff = g - then[0][i] if then else None
            for layer in by_site[site]:
                _add(sums[0], layer, g)
                if diff is not None:
                    _add(sums[1], layer, diff)


def _covariances(model: nn.Module, x: torch.Tensor, layers: list[Layer], init: nn.Module | None, batch_size: int,
                 probes: int | None, generator: torch.Generator | None, output: Outputs,
                 sample_dim: int, chunk_bytes: int = CHUNK_BYTES) -> list[Covariances]:
    """[K] of every layer over the samples x, or [K, K̄] with ``init``; (k_{ℓ+1}, k_{ℓ+1}) float64 on x's device."""
    generator = torch.Generator().manual_seed(0) if generator is None else generator
    if init is not None:
        _checked_init(model, init, layers)
    by_site: dict[str, list[Layer]] = {}
    for layer in layers:
        by_site.setdefault(layer.site, []).append(layer)
    models = [model] if init is None else [model, init]
    sums: list[Covariances] = [{} for _ in models]
    with ExitStack() as stack:
        for net in models:
            stack.enter_context(_measuring(net))
        runs = [stack.enter_context(output_shifts(net, layers)) for net in models]
        dims = (sample_dim, _sample_dims(runs[0], x, sample_dim, output))
        for batch in x.split(batch_size, dim=sample_dim):
            _add_batch(sums, runs, batch, by_site, probes, generator, output, dims, chunk_bytes)
    scale = x.shape[sample_dim] * (probes or 1)
    ks = [{name: _symmetric(k).div_(scale) for name, k in each.items()} for each in sums]
    for each in ks:  # a layer whose site never gave a gradient (no chunk ran) has K = 0
        for layer in layers:
            if layer.name not in each:
                rows = layer.matrix(model).shape[0]
                each[layer.name] = torch.zeros(rows, rows, dtype=torch.float64, device=x.device)
    return ks


def _layers(model: nn.Module, layers: Collection[str] | None, warn: bool) -> tuple[list[Layer], dict[str, str]]:
    """The layers to measure, and the modules with weights left unmeasured, announced in one warning if ``warn``."""
    found, skipped = scan(model)
    chosen = select(model, found, skipped, layers)
    if warn and layers is None and skipped:
        warnings.warn("measure_nfa does not measure these layers:\n" + _listed(skipped), stacklevel=3)
    return chosen, skipped


def _listed(notes: dict[str, str]) -> str:
    return "\n".join(f"  {name}: {why}" for name, why in notes.items())


def covariances(model: nn.Module, x: torch.Tensor, layers: Collection[str] | None = None, *,
                init: nn.Module | None = None, batch_size: int = 256, probes: int | None = None,
                generator: torch.Generator | None = None, output: Outputs = logits,
                sample_dim: int = 0, chunk_bytes: int = CHUNK_BYTES) -> tuple[Covariances, Covariances | None]:
    """K = (1/n) Σ g gᵀ, g = ∂f/∂h (float64, on x's device), of every layer of ``model`` over the samples ``x``, by
    layer name, and with ``init`` (the same network at initialization) K̄ from g − g₀, g₀ init's gradient of the same
    output j (or probe u) at the same sample and position; None in its place without. The one K sum of the library
    and of the pipeline's families (``mlp_nfa``, ``conv_nfa``, ``attention_nfa``).

    ``batch_size``: samples per forward pass; their graph is held through all its backward passes. ``chunk_bytes``:
    what one batched backward pass's gradients may take (0: one output or probe per pass, the memory ``mlp_nfa``'s
    plan counts). Other options as ``measure_nfa``; the probes are drawn per batch, so their K depends on
    ``batch_size`` as well as the seed.
    """
    x, sample_dim = _checked_x(x, batch_size, probes, sample_dim)
    found, _ = _layers(model, layers, warn=False)
    ks = _covariances(model, x, found, init, batch_size, probes, generator, output, sample_dim, chunk_bytes)
    return ks[0], ks[1] if init is not None else None


def agop(model: nn.Module, x: torch.Tensor, layers: Collection[str] | None = None, *, batch_size: int = 256,
         probes: int | None = None, generator: torch.Generator | None = None, output: Outputs = logits,
         sample_dim: int = 0) -> dict[str, torch.Tensor]:
    """The AGOP WᵀKW (float64, on x's device) of every layer of ``model`` over the samples ``x`` (n, …), by layer
    name; ``layers`` picks some by name. Options as ``measure_nfa``."""
    x, sample_dim = _checked_x(x, batch_size, probes, sample_dim)
    found, _ = _layers(model, layers, warn=True)
    (ks,) = _covariances(model, x, found, None, batch_size, probes, generator, output, sample_dim)
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


def _notes(layer: Layer, w: torch.Tensor, w0: torch.Tensor | None, k: torch.Tensor) -> dict[str, str]:
    """Why a layer's NFCs would be NaN (or R_C zero), by cause."""
    notes = {}
    if not torch.any(k != 0):
        notes["zero_agop"] = ("its AGOP is zero: no output depends on it at these inputs (a zero-initialised layer "
                              "after it, as torchvision's ViT head at init, or an unused layer), so its NFCs are NaN")
    if not torch.any(w != 0):
        notes["zero_w"] = "its W is zero (a zero-initialised layer), so its NFM and NFCs are zero or NaN"
    if w0 is not None and torch.equal(w, w0):
        notes["unmoved"] = ("its W equals init's (W − W₀ = 0: init= is the model itself, or the layer has not moved), "
                            "so its centered NFC is NaN and R_C zero")
    return notes


def measure_nfa(model: nn.Module, x: torch.Tensor, init: nn.Module | None = None,
                layers: Collection[str] | None = None, *, batch_size: int = 256, probes: int | None = None,
                generator: torch.Generator | None = None, output: Outputs = logits,
                matrices: bool = True, sample_dim: int = 0) -> xr.Dataset:
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

    Returns, on the dimensions ``layer`` (module names; a fused or nn.MultiheadAttention projection as
    ``<module>.q``, ``.k``, ``.v``, ``.out_proj``) and ``convention`` (cosine, the paper's ρ; pearson, the authors'
    Fig 2 code): ``uc_nfc``; with ``init`` also ``c_nfc``, ``ratio_c_uc``, ``dw_rel``; with ``matrices``
    ``nfm[<layer>]`` and ``agop[<layer>]`` on ``input_i[<layer>]``, ``input_j[<layer>]``. Variable names are the
    pipeline's stores'. Where a result is NaN for a reason (a zero AGOP, an init equal to the model), a warning and
    ``attrs["notes"]`` say which layers and why.
    """
    x, sample_dim = _checked_x(x, batch_size, probes, sample_dim)
    found, skipped = _layers(model, layers, warn=True)
    if init is not None:
        _checked_init(model, init, found)
    (ks,) = _covariances(model, x, found, None, batch_size, probes, generator, output, sample_dim)
    conventions = list(nfa.CONVENTIONS)
    rows: dict[str, list] = {name: [] for name in ("uc_nfc", "c_nfc", "ratio_c_uc", "dw_rel")}
    arrays, notes = {}, {}
    for layer in found:
        w, k = layer.matrix(model).to(torch.float64), ks[layer.name]
        w0 = None if init is None else layer.matrix(init).to(device=w.device, dtype=torch.float64)
        for cause, why in _notes(layer, w, w0, k).items():
            notes.setdefault(cause, (why, []))[1].append(layer.name)
        uc = _Pair(w, k, matrices)
        rows["uc_nfc"].append([uc.correlation(c) for c in conventions])
        if w0 is not None:
            c_pair = _Pair(w - w0, k, False)
            rows["c_nfc"].append([c_pair.correlation(c) for c in conventions])
            rows["ratio_c_uc"].append(c_pair.inner / uc.inner if uc.inner != 0 else float("nan"))
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
        warnings.warn("measure_nfa: some results are NaN or zero, and why:\n" + _listed(told), stacklevel=2)
    ds.attrs.update(k_normalization="K = (1/n) Σ_samples Σ_positions Σ_outputs g gᵀ, g = ∂f/∂h; AGOP = WᵀKW",
                    k_samples=x.shape[sample_dim], sample_dim=sample_dim,
                    k_estimator="exact" if probes is None else f"{probes} Gaussian probes",
                    conv_layers="W = weight as (C_out, C_in·kernel), the AGOP over unfolded patches",
                    skipped_layers="; ".join(f"{name}: {why}" for name, why in skipped.items()) or "none",
                    notes="; ".join(f"{names}: {why}" for names, why in told.items()) or "none")
    return ds
