"""Claims of Fig 9: the init sweep on the 1/(1+k) spectrum."""

from __future__ import annotations

from featlearn.claims.alignment.spectra import claims
from featlearn.claims.core import Claim

STORES = ("init_sweep",)

CLAIMS: list[Claim] = claims("9", "1/(1+k)")
