"""The time axes every store shares (docs/design.md, Stores): dimension ``step``, labelled by ``step`` for
step-counted runs or by the coordinate ``epoch`` with ``step_of_epoch`` beside it for epoch-counted ones."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

TIME_ATTRS = {
    "step": {"long_name": "optimizer steps since initialization", "units": "steps"},
    "epoch": {"long_name": "epochs completed after the warm-up (0: its end, or initialization without one)",
              "units": "epochs"},
    "step_of_epoch": {"long_name": "optimizer step of the row's snapshot in this run (NaN: the run has no such epoch)",
                      "units": "steps"},
    "iteration": {"long_name": "optimizer steps taken before this loss (0: at initialization)", "units": "steps"},
}


def step_axis(steps: Sequence[int]) -> xr.Dataset:
    """The time labels of a step-counted run: the dimension coordinate ``step``."""
    return xr.Dataset(coords={"step": ("step", np.asarray(steps), TIME_ATTRS["step"])})


def epoch_axis(epochs: Sequence[float], steps: Sequence[int]) -> xr.Dataset:
    """The time labels of an epoch-counted run: the coordinate ``epoch`` along ``step`` and the optimizer step of
    each row, ``step_of_epoch`` (a variable, float so that padding with NaN keeps its type)."""
    if len(epochs) != len(steps):
        raise ValueError(f"epoch_axis: {len(epochs)} epochs for {len(steps)} steps")
    return xr.Dataset(
        {"step_of_epoch": ("step", np.asarray(steps, dtype=float), TIME_ATTRS["step_of_epoch"])},
        coords={"epoch": ("step", np.asarray(epochs), TIME_ATTRS["epoch"])},
    )
