"""Rounding twins (featlearn.pipeline.twins): each experiment that amplifies rounding is planned again at its first
seed, starting one ulp away, under its own name; the training loop and Deep RFM apply the nudge."""

from pathlib import Path

import pytest
import torch
import yaml

from featlearn.pipeline import deps, planning, twins
from featlearn.pipeline import experiments as fx
from featlearn.train import nudge

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def no_stamps(monkeypatch):
    monkeypatch.setattr(deps, "write_stamp", lambda *args: None)


def plan(scale: str = "quick", **config) -> planning.Plan:
    return planning.Plan(yaml.safe_load((ROOT / "config.yaml").read_text()) | {"scale": scale} | config)


def test_every_experiment_of_a_twinned_kind_has_a_twin_at_its_first_seed_nudged():
    p = plan()
    base = {n for n in p.experiments if not twins.is_twin(n)}
    twinned = {n for n in base if fx.KINDS[p.experiments[n]["kind"]].get("twin")}
    assert {n for n in p.experiments if twins.is_twin(n)} == {twins.twin_name(n) for n in twinned}
    assert {"reversing", "first_order"} <= base - twinned  # linear algebra without amplification: no twin
    chain = p.units["chain_fig1"]
    twin = p.units["chain_fig1_twin"]
    assert len(chain) == 5 and list(twin) == ["seed-0"]  # the other seeds are measured by their spread
    assert twin["seed-0"] == chain["seed-0"] | {"experiment": "chain_fig1_twin", "nudge": twins.NUDGE_ULPS}
    assert p.run_path("chain_fig1_twin", "seed-0") != p.run_path("chain_fig1", "seed-0")
    assert all(u.get("nudge") for units in (p.units["deep_rfm_relu_twin"],) for u in units.values())


def test_the_claims_and_the_manifest_read_the_twins_and_twins_false_plans_none():
    p = plan()
    assert "vgg_cifar_twin" in p.claim_stores["alignment"]
    assert any("/vgg_cifar_twin/" in f for f in p.built_files())
    off = plan(twins=False)
    assert not any(twins.is_twin(n) for n in off.experiments)
    assert off.units["chain_fig1"] == p.units["chain_fig1"]  # the experiments themselves are the same files


def test_the_config_names_the_scales_with_twins_and_true_or_false_overrides_it():
    """Smoke tests plumbing: no twins there unless asked; quick and paper run them."""
    has_twins = {scale: any(twins.is_twin(n) for n in plan(scale).experiments) for scale in ("smoke", "quick", "paper")}
    assert has_twins == {"smoke": False, "quick": True, "paper": True}
    assert any(twins.is_twin(n) for n in plan("smoke", twins=True).experiments)
    assert not any(twins.is_twin(n) for n in plan("quick", twins=["smoke"]).experiments)


def test_a_config_experiment_named_like_a_twin_is_refused():
    with pytest.raises(ValueError, match="end in '_twin'"):
        twins.with_twins({"a": {}, "a_twin": {}}, {"a"})


def test_nudge_moves_every_parameter_one_ulp_up_and_nothing_else():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    nudge(model, 1)
    after = model.state_dict()
    for name, _ in model.named_parameters():
        assert torch.equal(after[name], torch.nextafter(before[name], torch.full_like(before[name], float("inf"))))
        assert (after[name] != before[name]).all()
    assert torch.equal(after["1.running_mean"], before["1.running_mean"])  # buffers are not initial weights
