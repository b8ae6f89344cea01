"""Alignment Fig 1 names a diverged run on its face instead of reporting its last finite values as 'after training'."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from featlearn import config as fc
from featlearn.data.synthetic import make_dataset
from featlearn.figures.alignment import fig1
from featlearn.pipeline.experiments import training
from featlearn.train import train

CONFIG_PATH = Path(__file__).resolve().parents[2] / "config.yaml"


def test_a_diverged_seed_is_named_in_the_title(tmp_path, monkeypatch):
    cfg = yaml.safe_load(CONFIG_PATH.read_text()) | {"scale": "smoke"}
    exp = fc.experiment(cfg, "chain_fig1")
    exp["train"]["lr"] = 1.0e4
    parts = {}
    for run, unit in training.units("chain_fig1", copy.deepcopy(exp)).items():
        data = make_dataset(unit["data"])
        record = train(unit, data, tmp_path / f"{run}.pt", tmp_path / f"{run}.ckpt")
        assert record["status"] == "diverged"
        parts[run] = (unit, training.measure(unit, [data], record, "cpu"))
    store = training.combine(exp, parts).assign_attrs(experiment_config="{}", scale="smoke")
    titles = []
    monkeypatch.setattr(fig1, "finish", lambda fig, out: titles.append(fig._suptitle.get_text()))
    fig1.render({"chain_fig1": store}, tmp_path / "fig1.pdf")
    assert "diverged at step" in titles[0]
