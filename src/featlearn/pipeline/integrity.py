"""Content digests that every written file carries, so a corrupted one is detected instead of used.

Neither torch's zip format nor netCDF notices a flipped byte inside tensor data (both load such files
without complaint), so the writers embed a SHA-256 of the content and the readers recompute it:
``tensors_digest`` for the nested dicts of tensors that runs, checkpoints and dataset caches are, and
``dataset_digest`` for the variables and coordinates of a metric store; ``file_problem`` checks a written file.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from featlearn.pipeline.memory import raise_if_disk_full

DIGEST_KEY = "sha256"  # key of a tensor file's digest; attribute name in a store
_RESCUED = "featlearn_rescued"  # attribute of the error ``land`` raises: what it rescued, and where to


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


def file_problem(path: str | Path) -> str | None:
    """Why the featlearn output at ``path`` cannot be trusted (unreadable, corrupted, written without a digest), or
    None when its content checks out; a usage record (``.json``) has no digest and checks out when it parses.

    Whoever decides to keep a file that Snakemake doubts (``featlearn.pipeline.reruns``), or to link one from the shared
    output cache, asks this: torch and netCDF both load a file with a flipped data byte without complaint."""
    path = Path(path)
    try:
        if path.suffix == ".json":
            json.loads(path.read_text())
            return None
        if path.suffix == ".pt":
            import torch  # only here: planning and store readers never load it otherwise

            obj = torch.load(path, weights_only=True, map_location="cpu")
            recorded = obj.pop(DIGEST_KEY, None) if isinstance(obj, dict) else None
            actual = tensors_digest(obj) if isinstance(obj, dict) else None
        elif path.suffix == ".nc":
            with xr.open_dataset(path, engine="netcdf4") as ds:
                ds = ds.load()
            recorded, actual = ds.attrs.get(DIGEST_KEY), dataset_digest(ds)
        else:
            return f"{path.suffix or 'a file without suffix'} carries no featlearn digest"
    except Exception as err:  # any failure to read is a reason not to trust it
        return f"unreadable ({type(err).__name__}: {err})"
    if recorded is None:
        return "carries no digest, so its content cannot be checked"
    if recorded != actual:
        return "corrupted (its content no longer matches the digest written with it)"
    return None


class ResultKept(OSError):
    """A result could not be written where it belongs and was written to a fallback place, named in the message."""


def rescue_dirs() -> list[Path]:
    """Where a result that cannot land is kept, in order: $FEATLEARN_RESCUE_DIR, ~/featlearn-rescued (a compute
    node's /tmp may be gone when the user looks), then the temporary folder."""
    dirs = [Path(os.environ["FEATLEARN_RESCUE_DIR"])] if os.environ.get("FEATLEARN_RESCUE_DIR") else []
    if os.environ.get("HOME"):
        dirs.append(Path(os.environ["HOME"]) / "featlearn-rescued")
    return [*dirs, Path(tempfile.gettempdir()) / f"featlearn-rescued-{os.getuid()}"]


def why_unwritable(err: BaseException, folder: Path) -> str:
    """The cause of a failed write in words: a read-only mount is named as such, not as a permission problem."""
    code = getattr(err, "errno", None)
    try:
        read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    if code == errno.EROFS or read_only:
        return f"{folder} is on a read-only file system (mounted read-only): remount it read-write or move results/"
    if code in (errno.EACCES, errno.EPERM):
        return f"this user may not write in {folder}: fix its permissions"
    return f"{type(err).__name__}: {err}"


def land(write: Callable[[Path], None], path: str | Path) -> None:
    """Run ``write`` on a temporary file beside ``path`` and rename it into place (a killed job leaves no half file).

    When the destination cannot take it (read-only, full, not permitted), the result is not thrown away: ``write``
    runs again into the first rescue folder that takes it (``rescue_dirs``, mirroring ``path``'s absolute path), and
    one error says why and where the result is (``ResultKept``; ``DiskNeedError`` for a full disk; ``rescued`` reads
    it back). Clean-ups that fail stay silent: the first error is the one shown."""
    path = Path(path)
    tmp = _scratch(path)
    try:
        tmp.parent.mkdir(parents=True, exist_ok=True)
        write(tmp)
        os.replace(tmp, path)
    except (OSError, RuntimeError) as err:  # torch's zip writer and netCDF report failed writes as RuntimeError
        first = err
    else:
        _drop(tmp)
        return
    kept = _keep_elsewhere(write, path)
    moves = {path.absolute(): kept} if kept else {}
    what, otherwise = _what(path)
    try:
        raise_if_disk_full(first, tmp, path, kept, what)
    except OSError as full:
        if kept is not None:
            full.strerror += f"; once there is room, put it back ({_move(kept, path)}) before rerunning: {otherwise}"
        setattr(full, _RESCUED, moves)
        raise
    finally:
        _drop(tmp)
    if kept is None:
        raise first
    digest = "" if path.suffix == ".json" else ", with its digest"  # a usage record carries none
    err = ResultKept(errno.EIO, f"could not write {path} ({why_unwritable(first, path.parent)}); nothing computed is "
                     f"lost: {what} is kept at {kept}{digest}; once {path.parent} is writable, move it into place "
                     f"({_move(kept, path)}) before rerunning: {otherwise}")
    setattr(err, _RESCUED, moves)
    raise err from None


def _scratch(path: Path) -> Path:
    """Where a file is written before it is renamed to ``path``: in a folder of this process beside it, under its own
    name, since torch records a file's name inside it: the same content written twice is then the same bytes, which
    Snakemake's checksum of an input compares."""
    return path.parent / f".{path.name}.{os.getpid()}.tmp" / path.name


def _drop(tmp: Path) -> None:
    """Remove a ``_scratch`` file, if still there, and its folder; a clean-up that fails stays silent."""
    with contextlib.suppress(OSError):
        tmp.unlink(missing_ok=True)
        tmp.parent.rmdir()


def _what(path: Path) -> tuple[str, str]:
    """What a rescued file is, and what a rerun does without it: a checkpoint only saves time, a result is the
    work."""
    if path.suffix == ".ckpt":
        return "the checkpoint", "otherwise the run resumes from an older checkpoint, or from its start"
    return "the result", "snakemake otherwise computes it again"


def _move(kept: Path, path: Path) -> str:
    """The shell command that puts a rescued file back; its folder may be gone (Snakemake removes the empty folders of
    the outputs it misses)."""
    return f"mkdir -p '{path.parent}' && mv '{kept}' '{path}'"


def rescued(err: BaseException) -> dict[Path, Path]:
    """Each destination (absolute) that ``err``, raised by ``land``, says was written to a rescue folder instead, with
    where it is; empty for any other error. A job whose result was rescued reads it to rescue its other outputs."""
    return getattr(err, _RESCUED, {})


def keep_with(err: OSError, companion: str | Path, write: Callable[[Path], None]) -> None:
    """Where ``err`` says a result was rescued, keep ``companion`` (another output of the same job, written by
    ``write``) in a rescue folder too, and name it in ``err`` with its own ``mv``; any other error is left as it is.

    Snakemake deletes the outputs of a failed job and reruns a job that misses any output, so a result put back
    without the rest of its job's outputs (a run without its usage record) would be computed again."""
    moves, companion = rescued(err), Path(companion)
    if not moves or companion.absolute() in moves:
        return
    kept = _keep_elsewhere(write, companion)
    if kept is None:
        err.strerror += (f"; {companion}, another output of the same job, could not be kept anywhere: snakemake "
                         "computes the result again")
        return
    moves[companion.absolute()] = kept
    err.strerror += (f"; {companion}, another output of the same job, is kept at {kept}: move it too "
                     f"({_move(kept, companion)}), or snakemake computes the result again")


def _keep_elsewhere(write: Callable[[Path], None], path: Path) -> Path | None:
    """Write the result into the first rescue folder that takes it; None when none does."""
    for folder in rescue_dirs():
        kept = folder / path.absolute().relative_to(path.absolute().anchor)
        tmp = _scratch(kept)
        try:
            tmp.parent.mkdir(parents=True, exist_ok=True)
            write(tmp)
            os.replace(tmp, kept)
            return kept
        except (OSError, RuntimeError):
            continue
        finally:
            _drop(tmp)
    return None
