"""What a computation tells, and asks of, whoever runs it, without importing the build.

The science reports its progress (``start`` names the unit of work, ``tick`` counts one done: what the build's
projection extrapolates to the paper scale from), asks how much memory a device has before it chooses an algorithm,
checks that a buffer fits before it allocates it, and writes and reads its tensor files. A pipeline job installs the
build's answers (``featlearn.pipeline.jobs.start``): the usage meter, the memory checks naming the fix, files with a
digest that land or are rescued. A library user gets the defaults: progress goes nowhere, nothing is checked before
it is tried, files are plain ``torch.save``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def _nothing(*args: Any) -> None:
    return None


def _unbounded(device: Any) -> int:
    return sys.maxsize


def _save(obj: dict, path: str | Path) -> None:
    import torch

    torch.save(obj, path)


def _load(path: str | Path) -> dict:
    import torch

    try:
        return torch.load(path, weights_only=True, map_location="cpu")
    except Exception as err:  # a truncated or foreign file: the caller decides (a checkpoint starts over)
        raise OSError(f"{path} is unreadable ({err})") from err


@dataclass(frozen=True)
class Hooks:
    """The answers a computation gets: ``start(unit)``, ``tick(units)``, ``available_bytes(device)``,
    ``check_fits(need_bytes, device, what, fix)``, ``save(obj, path)`` and ``load(path)``."""

    start: Callable[[str], None] = _nothing
    tick: Callable[..., None] = _nothing
    available_bytes: Callable[[Any], int] = _unbounded
    check_fits: Callable[[float, Any, str, str], None] = _nothing
    save: Callable[[dict, str | Path], None] = _save
    load: Callable[[str | Path], dict] = _load


_installed = Hooks()


def current() -> Hooks:
    """The hooks installed in this process (one job per process), or the library's defaults."""
    return _installed


def install(hooks: Hooks) -> Hooks:
    """Answer this process's computations with ``hooks``; returns the ones they replace."""
    global _installed
    previous, _installed = _installed, hooks
    return previous
