"""Claims of Fig 8: the init sweep on the isotropic spectrum."""

from __future__ import annotations

from featlearn.claims.alignment.spectra import claims
from featlearn.claims.core import Claim
from featlearn.claims.diagnoses import OPEN, Diagnosis, seeds

STORES = ("init_sweep",)

FIG8_ROBUST_ONE_SEED = Diagnosis(
    OPEN, "in layer 1 C-NFC's final range over s₀ ({c_range_1:.2f}) exceeds UC-NFC's ({uc_range_1:.2f}), while layer "
    "2 agrees with the paper ({c_range_2:.3f} against {uc_range_2:.2f}); one seed, so seed noise is not ruled out",
    when=seeds(1))

CLAIMS: list[Claim] = claims("8", "isotropic", robust=(FIG8_ROBUST_ONE_SEED,))
