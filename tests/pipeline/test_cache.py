"""Snakemake's between-workflow output cache (`--cache`, $SNAKEMAKE_OUTPUT_CACHE) on the data and training rules: a
second clone of the same code and config takes the runs a first clone trained from the cache and trains nothing."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from featlearn import experiments as fx
from featlearn.config import spec_hash

SNAKEMAKE = Path(sys.executable).with_name("snakemake")

pytestmark = pytest.mark.pipeline


def _build(repo: Path, cache: Path, *targets: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(repo / "src"), "SNAKEMAKE_OUTPUT_CACHE": str(cache)}
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
