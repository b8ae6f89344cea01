"""The K sum through a Linear readout f = W_R z + b (the nn.Linear whose output is f itself, as in MLPs,
classifiers and language models' heads), where f depends on the measured layers only through z:

* backward passes start at z, not f: Σ_j (∂f_j/∂·)(∂f_j/∂·)ᵀ = Σ_r (∂⟨F_r, z⟩/∂·)(∂⟨F_r, z⟩/∂·)ᵀ for any F with
  FᵀF = W_RᵀW_R, per position: F = W_R (its c rows: the readout's own backward is skipped), or with more outputs than
  inputs, R of W_R = QR (m rows: ResNet's 1,000 classes in 512 passes, a language model's vocabulary in n_embd),
  computed in float64 and rounded to the model's dtype (a float32 resnet18's K within 2e-7 of the one-hot sum's);
* the readout's own K (a measured readout) is the number of positions times I: ∂f_j/∂(its output) is one-hot;
* the layer feeding z through elementwise activations (z = φ(h): the last hidden layer of an MLP or of an MLP head)
  has K in closed form, ∂f_j/∂h = w_j ⊙ φ'(h), so

    K = (1/n) Σ_samples Σ_positions Σ_j (w_j ⊙ d)(w_j ⊙ d)ᵀ = (W_Rᵀ W_R) ⊙ (1/n) Σ_samples Σ_positions d dᵀ,

  d = φ'(h) from one backward pass of Σ z, and a float64 product over the samples' rows alone, not every output's
  (a float32 one where d holds zeros and ones, as ReLU's does: its sums are counts, exact; ``gram.zero_one``). At
  one output the rows are as many, but ReLU's product is then ~2.5× cheaper than the general sum's.

``plan`` reads all three off the autograd graph of one forward pass, exactly: from f, the graph may reach a layer's
zero shift only through z, and for the closed form, from z through ``ELEMENTWISE`` operations of one input each.
Anything else (a normalisation, a pooling, a residual path around the activation) keeps the general sum (``k_sum``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

import torch
from torch import nn

from featlearn.metrics import gram
from featlearn.metrics.layers import Layer

# Autograd nodes of elementwise functions of one tensor (their backward multiplies by φ' entry by entry).
ELEMENTWISE = frozenset({
    "ReluBackward0", "ThresholdBackward0", "GeluBackward0", "SiluBackward0", "TanhBackward0", "SigmoidBackward0",
    "LeakyReluBackward0", "EluBackward0", "CeluBackward0", "SoftplusBackward0", "HardtanhBackward0",
    "HardswishBackward0", "HardsigmoidBackward0", "MishBackward0", "PowBackward0", "CloneBackward0",
})


@dataclass
class Call:
    """One call of an nn.Linear: its W (out, in), its input z and its output (after any shift); ``bases``, the
    ``basis`` of every readout so far, by W and dtype (a language model's QR costs seconds: once per sum)."""

    weight: torch.Tensor
    z: torch.Tensor
    out: torch.Tensor
    bases: dict[tuple[int, torch.dtype], tuple[torch.Tensor, torch.Tensor]]

    def basis(self, dtype: torch.dtype) -> torch.Tensor:
        """F with FᵀF = WᵀW in as few rows as the readout allows: W's own, or R of W = QR in float64. Cached with W
        itself, so that its id is not reused while cached."""
        key = (id(self.weight), dtype)
        if key not in self.bases:
            w = self.weight.detach()
            self.bases[key] = (self.weight, w.to(dtype) if w.shape[0] <= w.shape[1] else
                               torch.linalg.qr(w.to(torch.float64), mode="r")[1].to(dtype))
        return self.bases[key][1]


@contextmanager
def last_linear(model: nn.Module) -> Iterator[Callable[[], Call | None]]:
    """While open, a function giving the last call of any nn.Linear of ``model`` (the readout candidate; subclasses
    with a forward of their own left out) in the latest forward pass. Opened after ``layers.output_shifts``, so that
    its hooks run after the shifts' and a measured readout's output is seen shifted, as f is."""
    last: list[Call | None] = [None]
    bases: dict[tuple[int, torch.dtype], tuple[torch.Tensor, torch.Tensor]] = {}

    def record(module: nn.Module, args: tuple, out: object) -> None:
        z = args[0] if args else None
        last[0] = Call(module.weight, z, out, bases) if isinstance(z, torch.Tensor) else None

    with ExitStack() as stack:
        for module in model.modules():
            if isinstance(module, nn.Linear) and type(module).forward is nn.Linear.forward:  # not a LoRA or such
                stack.callback(module.register_forward_hook(record).remove)
        yield lambda: last[0]


def _is_shift(node: object, shift: torch.Tensor) -> bool:
    return getattr(node, "variable", None) is shift


def _reaches(node: object, shift: torch.Tensor) -> bool:
    """Whether ``node`` is the addition of ``shift`` to a layer's output, reached from the readout's input through
    elementwise operations of one input each."""
    while node is not None:
        edges = [n for n, _ in node.next_functions if n is not None]
        if node.name() == "AddBackward0" and any(_is_shift(n, shift) for n in edges):
            return True
        if node.name() not in ELEMENTWISE or len(edges) != 1:
            return False
        node = edges[0]
    return False


def _leaves(root: object, stop: object) -> set[int]:
    """The ids of the leaf tensors (shifts among them) that the graph from ``root`` reaches other than through
    ``stop`` (the readout's input)."""
    seen, todo, leaves = {id(stop)}, [root], set()
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if hasattr(node, "variable"):
            leaves.add(id(node.variable))
        todo.extend(n for n, _ in node.next_functions)
    return leaves


@dataclass
class Plan:
    """One batch's sum through its readout ``call``: the indices of the shifts on the readout's own output
    (``own``) and of those with the closed form (``elementwise``); ``z``, the readout's input with its samples first
    and its positions flattened, (n, positions, m), and ``basis``, F, where the other layers' passes start (z None:
    from f, by the general sum)."""

    call: Call
    own: list[int]
    elementwise: list[int]
    z: torch.Tensor | None
    basis: torch.Tensor | None

    def cotangents(self, start: int, size: int) -> torch.Tensor:
        """Passes ``start`` to ``start + size`` of the ``len(basis)`` per position: F_r at one position of every
        sample, (size, n, positions, m)."""
        n, positions, m = self.z.shape
        index = torch.arange(start, start + size, device=self.z.device)
        rows = self.basis[index % len(self.basis)]
        if positions == 1:
            return rows[:, None, None, :].expand(size, n, 1, m)
        v = torch.zeros((size, n, positions, m), dtype=self.z.dtype, device=self.z.device)
        v[torch.arange(size, device=v.device), :, index // len(self.basis)] = rows[:, None, :]
        return v


def plan(call: Call | None, f: torch.Tensor, shifts: list[torch.Tensor], out_dim: int) -> Plan | None:
    """How to sum one forward pass's K through its readout (``Plan``; the module's docstring), or None where f is
    not a readout's output (or its samples are on the readout's feature dimension)."""
    if call is None or call.out is not f or f.grad_fn is None or out_dim == f.dim() - 1:
        return None
    root, z = f.grad_fn, call.z
    edges = [n for n, _ in root.next_functions if n is not None]
    own = [i for i, shift in enumerate(shifts) if root.name() == "AddBackward0" and any(_is_shift(n, shift)
                                                                                       for n in edges)]
    if own:
        root = next((n for n in edges if not _is_shift(n, shifts[own[0]])), None)
    rest = [i for i in range(len(shifts)) if i not in own]
    if z.grad_fn is None:
        return Plan(call, own, [], None, None)
    elsewhere = _leaves(root, z.grad_fn)
    basis = call.basis(z.dtype)
    elementwise = [i for i in rest if id(shifts[i]) not in elsewhere
                   and shifts[i].shape == z.shape and _reaches(z.grad_fn, shifts[i])]
    if any(id(shifts[i]) in elsewhere for i in rest):
        return Plan(call, own, elementwise, None, None)
    z = z.movedim(out_dim, 0)
    return Plan(call, own, elementwise, z.reshape(len(z), -1, z.shape[-1]), basis)


def add_own(k: torch.Tensor, f: torch.Tensor) -> None:
    """K += (rows of f: samples × positions) · I over one batch, for the readout's own output."""
    k.diagonal().add_(f.numel() // f.shape[-1])


def add_elementwise(k: torch.Tensor, layer: Layer, call: Call, shift: torch.Tensor) -> None:
    """K += (W_Rᵀ W_R) ⊙ Σ d dᵀ over one batch, on the layer's rows, in float64; the graph is kept."""
    (d,) = torch.autograd.grad(call.z, shift, torch.ones_like(call.z), retain_graph=True)
    d = d[..., layer.rows]
    d = d.reshape(-1, d.shape[-1]).T
    w = call.weight.detach()[:, layer.rows].to(torch.float64)
    dd = torch.zeros_like(k)
    if not gram.zero_one(dd, d):
        gram.fast(dd, d)
    k.add_(w.T @ w * dd)
