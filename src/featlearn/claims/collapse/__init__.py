"""Claims of "AGOP as a mechanism for deep neural collapse" (docs/figures/collapse.md, Claims), one module per
figure as the figures are (Fig 2 draws no claim of its own: Figs 7 and 8 carry its panels').

``deep_rfm`` holds the checks of the Deep RFM figures (1, 3–6), ``networks`` those of the neural networks' (7–12).
The thresholds are ours, which the paper does not give.
"""

from featlearn.claims.collapse import fig1, fig3, fig4, fig5, fig6, fig7, fig8, fig9, fig10, fig11, fig12
from featlearn.claims.core import Claim

# The stores these claims read; workflow/rules/common.smk reads this literal without importing the package.
STORES = ("deep_rfm_cos", "deep_rfm_relu", "collapse_mlp", "collapse_resnet", "collapse_vgg")

FIGURES = (fig1, fig3, fig4, fig5, fig6, fig7, fig8, fig9, fig10, fig11, fig12)
CLAIMS: list[Claim] = [claim for figure in FIGURES for claim in figure.CLAIMS]
