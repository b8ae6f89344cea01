"""Whether a file of one build differs from another build's by rounding alone: its gap held to the movement rounding
produced in the build itself, measured by its rounding twin.

Every trained experiment ``E`` of a build has a twin ``E_twin``: its first seed again, every initial weight nudged by
one ulp. The twin's files sit in the build's manifest beside ``E``'s under the same unit ids
(``runs/E_twin/<unit>.<hash>.pt``, ``metrics/E_twin/<unit>.<hash>.nc``, ``metrics/E_twin.<hash>.nc``), so the gap
between a file and its twin, per variable, is how far one draw of rounding moves it. A file of another build is
"within rounding" when each variable's gap is within ``TWIN_FACTOR`` times that movement (never below ``GPU_RTOL``),
and a file of an experiment without a twin (of a kind that does not amplify rounding: reversing, first_order,
tangent_penalties) only when within ``GPU_RTOL``. A twin's own files take their experiment's measure (one gap
measures both).

Gaps are read from a manifest's summaries (finite count, sum, norm, min, max), each relative to the variable's scale,
not to the summary itself: a minimum near zero that moves by 1e-9 is not a 100 % difference.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from featlearn.claims.margins import TWIN_FACTOR
from featlearn.pipeline.twins import SUFFIX as TWIN

GPU_RTOL = 1e-5  # measured between CUDA and CPU stores of the smoke build (largest 1.4e-6); every tolerance's floor
BITWISE, WITHIN, BEYOND = "bitwise", "within rounding", "beyond rounding"

_PATH = re.compile(r"^(?P<kind>runs|metrics)/(?P<experiment>[^/]+?)(?:/(?P<unit>[^/]+))?\.(?P<hash>[0-9a-f]+)"
                   r"\.(?P<ext>pt|nc)$")


@dataclass(frozen=True)
class Place:
    """What a manifest's file is, without its hash: ``unit`` is None for an experiment's store."""

    kind: str
    experiment: str
    unit: str | None
    ext: str

    def twin(self) -> Place:
        return Place(self.kind, self.experiment + TWIN, self.unit, self.ext)


def place(path: str) -> Place | None:
    """The place of ``runs/E/<unit>.<hash>.pt``, ``metrics/E/<unit>.<hash>.nc`` or ``metrics/E.<hash>.nc``."""
    m = _PATH.match(path)
    return Place(m["kind"], m["experiment"], m["unit"], m["ext"]) if m else None


def _scales(s: dict) -> dict[str, float]:
    """What each summary is measured against: the largest magnitude for min and max, the norm for the norm, and the
    largest sum the norm allows (√finite · norm) for the sum, which may cancel to near zero."""
    top = max(abs(s["min"]), abs(s["max"]))
    return {"min": top, "max": top, "norm": s["norm"], "sum": math.sqrt(s["finite"]) * s["norm"]}


def summary_gap(a: dict | None, b: dict | None) -> tuple[float, str]:
    """How far two summaries of a variable are apart, the largest of their gaps relative to the variable's scale,
    and which summary: infinite for text, or where the count of finite values moved (never rounding's doing here)."""
    if a is None or b is None:
        return math.inf, "text"
    if a.get("finite") != b.get("finite"):
        return math.inf, "finite count"
    if not a.get("finite"):
        return 0.0, "—"
    scale_a, scale_b = _scales(a), _scales(b)
    gaps = {}
    for k in ("sum", "norm", "min", "max"):
        scale = max(scale_a[k], scale_b[k])
        gaps[k] = 0.0 if a[k] == b[k] else abs(a[k] - b[k]) / scale if scale else math.inf
    worst = max(gaps, key=gaps.get)
    return gaps[worst], worst


def variable_gaps(mine: dict, theirs: dict) -> dict[str, tuple[float, str]]:
    """Per variable of one file's two manifest entries: (gap, its summary); 0 where the digests agree, infinite for
    a variable only one entry holds."""
    out = {}
    for name in sorted(set(mine) | set(theirs)):
        a, b = mine.get(name), theirs.get(name)
        if a is None or b is None:
            out[name] = (math.inf, "only in one build")
        elif a["digest"] == b["digest"]:
            out[name] = (0.0, "—")
        else:
            out[name] = summary_gap(a["summary"], b["summary"])
    return out


def _finite_gaps(mine: dict, theirs: dict) -> dict[str, float]:
    return {k: g for k, (g, _) in variable_gaps(mine, theirs).items() if math.isfinite(g)}


def _pooled(gaps: list[dict[str, float]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for g in gaps:
        for k, v in g.items():
            out[k] = max(out.get(k, 0.0), v)
    return out


def sensitivity(files: dict[str, dict]) -> dict[str, dict[str, float]]:
    """Per file of one manifest's ``files`` and per variable, the gap rounding produced: to the unit's twin; for a
    unit without one (another seed), the largest over the experiment's twinned units; for an experiment's store, the
    largest over its unit stores', else (a variable only it holds) to the twin's store where it holds as many values.
    Files without a twin measurement are absent."""
    at = {p: path for path in files if (p := place(path))}
    direct = {path: _finite_gaps(files[path], files[at[p.twin()]]) for p, path in at.items()
              if p.unit is not None and p.twin() in at}
    pooled: dict[tuple[str, str], dict[str, float]] = {}
    for path, gaps in direct.items():
        p = place(path)
        pooled[p.kind, p.experiment] = _pooled([pooled.get((p.kind, p.experiment), {}), gaps])
    out = {}
    for p, path in at.items():
        if path in direct:
            out[path] = direct[path]
        elif p.unit is not None and (p.kind, p.experiment) in pooled:
            out[path] = pooled[p.kind, p.experiment]
        elif p.unit is None:
            twin = files.get(at.get(p.twin()), {})
            if store := _experiment_store(files[path], twin, pooled.get(("metrics", p.experiment))):
                out[path] = store
    return out | _twins_own(at, out)


def _twins_own(at: dict[Place, str], measured: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """A twin's files take their experiment's sensitivity: the gap between the two measures both."""
    out = {}
    for p, path in at.items():
        if p.experiment.endswith(TWIN):
            base = at.get(Place(p.kind, p.experiment.removesuffix(TWIN), p.unit, p.ext))
            if base in measured:
                out[path] = measured[base]
    return out


def _experiment_store(mine: dict, twin: dict, units: dict[str, float] | None) -> dict[str, float]:
    """An experiment store's sensitivity: its unit stores' where they hold the variable, else the gap to the twin's
    store for a variable holding as many finite values there (the twin's store holds the first seed only)."""
    same_size = {k: v for k, v in mine.items() if k in twin and v["summary"] and twin[k]["summary"]
                 and v["summary"].get("finite") == twin[k]["summary"].get("finite")}
    return _finite_gaps(same_size, {k: twin[k] for k in same_size}) | (units or {})


def merged(*measured: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """The sensitivity of several manifests at once (each build's twins): per file and variable the largest."""
    return {path: _pooled([m[path] for m in measured if path in m]) for path in set().union(*measured)}


@dataclass(frozen=True)
class Row:
    """One variable of a differing file: its gap (and which summary), the tolerance, whether rounding was measured."""

    variable: str
    gap: float
    summary: str
    tolerance: float
    measured: bool


@dataclass(frozen=True)
class Verdict:
    """A file's class (``BITWISE``, ``WITHIN``, ``BEYOND``), whether its sensitivity was measured, its rows."""

    path: str
    verdict: str
    measured: bool
    rows: tuple[Row, ...]

    def worst(self) -> Row | None:
        """The row farthest beyond (or nearest to) its tolerance."""
        return max(self.rows, key=lambda r: r.gap / r.tolerance, default=None)


def classify(path: str, mine: dict, theirs: dict, measured: dict[str, float] | None) -> Verdict:
    """Hold one file's entry in a build to its entry in another: bitwise, within the rounding ``measured`` (per
    variable, from ``sensitivity``) predicts, or beyond it."""
    rows = []
    for name, (gap, which) in variable_gaps(mine, theirs).items():
        if name in mine and name in theirs and mine[name]["digest"] == theirs[name]["digest"]:
            continue
        twin = (measured or {}).get(name)
        tolerance = GPU_RTOL if twin is None else max(TWIN_FACTOR * twin, GPU_RTOL)
        rows.append(Row(name, gap, which, tolerance, twin is not None))
    if not rows:
        verdict = BITWISE
    else:
        verdict = WITHIN if all(r.gap <= r.tolerance for r in rows) else BEYOND
    return Verdict(path, verdict, measured is not None, tuple(rows))
