"""Claims as data: each paper claim is a small check over metric stores, and its result is a record.

A ``Claim`` names the stores it reads and a function that turns them into an ``Outcome`` (passed?, the measured
value as text and as a number). ``evaluate`` runs it and never raises: a store that was not built, a variable or
coordinate a store lacks, or values that are all NaN give status "not measured" with the reason; a store whose
``diverged`` flag marks a run, or NaNs left among the values a claim reads, fail the claim and say so. So a claim
that does not hold is reported, never a broken build.

Stores of several runs may share padded axes: a seed not run at this scale is all NaN, and a dataset trained for
fewer epochs is NaN after its end. ``seed_mean`` skips the first, ``final`` (the last finite time point of each
series) the second.

A claim may carry a ``Diagnosis``: why it fails where it is known to, what was tried, and whether the cause is the
small scale, stand-in data or the paper's own construction. A failed check carries the diagnosis that applies to the
stores it was measured on (a quick-scale diagnosis does not excuse a paper-scale failure); a failure nobody has
explained carries an "open" one saying so.
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

PASSED, FAILED, NOT_MEASURED = "passed", "failed", "not measured"
QUICK_SCALE, STAND_IN, CONSTRUCTION, OPEN = "quick scale", "stand-in data", "paper's construction", "open"
CAUSES = (QUICK_SCALE, STAND_IN, CONSTRUCTION, OPEN)
PROVENANCE_ATTRS = ("scale", "data_source", "git_commit", "git_dirty", "created", "rule", "packages")


class NotMeasured(Exception):
    """The stores cannot give this claim a value (missing store, variable or coordinate; all values NaN)."""


class Diverged(Exception):
    """Some values the claim needs are NaN: a run diverged, so the claim fails with this reason."""


@dataclass(frozen=True)
class Outcome:
    """What a check measured: the verdict, a short text of the numbers, and the headline number."""

    passed: bool
    measured: str
    value: float | None = None


StoreCheck = Callable[..., Outcome]  # called with the claim's stores, in order


@dataclass(frozen=True)
class Diagnosis:
    """Why a claim fails: the ``cause`` (one of CAUSES), the evidence in words, and the alternatives ``tried``.

    A "quick scale" cause applies only below the paper scale, a "stand-in data" cause only to stores measured on a
    stand-in; the paper's construction and open questions apply everywhere.
    """

    cause: str
    why: str
    tried: str = ""

    def __post_init__(self) -> None:
        if self.cause not in CAUSES:
            raise ValueError(f"Diagnosis.cause must be one of {CAUSES} (got {self.cause!r})")

    def text(self) -> str:
        """'quick scale: why (tried: …)', for tables and reports."""
        return f"{self.cause}: {self.why}" + (f" (tried: {self.tried})" if self.tried else "")


@dataclass(frozen=True)
class Claim:
    """One claim of a paper's checklist, as a check over named metric stores.

    ``check`` is called with the stores in the order of ``stores``; ``paper_value`` is the paper's number as
    text ("" where the paper gives none); ``criterion`` says in words what passes.
    """

    id: str
    figure: str
    statement: str
    paper_value: str
    criterion: str
    stores: tuple[str, ...]
    check: StoreCheck = field(repr=False, compare=False)
    diagnosis: Diagnosis | None = None


@dataclass(frozen=True)
class Check:
    """The result of one claim on one set of stores: what the JSON, the table and the report show."""

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
    diagnosis: Diagnosis | None = None


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
    """'0.962 ± 0.004' (or just the value for one number)."""
    v = np.asarray(v, dtype=float).ravel()
    return fmt(float(v.mean())) if v.size == 1 else f"{fmt(float(v.mean()))} ± {fmt(float(v.std()))}"


def _measured_on(stores: Sequence[xr.Dataset]) -> tuple[list[str], bool]:
    """The stores' scales and whether any holds stand-in data: where a result was measured."""
    scales = sorted({str(ds.attrs.get("scale", "?")) for ds in stores})
    return scales, any("stand-in" in str(ds.attrs.get("data_source", "")) for ds in stores)


def _context(stores: Sequence[xr.Dataset]) -> str:
    """Scale and stand-in data of the stores, so that a failure can be read against where it was measured."""
    scales, standin = _measured_on(stores)
    return f"scale {', '.join(scales)}" + ("; stand-in data" if standin else "")


def diagnose(diagnosis: Diagnosis | None, stores: Sequence[xr.Dataset]) -> Diagnosis:
    """The diagnosis of a failure on ``stores``: the claim's own where its cause holds there, else an open one."""
    scales, standin = _measured_on(stores)
    holds = diagnosis is not None and (
        (diagnosis.cause == QUICK_SCALE and "paper" not in scales)
        or (diagnosis.cause == STAND_IN and standin)
        or diagnosis.cause in (CONSTRUCTION, OPEN))
    if holds:
        return diagnosis
    known = f"; the diagnosis recorded elsewhere does not apply here ({diagnosis.text()})" if diagnosis else ""
    return Diagnosis(OPEN, f"not yet diagnosed at {_context(stores)}{known}")


def evaluate(claim: Claim, paper: str, stores: Mapping[str, xr.Dataset | None]) -> Check:
    """Run one claim on the stores it names; a missing store, variable or coordinate is "not measured"."""

    def result(status: str, measured: str = "", value: float | None = None, note: str = "") -> Check:
        diagnosis = diagnose(claim.diagnosis, inputs) if status == FAILED else None
        return Check(claim.id, paper, claim.figure, claim.statement, claim.paper_value, claim.criterion,
                     claim.stores, status, measured, value, note, diagnosis)

    missing = [name for name in claim.stores if stores.get(name) is None]
    inputs = [stores[name] for name in claim.stores if name not in missing]
    if missing:
        return result(NOT_MEASURED, note=f"store {', '.join(missing)} not built: its experiment is not in "
                                         "config.yaml (figure not wired yet)")
    context = _context(inputs)
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
    diverged = [f"{name}: {runs}" for name, ds in zip(claim.stores, inputs) if (runs := diverged_runs(ds))]
    if diverged:
        return result(FAILED, outcome.measured, value, f"{'; '.join(diverged)} (measured on their values before "
                                                       f"the divergence); {context}")
    return result(PASSED if outcome.passed else FAILED, outcome.measured, value, context)


def evaluate_all(claims: Sequence[Claim], paper: str, stores: Mapping[str, xr.Dataset | None]) -> list[Check]:
    """Every claim of a paper; never raises."""
    checks = [evaluate(claim, paper, stores) for claim in claims]
    for c in checks:
        log.info("%s %s: %s %s %s", c.id, c.status, c.measured, c.criterion, c.note)
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


def to_json(paper: str, scale: str, checks: Sequence[Check], stores: Mapping[str, xr.Dataset | None]) -> str:
    """The claims file of one paper: its checks, a count per status, and the stores' provenance."""
    counts = {s: sum(c.status == s for c in checks) for s in (PASSED, FAILED, NOT_MEASURED)}
    doc = {"paper": paper, "scale": scale, "counts": counts, "stores": provenance(stores),
           "checks": [asdict(c) for c in checks]}
    return json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False)


def from_json(text: str) -> tuple[dict, list[Check]]:
    """A claims file back as (its header, its checks)."""
    doc = json.loads(text)
    checks = [Check(**{**c, "stores": tuple(c["stores"]),
                       "diagnosis": Diagnosis(**c["diagnosis"]) if c.get("diagnosis") else None})
              for c in doc.pop("checks")]
    return doc, checks
