"""Claims of "Feature learning as alignment" (docs/figures/alignment.md, Claims), one module per figure found
from its file name as the figures are: its checks, its claims and the diagnoses of those that fail.

Correlations are the paper's ρ, the ``cosine`` convention, except Figs 2, 13 and 16 (the authors' Pearson).
Thresholds that the paper does not give are ours and stated in each claim's criterion. ``common`` holds what several
figures read alike, ``real`` the checks of the real-data figures (2, 13–15), ``spectra`` those of Figs 8–10.
"""
