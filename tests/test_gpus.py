"""GPU claims: concurrent jobs get distinct ids, a killed job's GPU is free again, SLURM is left alone."""

import multiprocessing
import os
import signal
import time

import pytest

from featlearn import gpus

CTX = multiprocessing.get_context("fork")  # children only import featlearn.gpus; fork keeps them fast


def _claim(lock_dir, count, results, hold=None) -> None:
    """A stand-in training job: claim, report the id and CUDA_VISIBLE_DEVICES, hold until told to exit
    (or, with no ``hold``, until killed: a process killed inside ``Event.wait`` would leave the event's
    internal lock taken, and the next ``set()`` would hang)."""
    os.environ.pop("CUDA_VISIBLE_DEVICES", None)
    os.environ.pop("SLURM_JOB_ID", None)
    gpu = gpus.claim_gpu(count=count, lock_dir=lock_dir, timeout_s=30)
    results.put((gpu, os.environ.get("CUDA_VISIBLE_DEVICES")))
    if hold is None:
        time.sleep(60)
    else:
        hold.wait(30)


@pytest.fixture
def no_scheduler_env(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)


def test_concurrent_jobs_get_distinct_gpus(tmp_path):
    results, hold = CTX.Queue(), CTX.Event()
    procs = [CTX.Process(target=_claim, args=(tmp_path, 3, results, hold)) for _ in range(3)]
    for p in procs:
        p.start()
    claimed = [results.get(timeout=30) for _ in procs]
    hold.set()
    for p in procs:
        p.join(30)
    assert sorted(claimed) == [(0, "0"), (1, "1"), (2, "2")]


def test_a_killed_jobs_gpu_is_claimed_again(tmp_path):
    results, hold = CTX.Queue(), CTX.Event()
    holder = CTX.Process(target=_claim, args=(tmp_path, 2, results))
    holder.start()
    assert results.get(timeout=30) == (0, "0")
    second = CTX.Process(target=_claim, args=(tmp_path, 2, results, hold))
    second.start()
    assert results.get(timeout=30) == (1, "1")  # GPU 0 is still held
    os.kill(holder.pid, signal.SIGKILL)  # no cleanup code runs: the kernel drops the lock
    holder.join(30)
    third = CTX.Process(target=_claim, args=(tmp_path, 2, results, hold))
    third.start()
    assert results.get(timeout=30) == (0, "0")
    hold.set()
    for p in (second, third):
        p.join(30)


def test_waits_then_says_which_locks_are_held(tmp_path, no_scheduler_env):
    results, hold = CTX.Queue(), CTX.Event()
    holder = CTX.Process(target=_claim, args=(tmp_path, 1, results, hold))
    holder.start()
    results.get(timeout=30)
    with pytest.raises(TimeoutError, match="all 1 GPUs stayed claimed"):
        gpus.claim_gpu(count=1, lock_dir=tmp_path, timeout_s=0.6)
    hold.set()
    holder.join(30)
    assert "CUDA_VISIBLE_DEVICES" not in os.environ


@pytest.mark.parametrize("var,value", [("SLURM_JOB_ID", "123"), ("CUDA_VISIBLE_DEVICES", "3")])
def test_scheduler_or_user_assignment_is_respected(tmp_path, no_scheduler_env, monkeypatch, var, value):
    monkeypatch.setenv(var, value)
    assert gpus.claim_gpu(count=4, lock_dir=tmp_path) is None
    assert os.environ.get("CUDA_VISIBLE_DEVICES") == (value if var == "CUDA_VISIBLE_DEVICES" else None)
    assert not list(tmp_path.iterdir())


def test_no_gpus_pins_nothing(tmp_path, no_scheduler_env):
    assert gpus.claim_gpu(count=0, lock_dir=tmp_path) is None
    assert "CUDA_VISIBLE_DEVICES" not in os.environ
