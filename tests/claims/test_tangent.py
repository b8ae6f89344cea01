"""Tangent claims: the penalties on the library's own store, the MNIST claims on a synthetic store."""

import numpy as np
import xarray as xr

from featlearn.claims import core
from featlearn.claims.core import FAILED, PASSED
from featlearn.claims.registry import claims_of
from featlearn.pipeline.experiments.tangent_penalties import penalties_store

ATTRS = {"scale": "quick", "data_source": "none (analytic)"}


def _check(claim_id: str, **stores: xr.Dataset) -> core.Check:
    claim = next(c for c in claims_of("tangent") if c.id == claim_id)
    return core.evaluate(claim, "tangent", stores)


def penalties() -> xr.Dataset:
    return penalties_store({"v": {"start": 0, "stop": 5, "num": 60}, "s": {"start": 1, "stop": 6, "num": 20}})


def test_the_computed_penalties_hold_every_fig2_claim():
    ds = penalties().assign_attrs(ATTRS)
    for claim in ("fig2.below_quadratic", "fig2.ordering", "fig2.w1_at_5", "fig2.w2_at_5", "fig2.w3_at_5",
                  "fig2.concave"):
        assert _check(claim, tangent_penalties=ds).status == PASSED, claim


def test_a_penalty_above_v2_fails():
    ds = penalties().assign_attrs(ATTRS)
    ds["omega_tilde"] = ds.omega_tilde + 0.1 * ds.v ** 3
    assert _check("fig2.below_quadratic", tangent_penalties=ds).status == FAILED
    assert _check("fig2.w1_at_5", tangent_penalties=ds).status == FAILED


def mnist(linear: float, binary: float, seeds: int = 2) -> xr.Dataset:
    rng = np.random.default_rng(0)
    y = np.linspace(-1.5, 1.5, 20)
    diag = 5 + 5 * (np.abs(y) < 0.25)  # the bump near y = 0
    k = np.diag(diag) + 0.1
    per_task = {"alignment": [linear, binary], "alignment_init": [0.1, 0.1], "kernel_growth": [3.0, 3.0],
                "decomposition_w1": [0.3, 0.2], "decomposition_r2": [0.6, 0.5], "task_difficulty": [100.0, 200.0]}
    data = {name: (("seed", "task"), np.tile(v, (seeds, 1))) for name, v in per_task.items()}
    target = np.stack([y, np.sign(y)])
    noise = 1e-3 * rng.random((seeds, 2, 20))
    data |= {"y": (("seed", "task", "sample_i"), np.tile(y, (seeds, 2, 1))),
             "target": (("seed", "task", "sample_i"), np.tile(target, (seeds, 1, 1))),
             "f_final": (("seed", "task", "sample_i"), np.tile(target, (seeds, 1, 1)) + noise),
             "K": (("seed", "task", "sample_i", "sample_j"), np.tile(k, (seeds, 2, 1, 1)))}
    return xr.Dataset(data, coords={"seed": np.arange(seeds), "task": ["linear", "binary"]}, attrs=ATTRS)


def test_fig1_alignment_gap_passes_and_fails_with_its_numbers():
    assert _check("fig1.binary_higher", tangent_mnist=mnist(0.265, 0.408)).status == PASSED
    reversed_ = _check("fig1.binary_higher", tangent_mnist=mnist(0.55, 0.52))
    assert reversed_.status == FAILED and reversed_.measured.startswith("0.55 ± 0 → 0.52")


def test_fig1_and_fig3_claims_on_a_store_that_holds_them():
    ds = mnist(0.265, 0.408)
    for claim in ("fig1.training_aligns", "fig1.linear_decomposition", "fig1.binary_harder", "fig3.interpolates",
                  "fig3.diag_bump"):
        assert _check(claim, tangent_mnist=ds).status == PASSED, claim
    # both tasks share K here, so the bump is not weaker for the linear target
    assert _check("fig3.weaker_linear", tangent_mnist=ds).status == FAILED
