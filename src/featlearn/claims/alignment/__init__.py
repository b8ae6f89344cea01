"""Claims of "Feature learning as alignment" (docs/figures/alignment.md, Claims), one module per figure as the
figures are: its checks, its claims and the diagnoses of those that fail.

Correlations are the paper's ρ, the ``cosine`` convention, except Figs 2, 13 and 16 (the authors' Pearson).
Thresholds that the paper does not give are ours and stated in each claim's criterion. ``common`` holds what several
figures read alike, ``real`` the checks of the real-data figures (2, 13–15), ``spectra`` those of Figs 8–10.
"""

from featlearn.claims.alignment import (
    fig1,
    fig2,
    fig3,
    fig4,
    fig5,
    fig6,
    fig7,
    fig8,
    fig9,
    fig10,
    fig11,
    fig12,
    fig13,
    fig14,
    fig15,
    fig16,
    fig17,
)
from featlearn.claims.core import Claim

# The stores these claims read; workflow/rules/common.smk reads this literal without importing the package.
STORES = ("chain_fig1", "real_mlp", "vgg_cifar", "gpt_shakespeare", "reversing", "slo_sweep", "init_sweep",
          "first_order", "adaptive_slo", "celeba_glasses", "svhn_slo")

FIGURES = (fig1, fig2, fig3, fig4, fig5, fig6, fig7, fig8, fig9, fig10, fig11, fig12, fig13, fig14, fig15, fig16,
           fig17)
CLAIMS: list[Claim] = [claim for figure in FIGURES for claim in figure.CLAIMS]
