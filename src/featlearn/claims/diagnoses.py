"""Why a claim fails where it is known to: a ``Diagnosis``, the ``Condition`` under which it holds, and the
``Finding`` it gives on one set of stores, with the measured numbers it rests on as ``Evidence``.

A diagnosis names its cause (the small scale, stand-in data, the paper's own construction, or open), the evidence in
words, the alternatives tried, and where it holds (the scale, the number of seeds, stand-in data, the measured
numbers), checked on the stores it is applied to: a quick-scale or one-seed diagnosis does not excuse a failure with
the paper's three seeds, and a failure nobody has explained there carries an "open" finding saying so. Stores of the
paper-scale rehearsal (``scale`` "paper-rehearsal": a few optimizer steps, the first seed, two snapshots at the
paper's shapes) fail for that reason, whatever the claim's diagnosis says.

A diagnosis's text names the check's facts in ``str.format`` fields ("UC {uc_low:.2f}"). Its finding keeps the text
as written and the facts it names as evidence (the value, what it is, the store and variable it came from); the
report fills one into the other, so a claims file holds numbers, not prose with numbers in it.

Where the paper is ambiguous, a diagnosis blaming its construction tests the other readings: each is an experiment of
its own that differs in that one setting, the claim reads its store too (``with_readings``), and the diagnosis holds
only where each other reading fails as well (``others_fail``), quoting their numbers.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import xarray as xr

from featlearn.claims.reading import Diverged, NotMeasured, diverged_runs, fmt, seeds_ran
from featlearn.claims.terms import Fact, FactValue, Outcome, StoreCheck

QUICK_SCALE, STAND_IN, CONSTRUCTION, OPEN = "quick scale", "stand-in data", "paper's construction", "open"
REHEARSAL = "rehearsal"
CAUSES = (QUICK_SCALE, STAND_IN, CONSTRUCTION, OPEN, REHEARSAL)
PAPER_SCALE, REHEARSAL_SCALE = "paper", "paper-rehearsal"  # the stores' ``scale`` label of each


@dataclass(frozen=True)
class Measured:
    """Where and what a claim measured, which a diagnosis's condition is checked on."""

    scales: tuple[str, ...]  # the stores' ``scale`` attributes
    seeds: int | None  # the most seeds that ran in any of the stores (None: no store has a ``seed`` axis)
    standin: bool  # some store holds stand-in data
    facts: Mapping[str, Fact] = field(default_factory=dict)  # the check's named numbers (none when it raised)
    stores: tuple[str, ...] = ()  # the names of the stores, the source of the facts


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


def numbers(text: str, test: Callable[[Mapping[str, FactValue]], bool]) -> Condition:
    """A condition on the check's numbers (its facts' values); it does not hold where they were not measured."""
    return Condition(text, lambda m: bool(m.facts) and test({k: f.value for k, f in m.facts.items()}))


def with_readings(check: StoreCheck, readings: Mapping[str, str]) -> StoreCheck:
    """``check`` on the claim's first store, with the facts of the same check on the stores of the other readings of
    an ambiguous setting (``readings``: a key per experiment, each the claim's experiment with that one setting read
    the other way, in the order of the claim's next stores), so that a diagnosis blaming the paper's construction
    can say what the other readings give. Per key: ``<key>``, the check's first term there; ``<key>_passes``, 1
    where the check passes and no run diverged, else 0; ``<key>_<fact>``, each of its facts. A store the check cannot
    read gives NaN and 0."""

    def checked(ds: xr.Dataset, *others: xr.Dataset) -> Outcome:
        if len(others) != len(readings):
            raise ValueError(f"{len(others)} stores for the {len(readings)} other readings {', '.join(readings)}")
        outcome = check(ds)
        facts = dict(outcome.facts)
        for (key, name), other in zip(readings.items(), others):
            facts.update(_reading(check, key, name, other))
        return replace(outcome, facts=facts)

    return checked


def _reading(check: StoreCheck, key: str, name: str, ds: xr.Dataset) -> dict[str, Fact]:
    """The facts of ``check`` on the store of experiment ``name``, under ``key`` (``with_readings``)."""
    try:
        outcome = check(ds)
    except (NotMeasured, Diverged, AttributeError, KeyError, IndexError, ValueError):
        return {key: Fact(math.nan, f"the claim's check on {name} (not readable)", name),
                f"{key}_passes": Fact(0, f"whether the claim passes on {name}", name)}
    term = outcome.terms[0]
    passes = int(outcome.passed and not diverged_runs(ds))
    return {key: Fact(term.value, f"{term.what}, on {name}", name),
            f"{key}_passes": Fact(passes, f"whether the claim passes on {name} (1: yes)", name),
            **{f"{key}_{n}": Fact(f.value, f"{f.what}, on {name}", f"{name}: {f.variable}")
               for n, f in outcome.facts.items()}}


def others_fail(readings: Mapping[str, str]) -> Condition:
    """Every other reading of ``with_readings`` was measured and fails the claim too: only then is the failure the
    paper's construction rather than our reading of it."""
    return numbers("each other reading fails too", lambda f: all(f[f"{key}_passes"] == 0 for key in readings))


# The condition a cause carries whatever the diagnosis adds: the small scale only below the paper's, stand-in data
# only on a stand-in.
CAUSE_CONDITION = {QUICK_SCALE: BELOW_PAPER, STAND_IN: ON_STAND_IN}

Number = float | int | None  # None: a value that was not finite (a claims file is strict JSON)


@dataclass(frozen=True)
class Evidence:
    """One measured number a finding quotes: ``name``, the field of the text it fills; its value (one per seed where
    a tuple); ``what`` it is; ``source``, the store and variable it was read from."""

    name: str
    value: Number | tuple[Number, ...]
    what: str
    source: str


def _number(x: float | int) -> Number:
    return x if isinstance(x, int) or math.isfinite(x) else None


def evidence(name: str, f: Fact, stores: Sequence[str]) -> Evidence:
    """The fact ``name`` as evidence of a finding, its source the stores it was read from and its variable."""
    value = tuple(_number(x) for x in f.value) if isinstance(f.value, tuple) else _number(f.value)
    return Evidence(name, value, f.what, f"{', '.join(stores)}: {f.variable}" if stores else f.variable)


class _Shown:
    """A value as a format field shows it: its format spec applied to each number of a tuple (joined by ' / '), the
    short number text where the text gives none, 'nan' for a value that was not finite."""

    def __init__(self, value: Number | tuple[Number, ...]) -> None:
        self.value = value

    @staticmethod
    def _one(x: Number, spec: str) -> str:
        if x is None:
            return "nan"
        if spec:
            return format(x, spec)
        return fmt(x) if isinstance(x, float) else str(x)

    def __format__(self, spec: str) -> str:
        if isinstance(self.value, tuple):
            return " / ".join(self._one(x, spec) for x in self.value)
        return self._one(self.value, spec)


def fields(text: str) -> list[str]:
    """The names a text's format fields read, in order ('{uc_low:.2f}' reads uc_low)."""
    found = [m[0] for _, name, _, _ in string.Formatter().parse(text) if name and (m := re.match(r"\w+", name))]
    return list(dict.fromkeys(found))


def fill(text: str, evidence: Sequence[Evidence]) -> str:
    """The text with its format fields filled from the evidence (KeyError where a field has none)."""
    return text.format_map({e.name: _Shown(e.value) for e in evidence})


@dataclass(frozen=True)
class Finding:
    """A diagnosis as it applies to one set of stores: its cause, the evidence in words (``why``, a text whose format
    fields the ``evidence`` fills), the alternatives ``tried``, and ``holds``, the condition that held there."""

    cause: str
    why: str
    tried: str = ""
    holds: str = ""
    evidence: tuple[Evidence, ...] = ()


@dataclass(frozen=True)
class Diagnosis:
    """Why a claim fails: the ``cause`` (one of CAUSES), the evidence in words, the alternatives ``tried``, and
    ``when`` it holds, checked on the stores it is applied to.

    ``why`` and ``tried`` may name the check's facts in ``str.format`` fields ("UC {uc_low:.2f}"), which the report
    fills from the measurement the diagnosis is applied to. A "quick scale" cause holds only below the paper scale
    and a "stand-in data" cause only on a stand-in, whatever ``when`` says.
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
        names = fields(self.why + self.tried)
        try:
            if not condition.test(m) or any(name not in m.facts for name in names):
                return None
            quoted = tuple(evidence(name, m.facts[name], m.stores) for name in names)
            for text in (self.why, self.tried):
                fill(text, quoted)  # a text the evidence cannot fill states no finding
        except (KeyError, IndexError, ValueError, TypeError):
            return None
        return Finding(self.cause, self.why, self.tried, condition.text, quoted)


def _seeds_run(ds: xr.Dataset) -> int | None:
    """How many entries of the ``seed`` axis hold a finite value in some variable (None: no seed axis)."""
    ran = seeds_ran(ds)
    return None if ran is None else int(ran.sum())


def measured_on(stores: Sequence[xr.Dataset], facts: Mapping[str, Fact] | None = None,
                names: Sequence[str] = ()) -> Measured:
    """The stores' scales, seeds that ran and stand-in data, with the check's facts and the stores' ``names``: where
    a result was measured."""
    counts = [n for ds in stores if (n := _seeds_run(ds)) is not None]
    return Measured(tuple(sorted({str(ds.attrs.get("scale", "?")) for ds in stores})),
                    max(counts) if counts else None,
                    any("stand-in" in str(ds.attrs.get("data_source", "")) for ds in stores), dict(facts or {}),
                    tuple(names))


def context(m: Measured) -> str:
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
    text = f"not yet diagnosed at {context(m)}{known}"
    return Finding(OPEN, text.replace("{", "{{").replace("}", "}}"))  # a text with no field to fill
