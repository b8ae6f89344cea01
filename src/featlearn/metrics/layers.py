"""The layers of any nn.Module that the NFA measures, their weight matrices, and zero shifts on their outputs.

Every measured layer computes h = W p (+ b) at every sample and position, p its input (a conv's unfolded patch, a
token), W the matrix that ``Layer.matrix`` returns. A zero tensor added to h and differentiated against gives ∂f/∂h
at every sample and position at once (``jacobians``), hence K (``k_sum``) and the AGOP WᵀKW with respect to p
(``model_nfa``).

Found: nn.Linear; any other module with a 2-D ``weight`` that computes x Wᵀ + b or x W + b (transformers' ``Conv1D``
in GPT-2, weight stored in×out), recognised by trying it on a random input rather than by its class;
nn.Conv1d/2d/3d (W in patch space, as ``conv_nfa``; grouped convs block-diagonal); the q, k, v projections and
out_proj of nn.MultiheadAttention (torchvision's ViT, nn.Transformer); a fused C → 3C projection named in
``FUSED_QKV`` (nanoGPT's and GPT-2's ``c_attn``, timm's ``qkv``) split into its q, k, v rows as
``gpt.attention_weights``. Separate q/k/v Linears (Hugging Face's q_proj, BERT's query) need nothing more. A
parametrized weight (torch.nn.utils.parametrize) is read as the module computes it. An adapted layer (peft's LoRA
``Linear``, any module computing W x + B A x) is measured as the one map it computes, not as its parts
(``adapters``).

Not measured, and said so (``scan``'s second result, with how to measure them where there is a way): transposed
convs, recurrent layers, embeddings, nn.Bilinear, 2-D-weight modules that compute something else, and any other
parameter of matrix shape (a mixture of experts' stacked experts, a raw nn.Parameter weight, a positional table).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils import parametrize
from torch.overrides import TorchFunctionMode

from featlearn.metrics import adapters
from featlearn.metrics.jacobians import zero_shifts

FUSED_QKV = ("c_attn", "qkv")
CONVS = (nn.Conv1d, nn.Conv2d, nn.Conv3d)
# Layer types with weights that the NFA's h = W p does not describe, and what to do instead.
NOT_MEASURED = (
    ((nn.Embedding, nn.EmbeddingBag), "an embedding is a Linear on one-hot inputs: to measure it, feed one-hot "
     "vectors to an nn.Linear(vocab, dim, bias=False) whose weight is this weight.T"),
    ((nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d), "a transposed conv sums overlapping kernels "
     "into each output position, so no one matrix maps an input patch to an output; not measured"),
    ((nn.RNNBase, nn.RNNCellBase), "recurrent weights act at every step on the hidden state as well as the input; "
     "not measured (unroll the cell into nn.Linear layers to measure its input and hidden maps per step)"),
    ((nn.Bilinear,), "x₁ᵀ A x₂ is not linear in one input; not measured"),
)
OTHER_WEIGHT = ("has a 2-D weight but computes neither x Wᵀ + b nor x W + b on a test input; not measured (wrap "
                "its linear part in an nn.Linear to measure it)")
OTHER_MATRIX = ("a parameter of matrix shape outside the measured and named layers: if it multiplies an input (a raw "
                "nn.Parameter weight, a mixture of experts' stacked experts), it is not measured (compute it through "
                "an nn.Linear to measure it); an additive table (a positional embedding, a bias table) has nothing "
                "to measure")
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


def _weight(m: nn.Module) -> torch.Tensor:
    return m.weight


def _weight_t(m: nn.Module) -> torch.Tensor:
    return m.weight.T


def _linear_like(module: nn.Module) -> Callable[[nn.Module], torch.Tensor] | None:
    """How to read W (out, in) off a module that is not an nn.Linear but computes x Wᵀ + b (W = weight) or x W + b
    (W = weight.T, transformers' Conv1D), found by running it on a random input; None if it computes neither. On the
    meta device, which computes nothing, only transformers' Conv1D is recognised, by name."""
    w, b = module.weight, module._parameters.get("bias")
    if w.is_meta:
        return _weight_t if type(module).__name__ == "Conv1D" else None
    with torch.no_grad():
        for read in (_weight, _weight_t):
            mat = read(module)
            if b is not None and tuple(b.shape) != (mat.shape[0],):
                continue
            p = torch.randn(3, mat.shape[1], generator=torch.Generator().manual_seed(0)).to(w.dtype).to(w.device)
            try:
                out = module(p)
            except Exception:  # noqa: BLE001 (any failure means: not this orientation)
                continue
            expected = F.linear(p, mat, b)
            if isinstance(out, torch.Tensor) and out.shape == expected.shape and torch.allclose(
                    out, expected, rtol=1e-4, atol=1e-5 * float(expected.abs().max().clamp_min(1))):
                return read
    return None


def _is_weighted(module: nn.Module) -> bool:
    """A leaf module with a 2-D ``weight`` parameter of its own, or a parametrized one (torch.nn.utils.parametrize,
    whose ``parametrizations`` is its only child): possibly Linear-like."""
    if parametrize.is_parametrized(module, "weight"):
        return module.weight.dim() == 2 and list(module._modules) == ["parametrizations"]
    w = module._parameters.get("weight")
    return (isinstance(w, nn.Parameter) and not isinstance(w, nn.parameter.UninitializedParameter) and w.dim() == 2
            and next(module.children(), None) is None)


def _matrix_parameters(model: nn.Module, named: set[str]) -> dict[str, str]:
    """The parameters with two or more dimensions longer than 1 that none of the ``named`` modules (measured or
    skipped, by path) holds, by name, with their shape and ``OTHER_MATRIX``: what ``scan`` names besides whole
    modules, so that no matrix goes unmeasured without a word. A parameter tied to a named module's counts as held."""
    modules = dict(model.named_modules())
    held_parameters = {id(p) for path in named for p in modules[path].parameters()}
    found = {}
    for path, module in modules.items():
        for name, p in module._parameters.items():
            if (isinstance(p, nn.Parameter) and not isinstance(p, nn.parameter.UninitializedParameter)
                    and id(p) not in held_parameters and sum(size > 1 for size in p.shape) >= 2):
                held_parameters.add(id(p))
                where = f"{path}.{name}" if path else name
                found[where] = f"{tuple(p.shape)} in {type(module).__name__}: {OTHER_MATRIX}"
    return found


def _adapter(path: str, adapted: list[str]) -> str | None:
    """The adapted layer (``adapters``) that the module at ``path`` is part of, if any."""
    return next((a for a in adapted if not a or path.startswith(f"{a}.")), None)


def scan(model: nn.Module) -> tuple[list[Layer], dict[str, str]]:
    """Every measurable layer of ``model`` in module order, and the modules with weights that are not measured (and
    other matrix-shaped parameters, ``_matrix_parameters``), by name, each with the reason and how to measure it
    where there is a way. An adapted layer (LoRA: ``adapters``) is measured as the one map it computes, its parts
    named as such."""
    found, skipped, inside_attention, adapted = [], {}, set(), []
    for path, module in model.named_modules():
        part_of = _adapter(path, adapted)
        if part_of is not None:
            if isinstance(module, nn.Linear) or _is_weighted(module):
                skipped[path] = f"{type(module).__name__}: {adapters.PART.format(path=part_of)}"
            continue
        if isinstance(module, nn.MultiheadAttention):
            inside_attention.add(module.out_proj)  # its forward never runs: F.multi_head_attention_forward
            found.extend(_attention_layers(path, module))
            continue
        if isinstance(module, CONVS):
            found.append(Layer(path, path, "conv", path, 1, slice(None), _conv_matrix))
            continue
        reason = next((why for types, why in NOT_MEASURED if isinstance(module, types)), None)
        if reason is not None:
            skipped[path] = f"{type(module).__name__}: {reason}"
            continue
        if module in inside_attention:
            continue
        if isinstance(module, nn.Linear):
            read = _weight
        elif _is_weighted(module):
            read = _linear_like(module)
            if read is None:
                skipped[path] = f"{type(module).__name__}: {OTHER_WEIGHT}"
                continue
        else:
            read = adapters.adapted(module)
            if read is None:
                continue
            adapted.append(path)
            if isinstance(read, str):
                skipped[path] = f"{type(module).__name__}: {read}"
                continue
        out_features, in_features = read(module).shape
        fused = path.rpartition(".")[2] in FUSED_QKV and out_features == 3 * in_features
        parts = _thirds(in_features) if fused else {"": slice(None)}
        found.extend(Layer(f"{path}.{p}" if p else path, path, "attention" if fused else "linear", path, -1, rows,
                           read) for p, rows in parts.items())
    return found, skipped | _matrix_parameters(model, {layer.path for layer in found} | set(skipped))


def find_layers(model: nn.Module, names: Collection[str] | None = None) -> list[Layer]:
    """Every measurable layer of ``model`` in module order, or those named in ``names``; a ValueError naming the fix
    where none is found or a name is not a measurable layer."""
    found, skipped = scan(model)
    return select(model, found, skipped, names)


def select(model: nn.Module, found: list[Layer], skipped: dict[str, str],
           names: Collection[str] | None) -> list[Layer]:
    """The layers of ``found`` named in ``names`` (all with None), with the argument checks of ``find_layers``."""
    available = [layer.name for layer in found]
    if isinstance(names, str):
        raise TypeError(f"layers= takes a list of layer names, not the string {names!r}: pass [{names!r}]")
    if names is not None:
        names = list(names)
        if not names:
            raise ValueError(f"layers=[] selects no layer: pass None to measure all, or some of {available}")
    if not found:
        told = "".join(f"\n  {path}: {why}" for path, why in skipped.items())
        raise ValueError(f"no measurable layer in this {type(model).__name__}: the NFA is measured on nn.Linear (and "
                         "modules computing x Wᵀ + b or x W + b), nn.Conv1d/2d/3d and nn.MultiheadAttention"
                         + (f"; its layers with weights are not measured:{told}" if told else ""))
    if names is None:
        return found
    for name in names:
        if name in skipped:
            raise ValueError(f"layers=: {name!r} is not measured ({skipped[name]}); measurable: {available}")
    unknown = [name for name in names if name not in available]
    if unknown:
        raise ValueError(f"layers=: no measurable layers named {unknown}; found {available}")
    return [layer for layer in found if layer.name in names]


@functools.cache
def _attention_signature() -> inspect.Signature:
    """F.multi_head_attention_forward's signature, read once (inspect takes ~1 ms a time)."""
    return inspect.signature(F.multi_head_attention_forward)


class _ProjectionShifts(TorchFunctionMode):
    """Adds zero shifts to the q, k, v projections inside F.multi_head_attention_forward, which nn.MultiheadAttention
    calls with its weights rather than through submodules: the call is rerun on the projections already made (and
    shifted) with identity projection weights. Active, it also turns off the fused fast paths of nn.Transformer*
    (they bypass hooks), since a mode counts as a __torch_function__ override."""

    def __init__(self, prefixes: dict[nn.Module, str], add: Callable[[str, torch.Tensor], torch.Tensor]) -> None:
        super().__init__()
        self.prefixes = {id(mha.out_proj.weight): prefix for mha, prefix in prefixes.items()}
        self.add = add
        self.signature = _attention_signature()

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
def output_shifts(model: nn.Module, layers: list[Layer]) -> Iterator[Callable[[object], tuple[object, Shifts, Shifts]]]:
    """While open, ``run(x)`` is ``model(x)`` with a fresh zero shift (requires_grad) added to the output of every
    layer's site, and returns the model's output, those shifts, {site: [shifts]}, one per call of the site (a
    module called twice adds two), and the shifted outputs themselves, likewise."""
    measured = {layer.site for layer in layers}
    shifts: Shifts = {}
    values: Shifts = {}

    def add(site: str, h: torch.Tensor) -> torch.Tensor:
        if site not in measured:
            return h
        (shift,) = zero_shifts([h.shape], h.dtype, h.device)
        shifts.setdefault(site, []).append(shift)
        values.setdefault(site, []).append(h + shift)
        return values[site][-1]

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

        def run(x: object) -> tuple[object, Shifts, Shifts]:
            shifts.clear()
            values.clear()
            # the mode only where a measured attention runs (its per-call overhead is Python's, ~1 µs an operation)
            with _ProjectionShifts(attention, add) if attention else nullcontext():
                out = model(x)
            return out, dict(shifts), dict(values)

        yield run
