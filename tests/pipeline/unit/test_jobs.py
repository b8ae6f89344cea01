import errno
import fcntl
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from featlearn.pipeline.integrity import ResultKept
from featlearn.pipeline.jobs import JobRunning, attempts_path, job_device, load_tensors, save_tensors, start
from featlearn.pipeline.reruns import refuse_duplicates

NO_CUDA = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the behaviour where CUDA sees no device")


def test_a_job_without_a_gpu_request_computes_on_the_cpu():
    assert job_device("cuda", 0) == torch.device("cpu")
    assert job_device("auto", 0) == torch.device("cpu")


@NO_CUDA
def test_a_gpu_job_without_cuda_fails_under_cuda_and_falls_back_under_auto(caplog):
    with pytest.raises(RuntimeError, match="device is 'cuda' but this job sees no CUDA device"):
        job_device("cuda", 1)
    with caplog.at_level(logging.WARNING, logger="featlearn"):
        assert job_device("auto", 1) == torch.device("cpu")
    assert "computing on the CPU" in caplog.text


def test_an_uncaught_exception_is_written_to_the_jobs_log(tmp_path):
    log = tmp_path / "job.log"
    code = f"from featlearn.pipeline.jobs import start\nstart({str(log)!r})\nraise ValueError('the cause, named')\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    text = log.read_text()
    assert "job failed" in text and "Traceback" in text and "ValueError: the cause, named" in text


def test_a_second_copy_of_a_running_job_stops_and_keeps_the_first_ones_log(tmp_path):
    log = tmp_path / "train" / "run.log"
    log.parent.mkdir()
    log.write_text("the orphan's lines\n")
    with open(log.with_name(".run.log.lock"), "a+") as orphan:  # a live process holding the job's lock
        orphan.write("pid 4242 on node7\n")
        orphan.flush()
        fcntl.flock(orphan, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(JobRunning, match=r"already running \(pid 4242 on node7\).*kill it, then rerun"):
            start(str(log))
    code = f"from featlearn.pipeline.jobs import start\nstart({str(log)!r}).info('second attempt')\n"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)  # the lock is free once the orphan exits
    text = log.read_text()
    assert text.startswith("the orphan's lines\n") and "second attempt" in text


def test_a_figure_job_loads_no_torch_and_a_job_loading_it_later_keeps_its_threads(tmp_path):
    code = (
        "import sys\nfrom featlearn.pipeline.jobs import start\n"
        "import featlearn.pipeline.store, featlearn.figures.collapse.fig2\n"
        f"start({str(tmp_path / 'job.log')!r}, threads=2)\nprint('torch' in sys.modules)\n"
        "import torch\nprint(torch.get_num_threads())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "2"]


class _Payload:
    """Any object but a tensor or a plain value: unpickling one can run code."""


def test_a_file_holding_a_pickled_object_is_refused_with_its_path_and_the_fix(tmp_path):
    path = tmp_path / "run.pt"
    torch.save({"status": "completed", "payload": _Payload()}, path)
    with pytest.raises(OSError, match=re.escape(str(path)) + r" holds a pickled \S*_Payload, which safe loading "
                                      r"\(torch.load with weights_only=True\) refuses.*delete it and rerun snakemake"):
        load_tensors(path)


def test_a_checkpoint_with_optimizer_and_rng_state_loads_safely(tmp_path):
    """What train.py checkpoints (model, optimizer with betas and steps, generator states, losses, None) is all
    tensors and plain values, so weights_only loading takes it."""
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.AdamW(model.parameters(), betas=(0.9, 0.95))
    model(torch.ones(4, 3)).sum().backward()
    optimizer.step()
    ckpt = {"spec": "{}", "model": model.state_dict(), "optimizer": optimizer.state_dict(),
            "shuffle": torch.Generator().manual_seed(1).get_state(), "rng": torch.get_rng_state(),
            "snapshots": {0: {"weight": torch.zeros(2, 3)}}, "losses": [0.5], "step": 1, "diverged_step": None}
    save_tensors(ckpt, tmp_path / "run.ckpt")
    back = load_tensors(tmp_path / "run.ckpt")
    assert back["optimizer"]["param_groups"][0]["betas"] == (0.9, 0.95) and back["diverged_step"] is None
    assert torch.equal(back["rng"], ckpt["rng"]) and torch.equal(back["model"]["weight"], model.weight.detach())


def test_every_attempts_lines_stay_when_snakemake_deletes_the_log_between_attempts(tmp_path):
    log = tmp_path / "train" / "run.log"
    for attempt in (1, 2):
        code = f"from featlearn.pipeline.jobs import start\nstart({str(log)!r}).info('attempt {attempt}')\n"
        subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
        if attempt == 1:
            log.unlink()  # what Snakemake does before each attempt
    text = log.read_text()
    assert text.index("attempt 1") < text.index("attempt 2") and attempts_path(log).read_text() == text


def test_an_orphan_still_computing_is_named_and_not_run_twice(tmp_path):
    """The Snakefile's onstart stops the build when a job it would run holds its job lock in another process."""
    class Job:
        output = ["results/smoke/runs/chain_fig1/seed-0.0123456789.pt"]
        log = [str(tmp_path / "seed-0.0123456789.log")]

    refuse_duplicates([Job()])  # no lock file: nothing to refuse
    with open(tmp_path / ".seed-0.0123456789.log.lock", "a+") as orphan:
        orphan.write("pid 4242 on node7\n")
        orphan.flush()
        fcntl.flock(orphan, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(JobRunning, match=r"seed-0\.0123456789\.pt \(pid and host: pid 4242 on node7\)\. Wait"):
            refuse_duplicates([Job()])
    refuse_duplicates([Job()])  # released with the orphan's file


def test_a_corrupt_file_linked_from_the_cache_names_the_cache_entry(tmp_path):
    entry, link = tmp_path / "cache" / "0a1b_run.pt", tmp_path / "runs" / "r.pt"
    save_tensors({"x": torch.arange(400.0)}, entry)
    link.parent.mkdir()
    link.symlink_to(entry)
    raw = bytearray(entry.read_bytes())
    raw[raw.find(torch.arange(400.0).numpy().tobytes()[800:816]) + 8] ^= 0xFF
    entry.write_bytes(bytes(raw))
    with pytest.raises(OSError, match=rf"{link} is corrupted .*a link to {entry} in Snakemake's output cache.*"
                                      rf"delete that entry \(rm -f '{entry}'"):
        load_tensors(link)


@pytest.mark.parametrize("cause", [errno.EROFS, errno.EACCES])
def test_a_result_that_cannot_land_is_kept_elsewhere_and_the_first_error_is_shown(tmp_path, monkeypatch, cause):
    monkeypatch.setenv("FEATLEARN_RESCUE_DIR", str(tmp_path / "rescued"))
    path = tmp_path / "results" / "runs" / "r.pt"
    real_replace = os.replace

    def refused(src, dst):  # the folder turned read-only (or not ours) while the job trained
        if Path(dst).parent == path.parent:
            raise OSError(cause, os.strerror(cause), str(dst))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", refused)
    with pytest.raises(ResultKept) as raised:
        save_tensors({"x": torch.arange(5.0)}, path)
    kept = tmp_path / "rescued" / path.relative_to("/")
    why = "is on a read-only file system" if cause == errno.EROFS else "may not write in"
    assert f"could not write {path} (" in str(raised.value) and why in str(raised.value)
    assert f"the result is kept at {kept}" in str(raised.value) and f"mv '{kept}' '{path}'" in str(raised.value)
    assert raised.value.__cause__ is None and raised.value.__suppress_context__  # one error, no clean-up chain
    assert torch.equal(load_tensors(kept)["x"], torch.arange(5.0)) and list(path.parent.iterdir()) == []
