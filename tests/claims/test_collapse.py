"""Collapse claims on synthetic Deep RFM and neural-network stores: each kind of check passes and fails."""

import numpy as np
import pytest
import xarray as xr

from featlearn.claims import core
from featlearn.claims.core import FAILED, FRAGILE, NOT_MEASURED, PASSED
from featlearn.claims.diagnoses import CONSTRUCTION, OPEN, fill
from featlearn.claims.registry import claims_of

ATTRS = {"scale": "quick", "data_source": "MNIST: real digits;\nCIFAR-10 stand-in: recoloured digits"}


def _check(claim_id: str, **stores: xr.Dataset) -> core.Check:
    claim = next(c for c in claims_of("collapse") if c.id == claim_id)
    return core.evaluate(claim, "collapse", stores)


def _gram(within: float, between: float, k: int = 10) -> np.ndarray:
    return np.where(np.eye(k, dtype=bool), within, between)


def deep_rfm(datasets: list[str], final_nc1: float, last_between: float = -1 / 9) -> xr.Dataset:
    """NC1 of X falls geometrically from 10 to final_nc1 over 5 layers; M^½X sits 10× below X, Φ slightly above."""
    x = np.geomspace(10, final_nc1, 5)
    nc1 = np.stack([x, x / 10, x / 9], axis=-1)[None].repeat(len(datasets), axis=0)
    block = np.stack([_gram(0.5, -0.05), _gram(0.99, last_between)])[None].repeat(len(datasets), axis=0)
    return xr.Dataset({"nc1": (("dataset", "layer", "stage"), nc1), "nc2_meansq": (("dataset", "layer", "stage"), nc1),
                       "gram_block_mean": (("dataset", "gram_layer", "class_a", "class_b"), block)},
                      coords={"dataset": datasets, "layer": np.arange(1, 6), "stage": ["X", "MX", "PhiMX"],
                              "gram_layer": [1, 5]}, attrs=ATTRS)


def test_deep_rfm_collapse_passes_and_a_stalled_dataset_fails_with_its_ratio():
    ds = deep_rfm(["cifar10", "mnist"], 1e-3)
    for claim in ("fig3.mx_below_x", "fig3.phi_not_better", "fig3.nc1_decays", "fig3.nc2_decays", "fig6.etf"):
        assert _check(claim, deep_rfm_relu=ds).status == PASSED, claim
    stalled = _check("fig4.nc1_decays", **_cos(deep_rfm(["mnist"], 2.3)))
    assert stalled.status == FAILED and stalled.value == pytest.approx(10 / 2.3)
    assert "mnist 10 → 2.3" in stalled.measured
    assert "stand-in data" in stalled.note


def _cos(ours: xr.Dataset, bandwidth: float = 110.0, max_agop: float = 1.04) -> dict[str, xr.Dataset]:
    """Fig 4's stores: ours, and the other readings' with NC1(X) falling from 10 to the given last-layer value."""
    return {"deep_rfm_cos": ours,
            "deep_rfm_cos_bandwidth": deep_rfm(["mnist"], bandwidth).assign_attrs(scale=ours.attrs["scale"]),
            "deep_rfm_cos_max_agop": deep_rfm(["mnist"], max_agop).assign_attrs(scale=ours.attrs["scale"])}


def test_the_cos_diagnosis_lists_the_other_readings_with_their_stores_numbers():
    quick = _check("fig4.nc1_decays", **_cos(deep_rfm(["mnist"], 1.03))).diagnosis
    assert quick.cause == CONSTRUCTION and "each other reading fails too" in quick.holds
    assert fill(quick.why, quick.evidence).startswith(
        "NC1(X) stalls at 1.03–1.03 by the last layer while NC1(M^½X) falls to 0.1:")
    tried = fill(quick.tried, quick.evidence)
    assert "(deep_rfm_cos_max_agop), NC1(X) 1.04–1.04 at the last layer, at least 9.62× below layer 1" in tried
    assert "(deep_rfm_cos_bandwidth), 110–110, 0.0909×" in tried
    sources = {e.name: e.source for e in quick.evidence}
    assert sources["max_agop_last_high"].endswith("deep_rfm_cos_max_agop: nc1")
    # measured at the paper scale, the stores carry the same evidence: it holds there too
    paper = {n: ds.assign_attrs(scale="paper") for n, ds in _cos(deep_rfm(["mnist"], 1.03)).items()}
    assert _check("fig4.nc1_decays", **paper).diagnosis.cause == CONSTRUCTION


def test_the_cos_diagnosis_does_not_hold_where_another_reading_passes_or_nc1_does_not_stall():
    for passing in ({"max_agop": 1e-3}, {"bandwidth": 0.5}):
        check = _check("fig4.nc1_decays", **_cos(deep_rfm(["mnist"], 1.03), **passing))
        assert check.status == FAILED and check.diagnosis.cause == OPEN, passing
    assert _check("fig4.nc1_decays", **_cos(deep_rfm(["mnist"], 5.0))).diagnosis.cause == OPEN
    no_store = _check("fig4.nc1_decays", deep_rfm_cos=deep_rfm(["mnist"], 1.03))
    assert no_store.status == NOT_MEASURED and "deep_rfm_cos_bandwidth" in no_store.note


def test_etf_fails_when_between_class_is_not_minus_one_ninth():
    check = _check("fig5.etf", deep_rfm_cos=deep_rfm(["mnist"], 1e-3, last_between=0.0))
    assert check.status == FAILED and "between 0" in check.measured


def test_fig1_needs_cifar_cos_and_mnist_relu():
    both = _check("fig1.etf", deep_rfm_cos=deep_rfm(["cifar10"], 1e-3), deep_rfm_relu=deep_rfm(["mnist"], 1e-3))
    assert both.status == PASSED
    smoke = _check("fig1.etf", deep_rfm_cos=deep_rfm(["mnist"], 1e-3), deep_rfm_relu=deep_rfm(["mnist"], 1e-3))
    assert smoke.status == NOT_MEASURED and "cifar10" in smoke.note


def nn_store(phi: float, nfa: float, loss_end: float) -> xr.Dataset:
    shape = (1, 2, 3, 5)
    nc1 = np.stack([np.full(shape, 10.0), np.full(shape, 1.0), np.full(shape, 0.9)], axis=-1)
    loss = np.stack([np.full((1, 2), 1.0), np.full((1, 2), 0.5), np.full((1, 2), loss_end)], axis=-1)
    return xr.Dataset({"nc1": (("dataset", "seed", "step", "layer", "stage"), nc1),
                       "phi": (("dataset", "seed", "step", "layer"), np.full(shape, phi)),
                       "nfa_sqrt": (("dataset", "seed", "step", "layer"), np.full(shape, nfa)),
                       "train_loss": (("dataset", "seed", "step"), loss)},
                      coords={"dataset": ["mnist"], "seed": [0, 1], "epoch": ("step", [0, 250, 500]),
                              "layer": np.arange(1, 6),
                              "stage": ["input", "right", "left"]}, attrs=ATTRS)


def test_nn_claims_pass_and_fail():
    good = nn_store(0.8, 0.74, 1e-3)
    for claim in ("fig7.mlp_phi_majority", "fig7.mlp_relu_small", "fig10.mlp_nfa", "fig10.mlp_loss_falls"):
        assert _check(claim, collapse_mlp=good).status == PASSED, claim
    bad = nn_store(0.3, 0.05, 0.5)
    nfa = _check("fig10.mlp_nfa", collapse_mlp=bad)
    assert nfa.status == FAILED and nfa.value == pytest.approx(0.05) and "mnist 0.05" in nfa.measured
    assert _check("fig7.mlp_phi_majority", collapse_mlp=bad).status == FAILED
    assert _check("fig10.mlp_loss_falls", collapse_mlp=bad).status == FAILED
    assert _check("fig11.resnet_nfa", collapse_resnet=None).status == NOT_MEASURED


def test_a_loss_fall_one_seed_clears_and_another_misses_is_fragile():
    """Two seeds, one past the plateau (20×) and one still on it (5×): the seed mean's 8× is no settled failure."""
    ds = nn_store(0.8, 0.74, 1e-3)
    ds["train_loss"] = ds.train_loss.copy(data=np.array([[[1.0, 0.5, 0.05], [1.0, 0.5, 0.2]]]))
    check = _check("fig10.mlp_loss_falls", collapse_mlp=ds)
    assert check.status == FAILED and check.verdict == FRAGILE
    assert check.margin.margin == pytest.approx(1 / 0.125 - 10) and check.margin.moved_by == pytest.approx(
        np.std([20, 5], ddof=1))
    settled = _check("fig10.mlp_loss_falls", collapse_mlp=nn_store(0.8, 0.74, 1e-3))
    assert settled.verdict == PASSED and settled.margin.relative == pytest.approx(99)  # 1000× against 10×
