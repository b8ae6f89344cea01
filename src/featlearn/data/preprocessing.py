"""Image tensors as a run reads them, real or stand-in alike: standardized with training statistics, with the
targets the papers train on, and a record of what was done.

The real loaders (``real``) and the stand-ins (``standins``) both end here, so a stand-in is preprocessed exactly as
the files it replaces, and neither depends on the other's code (``featlearn.pipeline.deps``).
"""

from __future__ import annotations

import json
from typing import Any

import torch

from featlearn.data import registry

# The preprocessing options a ``data`` block may set, for real images and their stand-ins alike
PREPROCESSING = ("n_test", "size", "standardize", "targets", "flatten", "sort_by_class")


def block_options(data: dict) -> dict[str, Any]:
    """The preprocessing options a ``data`` block sets, as keywords of ``real.prepare`` and ``standins.prepare``."""
    return {k: data[k] for k in PREPROCESSING if k in data}


def preprocess(train: tuple[torch.Tensor, torch.Tensor], test: tuple[torch.Tensor, torch.Tensor] | None,
               classes: int, *, standardize: str = "channel", targets: str = "shifted", flatten: bool = False,
               sort_by_class: bool = False) -> dict[str, torch.Tensor]:
    """Training tensors (and test tensors, standardized with the training statistics).

    standardize: "channel" (one mean/std per channel, alignment Fig 2), "feature" (per pixel and channel: collapse
    §1 and alignment Fig 17; constant features become 0), or "none" (CelebA's [0, 1] pixels). Population std.
    targets: "shifted" (one-hot minus 1/C, alignment), "signed" (±1 one-hot, collapse), "scalar" (the 0/1 label
    as one output, Fig 16). flatten: (N, C·H·W) in channel-major order for MLPs. sort_by_class: classes contiguous,
    dataset order within a class (collapse's Gram plots).
    """
    dims = {"channel": (0, 2, 3), "feature": (0,), "none": None}
    if standardize not in dims:
        raise ValueError(f"standardize must be one of {sorted(dims)} (got {standardize!r})")
    x = train[0]
    if dims[standardize] is None:
        mean, std = torch.zeros(1, x.shape[1], 1, 1), torch.ones(1, x.shape[1], 1, 1)
    else:
        mean = x.mean(dim=dims[standardize], keepdim=True)
        std = x.std(dim=dims[standardize], keepdim=True, correction=0)
    scale = torch.where(std > 0, 1 / std, torch.zeros_like(std))  # the collapse code's NaN → 0 for MNIST's border
    out = {"mean": mean, "std": std}
    for split, pair in (("train", train), ("test", test)):
        if pair is None:
            continue
        x, labels = pair
        if sort_by_class:
            order = torch.argsort(labels, stable=True)
            x, labels = x[order], labels[order]
        x = (x - mean) * scale
        out[f"x_{split}"] = x.reshape(len(x), -1) if flatten else x
        out[f"y_{split}"] = _targets(labels, classes, targets)
        out[f"labels_{split}"] = labels
    return out


def finish(name: str, pairs: dict[str, tuple[torch.Tensor, torch.Tensor]], source: str, *, size: int | None = None,
           offline: bool = False, seed: int = 0, standardize: str = "channel", targets: str = "shifted",
           flatten: bool = False, sort_by_class: bool = False) -> dict[str, Any]:
    """The loaded (images, labels) of each split, real or stand-in, as a run reads them: the tensors of
    ``preprocess`` plus ``name``, ``source`` (for store attributes and figure footers) and ``preprocessing`` (the
    options and the counts actually loaded, as JSON)."""
    spec = registry.image(name)
    options = {"standardize": standardize, "targets": targets, "flatten": flatten, "sort_by_class": sort_by_class,
               "size": size or spec.size, "n_train": len(pairs["train"][1]),
               "n_test": len(pairs["test"][1]) if "test" in pairs else 0, "offline": offline, "seed": seed}
    data = preprocess(pairs["train"], pairs.get("test"), spec.classes, standardize=standardize,
                      targets=targets, flatten=flatten, sort_by_class=sort_by_class)
    return data | {"name": name, "source": source, "preprocessing": json.dumps(options, sort_keys=True)}


def _targets(labels: torch.Tensor, classes: int, kind: str) -> torch.Tensor:
    onehot = torch.nn.functional.one_hot(labels, classes).float()
    if kind == "shifted":
        return onehot - 1 / classes
    if kind == "signed":
        return 2 * onehot - 1
    if kind == "scalar":
        return labels.float()[:, None]
    raise ValueError(f"targets must be one of ['scalar', 'shifted', 'signed'] (got {kind!r})")
