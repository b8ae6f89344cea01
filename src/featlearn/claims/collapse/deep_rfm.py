"""The checks of the Deep RFM figures (1, 3–6) and the four claims Figs 3 (ReLU) and 4 (cos) make alike.

Deep RFM stores (``deep_rfm_relu``, ``deep_rfm_cos``): dims (dataset, layer, stage ∈ {X, MX, PhiMX}) and Gram block
means per gram layer.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from featlearn.claims.core import Claim
from featlearn.claims.diagnoses import Diagnosis, with_readings
from featlearn.claims.reading import fmt, values
from featlearn.claims.terms import Outcome, StoreCheck, above, at_least, at_most, fact
from featlearn.claims.tiers import PaperNumber


def mx_below_x(ds: xr.Dataset) -> Outcome:
    """NC1(M^{1/2}X_l) < NC1(X_l) at every layer of every dataset: the AGOP projection collapses."""
    x, mx = values(ds.nc1.sel(stage="X"), "NC1(X)"), values(ds.nc1.sel(stage="MX"), "NC1(M^½X)")
    below = mx < x
    return Outcome(f"below at {int(below.sum())} of {below.size} (dataset, layer) points",
                   (above("least (NC1(X) − NC1(M^½X)) / NC1(X) over points", ((x - mx) / x).min(), 0),),
                   float(below.mean()))


def phi_not_better(ds: xr.Dataset) -> Outcome:
    """NC1(Φ(M^{1/2}X_l)) ≥ NC1(M^{1/2}X_l), allowing small violations (5% relative, at ≤ 10% of the points)."""
    mx, phi = values(ds.nc1.sel(stage="MX"), "NC1(M^½X)"), values(ds.nc1.sel(stage="PhiMX"), "NC1(Φ(M^½X))")
    holds = phi >= 0.95 * mx
    return Outcome(f"holds at {int(holds.sum())} of {holds.size} (dataset, layer) points",
                   (at_least("share of points", holds.mean(), 0.9),), float(holds.mean()))


def decays(var: str) -> StoreCheck:
    """``var`` of X_l at the last layer at least 10× below layer 1, in every dataset."""

    def check(ds: xr.Dataset) -> Outcome:
        x = ds[var].sel(stage="X")
        first, last = values(x.isel(layer=0), f"{var} layer 1"), values(x.isel(layer=-1), f"{var} last layer")
        ratio = first / last
        per = ", ".join(f"{d} {fmt(a)} → {fmt(b)} ({fmt(r)}×)"
                        for d, a, b, r in zip(ds.dataset.values, first, last, ratio))
        facts = {"last_low": fact(last.min(), f"lowest {var} of X at the last layer over datasets", var),
                 "last_high": fact(last.max(), f"highest {var} of X at the last layer over datasets", var),
                 "ratio_low": fact(ratio.min(), f"smallest layer-1 / last-layer {var} of X over datasets", var)}
        if "MX" in ds.stage.values:
            facts["mx_last_high"] = fact(np.nanmax(ds[var].sel(stage="MX").isel(layer=-1)),
                                         f"highest {var} of M^½X at the last layer over datasets", var)
        return Outcome(f"{per} by layer {int(x.layer[-1])}",
                       (at_least("smallest layer-1/last ratio", ratio.min(), 10),), float(ratio.min()), facts)

    return check


def _chosen(ds: xr.Dataset, datasets: tuple[str, ...] | None) -> list[str]:
    """The datasets a Gram check reads: ``datasets`` (None: all the store has); KeyError naming those it lacks."""
    chosen = [d for d in (datasets or ds.dataset.values) if d in ds.dataset.values]
    if not chosen:
        present = ", ".join(map(str, ds.dataset.values))
        raise KeyError(f"dataset {', '.join(datasets or ())} (the store has {present})")
    return chosen


def etf_between(block: xr.DataArray) -> float:
    """−1/(K−1) for a K×K Gram block mean: the between-class cosine of the simplex ETF (Def. 3.1)."""
    return -1 / (block.sizes["class_a"] - 1)


def etf_emerges(datasets: tuple[str, ...] | None = None) -> StoreCheck:
    """At the last gram layer the Gram is the simplex ETF (within-class cosine > 0.9, between-class within ±0.05 of
    −1/(K−1)), and the first gram layer is less collapsed (lower within-class cosine). The paper's within-class 1 is
    held to the lowest dataset's."""

    def check(ds: xr.Dataset) -> Outcome:
        ok, parts, within, between, gain = [], [], [], [], []
        for d in _chosen(ds, datasets):
            block = ds.gram_block_mean.sel(dataset=d)
            off = ~np.eye(block.sizes["class_a"], dtype=bool)
            first, last = values(block.isel(gram_layer=0), "Gram layer 1"), values(block.isel(gram_layer=-1), "Gram")
            w_first, w_last, b_last = np.diag(first).mean(), np.diag(last).mean(), last[off].mean()
            ok.append(w_last > 0.9 and abs(b_last - etf_between(block)) <= 0.05 and w_first < w_last)
            within.append(w_last)
            between.append(abs(b_last - etf_between(block)))
            gain.append(w_last - w_first)
            parts.append(f"{d}: within {fmt(w_first)} → {fmt(w_last)}, between {fmt(b_last)} "
                         f"(layers {int(block.gram_layer[0])} → {int(block.gram_layer[-1])})")
        terms = (above("lowest last-layer within-class cosine", min(within), 0.9),
                 at_most("largest |between + 1/(K−1)|", max(between), 0.05),
                 above("least within-class gain, layer 1 → last", min(gain), 0))
        return Outcome("; ".join(parts), terms, float(sum(ok)), compared=float(min(within)))

    return check


def between_reaches_etf(datasets: tuple[str, ...] | None = None) -> StoreCheck:
    """The mean between-class cosine of the last gram layer within ±0.05 of −1/(K−1) in every dataset; the paper's
    −1/9 is held to the dataset's farthest from it."""

    def check(ds: xr.Dataset) -> Outcome:
        parts, between = [], []
        for d in _chosen(ds, datasets):
            block = ds.gram_block_mean.sel(dataset=d)
            last = values(block.isel(gram_layer=-1), "Gram")
            between.append(float(last[~np.eye(block.sizes["class_a"], dtype=bool)].mean()))
            parts.append(f"{d} {fmt(between[-1])} against {fmt(etf_between(block))} (layer "
                         f"{int(block.gram_layer[-1])})")
        target = etf_between(ds.gram_block_mean)
        farthest = max(between, key=lambda b: abs(b - target))
        return Outcome(", ".join(parts), (at_most("largest |between + 1/(K−1)|", abs(farthest - target), 0.05),),
                       farthest, compared=farthest)

    return check


ETF = "last layer within > 0.9, between within ±0.05 of −1/(K−1); layer 1 less collapsed"  # the ETF criterion
BETWEEN = "last layer's mean between-class cosine within ±0.05 of −1/(K−1), every dataset"
ETF_WITHIN, ETF_BETWEEN = PaperNumber(1.0), PaperNumber(-1 / 9)  # the ETF's cosines at K = 10 classes (Def. 3.1)


def claims(fig: str, store: str, activation: str, nc1: tuple[Diagnosis, ...] = (),
           readings: dict[str, str] | None = None) -> list[Claim]:
    """The four collapse-through-depth claims of one Deep RFM figure, with the diagnoses of its NC1 decay, which also
    reads the stores of the other ``readings`` of its settings (``diagnoses.with_readings``)."""
    readings = readings or {}
    return [
        Claim(f"fig{fig}.mx_below_x", fig, f"The AGOP projection lowers NC1 at every layer (Deep RFM, {activation}).",
              "", "NC1(M^½X_l) < NC1(X_l) at every layer and dataset", (store,), mx_below_x),
        Claim(f"fig{fig}.phi_not_better", fig,
              f"The random-feature map does not reduce NC1 further (Deep RFM, {activation}).", "",
              "NC1(Φ(M^½X_l)) ≥ 0.95·NC1(M^½X_l) at ≥ 90% of (dataset, layer) points", (store,), phi_not_better),
        Claim(f"fig{fig}.nc1_decays", fig, f"NC1 of X_l falls roughly exponentially with depth ({activation}).", "",
              "NC1(X) at the last layer ≥ 10× below layer 1, every dataset", (store, *readings.values()),
              with_readings(decays("nc1"), readings) if readings else decays("nc1"), nc1),
        Claim(f"fig{fig}.nc2_decays", fig, f"NC2 of X_l falls with depth ({activation}).", "",
              "NC2 (mean square) at the last layer ≥ 10× below layer 1, every dataset", (store,), decays("nc2_meansq")),
    ]
