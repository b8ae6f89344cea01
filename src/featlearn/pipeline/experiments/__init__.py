"""Experiment kinds, one module each, found from the modules: a new kind is one new module (and its config schema).

A config experiment names its ``kind``. The kind's module says what its independent jobs (units) are, what data
each reads, how a unit is computed and how the units combine into the experiment's store; the rules are generic
(train → measure → combine) and read only this table. A kind module is light to import (the Snakefile plans with
it: heavy modules are imported inside its functions) and exposes:

    units(name, exp) -> {unit id: unit spec}        the experiment's independent jobs: runs, datasets, or one
    datasets(unit) -> [data block]                   the data-stage files each unit reads, in order
    entries(unit) -> [(dispatcher, choice)]          what its measurement dispatches to (``featlearn.pipeline.deps``)
    check(exp, where) -> [problem]                   cross-field rules the JSON schema cannot say
    KIND = {"trained": …, "device": …, "heavy": …, "repeats": {…}, "twin": …}   its flags, a literal (below)
    measure(unit, data, run, device) -> Dataset      one unit's store; ``run`` is its training record, if it trains
    combine(exp, parts) -> Dataset                   the experiment's store from its units' {id: (unit, store)}

``trained``: the units go through the one training loop (rule ``train``) before measurement. ``device``: their
measurement computes on the job's device. ``heavy``: at the paper scale they want a GPU
(``featlearn.pipeline.resources``, ``device: auto``). ``repeats``: the kind's own repetition counts that a rehearsal
cuts (``featlearn.pipeline.rehearsal``), by key path, to the least given; the one-job kinds that fit a CPU at the paper
scale (Figs 3, 7, tangent) have none, so their rehearsal is the paper job itself. ``twin``: the kind amplifies a
last-bit difference (training, twenty Deep RFM layers), so the build makes each of its experiments a rounding twin
(``featlearn.pipeline.twins``), whose units carry ``nudge`` and start one ulp away.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

from featlearn.config import ConfigError, dataset_key, experiment
from featlearn.pipeline.literals import literal_in


def _kinds() -> dict[str, dict]:
    """Every kind: each module of this package that declares its ``KIND`` flags (read without importing it)."""
    here = Path(__file__).parent
    flags = {path.stem: literal_in(path, "KIND") for path in sorted(here.glob("*.py"))}
    return {kind: {"module": f"{__name__}.{kind}", **f} for kind, f in flags.items() if f is not None}


KINDS = _kinds()


def kind_of(name: str) -> ModuleType:
    """The module of kind ``name``."""
    if name not in KINDS:
        raise ConfigError(f"unknown experiment kind {name!r}; kinds: {sorted(KINDS)}")
    return importlib.import_module(KINDS[name]["module"])


def with_threads(units: dict[str, dict], threads: int) -> dict[str, dict]:
    """The units, each carrying the thread count its jobs compute with: threads split sums differently and so change
    a result's bits (``featlearn.pipeline.numerics``), hence they are part of its spec, file name and cache key."""
    return {uid: {**unit, "threads": threads} for uid, unit in units.items()}


def units(config: dict, name: str) -> dict[str, dict]:
    """Every unit (independent job) of experiment ``name`` at the configured scale, keyed by its id."""
    exp = experiment(config, name)
    return with_threads(kind_of(exp["kind"]).units(name, exp), config.get("threads", 1))


def datasets(config: dict, name: str) -> dict[str, dict]:
    """Every dataset experiment ``name`` reads: file key -> generator parameters."""
    exp = experiment(config, name)
    kind = kind_of(exp["kind"])
    return {dataset_key(p): p for unit in kind.units(name, exp).values() for p in kind.datasets(unit)}


def check(exp: dict, where: str) -> list[str]:
    """The cross-field problems of one resolved experiment (``pipeline.validation.validate``'s semantic check)."""
    return kind_of(exp["kind"]).check(exp, where)

