"""Every verdict carries its margin to its threshold, and one within what seeds or rounding move it by is fragile."""

import numpy as np
import pytest
import xarray as xr

from featlearn.claims import core, reading, records
from featlearn.claims.core import FAILED, FRAGILE, PASSED, Claim
from featlearn.claims.margins import ROUNDING
from featlearn.claims.report import fragile_text, html_page, markdown_table
from featlearn.claims.terms import Outcome, above, at_least, at_most, below


def _toy(*x: float) -> xr.Dataset:
    return xr.Dataset({"x": ("seed", np.array(x, dtype=float))}, attrs={"scale": "quick"})


def _mean_above(threshold: float) -> Claim:
    def check(ds: xr.Dataset) -> Outcome:
        v = reading.values(ds.x, "x")
        return Outcome(reading.mean_sd(v), (at_least("mean x", v.mean(), threshold),), float(v.mean()))

    return Claim("figX.mean", "X", "x is large.", "", f"mean x ≥ {threshold}", ("toy",), check)


def _evaluate(claim: Claim, *x: float) -> core.Check:
    return core.evaluate(claim, "toy", {"toy": _toy(*x)})


def test_a_term_s_margin_is_signed_toward_passing_and_strictness_decides_the_tie():
    assert at_least("v", 0.9, 0.8).margin == pytest.approx(0.1) and at_most("v", 0.9, 0.8).margin == pytest.approx(-0.1)
    assert at_least("v", 0.8, 0.8).holds and not above("v", 0.8, 0.8).holds
    assert at_most("v", 0.8, 0.8).holds and not below("v", 0.8, 0.8).holds


def test_an_outcome_states_its_criterion_as_terms_and_passes_when_all_hold():
    with pytest.raises(TypeError, match="Terms"):
        Outcome("0.9", ())
    with pytest.raises(TypeError, match="Terms"):
        Outcome(True, "0.9")  # the old (passed, measured) order does not slip through
    assert not Outcome("", (above("a", 1, 0), below("b", 1, 0))).passed


def test_three_seeds_far_from_the_threshold_pass_with_the_seeds_spread():
    check = _evaluate(_mean_above(0.5), 0.8, 0.9, 1.0)
    m = check.margin
    assert check.verdict == PASSED and m.seeds == 3 and m.source == "seeds"
    assert m.margin == pytest.approx(0.4) and m.relative == pytest.approx(0.8)
    assert m.moved_by == pytest.approx(0.1)  # the sample sd of the per-seed values 0.8, 0.9, 1.0


def test_a_pass_within_the_seeds_spread_is_fragile_not_passed():
    check = _evaluate(_mean_above(0.5), 0.4, 0.55, 0.7)
    assert check.status == PASSED and check.verdict == FRAGILE
    assert check.margin.margin == pytest.approx(0.05) and check.margin.moved_by == pytest.approx(0.15)
    assert fragile_text(check) == "passed by 0.05; seeds move it by 0.15"


def test_a_failure_within_the_seeds_spread_is_fragile_too():
    check = _evaluate(_mean_above(0.5), 0.3, 0.45, 0.6)
    assert check.status == FAILED and check.verdict == FRAGILE and check.margin.margin == pytest.approx(-0.05)
    assert check.diagnosis is not None  # a fragile failure still says what is known of it


def test_one_seed_is_moved_only_by_the_rounding_floor():
    near = _evaluate(_mean_above(0.5), 0.5 * (1 + ROUNDING / 2))
    far = _evaluate(_mean_above(0.5), 0.500_01)
    assert near.margin.seeds == 1 and near.margin.source == "rounding" and near.verdict == FRAGILE
    assert near.margin.moved_by == pytest.approx(ROUNDING * 0.5, rel=1e-3)
    assert far.verdict == PASSED


def test_seeds_not_run_do_not_count_toward_the_spread():
    ds = xr.Dataset({"x": (("seed", "step"), np.array([[0.8, 0.8], [1.0, 1.0], [np.nan, np.nan]]))},
                    attrs={"scale": "quick"})

    def check(d: xr.Dataset) -> Outcome:
        v = reading.values(reading.seed_mean(reading.final(d.x)), "x")
        return Outcome("", (at_least("x", float(v.mean()), 0.5),))

    m = core.evaluate(Claim("figX.pad", "X", "", "", "", ("toy",), check), "toy", {"toy": ds}).margin
    assert m.seeds == 2 and m.moved_by == pytest.approx(np.std([0.8, 1.0], ddof=1))


def _two_terms(ds: xr.Dataset) -> Outcome:
    v = reading.values(ds.x, "x")
    return Outcome("", (at_least("mean x", v.mean(), 0.5), at_most("spread", v.max() - v.min(), 10)))


def test_a_pass_is_decided_by_the_term_closest_to_flipping_in_units_of_what_moves_it():
    check = core.evaluate(Claim("figX.two", "X", "", "", "", ("toy",), _two_terms), "toy", {"toy": _toy(0.6, 0.7)})
    assert check.margin.what == "mean x" and check.margin.margin == pytest.approx(0.15)


def test_a_failure_is_fragile_only_where_every_failing_term_could_flip():
    def check(ds: xr.Dataset) -> Outcome:
        v = reading.values(ds.x, "x")
        return Outcome("", (at_least("mean x", v.mean(), 0.5), at_least("least x", v.min(), 5)))

    one_far = core.evaluate(Claim("figX.f", "X", "", "", "", ("toy",), check), "toy", {"toy": _toy(0.4, 0.5)})
    assert one_far.status == FAILED and one_far.verdict == FAILED and one_far.margin.what == "least x"


def test_a_seed_the_check_cannot_read_alone_falls_back_to_rounding():
    def needs_two(ds: xr.Dataset) -> Outcome:
        v = reading.values(ds.x, "x")
        if v.size < 2:
            raise reading.NotMeasured("needs two seeds")
        return Outcome("", (at_least("sd", v.std(ddof=1), 0.01),))

    m = core.evaluate(Claim("figX.sd", "X", "", "", "", ("toy",), needs_two), "toy", {"toy": _toy(0.1, 0.9)}).margin
    assert m.seeds == 1 and m.source == "rounding"


def test_no_margin_where_a_term_is_not_finite():
    def ratio(ds: xr.Dataset) -> Outcome:  # a last loss of 0: the first/last ratio is infinite
        first, last = reading.values(ds.x, "x")[:2] if ds.sizes["seed"] > 1 else (1.0, 1.0)
        return Outcome("", (at_least("ratio", first / last if last else float("inf"), 10),))

    check = core.evaluate(Claim("figX.r", "X", "", "", "", ("toy",), ratio), "toy", {"toy": _toy(1.0, 0.0)})
    assert check.margin is None and check.verdict == check.status
    records.to_json("toy", "quick", [check], {"toy": _toy(1.0, 0.0)})  # strict JSON: no inf margin reaches it


def test_json_keeps_margins_and_counts_fragile_verdicts_apart():
    stores = {"toy": _toy(0.4, 0.55, 0.7)}
    checks = core.evaluate_all([_mean_above(0.5), _mean_above(0.1)], "toy", stores)
    text = records.to_json("toy", "quick", checks, stores)
    header, back = records.from_json(text)
    assert back == checks and back[0].margin == checks[0].margin
    assert header["counts"] == {PASSED: 1, FRAGILE: 1, FAILED: 0, "not trained": 0, "not informative": 0,
                                "not measured": 0}
    assert '"verdict": "fragile"' in text and '"fragile": true' in text


def test_the_table_and_the_page_show_the_margin_and_the_fragile_state():
    stores = {"toy": _toy(0.4, 0.55, 0.7)}
    checks = core.evaluate_all([_mean_above(0.5), _mean_above(0.1)], "toy", stores)
    header = records.from_json(records.to_json("toy", "quick", checks, stores))[0]
    table = markdown_table({"toy": (header, checks)})
    rows = [line for line in table.splitlines() if line.startswith("| toy")]
    assert "⚠️ fragile (passed by 0.05; seeds move it by 0.15)" in rows[0]
    assert "+0.05 (+10%) on mean x; seeds move it by 0.15 (3 seeds)" in rows[0]
    assert "✅ direction reproduced" in rows[1] and "+0.45 (+450%)" in rows[1]
    assert table.startswith("Scale quick: toy 0 paper's numbers reproduced, 1 directions reproduced, 0 on stand-ins, "
                            "0 not informative, 0 not trained, 1 fragile, 0 failed, 0 not measured")
    page = html_page({"toy": (header, checks)})
    assert page.count('<tr class="fragile">') == 1 and "seeds move it by 0.15" in page


def test_a_term_exactly_on_a_zero_threshold_decides_and_is_fragile():
    def check(ds: xr.Dataset) -> Outcome:
        return Outcome("", (at_least("far", 5.0, 1.0), at_least("tie", 0.0, 0.0)))

    check_ = core.evaluate(Claim("figX.z", "X", "", "", "", ("toy",), check), "toy", {"toy": _toy(1.0)})
    assert check_.status == PASSED and check_.margin.what == "tie" and check_.verdict == FRAGILE
