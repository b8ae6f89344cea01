"""Faults lose nothing, through real Snakemake: a run that an orphaned job finished after Snakemake was killed is
kept by the rerun (the profile's rerun-incomplete would delete and retrain it), with every attempt's log lines."""

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from featlearn.pipeline.jobs import attempts_path, load_tensors

SNAKEMAKE = Path(sys.executable).with_name("snakemake")

pytestmark = pytest.mark.pipeline


def _snakemake(repo: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(repo / "src"), os.environ.get("PYTHONPATH")]))}
    cmd = [str(SNAKEMAKE), *args, "--cores", "1", "--config", "scale=smoke"]
    return subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=600)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text()


def test_a_run_finished_by_an_orphan_of_a_killed_snakemake_is_kept(tmp_path, copy_repo, long_training_run):
    repo = copy_repo(tmp_path)
    target, log = long_training_run(repo, steps=3000, measure_every=1000)  # trains for some seconds
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(repo / "src"), os.environ.get("PYTHONPATH")]))}
    with open(tmp_path / "snakemake.out", "w") as out:  # a file: the orphan writes on after the test stops reading
        proc = subprocess.Popen([str(SNAKEMAKE), target, "--cores", "1", "--config", "scale=smoke"], cwd=repo,
                                env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 300
    while not re.search(r"step \d+/3000", (repo / log).read_text() if (repo / log).exists() else ""):
        assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "snakemake.out").read_text()[-3000:]
        time.sleep(0.1)
    job = int(re.search(r"pid=(\d+)", (repo / log).read_text())[1])
    proc.kill()  # SIGKILL of snakemake alone: its training job goes on as an orphan
    proc.wait()
    assert not (repo / target).exists(), "the run finished before snakemake was killed: nothing was tested"
    while _alive(job):
        assert time.monotonic() < deadline
        time.sleep(0.2)
    finished = (repo / target).read_bytes()
    assert load_tensors(repo / target)["status"] == "completed"

    assert _snakemake(repo, target, "--unlock").returncode == 0
    rerun = _snakemake(repo, target, "--rerun-incomplete")  # as the default profile asks
    out = rerun.stdout + rerun.stderr
    assert rerun.returncode == 0, out[-3000:]
    assert f"featlearn: keeping {target}" in out and "Nothing to be done" in out, out[-3000:]
    assert not re.search(r"^rule train:", out, re.M) and (repo / target).read_bytes() == finished  # not retrained
    lines = (repo / log).read_text()
    assert f"pid={job}" in lines and "completed on cpu" in lines  # the orphan's log is whole
    assert attempts_path(repo / log).read_text() == lines

