"""Claims never break the build: missing stores, variables and NaNs become statuses with reasons."""

import importlib
import json

import numpy as np
import pytest
import xarray as xr

from featlearn.claims import core, figure_modules, reading, records
from featlearn.claims.core import FAILED, FRAGILE, NOT_INFORMATIVE, NOT_MEASURED, NOT_TRAINED, PASSED, Claim
from featlearn.claims.diagnoses import (
    ANY_SCALE,
    AT_PAPER,
    BELOW_PAPER,
    CONSTRUCTION,
    OPEN,
    QUICK_SCALE,
    REHEARSAL,
    STAND_IN,
    Diagnosis,
    Evidence,
    Finding,
    measured_on,
    numbers,
    seeds,
)
from featlearn.claims.registry import claims_of
from featlearn.claims.report import finding_text
from featlearn.claims.terms import Fact, Outcome, above, fact
from featlearn.figures import PAPERS
from featlearn.pipeline import deps


def _above(ds: xr.Dataset) -> Outcome:
    v = reading.values(ds.x, "x")
    return Outcome(reading.mean_sd(v), (above("mean x", v.mean(), 0.5),), float(v.mean()),
                   {"mean": fact(v.mean(), "mean x over seeds", "x"), "low": fact(v.min(), "lowest seed's x", "x")})


CLAIM = Claim("figX.above", "X", "x is above one half.", "0.9", "mean x > 0.5", ("toy",), _above)


def _toy(*x: float, scale: str = "quick", source: str = "synthetic (generated)") -> xr.Dataset:
    return xr.Dataset({"x": ("seed", np.array(x, dtype=float))}, attrs={"scale": scale, "data_source": source})


def test_a_store_that_holds_the_claim_passes():
    check = core.evaluate(CLAIM, "toy", {"toy": _toy(0.8, 1.0)})
    assert check.status == PASSED and check.value == pytest.approx(0.9)
    assert check.measured == "0.9 ± 0.141" and "scale quick" in check.note  # the sample sd of 0.8 and 1.0


def test_the_plus_minus_is_the_sample_sd():
    """Two seeds at 0 and 2: sample sd (ddof = 1) √2, not the population sd 1; one seed prints no ±."""
    assert reading.mean_sd(np.array([0.0, 2.0])) == "1 ± 1.41"
    assert reading.mean_sd(np.array([0.7])) == "0.7"


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
    text = records.to_json("toy", "quick", checks, stores)
    header, back = records.from_json(text)
    assert back == checks
    assert header["counts"] == {PASSED: 0, FRAGILE: 0, FAILED: 1, NOT_TRAINED: 0, NOT_INFORMATIVE: 0, NOT_MEASURED: 0}
    assert header["stores"]["toy"]["scale"] == "quick"
    json.loads(text)  # strict JSON: no NaN


SHORT = Diagnosis(QUICK_SCALE, "x needs more steps than the quick budget gives", "twice the steps", when=BELOW_PAPER)


def _diagnosed(*diagnoses: Diagnosis) -> Claim:
    return Claim("figX.above", "X", "x is above one half.", "0.9", "mean x > 0.5", ("toy",), _above, diagnoses)


def test_a_failure_carries_its_diagnosis_where_the_cause_holds():
    check = core.evaluate(_diagnosed(SHORT), "toy", {"toy": _toy(0.1, scale="quick")})
    assert check.status == FAILED
    assert check.diagnosis == Finding(QUICK_SCALE, SHORT.why, SHORT.tried, "below the paper scale")
    assert finding_text(check.diagnosis) == ("quick scale [below the paper scale]: x needs more steps than the "
                                             "quick budget gives (tried: twice the steps)")


def test_a_quick_scale_diagnosis_does_not_excuse_a_paper_scale_failure():
    check = core.evaluate(_diagnosed(SHORT), "toy", {"toy": _toy(0.1, scale="paper")})
    assert check.diagnosis.cause == OPEN and check.diagnosis.holds == ""
    assert check.diagnosis.why == ("not yet diagnosed at scale paper; 1 seed; the diagnoses recorded elsewhere do not "
                                   "hold here: quick scale (below the paper scale)")


def test_a_quick_scale_cause_holds_only_below_the_paper_scale_whatever_its_condition_says():
    loose = Diagnosis(QUICK_SCALE, "too few steps", when=ANY_SCALE)
    assert core.evaluate(_diagnosed(loose), "toy", {"toy": _toy(0.1, scale="quick")}).diagnosis.cause == QUICK_SCALE
    assert core.evaluate(_diagnosed(loose), "toy", {"toy": _toy(0.1, scale="paper")}).diagnosis.cause == OPEN


def test_a_one_seed_diagnosis_does_not_hold_where_three_seeds_ran():
    one = Diagnosis(OPEN, "seed noise is not ruled out", when=seeds(1))
    three = Diagnosis(OPEN, "short of the threshold on all three seeds", when=AT_PAPER & seeds(3))
    claim = _diagnosed(one, three)
    assert core.evaluate(claim, "toy", {"toy": _toy(0.1, scale="quick")}).diagnosis.why == one.why
    paper = core.evaluate(claim, "toy", {"toy": _toy(0.1, 0.2, 0.3, scale="paper")}).diagnosis
    assert paper.why == three.why and paper.holds == "at the paper scale, 3 seeds"
    quick3 = core.evaluate(claim, "toy", {"toy": _toy(0.1, 0.2, 0.3, scale="quick")}).diagnosis
    assert quick3.cause == OPEN and "not yet diagnosed at scale quick; 3 seeds" in quick3.why


def test_a_seed_not_run_is_not_counted():
    """Seeds padded with NaN (not run at this scale) do not count: one seed ran, so a one-seed diagnosis holds."""
    one = Diagnosis(OPEN, "one seed", when=seeds(1))
    ds = xr.Dataset({"x": (("seed", "step"), np.array([[0.1, 0.2], [np.nan, np.nan]]))},
                    coords={"seed": [0, 1]}, attrs={"scale": "quick"})
    assert measured_on([ds]).seeds == 1
    assert core.evaluate(_diagnosed(one), "toy", {"toy": ds}).diagnosis.why == "one seed"


def test_the_text_takes_its_numbers_from_the_measurement_it_is_applied_to():
    short = Diagnosis(OPEN, "x reaches {mean:.2f} (lowest seed {low:.2f})", "tried {low:.1f}", when=ANY_SCALE)
    first = core.evaluate(_diagnosed(short), "toy", {"toy": _toy(0.1, 0.3)}).diagnosis
    second = core.evaluate(_diagnosed(short), "toy", {"toy": _toy(0.4, 0.2)}).diagnosis
    assert finding_text(first) == "open [at every scale]: x reaches 0.20 (lowest seed 0.10) (tried: tried 0.1)"
    assert finding_text(second).startswith("open [at every scale]: x reaches 0.30 (lowest seed 0.20)")


def test_a_finding_keeps_its_numbers_as_evidence_with_their_source_not_in_its_text():
    """The finding holds the text as written and each number it quotes, with what it is and the store variable it
    came from; the report fills one into the other."""
    short = Diagnosis(OPEN, "x reaches {mean:.2f} (lowest seed {low:.2f})", when=ANY_SCALE)
    finding = core.evaluate(_diagnosed(short), "toy", {"toy": _toy(0.1, 0.3)}).diagnosis
    assert finding.why == short.why
    assert finding.evidence == (Evidence("mean", pytest.approx(0.2), "mean x over seeds", "toy: x"),
                                Evidence("low", pytest.approx(0.1), "lowest seed's x", "toy: x"))


def test_evidence_of_several_numbers_reads_one_per_seed_and_a_nan_as_nan():
    """A per-seed fact is one number per seed, each shown with the field's format; a value that was not finite is
    kept as None (a claims file is strict JSON) and shown as nan."""

    def per_seed(ds: xr.Dataset) -> Outcome:
        v = reading.values(ds.x, "x")
        return Outcome("", (above("mean x", v.mean(), 0.5),), float(v.mean()),
                       {"seeds": fact(np.append(v, np.nan), "x per seed, and one not run", "x")})

    quoting = Diagnosis(OPEN, "x is {seeds:.2f} per seed ({seeds})", when=ANY_SCALE)
    claim = Claim("figX.seeds", "X", "", "", "", ("toy",), per_seed, (quoting,))
    stores = {"toy": _toy(0.1, 0.3)}
    checks = core.evaluate_all([claim], "toy", stores)
    assert checks[0].diagnosis.evidence[0].value == (pytest.approx(0.1), pytest.approx(0.3), None)
    back = records.from_json(records.to_json("toy", "quick", checks, stores))[1]
    assert back == checks
    assert finding_text(back[0].diagnosis) == "open [at every scale]: x is 0.10 / 0.30 / nan per seed (0.1 / 0.3 / nan)"


def test_a_fact_keeps_integers_and_an_outcome_takes_only_facts():
    assert fact(np.int64(9), "runs", "x") == Fact(9, "runs", "x") and isinstance(fact(np.int64(9), "", "").value, int)
    assert fact(np.float32(0.5), "", "").value == 0.5 and fact(xr.DataArray([1, 2]), "", "").value == (1.0, 2.0)
    with pytest.raises(TypeError, match="facts are Facts"):
        Outcome("", (above("x", 1, 0),), 1.0, {"x": 1.0})


def test_a_condition_on_the_numbers_holds_only_where_they_fit():
    near = Diagnosis(CONSTRUCTION, "x is {mean:.2f}, near the bound",
                     when=numbers("mean x ≥ 0.3", lambda f: f["mean"] >= 0.3))
    assert core.evaluate(_diagnosed(near), "toy", {"toy": _toy(0.4)}).diagnosis.cause == CONSTRUCTION
    far = core.evaluate(_diagnosed(near), "toy", {"toy": _toy(0.1)}).diagnosis
    assert far.cause == OPEN and "paper's construction (mean x ≥ 0.3)" in far.why


def test_a_diagnosis_whose_numbers_were_not_measured_does_not_hold():
    """A diverged run raises before the check returns its facts: a text that quotes them cannot be stated."""
    quoting = Diagnosis(CONSTRUCTION, "x reaches {mean:.2f}", when=ANY_SCALE)
    check = core.evaluate(_diagnosed(quoting), "toy", {"toy": _toy(0.1, np.nan)})
    assert check.status == FAILED and check.diagnosis.cause == OPEN


def test_a_rehearsal_fails_for_being_a_rehearsal_whatever_the_claim_says():
    anywhere = Diagnosis(CONSTRUCTION, "the paper's data", when=ANY_SCALE)
    check = core.evaluate(_diagnosed(anywhere), "toy", {"toy": _toy(0.1, scale="paper-rehearsal")})
    assert check.diagnosis.cause == REHEARSAL and check.diagnosis.holds == "stores of scale paper-rehearsal"
    assert "few optimizer steps" in check.diagnosis.why
    assert core.evaluate(_diagnosed(anywhere), "toy", {"toy": _toy(0.9, scale="paper-rehearsal")}).diagnosis is None


def test_a_rehearsal_claims_file_is_marked_as_one():
    stores = {"toy": _toy(0.1, scale="paper-rehearsal")}
    checks = core.evaluate_all([CLAIM], "toy", stores)
    header, back = records.from_json(records.to_json("toy", "paper-rehearsal", checks, stores))
    assert header["scale"] == "paper-rehearsal" and header["rehearsal"] is True
    assert back[0].diagnosis.cause == REHEARSAL
    assert records.from_json(records.to_json("toy", "paper", [], {"toy": None}))[0]["rehearsal"] is False


def test_a_stand_in_diagnosis_applies_only_to_stand_in_data():
    claim = _diagnosed(Diagnosis(STAND_IN, "digits are not CIFAR", when=ANY_SCALE))
    real = core.evaluate(claim, "toy", {"toy": _toy(0.1)})
    standin = core.evaluate(claim, "toy", {"toy": _toy(0.1, source="CIFAR-10 stand-in: recoloured digits")})
    assert real.diagnosis.cause == OPEN and standin.diagnosis.cause == STAND_IN
    assert standin.diagnosis.holds == "at every scale, on stand-in data"


def test_an_undiagnosed_failure_says_so_and_a_pass_has_no_diagnosis():
    undiagnosed = core.evaluate(CLAIM, "toy", {"toy": _toy(0.1)})
    assert undiagnosed.diagnosis == Finding(OPEN, "not yet diagnosed at scale quick; 1 seed")
    assert core.evaluate(_diagnosed(SHORT), "toy", {"toy": _toy(0.9)}).diagnosis is None
    assert core.evaluate(_diagnosed(SHORT), "toy", {"toy": None}).diagnosis is None


def test_a_diagnosis_names_a_known_cause():
    with pytest.raises(ValueError, match="cause must be one of"):
        Diagnosis("bad luck", "", when=ANY_SCALE)


def test_a_diagnosis_states_its_condition():
    with pytest.raises(TypeError, match="when"):
        Diagnosis(OPEN, "no condition")


def test_json_round_trip_keeps_the_diagnosis():
    stores = {"toy": _toy(0.1)}
    checks = core.evaluate_all([_diagnosed(SHORT)], "toy", stores)
    assert checks[0].diagnosis.holds == "below the paper scale"
    assert records.from_json(records.to_json("toy", "quick", checks, stores))[1] == checks


@pytest.mark.parametrize("paper", PAPERS)
def test_every_claim_on_empty_or_absent_stores_is_not_measured(paper):
    claims = claims_of(paper)
    names = core.store_names(claims)
    for stores in ({n: None for n in names}, {n: xr.Dataset() for n in names}):
        checks = core.evaluate_all(claims, paper, stores)
        assert {c.status for c in checks} == {NOT_MEASURED}, [c for c in checks if c.status != NOT_MEASURED]


@pytest.mark.parametrize("paper", PAPERS)
def test_each_figure_module_holds_the_claims_of_its_figure(paper):
    """A claim lives in the module of the figure its id names (fig4.slo_nfc_one in <paper>/fig4.py), and the paper
    lists the figures' claims in figure order."""
    figures = [int(claim.id.split(".")[0].removeprefix("fig")) for claim in claims_of(paper)]
    assert figures == sorted(figures)
    for claim in claims_of(paper):
        module = importlib.import_module(f"featlearn.claims.{paper}.{claim.id.split('.')[0]}")
        assert claim in module.CLAIMS, claim.id


@pytest.mark.parametrize("paper", PAPERS)
def test_each_figure_module_says_the_stores_its_claims_read(paper):
    """The build plans a paper's claims from the STORES literals alone: each must name exactly what its claims read,
    in first-use order, and together they are the paper's stores."""
    for module in figure_modules(paper):
        claims = importlib.import_module(module).CLAIMS
        assert list(deps.literal(module, "STORES")) == core.store_names(claims), module
    collected = [e for module in figure_modules(paper) for e in deps.literal(module, "STORES")]
    assert list(dict.fromkeys(collected)) == core.store_names(claims_of(paper))


def test_a_paper_s_figure_modules_are_found_from_their_file_names():
    """Every fig<N>.py of a paper and nothing else (its shared helpers are not figures), in figure order."""
    assert figure_modules("tangent") == [f"featlearn.claims.tangent.fig{n}" for n in (1, 2, 3)]
    assert [m.rpartition(".")[2] for m in figure_modules("collapse")] == [f"fig{n}" for n in (1, *range(3, 13))]


def test_claim_ids_are_unique_per_paper():
    for claims in map(claims_of, PAPERS):
        ids = [c.id for c in claims]
        assert len(ids) == len(set(ids))
