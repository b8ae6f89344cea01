"""Small explicit networks: read them top to bottom. ``build_model`` draws a run's network at init.

Input and output sizes come from the run's dataset file (its tensors' shapes, or the corpus
vocabulary), so the config names only what the paper chooses: architecture, widths, init.
Each architecture's module has ``build(model, shape, out, generator)`` and is imported only when a
run needs it (``DISPATCH``), so a VGG edit never reruns an MLP job (``featlearn.pipeline.deps``).
"""

from __future__ import annotations

import importlib

import torch
from torch import nn

# model.arch -> the module that builds it, the measurement family that reads its layers (``metrics.measure``) and the
# ``model`` keys it needs: the one table of architectures, read without importing it by ``featlearn.pipeline.deps``,
# config validation (the schema's choices) and the network kind's check.
DISPATCH = {
    "mlp": {"module": "featlearn.models.mlp", "family": "nfa",
            "keys": ["widths", "activation", "init_scales", "init_convention", "readout_scale"]},
    "vgg11": {"module": "featlearn.models.vgg", "family": "conv_nfa", "keys": []},
    "gpt": {"module": "featlearn.models.gpt", "family": "attention_nfa",
            "keys": ["block_size", "n_layer", "n_head", "n_embd"]},
    "collapse_mlp": {"module": "featlearn.models.collapse_nets", "family": "collapse",
                     "keys": ["width", "depth", "gain"]},
    "resnet18_mlp": {"module": "featlearn.models.collapse_nets", "family": "collapse",
                     "keys": ["width", "depth", "gain"]},
    "vgg11_mlp": {"module": "featlearn.models.collapse_nets", "family": "collapse",
                  "keys": ["width", "depth", "gain"]},
}
ARCHS = tuple(DISPATCH)


def _shapes(data: dict) -> tuple[tuple[int, ...] | None, int]:
    """(one input's shape, outputs) of a synthetic or image dataset file; (None, vocabulary size) of a corpus."""
    if "vocab" in data:
        return None, len(data["vocab"])
    x = data["x"] if "x" in data else data["x_train"]
    y = data["y"] if "y" in data else data["y_train"]
    return tuple(x.shape[1:]), 1 if y.dim() == 1 else y.shape[1]


def build_model(spec: dict, data: dict) -> nn.Module:
    """The run's network at initialization, drawn from a generator seeded with the run's seed, or with
    ``spec['seeds']['init']`` where the run keys its random streams (``featlearn.seeds``)."""
    m = spec["model"]
    arch = m.get("arch", "mlp")
    if arch not in DISPATCH:
        raise ValueError(f"unknown model.arch {arch!r}; choose one of {ARCHS}")
    generator = torch.Generator().manual_seed(spec.get("seeds", {}).get("init", spec["seed"]))
    return importlib.import_module(DISPATCH[arch]["module"]).build({"arch": arch, **m}, *_shapes(data), generator)
