"""Faults lose nothing, through real Snakemake: a run that an orphaned job finished after Snakemake was killed is
kept by the rerun (the profile's rerun-incomplete would delete and retrain it), with every attempt's log lines; a run
whose folder turned read-only while it trained is rescued with its usage record, and put back as the error says, it
is kept by the rerun."""

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from featlearn.config import spec_hash
from featlearn.pipeline import experiments as fx
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



def _read_only_mounts_refused(folder: Path) -> str | None:
    """Why this machine cannot make a folder read-only in a private mount namespace (unshare and mount need root or
    CAP_SYS_ADMIN), or None when it can."""
    if not (shutil.which("unshare") and shutil.which("nsenter")):
        return "unshare or nsenter (util-linux) is missing"
    probe = subprocess.run(["unshare", "-m", "sh", "-c", f"mount --bind '{folder}' '{folder}' && "
                            f"mount -o remount,bind,ro '{folder}'"], capture_output=True, text=True)
    if probe.returncode:
        return probe.stderr.strip() or f"exit status {probe.returncode}"
    return None


def _lengthened_without_checkpoints(repo: Path) -> tuple[str, str, str]:
    """chain_fig1's smoke run made to train for some seconds with no checkpoint before its end (conftest's
    long_training_run checkpoints every half second, into the folder this test turns read-only); its run, usage
    record and log, relative to the repo."""
    path = repo / "config.yaml"
    cfg = yaml.safe_load(path.read_text())
    cfg["experiments"]["chain_fig1"]["scales"]["smoke"].update(model={"widths": [256, 256]},
                                                                 train={"steps": 3000, "measure_every": 1000})
    path.write_text(yaml.safe_dump(cfg))
    run, unit = next(iter(fx.units(cfg | {"scale": "smoke"}, "chain_fig1").items()))
    name = f"{run}.{spec_hash(unit)}"
    return (f"results/smoke/runs/chain_fig1/{name}.pt", f"results/smoke/usage/train/chain_fig1/{name}.json",
            f"results/smoke/logs/train/chain_fig1/{name}.log")


def test_a_rescued_run_put_back_as_the_error_says_is_not_trained_again(tmp_path, copy_repo, monkeypatch):
    repo = copy_repo(tmp_path)
    target, usage, log = _lengthened_without_checkpoints(repo)
    folder = repo / Path(target).parent
    folder.mkdir(parents=True)
    if why := _read_only_mounts_refused(folder):
        pytest.skip(f"cannot make a folder read-only for real here: {why}")
    monkeypatch.setenv("FEATLEARN_RESCUE_DIR", str(tmp_path / "rescued"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(repo / "src"), os.environ.get("PYTHONPATH")]))}
    with open(tmp_path / "snakemake.out", "w") as out:  # snakemake in its own mount namespace: the mount stays in it
        proc = subprocess.Popen(["unshare", "-m", str(SNAKEMAKE), target, "--cores", "1", "--config", "scale=smoke"],
                                cwd=repo, env=env, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while not re.search(r"step \d+/3000", (repo / log).read_text() if (repo / log).exists() else ""):
        assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "snakemake.out").read_text()[-3000:]
        time.sleep(0.1)
    subprocess.run(["nsenter", "-t", str(proc.pid), "-m", "sh", "-c", f"mount --bind '{folder}' '{folder}' && "
                    f"mount -o remount,bind,ro '{folder}'"], check=True)  # the folder turns read-only mid-training
    proc.wait(timeout=300)
    out = (tmp_path / "snakemake.out").read_text()
    assert proc.returncode != 0 and f"could not write {target} ({folder.relative_to(repo)} is on a read-only file " \
        "system (mounted read-only)" in out, out[-3000:]
    moves = dict.fromkeys(re.findall(r"\((mkdir -p '[^']+' && mv '[^']+' '[^']+')\)", out))  # said more than once
    assert [re.findall(r"'([^']+)'", m)[-1] for m in moves] == [target, usage], out[-3000:]
    assert not (repo / target).exists() and not (repo / usage).exists()

    for mv in moves:  # the folder is writable again (the mount went with snakemake's namespace)
        subprocess.run(mv, shell=True, cwd=repo, check=True)
    finished = (repo / target).read_bytes()
    assert load_tensors(repo / target)["status"] == "completed"
    assert json.loads((repo / usage).read_text())["output_bytes"] == len(finished)
    rerun = _snakemake(repo, target, "--rerun-incomplete")
    out = rerun.stdout + rerun.stderr
    assert rerun.returncode == 0 and "Nothing to be done" in out, out[-3000:]
    assert not re.search(r"^(local)?rule train:", out, re.M) and (repo / target).read_bytes() == finished
