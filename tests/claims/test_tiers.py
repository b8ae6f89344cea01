"""What a verdict stands on: the paper's number, stand-in data, runs that did not train, uninformative checks, and
the rounding twin's measure of what moves a one-run verdict."""

import numpy as np
import pytest
import xarray as xr

from featlearn.claims import core, reading, records
from featlearn.claims.alignment.fig3 import prediction_tracks
from featlearn.claims.core import (
    DIRECTION,
    FAILED,
    FRAGILE,
    NOT_INFORMATIVE,
    NOT_TRAINED,
    NUMBER,
    PASSED,
    STANDIN,
    Claim,
)
from featlearn.claims.margins import ROUNDING, TWIN_FACTOR
from featlearn.claims.report import markdown_table
from featlearn.claims.terms import Outcome, at_least
from featlearn.claims.tiers import NotInformative, PaperNumber

STANDIN_SOURCE = "cifar10: offline stand-in (coloured MNIST digits), not CIFAR-10"


def _store(x: list[float], source: str = "real MNIST", loss: tuple[float, float] | None = None) -> xr.Dataset:
    ds = xr.Dataset({"x": ("seed", np.array(x, dtype=float))}, attrs={"scale": "quick", "data_source": source})
    if loss is not None:
        ds["train_loss"] = (("seed", "step"), np.tile(np.array(loss), (len(x), 1)))
    return ds


def _claim(threshold: float = 0.5, number: PaperNumber | None = None, needs_training: bool = True,
           informative: bool = True) -> Claim:
    def check(ds: xr.Dataset) -> Outcome:
        if not informative:
            raise NotInformative("x does not vary")
        v = reading.values(ds.x, "x")
        return Outcome(reading.mean_sd(v), (at_least("mean x", v.mean(), threshold),), float(v.mean()),
                       compared=float(v.mean()))

    return Claim("figX.x", "X", "x is large.", "", f"mean x ≥ {threshold}", ("toy",), check,
                 paper_number=number, needs_training=needs_training)


def _run(claim: Claim, store: xr.Dataset, twin: xr.Dataset | None = None) -> core.Check:
    return core.evaluate(claim, "toy", {"toy": store}, {"toy": twin} if twin is not None else None)


def test_a_pass_that_meets_the_paper_s_number_within_its_spread_is_a_reproduction():
    within = _run(_claim(number=PaperNumber(0.74, 0.13)), _store([0.62, 0.66, 0.7]))
    assert within.tier == NUMBER and within.paper_match.within
    outside = _run(_claim(number=PaperNumber(0.74, 0.13)), _store([0.52, 0.56, 0.6]))
    assert outside.verdict == PASSED and outside.tier == DIRECTION and not outside.paper_match.within
    assert "outside ± 0.13 (the paper's spread)" in outside.paper_match.text


def test_without_a_spread_the_paper_s_number_is_held_to_ten_percent():
    check = _run(_claim(number=PaperNumber(0.53)), _store([0.6, 0.63, 0.66]))
    assert check.paper_match.tolerance == pytest.approx(0.053) and not check.paper_match.within
    assert check.tier == DIRECTION


def test_a_pass_on_stand_in_data_is_counted_apart_and_names_the_stand_in():
    check = _run(_claim(number=PaperNumber(0.6)), _store([0.6, 0.6], source=STANDIN_SOURCE))
    assert check.verdict == PASSED and check.tier == STANDIN and check.standin == (STANDIN_SOURCE,)
    header = records.from_json(records.to_json("toy", "quick", [check], {"toy": None}))[0]
    assert header["tiers"][STANDIN] == 1 and header["tiers"][NUMBER] == 0
    row = markdown_table({"toy": (header, [check])}).splitlines()[-1]
    assert "🔶 passed on stand-ins (cifar10: offline stand-in" in row


def test_a_claim_on_a_real_data_run_that_did_not_train_is_not_checked():
    check = _run(_claim(), _store([0.9], loss=(2.0, 1.78)))
    assert check.status == NOT_TRAINED and check.tier == NOT_TRAINED
    assert "not trained at this scale" in check.note and "0.89 of its initial 2" in check.note
    assert _run(_claim(needs_training=False), _store([0.9], loss=(2.0, 1.78))).status == PASSED
    assert _run(_claim(), _store([0.9], loss=(2.0, 0.1))).status == PASSED
    assert _run(_claim(), _store([0.9], source="synthetic (generated)", loss=(2.0, 1.9))).status == PASSED


def test_a_check_that_cannot_tell_its_outcomes_apart_is_not_informative():
    check = _run(_claim(informative=False), _store([0.9]))
    assert check.status == NOT_INFORMATIVE and "x does not vary" in check.note


def test_fig3_tracking_of_a_pinned_observation_is_not_informative_and_of_a_varying_one_is_checked():
    gamma = np.linspace(0.1, 1, 5)

    def reversing(obs: np.ndarray) -> xr.Dataset:
        dims = ("gamma", "data_seed")
        return xr.Dataset({"rho_observed": (dims, obs), "rho_predicted": (dims, obs + 0.01)},
                          coords={"gamma": gamma})

    with pytest.raises(NotInformative, match="spans only 0.99994"):
        prediction_tracks(reversing(np.full((5, 2), 0.99994) + np.linspace(0, 6e-5, 5)[:, None]))
    assert prediction_tracks(reversing(np.tile(gamma[:, None], (1, 2)))).passed


def test_a_one_run_verdict_is_moved_by_its_rounding_twin():
    claim = _claim(0.5)
    near = _run(claim, _store([0.52]), twin=_store([0.51]))
    assert near.margin.source == "twin" and near.margin.moved_by == pytest.approx(TWIN_FACTOR * 0.01)
    assert near.verdict == FRAGILE
    far = _run(claim, _store([0.9]), twin=_store([0.89]))
    assert far.verdict == PASSED and far.margin.moved_by == pytest.approx(TWIN_FACTOR * 0.01)
    alone = _run(claim, _store([0.52]))
    assert alone.margin.source == "rounding" and alone.margin.moved_by == pytest.approx(ROUNDING * 0.52)


def test_seeds_spread_decides_where_several_seeds_ran_even_with_a_twin():
    check = _run(_claim(0.5), _store([0.8, 0.9, 1.0]), twin=_store([0.5]))
    assert check.margin.source == "seeds" and check.margin.moved_by == pytest.approx(0.1)


def test_a_twin_that_flips_the_verdict_makes_it_fragile():
    check = _run(_claim(0.5), _store([0.49]), twin=_store([0.51]))
    assert check.status == FAILED and check.verdict == FRAGILE


def test_a_minibatch_loss_is_judged_by_the_mean_of_its_last_steps():
    rng = np.random.default_rng(0)

    def gpt(end: float) -> xr.Dataset:
        noisy = np.linspace(4.4, end, 400) + rng.normal(0, 0.3, 400)
        noisy[-1] = 4.4  # one bad last minibatch does not decide
        return xr.Dataset({"x": ("seed", [0.9]), "loss": (("seed", "iteration"), noisy[None])},
                          attrs={"scale": "quick", "data_source": "shakespeare_char: real"})

    assert _run(_claim(), gpt(2.0)).status == PASSED
    assert _run(_claim(), gpt(3.0)).status == NOT_TRAINED
