"""Claims of "An adaptive tangent feature perspective" (docs/figures/tangent.md, Claims: F1a–F3c), one module per
figure as the figures are. Thresholds are ours, set from pilot runs.
"""

from featlearn.claims.core import Claim
from featlearn.claims.tangent import fig1, fig2, fig3

# The stores these claims read; workflow/rules/common.smk reads this literal without importing the package.
STORES = ("tangent_mnist", "tangent_penalties")

FIGURES = (fig1, fig2, fig3)
CLAIMS: list[Claim] = [claim for figure in FIGURES for claim in figure.CLAIMS]
