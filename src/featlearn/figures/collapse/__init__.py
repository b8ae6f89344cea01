"""Figures of the collapse paper (Deep RFM: Figs 1, 3–6); docs/figures/collapse.md."""
