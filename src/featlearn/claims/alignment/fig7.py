"""Claims of Fig 7: the observed ρ against the first-order prediction across the data decay α."""

from __future__ import annotations

import numpy as np
import xarray as xr

from featlearn.claims.core import Claim
from featlearn.claims.reading import NotMeasured, fmt, slash, values
from featlearn.claims.terms import Outcome, above, at_least, at_most

STORES = ("first_order",)


def _has_dip(v: np.ndarray) -> bool:
    return v.size >= 3 and v[1:-1].min() < min(v[0], v[-1]) - 0.01


def dip(ds: xr.Dataset) -> Outcome:
    obs = ds.rho_observed.mean("net", skipna=False)
    curves = [(obs, "observed"), (ds.rho_predicted, "predicted")]
    dips = [_has_dip(values(da.sel(activation=a, task=t, width=w).sortby("alpha"), name))
            for da, name in curves for a in ds.activation.values for t in ds.task.values for w in ds.width.values]
    share = float(np.mean(dips))
    return Outcome(f"interior dip in {sum(dips)} of {len(dips)} curves", (at_least("share of curves", share, 0.75),),
                   share)


def quadratic_width(ds: xr.Dataset) -> Outcome:
    if "quadratic" not in ds.activation.values:
        raise NotMeasured("no quadratic activation in this store")
    q = ds.sel(activation="quadratic")
    gap = np.abs(q.rho_predicted - q.rho_observed.mean("net", skipna=False)).mean("alpha")
    narrow = values(gap.sel(width=q.width.min()), "gap at the smallest width")
    wide = values(gap.sel(width=q.width.max()), "gap at the largest width")
    return Outcome(f"mean |pred − obs| k = {int(q.width.max())}: {slash(wide)} vs k = {int(q.width.min())}: "
                   f"{slash(narrow)}", (above("least narrow − wide gap", (narrow - wide).min(), 0),), float(wide.max()))


def relu_qualitative(ds: xr.Dataset) -> Outcome:
    if "relu" not in ds.activation.values:
        raise NotMeasured("no ReLU activation in this store")
    r = ds.sel(activation="relu")
    gap = float(values(np.abs(r.rho_predicted - r.rho_observed.mean("net", skipna=False)), "ReLU gap").max())
    return Outcome(f"max |pred − obs| {fmt(gap)}", (at_most("max |pred − obs|", gap, 0.2),), gap)


CLAIMS: list[Claim] = [
    Claim("fig7.dip", "7", "Observed and predicted ρ dip at intermediate data decay α.", "",
          "an interior minimum ≥ 0.01 below both ends in ≥ 75% of the curves", ("first_order",), dip),
    Claim("fig7.quadratic_width", "7", "For quadratic nets the prediction matches better at k = 1024 than k = 128.",
          "", "mean |pred − obs| over α smaller at the largest width, for every task", ("first_order",),
          quadratic_width),
    Claim("fig7.relu_qualitative", "7", "For ReLU nets prediction and observation agree qualitatively.", "",
          "max |pred − obs| ≤ 0.2", ("first_order",), relu_qualitative),
]
