"""Rounding twins: what rounding can carry a trained run to, measured by the build itself.

Training amplifies a last-bit difference unevenly: another CPU's kernels (Intel's MKL branch against AMD's), a GPU or
another thread count round a few operations otherwise, and a run that escapes a loss plateau a few steps earlier or
later ends somewhere measurably different. A fixed floor cannot say how far; a twin can. Every trained experiment ``E``
gets a twin ``E_twin``: the same spec at its first seed, with every initial weight moved by one unit in the last place
(``train.nudge``, applied by ``featlearn.train``). The twin is an experiment like any other (its own runs, stores and
cache keys), read by the claims (``featlearn.claims.margins``: how far rounding moves a one-run verdict) and by the
reproduction check (how far a file may move and still be "within rounding").
"""

from __future__ import annotations

import copy

SUFFIX = "_twin"
NUDGE_ULPS = 1  # one unit in the last place of every initial weight: the smallest legitimate other rounding path


def twin_name(name: str) -> str:
    """The twin experiment of ``name``."""
    return f"{name}{SUFFIX}"


def is_twin(name: str) -> bool:
    return name.endswith(SUFFIX)


def twin_of(exp: dict) -> dict:
    """``exp`` at its first seed (the others are measured by their spread), its runs' initial weights nudged."""
    twin = copy.deepcopy(exp)
    seeds = twin.get("sweep", {}).get("seed")
    if seeds:
        twin["sweep"]["seed"] = seeds[:1]
    return twin | {"twin_of": NUDGE_ULPS}


def nudged(units: dict[str, dict]) -> dict[str, dict]:
    """A twin experiment's units, each run asking the training loop to nudge its initial weights."""
    return {uid: {**unit, "train": {**unit["train"], "nudge": NUDGE_ULPS}} for uid, unit in units.items()}


def with_twins(experiments: dict[str, dict], trained: set[str]) -> dict[str, dict]:
    """The experiments with a twin for each trained one (a twin of a twin is never made)."""
    twins = {twin_name(n): twin_of(e) for n, e in experiments.items() if n in trained and not is_twin(n)}
    clash = sorted(set(twins) & set(experiments))
    if clash:
        raise ValueError(f"config.yaml: experiment names {clash} end in {SUFFIX!r}, which names the rounding twins "
                         "the build makes of trained experiments; rename them")
    return experiments | twins
