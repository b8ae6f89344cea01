"""Content digests that every written file carries, so a corrupted one is detected instead of used.

Neither torch's zip format nor netCDF notices a flipped byte inside tensor data (both load such files
without complaint), so the writers embed a SHA-256 of the content and the readers recompute it:
``tensors_digest`` for the nested dicts of tensors that runs, checkpoints and dataset caches are, and
``dataset_digest`` for the variables and coordinates of a metric store.
"""

from __future__ import annotations

import hashlib
import sys
from typing import Any

import numpy as np
import xarray as xr

DIGEST_KEY = "sha256"  # key of a tensor file's digest; attribute name in a store


def _feed(h: Any, obj: Any, path: str) -> None:
    h.update(path.encode())
    torch = sys.modules.get("torch")  # a tensor exists only where torch is loaded; store readers never load it
    if torch is not None and isinstance(obj, torch.Tensor):
        t = obj.detach().cpu().contiguous()
        h.update(f"{t.dtype}{tuple(t.shape)}".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    elif isinstance(obj, dict):
        for key in sorted(obj, key=repr):
            _feed(h, obj[key], f"{path}/{key!r}")
    elif isinstance(obj, list | tuple):
        for i, item in enumerate(obj):
            _feed(h, item, f"{path}[{i}]")
    elif isinstance(obj, np.ndarray):
        h.update(f"{obj.dtype.str}{obj.shape}".encode())
        h.update(np.ascontiguousarray(obj).tobytes())
    else:
        h.update(repr(obj).encode())


def tensors_digest(obj: dict) -> str:
    """SHA-256 of a nested structure of tensors, arrays, numbers and strings, independent of dict order."""
    h = hashlib.sha256()
    _feed(h, obj, "")
    return h.hexdigest()


def dataset_digest(ds: xr.Dataset) -> str:
    """SHA-256 of every variable and coordinate (name, dims, values) of a store; attributes are not covered."""
    h = hashlib.sha256()
    for name in sorted(ds.variables):
        var = ds.variables[name]
        values = var.values
        h.update(f"{name}{var.dims}".encode())
        if values.dtype.kind in "OUS":  # strings come back from netCDF as objects: hash their text
            h.update("\0".join(map(str, values.ravel())).encode())
        else:
            h.update(f"{values.dtype.str}{values.shape}".encode())
            h.update(np.ascontiguousarray(values).tobytes())
    return h.hexdigest()
