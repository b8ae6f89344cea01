"""The Snakemake profiles: profiles/default, which Snakemake reads by itself, and profiles/slurm laid under it."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DEFAULT, SLURM = ROOT / "profiles/default/config.yaml", ROOT / "profiles/slurm/config.yaml"
# PartitionLimits of snakemake-executor-plugin-slurm 2.8 (partitions.py): an unknown key there is a TypeError at
# submission, on the cluster; here it fails at once.
PARTITION_LIMITS = {"max_runtime", "max_mem_mb", "max_mem_mb_per_cpu", "max_cpus_per_task", "max_threads",
                    "max_nodes", "max_tasks", "max_tasks_per_node", "max_gpu", "available_gpu_models",
                    "max_cpus_per_gpu", "supports_mpi", "max_mpi_tasks", "available_constraints", "cluster",
                    "slurm_cluster", "clusters"}


def _load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def test_the_default_profile_lies_where_snakemake_looks_for_it():
    """Snakemake 9 reads `profiles/default/` relative to the working directory or beside the Snakefile (the
    Snakefile is at the top here), not `workflow/profiles/default/`."""
    assert (ROOT / "Snakefile").is_file() and DEFAULT.is_file()
    assert not (ROOT / "workflow/profiles").exists()


def test_the_default_profile_agrees_with_the_slurm_profile_on_every_key_both_set():
    """Snakemake lays the workflow profile over `--profile profiles/slurm` key by key: a key set differently in the
    two would silently take the default profile's value on the cluster."""
    default, slurm = _load(DEFAULT), _load(SLURM)
    assert {k: (default[k], slurm[k]) for k in default.keys() & slurm.keys() if default[k] != slurm[k]} == {}
    assert "executor" not in default


def test_the_slurm_profile_routes_partitions_by_its_partition_file():
    slurm = _load(SLURM)
    partitions = _load(SLURM.parent / slurm["slurm-partition-config"])["partitions"]
    assert {"cpu", "gpu"} <= set(partitions)
    assert all(set(limits) <= PARTITION_LIMITS for limits in partitions.values()), partitions
    assert partitions["gpu"]["max_gpu"] > 0 and partitions["cpu"].get("max_gpu", 0) == 0
    # a partition named for every job would win over the selection
    assert "slurm_partition" not in slurm.get("default-resources", {})
    # the synthetic data jobs are grouped on the cluster only (a local run's dry run then lists no group jobs)
    assert slurm["groups"] == {"synthetic_data": "data"} and "data" in slurm["group-components"]


@pytest.mark.pipeline
def test_a_plain_snakemake_call_reads_the_default_profile(tmp_path, copy_repo):
    repo = copy_repo(tmp_path)
    shutil.copytree(ROOT / "profiles", repo / "profiles")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(repo / "src"), os.environ.get("PYTHONPATH")]))}
    cmd = [str(Path(sys.executable).with_name("snakemake")), "-n", "figures/smoke/tangent/fig2.pdf", "--config",
           "scale=smoke"]
    proc = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "workflow specific profile profiles/default" in proc.stderr, proc.stderr[-3000:]
