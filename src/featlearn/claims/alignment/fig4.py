"""Claims of Fig 4: SLO against GD across the first layer's init scale s₀ (R_C, UC-NFC, C-NFC at the end of
training, layer 1; the train loss of its fourth column)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from featlearn.claims.alignment.common import COSINE, PAPER_3_SEEDS, by_s0, series
from featlearn.claims.core import Claim
from featlearn.claims.diagnoses import OPEN, Diagnosis, numbers, seeds
from featlearn.claims.reading import convention, final, fmt, seed_mean, values
from featlearn.claims.terms import Fact, Outcome, StoreCheck, above, at_least, at_most, fact
from featlearn.claims.tiers import PaperNumber

STORES = ("slo_sweep",)


def grows_as_s0_shrinks(var: str) -> StoreCheck:
    """Under GD, ``var`` at the end of training does not fall (tolerance 0.02) as s₀ shrinks, and ends higher."""

    def check(ds: xr.Dataset) -> Outcome:
        s0, v = by_s0(ds, var, "gd")
        drop = float(np.diff(v).min()) if v.size > 1 else 0.0
        return Outcome(series(s0, v), (at_least("smallest step as s₀ shrinks", drop, -0.02),
                                       above("smallest s₀ − s₀ = 1", v[-1] - v[0], 0)), float(v[-1] - v[0]))

    return check


NEAR_ONE = PaperNumber(1.0)  # the text's "close to 1", held to the lowest s₀'s value
FITS = 10  # ours: the relaxed SLO "allows the network to interpolate the labels"; the paper gives no loss


def slo_rc_one(ds: xr.Dataset) -> Outcome:
    s0, v = by_s0(ds, "ratio_c_uc", "slo")
    return Outcome(series(s0, v), (at_least("smallest R_C", v.min(), 0.9),), float(v.min()), compared=float(v.min()))


def slo_fits(ds: xr.Dataset) -> Outcome:
    """SLO's seed-mean train loss falls ≥ ``FITS``× from its first to its last measurement at every s₀: the fixed
    speeds, relaxed by ε, still fit the labels, so its correlations are those of a trained network."""
    loss = seed_mean(ds.train_loss.sel(optimizer="slo")).sortby("init_scale", ascending=False)
    ratio = values(loss.isel(step=0), "SLO train loss at step 0") / values(final(loss), "SLO final train loss")
    return Outcome(series(loss.init_scale.values, ratio) + " (first / last train loss, SLO)",
                   (at_least("smallest first/last train loss ratio over s₀", ratio.min(), FITS),), float(ratio.min()))


def _slo_facts(ds: xr.Dataset, uc: np.ndarray, c: np.ndarray) -> dict[str, Fact]:
    """What Fig 4's diagnoses read: SLO's seed-mean UC and C over s₀, every run's end and peak, GD's UC at s₀ = 1."""
    runs = convention(ds.uc_nfc, COSINE).sel(optimizer="slo", layer=1)  # every (s₀, seed) run's trajectory
    ends, peaks = final(runs), runs.max("step")
    mean, run = "final seed-mean layer-1 {} over s₀ (SLO)", "final layer-1 UC-NFC of the (s₀, seed) SLO runs"
    return {
        "uc_low": fact(uc.min(), "lowest " + mean.format("UC-NFC"), "uc_nfc"),
        "uc_high": fact(uc.max(), "highest " + mean.format("UC-NFC"), "uc_nfc"),
        "c_low": fact(c.min(), "lowest " + mean.format("C-NFC"), "c_nfc"),
        "c_high": fact(c.max(), "highest " + mean.format("C-NFC"), "c_nfc"),
        "low": fact(min(uc.min(), c.min()), "lowest " + mean.format("UC-NFC or C-NFC"), "uc_nfc, c_nfc"),
        "run_low": fact(float(ends.min()), "lowest " + run, "uc_nfc"),
        "run_high": fact(float(ends.max()), "highest " + run, "uc_nfc"),
        "peak_low": fact(float(peaks.min()), "lowest peak during training of the SLO runs' layer-1 UC-NFC", "uc_nfc"),
        "peak_high": fact(float(peaks.max()), "highest peak during training of the SLO runs' layer-1 UC-NFC", "uc_nfc"),
        "runs": fact(int(ends.notnull().sum()), "SLO runs measured (s₀ × seeds)", "uc_nfc"),
        "settled": fact(int(((peaks - ends) >= 0.01).sum()), "SLO runs ending ≥ 0.01 below their peak UC-NFC",
                        "uc_nfc"),
        "seed_lows": fact(ends.min("init_scale"), "per seed, the lowest final layer-1 UC-NFC over s₀ (SLO)", "uc_nfc"),
        "gd_large": fact(by_s0(ds, "uc_nfc", "gd")[1][0], "GD's final seed-mean layer-1 UC-NFC at s₀ = 1", "uc_nfc"),
    }


def slo_nfc_one(ds: xr.Dataset) -> Outcome:
    _, uc = by_s0(ds, "uc_nfc", "slo")
    _, c = by_s0(ds, "c_nfc", "slo")
    low = float(min(uc.min(), c.min()))
    return Outcome(f"UC {fmt(uc.min())}–{fmt(uc.max())}, C {fmt(c.min())}–{fmt(c.max())} over s₀",
                   (at_least("lowest UC or C", low, 0.95),), low, _slo_facts(ds, uc, c), compared=low)


def slo_invariant(ds: xr.Dataset) -> Outcome:
    s0, uc = by_s0(ds, "uc_nfc", "slo")
    spread = float(uc.max() - uc.min())
    return Outcome(f"UC {series(s0, uc)}; spread {fmt(spread)}", (at_most("UC spread over s₀", spread, 0.1),),
                   spread)


FIG4_ONE_SEED = Diagnosis(
    OPEN, "UC reaches {uc_low:.2f}–{uc_high:.2f} and C {c_low:.2f}–{c_high:.2f}, flat in s₀ (the invariance claim "
    "passes) but short of our 0.95 reading of the paper's '≈ 1'; one seed",
    when=seeds(1) & numbers("UC and C ≥ 0.85 at every s₀", lambda f: f["low"] >= 0.85))

# The alternatives tried are side runs at the paper's settings, not stores: the text gives their settings.
FIG4_PAPER = Diagnosis(
    OPEN, "with SLO the seed-mean UC reaches {uc_low:.3f}–{uc_high:.3f} and C {c_low:.3f}–{c_high:.3f} over s₀ (runs "
    "{run_low:.3f}–{run_high:.3f}; each seed's lowest over s₀ {seed_lows}): flat in s₀ (the invariance claim passes) "
    "and above GD's {gd_large:.2f} at s₀ = 1, but short of our 0.95 reading of the paper's '≈ 1', which gives no "
    "number. The runs peak at {peak_low:.3f}–{peak_high:.3f} during training; {settled} of {runs} end ≥ 0.01 below "
    "their peak",
    "side runs at the paper's settings, 3 seeds, final layer-1 UC at s₀ = 1 and 0.001: the literal 'divided by 0.01' "
    "readout (× 100) 0.949–0.965 but train loss 10²–10⁵; v1's N(0, s/k) init 0.912–0.952; 2,400 steps 0.927–0.965; "
    "ε = 0.01 0.920–0.961; lr × 0.1 leaves s₀ = 1 untrained (loss 0.96–0.99)",
    when=PAPER_3_SEEDS & numbers("seed-mean UC and C ≥ 0.85 at every s₀, above GD's at s₀ = 1",
                                 lambda f: f["low"] >= 0.85 and f["uc_low"] > f["gd_large"]))

CLAIMS: list[Claim] = [
    Claim("fig4.gd_rc_grows", "4", "Under GD, R_C grows as the first-layer init scale s₀ shrinks.", "",
          "final layer-1 R_C non-decreasing from s₀ = 1 to the smallest s₀ (tolerance 0.02)", ("slo_sweep",),
          grows_as_s0_shrinks("ratio_c_uc")),
    Claim("fig4.gd_uc_grows", "4", "Under GD, UC-NFC grows as s₀ shrinks.", "",
          "final layer-1 UC-NFC non-decreasing as s₀ shrinks (tolerance 0.02)", ("slo_sweep",),
          grows_as_s0_shrinks("uc_nfc")),
    Claim("fig4.slo_rc_one", "4", "With SLO, R_C ≈ 1 for every s₀.", "≈ 1",
          "final layer-1 R_C ≥ 0.9 at every s₀; the paper's 1 against the lowest", ("slo_sweep",), slo_rc_one,
          paper_number=NEAR_ONE),
    Claim("fig4.slo_nfc_one", "4", "With SLO, UC-NFC and C-NFC reach ≈ 1 at every s₀.", "≈ 1",
          "final layer-1 UC and C ≥ 0.95 at every s₀; the paper's 1 against the lowest", ("slo_sweep",), slo_nfc_one,
          (FIG4_ONE_SEED, FIG4_PAPER), paper_number=NEAR_ONE),
    Claim("fig4.slo_invariant", "4", "With SLO, UC-NFC does not depend on s₀.", "",
          "final layer-1 UC spread over s₀ ≤ 0.1", ("slo_sweep",), slo_invariant),
    Claim("fig4.slo_fits", "4", "With SLO (relaxed by ε) the network still fits the labels at every s₀.", "",
          f"seed-mean SLO train loss ≥ {FITS}× below its first measurement at every s₀ (ours; the paper plots it, "
          "gives no number)", ("slo_sweep",), slo_fits, needs_training=False),
]
