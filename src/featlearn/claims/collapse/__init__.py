"""Claims of "AGOP as a mechanism for deep neural collapse" (docs/figures/collapse.md, Claims), one module per
figure found from its file name as the figures are (Fig 2 draws no claim of its own: Figs 7 and 8 carry its panels').

``deep_rfm`` holds the checks of the Deep RFM figures (1, 3–6), ``networks`` those of the neural networks' (7–12).
The thresholds are ours, which the paper does not give.
"""
