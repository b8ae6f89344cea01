"""How far a verdict is from flipping, and what moves it: the margins that make a verdict "fragile".

Each term's margin is signed, in the check's own units (positive on the passing side), and relative to the threshold
where that is not 0. What moves a term is measured, never assumed:

- where two or more seeds ran, the check is run again on each seed alone and the sample sd (ddof = 1) of that term's
  per-seed values is what seeds move it by;
- where one seed ran and the build made the stores' rounding twins (``featlearn.pipeline.twins``: the same runs with
  every initial weight one unit in the last place away), the check is run again on the twins and ``TWIN_FACTOR``
  times the term's gap between the two is what rounding moves it by: what another CPU's or a GPU's kernels carry a
  run to, as training amplifies a last-bit difference;
- otherwise (a computation that trains nothing), only a rounding floor, ``ROUNDING`` (relative to the larger of the
  value and the threshold), which is what float32 arithmetic on another machine can move it by.

The term that decides the verdict is the passing term closest to flipping (a pass) or the failing term furthest from
it (a failure: every failing term must flip before it passes). Where that term's margin is no larger than what
moves it, the verdict is "fragile": the check's direction is kept in its status, but it is shown as neither passed
nor failed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import xarray as xr

from featlearn.claims.reading import fmt, seeds_ran
from featlearn.claims.terms import Outcome

ROUNDING = 1e-6  # what rounding moves a value by, relative to max(|value|, |threshold|): float32's eps 1.2e-7, and room
# A twin is one draw of where rounding carries a run; another machine's build is another draw, and the gap between two
# draws is as likely to be larger as smaller: 3× one measured gap covers another draw's gap with ~80% probability when
# both are normal (the ratio of two half-normals).
TWIN_FACTOR = 3.0


@dataclass(frozen=True)
class Margin:
    """How far a verdict is from flipping: the deciding term, its signed ``margin`` (and ``relative`` to the threshold;
    None where the threshold is 0), what moves it (``moved_by``: the seeds' sd, the twins' gap or the rounding floor)
    and how many ``seeds`` that was measured over (1: no spread over seeds was measured)."""

    what: str
    margin: float
    relative: float | None
    moved_by: float
    seeds: int
    twin: bool = False  # moved_by measured on the stores' rounding twins

    @property
    def fragile(self) -> bool:
        return abs(self.margin) <= self.moved_by

    @property
    def source(self) -> str:
        return "seeds" if self.seeds > 1 else "twin" if self.twin else "rounding"


def per_seed(stores: Sequence[xr.Dataset]) -> list[list[xr.Dataset]]:
    """The stores cut to each seed that ran in all of them (the seed axis kept, of length 1), for measuring what
    seeds move a check by; [] where fewer than two seeds ran or no store has a seed axis."""
    masks = [m for ds in stores if (m := seeds_ran(ds)) is not None]
    if not masks or len({m.size for m in masks}) != 1:
        return []
    ran = np.flatnonzero(np.logical_and.reduce(masks))
    if ran.size < 2:
        return []
    return [[ds.isel(seed=[int(i)]) if "seed" in ds.dims else ds for ds in stores] for i in ran]


def _spreads(outcome: Outcome, seeds: Sequence[Outcome]) -> list[float] | None:
    """Per term of ``outcome``, the sample sd of its value over the one-seed outcomes (None: fewer than two seeds
    gave the same terms with finite values)."""
    shape = [t.what for t in outcome.terms]
    rows = [[t.value for t in o.terms] for o in seeds if [t.what for t in o.terms] == shape]
    rows = [r for r in rows if all(math.isfinite(v) for v in r)]
    if len(rows) < 2:
        return None
    return [float(sd) for sd in np.std(np.array(rows), axis=0, ddof=1)]


def _twin_gaps(outcome: Outcome, twin: Outcome | None) -> list[float] | None:
    """Per term of ``outcome``, ``TWIN_FACTOR`` times its gap to the same term on the rounding twins (None: no twin,
    or one whose terms differ or are not finite)."""
    if twin is None or [t.what for t in twin.terms] != [t.what for t in outcome.terms]:
        return None
    gaps = [TWIN_FACTOR * abs(a.value - b.value) for a, b in zip(outcome.terms, twin.terms)]
    return gaps if all(math.isfinite(g) for g in gaps) else None


def margin(outcome: Outcome, seeds: Sequence[Outcome] = (), twin: Outcome | None = None) -> Margin | None:
    """The margin of ``outcome``'s verdict and what moves it (see the module's docstring), given the same check run
    on each seed alone and on the rounding twins; None where a term is not finite."""
    terms = outcome.terms
    if not all(math.isfinite(t.value) and math.isfinite(t.threshold) for t in terms):
        return None
    spreads = _spreads(outcome, seeds)
    gaps = None if spreads is not None else _twin_gaps(outcome, twin)
    floors = [ROUNDING * max(abs(t.value), abs(t.threshold)) for t in terms]
    moved = [max(f, s) for f, s in zip(floors, spreads or gaps or floors)]
    n = len(seeds) if spreads is not None else 1

    def room(i: int) -> float:  # how many times what moves it the term's margin is
        if moved[i] > 0:
            return abs(terms[i].margin) / moved[i]
        return math.inf if terms[i].margin else 0.0  # exactly on a threshold of 0: as close as it gets

    if outcome.passed:
        i = min(range(len(terms)), key=room)
    else:
        i = max((j for j, t in enumerate(terms) if not t.holds), key=room)
    t = terms[i]
    return Margin(t.what, t.margin, t.margin / abs(t.threshold) if t.threshold else None, moved[i], n,
                  gaps is not None)


def margin_text(m: Margin | None) -> str:
    """'+0.12 (+15%) on mean ρ; seeds move it by 0.02 (3 seeds)', for tables and logs ('' without a margin)."""
    if m is None:
        return ""
    relative = "" if m.relative is None else (f" ({100 * m.relative:+.3g}%)" if abs(m.relative) < 10
                                              else f" ({m.relative:+.3g}× the threshold)")
    moved = {"seeds": f"seeds move it by {fmt(m.moved_by)} ({m.seeds} seeds)",
             "twin": f"rounding moves it by {fmt(m.moved_by)} ({TWIN_FACTOR:g}× its rounding twin's gap)",
             "rounding": f"rounding moves it by {fmt(m.moved_by)} (no twin, no spread over seeds)"}[m.source]
    return f"{'+' if m.margin >= 0 else ''}{fmt(m.margin)}{relative} on {m.what}; {moved}"
