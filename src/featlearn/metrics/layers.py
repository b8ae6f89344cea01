"""The layers of any nn.Module that the NFA measures, their weight matrices, and zero shifts on their outputs.

Every measured layer computes h = W p (+ b) at every sample and position, p its input (a conv's unfolded patch, a
token), W the matrix that ``Layer.matrix`` returns. A zero tensor added to h and differentiated against gives ∂f/∂h
at every sample and position at once (``jacobians``), hence K and the AGOP WᵀKW with respect to p (``model_nfa``).

Found: nn.Linear; nn.Conv1d/2d/3d (W in patch space, as ``conv_nfa``; grouped convs block-diagonal); the q, k, v
projections and out_proj of nn.MultiheadAttention (torchvision's ViT, nn.Transformer); a fused Linear(C, 3C) named
in ``FUSED_QKV`` (nanoGPT's ``c_attn``, timm's ``qkv``) split into its q, k, v rows as ``gpt.attention_weights``.
Separate Linear q/k/v (Hugging Face's q_proj, k_proj, v_proj) are Linears and need nothing more.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.overrides import TorchFunctionMode

from featlearn.metrics.jacobians import zero_shifts

FUSED_QKV = ("c_attn", "qkv")
CONVS = (nn.Conv1d, nn.Conv2d, nn.Conv3d)
QKV = "qkv"
Shifts = dict[str, list[torch.Tensor]]


@dataclass(frozen=True)
class Layer:
    """One measured weight matrix: ``name`` labels it, ``path`` is its module, ``kind`` linear, conv or attention,
    ``site`` the output it shifts (shared by the three parts of a fused projection), ``dim`` that output's feature
    dimension, ``rows`` its part of that output and of the module's matrix, which ``weight`` reads off the module."""

    name: str
    path: str
    kind: str
    site: str
    dim: int
    rows: slice
    weight: Callable[[nn.Module], torch.Tensor]

    def matrix(self, model: nn.Module) -> torch.Tensor:
        """W (k_{ℓ+1}, k_ℓ) of this layer in ``model`` (or in another model with the same module names), detached."""
        return self.weight(model.get_submodule(self.path)).detach()[self.rows]


def conv_weight_matrix(conv: nn.Module) -> torch.Tensor:
    """W = conv.weight as (C_out, C_in·kh·kw), patch → channel, columns in F.unfold's order (channel slowest): the
    NFM's W of a conv layer, here and in the pipeline's conv family (``conv_nfa``)."""
    return conv.weight.detach().reshape(conv.out_channels, -1)


def _conv_matrix(conv: nn.Module) -> torch.Tensor:
    """W (C_out, C_in·Πkernel) in patch space; a grouped conv's is block-diagonal over its groups."""
    w = conv_weight_matrix(conv)
    return w if conv.groups == 1 else torch.block_diag(*w.chunk(conv.groups))


def _thirds(width: int) -> dict[str, slice]:
    return {proj: slice(i * width, (i + 1) * width) for i, proj in enumerate(QKV)}


def _attention_layers(path: str, mha: nn.MultiheadAttention) -> Iterator[Layer]:
    prefix = f"{path}." if path else ""
    separate = mha.in_proj_weight is None  # kdim or vdim other than embed_dim: one parameter per projection
    for proj, rows in _thirds(mha.embed_dim).items():
        yield Layer(prefix + proj, path, "attention", prefix + proj, -1, slice(None),
                    (lambda m, p=proj: getattr(m, f"{p}_proj_weight")) if separate else
                    (lambda m, r=rows: m.in_proj_weight[r]))
    yield Layer(prefix + "out_proj", path, "attention", prefix + "out_proj", -1, slice(None),
                lambda m: m.out_proj.weight)


def module_names(model: nn.Module, modules: Iterable[nn.Module]) -> list[str]:
    """The names of ``modules`` in ``model`` (``named_modules``'): how the pipeline's families, which hold their layers
    as attributes (an MLP's hidden layers, VGG's convs), pick them out of ``find_layers``."""
    names = {id(module): name for name, module in model.named_modules()}
    return [names[id(module)] for module in modules]


def find_layers(model: nn.Module, names: Collection[str] | None = None) -> list[Layer]:
    """Every measurable layer of ``model`` in module order, or those named in ``names``."""
    found, inside_attention = [], set()
    for path, module in model.named_modules():
        if isinstance(module, nn.MultiheadAttention):
            inside_attention.add(module.out_proj)  # its forward never runs: F.multi_head_attention_forward
            found.extend(_attention_layers(path, module))
        elif isinstance(module, nn.Linear) and module not in inside_attention:
            fused = path.rpartition(".")[2] in FUSED_QKV and module.out_features == 3 * module.in_features
            parts = _thirds(module.in_features) if fused else {"": slice(None)}
            found.extend(Layer(f"{path}.{p}" if p else path, path, "attention" if fused else "linear", path, -1, rows,
                               lambda m: m.weight) for p, rows in parts.items())
        elif isinstance(module, CONVS):
            found.append(Layer(path, path, "conv", path, 1, slice(None), _conv_matrix))
    if names is None:
        return found
    unknown = set(names) - {layer.name for layer in found}
    if unknown:
        raise ValueError(f"no measurable layers named {sorted(unknown)}; found {[layer.name for layer in found]}")
    return [layer for layer in found if layer.name in names]


class _ProjectionShifts(TorchFunctionMode):
    """Adds zero shifts to the q, k, v projections inside F.multi_head_attention_forward, which nn.MultiheadAttention
    calls with its weights rather than through submodules: the call is rerun on the projections already made (and
    shifted) with identity projection weights. Active, it also turns off the fused fast paths of nn.Transformer*
    (they bypass hooks), since a mode counts as a __torch_function__ override."""

    def __init__(self, prefixes: dict[nn.Module, str], add: Callable[[str, torch.Tensor], torch.Tensor]) -> None:
        super().__init__()
        self.prefixes = {id(mha.out_proj.weight): prefix for mha, prefix in prefixes.items()}
        self.add = add
        self.signature = inspect.signature(F.multi_head_attention_forward)

    def __torch_function__(self, func: Callable, types: tuple, args: tuple = (), kwargs: dict | None = None) -> object:
        kwargs = kwargs or {}
        if func is not F.multi_head_attention_forward:
            return func(*args, **kwargs)
        call = self.signature.bind(*args, **kwargs).arguments
        prefix = self.prefixes.get(id(call["out_proj_weight"]))
        if prefix is None:
            return func(*args, **kwargs)
        if call.get("use_separate_proj_weight"):
            weights = [call[f"{p}_proj_weight"] for p in QKV]
        else:
            weights = list(call["in_proj_weight"].chunk(3))
        bias = call["in_proj_bias"]
        biases = [None] * 3 if bias is None else list(bias.chunk(3))
        for proj, inp, w, b in zip(QKV, ("query", "key", "value"), weights, biases):
            call[inp] = self.add(prefix + proj, F.linear(call[inp], w, b))
        eye = torch.eye(call["embed_dim_to_check"], dtype=weights[0].dtype, device=weights[0].device)
        call.update(use_separate_proj_weight=True, in_proj_weight=None, in_proj_bias=None, q_proj_weight=eye,
                    k_proj_weight=eye, v_proj_weight=eye)
        return func(**call)


@contextmanager
def output_shifts(model: nn.Module, layers: list[Layer]) -> Iterator[Callable[[object], tuple[object, Shifts]]]:
    """While open, ``run(x)`` is ``model(x)`` with a fresh zero shift (requires_grad) added to the output of every
    layer's site, and returns the model's output and those shifts, {site: [shifts]}, one per call of the site (a
    module called twice adds two)."""
    measured = {layer.site for layer in layers}
    shifts: Shifts = {}

    def add(site: str, h: torch.Tensor) -> torch.Tensor:
        if site not in measured:
            return h
        (shift,) = zero_shifts([h.shape], h.dtype, h.device)
        shifts.setdefault(site, []).append(shift)
        return h + shift

    def output_hook(site: str, first: bool) -> Callable:
        def hook(_module: nn.Module, _args: tuple, out: object) -> object:
            return (add(site, out[0]), *out[1:]) if first else add(site, out)

        return hook

    attention = {}
    with ExitStack() as stack:
        for layer in {layer.site: layer for layer in layers}.values():
            module = model.get_submodule(layer.path)
            if isinstance(module, nn.MultiheadAttention):
                attention[module] = f"{layer.path}." if layer.path else ""
                if layer.site.endswith("out_proj"):
                    stack.callback(module.register_forward_hook(output_hook(layer.site, True)).remove)
            else:
                stack.callback(module.register_forward_hook(output_hook(layer.site, False)).remove)

        def run(x: object) -> tuple[object, Shifts]:
            shifts.clear()
            with _ProjectionShifts(attention, add):
                out = model(x)
            return out, dict(shifts)

        yield run
