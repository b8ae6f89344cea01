"""Adapted layers: a module built around an nn.Linear of its own that computes with W + ΔW, not with any of its parts
(peft's LoRA ``Linear``, whose ``base_layer`` the Linear is, or any module computing W x + B A x), is measured as the
one affine map it computes (``layers.scan``), its matrix read off the module as that map's Jacobian
(``effective_matrix``). Measuring its parts instead would give W_baseᵀKW_base, the AGOP of a matrix the model does
not compute with (90–113% off the merged layer's on a LoRA-tuned MLP).

Recognised by what the module computes, on random inputs, in eval mode: its output is affine in its input and is a
Linear child's output plus other terms (that child called on the module's own input, its output passed on unchanged:
so a Linear in series with others, or a block that merely holds Linears, is not taken for an adapter). A peft layer
(``base_layer``) that is not such a map, a LoRA conv or DoRA's rescaled output, is refused with how to merge it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
from torch import nn

# peft's name for the layer an adapter wraps (its BaseTunerLayer)
BASE_LAYER = "base_layer"
MERGE = ("a peft adapter around a {base}, not measured: only an adapted Linear is read as the one map it computes, "
         "and its parts are not the layer the model computes with; merge the adapters into the base weights first "
         "(model = model.merge_and_unload()) to measure it")
PART = ("part of the adapted layer {path!r} (W + ΔW), which is measured as the one map it computes (its parts are "
        "not the matrix the model computes with)")
# The most the midpoint test may miss by (as ``layers._linear_like``'s orientation test).
RTOL, ATOL = 1e-4, 1e-5


@contextmanager
def _evaluating(module: nn.Module) -> Iterator[None]:
    """Eval mode (an adapter's dropout off) for the probes, then every submodule's own mode back."""
    training = [m for m in module.modules() if m.training]
    for m in training:
        m.training = False
    try:
        yield
    finally:
        for m in training:
            m.training = True


def _sizes(module: nn.Module, base: nn.Module) -> tuple[int, int] | None:
    """(in, out) features of the layer: the base Linear's, or a peft layer's own attributes (a Conv1D base)."""
    if isinstance(base, nn.Linear):
        return base.in_features, base.out_features
    sizes = getattr(module, "in_features", None), getattr(module, "out_features", None)
    return sizes if all(isinstance(size, int) for size in sizes) else None


def _random(rows: int, features: int, like: torch.Tensor, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(rows, features, generator=g).to(dtype=like.dtype, device=like.device)


def _affine(module: nn.Module, features: tuple[int, int], like: torch.Tensor) -> bool:
    """Whether the module maps (3, in) to (3, out) affinely: its value at the midpoint of two random inputs is the
    midpoint of its values there."""
    inputs, outputs = features
    a, b = _random(3, inputs, like, 1), _random(3, inputs, like, 2)
    try:
        with torch.no_grad():
            fa, fb, fm = module(a), module(b), module((a + b) / 2)
    except Exception:  # noqa: BLE001 (any failure means: not a layer of this input size)
        return False
    if not all(isinstance(t, torch.Tensor) and t.shape == (3, outputs) for t in (fa, fb, fm)):
        return False
    mid = (fa + fb) / 2
    return torch.allclose(fm, mid, rtol=RTOL, atol=ATOL * float(mid.abs().max().clamp_min(1)))


def _adds(module: nn.Module, base: nn.Module, extra: list[nn.Parameter], inputs: int, like: torch.Tensor) -> bool:
    """Whether the module calls ``base`` once, on its own input, and passes base's output on unchanged (the gradient
    of its output reaches base's output as it was: base in parallel with the other terms, not in series), adding
    terms that use its ``extra`` parameters (their value or a gradient to one of them not zero: B A x at B = 0 is
    used, a layer whose output is dropped is not)."""
    calls = []
    handle = base.register_forward_hook(lambda _m, args, out: calls.append((args, out)))
    p = _random(3, inputs, like, 3).requires_grad_(True)
    try:
        with torch.enable_grad():
            out = module(p)
    except Exception:  # noqa: BLE001 (any failure means: not called so)
        return False
    finally:
        handle.remove()
    if len(calls) != 1 or not calls[0][0] or not isinstance(calls[0][1], torch.Tensor):
        return False
    (args, h) = calls[0]
    if not torch.equal(args[0], p) or not h.requires_grad or not out.requires_grad:
        return False
    v = torch.randn(out.shape, generator=torch.Generator().manual_seed(4)).to(dtype=out.dtype, device=out.device)
    tracked = [q for q in extra if q.requires_grad]
    g, *others = torch.autograd.grad(out, [h, *tracked], v, allow_unused=True)
    used = not torch.equal(out, h) or any(o is not None and bool(o.any()) for o in others)
    return g is not None and torch.equal(g, v) and used


def effective_matrix(features: tuple[int, int]) -> Callable[[nn.Module], torch.Tensor]:
    """A function reading W (out, in) off an adapted module: the Jacobian of the affine map it computes (in eval
    mode), from one backward pass over ``out`` rows (no bias subtracted, so no rounding of it enters W)."""
    inputs, outputs = features

    def read(module: nn.Module) -> torch.Tensor:
        like = next(module.parameters())
        with _evaluating(module), torch.enable_grad():
            x = torch.zeros(outputs, inputs, dtype=like.dtype, device=like.device, requires_grad=True)
            y = module(x)
            (w,) = torch.autograd.grad(y, x, torch.eye(outputs, dtype=y.dtype, device=y.device))
        return w

    return read


def adapted(module: nn.Module) -> Callable[[nn.Module], torch.Tensor] | str | None:
    """How to read the matrix of an adapted layer (``effective_matrix``), the reason it is refused (a peft layer that
    is not one affine map: ``MERGE``), or None where ``module`` is no adapter. Only a module with an nn.Linear child
    (or a peft ``base_layer``) and parameters of its own beyond it is tried; on the meta device, which computes
    nothing, none is."""
    peft_base = module._modules.get(BASE_LAYER)
    bases = [peft_base] if peft_base is not None else [c for c in module.children() if isinstance(c, nn.Linear)]
    like = next(module.parameters(), None)
    if not bases or like is None or like.is_meta:
        return None
    for base in bases:
        held = {id(p) for p in base.parameters()}
        extra = [p for p in module.parameters() if id(p) not in held]
        features = _sizes(module, base)
        if not extra or features is None:
            continue
        with _evaluating(module):
            if _affine(module, features, like) and (peft_base is not None
                                                    or _adds(module, base, extra, features[0], like)):
                return effective_matrix(features)
    return MERGE.format(base=type(peft_base).__name__) if peft_base is not None else None
