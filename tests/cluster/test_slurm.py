"""The smoke DAG through a real single-node SLURM (../shared/cluster) with the shipped profile.

Each job must run as a SLURM job (its log records ``slurm_job_id``), and a training job cancelled
with ``scancel`` must resume from its checkpoint when rerun. Needs root (to start munged, slurmctld
and slurmd) and Debian's packages; elsewhere the tests are skipped with the reason.
"""

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT.parent / "shared" / "cluster"
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
# The shipped profile, then the test cluster's specifics (squeue status, no accounts, fast polling).
PROFILES = ("--profile", str(ROOT / "workflow/profiles/slurm"), "--profile", str(Path(__file__).parent / "profile"))
PIDFILES = ("/run/munge/munged.pid", "/run/slurm/slurmctld.pid", "/run/slurm/slurmd.pid")

pytestmark = pytest.mark.cluster


def _alive(pidfile: str) -> bool:
    try:
        os.kill(int(Path(pidfile).read_text()), 0)
    except (OSError, ValueError):
        return False
    return True


def _why_no_cluster() -> str | None:
    if not (CLUSTER / "slurm_up.sh").exists():
        return f"{CLUSTER}/slurm_up.sh not found (the shared/ folder beside the checkout)"
    if os.geteuid() != 0:
        return "starting munged, slurmctld and slurmd needs root"
    if not (shutil.which("sbatch") or shutil.which("apt-get")):
        return "no SLURM installed and no apt-get to install Debian's slurm-wlm"
    return None


@pytest.fixture(scope="module")
def cluster():
    """A running single-node cluster; stops the daemons this fixture started, and only those."""
    reason = _why_no_cluster()
    if reason:
        pytest.skip(f"SLURM cluster test skipped: {reason}")
    already = {p for p in PIDFILES if _alive(p)}
    up = subprocess.run(["timeout", "-k", "10", "600", "bash", str(CLUSTER / "slurm_up.sh")],
                        capture_output=True, text=True)
    assert up.returncode == 0, f"slurm_up.sh failed:\n{up.stdout[-2000:]}\n{up.stderr[-4000:]}"
    yield
    if not already:
        subprocess.run(["bash", str(CLUSTER / "slurm_down.sh")], capture_output=True, timeout=120)




def _snakemake(repo: Path, *args: str, timeout_s: int = 900) -> list[str]:
    """The command line, wrapped in `timeout -k`: a stuck status check must not hang CI."""
    return ["timeout", "-k", "30", str(timeout_s), str(SNAKEMAKE), *args, *PROFILES, "--config", "scale=smoke"]


def _env(repo: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(repo / "src")}


def _slurm_ids(logs: list[Path]) -> dict[Path, str]:
    ids = {}
    for log in logs:
        found = re.findall(r"slurm_job_id=(\S+)", log.read_text())
        ids[log] = found[-1] if found else "missing"
    return ids


def _known_to_slurm() -> set[str]:
    """Job ids slurmctld still lists (finished ones stay for MinJobAge = 300 s on the test cluster)."""
    out = subprocess.run(["squeue", "--states=all", "-h", "-o", "%i"], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_smoke_figures_run_as_slurm_jobs(cluster, tmp_path, copy_repo):
    repo = copy_repo(tmp_path)
    targets = ["figures/smoke/alignment/fig1.pdf", "figures/smoke/collapse/fig3.pdf", "figures/smoke/tangent/fig2.pdf"]
    start = time.monotonic()
    proc = subprocess.run(_snakemake(repo, *targets), cwd=repo, env=_env(repo), capture_output=True, text=True)
    seconds = time.monotonic() - start
    assert proc.returncode == 0, f"snakemake through SLURM failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    for target in targets:
        assert (repo / target).stat().st_size > 1000, target
    logs = sorted((repo / "results/smoke/logs").rglob("*.log"))
    ids = _slurm_ids(logs)
    assert len(logs) >= 6, logs
    not_slurm = {str(p.relative_to(repo)): i for p, i in ids.items() if not i.isdigit()}
    assert not not_slurm, f"jobs that did not run under SLURM: {not_slurm}"
    assert len(set(ids.values())) == len(logs), "each Snakemake job is its own SLURM job"
    assert set(ids.values()) <= _known_to_slurm()
    print(f"{len(logs)} jobs through SLURM in {seconds:.0f} s")


def test_scancelled_training_job_resumes_from_its_checkpoint(cluster, tmp_path, copy_repo, long_training_run):
    repo = copy_repo(tmp_path)
    target, log = long_training_run(repo)
    ckpt, log = repo / target.replace(".pt", ".ckpt"), repo / log
    first = subprocess.Popen(_snakemake(repo, target), cwd=repo, env=_env(repo),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 300
    while not (ckpt.exists() and log.exists()) and time.monotonic() < deadline and first.poll() is None:
        time.sleep(0.2)
    assert ckpt.exists(), f"no checkpoint appeared:\n{first.communicate()[0][-4000:]}"
    job = _slurm_ids([log])[log]
    assert job.isdigit(), log.read_text()
    subprocess.run(["scancel", job], check=True)
    out = first.communicate(timeout=300)[0]
    assert first.returncode != 0, f"the cancelled job was reported as a success:\n{out[-3000:]}"
    assert not (repo / target).exists()
    stopped_at = torch.load(ckpt, weights_only=False)["step"]
    assert 0 < stopped_at < 20000

    second = subprocess.run(_snakemake(repo, target), cwd=repo, env=_env(repo), capture_output=True, text=True)
    assert second.returncode == 0, f"the rerun failed:\n{second.stdout[-3000:]}\n{second.stderr[-6000:]}"
    text = log.read_text()
    resumed = re.search(r"resuming from \S+ at step (\d+)", text)
    assert resumed and int(resumed.group(1)) == stopped_at, text[-3000:]
    assert _slurm_ids([log])[log] not in ("missing", job)  # a new SLURM job did the rest
    record = torch.load(repo / target, weights_only=False)
    assert record["status"] == "completed" and len(record["losses"]) == 20001
    assert not ckpt.exists()
