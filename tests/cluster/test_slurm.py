"""The smoke DAG through a real single-node SLURM (started by tests/cluster/slurm_up.sh, stopped by slurm_down.sh)
with the shipped profile (profiles/slurm).

Every heavy job (data, training, measurement) must run as a SLURM job (its log records ``slurm_job_id``) and every
light one (figures, combining, claims) where Snakemake runs; a training job cancelled with ``scancel`` must resume
from its checkpoint when rerun; a job that runs out of memory must be retried with more. Needs root (to start munged,
slurmctld and slurmd), Debian's packages and the SLURM executor plugin (`make test` puts it in .venv/slurm, outside
the environment every other snakemake call imports); elsewhere the tests are skipped with the reason.
"""

import os
import re
import shutil
import subprocess
import sys
import time
from importlib.util import find_spec
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = Path(__file__).parent  # slurm_up.sh, slurm_down.sh and the test cluster's profile
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
# The shipped profile, then the test cluster's specifics (squeue status, no accounts, fast polling, its partition).
PROFILES = ("--profile", str(ROOT / "profiles/slurm"), "--profile", str(CLUSTER / "profile"))
# Where `make test` installs the SLURM executor plugin for these tests only (requirements-slurm.txt): Snakemake imports
# every executor plugin it can find at every call, and this one then asks scontrol for the cluster's configuration,
# which takes ~9 s wherever SLURM's commands are installed but no controller runs (the other tests, after this one).
PLUGIN_DIR = ROOT / ".venv" / "slurm"
# The rules that run where Snakemake runs (localrule) and those sent to SLURM, by their logs' folder (of the smoke
# test's targets; claims and shortcuts are localrules too).
LOCAL_LOGS = ("figures", "combine")
SLURM_LOGS = ("data", "train", "measure")
PIDFILES = ("/run/munge/munged.pid", "/run/slurm/slurmctld.pid", "/run/slurm/slurmd.pid")

pytestmark = pytest.mark.cluster


def _alive(pidfile: str) -> bool:
    try:
        os.kill(int(Path(pidfile).read_text()), 0)
    except (OSError, ValueError):
        return False
    return True


def _why_no_cluster() -> str | None:
    if os.geteuid() != 0:
        return "starting munged, slurmctld and slurmd needs root"
    if not (shutil.which("sbatch") or shutil.which("apt-get")):
        return "no SLURM installed and no apt-get to install Debian's slurm-wlm"
    if _plugin_path() is None:
        return f"snakemake-executor-plugin-slurm is neither installed nor in {PLUGIN_DIR} (`make test` or `make slurm`)"
    return None


def _plugin_path() -> str | None:
    """'' where the SLURM executor plugin is installed, the folder holding it where `make test` put it aside, else
    None."""
    if find_spec("snakemake_executor_plugin_slurm") is not None:
        return ""
    return str(PLUGIN_DIR) if (PLUGIN_DIR / "snakemake_executor_plugin_slurm").is_dir() else None


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
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(repo / "src"), _plugin_path()) if p)}


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
    # every stage (Fig 1: data, training, measurement, combining, a figure) and a data group (Fig 3's three datasets)
    targets = ["figures/smoke/alignment/fig1.pdf", "figures/smoke/collapse/fig3.pdf"]
    start = time.monotonic()
    proc = subprocess.run(_snakemake(repo, *targets), cwd=repo, env=_env(repo), capture_output=True, text=True)
    seconds = time.monotonic() - start
    assert proc.returncode == 0, f"snakemake through SLURM failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    for target in targets:
        assert (repo / target).stat().st_size > 1000, target
    logs = sorted((repo / "results/smoke/logs").rglob("*.log"))
    ids = {str(p.relative_to(repo / "results/smoke/logs")): i for p, i in _slurm_ids(logs).items()}
    stage = {log: log.split("/")[0] for log in ids}
    assert set(stage.values()) == set(LOCAL_LOGS + SLURM_LOGS), ids
    on_slurm = {log: i for log, i in ids.items() if stage[log] in SLURM_LOGS}
    local = {log: i for log, i in ids.items() if stage[log] in LOCAL_LOGS}
    assert all(i.isdigit() for i in on_slurm.values()), f"heavy jobs that did not run under SLURM: {on_slurm}"
    assert set(local.values()) == {"none"}, f"light jobs sent to SLURM instead of running here: {local}"
    for rule in ("figure", "combine"):
        assert f"localrule {rule}:" in proc.stdout + proc.stderr, rule
    # each training and measurement job is its own SLURM job; data jobs may share one (group "data")
    alone = [i for log, i in on_slurm.items() if stage[log] != "data"]
    assert len(set(alone)) == len(alone), on_slurm
    assert not set(alone) & {i for log, i in on_slurm.items() if stage[log] == "data"}, on_slurm
    assert set(on_slurm.values()) <= _known_to_slurm()
    print(f"{len(on_slurm)} jobs through SLURM ({len(set(on_slurm.values()))} SLURM jobs), {len(local)} local, "
          f"in {seconds:.0f} s")


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


# A rule whose job fails when SLURM grants it no more memory than the first attempt asks for (FIRST, in MB), with the
# training rule's own requests (job_request, which grows with Snakemake's attempt): the test cluster has no cgroups to
# kill a job over its memory, so the job reads its grant from SLURM (squeue's MIN_MEMORY, e.g. "1000M") and fails
# as an out-of-memory kill would end it. Each attempt notes its grant beside the output (Snakemake deletes a job's log
# before it runs it again).
RETRY_RULE = """

rule retry_probe:
    output:
        "results/smoke/retry/{experiment}/{unit}.txt",
    log:
        "results/smoke/logs/retry/{experiment}/{unit}.log",
    resources:
        runtime=job_request("runtime", "train"),
        mem_mb=job_request("mem_mb", "train"),
    shell:
        "mem=$(squeue -h -j $SLURM_JOB_ID -o %m); echo slurm_job_id=$SLURM_JOB_ID mem=$mem >> {output}.attempts; "
        "if [ ${{mem%M}} -le FIRST ]; then echo out of memory >> {output}.attempts; exit 1; fi; touch {output}"
"""


def test_a_job_out_of_memory_is_retried_with_more_memory(cluster, tmp_path, copy_repo):
    from featlearn.pipeline.resources import job_resources

    repo = copy_repo(tmp_path)
    first = job_resources("auto", "smoke", "train", "training")["mem_mb"]
    with (repo / "workflow/rules/train.smk").open("a") as f:
        f.write(RETRY_RULE.replace("FIRST", str(first)))
    target = "results/smoke/retry/chain_fig1/seed-0.txt"
    proc = subprocess.run(_snakemake(repo, target, "--restart-times", "1"), cwd=repo, env=_env(repo),
                          capture_output=True, text=True)
    assert proc.returncode == 0, f"the retry failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    log = (repo / f"{target}.attempts").read_text()
    # what SLURM granted each attempt, as the job read it, and as slurmctld still lists the two jobs (MinJobAge)
    attempts = re.findall(r"slurm_job_id=(\d+) mem=(\S+)", log)
    assert [mem for _, mem in attempts] == [f"{first}M", f"{2 * first}M"], log
    assert "out of memory" in log
    out = subprocess.run(["squeue", "--states=all", "-h", "-o", "%i %m %T"], capture_output=True, text=True, check=True)
    listed = {line.split()[0]: line.split()[1:] for line in out.stdout.splitlines()}
    assert [listed[job] for job, _ in attempts] == [[f"{first}M", "FAILED"], [f"{2 * first}M", "COMPLETED"]], listed


def test_the_shipped_partitions_send_gpu_jobs_to_a_gpu_partition_and_the_rest_elsewhere():
    """profiles/slurm/partitions.yaml through the plugin's own partition selection, with the pipeline's requests at
    paper scale: a network's training asks for a GPU, a synthetic run's measurement does not."""
    import logging

    from featlearn.pipeline.resources import job_resources

    where = _plugin_path()
    if where is None:
        pytest.skip(f"snakemake-executor-plugin-slurm is neither installed nor in {PLUGIN_DIR}")
    sys.path.insert(0, where)
    try:
        from snakemake_executor_plugin_slurm.partitions import get_best_partition, read_partition_file
    finally:
        sys.path.remove(where)
    partitions = read_partition_file(ROOT / "profiles/slurm/partitions.yaml")
    log = logging.getLogger(__name__)

    def partition(stage: str, kind: str, threads: int = 1) -> str | None:
        resources = job_resources("auto", "paper", stage, kind) | {"cpus_per_task": threads}
        return get_best_partition(partitions, SimpleNamespace(name=f"{stage}/{kind}", threads=threads,
                                                              resources=resources), log)

    assert job_resources("auto", "paper", "train", "network")["gpu"] == 1
    assert partition("train", "network") == "gpu"
    assert partition("measure", "deep_rfm") == "gpu"
    assert partition("measure", "training") == "cpu"
    assert partition("train", "training") == "cpu"
