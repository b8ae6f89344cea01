"""Glue between a Snakemake job and the library: logging, threads, file I/O that names paths.

torch is imported where a tensor is touched, not at the top: figure and claims jobs never need it, and importing it
cost each of them 2 s of a 2-core quick build."""

from __future__ import annotations

import atexit
import fcntl
import logging
import os
import shutil
import socket
import sys
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from featlearn import hooks
from featlearn.pipeline import memory, numerics, usage
from featlearn.pipeline.gpus import claim_gpu
from featlearn.pipeline.integrity import DIGEST_KEY, land, tensors_digest

if TYPE_CHECKING:
    import torch

LOADED_MODULES = "featlearn modules loaded:"
_held: list = []  # this process's job lock, open (and so held) until the process exits


class JobRunning(RuntimeError):
    """Another live process is already computing this job (an orphan of a killed Snakemake, say)."""


def start(log_path: str | None, threads: int = 1, gpus: int = 0) -> logging.Logger:
    """Send this job's log to its rule's log file, check that the CPU numerics are pinned
    (``featlearn.pipeline.numerics``),
    pin torch to the job's threads and, for a job that asked for a GPU (``resources: gpu``), pin it to a GPU no other
    job of this machine holds. ``threads`` is the spec's (part of the result's identity), not what Snakemake granted:
    Snakemake lowers a job's threads to ``--cores``, which would change the bits without changing the file name.

    Every attempt's lines stay: Snakemake deletes a job's log before each attempt, so the job also appends them to
    ``<log>.attempts`` beside it, which Snakemake does not know of, and copies that history back into a log that
    Snakemake emptied. The job holds a lock beside its log: a second copy of the job (Snakemake rerun while the first
    one, orphaned by a SIGKILL, still runs) stops at once instead of training beside it and overwriting its files."""
    handlers: list[logging.Handler] = [logging.StreamHandler()]
    if log_path:
        log_file = Path(log_path)
        log_file.parent.mkdir(parents=True, exist_ok=True)
        _lock_job(log_file)
        history = attempts_path(log_file)
        _restore_earlier_attempts(log_file, history)
        handlers += [logging.FileHandler(log_file, mode="a"), logging.FileHandler(history, mode="a")]
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s", handlers=handlers, force=True)
    logging.getLogger("featlearn").setLevel(logging.INFO)
    numerics.check()
    install_hooks()
    os.environ["OMP_NUM_THREADS"] = str(max(1, threads))  # read when torch loads, here or later in the job
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(max(1, threads))
    log = logging.getLogger("featlearn")
    # Which scheduler job ran this (the cluster test and users auditing a run read it back).
    slurm = os.environ.get("SLURM_JOB_ID", "none")
    log.info("host=%s pid=%d slurm_job_id=%s", socket.gethostname(), os.getpid(), slurm)
    if gpus:
        # Deep RFM frees and reallocates 20 GB buffers at every layer at N = 50,000: without expandable segments the
        # caching allocator can fragment them into an out-of-memory error (set before CUDA initializes)
        os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
        numerics.deterministic_cuda()
        gpu = claim_gpu()
        log.info("CUDA_VISIBLE_DEVICES=%s (%s)", os.environ.get("CUDA_VISIBLE_DEVICES", "unset"),
                 "claimed here" if gpu is not None else "left to the scheduler, the user or a GPU-less machine")
    sys.excepthook = _log_uncaught
    atexit.register(_log_loaded_modules)
    return log


def install_hooks() -> None:
    """Answer the science's hooks (``featlearn.hooks``) with the build's: the usage meter, the memory checks, and
    tensor files with a digest that land or are rescued."""
    hooks.install(hooks.Hooks(start=usage.start, tick=usage.tick, available_bytes=memory.available_bytes,
                              check_fits=memory.check_fits, save=save_tensors, load=load_tensors))


def attempts_path(log_path: str | Path) -> Path:
    """Where every attempt's lines of the job logging to ``log_path`` are kept (Snakemake empties the log itself)."""
    log_path = Path(log_path)
    return log_path.with_name(f"{log_path.name}.attempts")


def _restore_earlier_attempts(log_path: Path, history: Path) -> None:
    """Put the earlier attempts' lines back into a log that Snakemake deleted (or start the history from a log
    written before the history existed), so the log shows every attempt."""
    had_log = log_path.exists() and log_path.stat().st_size > 0
    if history.exists() and not had_log:
        shutil.copyfile(history, log_path)
    elif had_log and not history.exists():
        shutil.copyfile(log_path, history)


def lock_holder(log_path: str | Path) -> str | None:
    """Who holds the job lock beside ``log_path`` ('pid N on host'), or None when no live process holds it: an
    orphaned job still computing is never run a second time (``featlearn.pipeline.reruns``)."""
    lock = Path(log_path).with_name(f".{Path(log_path).name}.lock")
    try:
        handle = open(lock)
    except FileNotFoundError:
        return None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return handle.read().strip() or "an unknown process"
        fcntl.flock(handle, fcntl.LOCK_UN)
    return None


def _lock_job(log_path: Path) -> None:
    """Hold an exclusive lock on ``.<log>.lock`` beside the log for the life of this process (the kernel drops it when
    the process dies, however it dies); JobRunning names the process that holds it."""
    lock = log_path.with_name(f".{log_path.name}.lock")
    handle = open(lock, "a+")  # stays open: closing it would release the lock
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "an unknown process"
        handle.close()
        raise JobRunning(f"{log_path}: this job is already running ({holder}), probably left over from a killed "
                         "snakemake; wait for it to finish or kill it, then rerun") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
    handle.flush()
    _held.append(handle)


def _log_loaded_modules() -> None:
    """The featlearn modules this job ran: a test checks them against the code inputs ``pipeline.deps`` computed."""
    names = sorted(n for n in sys.modules if n == "featlearn" or n.startswith("featlearn."))
    logging.getLogger("featlearn").info("%s %s", LOADED_MODULES, " ".join(names))


def _log_uncaught(kind: type[BaseException], err: BaseException, tb: TracebackType | None) -> None:
    """The traceback of a failing job goes to its own log file too: on a cluster nobody opens the SLURM log."""
    logging.getLogger("featlearn").critical("job failed", exc_info=(kind, err, tb))


def job_device(configured: str, gpus: int) -> torch.device:
    """Where a job computes: on CUDA exactly when its rule asked for a GPU (``resources: gpu``), else the CPU.

    ``configured`` is config.yaml's ``device``. A job granted a GPU that CUDA cannot see fails under
    ``device: cuda`` and falls back to the CPU, with a warning, under ``device: auto``.
    """
    import torch

    if not gpus:
        return torch.device("cpu")
    if torch.cuda.is_available():
        return torch.device("cuda")
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "unset")
    if configured == "cuda":
        raise RuntimeError(f"config.yaml: device is 'cuda' but this job sees no CUDA device on {socket.gethostname()} "
                           f"(CUDA_VISIBLE_DEVICES={visible}); run where a GPU is, or set device: auto or cpu")
    logging.getLogger("featlearn").warning("device auto: this job asked for a GPU but CUDA sees none "
                                           "(CUDA_VISIBLE_DEVICES=%s); computing on the CPU", visible)
    return torch.device("cpu")


def save_tensors(obj: dict, path: str | Path) -> None:
    """torch.save through a temporary file and a rename (a killed job leaves no half file), with a digest of the
    content inside (``load_tensors`` checks it). A destination that cannot take it (read-only, full) keeps nothing
    half-written and the result is written to a rescue folder instead (``featlearn.pipeline.integrity.land``): a full
    disk raises ``DiskNeedError``, any other failure ``ResultKept``, each naming where the result is."""
    import torch

    payload = {**obj, DIGEST_KEY: tensors_digest(obj)}
    land(lambda tmp: torch.save(payload, tmp), path)


def load_tensors(path: str | Path) -> dict:
    """torch.load that checks the content digest and says which file is broken and how to rebuild it.

    ``weights_only=True``: featlearn files hold only tensors and plain Python values (dicts, lists, str, int, float,
    bool, None), and unpickling anything else could run code from a file someone handed over."""
    import re

    import torch

    fix = "delete it and rerun snakemake to rebuild it"
    if Path(path).is_symlink():  # linked from Snakemake's output cache: deleting the link alone links it back
        entry = Path(path).resolve()
        fix = (f"it is a link to {entry} in Snakemake's output cache, shared by every clone: delete that entry "
               f"(rm -f '{entry}'; or ask its owner) and the link, then rerun snakemake to rebuild it")
    try:
        obj = torch.load(path, weights_only=True, map_location="cpu")  # a GPU's file opens anywhere
    except Exception as err:
        if refused := re.search(r"Unsupported global: GLOBAL (\S+)", str(err)):
            raise OSError(f"{path} holds a pickled {refused[1]}, which safe loading (torch.load with "
                          "weights_only=True) refuses: featlearn files hold only tensors and plain Python values; "
                          f"{fix}") from err
        raise OSError(f"{path} is unreadable ({err}); {fix}") from err
    if not isinstance(obj, dict):
        raise OSError(f"{path} holds a {type(obj).__name__}, not a featlearn file; {fix}")
    digest = obj.pop(DIGEST_KEY, None)
    if digest is None:
        logging.getLogger(__name__).warning("%s carries no digest (an older version wrote it); unverified", path)
    elif digest != tensors_digest(obj):
        raise OSError(f"{path} is corrupted (its content no longer matches the digest written with it); {fix}")
    return obj
