"""The checks of the neural-network figures (7–12) and the claims each network's figures make alike: its SVD figure
(7 MLP, 8 ResNet, 9 VGG) and its NFA figure (10, 11, 12).

Neural-network stores (``collapse_mlp``, ``collapse_resnet``, ``collapse_vgg``): nc1 over (dataset, seed, epoch,
layer, stage ∈ {input, right, left}); phi, nfa_sqrt over (dataset, seed, epoch, layer); w_over_t, b_over_t (of h⁶,
the readout's input) and train_loss over (dataset, seed, epoch).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import xarray as xr

from featlearn.claims.core import Claim
from featlearn.claims.reading import final, first, fmt, mean_sd, seed_mean, values
from featlearn.claims.terms import Outcome, above, at_least, below
from featlearn.claims.tiers import PaperNumber

NFA_CHANCE = 0.04  # the paper's chance level of the NFA correlation
NC1_FALL = 10  # ours: the paper draws NC1 falling over training by orders of magnitude (log axis), gives no number
DATASET_TITLES = {"mnist": "MNIST", "cifar10": "CIFAR-10", "svhn": "SVHN"}


def _final(da: xr.DataArray) -> xr.DataArray:
    """Each run's value at its last measured epoch; seeds not run at this scale (all NaN) left out."""
    return final(da).dropna("seed", how="all")


def phi_majority(ds: xr.Dataset) -> Outcome:
    """Seed-mean φ_l at the final epoch > 0.5 in at least 3 of the 5 layers, in every dataset."""
    phi = seed_mean(final(ds.phi))
    counts = [(str(d), int((values(phi.sel(dataset=d), f"φ ({d})") > 0.5).sum())) for d in phi.dataset.values]
    fewest = min(n for _, n in counts)
    return Outcome(", ".join(f"{d} {n} of {phi.sizes['layer']} layers" for d, n in counts),
                   (at_least("fewest layers with φ > 0.5", fewest, 3),), float(fewest))


def relu_step_small(ds: xr.Dataset) -> Outcome:
    """|log NC1(left) − log NC1(right)| is below |log NC1(right) − log NC1(input)| at the final epoch (seed means,
    median over datasets and layers): the ReLU changes NC1 less than the right singular vectors do."""
    nc1 = seed_mean(final(ds.nc1))
    inp, right, left = (np.log(values(nc1.sel(stage=s), f"NC1 {s}")) for s in ("input", "right", "left"))
    relu, linear = float(np.median(np.abs(left - right))), float(np.median(np.abs(right - inp)))
    return Outcome(f"median |Δ log NC1|: ReLU step {fmt(relu)}, right-singular step {fmt(linear)}",
                   (below("ReLU step / right-singular step", relu / linear if linear else math.inf, 1),),
                   relu / linear if linear else None)


def nc1_falls(ds: xr.Dataset) -> Outcome:
    """Seed-mean NC1 of each layer's output ReLU(W_l h^l) (the red curve) from the first to the last epoch, per
    dataset: φ apportions a layer's NC1 reduction, which means something only where NC1 really falls. Every layer's
    output must end lower than it started, and the last layer's (h⁶, the readout's input) ≥ ``NC1_FALL``× lower."""
    nc1 = seed_mean(ds.nc1.sel(stage="left")).transpose("dataset", "step", "layer")
    start, end = values(first(nc1), "NC1 at the first epoch"), values(final(nc1), "NC1 at the last epoch")
    ratio = start / end  # (dataset, layer)
    last = ratio[:, -1]
    per = ", ".join(f"{d} {fmt(a)} → {fmt(b)} ({fmt(r)}×)"
                    for d, a, b, r in zip(nc1.dataset.values, start[:, -1], end[:, -1], last))
    return Outcome(f"last layer's NC1 {per}; smallest fall over layers {fmt(ratio.min())}×",
                   (above("smallest first/last NC1 ratio over layers and datasets", ratio.min(), 1),
                    at_least("smallest first/last NC1 ratio of the last layer", last.min(), NC1_FALL)),
                   float(last.min()))


def within_over_total_falls(ds: xr.Dataset) -> Outcome:
    """Seed-mean tr Σ_W / tr Σ_T of h⁶ at the last epoch below its value at the first, in every dataset: within-class
    variability falls relative to the total. tr Σ_B / tr Σ_T is its complement (they sum to 1), so it rises."""
    wt, bt = seed_mean(ds.w_over_t), seed_mean(ds.b_over_t)
    start, end = values(first(wt), "tr Σ_W/tr Σ_T first"), values(final(wt), "tr Σ_W/tr Σ_T last")
    b_start, b_end = values(first(bt), "tr Σ_B/tr Σ_T first"), values(final(bt), "tr Σ_B/tr Σ_T last")
    per = ", ".join(f"{d} W/T {fmt(a)} → {fmt(b)}, B/T {fmt(c)} → {fmt(e)}"
                    for d, a, b, c, e in zip(wt.dataset.values, start, end, b_start, b_end))
    return Outcome(per, (above("smallest first − last tr Σ_W/tr Σ_T over datasets", (start - end).min(), 0),),
                   float((start / end).min()))


def nfa_above_chance(ds: xr.Dataset, reported: str | None = None) -> Outcome:
    """Final mean sqrt-NFA over layers and seeds, per dataset, clearly above chance (≥ 5 × 0.04); ``reported``: the
    dataset whose mean the paper prints."""
    per = {str(d): values(_final(ds.nfa_sqrt.sel(dataset=d)), f"NFA ({d})") for d in ds.dataset.values}
    low = min(float(v.mean()) for v in per.values())
    compared = float(per[reported].mean()) if reported in per else None
    return Outcome(", ".join(f"{d} {mean_sd(v)}" for d, v in per.items()),
                   (at_least("lowest dataset's mean NFA", low, 5 * NFA_CHANCE),), low, compared=compared)


def loss_falls(ds: xr.Dataset) -> Outcome:
    """Seed-mean train loss falls ≥ 10× from the first to the last epoch, in every dataset."""
    loss = seed_mean(ds.train_loss)
    start, end = values(loss.isel(step=0), "first train loss"), values(final(loss), "final train loss")
    ratio = start / end
    return Outcome(", ".join(f"{d} {fmt(r)}×" for d, r in zip(loss.dataset.values, ratio)),
                   (at_least("smallest first/last loss ratio", ratio.min(), 10),), float(ratio.min()))


def svd_claims(fig: str, store: str, arch: str, label: str) -> list[Claim]:
    """The claims of a network's SVD figure: where NC1 falls within a layer, and that it falls over training at all
    (``label``: the figures it reads)."""
    return [
        Claim(f"fig{fig}.{arch}_phi_majority", label,
              f"Most of each layer's NC1 reduction comes from the right singular structure ({arch}).", "",
              "φ_l > 0.5 in ≥ 3 of 5 layers at the final epoch, every dataset", (store,), phi_majority),
        Claim(f"fig{fig}.{arch}_relu_small", label, f"The ReLU step changes NC1 only a little ({arch}).", "",
              "median |Δ log NC1| of the ReLU step < that of the right-singular step", (store,), relu_step_small),
        Claim(f"fig{fig}.{arch}_nc1_falls", label,
              f"NC1 falls over training, so the reduction φ apportions is real ({arch}).", "",
              f"seed-mean NC1 of every layer's output lower at the last epoch than at the first, and the last layer's "
              f"≥ {NC1_FALL}× lower (ours), every dataset", (store,), nc1_falls),
    ]


def nfa_claims(fig: str, store: str, arch: str, reported: tuple[str, float, float] | None = None) -> list[Claim]:
    """The claims of a network's NFA figure, one per column: the NFA correlation at the end of training (``reported``:
    the dataset, mean and sd the paper prints for it), the NC ratios of the last hidden layer, the train loss."""
    paper_value, number = "", None
    if reported is not None:
        dataset, mean, sd = reported
        paper_value, number = f"{mean:g} ± {sd:g} ({DATASET_TITLES[dataset]})", PaperNumber(mean, sd)
    return [
        Claim(f"fig{fig}.{arch}_nfa", fig, f"The NFA correlation is well above chance at the end of training ({arch}).",
              paper_value, "final mean sqrt-NFA over layers and seeds ≥ 0.2 (5× chance 0.04), every dataset", (store,),
              functools.partial(nfa_above_chance, reported=reported and reported[0]), paper_number=number),
        Claim(f"fig{fig}.{arch}_within_falls", fig,
              f"Within-class variability of the last hidden layer falls relative to the total, between-class rises "
              f"({arch}).", "", "seed-mean tr Σ_W/tr Σ_T of h⁶ lower at the last epoch than at the first, every "
              "dataset (tr Σ_B/tr Σ_T = 1 − it rises)", (store,), within_over_total_falls),
        Claim(f"fig{fig}.{arch}_loss_falls", fig, f"The train loss falls by orders of magnitude ({arch}).", "",
              "train loss falls ≥ 10× from the first to the last epoch, every dataset", (store,), loss_falls,
              needs_training=False),
    ]
