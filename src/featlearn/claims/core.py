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
from featlearn.claims.tiers import NotInformative, PaperMatch, PaperNumber, match, standins, untrained

log = logging.getLogger(__name__)

PASSED, FAILED, NOT_MEASURED, FRAGILE = "passed", "failed", "not measured", "fragile"
NOT_TRAINED, NOT_INFORMATIVE = "not trained", "not informative"
VERDICTS = (PASSED, FRAGILE, FAILED, NOT_TRAINED, NOT_INFORMATIVE, NOT_MEASURED)  # what a reader sees, in count order
# What a verdict stands on (featlearn.claims.tiers), disjoint, in the order the summary counts them: a pass on real data
# whose paper number is within tolerance, a pass on real data otherwise, a pass on stand-in data, then the rest.
NUMBER, DIRECTION, STANDIN = "paper's number reproduced", "direction reproduced", "on stand-ins"
TIERS = (NUMBER, DIRECTION, STANDIN, NOT_INFORMATIVE, NOT_TRAINED, FRAGILE, FAILED, NOT_MEASURED)


@dataclass(frozen=True)
class Claim:
    """One claim of a paper's checklist, as a check over named metric stores.

    ``check`` is called with the stores in the order of ``stores``; ``paper_value`` is the paper's number as
    text ("" where the paper gives none) and ``paper_number`` that number as a ``PaperNumber`` where the check
    measures its counterpart (``Outcome.compared``); ``criterion`` says in words what passes. A failure carries the
    first of ``diagnoses`` whose condition holds where it was measured (e.g. one for the quick scale's one seed, one
    for the paper's three). ``needs_training``: the claim is about trained networks, so it is checked only where the
    real-data runs it reads trained (``featlearn.claims.tiers``); False for a claim about the loss itself.
    """

    id: str
    figure: str
    statement: str
    paper_value: str
    criterion: str
    stores: tuple[str, ...]
    check: StoreCheck = field(repr=False, compare=False)
    diagnoses: tuple[Diagnosis, ...] = ()
    paper_number: PaperNumber | None = None
    needs_training: bool = True


@dataclass(frozen=True)
class Check:
    """The result of one claim on one set of stores: what the JSON, the table and the report show. ``status`` is the
    direction the check points (passed, failed, not trained, not informative, not measured); ``verdict`` is what a
    reader should take from it, fragile where the margin is within what seeds or rounding move it by; ``tier`` what it
    stands on (``TIERS``): the paper's number against ours (``paper_match``) and the stand-in data it was measured on
    (``standin``)."""

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
    paper_match: PaperMatch | None = None
    standin: tuple[str, ...] = ()

    @property
    def verdict(self) -> str:
        decided = self.status in (PASSED, FAILED)
        return FRAGILE if decided and self.margin is not None and self.margin.fragile else self.status

    @property
    def tier(self) -> str:
        if self.verdict != PASSED:
            return self.verdict
        if self.standin:
            return STANDIN
        return NUMBER if self.paper_match is not None and self.paper_match.within else DIRECTION


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


def _twin_outcome(claim: Claim, inputs: Sequence[xr.Dataset],
                  twins: Mapping[str, xr.Dataset | None]) -> Outcome | None:
    """The check run with every store that has a rounding twin replaced by it (None: no twin, or one it cannot
    read)."""
    if not any(twins.get(name) is not None for name in claim.stores):
        return None
    swapped = [twins.get(name) if twins.get(name) is not None else ds for name, ds in zip(claim.stores, inputs)]
    try:
        return claim.check(*swapped)
    except SKIPPED:
        return None


def evaluate(claim: Claim, paper: str, stores: Mapping[str, xr.Dataset | None],
             twins: Mapping[str, xr.Dataset | None] | None = None) -> Check:
    """Run one claim on the stores it names; a missing store, variable or coordinate is "not measured". A verdict
    carries its margin, with what seeds (the check run on each seed alone) or rounding (the check run on the stores'
    rounding ``twins``, by store name) move it by."""

    def result(status: str, measured: str = "", value: float | None = None, note: str = "",
               facts: Mapping[str, Fact] | None = None, moved: Margin | None = None,
               compared: float | None = None) -> Check:
        diagnosis = diagnose(claim.diagnoses, measured_on(inputs, facts, claim.stores)) if status == FAILED else None
        return Check(claim.id, paper, claim.figure, claim.statement, claim.paper_value, claim.criterion,
                     claim.stores, status, measured, value, note, diagnosis, moved,
                     match(claim.paper_number, compared), tuple(s for ds in inputs for s in standins(ds)))

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
    except NotInformative as err:
        return result(NOT_INFORMATIVE, note=f"{err}; {where}")
    except Diverged as err:
        return result(FAILED, measured="NaN", note=f"{err}; {where}")
    except (AttributeError, KeyError, IndexError, ValueError) as err:
        # A variable, dimension or coordinate the check reads is not in the store (e.g. a smaller scale's sweep).
        return result(NOT_MEASURED, note=f"the store lacks what the check reads, {type(err).__name__} {err}; "
                                         f"{where}")
    value = outcome.value if outcome.value is not None and math.isfinite(outcome.value) else None
    moved = margin(outcome, _per_seed_outcomes(claim, inputs), _twin_outcome(claim, inputs, twins or {}))
    shown = (outcome.measured, value)
    idle = [f"{name}: {run}" for name, ds in zip(claim.stores, inputs) for run in untrained(ds)]
    if claim.needs_training and idle:
        return result(NOT_TRAINED, *shown, f"not trained at this scale ({'; '.join(idle)}); {where}",
                      outcome.facts, moved, outcome.compared)
    diverged = [f"{name}: {runs}" for name, ds in zip(claim.stores, inputs) if (runs := diverged_runs(ds))]
    if diverged:
        return result(FAILED, *shown, f"{'; '.join(diverged)} (measured on their values before the divergence); "
                                      f"{where}", outcome.facts, moved, outcome.compared)
    return result(PASSED if outcome.passed else FAILED, *shown, where, outcome.facts, moved, outcome.compared)


def evaluate_all(claims: Sequence[Claim], paper: str, stores: Mapping[str, xr.Dataset | None],
                 twins: Mapping[str, xr.Dataset | None] | None = None) -> list[Check]:
    """Every claim of a paper (``twins``: the rounding twins of its stores, by store name); never raises."""
    checks = [evaluate(claim, paper, stores, twins) for claim in claims]
    for c in checks:
        log.info("%s %s: %s %s %s %s", c.id, c.verdict, c.measured, c.criterion, margin_text(c.margin), c.note)
    return checks


def store_names(claims: Sequence[Claim]) -> list[str]:
    """The stores a list of claims reads, in first-use order (a rule's inputs)."""
    return list(dict.fromkeys(name for claim in claims for name in claim.stores))
