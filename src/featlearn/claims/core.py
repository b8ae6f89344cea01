"""Claims as data: each paper claim is a small check over metric stores, and its result is a ``Check``.

A ``Claim`` names the stores it reads and a function that turns them into an ``Outcome`` (the measured numbers as
text, the criterion as terms, the headline number, the facts a diagnosis reads: ``terms``). ``evaluate`` runs it and
never raises: a store that was not built, a variable or coordinate a store lacks, or values that are all NaN give
status "not measured" with the reason; a store whose ``diverged`` flag marks a run, or NaNs left among the values a
claim reads, fail the claim and say so. So a claim that does not hold is reported, never a broken build.

A failed check carries the finding of the claim's first diagnosis that holds where it was measured (``diagnoses``),
and every verdict its margin with what seeds or rounding move it by (``margins``): within that, the verdict is
"fragile". ``records`` writes the checks to a claims file and reads them back; ``report`` shows them.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import xarray as xr

from featlearn.claims.diagnoses import Diagnosis, Finding, context, diagnose, measured_on
from featlearn.claims.margins import Margin, margin, margin_text, per_seed
from featlearn.claims.reading import Diverged, NotMeasured, diverged_runs
from featlearn.claims.terms import Fact, Outcome, StoreCheck

log = logging.getLogger(__name__)

PASSED, FAILED, NOT_MEASURED, FRAGILE = "passed", "failed", "not measured", "fragile"
VERDICTS = (PASSED, FRAGILE, FAILED, NOT_MEASURED)  # the states a reader sees, in the order counts list them


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


SKIPPED = (NotMeasured, Diverged, AttributeError, KeyError, IndexError, ValueError)  # a seed the check cannot read


def _per_seed_outcomes(claim: Claim, inputs: Sequence[xr.Dataset]) -> list[Outcome]:
    """The check run on each seed alone; a seed it cannot read alone does not count toward the spread."""
    seeds = []
    for cut in per_seed(inputs):
        try:
            seeds.append(claim.check(*cut))
        except SKIPPED:
            continue
    return seeds


def evaluate(claim: Claim, paper: str, stores: Mapping[str, xr.Dataset | None]) -> Check:
    """Run one claim on the stores it names; a missing store, variable or coordinate is "not measured". A verdict
    carries its margin, with what seeds (the check run on each seed alone) or rounding move it by."""

    def result(status: str, measured: str = "", value: float | None = None, note: str = "",
               facts: Mapping[str, Fact] | None = None, moved: Margin | None = None) -> Check:
        diagnosis = diagnose(claim.diagnoses, measured_on(inputs, facts, claim.stores)) if status == FAILED else None
        return Check(claim.id, paper, claim.figure, claim.statement, claim.paper_value, claim.criterion,
                     claim.stores, status, measured, value, note, diagnosis, moved)

    missing = [name for name in claim.stores if stores.get(name) is None]
    inputs = [stores[name] for name in claim.stores if name not in missing]
    if missing:
        return result(NOT_MEASURED, note=f"store {', '.join(missing)} not built in this build (its data is not on "
                                         "this machine, or its experiment is not in config.yaml)")
    where = context(measured_on(inputs))
    try:
        outcome = claim.check(*inputs)
    except NotMeasured as err:
        return result(NOT_MEASURED, note=f"{err}; {where}")
    except Diverged as err:
        return result(FAILED, measured="NaN", note=f"{err}; {where}")
    except (AttributeError, KeyError, IndexError, ValueError) as err:
        # A variable, dimension or coordinate the check reads is not in the store (e.g. a smaller scale's sweep).
        return result(NOT_MEASURED, note=f"the store lacks what the check reads, {type(err).__name__} {err}; "
                                         f"{where}")
    value = outcome.value if outcome.value is not None and math.isfinite(outcome.value) else None
    moved = margin(outcome, _per_seed_outcomes(claim, inputs))
    diverged = [f"{name}: {runs}" for name, ds in zip(claim.stores, inputs) if (runs := diverged_runs(ds))]
    if diverged:
        return result(FAILED, outcome.measured, value, f"{'; '.join(diverged)} (measured on their values before "
                                                       f"the divergence); {where}", outcome.facts, moved)
    return result(PASSED if outcome.passed else FAILED, outcome.measured, value, where, outcome.facts, moved)


def evaluate_all(claims: Sequence[Claim], paper: str, stores: Mapping[str, xr.Dataset | None]) -> list[Check]:
    """Every claim of a paper; never raises."""
    checks = [evaluate(claim, paper, stores) for claim in claims]
    for c in checks:
        log.info("%s %s: %s %s %s %s", c.id, c.verdict, c.measured, c.criterion, margin_text(c.margin), c.note)
    return checks


def store_names(claims: Sequence[Claim]) -> list[str]:
    """The stores a list of claims reads, in first-use order (a rule's inputs)."""
    return list(dict.fromkeys(name for claim in claims for name in claim.stores))
