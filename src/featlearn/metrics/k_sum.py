"""The one K sum of the library (``measure_nfa``, ``agop``) and of the pipeline's MLP, conv and attention families
(``mlp_nfa``, ``conv_nfa``, ``attention_nfa``): ``covariances``, K̄ too against an init model.

For every layer of ``layers.find_layers``, h = W p at every sample and position p, and

    K = (1/n) Σ_samples Σ_positions Σ_outputs (∂f_j/∂h)(∂f_j/∂h)ᵀ,   AGOP = WᵀKW = (1/n) Σ Σ Σ (∂f_j/∂p)(∂f_j/∂p)ᵀ,

the pipeline's convention for MLPs, conv layers in patch space and attention projections. Gradients come from zero
shifts on the layer outputs: one backward pass of Σ_samples f_j gives ∂f_j/∂h at every sample of a batch, and
batched backward passes (``is_grads_batched``) take a chunk of outputs (or Gaussian probes) at a time, the chunk
sized so that its gradients fit ``CHUNK_BYTES``. The float64 products are ``gram``'s. That needs samples that do not
interact: the model runs in eval mode (BatchNorm on its running statistics, dropout off) and ``interaction`` checks
the rest first. It also needs every measured output row to be one sample's: layers whose output the batch shares
(``interaction.shared_sites``) are summed one sample at a time. A ``mask`` zeroes the cotangents of the outputs that
are not samples' own (padding).

The library's sum (``fast``: ``measure_nfa``, ``agop``) takes ``gram.fast``'s products and, with one model and no
probes, sums through a Linear readout (``readout``): passes from the readout's input, the readout's own K and the
closed form of the layer feeding it. The pipeline's families keep the default, bitwise what their published stores
were computed with.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable, Collection, Iterator
from contextlib import ExitStack, contextmanager

import torch
from torch import nn

from featlearn.metrics import gram, readout
from featlearn.metrics.interaction import Outputs, Run, sample_dims, shared_sites
from featlearn.metrics.layers import Layer, output_shifts, scan, select

Covariances = dict[str, torch.Tensor]
# Bytes for one chunk of batched backward passes (the gradients of every shift for each output of the chunk, their
# backward temporaries and one site's float64 copy). Fixed, not sized from the free memory, so that results do not
# depend on the machine; a chunk holds at least one output.
CHUNK_BYTES = 1 << 28
SHARED = ("layers {names} compute their output once for the whole batch (no row of their own per sample: a table, "
          "prototypes or other fixed inputs through a layer, broadcast to every sample), so a backward pass over a "
          "batch would sum the samples' gradients there before their product; their K is summed one sample at a time "
          "instead ({n} forward passes). To measure them at batch speed, compute them per sample (on the table "
          "expanded to the batch), or leave them out with layers=")


def logits(out: object) -> torch.Tensor:
    """The network's outputs f: the tensor a model returns, a Hugging Face output's ``logits``, or a tuple's first."""
    if isinstance(out, torch.Tensor):
        return out
    if hasattr(out, "logits"):
        return out.logits
    if isinstance(out, tuple | list):
        return out[0]
    raise TypeError(f"cannot read the outputs f from what the model returned ({type(out).__name__}); pass output=, a "
                    "function of it returning f (e.g. output=lambda out: out[\"out\"] for a dict)")


@contextmanager
def _measuring(model: nn.Module) -> Iterator[None]:
    """Eval mode and gradients on, then every module's own mode back (only those that were training are touched:
    nn.Module's attribute writes are slow Python)."""
    training = [module for module in model.modules() if module.training]
    if training:
        model.eval()
    try:
        with torch.enable_grad():
            yield
    finally:
        for module in training:
            module.training = True


def checked_x(x: object, batch_size: int, probes: int | None, sample_dim: int) -> tuple[torch.Tensor, int]:
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


def checked_mask(mask: object) -> torch.Tensor | None:
    """The mask of the outputs' entries that are samples' own (None: all), or an error naming its form."""
    if mask is None or (isinstance(mask, torch.Tensor) and mask.dtype == torch.bool and mask.dim() > 0):
        return mask
    got = f"a {mask.dtype} tensor of shape {tuple(mask.shape)}" if isinstance(mask, torch.Tensor) else \
        f"a {type(mask).__name__}"
    raise TypeError(f"mask= must be a boolean tensor over the outputs f's leading dimensions (e.g. (n, T) for "
                    f"per-token outputs (n, T, V)), True where an output is a sample's own and False at padding; got "
                    f"{got}")


def _mask_batches(mask: torch.Tensor | None, n: int, out_dim: int,
                  batch_size: int) -> Iterator[torch.Tensor | None]:
    """The mask of every batch, split along f's sample dimension as x is along its own."""
    if mask is None:
        yield from itertools.repeat(None)
        return
    if mask.dim() <= out_dim or mask.shape[out_dim] != n:
        raise ValueError(f"mask= has shape {tuple(mask.shape)}, but it marks the entries of the outputs f, which hold "
                         f"the {n} samples on dimension {out_dim}: pass f's leading dimensions (e.g. (n, T) for "
                         "per-token outputs (n, T, V)), True where an output is a sample's own and False at padding")
    yield from mask.split(batch_size, dim=out_dim)


def _weights(mask: torch.Tensor, f: torch.Tensor, out_dim: int) -> torch.Tensor:
    """One batch's mask as weights on f's entries (1: a sample's own output, 0: padding), samples first and the
    rest flattened, (b, outputs)."""
    if tuple(mask.shape) != tuple(f.shape[:mask.dim()]):
        raise ValueError(f"mask= marks the outputs f's entries, so its shape is a leading part of f's: a batch of f "
                         f"has shape {tuple(f.shape)}, its mask {tuple(mask.shape)}")
    m = mask.to(device=f.device, dtype=f.dtype).reshape(*mask.shape, *[1] * (f.dim() - mask.dim()))
    m = m.expand(f.shape).movedim(out_dim, 0)
    return m.reshape(len(m), -1)


def unwrapped(model: nn.Module | None, argument: str = "model") -> nn.Module | None:
    """The module to measure through: the one that ``torch.compile`` (whose graph runs without the forward hooks that
    measure), ``nn.DataParallel`` or ``DistributedDataParallel`` (whose replicas would run them on other devices)
    wraps, under its own layer names, or ``model`` itself; the same function either way. A TorchScript module, which
    keeps no Python module to measure through, is refused naming ``argument``."""
    if isinstance(model, torch.jit.ScriptModule):
        raise TypeError(f"{argument}= is a TorchScript module (torch.jit.script or trace), which runs no forward "
                        "hooks: pass the nn.Module it was made from")
    while True:
        if isinstance(model, nn.DataParallel | nn.parallel.DistributedDataParallel):
            model = model.module
        elif isinstance(getattr(model, "_orig_mod", None), nn.Module):
            model = model._orig_mod
        else:
            return model


def checked_init(model: nn.Module, init: nn.Module, layers: list[Layer]) -> None:
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


def chosen_layers(model: nn.Module, layers: Collection[str] | None, warn: bool) -> tuple[list[Layer], dict[str, str]]:
    """The layers to measure, and the modules with weights left unmeasured, announced in one warning if ``warn``
    (raised for the caller of ``measure_nfa`` or ``agop``)."""
    found, skipped = scan(model)
    chosen = select(model, found, skipped, layers)
    if warn and layers is None and skipped:
        warnings.warn("measure_nfa does not measure these layers and parameters:\n" + listed(skipped), stacklevel=3)
    return chosen, skipped


def listed(notes: dict[str, str]) -> str:
    """One indented line per name and note."""
    return "\n".join(f"  {name}: {why}" for name, why in notes.items())


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


def _passes(starts: list[torch.Tensor], wrts: list[list[torch.Tensor]], count: int,
            cotangents: Callable[[int, int], torch.Tensor],
            chunk_bytes: int) -> Iterator[tuple[tuple[torch.Tensor, ...], ...]]:
    """Per chunk of the ``count`` cotangents v (``cotangents(start, size)``, (size, *start's shape)), the gradients of
    ⟨v, start⟩ of every model with respect to its ``wrts``, batched over the chunk (B, *shift's shape), each model
    given the same v (so that an init model's gradients subtract from the trained one's)."""
    step = _chunk(wrts, count, chunk_bytes)
    for start in range(0, count, step):
        size = min(step, count - start)
        v = cotangents(start, size)
        last = start + size >= count
        yield tuple(_batched_grads(out, wrt, v, not last) for out, wrt in zip(starts, wrts))


def _general(outs: list[torch.Tensor], probes: int | None, generator: torch.Generator,
             weights: torch.Tensor | None = None) -> tuple[list[torch.Tensor], int, Callable[[int, int], torch.Tensor]]:
    """Where the passes start (the outputs, samples first), how many and their cotangents. Exact: of Σ_samples f_j
    for each output j of the flattened outputs. Probes: of Σ uᵀf with u ~ N(0, I) drawn on the CPU in turn, M times;
    E[uuᵀ] = I makes their K unbiased (``attention_nfa``'s estimator for the GPT's T·V logits). ``weights``
    (``_weights``): zero at the entries that are not samples' outputs (padding), which then add nothing."""
    if any(out.shape != outs[0].shape for out in outs):
        raise ValueError(f"the model and init give outputs of shapes {[tuple(out.shape) for out in outs]}: init= must "
                         "be the same network at initialization")
    shape, dtype, device = outs[0].shape, outs[0].dtype, outs[0].device
    if probes is not None:
        def gaussian(start: int, size: int) -> torch.Tensor:
            u = torch.stack([torch.randn(shape, generator=generator, dtype=dtype) for _ in range(size)]).to(device)
            return u if weights is None else u * weights.reshape(shape)

        return outs, probes, gaussian
    count = outs[0][0].numel()

    def one_hot(start: int, size: int) -> torch.Tensor:
        v = torch.zeros((size, shape[0], count), dtype=dtype, device=device)
        picks = torch.arange(size, device=device)
        v[picks, :, picks + start] = 1
        return v if weights is None else v.mul_(weights)

    return [out.reshape(len(out), -1) for out in outs], count, one_hot


def _k(ks: Covariances, layer: Layer, features: int, device: torch.device) -> torch.Tensor:
    """The layer's K so far, zeros at first."""
    if layer.name not in ks:
        ks[layer.name] = torch.zeros(features, features, dtype=torch.float64, device=device)
    return ks[layer.name]


def _add(ks: Covariances, layer: Layer, g: torch.Tensor, fast: bool) -> None:
    """K += Σ g gᵀ over every output, sample and position of one site's batched gradient g (B, *site's shape), in
    float64, on the layer's rows (``gram``). The layer's feature dimension is moved first as a view, (features,
    rows); a conv's channels are copied there first, as its tall product runs ~1.5× faster that way."""
    dim = layer.dim % (g.dim() - 1) + 1
    if dim == g.dim() - 1:
        flat = g[..., layer.rows]
        flat = flat.reshape(-1, flat.shape[-1]).T
    else:
        flat = g.movedim(dim, 0)[layer.rows]
        flat = flat.reshape(len(flat), -1)
    (gram.fast if fast else gram.pinned)(_k(ks, layer, len(flat), flat.device), flat)


def _run(run: Run, batch: torch.Tensor, by_site: dict[str, list[Layer]], output: Outputs, dims: tuple[int, int],
         first: bool) -> tuple[torch.Tensor, torch.Tensor, list[str], list[torch.Tensor]]:
    """One forward pass: f with its samples first, f as ``output`` gave it, and the site of every shift with the
    shifts, in call order. Every layer must run in the ``first`` batch, before any backward pass (one that never runs
    is refused); in a later batch a layer may not run (conditional computation: an expert no token was routed to),
    and that batch adds nothing to its K."""
    returned, shifts, values = run(batch)
    untracked = [layer.name for site, each in values.items() if not all(h.requires_grad for h in each)
                 for layer in by_site[site]]
    if untracked:
        raise ValueError(f"layers {untracked} ran without autograd (inside torch.no_grad(), or a "
                         "torch.utils.checkpoint with use_reentrant=True, which runs its forward so), so no gradient "
                         "reaches them and their K would be zero: checkpoint with use_reentrant=False, or measure "
                         "without checkpointing")
    missing = [layer.name for site, layers in by_site.items() if site not in shifts for layer in layers]
    if missing and first:
        called = [layer.name for site, layers in by_site.items() if site in shifts for layer in layers]
        raise ValueError(f"layers {missing} were not called in the forward pass, so their outputs cannot be "
                         "measured: the model skips them, or uses their weights through torch.nn.functional without "
                         "calling the module (torchvision's Swin attention does); "
                         + (f"leave them out, layers={called}" if called else "no measured layer was called"))
    calls = [(site, shift) for site, each in shifts.items() for shift in each]
    f, (sample_dim, out_dim) = output(returned), dims
    if f.dim() <= out_dim or f.shape[out_dim] != batch.shape[sample_dim]:
        raise ValueError(f"the outputs f of a batch of {batch.shape[sample_dim]} samples have shape {tuple(f.shape)}, "
                         f"not one row per sample along dimension {out_dim} as on the first batch")
    return f.movedim(out_dim, 0), f, [site for site, _ in calls], [shift for _, shift in calls]


def _through_readout(ks: Covariances, by_site: dict[str, list[Layer]], sites: list[str], wrts: list[torch.Tensor],
                     f: torch.Tensor, plan: readout.Plan) -> list[int]:
    """K of the readout's own layers (an nn.Linear's: features last) and of those with the closed form whose features
    are last too (``readout``), added; their shifts' indices."""
    elementwise = [i for i in plan.elementwise
                   if all(layer.dim % wrts[i].dim() == wrts[i].dim() - 1 for layer in by_site[sites[i]])]
    for i in plan.own + elementwise:
        for layer in by_site[sites[i]]:
            k = _k(ks, layer, len(range(wrts[i].shape[-1])[layer.rows]), f.device)
            if i in plan.own:
                readout.add_own(k, f)
            else:
                readout.add_elementwise(k, layer, plan.call, wrts[i])
    return plan.own + elementwise


def _add_batch(sums: list[Covariances], runs: list[Run], batch: torch.Tensor, by_site: dict[str, list[Layer]],
               probes: int | None, generator: torch.Generator, output: Outputs, dims: tuple[int, int],
               chunk_bytes: int, fast: bool, first: bool,
               last: Callable[[], readout.Call | None] | None = None, mask: torch.Tensor | None = None) -> None:
    """K (sums[0]) and, with an init model's run, K̄ (sums[1]) over one batch (the ``first``: ``_run``). A function of
    its own so that the batch's graph, shifts and gradients are freed before the next batch's forward pass
    (``mlp_nfa``'s memory plan). ``last``: the readout's call (``readout.last_linear``), to sum through it, with one
    model, no probes and no mask. ``mask``: the batch's, of the outputs that are samples' own."""
    outs, raws, sites, wrts = (list(each) for each in zip(*(_run(run, batch, by_site, output, dims, first)
                                                             for run in runs)))
    if any(s != sites[0] for s in sites) or any(a.shape != b.shape for w in wrts[1:] for a, b in zip(wrts[0], w)):
        raise ValueError("the model and init call their layers in different orders, or on different numbers of rows "
                         "(samples routed to other experts): K̄ pairs each call's gradients with init's at the same "
                         "call, so init= must be the same network, routing alike; measure without init= otherwise")
    plan = None if last is None else readout.plan(last(), raws[0], wrts[0], dims[1])
    if plan is None:
        weights = None if mask is None else _weights(mask, raws[0], dims[1])
        starts, count, cotangents = _general(outs, probes, generator, weights)
    else:
        done = _through_readout(sums[0], by_site, sites[0], wrts[0], raws[0], plan)
        sites[0] = [site for i, site in enumerate(sites[0]) if i not in done]
        wrts[0] = [shift for i, shift in enumerate(wrts[0]) if i not in done]
        if not wrts[0]:
            return
        starts, count, cotangents = ([plan.z], len(plan.basis) * plan.z.shape[1], plan.cotangents) \
            if plan.z is not None else _general(outs, probes, generator)
    # unpacked: no chunk held past the next
    for now, *then in _passes(starts, wrts, count, cotangents, chunk_bytes):
        for i, (site, g) in enumerate(zip(sites[0], now)):
            diff = g - then[0][i] if then else None
            for layer in by_site[site]:
                _add(sums[0], layer, g, fast)
                if diff is not None:
                    _add(sums[1], layer, diff, fast)


def _summed(models: list[nn.Module], x: torch.Tensor, layers: list[Layer], batch_size: int, probes: int | None,
            generator: torch.Generator, output: Outputs, sample_dim: int, chunk_bytes: int, fast: bool,
            mask: torch.Tensor | None, check: bool) -> tuple[list[Covariances], set[str]]:
    """The unscaled sums of ``k_sums`` over x's batches, by layer name. With ``check``, the layers whose output the
    samples share (``interaction.shared_sites``) are found first, and returned in place of sums where there are
    any."""
    by_site: dict[str, list[Layer]] = {}
    for layer in layers:
        by_site.setdefault(layer.site, []).append(layer)
    sums: list[Covariances] = [{} for _ in models]
    with ExitStack() as stack:
        for net in models:
            stack.enter_context(_measuring(net))
        runs = [stack.enter_context(output_shifts(net, layers)) for net in models]
        closed = fast and len(models) == 1 and probes is None and mask is None
        last = stack.enter_context(readout.last_linear(models[0])) if closed else None
        out_dim, unmoved = sample_dims(runs[0], x, sample_dim, output)
        dims = (sample_dim, out_dim)
        if check:
            shared = {layer.name for site in shared_sites(runs[0], x, sample_dim, output, out_dim, unmoved)
                      for layer in by_site[site]}
            if shared:
                return sums, shared
        masks = _mask_batches(mask, x.shape[sample_dim], dims[1], batch_size)
        for i, (batch, m) in enumerate(zip(x.split(batch_size, dim=sample_dim), masks)):
            _add_batch(sums, runs, batch, by_site, probes, generator, output, dims, chunk_bytes, fast, i == 0, last, m)
    return sums, set()


def k_sums(model: nn.Module, x: torch.Tensor, layers: list[Layer], init: nn.Module | None, batch_size: int,
           probes: int | None, generator: torch.Generator | None, output: Outputs, sample_dim: int,
           chunk_bytes: int = CHUNK_BYTES, fast: bool = False, mask: torch.Tensor | None = None) -> list[Covariances]:
    """[K] of every layer over the samples x, or [K, K̄] with ``init``; (k_{ℓ+1}, k_{ℓ+1}) float64 on x's device.
    Arguments checked (``checked_x``) and layers chosen (``chosen_layers``) by the caller. Layers whose output the
    samples of a batch share are summed one sample at a time, with a warning (``SHARED``)."""
    generator = torch.Generator().manual_seed(0) if generator is None else generator
    mask = checked_mask(mask)
    if init is not None:
        checked_init(model, init, layers)
    models = [model] if init is None else [model, init]
    options = (probes, generator, output, sample_dim, chunk_bytes, fast, mask)
    sums, shared = _summed(models, x, layers, batch_size, *options, check=batch_size > 1)
    if shared:
        n = x.shape[sample_dim]
        warnings.warn(SHARED.format(names=sorted(shared), n=n), stacklevel=3)
        rest = [layer for layer in layers if layer.name not in shared]
        sums = _summed(models, x, rest, batch_size, *options, check=False)[0] if rest else sums
        alone = _summed(models, x, [layer for layer in layers if layer.name in shared], 1, *options, check=False)[0]
        sums = [batched | each for batched, each in zip(sums, alone)]
    scale = x.shape[sample_dim] * (probes or 1)
    ks = [{name: (k if fast else gram.symmetric(k)).div_(scale) for name, k in each.items()} for each in sums]
    for each in ks:  # a layer whose site never gave a gradient (no chunk ran) has K = 0
        for layer in layers:
            if layer.name not in each:
                rows = layer.matrix(model).shape[0]
                each[layer.name] = torch.zeros(rows, rows, dtype=torch.float64, device=x.device)
    return ks


def covariances(model: nn.Module, x: torch.Tensor, layers: Collection[str] | None = None, *,
                init: nn.Module | None = None, batch_size: int = 256, probes: int | None = None,
                generator: torch.Generator | None = None, output: Outputs = logits,
                sample_dim: int = 0, chunk_bytes: int = CHUNK_BYTES, fast: bool = False,
                mask: torch.Tensor | None = None) -> tuple[Covariances, Covariances | None]:
    """K = (1/n) Σ g gᵀ, g = ∂f/∂h (float64, on x's device), of every layer of ``model`` over the samples ``x``, by
    layer name, and with ``init`` (the same network at initialization) K̄ from g − g₀, g₀ init's gradient of the same
    output j (or probe u) at the same sample and position; None in its place without. The one K sum of the library
    and of the pipeline's families (``mlp_nfa``, ``conv_nfa``, ``attention_nfa``).

    ``batch_size``: samples per forward pass; their graph is held through all its backward passes. ``chunk_bytes``:
    what one batched backward pass's gradients may take (0: one output or probe per pass, the memory ``mlp_nfa``'s
    plan counts). ``fast``: the library's sum (``measure_nfa``'s and ``agop``'s: ``gram.fast``'s float64 products and
    ``readout``'s shortcuts), equal to rounding but not bitwise to the default, which the pipeline's published stores
    were computed with. Other options as ``measure_nfa``; the probes are drawn per batch, so their K depends on
    ``batch_size`` as well as the seed.
    """
    x, sample_dim = checked_x(x, batch_size, probes, sample_dim)
    model, init = unwrapped(model), unwrapped(init, "init")
    found, _ = chosen_layers(model, layers, warn=False)
    ks = k_sums(model, x, found, init, batch_size, probes, generator, output, sample_dim, chunk_bytes, fast, mask)
    return ks[0], ks[1] if init is not None else None
