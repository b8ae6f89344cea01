"""The papers' claims as checks over the metric stores: one package per paper, one module per figure, as the figures.

A claim (``core``) is a check over named stores that returns its criterion as terms and the facts a diagnosis reads
(``terms``), through the store readers of ``reading``; a failure carries the finding of its diagnosis, its evidence
kept as numbers with their source (``diagnoses``), and every verdict its margin (``margins``). ``records`` writes a
paper's checks to its claims file and reads them back; ``report`` renders them: the markdown table, the HTML page of
the Snakemake report and the blocks of docs/claims.md, filling each finding's text with its evidence.

A figure's claims are the module ``<paper>/fig<N>.py``, with ``STORES`` (the stores its claims read, a literal the
build reads without importing it) and ``CLAIMS``; they are found from the file name, as the figures are, so a new
figure's claims are one new file. Its paper's other modules (``common``, ``real``…) are helpers the figures share.
This package imports none of them: planning the build reads it (``figure_modules``) and must stay light.
"""

from __future__ import annotations

import re
from pathlib import Path


def figure_modules(paper: str) -> list[str]:
    """The claims module of each figure of ``paper`` (``featlearn.claims.<paper>.fig<N>``), in figure order."""
    found = [int(m[1]) for p in (Path(__file__).parent / paper).glob("fig*.py")
             if (m := re.fullmatch(r"fig(\d+)", p.stem))]
    return [f"{__name__}.{paper}.fig{n}" for n in sorted(found)]
