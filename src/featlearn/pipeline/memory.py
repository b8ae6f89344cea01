"""Memory and disk checked before they are spent.

A job that cannot fit stops at once, naming what needs how much, what the device has and what to change, instead of
dying hours in: killed by the kernel's OOM killer without a traceback (CPU), deep inside an allocation (CUDA), or on
a full disk with a bare ``NetCDF: HDF error``. torch is imported inside the functions that touch it: figure and claims
jobs never load it (``featlearn.pipeline.jobs``).
"""

from __future__ import annotations

import errno
import re
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

GB = 1e9
CGROUP = Path("/sys/fs/cgroup")
SELF_CGROUP = Path("/proc/self/cgroup")  # this process's cgroup in each hierarchy
# a failed write next to less free space than this is blamed on a full disk: HDF5 and torch's zip writer report one
# only as "NetCDF: HDF error" or "file write failed", without ENOSPC
FULL_BELOW = 1 << 24
FREE_DISK = "free space there, or move results/ to a larger disk (a symbolic link works), and rerun"


class MemoryNeedError(MemoryError):
    """A computation needs more memory than its device has left; raised before anything big is allocated."""


class DiskNeedError(OSError):
    """A write needs more disk than its filesystem has left (errno ENOSPC)."""

    def __init__(self, message: str) -> None:
        super().__init__(errno.ENOSPC, message)


def _gb(n: float) -> str:
    return f"{n / GB:.3g} GB"


def _read_int(path: Path) -> int | None:
    """The integer in a kernel file; None if it is missing or reads 'max' (no limit)."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _stat(path: Path, keys: tuple[str, ...]) -> int:
    """Sum of ``keys`` in a cgroup's memory.stat (0 where absent)."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return 0
    values = dict(line.split() for line in lines if line.count(" ") == 1)
    return sum(int(values.get(key, 0)) for key in keys)


def _cgroup_headrooms() -> list[int]:
    """Limit minus usage of every memory cgroup from this process's up to the root (v2, or v1), where one is set.

    Usage counts the page cache, which the kernel drops before it kills anything, so the file pages (active and
    inactive) are not counted as used: MemAvailable treats them the same way."""
    try:
        lines = SELF_CGROUP.read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        _, controllers, rel = line.split(":", 2)
        if not controllers:  # v2's unified hierarchy
            root, limit, usage, cache = CGROUP, "memory.max", "memory.current", ("active_file", "inactive_file")
        elif "memory" in controllers.split(","):
            root, limit, usage = CGROUP / "memory", "memory.limit_in_bytes", "memory.usage_in_bytes"
            cache = ("total_active_file", "total_inactive_file")
        else:
            continue
        parts = Path(rel).parts[1:]
        for depth in range(len(parts), -1, -1):  # a SLURM job's limit sits on the job, above its step's cgroup
            folder = root.joinpath(*parts[:depth])
            cap, used = _read_int(folder / limit), _read_int(folder / usage)
            if cap is not None and used is not None:
                found.append(cap - used + _stat(folder / "memory.stat", cache))
    return found


def _meminfo_available() -> list[int]:
    try:
        match = re.search(r"MemAvailable:\s+(\d+) kB", Path("/proc/meminfo").read_text())
    except OSError:
        return []
    return [int(match.group(1)) * 1024] if match else []


def available_bytes(device: torch.device | str) -> int:
    """Bytes ``device`` can still hold for this job.

    CUDA: the free memory plus what torch's caching allocator holds unused (this process reuses it first). Otherwise
    host memory: the smaller of the kernel's MemAvailable and the headroom of every memory cgroup around this process
    (a SLURM job's or a container's limit, which MemAvailable does not see); unbounded where neither can be read (not
    Linux), so that a check never refuses on a guess."""
    import torch

    device = torch.device(device)
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
    found = _meminfo_available() + _cgroup_headrooms()
    return min(found) if found else sys.maxsize


def _device_name(device: torch.device | str) -> str:
    import torch

    device = torch.device(device)
    if device.type == "cuda":
        return f"{device} ({torch.cuda.get_device_name(device)})"
    return f"{device} (host memory: MemAvailable and this job's cgroup limit)"


def check_fits(need_bytes: float, device: torch.device | str, what: str, fix: str) -> None:
    """Raise MemoryNeedError when ``what`` needs more than ``device`` has left: call it before allocating, with the
    need from a formula, so a job too big for its machine fails in a second and says ``fix``."""
    have = available_bytes(device)
    if need_bytes > have:
        raise MemoryNeedError(f"{what} needs {_gb(need_bytes)} of memory, but {_device_name(device)} has "
                              f"{_gb(have)} available; {fix}")


def free_disk_bytes(path: str | Path) -> int:
    """Bytes an unprivileged writer can still put on the filesystem holding ``path`` (or its nearest existing
    parent: the folder may not exist yet)."""
    path = Path(path).absolute()
    while not path.exists():
        path = path.parent
    return shutil.disk_usage(path).free


def check_disk(path: str | Path, need_bytes: float, what: str) -> None:
    """Raise DiskNeedError when writing ``need_bytes`` at ``path`` would not fit its filesystem."""
    free = free_disk_bytes(path)
    if need_bytes > free:
        raise DiskNeedError(f"{what} needs {_gb(need_bytes)} at {path}, but its filesystem has {_gb(free)} free; "
                            f"{FREE_DISK}")


def _names_enospc(err: BaseException | None) -> bool:
    """Whether ENOSPC appears anywhere in an exception's chain."""
    while err is not None:
        if isinstance(err, OSError) and err.errno == errno.ENOSPC:
            return True
        err = err.__cause__ or err.__context__
    return False


def raise_if_disk_full(err: BaseException, tmp: Path, target: Path, kept: Path | None = None,
                       what: str = "the computed result") -> None:
    """Raise DiskNeedError from ``err``, a failed write of ``target`` through the temporary ``tmp`` when
    the disk is full: ENOSPC in its chain, or next to no free space while ``tmp`` still holds its blocks. ``tmp`` is
    removed either way (a clean-up that fails is not what the user needs to read), so the message's free space is
    what a rerun finds; ``kept`` is where ``what`` (the computed result, a checkpoint) was written instead. Otherwise
    the caller goes on."""
    try:
        full = _names_enospc(err) or free_disk_bytes(tmp) < FULL_BELOW
    except OSError:
        full = False
    try:
        tmp.unlink(missing_ok=True)
    except OSError:
        pass
    if full:
        result = (f"{what} is kept at {kept}" if kept else
                  f"the partial file is removed and {target.name} is as it was before")
        raise DiskNeedError(
            f"the disk holding {target.parent} is full ({_gb(free_disk_bytes(target.parent))} free now) while "
            f"writing {target.name}; nothing was lost: {result}; {FREE_DISK}"
        ) from err
