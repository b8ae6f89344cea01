"""What a verdict stands on: the paper's number, the data, whether the network trained, whether the check can tell.

A direction that holds is not yet a reproduction. Four things decide how far a ✅ goes:

- **The paper's number.** Where the paper prints a number (or its figure shows one), the check's measured counterpart
  (``Outcome.compared``) is held to it within the paper's own reported spread (0.74 ± 0.13 → within 0.13), or, where
  the paper reports none, within ``PAPER_RTOL`` of it: the papers print two digits or draw curves read to about
  that, and 10% is the largest difference one would not call another result. A second verdict beside the direction's.
- **The data.** A store computed on a labelled stand-in (coloured MNIST digits in place of CIFAR-10, SVHN, ...) says
  so in its ``data_source``; a claim measured on one is counted "on stand-ins", never as reproducing the paper.
- **Training.** A claim about what training does is checked only on networks that trained: every run of a real-data
  store (the kind whose claims a stand-in or a short budget can hollow out) must end at or below ``TRAINED_FRACTION``
  of its loss at initialisation, which for the papers' heads (MSE on one-hot or ±1 targets from a small-output init,
  cross-entropy from near-uniform logits) is the trivial predictor's loss to within a few per cent (a minibatch loss
  is averaged over its last ``LAST`` of steps). Otherwise the
  claim reads "not trained", with the runs' losses. Synthetic runs are exempt: whether they learn is what some claims
  are about (GD at a small init).
- **Information.** A check whose inputs do not vary (a tracking claim where the tracked value is pinned) raises
  ``NotInformative`` with the reason, instead of passing on two constants.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import xarray as xr

from featlearn.claims.reading import fmt

PAPER_RTOL = 0.10  # tolerance of a paper number printed without a spread, relative to it
PAPER_ATOL = 0.05  # ... and where the paper's number is 0 (a correlation at chance, say)
TRAINED_FRACTION = 0.5  # a run trained when its final train loss is at most this fraction of its loss at init
LOSSES = (("train_loss", "step"), ("loss", "iteration"))  # the train loss over training: at each measurement (the
# whole training set) where the store has it, else each optimizer step's minibatch loss (the GPT)
LAST = 0.05  # a run's final loss: the mean over its last 5% of recorded values (one, for a measured train loss)


class NotInformative(Exception):
    """The check's inputs cannot tell the claim's two outcomes apart (e.g. the tracked value does not vary)."""


@dataclass(frozen=True)
class PaperNumber:
    """A number the paper reports: ``value``, its own ``spread`` (the ± it prints) where it gives one, and ``source``
    ('printed' in the text or a table, 'read off' a figure)."""

    value: float
    spread: float | None = None
    source: str = "printed"

    @property
    def tolerance(self) -> float:
        if self.spread is not None:
            return self.spread
        return PAPER_RTOL * abs(self.value) if self.value else PAPER_ATOL


@dataclass(frozen=True)
class PaperMatch:
    """Our ``measured`` counterpart of the paper's number held to it within ``tolerance`` (``by``: how the tolerance
    was chosen)."""

    paper: float
    measured: float
    tolerance: float
    by: str

    @property
    def within(self) -> bool:
        return abs(self.measured - self.paper) <= self.tolerance

    @property
    def text(self) -> str:
        sign = "within" if self.within else "outside"
        return (f"{fmt(self.measured)} vs the paper's {fmt(self.paper)}: {sign} ± {fmt(self.tolerance)} ({self.by}) "
                f"{'✅' if self.within else '❌'}")


def match(number: PaperNumber | None, measured: float | None) -> PaperMatch | None:
    """The paper's number against ours (None where either is missing or ours is not finite)."""
    if number is None or measured is None or not math.isfinite(measured):
        return None
    by = "the paper's spread" if number.spread is not None else (
        f"{PAPER_RTOL:.0%} of its value" if number.value else f"{PAPER_ATOL:g} absolute")
    return PaperMatch(number.value, float(measured), number.tolerance, by)


def standins(ds: xr.Dataset) -> list[str]:
    """The stand-in datasets a store was computed on, as its ``data_source`` names them (one line per dataset)."""
    lines = str(ds.attrs.get("data_source", "")).split("\n")
    return [line.strip().rstrip(";") for line in lines if "stand-in" in line]


def _loss(ds: xr.Dataset) -> tuple[xr.DataArray, str] | None:
    return next(((ds[v], t) for v, t in LOSSES if v in ds and t in ds[v].dims), None)


def untrained(ds: xr.Dataset) -> list[str]:
    """Each run of a real-data store whose final train loss is above ``TRAINED_FRACTION`` of its loss at init, as
    'dataset=cifar100 seed=0: 0.89 of its initial loss' ([] where every run trained, or the store is synthetic or has
    no per-step loss)."""
    found = _loss(ds)
    if found is None or "synthetic" in str(ds.attrs.get("data_source", "synthetic")):
        return []
    loss, time = found
    runs = loss.stack(run=[d for d in loss.dims if d != time]) if loss.ndim > 1 else loss.expand_dims(run=[0])
    out = []
    for i in range(runs.sizes["run"]):
        series = np.asarray(runs.isel(run=i).transpose(time), dtype=float)
        finite = series[np.isfinite(series)]
        if finite.size < 2 or finite[0] <= 0:
            continue
        last = float(finite[-max(1, round(LAST * finite.size)):].mean())
        ratio = last / finite[0]
        if ratio > TRAINED_FRACTION:
            label = " ".join(f"{k}={v}" for k, v in zip(runs.indexes["run"].names, np.atleast_1d(
                runs.indexes["run"][i]))) if loss.ndim > 1 else "the run"
            out.append(f"{label}: final train loss {fmt(last)}, {fmt(ratio)} of its initial {fmt(float(finite[0]))}")
    return out
