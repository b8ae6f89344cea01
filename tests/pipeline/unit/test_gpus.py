"""GPU claims: concurrent jobs get distinct ids, or share a card by memory; a killed job's claim is free again; SLURM
is left alone; the cards' memory as nvidia-smi and CUDA_VISIBLE_DEVICES give it."""

import multiprocessing
import os
import signal
import sys
import time

import pytest

from featlearn.pipeline import gpus

CTX = multiprocessing.get_context("fork")  # children only import featlearn.pipeline.gpus; fork keeps them fast


def _claim(lock_dir, count, results, hold=None, need_mb=None, cards_mb=None) -> None:
    """A stand-in training job: claim, report the id and CUDA_VISIBLE_DEVICES, hold until told to exit
    (or, with no ``hold``, until killed: a process killed inside ``Event.wait`` would leave the event's
    internal lock taken, and the next ``set()`` would hang)."""
    os.environ.pop("CUDA_VISIBLE_DEVICES", None)
    os.environ.pop("SLURM_JOB_ID", None)
    gpu = gpus.claim_gpu(count=count, lock_dir=lock_dir, timeout_s=30, need_mb=need_mb, cards_mb=cards_mb)
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


def _start(tmp_path, results, hold, need_mb, cards_mb):
    p = CTX.Process(target=_claim, args=(tmp_path, None, results, hold, need_mb, cards_mb))
    p.start()
    return p, results.get(timeout=30)


def test_jobs_share_a_card_while_their_memory_fits_and_spill_to_the_next(tmp_path, no_scheduler_env):
    """Two 40 GB jobs share an 85.5 GB card, the next two go to the second card, a fifth waits while a 5 GB job still
    fits the first card; a whole-card claim (need unknown) shares with nothing."""
    results, hold = CTX.Queue(), CTX.Event()
    cards = [85520, 85520]
    procs = []
    for expected in ((0, "0"), (0, "0"), (1, "1"), (1, "1")):
        p, got = _start(tmp_path, results, hold, 40000, cards)
        procs.append(p)
        assert got == expected
    with pytest.raises(TimeoutError, match="none had 40,000 MB free"):
        gpus.claim_gpu(lock_dir=tmp_path, timeout_s=0.6, need_mb=40000, cards_mb=cards)
    assert gpus.claim_gpu(lock_dir=tmp_path, timeout_s=0, need_mb=5000, cards_mb=cards) == 0
    os.environ.pop("CUDA_VISIBLE_DEVICES")
    with pytest.raises(TimeoutError, match="none had a whole card free"):
        gpus.claim_gpu(lock_dir=tmp_path, timeout_s=0, cards_mb=cards)
    hold.set()
    for p in procs:
        p.join(30)


def test_a_killed_jobs_memory_is_claimed_again(tmp_path, no_scheduler_env):
    results = CTX.Queue()
    holder = CTX.Process(target=_claim, args=(tmp_path, None, results, None, 60000, [85520]))
    holder.start()
    assert results.get(timeout=30) == (0, "0")
    with pytest.raises(TimeoutError):
        gpus.claim_gpu(lock_dir=tmp_path, timeout_s=0, need_mb=30000, cards_mb=[85520])
    os.kill(holder.pid, signal.SIGKILL)
    holder.join(30)
    assert gpus.claim_gpu(lock_dir=tmp_path, timeout_s=5, need_mb=30000, cards_mb=[85520]) == 0
    assert [p.name for p in tmp_path.glob("*.claim")] == [f"gpu0.{os.getpid()}.claim"]  # the dead one's is gone


def test_a_need_no_card_holds_fails_at_once(tmp_path, no_scheduler_env):
    with pytest.raises(MemoryError, match="needs 90,000 MB of GPU memory, more than any card here holds"):
        gpus.claim_gpu(lock_dir=tmp_path, timeout_s=3600, need_mb=90000, cards_mb=[85520, 25757])


def test_a_snakemake_jobs_own_request_is_the_default_need(monkeypatch):
    class Job:
        resources = type("Resources", (), {"gpu_mem_mb": 12345})()

    monkeypatch.setattr(sys.modules["__main__"], "snakemake", Job(), raising=False)
    assert gpus.job_need_mb() == 12345
    monkeypatch.delattr(sys.modules["__main__"], "snakemake")
    assert gpus.job_need_mb() is None


CARDS = [("0", "GPU-aaaa-1111", 85520), ("1", "GPU-bbbb-2222", 25757), ("2", "GPU-cccc-3333", 42949)]


@pytest.mark.parametrize(("env", "seen"), [
    (None, [85520, 25757, 42949]),
    ("1", [25757]),
    ("2,0", [42949, 85520]),
    ("GPU-bbbb", [25757]),           # a UUID prefix
    ("0,7,1", [85520]),              # CUDA stops at the first entry naming no card
    ("", []),
    ("-1", []),
])
def test_the_visible_cards_follow_cuda_visible_devices(env, seen):
    assert gpus.visible(CARDS, env) == seen


def test_card_memory_is_read_from_nvidia_smi_in_mb(monkeypatch):
    monkeypatch.setattr(gpus, "_smi", lambda *args: ["0, GPU-aaaa, 81559", "1, GPU-bbbb, 24564"])
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    gpus.card_memory_mb.cache_clear()
    try:
        assert gpus.card_memory_mb() == (int(24564 * 1.048576),)  # an RTX 4090's 24,564 MiB
    finally:
        gpus.card_memory_mb.cache_clear()
