"""Figures of the collapse paper (Deep RFM: Figs 1, 3–6); spec ../shared/specs/collapse.md §4."""
