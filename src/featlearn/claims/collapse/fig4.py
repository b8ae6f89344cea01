"""Claims of Fig 4: collapse through depth in the cos Deep RFM, whose X_l stalls where M^½X_l collapses."""

from __future__ import annotations

from featlearn.claims.collapse.deep_rfm import claims
from featlearn.claims.core import Claim
from featlearn.claims.diagnoses import CONSTRUCTION, Diagnosis, numbers, others_fail

STORES = ("deep_rfm_cos", "deep_rfm_cos_bandwidth", "deep_rfm_cos_max_agop")
# The other readings of the cos runs' ambiguous settings, each deep_rfm_cos with that one setting changed
# (config.yaml): the NC1 claim reads their stores so that its diagnosis can say what they give.
READINGS = {"bandwidth": "deep_rfm_cos_bandwidth", "max_agop": "deep_rfm_cos_max_agop"}

# Where NC1(X) stalls near 1 under our readings and under each other one, the failure is the construction's, not a
# reading's. The numbers of every reading come from its store; the earlier side runs named last are not stores.
COS_SATURATES = Diagnosis(
    CONSTRUCTION, "NC1(X) stalls at {last_low:.2f}–{last_high:.2f} by the last layer while NC1(M^½X) falls to "
    "{mx_last_high:.2g}: the cos random features of the ℓ1-Laplace kernel undo the collapse the AGOP projection makes "
    "(the paper's own remark that the random-feature map worsens NC1), and Figs 1 and 5 draw M^½X_l, which is an ETF. "
    "It holds under each reading of the settings the paper leaves open, so it is not our reading's",
    "our readings are γ = 0.05 as the rate of exp(−γ‖x − z‖₁) and M the AGOP averaged over the data; the others, each "
    "run as deep_rfm_cos with that one setting changed: M divided by its largest entry as the authors' code does "
    "(deep_rfm_cos_max_agop), NC1(X) {max_agop_last_low:.3g}–{max_agop_last_high:.3g} at the last layer, at least "
    "{max_agop_ratio_low:.3g}× below layer 1; the bandwidth σ = 0.05 as a length, γ = 1/σ = 20 "
    "(deep_rfm_cos_bandwidth), {bandwidth_last_low:.3g}–{bandwidth_last_high:.3g}, {bandwidth_ratio_low:.3g}×. "
    "Earlier side runs with M divided by its largest entry (not stores): γ = 0.005 collapses, D = 784, D = 4096 and "
    "γ = 0.1 do not",
    when=numbers("NC1(X) stalls near 1 (0.3–3) at the last layer",
                 lambda f: 0.3 <= f["last_low"] and f["last_high"] <= 3) & others_fail(READINGS))

CLAIMS: list[Claim] = claims("4", "deep_rfm_cos", "cos", (COS_SATURATES,), READINGS)
