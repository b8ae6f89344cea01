"""Snakemake's between-workflow output cache (`--cache`, $SNAKEMAKE_OUTPUT_CACHE) on the data and training rules: a
second clone of the same code and config takes the runs a first clone trained from the cache and trains nothing."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from featlearn.config import spec_hash
from featlearn.pipeline import experiments as fx
from featlearn.pipeline.jobs import load_tensors

SNAKEMAKE = Path(sys.executable).with_name("snakemake")

pytestmark = pytest.mark.pipeline


def _build(repo: Path, cache: Path, *targets: str) -> subprocess.CompletedProcess:
    path = os.pathsep.join(filter(None, [str(repo / "src"), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "SNAKEMAKE_OUTPUT_CACHE": str(cache)}
    cmd = [str(SNAKEMAKE), *targets, "--cache", "--cores", "2", "--config", "scale=smoke"]
    proc = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    return proc


def test_a_second_clone_takes_the_trained_runs_from_the_cache(tmp_path, copy_repo):
    first, second, cache = (tmp_path / name for name in ("first", "second", "cache"))
    for folder in (first, second, cache):
        folder.mkdir()
        if folder != cache:
            copy_repo(folder)
    cfg = yaml.safe_load((first / "config.yaml").read_text()) | {"scale": "smoke"}
    runs = [f"results/smoke/runs/chain_fig1/{unit}.{spec_hash(spec)}.pt"
            for unit, spec in fx.units(cfg, "chain_fig1").items()]

    _build(first, cache, *runs)
    assert all((first / run).is_symlink() for run in runs)  # moved into the cache, linked back
    proc = _build(second, cache, "figures/smoke/alignment/fig1.pdf")
    log = proc.stderr
    for run in runs:
        assert (second / run).resolve().parent == cache.resolve(), run
        assert f"Symlinking output file {run} from cache" in log, log[-3000:]
        # Snakemake creates the log file of a job it takes from the cache; the training job never wrote to it
        assert (second / run.replace("/runs/", "/logs/train/").replace(".pt", ".log")).read_text() == "", run
    assert "Moving output file" not in log  # nothing new went into the cache: nothing was trained or generated
    assert (second / "figures/smoke/alignment/fig1.pdf").stat().st_size > 1000


def test_a_corrupt_cache_entry_is_named_moved_aside_and_recomputed(tmp_path, copy_repo):
    """Entries are shared by every clone: they are read-only, and a corrupt one (a flipped byte) is not linked back
    for ever: the build names it, moves it aside and trains the run again, which is then good."""
    repo, cache = tmp_path / "repo", tmp_path / "cache"
    for folder in (repo, cache):
        folder.mkdir()
    copy_repo(repo)
    cfg = yaml.safe_load((repo / "config.yaml").read_text()) | {"scale": "smoke"}
    unit, spec = next(iter(fx.units(cfg, "chain_fig1").items()))
    run = f"results/smoke/runs/chain_fig1/{unit}.{spec_hash(spec)}.pt"

    _build(repo, cache, run)
    entry = (repo / run).resolve()
    assert entry.parent == cache.resolve() and all(not f.stat().st_mode & 0o222 for f in cache.iterdir())
    losses = torch.load(entry, weights_only=True)["losses"].numpy().tobytes()
    raw = bytearray(entry.read_bytes())
    raw[raw.find(losses[:16]) + 8] ^= 0xFF  # inside the loss curve: torch alone loads it without complaint
    entry.chmod(0o644)
    entry.write_bytes(bytes(raw))
    (repo / run).unlink()  # the old advice: delete it and rerun (which linked the same corrupt entry back)

    log = _build(repo, cache, run).stderr
    assert f"featlearn: {entry}, Snakemake's output-cache entry for {run}, is corrupted" in log, log[-3000:]
    assert f"moved aside to {entry}.corrupt" in log and f"Moving output file {run} to cache" in log
    assert load_tensors(repo / run)["status"] == "completed"  # trained again: a good run, linked from the cache
    assert (repo / run).resolve() == entry and not entry.stat().st_mode & 0o222
