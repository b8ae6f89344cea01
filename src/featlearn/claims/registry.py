"""Each paper's claims, in figure order: its figure modules (``featlearn.claims.figure_modules``) imported by name."""

from __future__ import annotations

import importlib

from featlearn.claims import figure_modules
from featlearn.claims.core import Claim


def claims_of(paper: str) -> list[Claim]:
    """Every claim of ``paper``: each figure module's ``CLAIMS`` in figure order (a claim of several figures, such as
    collapse's "2A, 7", lives in the module of the one its id names)."""
    return [claim for module in figure_modules(paper) for claim in importlib.import_module(module).CLAIMS]
