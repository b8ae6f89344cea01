"""Claims as data: each paper claim is a small check over metric stores, and its result is a record.

A ``Claim`` names the stores it reads and a function that turns them into an ``Outcome`` (passed?, the measured
value as text and as a number). ``evaluate`` runs it and never raises: a store that was not built, a variable or
coordinate a store lacks, or values that are all NaN give status "not measured" with the reason; a store whose
``diverged`` flag marks a run, or NaNs left among the values a claim reads, fail the claim and say so. So a claim
that does not hold is reported, never a broken build.

Stores of several runs may share padded axes: a seed not run at this scale is all NaN, and a dataset trained for
fewer epochs is NaN after its end. ``seed_mean`` skips the first, ``final`` (the last finite time point of each
series) the second.

A claim may carry a ``Diagnosis``: why it fails where it is known to, what was tried, whether the cause is the
small scale, stand-in data or the paper's own construction, and the ``Condition`` under which all that holds (the
scale, the number of seeds, stand-in data, the measured numbers), checked on the stores it is applied to. Its text
takes its numbers from the measurement ("{low:.2f}" filled from the check's ``Outcome.facts``), never from the build
it was written against. A failed check carries the ``Finding`` of that diagnosis where its condition holds there (a
quick-scale or one-seed diagnosis does not excuse a failure with the paper's three seeds); a failure nobody has
explained there carries an "open" one saying so. Stores of the paper-scale rehearsal (``scale`` "paper-rehearsal": a
few optimizer steps, the first seed, two snapshots at the paper's shapes) fail for that reason, whatever the claim's
diagnosis says.

Margins. A check states its criterion as ``Term``s, each a measured number against its threshold (``at_least``,
``above``, ``at_most``, ``below``), and passes when every term holds, so a verdict is never a bare boolean. Each
term's margin is signed, in the check's own units (positive on the passing side), and relative to the threshold
where that is not 0. What moves a term is measured the same way for every claim: where two or more seeds ran, the
check is run again on each seed alone and the sample sd (ddof = 1) of that term's per-seed values is what seeds move
it by; where one seed ran (or the stores have no seed axis), only a rounding floor, ``ROUNDING`` (relative to the
larger of the value and the threshold), which is what float32 arithmetic on another machine can move it by. The
term that decides the verdict is the passing term closest to flipping (a pass) or the failing term furthest from
it (a failure: every failing term must flip before it passes). Where that term's margin is no larger than what
moves it, the verdict is "fragile": the check's direction is kept in ``status``, but it is shown as neither passed
nor failed. One seed's spread is not measured, so a one-seed verdict is marked fragile only within rounding.
"""

from __future__ import annotations

import json
import logging
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import xarray as xr

log = logging.getLogger(__name__)

PASSED, FAILED, NOT_MEASURED, FRAGILE = "passed", "failed", "not measured", "fragile"
VERDICTS = (PASSED, FRAGILE, FAILED, NOT_MEASURED)  # the states a reader sees, in the order counts list them
ROUNDING = 1e-6  # what rounding moves a value by, relative to max(|value|, |threshold|): float32's eps 1.2e-7, and room
QUICK_SCALE, STAND_IN, CONSTRUCTION, OPEN = "quick scale", "stand-in data", "paper's construction", "open"
REHEARSAL = "rehearsal"
CAUSES = (QUICK_SCALE, STAND_IN, CONSTRUCTION, OPEN, REHEARSAL)
PAPER_SCALE, REHEARSAL_SCALE = "paper", "paper-rehearsal"  # the stores' ``scale`` label of each
PROVENANCE_ATTRS = ("scale", "data_source", "git_commit", "git_dirty", "created", "rule", "packages")


class NotMeasured(Exception):
    """The stores cannot give this claim a value (missing store, variable or coordinate; all values NaN)."""


class Diverged(Exception):
    """Some values the claim needs are NaN: a run diverged, so the claim fails with this reason."""


SENSES = (">=", ">", "<=", "<")


@dataclass(frozen=True)
class Term:
    """One comparison of a criterion: ``value`` against ``threshold`` (``sense`` one of SENSES), so that the margin to
    the threshold is known, not just the verdict."""

    what: str
    value: float
    sense: str
    threshold: float

    def __post_init__(self) -> None:
        if self.sense not in SENSES:
            raise TypeError(f"Term.sense must be one of {SENSES} (got {self.sense!r})")

    @property
    def margin(self) -> float:
        """Signed distance to the threshold in the value's units: ≥ 0 on the passing side."""
        return self.value - self.threshold if self.sense in (">=", ">") else self.threshold - self.value

    @property
    def holds(self) -> bool:
        return self.margin > 0 or (self.margin == 0 and self.sense in (">=", "<="))


def at_least(what: str, value: float, threshold: float) -> Term:
    return Term(what, float(value), ">=", float(threshold))


def above(what: str, value: float, threshold: float) -> Term:
    return Term(what, float(value), ">", float(threshold))


def at_most(what: str, value: float, threshold: float) -> Term:
    return Term(what, float(value), "<=", float(threshold))


def below(what: str, value: float, threshold: float) -> Term:
    return Term(what, float(value), "<", float(threshold))


def named(prefix: str, terms: Sequence[Term]) -> tuple[Term, ...]:
    """The terms of a sub-check under ``prefix`` ("cos: …"), when one check combines two."""
    return tuple(Term(f"{prefix}: {t.what}", t.value, t.sense, t.threshold) for t in terms)


@dataclass(frozen=True)
class Outcome:
    """What a check measured: a short text of the numbers, the criterion's ``terms`` (it passes when all hold), the
    headline number, and ``facts``: named numbers (or per-seed texts) that a diagnosis's condition and text read."""

    measured: str
    terms: tuple[Term, ...]
    value: float | None = None
    facts: Mapping[str, float | str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        terms = tuple(self.terms) if isinstance(self.terms, Sequence) and not isinstance(self.terms, str) else ()
        if not terms or not all(isinstance(t, Term) for t in terms):
            raise TypeError(f"an Outcome states its criterion as Terms, at least one (got {self.terms!r})")
        object.__setattr__(self, "terms", terms)

    @property
    def passed(self) -> bool:
        return all(t.holds for t in self.terms)


StoreCheck = Callable[..., Outcome]  # called with the claim's stores, in order


@dataclass(frozen=True)
class Measured:
    """Where and what a claim measured, which a diagnosis's condition is checked on."""

    scales: tuple[str, ...]  # the stores' ``scale`` attributes
    seeds: int | None  # the most seeds that ran in any of the stores (None: no store has a ``seed`` axis)
    standin: bool  # some store holds stand-in data
    facts: Mapping[str, float | str] = field(default_factory=dict)  # the check's named numbers (none when it raised)


@dataclass(frozen=True)
class Condition:
    """Where a diagnosis holds, in words (``text``) and as a ``test`` of what was measured; ``a & b`` needs both."""

    text: str
    test: Callable[[Measured], bool] = field(repr=False, compare=False)

    def __and__(self, other: Condition) -> Condition:
        return Condition(f"{self.text}, {other.text}", lambda m: self.test(m) and other.test(m))


ANY_SCALE = Condition("at every scale", lambda m: True)
BELOW_PAPER = Condition("below the paper scale", lambda m: bool(m.scales) and set(m.scales) <= {"smoke", "quick"})
AT_PAPER = Condition("at the paper scale", lambda m: m.scales == (PAPER_SCALE,))
ON_STAND_IN = Condition("on stand-in data", lambda m: m.standin)


def seeds(n: int) -> Condition:
    """Exactly ``n`` seeds ran (a one-seed diagnosis does not hold where three did)."""
    return Condition(f"{n} seed{'s' if n != 1 else ''}", lambda m: m.seeds == n)


def numbers(text: str, test: Callable[[Mapping[str, float | str]], bool]) -> Condition:
    """A condition on the check's numbers (``Outcome.facts``); it does not hold where they were not measured."""
    return Condition(text, lambda m: bool(m.facts) and test(m.facts))


# The condition a cause carries whatever the diagnosis adds: the small scale only below the paper's, stand-in data
# only on a stand-in.
CAUSE_CONDITION = {QUICK_SCALE: BELOW_PAPER, STAND_IN: ON_STAND_IN}


@dataclass(frozen=True)
class Finding:
    """A diagnosis as it applies to one set of stores: its cause, the evidence with the measured numbers filled in,
    the alternatives ``tried``, and ``holds``, the condition that held there, in words."""

    cause: str
    why: str
    tried: str = ""
    holds: str = ""

    def text(self) -> str:
        """'open [at the paper scale, 3 seeds]: why (tried: …)', for tables and reports."""
        where = f" [{self.holds}]" if self.holds else ""
        return f"{self.cause}{where}: {self.why}" + (f" (tried: {self.tried})" if self.tried else "")


@dataclass(frozen=True)
class Diagnosis:
    """Why a claim fails: the ``cause`` (one of CAUSES), the evidence in words, the alternatives ``tried``, and
    ``when`` it holds, checked on the stores it is applied to.

    ``why`` and ``tried`` may name the check's facts in ``str.format`` fields ("UC {uc_low:.2f}"), filled from the
    measurement the diagnosis is applied to. A "quick scale" cause holds only below the paper scale and a "stand-in
    data" cause only on a stand-in, whatever ``when`` says.
    """

    cause: str
    why: str
    tried: str = ""
    when: Condition = field(kw_only=True)

    def __post_init__(self) -> None:
        if self.cause not in CAUSES:
            raise ValueError(f"Diagnosis.cause must be one of {CAUSES} (got {self.cause!r})")

    def apply(self, m: Measured) -> Finding | None:
        """The finding on what was measured, or None where the diagnosis does not hold (or cannot state its
        numbers: a fact its text names was not measured)."""
        condition, implied = self.when, CAUSE_CONDITION.get(self.cause)
        if implied is not None and implied.text not in condition.text:
            condition = condition & implied
        try:
            if not condition.test(m):
                return None
            return Finding(self.cause, self.why.format_map(m.facts), self.tried.format_map(m.facts), condition.text)
        except (KeyError, IndexError, ValueError):
            return None


@dataclass(frozen=True)
class Claim:
    """One claim of a paper's checklist, as a check over named metric stores.

    ``check`` is called with the stores in the order of ``stores``; ``paper_value`` is the paper's number as
    text ("" where the paper gives none); ``criterion`` says in words what passes. A failure carries the first of
    ``diagnoses`` whose condition holds where it was measured (e.g. one for the quick scale's one seed, one for the
    paper's three).
    """

    id: str
    figure: str
    statement: str
    paper_value: str
    criterion: str
    stores: tuple[str, ...]
    check: StoreCheck = field(repr=False, compare=False)
    diagnoses: tuple[Diagnosis, ...] = ()


@dataclass(frozen=True)
class Margin:
    """How far a verdict is from flipping: the deciding term, its signed ``margin`` (and ``relative`` to the threshold;
    None where the threshold is 0), what moves it (``moved_by``: the seeds' sd, or the rounding floor) and how many
    ``seeds`` that was measured over (1: no spread over seeds was measured, rounding only)."""

    what: str
    margin: float
    relative: float | None
    moved_by: float
    seeds: int

    @property
    def fragile(self) -> bool:
        return abs(self.margin) <= self.moved_by

    @property
    def source(self) -> str:
        return "seeds" if self.seeds > 1 else "rounding"


@dataclass(frozen=True)
class Check:
    """The result of one claim on one set of stores: what the JSON, the table and the report show. ``status`` is the
    direction the check points (passed, failed, not measured); ``verdict`` is what a reader should take from it, fragile
    where the margin is within what seeds or rounding move it by."""

    id: str
    paper: str
    figure: str
    statement: str
    paper_value: str
    criterion: str
    stores: tuple[str, ...]
    status: str
    measured: str
    value: float | None
    note: str
    diagnosis: Finding | None = None
    margin: Margin | None = None

    @property
    def verdict(self) -> str:
        return FRAGILE if self.margin is not None and self.margin.fragile else self.status


def values(da: xr.DataArray, what: str) -> np.ndarray:
    """The float values of ``da``; NotMeasured if all are NaN, Diverged if some are (named by ``what``)."""
    v = np.asarray(da, dtype=float)
    bad = ~np.isfinite(v)
    if v.size == 0 or bad.all():
        raise NotMeasured(f"{what}: no finite value in the store")
    if bad.any():
        raise Diverged(f"{what}: {int(bad.sum())} of {v.size} values are NaN/inf (a diverged run, or one not run "
                       "at this scale)")
    return v


def scalar(da: xr.DataArray, what: str) -> float:
    """One finite number from a DataArray that should hold exactly one (after the caller's selections)."""
    v = values(da, what)
    if v.size != 1:
        raise NotMeasured(f"{what}: expected one value, the store has {v.size} (dims {da.dims})")
    return float(v.ravel()[0])


def convention(da: xr.DataArray, name: str) -> xr.DataArray:
    """Select a correlation convention ("cosine" or "pearson") where the variable has that dimension."""
    return da.sel(convention=name) if "convention" in da.dims else da


def final(da: xr.DataArray) -> xr.DataArray:
    """Each series' value at its last finite point along the time dimension ``step`` (every store's): the end of
    training even where runs of different lengths share a padded axis (all-NaN series stay NaN)."""
    index = (da.notnull() * xr.DataArray(np.arange(da.sizes["step"]), dims="step")).argmax("step")
    return da.isel(step=index)


def first(da: xr.DataArray) -> xr.DataArray:
    """Each series' value at its first finite point along ``step``: a centered quantity is undefined (NaN) at init,
    so "early" is the first measurement where it exists."""
    return da.isel(step=da.notnull().argmax("step"))


def seed_mean(da: xr.DataArray) -> xr.DataArray:
    """Mean over seeds that ran: a seed not run at this scale (all NaN) is left out; no seed at all stays NaN."""
    if "seed" not in da.dims:
        return da
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices: "Mean of empty slice"
        return da.mean("seed", skipna=True)


def diverged_runs(ds: xr.Dataset) -> str:
    """'2 of 8 runs diverged' from the store's ``diverged`` flag ('' when none did or the store has no flag)."""
    if "diverged" not in ds:
        return ""
    flags = np.asarray(ds.diverged, dtype=float)
    n = int(np.nansum(flags == 1))
    return f"{n} of {flags.size} runs diverged" if n else ""


def fmt(x: float, digits: int = 3) -> str:
    """Short number text: 3 significant digits, scientific when tiny or huge."""
    if not math.isfinite(x):
        return str(x)
    if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e4):
        return f"{x:.{digits - 1}e}"
    return f"{x:.{digits}g}"


def slash(v: np.ndarray) -> str:
    """'0.62 / 0.9 / 0.95': one number per entry, for values along a sweep."""
    return " / ".join(fmt(float(x)) for x in np.asarray(v, dtype=float).ravel())


def mean_sd(v: np.ndarray) -> str:
    """'0.962 ± 0.004': the mean and the sample sd (ddof = 1), the sd readers of ML papers expect; just the value for
    one number, whose sample sd is undefined."""
    v = np.asarray(v, dtype=float).ravel()
    return fmt(float(v.mean())) if v.size == 1 else f"{fmt(float(v.mean()))} ± {fmt(float(v.std(ddof=1)))}"


def _seeds_ran(ds: xr.Dataset) -> np.ndarray | None:
    """Which entries of the ``seed`` axis hold a finite value in some variable (None: no seed axis)."""
    if "seed" not in ds.dims:
        return None
    ran = np.zeros(ds.sizes["seed"], dtype=bool)
    for da in ds.data_vars.values():
        if "seed" in da.dims and np.issubdtype(da.dtype, np.number):
            v = np.moveaxis(np.asarray(da, dtype=float), da.dims.index("seed"), 0)
            ran |= np.isfinite(v.reshape(v.shape[0], -1)).any(axis=1)
    return ran


def _seeds_run(ds: xr.Dataset) -> int | None:
    """How many entries of the ``seed`` axis hold a finite value in some variable (None: no seed axis)."""
    ran = _seeds_ran(ds)
    return None if ran is None else int(ran.sum())


def measured_on(stores: Sequence[xr.Dataset], facts: Mapping[str, float | str] | None = None) -> Measured:
    """The stores' scales, seeds that ran and stand-in data, with the check's facts: where a result was measured."""
    counts = [n for ds in stores if (n := _seeds_run(ds)) is not None]
    return Measured(tuple(sorted({str(ds.attrs.get("scale", "?")) for ds in stores})),
                    max(counts) if counts else None,
                    any("stand-in" in str(ds.attrs.get("data_source", "")) for ds in stores), dict(facts or {}))


def _context(m: Measured) -> str:
    """Scale, seeds and stand-in data of the stores, so that a failure can be read against where it was measured."""
    seeds_text = f"; {m.seeds} seed{'s' if m.seeds != 1 else ''}" if m.seeds is not None else ""
    return f"scale {', '.join(m.scales)}{seeds_text}" + ("; stand-in data" if m.standin else "")


REHEARSED = Finding(
    REHEARSAL, "a rehearsal of the paper scale runs the paper's shapes for a few optimizer steps, on the first seed, "
    "with two snapshots: it tests the pipeline, not the paper's claim", holds=f"stores of scale {REHEARSAL_SCALE}")


def diagnose(diagnoses: Sequence[Diagnosis], m: Measured) -> Finding:
    """The finding of a failure measured as ``m``: the rehearsal's on rehearsal stores, else the first of the claim's
    diagnoses whose condition holds there, else an open one that says where it was measured."""
    if REHEARSAL_SCALE in m.scales:
        return REHEARSED
    for diagnosis in diagnoses:
        if (finding := diagnosis.apply(m)) is not None:
            return finding
    known = "; ".join(f"{d.cause} ({d.when.text})" for d in diagnoses)
    known = f"; the diagnoses recorded elsewhere do not hold here: {known}" if known else ""
    return Finding(OPEN, f"not yet diagnosed at {_context(m)}{known}")


def per_seed(stores: Sequence[xr.Dataset]) -> list[list[xr.Dataset]]:
    """The stores cut to each seed that ran in all of them (the seed axis kept, of length 1), for measuring what
    seeds move a check by; [] where fewer than two seeds ran or no store has a seed axis."""
    masks = [m for ds in stores if (m := _seeds_ran(ds)) is not None]
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


def margin(outcome: Outcome, seeds: Sequence[Outcome] = ()) -> Margin | None:
    """The margin of ``outcome``'s verdict and what moves it (see the module's "Margins"), given the same check run
    on each seed alone; None where a term is not finite."""
    terms = outcome.terms
    if not all(math.isfinite(t.value) and math.isfinite(t.threshold) for t in terms):
        return None
    spreads = _spreads(outcome, seeds)
    floors = [ROUNDING * max(abs(t.value), abs(t.threshold)) for t in terms]
    moved = [max(f, s) for f, s in zip(floors, spreads or floors)]
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
    return Margin(t.what, t.margin, t.margin / abs(t.threshold) if t.threshold else None, moved[i], n)


def evaluate(claim: Claim, paper: str, stores: Mapping[str, xr.Dataset | None]) -> Check:
    """Run one claim on the stores it names; a missing store, variable or coordinate is "not measured". A verdict
    carries its margin, with what seeds (the check run on each seed alone) or rounding move it by."""

    def result(status: str, measured: str = "", value: float | None = None, note: str = "",
               facts: Mapping[str, float | str] | None = None, moved: Margin | None = None) -> Check:
        diagnosis = diagnose(claim.diagnoses, measured_on(inputs, facts)) if status == FAILED else None
        return Check(claim.id, paper, claim.figure, claim.statement, claim.paper_value, claim.criterion,
                     claim.stores, status, measured, value, note, diagnosis, moved)

    missing = [name for name in claim.stores if stores.get(name) is None]
    inputs = [stores[name] for name in claim.stores if name not in missing]
    if missing:
        return result(NOT_MEASURED, note=f"store {', '.join(missing)} not built in this build (its data is not on "
                                         "this machine, or its experiment is not in config.yaml)")
    context = _context(measured_on(inputs))
    try:
        outcome = claim.check(*inputs)
    except NotMeasured as err:
        return result(NOT_MEASURED, note=f"{err}; {context}")
    except Diverged as err:
        return result(FAILED, measured="NaN", note=f"{err}; {context}")
    except (AttributeError, KeyError, IndexError, ValueError) as err:
        # A variable, dimension or coordinate the check reads is not in the store (e.g. a smaller scale's sweep).
        return result(NOT_MEASURED, note=f"the store lacks what the check reads, {type(err).__name__} {err}; "
                                         f"{context}")
    value = outcome.value if outcome.value is not None and math.isfinite(outcome.value) else None
    seeds = []
    for cut in per_seed(inputs):
        try:
            seeds.append(claim.check(*cut))
        except (NotMeasured, Diverged, AttributeError, KeyError, IndexError, ValueError):
            continue  # a seed the check cannot read alone does not count toward the spread
    moved = margin(outcome, seeds)
    diverged = [f"{name}: {runs}" for name, ds in zip(claim.stores, inputs) if (runs := diverged_runs(ds))]
    if diverged:
        return result(FAILED, outcome.measured, value, f"{'; '.join(diverged)} (measured on their values before "
                                                       f"the divergence); {context}", outcome.facts, moved)
    return result(PASSED if outcome.passed else FAILED, outcome.measured, value, context, outcome.facts, moved)


def evaluate_all(claims: Sequence[Claim], paper: str, stores: Mapping[str, xr.Dataset | None]) -> list[Check]:
    """Every claim of a paper; never raises."""
    checks = [evaluate(claim, paper, stores) for claim in claims]
    for c in checks:
        log.info("%s %s: %s %s %s %s", c.id, c.verdict, c.measured, c.criterion, margin_text(c.margin), c.note)
    return checks


def store_names(claims: Sequence[Claim]) -> list[str]:
    """The stores a list of claims reads, in first-use order (a rule's inputs)."""
    return list(dict.fromkeys(name for claim in claims for name in claim.stores))


def provenance(stores: Mapping[str, xr.Dataset | None]) -> dict[str, dict[str, str] | None]:
    """Per store, its provenance attributes (scale, data source, commit, creation time, ...); None if not built."""
    return {
        name: None if ds is None else {k: str(ds.attrs[k]) for k in PROVENANCE_ATTRS if k in ds.attrs}
        for name, ds in stores.items()
    }


def margin_text(m: Margin | None) -> str:
    """'+0.12 (+15%) on mean ρ; seeds move it by 0.02 (3 seeds)', for tables and logs ('' without a margin)."""
    if m is None:
        return ""
    relative = "" if m.relative is None else (f" ({100 * m.relative:+.3g}%)" if abs(m.relative) < 10
                                              else f" ({m.relative:+.3g}× the threshold)")
    moved = (f"seeds move it by {fmt(m.moved_by)} ({m.seeds} seeds)" if m.seeds > 1
             else f"rounding moves it by {fmt(m.moved_by)} (no spread over seeds)")
    return f"{'+' if m.margin >= 0 else ''}{fmt(m.margin)}{relative} on {m.what}; {moved}"


def fragile_text(c: Check) -> str:
    """'passed by 0.004; seeds move it by 0.02': why a fragile verdict is neither passed nor failed."""
    if c.margin is None:
        return ""
    return f"{c.status} by {fmt(abs(c.margin.margin))}; {c.margin.source} move it by {fmt(c.margin.moved_by)}"


def to_json(paper: str, scale: str, checks: Sequence[Check], stores: Mapping[str, xr.Dataset | None]) -> str:
    """The claims file of one paper: its checks (each with its verdict and margin), a count per verdict, and the
    stores' provenance. ``scale`` is the build's label (the rule's TAG: "paper-rehearsal" for a rehearsal, whose file
    also says ``"rehearsal": true``)."""
    counts = {s: sum(c.verdict == s for c in checks) for s in VERDICTS}
    doc = {"paper": paper, "scale": scale, "rehearsal": scale == REHEARSAL_SCALE, "counts": counts,
           "stores": provenance(stores),
           "checks": [{**asdict(c), "verdict": c.verdict,
                       "fragile": c.verdict == FRAGILE} for c in checks]}
    return json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False)


def from_json(text: str) -> tuple[dict, list[Check]]:
    """A claims file back as (its header, its checks); ``verdict`` and ``fragile`` are derived, so not read back."""
    doc = json.loads(text)
    checks = []
    for c in doc.pop("checks"):
        c = {k: v for k, v in c.items() if k not in ("verdict", "fragile")}
        checks.append(Check(**{**c, "stores": tuple(c["stores"]),
                               "diagnosis": Finding(**c["diagnosis"]) if c.get("diagnosis") else None,
                               "margin": Margin(**c["margin"]) if c.get("margin") else None}))
    return doc, checks
