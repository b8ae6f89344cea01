"""The checks of the neural-network figures (7–12) and the claims each network's figures make alike: its SVD figure
(7 MLP, 8 ResNet, 9 VGG) and its NFA figure (10, 11, 12).

Neural-network stores (``collapse_mlp``, ``collapse_resnet``, ``collapse_vgg``): nc1 over (dataset, seed, epoch,
layer, stage ∈ {input, right, left}); phi, nfa_sqrt over (dataset, seed, epoch, layer); train_loss over (dataset,
seed, epoch).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import xarray as xr

from featlearn.claims.core import Claim
from featlearn.claims.reading import final, fmt, mean_sd, seed_mean, values
from featlearn.claims.terms import Outcome, at_least, below
from featlearn.claims.tiers import PaperNumber

NFA_CHANCE = 0.04  # the paper's chance level of the NFA correlation
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
    first, last = values(loss.isel(step=0), "first train loss"), values(final(loss), "final train loss")
    ratio = first / last
    return Outcome(", ".join(f"{d} {fmt(r)}×" for d, r in zip(loss.dataset.values, ratio)),
                   (at_least("smallest first/last loss ratio", ratio.min(), 10),), float(ratio.min()))


def svd_claims(fig: str, store: str, arch: str, label: str) -> list[Claim]:
    """The two claims of a network's SVD figure: where NC1 falls within a layer (``label``: the figures it reads)."""
    return [
        Claim(f"fig{fig}.{arch}_phi_majority", label,
              f"Most of each layer's NC1 reduction comes from the right singular structure ({arch}).", "",
              "φ_l > 0.5 in ≥ 3 of 5 layers at the final epoch, every dataset", (store,), phi_majority),
        Claim(f"fig{fig}.{arch}_relu_small", label, f"The ReLU step changes NC1 only a little ({arch}).", "",
              "median |Δ log NC1| of the ReLU step < that of the right-singular step", (store,), relu_step_small),
    ]


def nfa_claims(fig: str, store: str, arch: str, reported: tuple[str, float, float] | None = None) -> list[Claim]:
    """The two claims of a network's NFA figure: the NFA correlation at the end of training (``reported``: the
    dataset, mean and sd the paper prints for it), the train loss."""
    paper_value, number = "", None
    if reported is not None:
        dataset, mean, sd = reported
        paper_value, number = f"{mean:g} ± {sd:g} ({DATASET_TITLES[dataset]})", PaperNumber(mean, sd)
    return [
        Claim(f"fig{fig}.{arch}_nfa", fig, f"The NFA correlation is well above chance at the end of training ({arch}).",
              paper_value, "final mean sqrt-NFA over layers and seeds ≥ 0.2 (5× chance 0.04), every dataset", (store,),
              functools.partial(nfa_above_chance, reported=reported and reported[0]), paper_number=number),
        Claim(f"fig{fig}.{arch}_loss_falls", fig, f"The train loss falls by orders of magnitude ({arch}).", "",
              "train loss falls ≥ 10× from the first to the last epoch, every dataset", (store,), loss_falls,
              needs_training=False),
    ]
