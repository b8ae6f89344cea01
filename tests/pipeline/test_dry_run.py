"""A dry run (`snakemake -n`) writes nothing: no code or spec stamp, no scale file (it used to write 208 files and
rewrite results/scale.txt to its own scale), and still plans what a real build would run."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SNAKEMAKE = Path(sys.executable).with_name("snakemake")
ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.pipeline


def _snakemake(repo: Path, *args: str, scale: str = "smoke") -> subprocess.CompletedProcess:
    # no bytecode: Python's own __pycache__ folders are not the build's writes
    env = {**os.environ, "PYTHONPATH": str(repo / "src"), "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [str(SNAKEMAKE), *args, "--cores", "1", "--config", f"scale={scale}"]
    return subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=600)


def _status(repo: Path) -> list[str]:
    """`git status --ignored --porcelain`, less Snakemake's own state folder, which every call makes (even
    `--unlock`): what featlearn writes is everything else."""
    lines = subprocess.run(["git", "status", "--ignored", "--porcelain"], cwd=repo, capture_output=True, text=True,
                           check=True).stdout.splitlines()
    return [line for line in lines if line != "!! .snakemake/"]


@pytest.fixture
def clone(tmp_path, copy_repo):
    """A fresh clone of the working tree: its files committed into a new repository, with the checkout's
    .gitignore."""
    repo = copy_repo(tmp_path)
    shutil.copy2(ROOT / ".gitignore", repo / ".gitignore")
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.org"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "clone"], cwd=repo, check=True)
    return repo


def test_a_dry_run_in_a_fresh_clone_writes_nothing(clone):
    before = _status(clone)
    proc = _snakemake(clone, "-n")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert re.search(r"^train\s+\d+$", proc.stdout, re.M), proc.stdout[-3000:]  # it planned the build
    assert _status(clone) == before


def test_a_dry_run_keeps_the_scale_file_and_shows_a_code_edit(clone):
    built = _snakemake(clone, "figures/smoke/tangent/fig2.pdf")
    assert built.returncode == 0, built.stderr[-3000:]
    scale = (clone / "results/scale.txt").read_text()
    module = clone / "src/featlearn/figures/tangent/fig2.py"
    module.write_text(module.read_text() + "\nEDITED = True\n")
    stamp = clone / "results/code/src/featlearn/figures/tangent/fig2.py.ast"
    recorded = stamp.read_text()
    proc = _snakemake(clone, "figures/quick/tangent/fig2.pdf", "-n", scale="quick")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert (clone / "results/scale.txt").read_text() == scale == "smoke\n" and stamp.read_text() == recorded
    assert not (clone / "results/quick").exists()
    smoke = _snakemake(clone, "figures/smoke/tangent/fig2.pdf", "-n")
    assert re.search(r"^figure\s+1$", smoke.stdout, re.M), smoke.stdout[-3000:]  # the edit is planned, unwritten
    assert stamp.read_text() == recorded
