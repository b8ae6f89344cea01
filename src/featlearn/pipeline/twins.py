"""Rounding twins: what rounding can carry a trained run to, measured by the build itself.

Training amplifies a last-bit difference unevenly: another CPU's kernels (Intel's MKL branch against AMD's), a GPU or
another thread count round a few operations otherwise, and a run that escapes a loss plateau a few steps earlier or
later ends somewhere measurably different; twenty layers of Deep RFM carry one the same way. A fixed floor cannot say
how far; a twin can. Every experiment ``E`` of a kind that declares ``"twin": True`` in its ``KIND`` flags gets a twin
``E_twin``: the same spec at its first seed, each unit carrying ``nudge``: a trained run starts from initial weights
one unit in the last place up (``featlearn.train.nudge``), a Deep RFM fit from inputs moved so. The twin is an
experiment like any other (its own runs, stores and cache keys), read by the claims (``featlearn.claims.margins``:
how far rounding moves a one-run verdict) and by the reproduction check (``featlearn.pipeline.sensitivity``: how far
a file may move and still be "within rounding").
"""

from __future__ import annotations

import copy

SUFFIX = "_twin"
NUDGE_ULPS = 1  # one unit in the last place of every initial value: the smallest legitimate other rounding path


def wanted(config: dict) -> bool:
    """Whether this build runs twins: ``twins`` is true or false, or the scales that do (the smoke scale, which tests
    plumbing and no claim, leaves them out by default)."""
    value = config.get("twins", True)
    return value if isinstance(value, bool) else config["scale"] in value


def twin_name(name: str) -> str:
    """The twin experiment of ``name``."""
    return f"{name}{SUFFIX}"


def is_twin(name: str) -> bool:
    return name.endswith(SUFFIX)


def twin_of(exp: dict) -> dict:
    """``exp`` at its first seed (the others are measured by their spread); its units are ``nudged``."""
    twin = copy.deepcopy(exp)
    seeds = twin.get("sweep", {}).get("seed")
    if seeds:
        twin["sweep"]["seed"] = seeds[:1]
    return twin | {"twin_of": NUDGE_ULPS}


def nudged(units: dict[str, dict]) -> dict[str, dict]:
    """A twin experiment's units, each asking its computation to start ``NUDGE_ULPS`` away."""
    return {uid: {**unit, "nudge": NUDGE_ULPS} for uid, unit in units.items()}


def with_twins(experiments: dict[str, dict], twinned: set[str]) -> dict[str, dict]:
    """The experiments with a twin for each of ``twinned`` (a twin of a twin is never made)."""
    twins = {twin_name(n): twin_of(e) for n, e in experiments.items() if n in twinned and not is_twin(n)}
    clash = sorted(set(twins) & set(experiments))
    if clash:
        raise ValueError(f"config.yaml: experiment names {clash} end in {SUFFIX!r}, which names the rounding twins "
                         "the build makes of trained experiments; rename them")
    return experiments | twins
