"""pipeline.rehearsal: one rule cuts repetitions and keeps shapes; pipeline.usage: what a job records."""

import json
import time

import pytest
import yaml

from featlearn import config as fc
from featlearn.pipeline import experiments as fx
from featlearn.pipeline import rehearsal, usage
from featlearn.train import schedule


@pytest.fixture(scope="module")
def paper():
    cfg = yaml.safe_load(open("config.yaml")) | {"scale": "paper"}
    return {name: fc.experiment(cfg, name) for name in cfg["experiments"]}


def test_cut_keeps_shapes_and_cuts_repetitions(paper):
    exp = paper["collapse_resnet"]
    cut = rehearsal.cut(exp, fx.KINDS["network"]["repeats"])
    assert cut["sweep"]["seed"] == [0] and cut["sweep"]["dataset"] == exp["sweep"]["dataset"]
    assert {k: cut[k] for k in ("model", "data", "train")} == {k: exp[k] for k in ("model", "data", "train")}
    rfm = rehearsal.cut(paper["deep_rfm_cos"], fx.KINDS["deep_rfm"]["repeats"])
    assert rfm["model"]["depth"] == 2 and rfm["gram"]["layers"] == [1] and rfm["model"]["width"] == 4096
    assert rfm["data"]["n"] == 50000  # no cap: the paper's N


def test_the_size_cap_lowers_only_counts_of_points_and_records_them(paper):
    cut = rehearsal.cut(paper["vgg_cifar"], {}, max_n=500)
    assert cut["data"]["n"] == 500 and cut["measure"]["n_measure"] == 500 and cut["data"]["n_test"] == 500
    assert cut["train"]["batch_size"] == 256  # a shape, not a count of points
    assert cut["rehearsal"]["capped"] == {"data.n": 50000, "data.n_test": 10000, "measure.n_measure": 1000}


def test_a_rehearsed_run_takes_the_first_steps_measured_at_its_ends(paper):
    (unit,) = rehearsal.cut_units({"u": fx.kind_of("network").units("m", paper["real_mlp"])
                                   ["dataset-cifar10_seed-0"]}, "/nonexistent").values()
    assert unit["data"]["source"] == "standin"  # no real CIFAR-10 here: its stand-in at the real size
    full = schedule({**unit, "train": {k: v for k, v in unit["train"].items() if k != "budget"}}, 50000)
    plan = schedule(unit, 50000)
    assert full["steps"] == 151 * 391 and plan["steps"] == rehearsal.STEPS and plan["measure"] == [0, rehearsal.STEPS]
    (longer,) = rehearsal.cut_units({"u": unit}, "/nonexistent", steps=200).values()  # rehearse_steps: a longer window
    assert schedule(longer, 50000)["measure"] == [0, 200]
    assert rehearsal.cut(paper["real_mlp"], {}, steps=200)[rehearsal.TAG]["steps"] == 200


def test_without_seed_pairs_a_paper_run_with_its_first_seed():
    assert rehearsal.without_seed("dataset-mnist_seed-2") == rehearsal.without_seed("dataset-mnist_seed-0")
    assert rehearsal.without_seed("seed-4_task-linear") == "task-linear"


def test_meter_times_units_after_the_first_tick(tmp_path):
    meter = usage.Meter()
    meter.start("step")
    time.sleep(0.05)  # warm-up
    meter.tick()
    for _ in range(3):
        time.sleep(0.01)
        meter.tick()
    record = meter.record()
    assert record["unit"] == "step" and record["units_run"] == 4
    assert 0.005 < record["seconds_per_unit"] < 0.04  # the warm-up is left out
    assert record["peak_rss_mb"] >= usage.rss_mb() > 0


def test_usage_write_records_outputs_and_device(tmp_path):
    out = tmp_path / "store.nc"
    out.write_bytes(b"x" * 1000)
    usage.write(tmp_path / "u.json", "cpu", [out], n=7)
    record = json.loads((tmp_path / "u.json").read_text())
    assert record["output_bytes"] == 1000 and record["device"] == "cpu" and record["n"] == 7
