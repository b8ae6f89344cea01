"""The check that a model's samples do not interact, which the K sum (``k_sum``) needs: one backward pass of
Σ_samples f_j gives every sample's own ∂f_j/∂h only if no sample's outputs depend on another's inputs.

Before measuring, sample 0 of a small batch is replaced by another sample, and no other sample's rows of f may
change; a model that fails (BatchNorm on batch statistics, batch centring, attention over the batch dimension) is
refused, naming the first measured layer whose output changed in other samples' rows, not measured wrong.

Samples that do not interact may still share a layer's output: computed once for the batch and broadcast to every
sample, it has no row of its own per sample, and the backward pass over a batch sums their gradients before the
product. ``shared_sites`` finds such layers, which ``k_sum`` then sums one sample at a time.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from featlearn.metrics.layers import Shifts

Outputs = Callable[[object], torch.Tensor]
Run = Callable[[object], tuple[object, Shifts, Shifts]]
# Samples the check runs on (a small batch: two forward passes of it).
CHECK_SAMPLES = 16
# The most a row may move, relative to the largest magnitude, and still count as unchanged. 1,000 units of rounding
# would let bfloat16 and float16 hide anything (BatchNorm on batch statistics moved other rows by a few percent, under
# their 7.8 and 0.98); the rows of samples that do not interact come out bitwise equal on the CPU in every dtype.
RELATIVE = 1e-3
INTERACTION = ("the model mixes samples (BatchNorm without running statistics, batch centring or normalisation, "
               "attention over the batch dimension), or x's samples are not on dimension {dim}. K sums per-sample "
               "gradients over a whole batch, so this would be measured wrong: pass sample_dim= the dimension of x "
               "holding the samples (1 for a sequence-first (T, N, …) input), or measure a model whose samples are "
               "independent (BatchNorm with running statistics, in eval mode)")


def _changed(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Where b differs from a beyond rounding (bool, a's shape): by more than ``RELATIVE`` of a's largest magnitude, or
    1,000 units of rounding if the dtype's are finer (float32, float64)."""
    if not a.is_floating_point():
        return a != b
    scale = float(a.abs().max()) if a.numel() else 0.0
    return (a - b).abs() > min(1e3 * torch.finfo(a.dtype).eps, RELATIVE) * scale


def _moved(h: torch.Tensor, h2: torch.Tensor) -> bool:
    """Whether a site's output moved between two runs (in shape too: rows routed elsewhere)."""
    return h.shape != h2.shape or bool(_changed(h.detach(), h2.detach()).any())


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


@torch.no_grad()
def sample_dims(run: Run, x: torch.Tensor, sample_dim: int, output: Outputs) -> tuple[int, set[str] | None]:
    """The dimension of f holding the samples, after checking that samples do not interact (the module's docstring),
    and the measured sites whose outputs did not move when sample 0 did (None where nothing was compared): the only
    ones that may be shared by the samples (``shared_sites``). An error says which output failed and why, naming
    the first measured layer that mixed samples; the layers are compared only then (f alone decides: K needs f's rows
    to follow the samples). Where no two samples differ (or on the meta device) only the sizes are checked. Without
    gradients: its forward passes build no graph."""
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
        return preferred[0], None
    moved = batch.clone()
    moved.select(sample_dim, 0).copy_(pool.select(sample_dim, other))
    returned2, _, values2 = run(moved)
    follows = _following(_changed(f, output(returned2).detach()), b, blocks=False)
    if follows:
        still = {site for site, each in values.items()
                 if not any(_moved(h, h2) for h, h2 in zip(each, values2.get(site, [])))}
        return (next(d for d in preferred if d in follows) if set(preferred) & set(follows) else follows[0]), still
    for site, each in values.items():  # in call order: the first layer that mixes samples is named
        for h, h2 in zip(each, values2[site]):
            if not _following(_changed(h.detach(), h2.detach()), b, blocks=True):
                raise ValueError(f"samples interact at layer {site!r}: changing sample 0 of x changed other samples' "
                                 f"rows of its output (shape {tuple(h.shape)}): " + INTERACTION.format(dim=sample_dim))
    raise ValueError(f"samples interact: changing sample 0 of x changed other samples' outputs f (shape "
                     f"{tuple(f.shape)}): " + INTERACTION.format(dim=sample_dim))


def shared_sites(run: Run, x: torch.Tensor, sample_dim: int, output: Outputs, out_dim: int,
                 candidates: set[str] | None) -> list[str]:
    """The measured sites whose output rows are not each one sample's: computed once for the batch and broadcast (a
    table, prototypes or a relative-position grid through a layer, a second tower on fixed inputs), so that one
    backward pass over a batch gives (Σ_samples g)(Σ_samples g)ᵀ there, not Σ g gᵀ. Found exactly, on the batch
    ``sample_dims`` checks (an ``output`` may hold per-batch targets): the gradients of sample 0's outputs and of the
    others' (random weights) reach a site's entries in common. Only the ``candidates`` are tried (None: all): a site
    whose output moved with sample 0 alone, where no other sample's did, is no shared one, and where every site moved
    (the common case) no pass is made. Needs autograd on; none on the meta device, or with one sample."""
    b = min(x.shape[sample_dim], CHECK_SAMPLES)
    if b < 2 or x.is_meta or candidates == set():
        return []
    returned, shifts, _ = run(x.narrow(sample_dim, 0, b))
    f = output(returned).movedim(out_dim, 0)
    calls = [(site, shift) for site, each in shifts.items() for shift in each
             if candidates is None or site in candidates]
    if not f.requires_grad or not calls or len(f) != b:
        return []
    v = torch.randn(f.shape, generator=torch.Generator().manual_seed(0)).to(dtype=f.dtype, device=f.device)
    wrt = [shift for _, shift in calls]
    first = torch.autograd.grad(f[:1], wrt, v[:1], retain_graph=True, allow_unused=True)
    second = torch.autograd.grad(f[1:], wrt, v[1:], allow_unused=True)
    return list(dict.fromkeys(site for (site, _), a, b in zip(calls, first, second)
                              if a is not None and b is not None and bool(((a != 0) & (b != 0)).any())))
