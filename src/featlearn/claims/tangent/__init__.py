"""Claims of "An adaptive tangent feature perspective" (docs/figures/tangent.md, Claims: F1a–F3c), one module per
figure found from its file name as the figures are. Thresholds are ours, set from pilot runs.
"""
