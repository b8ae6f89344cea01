"""What the kinds computed in one job share: their one unit is the experiment itself, and its store is the
experiment's store."""

from __future__ import annotations

from typing import Any

UNIT = "all"


def single(name: str, exp: dict) -> dict[str, dict]:
    """The one unit, ``all``: the resolved experiment with its name."""
    return {UNIT: {**exp, "experiment": name}}


def entries(unit: dict) -> list[tuple[str, str]]:
    return []


def combine(exp: dict, parts: dict[str, tuple[dict, Any]]) -> Any:
    return parts[UNIT][1]
