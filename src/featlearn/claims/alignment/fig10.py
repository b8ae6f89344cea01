"""Claims of Fig 10: the init sweep on the 1/(1+k²) spectrum, where the test loss does not favour small s₀."""

from __future__ import annotations

from featlearn.claims.alignment.common import PAPER_3_SEEDS
from featlearn.claims.alignment.spectra import claims
from featlearn.claims.core import Claim
from featlearn.claims.diagnoses import OPEN, Diagnosis, numbers, seeds

STORES = ("init_sweep",)

FIG10_LOSS_ONE_SEED = Diagnosis(
    OPEN, "UC-NFC does grow as s₀ shrinks ({uc_large:.2f} → {uc_small:.2f}), but the final test loss is lowest at "
    "s₀ = 1 ({loss_large:.2f} against {loss_small:.2f} at the smallest s₀); the paper gives its test losses only in "
    "a figure, so its margin is unknown; one seed", when=seeds(1) & numbers("UC-NFC grows as s₀ shrinks",
                                                                            lambda f: f["uc_small"] > f["uc_large"]))

# The alternatives tried are side runs at the paper's settings, not stores: the text gives their settings.
FIG10_LOSS_PAPER = Diagnosis(
    OPEN, "UC-NFC grows as s₀ shrinks ({uc_large:.2f} → {uc_small:.2f}), but after the stated 800 steps at lr 0.05 "
    "the small-init nets have not fit the 1/(1+k²) data: final train loss {train_small:.3f} at the smallest s₀ "
    "against {train_large:.3f} at s₀ = 1, and test loss {loss_small_seeds} against {loss_large_seeds} per seed. "
    "Trained to interpolation, s₀ = 1 still generalizes as well or better, and no reading we tried reverses the order "
    "on every seed; the paper shows its losses only normalised by their maximum, so its margin is unknown",
    "side runs at the paper's settings, 3 seeds, test loss at s₀ = 1 vs 0.001: 3,200 steps 0.121–0.149 vs "
    "0.136–0.156; 10,000 steps (train loss ≤ 4e-4) 0.117–0.148 vs 0.131–0.155 (s₀ = 1 lower on 2 of 3 seeds); v1's "
    "N(0, s/k) init 0.149–0.165 vs 0.167–0.205; the spectrum scaled to tr Σ = d (its normalisation is unstated) "
    "0.141–0.170 vs 0.146–0.165 (s₀ = 0.001 lower on 2 of 3 seeds, mean 0.154 vs 0.157)",
    when=PAPER_3_SEEDS & numbers("UC-NFC grows as s₀ shrinks and the smallest s₀ ends at ≥ 2× the train loss of "
                                 "s₀ = 1", lambda f: f["uc_small"] > f["uc_large"]
                                 and f["train_small"] >= 2 * f["train_large"]))

CLAIMS: list[Claim] = claims("10", "1/(1+k^2)", better=(FIG10_LOSS_ONE_SEED, FIG10_LOSS_PAPER))
