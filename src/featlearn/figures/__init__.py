"""Figure rendering: one module per figure, each with EXPERIMENTS and render(stores, out).

The figures are found from their modules (``<paper>/fig<N>.py``), so a new figure is one new file."""

from __future__ import annotations

import re
from pathlib import Path

PAPERS = ("alignment", "collapse", "tangent")


def figure_numbers() -> dict[str, list[int]]:
    """Every figure this package draws, by paper: the N of each ``<paper>/fig<N>.py``, in order."""
    here = Path(__file__).parent
    found = {paper: [int(m[1]) for p in (here / paper).glob("fig*.py") if (m := re.fullmatch(r"fig(\d+)", p.stem))]
             for paper in PAPERS}
    return {paper: sorted(numbers) for paper, numbers in found.items()}
