"""The paper scale's rehearsal through real Snakemake: one figure of every kind at the paper's shapes, capped at a few
points, its jobs' usage records and the projection read from them."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from featlearn.pipeline.projection import read_csv
from featlearn.pipeline.store import read_store

pytestmark = pytest.mark.pipeline

SNAKEMAKE = Path(sys.executable).with_name("snakemake")
# One figure of every kind: synthetic MLPs, the real-data MLP, VGG and GPT, a collapse network, Deep RFM, tangent.
FIGURES = ["alignment/fig1", "alignment/fig14", "alignment/fig15", "collapse/fig10", "collapse/fig3",
           "tangent/fig1", "tangent/fig2"]
CAP = 24


@pytest.fixture(scope="module")
def rehearsed(tmp_path_factory, copy_repo):
    repo = copy_repo(tmp_path_factory.mktemp("repo"))
    targets = [f"figures/paper-rehearsal/{f}.pdf" for f in FIGURES]
    targets += [f"results/paper-rehearsal/projection/{f}.csv" for f in FIGURES]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(repo / "src"), os.environ.get("PYTHONPATH")]))}
    cmd = [str(SNAKEMAKE), *targets, "--cores", "2", "--config", "scale=paper", "rehearse=true",
           f"rehearse_max_n={CAP}", f"data_dir={repo / 'no-datasets'}"]
    proc = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-6000:]
    return repo


def test_rehearsal_builds_its_own_figures_and_stores_only(rehearsed):
    for figure in FIGURES:
        assert (rehearsed / f"figures/paper-rehearsal/{figure}.pdf").stat().st_size > 1000, figure
    assert not (rehearsed / "results/paper").exists()  # never mixed with a real paper build
    assert not list((rehearsed / "figures").glob("fig*.pdf"))  # no shortcut points at a rehearsal
    stores = list((rehearsed / "results/paper-rehearsal/metrics").glob("*.nc"))
    assert stores
    for path in stores:
        assert read_store(path).attrs["scale"] == "paper-rehearsal", path


def test_rehearsal_runs_the_paper_shapes_for_a_cut_budget(rehearsed):
    """Widths and batch sizes are the paper's; steps, seeds and Deep RFM layers are cut; points are capped."""
    spec = json.loads((rehearsed / "results/paper-rehearsal/specs/real_mlp.json").read_text())
    assert spec["model"]["widths"] == [256] * 5 and spec["train"]["batch_size"] == 128
    assert spec["sweep"]["seed"] == [0] and spec["data"]["n"] == CAP
    assert spec["rehearsal"]["capped"]["data.n"] == 50000
    rfm = json.loads((rehearsed / "results/paper-rehearsal/specs/deep_rfm_relu.json").read_text())
    assert rfm["model"]["depth"] == 2 and rfm["model"]["width"] == 1024
    (usage,) = (rehearsed / "results/paper-rehearsal/usage/train/chain_fig1").glob("*.json")
    record = json.loads(usage.read_text())
    assert record["unit"] == "step" and record["units_run"] == 4 and record["seconds_per_unit"] > 0
    assert record["peak_rss_mb"] >= record["rss_start_mb"] > 0 and record["device"] == "cpu"


def test_projection_covers_every_paper_job_with_how_it_was_obtained(rehearsed):
    rows = {f: read_csv(rehearsed / f"results/paper-rehearsal/projection/{f}.csv") for f in FIGURES}
    fig1 = {(r["stage"], r["unit"]): r for r in rows["alignment/fig1"]}
    # the paper's five seeds, though the rehearsal ran one; 2,000 steps, though it ran 4
    assert {u for s, u in fig1 if s == "train"} == {f"seed-{i}" for i in range(5)}
    assert fig1["train", "seed-0"]["units_paper"] == "2000" and fig1["train", "seed-0"]["units_run"] == "4"
    assert "first seed" in fig1["train", "seed-3"]["how"]
    assert all(float(r["hours"]) > 0 and r["status"] in ("measured", "extrapolated") for f in rows for r in rows[f])
    rfm = [r for r in rows["collapse/fig3"] if r["stage"] == "measure"]
    assert {r["unit"] for r in rfm} == {"cifar10", "mnist", "svhn"}
    assert all(r["units_paper"] == "20" and "time order 2" in r["how"] for r in rfm)  # N capped: quadratic
    penalties = {r["stage"]: r for r in rows["tangent/fig2"]}
    assert penalties["measure"]["status"] == "measured"  # Fig 2's paper job is its rehearsal: nothing cut
    gpt = [r for r in rows["alignment/fig15"] if r["experiment"] == "gpt_shakespeare" and r["stage"] == "train"]
    assert gpt and gpt[0]["units_paper"] == "5000"
    md = (rehearsed / "results/paper-rehearsal/projection/alignment/fig15.md").read_text()
    assert "| alignment/fig15 |" in md and "projected hours" in md
