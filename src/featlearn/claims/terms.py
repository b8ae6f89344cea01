"""What a check returns: its criterion as ``Term``s, so that every verdict has a margin, and its ``Fact``s, the numbers
a diagnosis quotes or tests, each with what it is and the store variable it came from.

A check states its criterion as terms, each a measured number against its threshold (``at_least``, ``above``,
``at_most``, ``below``), and passes when every term holds, so a verdict is never a bare boolean.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

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


FactValue = float | int | tuple[float, ...]


@dataclass(frozen=True)
class Fact:
    """A number a check measured beside its criterion, kept as a number (one, or one per seed) until a report quotes
    it: ``what`` it is and the store ``variable`` it was read from say where it came from."""

    value: FactValue
    what: str
    variable: str


def fact(value: object, what: str, variable: str) -> Fact:
    """A Fact from a check's numbers: a Python or numpy scalar stays one number (an integer stays an integer), an
    array or DataArray becomes one float per entry (e.g. per seed)."""
    v = np.asarray(value)
    if v.ndim == 0:
        return Fact(int(v) if np.issubdtype(v.dtype, np.integer) else float(v), what, variable)
    return Fact(tuple(float(x) for x in v.astype(float).ravel()), what, variable)


@dataclass(frozen=True)
class Outcome:
    """What a check measured: a short text of the numbers, the criterion's ``terms`` (it passes when all hold), the
    headline number, ``facts``: named numbers that a diagnosis's condition tests and its text quotes, and
    ``compared``: the number held to the paper's, where the paper reports one."""

    measured: str
    terms: tuple[Term, ...]
    value: float | None = None
    facts: Mapping[str, Fact] = field(default_factory=dict)
    compared: float | None = None  # our counterpart of the number the paper reports (``Claim.paper_number``)

    def __post_init__(self) -> None:
        terms = tuple(self.terms) if isinstance(self.terms, Sequence) and not isinstance(self.terms, str) else ()
        if not terms or not all(isinstance(t, Term) for t in terms):
            raise TypeError(f"an Outcome states its criterion as Terms, at least one (got {self.terms!r})")
        object.__setattr__(self, "terms", terms)
        if not all(isinstance(f, Fact) for f in self.facts.values()):
            raise TypeError("an Outcome's facts are Facts (value, what it is, the variable read), made with fact()")

    @property
    def passed(self) -> bool:
        return all(t.holds for t in self.terms)


StoreCheck = Callable[..., Outcome]  # called with the claim's stores, in order
