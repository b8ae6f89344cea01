"""What the kinds computed in one job share: their one unit is the experiment itself, its store is the experiment's
store, and (unless the kind says otherwise) it reads no data-stage file and has no cross-field rules."""

from __future__ import annotations

from typing import Any

UNIT = "all"


def units(name: str, exp: dict) -> dict[str, dict]:
    """The one unit, ``all``: the resolved experiment with its name."""
    return {UNIT: {**exp, "experiment": name}}


def datasets(unit: dict) -> list[dict]:
    return []


def entries(unit: dict) -> list[tuple[str, str]]:
    return []


def check(exp: dict, where: str) -> list[str]:
    return []


def combine(exp: dict, parts: dict[str, tuple[dict, Any]]) -> Any:
    return parts[UNIT][1]
