"""Faults lose nothing, through real Snakemake: a run that an orphaned job finished after Snakemake was killed is
kept by the rerun (the profile's rerun-incomplete would delete and retrain it), with every attempt's log lines; a run
whose folder turned read-only (or full) while it trained is rescued with its usage record, and put back as the error
says, it is kept by the rerun; a cache that cannot take a run, a truncated dataset, a deleted store, outputs dated in
the future and a SIGTERM each cost nothing and say how to get back."""

import errno
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from featlearn import config as fc
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


def _env(repo: Path, **extra: str) -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(repo / "src"), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, **extra}


def _tmpfs_refused(folder: Path) -> str | None:
    """Why this machine cannot mount a tmpfs in a private mount namespace (root or CAP_SYS_ADMIN), or None."""
    if not shutil.which("unshare"):
        return "unshare (util-linux) is missing"
    probe = subprocess.run(["unshare", "-m", "mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs", str(folder)],
                           capture_output=True, text=True)
    return (probe.stderr.strip() or f"exit status {probe.returncode}") if probe.returncode else None


def _on_tmpfs(folder: Path, size: str, *args: str) -> list[str]:
    """Snakemake (``args``) in its own mount namespace where ``folder`` is a fresh tmpfs of ``size`` bytes."""
    call = " ".join(f"'{a}'" for a in [str(SNAKEMAKE), *args, "--cores", "1", "--config", "scale=smoke"])
    return ["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size={size} tmpfs '{folder}' && exec {call}"]


def _smoke_run(repo: Path) -> tuple[str, str, str]:
    """chain_fig1's first smoke run, its usage record and its dataset, relative to the repo."""
    cfg = yaml.safe_load((repo / "config.yaml").read_text()) | {"scale": "smoke"}
    unit, spec = next(iter(fx.units(cfg, "chain_fig1").items()))
    name = f"{unit}.{spec_hash(spec)}"
    data = f"results/smoke/data/{fc.dataset_key(spec['data'])}.pt"
    return (f"results/smoke/runs/chain_fig1/{name}.pt", f"results/smoke/usage/train/chain_fig1/{name}.json", data)


def test_a_cache_that_cannot_take_a_run_keeps_it_and_the_build_goes_on(tmp_path, copy_repo):
    """A full cache (a 4 kB tmpfs) used to fail the job with a raw ENOSPC and delete the trained run."""
    repo, cache = copy_repo(tmp_path), tmp_path / "cache"
    cache.mkdir()
    if why := _tmpfs_refused(cache):
        pytest.skip(f"cannot mount a tmpfs here: {why}")
    run, usage, _ = _smoke_run(repo)
    proc = subprocess.run(_on_tmpfs(cache, "4k", run, "--cache"), cwd=repo, capture_output=True, text=True,
                          env=_env(repo, SNAKEMAKE_OUTPUT_CACHE=str(cache)), timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert f"featlearn: Snakemake's output cache ($SNAKEMAKE_OUTPUT_CACHE={cache}) could not take {run}" in out, \
        out[-3000:]
    assert not (repo / run).is_symlink() and load_tensors(repo / run)["status"] == "completed"
    assert (repo / usage).is_file()
    finished = (repo / run).read_bytes()
    rerun = _snakemake(repo, run)
    assert "Nothing to be done" in rerun.stdout + rerun.stderr and (repo / run).read_bytes() == finished


def test_a_cache_folder_that_does_not_exist_stops_the_build_before_any_job(tmp_path, copy_repo):
    """It used to train, then fail with "Cannot access cache location" and delete the run, on every call."""
    repo = copy_repo(tmp_path)
    run, _, _ = _smoke_run(repo)
    gone = tmp_path / "no-such-dir"
    proc = subprocess.run([str(SNAKEMAKE), run, "--cache", "--cores", "1", "--config", "scale=smoke"], cwd=repo,
                          env=_env(repo, SNAKEMAKE_OUTPUT_CACHE=str(gone)), capture_output=True, text=True,
                          timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and f"$SNAKEMAKE_OUTPUT_CACHE={gone} is not a folder" in out, out[-3000:]
    assert f"mkdir -p '{gone}'" in out and not (repo / "results/smoke/runs").exists()


def test_a_full_results_disk_names_a_restore_command_for_each_rescued_file(tmp_path, copy_repo, monkeypatch):
    """The run's folder on a 4 kB tmpfs: both the run and its usage record are rescued, each with its own command
    (the run used to get none), and put back, the rerun trains nothing."""
    repo = copy_repo(tmp_path)
    run, usage, _ = _smoke_run(repo)
    folder = repo / Path(run).parent
    folder.mkdir(parents=True)
    if why := _tmpfs_refused(folder):
        pytest.skip(f"cannot mount a tmpfs here: {why}")
    env = _env(repo, FEATLEARN_RESCUE_DIR=str(tmp_path / "rescued"))
    proc = subprocess.run(_on_tmpfs(folder, "4k", run), cwd=repo, env=env, capture_output=True, text=True,
                          timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "is full" in out, out[-3000:]
    moves = dict.fromkeys(re.findall(r"\((mkdir -p '[^']+' && mv '[^']+' '[^']+')\)", out))
    assert sorted(re.findall(r"'([^']+)'", m)[-1] for m in moves) == sorted([run, usage]), out[-3000:]
    for mv in moves:
        subprocess.run(mv, shell=True, cwd=repo, check=True)
    assert load_tensors(repo / run)["status"] == "completed"
    rerun = _snakemake(repo, run, "--rerun-incomplete")  # as the default profile asks
    assert rerun.returncode == 0 and "Nothing to be done" in rerun.stdout + rerun.stderr, rerun.stderr[-3000:]


def test_a_checkpoint_that_cannot_land_is_named_as_a_checkpoint(tmp_path, monkeypatch):
    """It was called "the computed result", and no command put it back: the rerun resumed from an older one."""
    from featlearn.pipeline.integrity import land

    monkeypatch.setenv("FEATLEARN_RESCUE_DIR", str(tmp_path / "rescued"))
    path = tmp_path / "runs" / "seed-0.0123456789.ckpt"

    def write(tmp: Path) -> None:
        if path.parent in tmp.parents:  # the results disk is full; the rescue folder is not
            raise OSError(errno.ENOSPC, "No space left on device")
        tmp.write_bytes(b"state")

    with pytest.raises(OSError, match="nothing was lost: the checkpoint is kept at") as raised:
        land(write, path)
    kept = tmp_path / "rescued" / path.relative_to(path.anchor)
    assert f"mkdir -p '{path.parent}' && mv '{kept}' '{path}'" in str(raised.value)
    assert "resumes from an older checkpoint" in str(raised.value) and kept.read_bytes() == b"state"


def test_a_truncated_dataset_deletes_no_run_and_an_identical_rebuild_retrains_nothing(tmp_path, copy_repo):
    """The dataset is made larger than 1 MB, Snakemake's default limit for comparing an input by content."""
    repo = copy_repo(tmp_path)
    path = repo / "config.yaml"
    cfg = yaml.safe_load(path.read_text())
    cfg["experiments"]["chain_fig1"]["scales"]["smoke"]["data"].update(n=8000)
    path.write_text(yaml.safe_dump(cfg))
    run, _, data = _smoke_run(repo)
    assert _snakemake(repo, run).returncode == 0
    finished = (repo / run).read_bytes()
    original = (repo / data).read_bytes()
    assert len(original) > 1_000_000
    os.truncate(repo / data, len(original) // 2)
    proc = _snakemake(repo, run)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and f"{data} is unreadable" in out and f"would first delete {run}" in out, out[-3000:]
    assert (repo / run).read_bytes() == finished  # the run is still there
    rebuilt = _snakemake(repo, data, "--forcerun", data)  # the fix the message gives
    assert rebuilt.returncode == 0 and (repo / data).read_bytes() == original, rebuilt.stderr[-3000:]
    shutil.copyfile(repo / data, tmp_path / "copy.pt")
    shutil.copyfile(tmp_path / "copy.pt", repo / data)  # a plain cp of the same bytes: a newer date
    rerun = _snakemake(repo, run)
    out = rerun.stdout + rerun.stderr
    assert rerun.returncode == 0 and "Nothing to be done" in out and (repo / run).read_bytes() == finished, out[-3000:]


def test_a_deleted_store_is_rebuilt_by_a_plain_call(tmp_path, copy_repo):
    """Snakemake alone said "Nothing to be done": the figure that read the store was up to date."""
    repo = copy_repo(tmp_path)
    figure = "figures/smoke/tangent/fig2.pdf"
    assert _snakemake(repo, figure).returncode == 0
    (store,) = (repo / "results/smoke/metrics").glob("tangent_penalties.*.nc")
    store.unlink()
    proc = _snakemake(repo, figure)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and f"featlearn: rebuilding {store.relative_to(repo)}" in out, out[-3000:]
    assert store.is_file()


def test_outputs_dated_in_the_future_are_named_before_they_hide_an_edit(tmp_path, copy_repo):
    repo = copy_repo(tmp_path)
    figure = "figures/smoke/tangent/fig2.pdf"
    assert _snakemake(repo, figure).returncode == 0
    ahead = time.time() + 3 * 3600
    for folder in ("results", "figures"):
        for path in (repo / folder).rglob("*"):
            os.utime(path, (ahead, ahead), follow_symlinks=False)
    module = repo / "src/featlearn/figures/tangent/fig2.py"
    module.write_text(module.read_text() + "\nEDITED = True\n")
    proc = _snakemake(repo, figure)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "are dated in the future" in out, out[-3000:]
    fix = re.search(r"\((find results figures -newermt now -exec touch -h \{\} \+)\)", out)
    assert fix, out[-3000:]
    subprocess.run(fix[1], shell=True, cwd=repo, check=True)
    rerun = _snakemake(repo, figure)
    assert rerun.returncode == 0 and re.search(r"^localrule figure:", rerun.stdout + rerun.stderr, re.M), \
        (rerun.stdout + rerun.stderr)[-3000:]


def test_sigterm_to_snakemake_says_what_became_of_the_jobs(tmp_path, copy_repo, long_training_run):
    repo = copy_repo(tmp_path)
    target, log = long_training_run(repo, steps=3000, measure_every=1000)
    proc = subprocess.Popen([str(SNAKEMAKE), target, "--cores", "1", "--config", "scale=smoke"], cwd=repo,
                            env=_env(repo), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    deadline = time.monotonic() + 300
    while not re.search(r"step \d+/3000", (repo / log).read_text() if (repo / log).exists() else ""):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)  # snakemake alone, as `kill <pid>` does
    out = proc.communicate(timeout=600)[0]
    assert proc.returncode != 0 and "featlearn: snakemake was stopped by SIGTERM" in out, out[-3000:]
    assert load_tensors(repo / target)["status"] == "completed"  # the running job finished and was kept
