"""Alignment claims on small synthetic stores shaped like the real ones: each kind of check passes and fails."""

import numpy as np
import pytest
import xarray as xr

from featlearn.claims import core
from featlearn.claims.alignment import fig12 as a12
from featlearn.claims.core import FAILED, NOT_INFORMATIVE, NOT_MEASURED, PASSED
from featlearn.claims.diagnoses import CONSTRUCTION, OPEN, Finding, fill
from featlearn.claims.registry import claims_of

CONV = ["cosine", "pearson"]
ATTRS = {"scale": "quick", "data_source": "synthetic (generated)"}


def _check(claim_id: str, **stores: xr.Dataset) -> core.Check:
    claim = next(c for c in claims_of("alignment") if c.id == claim_id)
    return core.evaluate(claim, "alignment", stores)


def why(finding: Finding) -> str:
    """A finding's text as the report shows it, filled with its evidence."""
    return fill(finding.why, finding.evidence)


def chain_fig1(rho: float = 0.95, corrupted: float = 0.6) -> xr.Dataset:
    dims = ("seed", "step", "layer", "convention")
    full = np.full((2, 3, 2, 2), rho)
    return xr.Dataset(
        {"uc_nfc": (dims, full), "k_dispersion": (dims[:3], np.full((2, 3, 2), 5.5)),
         "rho_nfm_egop": (dims[:2], np.full((2, 3), 0.93)), "rho_agop_egop": (dims[:2], np.full((2, 3), 0.96)),
         "rho_nfm_corrupted": (("seed", "q_draw"), np.full((2, 4), corrupted))},
        coords={"seed": [0, 1], "step": [0, 1, 10], "layer": [1, 2], "convention": CONV}, attrs=ATTRS)


def test_fig1_passes_and_fails_on_the_paper_value():
    assert _check("fig1.rho_nfm_agop", chain_fig1=chain_fig1(0.95)).status == PASSED
    check = _check("fig1.rho_nfm_agop", chain_fig1=chain_fig1(0.5))
    assert check.status == FAILED and check.value == pytest.approx(0.5) and check.measured.startswith("0.5")
    assert _check("fig1.corrupted_lower", chain_fig1=chain_fig1(0.95, 0.6)).status == PASSED
    assert _check("fig1.corrupted_lower", chain_fig1=chain_fig1(0.95, 0.93)).status == FAILED


def sweep(uc_by_s0: list[float], rc_by_s0: list[float], diverge: bool = False) -> xr.Dataset:
    """slo_sweep: (init_scale, optimizer, seed, step, layer, convention); final values per s₀ as given."""
    s0 = [1.0, 0.1, 0.01]
    shape = (3, 2, 1, 2, 1, 2)
    uc = np.zeros(shape)
    uc[:, :, :, -1] = np.array(uc_by_s0)[:, None, None, None, None]
    rc = np.zeros(shape[:-1])
    rc[:, :, :, -1] = np.array(rc_by_s0)[:, None, None, None]
    diverged = np.zeros(shape[:3])
    if diverge:  # as the training loop records it: NaN from the divergence on, and the run's flag
        uc[0, 0, 0, -1] = np.nan
        diverged[0, 0, 0] = 1
    dims = ("init_scale", "optimizer", "seed", "step", "layer", "convention")
    return xr.Dataset({"uc_nfc": (dims, uc), "c_nfc": (dims, uc), "ratio_c_uc": (dims[:-1], rc),
                       "diverged": (dims[:3], diverged)},
                      coords={"init_scale": s0, "optimizer": ["gd", "slo"], "seed": [0], "step": [0, 600],
                              "layer": [1], "convention": CONV}, attrs=ATTRS)


def test_fig4_monotone_in_s0():
    good = sweep([0.6, 0.9, 0.95], [0.01, 0.6, 0.97])
    assert _check("fig4.gd_rc_grows", slo_sweep=good).status == PASSED
    assert _check("fig4.gd_uc_grows", slo_sweep=good).status == PASSED
    bad = _check("fig4.gd_uc_grows", slo_sweep=sweep([0.9, 0.6, 0.95], [0.01, 0.6, 0.97]))
    assert bad.status == FAILED and "0.9 / 0.6 / 0.95" in bad.measured


def test_fig4_slo_near_one_fails_at_094_as_measured_at_quick():
    check = _check("fig4.slo_nfc_one", slo_sweep=sweep([0.89, 0.91, 0.94], [1, 1, 1]))
    assert check.status == FAILED and check.value == pytest.approx(0.89)
    assert _check("fig4.slo_nfc_one", slo_sweep=sweep([0.97, 0.98, 0.99], [1, 1, 1])).status == PASSED


def test_a_diverged_run_fails_the_claim_and_says_so():
    check = _check("fig4.gd_uc_grows", slo_sweep=sweep([0.6, 0.9, 0.95], [0.01, 0.6, 0.97], diverge=True))
    assert check.status == FAILED and "slo_sweep: 1 of 6 runs diverged" in check.note


def test_seeds_not_run_and_shorter_runs_are_left_out_not_failed():
    """A (dataset, seed) grid where one dataset ran one seed for fewer epochs (NaN padding), as real stores do."""
    ds = real_mlp(0.4, 0.05)
    ds["c_nfc"][dict(dataset=1, seed=1)] = np.nan
    ds["uc_nfc"][dict(dataset=1, seed=1)] = np.nan
    ds["dw_rel"][dict(dataset=1, seed=1)] = np.nan
    for var in ("c_nfc", "uc_nfc", "dw_rel"):  # mnist stopped one measurement earlier
        ds[var][dict(dataset=1, step=-1)] = np.nan
    for claim in ("fig2.mlp_c_above_uc", "fig13.uc_rises_toward_c", "fig14.mlp_weights_move"):
        assert _check(claim, real_mlp=ds).status == PASSED, claim


def adaptive(slo: list[float], gd: list[float], slo_loss: float, gd_loss: float) -> xr.Dataset:
    dims = ("optimizer", "seed", "step", "layer", "convention")
    uc = np.stack([np.broadcast_to(np.array(v)[None, None, :, None], (2, 2, 3, 2)) for v in (gd, slo)])
    loss = np.stack([np.full((2, 2), x) for x in (gd_loss, slo_loss)])
    return xr.Dataset({"uc_nfc": (dims, uc), "test_loss": (dims[:3], loss)},
                      coords={"optimizer": ["gd", "slo_adaptive"], "seed": [0, 1], "step": [0, 500],
                              "layer": [1, 2, 3], "convention": CONV}, attrs=ATTRS)


def fig12(ours: xr.Dataset, **readings: xr.Dataset) -> dict[str, xr.Dataset]:
    """Fig 12's stores: ours, and each other reading's (``first_init=``, …; by default a copy of ours)."""
    return {"adaptive_slo": ours} | {name: readings.get(key, ours) for key, name in a12.READINGS.items()}


def test_fig12_reproduces_the_quick_failure_and_passes_when_slo_wins():
    quick = adaptive([0.90, 0.95, 0.94], [0.93, 1.0, 0.84], 0.67, 0.38)
    assert _check("fig12.equalizes_above_gd", **fig12(quick)).status == FAILED
    loss = _check("fig12.test_lower", **fig12(quick))
    assert loss.status == FAILED and loss.measured == "SLO 0.67 vs GD 0.38"
    paper = adaptive([0.97, 0.97, 0.97], [0.93, 0.95, 0.84], 0.2, 0.38)
    assert _check("fig12.equalizes_above_gd", **fig12(paper)).status == PASSED
    assert _check("fig12.test_lower", **fig12(paper)).status == PASSED
    # the other readings' stores only inform the diagnosis: ours decides, whatever they give
    assert _check("fig12.test_lower", **fig12(paper, first_init=quick)).status == PASSED
    assert _check("fig12.test_lower", adaptive_slo=paper).status == NOT_MEASURED


def init_sweep(spectra: list[str]) -> xr.Dataset:
    dims = ("spectrum", "init_scale", "seed", "step", "layer", "convention")
    shape = (len(spectra), 2, 1, 4, 2, 2)
    uc = np.zeros(shape)
    uc[:, :, :, -1] = np.array([0.6, 0.95])[None, :, None, None, None]  # rises, smaller s₀ higher
    uc[:, :, :, 0] = 0.3
    c = np.full(shape, 0.9)
    loss = np.zeros(shape[:4])
    loss[:, :, :, -1] = np.array([0.8, 0.4])[None, :, None]
    return xr.Dataset({"uc_nfc": (dims, uc), "c_nfc": (dims, c), "test_loss": (dims[:4], loss)},
                      coords={"spectrum": spectra, "init_scale": [1.0, 0.001], "seed": [0], "step": [0, 1, 10, 800],
                              "layer": [1, 2], "convention": CONV}, attrs=ATTRS)


def test_figs8_to_10_pass_and_a_spectrum_missing_at_this_scale_is_not_measured():
    ds = init_sweep(["isotropic", "1/(1+k^2)"])
    for claim in ("fig8.c_high_early", "fig8.c_more_robust", "fig8.uc_rises", "fig8.small_s0_better"):
        assert _check(claim, init_sweep=ds).status == PASSED, claim
    missing = _check("fig9.uc_rises", init_sweep=ds)
    assert missing.status == NOT_MEASURED and "1/(1+k)" in missing.note
    worse = ds.copy(deep=True)
    worse["test_loss"][dict(step=-1)] = xr.DataArray([0.2, 0.3], dims="init_scale")
    assert _check("fig10.small_s0_better", init_sweep=worse).status == FAILED


def reversing(observed: np.ndarray, predicted: np.ndarray) -> xr.Dataset:
    gammas = np.linspace(0.1, 1.0, observed.shape[0])
    return xr.Dataset({"rho_observed": (("gamma", "data_seed"), observed),
                       "rho_predicted": (("gamma", "data_seed"), predicted)},
                      coords={"gamma": gammas, "data_seed": [0, 1]}, attrs=ATTRS)


def test_fig3_tracking_is_not_informative_and_the_reversal_fails_when_rho_stays_at_one():
    flat = np.ones((4, 2))
    ds = reversing(flat, flat - 0.006)
    tracking = _check("fig3.prediction_tracks", reversing=ds)
    assert tracking.status == NOT_INFORMATIVE and "compares two near-constants" in tracking.note
    reversal = _check("fig3.reversal", reversing=ds)
    assert reversal.status == FAILED and reversal.value == pytest.approx(1.0)
    spread = np.linspace(0.4, 0.95, 4)[:, None].repeat(2, axis=1)
    assert _check("fig3.reversal", reversing=reversing(spread, spread)).status == PASSED
    assert _check("fig3.prediction_tracks", reversing=reversing(spread, spread)).status == PASSED


def real_mlp(gap_start: float, gap_end: float, c_first: float = 0.95) -> xr.Dataset:
    """(dataset, seed, step, layer, convention), step labelled by epoch, with C − UC going from gap_start to
    gap_end."""
    dims = ("dataset", "seed", "step", "layer", "convention")
    c = np.full((2, 2, 3, 5, 2), c_first)
    gap = np.linspace(gap_start, gap_end, 3)[None, None, :, None, None]
    dw = np.full((2, 2, 3, 5), 0.3)
    return xr.Dataset({"c_nfc": (dims, c), "uc_nfc": (dims, c - gap), "dw_rel": (dims[:4], dw)},
                      coords={"dataset": ["cifar10", "mnist"], "seed": [0, 1], "epoch": ("step", [0, 1, 150]),
                              "layer": [1, 2, 3, 4, 5], "convention": CONV}, attrs=ATTRS)


def test_fig2_13_14_on_an_mlp_store():
    ds = real_mlp(0.4, 0.05)
    for claim in ("fig2.mlp_c_above_uc", "fig2.mlp_c_high_early", "fig13.uc_rises_toward_c", "fig14.mlp_weights_move"):
        assert _check(claim, real_mlp=ds).status == PASSED, claim
    below = _check("fig2.mlp_c_above_uc", real_mlp=real_mlp(-0.1, -0.2))
    assert below.status == FAILED and below.value == 0.0 and "0% of 30 points" in below.measured


def test_fig2_gpt_gap_reads_the_block_dimension():
    dims = ("seed", "step", "block", "proj", "convention")
    c = np.full((1, 3, 3, 3, 2), 0.9)
    gap = np.linspace(0.3, 0.1, 3)[None, :, None, None, None] * np.array([1, 2, 3])[None, None, :, None, None]
    c[:, 0] = np.nan  # a centered NFC is undefined at init
    ds = xr.Dataset({"c_nfc": (dims, c), "uc_nfc": (dims, c - gap)},
                    coords={"seed": [0], "step": [0, 100, 200], "block": [1, 2, 3], "proj": ["q", "k", "v"],
                            "convention": CONV}, attrs=ATTRS)
    assert _check("fig2.gpt_gap_early_deep", gpt_shakespeare=ds).status == PASSED
    shallow = ds.assign(uc_nfc=ds.c_nfc - gap[:, :, ::-1])
    assert _check("fig2.gpt_gap_early_deep", gpt_shakespeare=shallow).status == FAILED


def test_fig16_pearson_scalars():
    ds = xr.Dataset({"rho_diag_agop": ("seed", [0.9]), "rho_diag_corrupted": (("seed", "q_draw"), [[0.03, 0.05]])},
                    coords={"seed": [0]}, attrs=ATTRS)
    assert _check("fig16.diag_high", celeba_glasses=ds).status == PASSED
    assert _check("fig16.corrupted_near_zero", celeba_glasses=ds).status == PASSED
    ds["rho_diag_corrupted"][:] = 0.6
    assert _check("fig16.corrupted_near_zero", celeba_glasses=ds).status == FAILED


def test_fig17_slo_raises_every_layer1_quantity():
    dims = ("optimizer", "seed", "step", "layer", "convention")
    base = np.zeros((2, 1, 2, 2, 2))
    base[1] = 0.5  # slo above gd everywhere
    ds = xr.Dataset({"uc_nfc": (dims, base), "c_nfc": (dims, base), "ratio_c_uc": (dims[:-1], base[..., 0])},
                    coords={"optimizer": ["gd", "slo"], "seed": [0], "step": [0, 3000], "layer": [1, 2],
                            "convention": CONV}, attrs=ATTRS)
    assert _check("fig17.slo_raises", svhn_slo=ds).status == PASSED
    ds["ratio_c_uc"][dict(optimizer=1)] = -1.0
    check = _check("fig17.slo_raises", svhn_slo=ds)
    assert check.status == FAILED and "R_C 0 → -1" in check.measured


# ---- Diagnoses: each holds only where its condition does, and quotes the numbers of the stores it is applied to ----

PAPER = {"scale": "paper", "data_source": "synthetic (generated)"}


def slo_sweep(slo_by_seed: list[list[float]], gd_large: float, scale: str = "paper") -> xr.Dataset:
    """slo_sweep with final layer-1 SLO UC = C per (seed, s₀ = 1, 0.1, 0.01) and GD's at s₀ = 1 (others 0.95)."""
    s0, n_seeds = [1.0, 0.1, 0.01], len(slo_by_seed)
    dims = ("init_scale", "optimizer", "seed", "step", "layer", "convention")
    uc = np.full((3, 2, n_seeds, 3, 1, 2), 0.5)
    uc[:, 1, :, -1] = np.array(slo_by_seed).T[:, :, None, None]
    uc[:, 1, :, 1] = 0.97  # SLO peaks mid-training
    uc[:, 0, :, -1] = 0.95
    uc[0, 0, :, -1] = gd_large
    return xr.Dataset({"uc_nfc": (dims, uc), "c_nfc": (dims, uc), "ratio_c_uc": (dims[:-1], np.ones(uc.shape[:-1]))},
                      coords={"init_scale": s0, "optimizer": ["gd", "slo"], "seed": list(range(n_seeds)),
                              "step": [0, 300, 600], "layer": [1], "convention": CONV},
                      attrs={**PAPER, "scale": scale})


def test_fig4_the_paper_diagnosis_holds_with_three_seeds_at_paper_and_quotes_them():
    runs = [[0.89, 0.92, 0.94], [0.94, 0.95, 0.96], [0.89, 0.93, 0.94]]
    check = _check("fig4.slo_nfc_one", slo_sweep=slo_sweep(runs, 0.63))
    assert check.status == FAILED and check.diagnosis.cause == OPEN
    assert check.diagnosis.holds.startswith("at the paper scale, 3 seeds")
    assert "seed-mean UC reaches 0.907–0.947" in why(check.diagnosis)
    assert "each seed's lowest over s₀ 0.89 / 0.94 / 0.89" in why(check.diagnosis)
    assert "above GD's 0.63 at s₀ = 1" in why(check.diagnosis)
    assert "9 of 9 end ≥ 0.01 below their peak" in why(check.diagnosis)
    assert "v1's N(0, s/k) init" in fill(check.diagnosis.tried, check.diagnosis.evidence)
    quoted = {e.name: e for e in check.diagnosis.evidence}  # each number with what it is and where it was read
    assert quoted["seed_lows"].value == pytest.approx((0.89, 0.94, 0.89)) and quoted["settled"].value == 9
    assert quoted["seed_lows"].source == "slo_sweep: uc_nfc" and "per seed" in quoted["seed_lows"].what
    assert quoted["c_low"].source == "slo_sweep: c_nfc"
    one = _check("fig4.slo_nfc_one", slo_sweep=slo_sweep(runs[:1], 0.63, scale="quick")).diagnosis
    assert one.holds.startswith("1 seed") and "UC reaches 0.89–0.94" in why(one)
    for where in (slo_sweep(runs, 0.63, scale="quick"), slo_sweep(runs[:2], 0.63), slo_sweep(runs, 0.95)):
        assert why(_check("fig4.slo_nfc_one", slo_sweep=where).diagnosis).startswith("not yet diagnosed at scale")


def spectra_sweep(loss_large: list[float], loss_small: list[float], train_large: float, train_small: float,
                  scale: str = "paper") -> xr.Dataset:
    """init_sweep on the 1/(1+k²) spectrum, per-seed final test losses at s₀ = 1 and 0.001, seed-mean train losses."""
    n_seeds = len(loss_large)
    dims = ("spectrum", "init_scale", "seed", "step", "layer", "convention")
    uc = np.full((1, 2, n_seeds, 2, 2, 2), 0.3)
    uc[0, :, :, -1] = np.array([0.47, 0.95])[:, None, None, None]
    test = np.ones((1, 2, n_seeds, 2))
    test[0, :, :, -1] = [loss_large, loss_small]
    train = np.ones((1, 2, n_seeds, 2))
    train[0, :, :, -1] = np.array([train_large, train_small])[:, None]
    return xr.Dataset({"uc_nfc": (dims, uc), "c_nfc": (dims, uc), "test_loss": (dims[:4], test),
                       "train_loss": (dims[:4], train)},
                      coords={"spectrum": ["1/(1+k^2)"], "init_scale": [1.0, 0.001], "seed": list(range(n_seeds)),
                              "step": [0, 800], "layer": [1, 2], "convention": CONV}, attrs={**PAPER, "scale": scale})


def test_fig10_the_paper_diagnosis_needs_the_small_init_nets_to_underfit():
    underfit = _check("fig10.small_s0_better", init_sweep=spectra_sweep([0.16, 0.17, 0.15], [0.21, 0.24, 0.21],
                                                                        0.037, 0.131))
    assert underfit.status == FAILED and underfit.diagnosis.holds.startswith("at the paper scale, 3 seeds")
    assert ("final train loss 0.131 at the smallest s₀ against 0.037 at s₀ = 1, and test loss 0.21 / 0.24 / 0.21 "
            "against 0.16 / 0.17 / 0.15 per seed") in why(underfit.diagnosis)
    fitted = _check("fig10.small_s0_better", init_sweep=spectra_sweep([0.16, 0.17, 0.15], [0.21, 0.24, 0.21],
                                                                      0.001, 0.001))
    assert fitted.status == FAILED and why(fitted.diagnosis).startswith("not yet diagnosed at scale paper; 3 seeds")
    one = _check("fig10.small_s0_better", init_sweep=spectra_sweep([0.16], [0.21], 0.037, 0.131, scale="quick"))
    assert one.diagnosis.holds.startswith("1 seed") and "(0.16 against 0.21 at the smallest s₀)" in why(one.diagnosis)


def adaptive_seeds(slo_train: float, gd_train: float, n_seeds: int = 3) -> xr.Dataset:
    """adaptive_slo failing both Fig 12 claims, with final train losses."""
    ds = adaptive([0.90, 0.95, 0.94], [0.93, 1.0, 0.84], 0.67, 0.38)
    ds = xr.concat([ds.isel(seed=0)] * n_seeds, dim="seed").assign_coords(seed=list(range(n_seeds)))
    train = np.stack([np.full((n_seeds, 2), x) for x in (gd_train, slo_train)])
    return ds.assign(train_loss=(("optimizer", "seed", "step"), train)).assign_attrs(PAPER)


def test_fig12_the_construction_diagnosis_holds_where_adaptive_slo_underfits():
    for claim in ("fig12.equalizes_above_gd", "fig12.test_lower"):
        check = _check(claim, **fig12(adaptive_seeds(0.13, 0.009)))
        assert check.status == FAILED and check.diagnosis.cause == CONSTRUCTION, claim
        assert "final train loss 0.13 against GD's 0.009" in why(check.diagnosis)
        assert _check(claim, **fig12(adaptive_seeds(0.001, 0.009))).diagnosis.cause == OPEN
        assert _check(claim, **fig12(adaptive_seeds(0.13, 0.009, n_seeds=1))).diagnosis.cause == OPEN
    lowest = why(_check("fig12.equalizes_above_gd", **fig12(adaptive_seeds(0.13, 0.009))).diagnosis)
    assert "lowest layer ends at 0.9 / 0.9 / 0.9 per seed against GD's best layer at 1 / 1 / 1" in lowest
    test = _check("fig12.test_lower", **fig12(adaptive_seeds(0.13, 0.009))).diagnosis
    assert "test loss is 0.67 / 0.67 / 0.67 per seed" in why(test)


def test_fig12_the_diagnosis_lists_each_other_reading_with_its_stores_numbers():
    ours = adaptive_seeds(0.13, 0.009)
    readings = {"first_init": adaptive_seeds(0.2, 0.01).assign(test_loss=ours.test_loss * 2),
                "readout_unit": adaptive_seeds(0.15, 0.008)}
    # the claim's first term on each reading's store: SLO's lowest − GD's best layer, GD's − SLO's test loss
    for claim, first, doubled in (("fig12.equalizes_above_gd", "-0.1", "-0.1"),
                                  ("fig12.test_lower", "-0.29", "-0.58")):
        finding = _check(claim, **fig12(ours, **readings)).diagnosis
        assert finding.cause == CONSTRUCTION and "each other reading fails too" in finding.holds
        tried = fill(finding.tried, finding.evidence)
        assert "our readings are g/(ε + ‖g‖), init 0.1 on every hidden layer and the readout at 1/s" in tried
        assert "(adaptive_slo_first_init): " + doubled + ", train loss SLO 0.2 against GD's 0.01" in tried
        assert "(adaptive_slo_readout_unit): " + first + ", train loss SLO 0.15 against GD's 0.008" in tried
        sources = {e.name: e.source for e in finding.evidence}
        assert sources["first_init_slo_train"].endswith("adaptive_slo_first_init: train_loss")


def test_fig12_the_diagnosis_does_not_hold_where_another_reading_passes():
    ours, wins = adaptive_seeds(0.13, 0.009), adaptive([0.97, 0.97, 0.97], [0.93, 0.95, 0.84], 0.2, 0.38)
    wins = xr.concat([wins.isel(seed=0)] * 3, dim="seed").assign_coords(seed=[0, 1, 2]).assign_attrs(PAPER)
    wins = wins.assign(train_loss=ours.train_loss)  # every fact the text names is there: only the verdict differs
    assert _check("fig12.test_lower", **fig12(wins)).status == PASSED
    for key in a12.READINGS:
        for claim in ("fig12.equalizes_above_gd", "fig12.test_lower"):
            check = _check(claim, **fig12(ours, **{key: wins}))
            assert check.status == FAILED and check.diagnosis.cause == OPEN, (key, claim)
            assert "each other reading fails too" in why(check.diagnosis)


def test_fig3_the_construction_diagnosis_holds_only_where_rho_stays_at_one():
    flat = reversing(np.full((4, 2), 0.999997), np.full((4, 2), 0.9986)).assign_attrs(PAPER)
    check = _check("fig3.reversal", reversing=flat)
    assert check.diagnosis.cause == CONSTRUCTION
    assert why(check.diagnosis).startswith("ρ_2nd stays between 0.999997 and 0.999997 at every γ")
    low = reversing(np.full((4, 2), 0.95), np.full((4, 2), 0.95)).assign_attrs(PAPER)
    assert _check("fig3.reversal", reversing=low).diagnosis.cause == OPEN
