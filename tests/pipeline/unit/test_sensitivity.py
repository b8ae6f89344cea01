"""Files classified bitwise, within rounding or beyond it, on synthetic manifests with and without rounding twins."""

import hashlib
import math

import numpy as np
import pytest

from featlearn.pipeline.manifests import check
from featlearn.pipeline.sensitivity import (
    BEYOND,
    BITWISE,
    GPU_RTOL,
    TWIN_FACTOR,
    WITHIN,
    classify,
    place,
    sensitivity,
    summary_gap,
)

RUN, TWIN_RUN, SEED1 = "runs/E/seed-0.aaaaaaaaaa.pt", "runs/E_twin/seed-0.bbbbbbbbbb.pt", "runs/E/seed-1.cccccccccc.pt"
STORE, TWIN_STORE = "metrics/E/seed-0.aaaaaaaaaa.nc", "metrics/E_twin/seed-0.bbbbbbbbbb.nc"
EXPERIMENT = "metrics/E.dddddddddd.nc"


def entry(**variables: np.ndarray) -> dict:
    """A manifest's entry for a file holding ``variables``, as ``featlearn.pipeline.reproduction`` writes one."""
    def one(v: np.ndarray) -> dict:
        summary = {"finite": v.size, "sum": float(v.sum()), "norm": float(np.linalg.norm(v)), "min": float(v.min()),
                   "max": float(v.max())}
        return {"digest": hashlib.sha256(v.tobytes()).hexdigest(), "summary": summary}

    return {name: one(np.asarray(v, dtype=float)) for name, v in variables.items()}


LOSS = np.array([1.0, 0.5, 0.25, 1e-9])  # a minimum near zero


def test_paths_are_read_as_experiment_and_unit():
    unit = "alpha-1_init_scale-0.001_seed-0"
    assert place(f"runs/init_sweep/{unit}.09bd88dd78.pt").unit == unit
    assert place(EXPERIMENT).unit is None and place(EXPERIMENT).experiment == "E"
    assert place("reproduction/manifest.json") is None


def test_a_near_zero_minimum_is_measured_against_the_variable_not_itself():
    gap, which = summary_gap(entry(x=LOSS)["x"]["summary"], entry(x=LOSS * [1, 1, 1, 2])["x"]["summary"])
    assert gap == pytest.approx(1e-9) and which == "min"  # 1e-9 of the largest |value|, not 100 % of the minimum
    verdict = classify(RUN, entry(loss=LOSS), entry(loss=LOSS * [1, 1, 1, 2]), None)
    assert verdict.verdict == WITHIN and not verdict.measured


def test_a_sum_that_cancels_is_measured_against_the_norm():
    a = np.array([1.0, -1.0, 0.5, -0.5])
    gap, _ = summary_gap(entry(x=a)["x"]["summary"], entry(x=a + [1e-7, 0, 0, 0])["x"]["summary"])
    assert gap < 1e-7  # the sum 0 → 1e-7 is no infinite relative gap


def _build(twin_gap: float) -> dict:
    """A build's files: E's seed 0 and its twin (apart by ``twin_gap``), seed 1 without a twin, E's store."""
    return {RUN: entry(loss=LOSS), TWIN_RUN: entry(loss=LOSS * (1 + twin_gap)), SEED1: entry(loss=LOSS * 2),
            STORE: entry(loss=LOSS), TWIN_STORE: entry(loss=LOSS * (1 + twin_gap)),
            EXPERIMENT: entry(loss=np.concatenate([LOSS, LOSS * 2]), seed=[0.0, 1.0])}


def test_a_twin_gap_covers_a_gap_within_its_factor_and_not_beyond():
    measured = sensitivity(_build(1e-3))
    assert measured[RUN]["loss"] == pytest.approx(1e-3, rel=1e-2)
    within = classify(RUN, entry(loss=LOSS * (1 + 2e-3)), entry(loss=LOSS), measured[RUN])
    assert within.verdict == WITHIN and within.measured
    assert within.rows[0].tolerance == pytest.approx(TWIN_FACTOR * 1e-3, rel=1e-2)
    beyond = classify(RUN, entry(loss=LOSS * (1 + 1e-2)), entry(loss=LOSS), measured[RUN])
    assert beyond.verdict == BEYOND and beyond.measured


def test_every_file_of_a_twinned_experiment_has_a_measure():
    measured = sensitivity(_build(1e-3))
    assert measured[SEED1] == measured[RUN]  # another seed: the largest over the twinned units
    assert measured[EXPERIMENT]["loss"] == pytest.approx(1e-3, rel=1e-2)  # the store: its unit stores'
    assert measured[TWIN_RUN] == measured[RUN]  # the twin's own files: the same gap measures both


def test_a_file_without_a_twin_is_held_to_the_default():
    untrained = "metrics/reversing/all.a13af70748.nc"
    assert untrained not in sensitivity({untrained: entry(x=LOSS)})
    assert classify(untrained, entry(x=LOSS * (1 + GPU_RTOL / 2)), entry(x=LOSS), None).verdict == WITHIN
    beyond = classify(untrained, entry(x=LOSS * (1 + 1e-4)), entry(x=LOSS), None)
    assert beyond.verdict == BEYOND and not beyond.measured
    assert classify(RUN, entry(loss=LOSS), entry(loss=LOSS), None).verdict == BITWISE


def test_text_and_a_moved_finite_count_are_never_rounding():
    text = {"spec": {"digest": "a", "summary": None}}
    assert classify(RUN, text, {"spec": {"digest": "b", "summary": None}}, {"spec": 1.0}).verdict == BEYOND
    assert summary_gap(entry(x=LOSS)["x"]["summary"], entry(x=LOSS[:3])["x"]["summary"])[0] == math.inf


def test_the_check_takes_the_twins_of_either_build():
    """The published build measured rounding with its twins; the other build has none: its files are held to them."""
    published = {"scale": "quick", "files": _build(1e-3), "claims": {}, "numerics": []}
    files = {f: entry(loss=LOSS * (1 + 2e-3)) for f in (RUN, STORE)}
    built = {"scale": "quick", "files": files, "claims": {}, "numerics": []}
    summary = check(built, published, "b", "quick.json").summary
    assert "of 2 runs and stores, 0 bitwise, 2 within rounding, 0 beyond it" in summary.splitlines()[0]
