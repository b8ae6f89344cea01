"""GPUs of a workstation shared out by memory: which card each job uses, and how much each card holds.

Snakemake's ``resources: gpu=1`` with ``--resources gpu=N`` caps how many GPU jobs run at once, and the
``gpu_mem_mb`` resource (set by the Snakefile from ``card_memory_mb``) caps their summed GPU memory, but Snakemake
never says *which* GPU a job should use, so every job would land on GPU 0. A job calls ``claim_gpu()`` before CUDA
initializes: it records a claim of its ``gpu_mem_mb`` on the lowest GPU whose card still holds it beside the other
jobs' claims, and sets ``CUDA_VISIBLE_DEVICES=i``. A claim is a file the job holds an exclusive ``flock`` on for as
long as the process lives: the kernel drops it when the job exits or is killed, so a crashed job never leaves memory
claimed. A job whose need is unknown claims a whole card. Under SLURM (or when the user already set
``CUDA_VISIBLE_DEVICES``) the scheduler owns the assignment and this does nothing.
"""

from __future__ import annotations

import fcntl
import functools
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)

MIB_MB = 1.048576  # MB (10⁶ bytes, Snakemake's unit) per MiB (nvidia-smi's)
# Open claim files of this process; closing one would release its claim, so they stay open until exit.
_held: list[int] = []


def _smi(*args: str) -> list[str]:
    """Lines of ``nvidia-smi <args>``; none where it is absent or fails. Asking torch would initialize CUDA here (in
    Snakemake's own process, a context held on the card for the whole build)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        out = subprocess.run([smi, *args], capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.splitlines() if line.strip()]


def gpu_count() -> int:
    """GPUs on this machine, from ``nvidia-smi -L``."""
    return sum(line.startswith("GPU ") for line in _smi("-L"))


def visible(cards: list[tuple[str, str, int]], env: str | None) -> list[int]:
    """Memory of the cards (index, uuid, MB) a process sees under ``CUDA_VISIBLE_DEVICES=env`` (None: all), in its
    order: indices or UUID prefixes, up to the first entry that names no card (as CUDA reads it)."""
    if env is None:
        return [mb for _, _, mb in cards]
    seen = []
    for entry in (e.strip() for e in env.split(",")):
        match = [mb for index, uuid, mb in cards if entry == index or (entry.startswith("GPU-") and
                                                                      uuid.startswith(entry))]
        if not entry or not match:
            break
        seen.append(match[0])
    return seen


@functools.cache
def card_memory_mb() -> tuple[int, ...]:
    """Total memory (MB) of each card this process may use (``CUDA_VISIBLE_DEVICES`` honoured), from nvidia-smi,
    once per process; empty without a GPU."""
    cards = []
    for line in _smi("--query-gpu=index,uuid,memory.total", "--format=csv,noheader,nounits"):
        index, uuid, mib = (part.strip() for part in line.split(","))
        if mib.isdigit():
            cards.append((index, uuid, int(int(mib) * MIB_MB)))
    return tuple(visible(cards, os.environ.get("CUDA_VISIBLE_DEVICES")))


def default_lock_dir() -> Path:
    """One directory per machine (``FEATLEARN_GPU_LOCKS`` moves it), so concurrent runs also see each other."""
    return Path(os.environ.get("FEATLEARN_GPU_LOCKS", Path(tempfile.gettempdir()) / "featlearn-gpus"))


def job_need_mb() -> int | None:
    """The running Snakemake job's ``gpu_mem_mb`` (the ``snakemake`` object a ``script:`` job's module holds), where
    there is one: ``claim_gpu`` then claims what the job declared, not a whole card."""
    job = getattr(sys.modules.get("__main__"), "snakemake", None)
    need = getattr(getattr(job, "resources", None), "gpu_mem_mb", None)
    return need if isinstance(need, int) and need > 0 else None


@contextmanager
def _registry(lock_dir: Path) -> Iterator[None]:
    """The claims of ``lock_dir`` held still: a claim is read, dropped or made only under this lock."""
    fd = os.open(lock_dir / "claims.lock", os.O_RDONLY | os.O_CREAT, 0o644)  # flock needs no write access
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def claims(lock_dir: Path, gpu: int) -> list[int | None]:
    """The live claims on ``gpu`` (MB, None for a whole card); a claim whose process is gone is removed. Call under
    ``_registry``."""
    live: list[int | None] = []
    for path in sorted(lock_dir.glob(f"gpu{gpu}.*.claim")):
        fd = os.open(path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:  # its process holds it: alive
            text = os.read(fd, 64).decode().strip()
            live.append(int(text) if text.isdigit() else None)
        else:
            path.unlink()
        finally:
            os.close(fd)
    return live


def fits(need_mb: int | None, card_mb: int | None, held: list[int | None]) -> bool:
    """Whether a claim of ``need_mb`` (None: the whole card) fits a card of ``card_mb`` (None: unknown) beside the
    ``held`` claims: an unknown need or card shares with nothing."""
    if not held:
        return True
    if need_mb is None or card_mb is None or None in held:
        return False
    return sum(h for h in held if h is not None) + need_mb <= card_mb


def _claim(lock_dir: Path, gpu: int, need_mb: int | None) -> None:
    path = lock_dir / f"gpu{gpu}.{os.getpid()}.claim"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, b"whole" if need_mb is None else str(need_mb).encode())
    fcntl.flock(fd, fcntl.LOCK_EX)
    _held.append(fd)


def claim_gpu(count: int | None = None, lock_dir: Path | None = None, timeout_s: float = 3600.0,
              need_mb: int | None = None, cards_mb: list[int] | None = None) -> int | None:
    """Pin this process to the lowest GPU with ``need_mb`` (default: the job's ``gpu_mem_mb``; None claims a whole
    card) free of the other jobs' claims, and return its id; ``None`` where there is nothing to pin.

    ``cards_mb`` is each card's memory (default: ``card_memory_mb``; ``count`` without it: cards of unknown memory,
    one job each). Nothing is pinned under SLURM (it sets ``CUDA_VISIBLE_DEVICES`` for the GPUs it granted), when
    ``CUDA_VISIBLE_DEVICES`` is already set, or on a machine without GPUs. Waits up to ``timeout_s`` while no card
    has room (jobs outside this Snakemake run may hold some), then raises TimeoutError; a need larger than every card
    raises MemoryError at once.
    """
    if "SLURM_JOB_ID" in os.environ or "CUDA_VISIBLE_DEVICES" in os.environ:
        return None
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        raise RuntimeError("claim_gpu() must run before CUDA is initialized, or CUDA_VISIBLE_DEVICES is ignored")
    if cards_mb is None and count is None:
        cards_mb = list(card_memory_mb())
    sizes: list[int | None] = list(cards_mb) if cards_mb is not None else [None] * (count or 0)
    if not sizes:
        return None
    need_mb = job_need_mb() if need_mb is None else need_mb
    if need_mb is not None and all(size is not None and need_mb > size for size in sizes):
        raise MemoryError(f"this job needs {need_mb:,} MB of GPU memory, more than any card here holds "
                          f"({', '.join(f'{s:,} MB' for s in sizes if s is not None)})")
    lock_dir = default_lock_dir() if lock_dir is None else Path(lock_dir)
    lock_dir.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout_s
    while True:
        with _registry(lock_dir):
            for gpu, size in enumerate(sizes):
                if fits(need_mb, size, claims(lock_dir, gpu)):
                    _claim(lock_dir, gpu, need_mb)
                    os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)
                    log.info("claimed GPU %d for %s (claims in %s)", gpu,
                             "the whole card" if need_mb is None else f"{need_mb:,} MB", lock_dir)
                    return gpu
        if time.monotonic() >= deadline:
            wanted = "a whole card" if need_mb is None else f"{need_mb:,} MB"
            raise TimeoutError(f"all {len(sizes)} GPUs stayed claimed for {timeout_s:.0f} s: none had {wanted} free "
                               f"of the other jobs' claims (claims in {lock_dir})")
        time.sleep(0.5)
