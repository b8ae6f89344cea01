"""One GPU per job on a multi-GPU workstation.

Snakemake's ``resources: gpu=1`` with ``--resources gpu=N`` caps how many GPU jobs run at once,
but it never says *which* GPU a job should use, so every job would land on GPU 0. A job calls
``claim_gpu()`` before CUDA initializes: it takes an exclusive ``flock`` on the lowest free
``gpu<i>.lock`` in a shared lock directory and sets ``CUDA_VISIBLE_DEVICES=i``. The lock lives
as long as the process: the kernel drops it when the job exits or is killed, so a crashed job
never leaves a GPU claimed. Under SLURM (or when the user already set ``CUDA_VISIBLE_DEVICES``)
the scheduler owns the assignment and this does nothing.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

log = logging.getLogger(__name__)

# Open lock files of this process; closing one would release its GPU, so they stay open until exit.
_held: list[int] = []


def gpu_count() -> int:
    """GPUs on this machine, from ``nvidia-smi -L``: asking torch could initialize CUDA too early."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return 0
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(line.startswith("GPU ") for line in out.splitlines())


def default_lock_dir() -> Path:
    """One directory per machine (``FEATLEARN_GPU_LOCKS`` moves it), so concurrent runs also see each other."""
    return Path(os.environ.get("FEATLEARN_GPU_LOCKS", Path(tempfile.gettempdir()) / "featlearn-gpus"))


def _try_lock(path: Path) -> int | None:
    fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)  # flock needs no write access
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def claim_gpu(count: int | None = None, lock_dir: Path | None = None, timeout_s: float = 3600.0) -> int | None:
    """Pin this process to the lowest free GPU and return its id; ``None`` where there is nothing to pin.

    Nothing is pinned under SLURM (it sets ``CUDA_VISIBLE_DEVICES`` for the GPUs it granted), when
    ``CUDA_VISIBLE_DEVICES`` is already set, or on a machine without GPUs. Waits up to ``timeout_s``
    when every GPU is held (jobs outside this Snakemake run may hold some), then raises TimeoutError.
    """
    if "SLURM_JOB_ID" in os.environ or "CUDA_VISIBLE_DEVICES" in os.environ:
        return None
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        raise RuntimeError("claim_gpu() must run before CUDA is initialized, or CUDA_VISIBLE_DEVICES is ignored")
    count = gpu_count() if count is None else count
    if count == 0:
        return None
    lock_dir = default_lock_dir() if lock_dir is None else Path(lock_dir)
    lock_dir.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout_s
    while True:
        for gpu in range(count):
            fd = _try_lock(lock_dir / f"gpu{gpu}.lock")
            if fd is not None:
                _held.append(fd)
                os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)
                log.info("claimed GPU %d (lock %s)", gpu, lock_dir / f"gpu{gpu}.lock")
                return gpu
        if time.monotonic() >= deadline:
            raise TimeoutError(f"all {count} GPUs stayed claimed for {timeout_s:.0f} s (locks in {lock_dir})")
        time.sleep(0.5)
