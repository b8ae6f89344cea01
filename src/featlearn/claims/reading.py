"""Reading a metric store for a check, and the short number texts of what it measured.

A check never raises on what a store lacks or holds badly: ``values`` raises ``NotMeasured`` (all NaN) or
``Diverged`` (some NaN), which the evaluation turns into a status with its reason. Stores of several runs may share
padded axes: a seed not run at this scale is all NaN, and a dataset trained for fewer epochs is NaN after its end.
``seed_mean`` skips the first, ``final`` (the last finite time point of each series) the second.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import xarray as xr


class NotMeasured(Exception):
    """The stores cannot give this claim a value (missing store, variable or coordinate; all values NaN)."""


class Diverged(Exception):
    """Some values the claim needs are NaN: a run diverged, so the claim fails with this reason."""


def values(da: xr.DataArray, what: str) -> np.ndarray:
    """The float values of ``da``; NotMeasured if all are NaN, Diverged if some are (named by ``what``)."""
    v = np.asarray(da, dtype=float)
    bad = ~np.isfinite(v)
    if v.size == 0 or bad.all():
        raise NotMeasured(f"{what}: no finite value in the store")
    if bad.any():
        raise Diverged(f"{what}: {int(bad.sum())} of {v.size} values are NaN/inf (a diverged run, or one not run "
                       "at this scale)")
    return v


def scalar(da: xr.DataArray, what: str) -> float:
    """One finite number from a DataArray that should hold exactly one (after the caller's selections)."""
    v = values(da, what)
    if v.size != 1:
        raise NotMeasured(f"{what}: expected one value, the store has {v.size} (dims {da.dims})")
    return float(v.ravel()[0])


def convention(da: xr.DataArray, name: str) -> xr.DataArray:
    """Select a correlation convention ("cosine" or "pearson") where the variable has that dimension."""
    return da.sel(convention=name) if "convention" in da.dims else da


def final(da: xr.DataArray) -> xr.DataArray:
    """Each series' value at its last finite point along the time dimension ``step`` (every store's): the end of
    training even where runs of different lengths share a padded axis (all-NaN series stay NaN)."""
    index = (da.notnull() * xr.DataArray(np.arange(da.sizes["step"]), dims="step")).argmax("step")
    return da.isel(step=index)


def first(da: xr.DataArray) -> xr.DataArray:
    """Each series' value at its first finite point along ``step``: a centered quantity is undefined (NaN) at init,
    so "early" is the first measurement where it exists."""
    return da.isel(step=da.notnull().argmax("step"))


def seed_mean(da: xr.DataArray) -> xr.DataArray:
    """Mean over seeds that ran: a seed not run at this scale (all NaN) is left out; no seed at all stays NaN."""
    if "seed" not in da.dims:
        return da
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices: "Mean of empty slice"
        return da.mean("seed", skipna=True)


def seeds_ran(ds: xr.Dataset) -> np.ndarray | None:
    """Which entries of the ``seed`` axis hold a finite value in some variable (None: no seed axis)."""
    if "seed" not in ds.dims:
        return None
    ran = np.zeros(ds.sizes["seed"], dtype=bool)
    for da in ds.data_vars.values():
        if "seed" in da.dims and np.issubdtype(da.dtype, np.number):
            v = np.moveaxis(np.asarray(da, dtype=float), da.dims.index("seed"), 0)
            ran |= np.isfinite(v.reshape(v.shape[0], -1)).any(axis=1)
    return ran


def diverged_runs(ds: xr.Dataset) -> str:
    """'2 of 8 runs diverged' from the store's ``diverged`` flag ('' when none did or the store has no flag)."""
    if "diverged" not in ds:
        return ""
    flags = np.asarray(ds.diverged, dtype=float)
    n = int(np.nansum(flags == 1))
    return f"{n} of {flags.size} runs diverged" if n else ""


def fmt(x: float, digits: int = 3) -> str:
    """Short number text: 3 significant digits, scientific when tiny or huge."""
    if not math.isfinite(x):
        return str(x)
    if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e4):
        return f"{x:.{digits - 1}e}"
    return f"{x:.{digits}g}"


def slash(v: np.ndarray) -> str:
    """'0.62 / 0.9 / 0.95': one number per entry, for values along a sweep."""
    return " / ".join(fmt(float(x)) for x in np.asarray(v, dtype=float).ravel())


def mean_sd(v: np.ndarray) -> str:
    """'0.962 ± 0.004': the mean and the sample sd (ddof = 1), the sd readers of ML papers expect; just the value for
    one number, whose sample sd is undefined."""
    v = np.asarray(v, dtype=float).ravel()
    return fmt(float(v.mean())) if v.size == 1 else f"{fmt(float(v.mean()))} ± {fmt(float(v.std(ddof=1)))}"
