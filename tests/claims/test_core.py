"""Claims never break the build: missing stores, variables and NaNs become statuses with reasons."""

import ast
import json
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from featlearn.claims import REGISTRY, core
from featlearn.claims.core import FAILED, NOT_MEASURED, OPEN, PASSED, QUICK_SCALE, STAND_IN, Claim, Diagnosis, Outcome

SRC = Path(__file__).resolve().parents[2] / "src/featlearn/claims"


def _above(ds: xr.Dataset) -> Outcome:
    v = core.values(ds.x, "x")
    return Outcome(v.mean() > 0.5, core.mean_sd(v), float(v.mean()))


CLAIM = Claim("figX.above", "X", "x is above one half.", "0.9", "mean x > 0.5", ("toy",), _above)


def _toy(*x: float, scale: str = "quick", source: str = "synthetic (generated)") -> xr.Dataset:
    return xr.Dataset({"x": ("seed", np.array(x, dtype=float))}, attrs={"scale": scale, "data_source": source})


def test_a_store_that_holds_the_claim_passes():
    check = core.evaluate(CLAIM, "toy", {"toy": _toy(0.8, 1.0)})
    assert check.status == PASSED and check.value == pytest.approx(0.9)
    assert check.measured == "0.9 ± 0.1" and "scale quick" in check.note


def test_a_store_that_violates_the_claim_fails_with_the_measured_number():
    check = core.evaluate(CLAIM, "toy", {"toy": _toy(0.1, 0.3, scale="smoke")})
    assert check.status == FAILED and check.value == pytest.approx(0.2)
    assert check.measured.startswith("0.2") and "scale smoke" in check.note


def test_a_missing_store_is_not_measured_and_named():
    check = core.evaluate(CLAIM, "toy", {"toy": None})
    assert check.status == NOT_MEASURED and "toy" in check.note and check.value is None


def test_a_missing_variable_is_not_measured():
    check = core.evaluate(CLAIM, "toy", {"toy": xr.Dataset(attrs={"scale": "quick"})})
    assert check.status == NOT_MEASURED and "x" in check.note


def test_some_nans_fail_as_a_diverged_run():
    check = core.evaluate(CLAIM, "toy", {"toy": _toy(0.9, np.nan)})
    assert check.status == FAILED and "1 of 2 values are NaN" in check.note and check.measured == "NaN"


def test_all_nans_are_not_measured():
    check = core.evaluate(CLAIM, "toy", {"toy": _toy(np.nan, np.nan)})
    assert check.status == NOT_MEASURED and "no finite value" in check.note


def test_stand_in_data_is_named_in_the_note():
    check = core.evaluate(CLAIM, "toy", {"toy": _toy(0.9, source="CIFAR-10 stand-in: recoloured digits")})
    assert "stand-in data" in check.note


def test_json_round_trip_keeps_checks_counts_and_provenance():
    stores = {"toy": _toy(0.1)}
    checks = core.evaluate_all([CLAIM], "toy", stores)
    text = core.to_json("toy", "quick", checks, stores)
    header, back = core.from_json(text)
    assert back == checks
    assert header["counts"] == {PASSED: 0, FAILED: 1, NOT_MEASURED: 0}
    assert header["stores"]["toy"]["scale"] == "quick"
    json.loads(text)  # strict JSON: no NaN


SHORT = Diagnosis(QUICK_SCALE, "x needs more steps than the quick budget gives", "twice the steps")
DIAGNOSED = Claim("figX.above", "X", "x is above one half.", "0.9", "mean x > 0.5", ("toy",), _above, SHORT)


def test_a_failure_carries_its_diagnosis_where_the_cause_holds():
    check = core.evaluate(DIAGNOSED, "toy", {"toy": _toy(0.1, scale="quick")})
    assert check.status == FAILED and check.diagnosis == SHORT
    assert check.diagnosis.text() == ("quick scale: x needs more steps than the quick budget gives "
                                      "(tried: twice the steps)")


def test_a_quick_scale_diagnosis_does_not_excuse_a_paper_scale_failure():
    check = core.evaluate(DIAGNOSED, "toy", {"toy": _toy(0.1, scale="paper")})
    assert check.diagnosis.cause == OPEN
    assert "not yet diagnosed at scale paper" in check.diagnosis.why and "quick budget" in check.diagnosis.why


def test_a_stand_in_diagnosis_applies_only_to_stand_in_data():
    claim = Claim("figX.above", "X", "x", "", "", ("toy",), _above, Diagnosis(STAND_IN, "digits are not CIFAR"))
    real = core.evaluate(claim, "toy", {"toy": _toy(0.1)})
    standin = core.evaluate(claim, "toy", {"toy": _toy(0.1, source="CIFAR-10 stand-in: recoloured digits")})
    assert real.diagnosis.cause == OPEN and standin.diagnosis.cause == STAND_IN


def test_an_undiagnosed_failure_says_so_and_a_pass_has_no_diagnosis():
    undiagnosed = core.evaluate(CLAIM, "toy", {"toy": _toy(0.1)})
    assert undiagnosed.diagnosis == Diagnosis(OPEN, "not yet diagnosed at scale quick")
    assert core.evaluate(DIAGNOSED, "toy", {"toy": _toy(0.9)}).diagnosis is None
    assert core.evaluate(DIAGNOSED, "toy", {"toy": None}).diagnosis is None


def test_a_diagnosis_names_a_known_cause():
    with pytest.raises(ValueError, match="cause must be one of"):
        Diagnosis("bad luck", "")


def test_json_round_trip_keeps_the_diagnosis():
    stores = {"toy": _toy(0.1)}
    checks = core.evaluate_all([DIAGNOSED], "toy", stores)
    assert core.from_json(core.to_json("toy", "quick", checks, stores))[1] == checks


@pytest.mark.parametrize("paper", sorted(REGISTRY))
def test_every_claim_on_empty_or_absent_stores_is_not_measured(paper):
    claims = REGISTRY[paper]
    names = core.store_names(claims)
    for stores in ({n: None for n in names}, {n: xr.Dataset() for n in names}):
        checks = core.evaluate_all(claims, paper, stores)
        assert {c.status for c in checks} == {NOT_MEASURED}, [c for c in checks if c.status != NOT_MEASURED]


@pytest.mark.parametrize("paper", sorted(REGISTRY))
def test_the_stores_literal_that_the_rules_read_matches_the_claims(paper):
    tree = ast.parse((SRC / f"{paper}.py").read_text())
    literal = next(ast.literal_eval(n.value) for n in tree.body
                   if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", None) == "STORES")
    assert tuple(literal) == tuple(core.store_names(REGISTRY[paper]))


def test_claim_ids_are_unique_per_paper():
    for claims in REGISTRY.values():
        ids = [c.id for c in claims]
        assert len(ids) == len(set(ids))
