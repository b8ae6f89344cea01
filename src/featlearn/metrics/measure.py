"""Per-run metric extraction: snapshots in, a labelled xarray Dataset out (docs/design.md, Stores).

``measure_run`` is the one loop over a run's snapshots: it rebuilds the model at each snapshot the run reached and
hands it to the run's measurement family (``measure.family``), whose module in ``DISPATCH`` says what a snapshot
yields (``Family``); quantities are stacked over time, NaN at the steps the run never reached (it diverged), and the
run's status joins them. Time is the dimension ``step`` labelled by ``step`` or, for runs counted in epochs, by
``epoch`` with ``step_of_epoch`` beside it (``featlearn.metrics.axes``); ``combine_runs`` aligns a sweep's runs on that
label.
Everything runs on the job's ``device``: the models, the inputs, the Jacobians and the float64 algebra (K, NFC, NC);
only finished numbers come back to the CPU.
"""

from __future__ import annotations

import importlib
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

import numpy as np
import torch
import xarray as xr
from torch import nn

from featlearn import hooks
from featlearn.metrics import nfa
from featlearn.metrics.axes import TIME_ATTRS, epoch_axis, step_axis
from featlearn.models import build_model

log = logging.getLogger(__name__)

# measure.family -> the module holding its ``Measurement`` (``Family``), imported only by a run of that family; a
# literal that ``featlearn.pipeline.deps`` reads, so a job's code inputs include its family's module only (a conv edit
# never reruns an MLP measurement). Each architecture's family: ``models.DISPATCH``.
DISPATCH = {
    "nfa": "featlearn.metrics.mlp_nfa",
    "conv_nfa": "featlearn.metrics.conv_nfa",
    "attention_nfa": "featlearn.metrics.attention_nfa",
    "collapse": "featlearn.metrics.collapse_measure",
}

LONG_NAMES = nfa.LONG_NAMES | {
    "k_dispersion": "std(eig K) / mean(eig K)",
    "train_loss": "training MSE at the snapshot (full batch)",
    "test_loss": "test MSE at the snapshot",
    "rho_nfm_egop": "ρ(F⁽⁰⁾, EGOP)",
    "rho_agop_egop": "ρ(Ḡ⁽⁰⁾, EGOP)",
    "nfm": "first-layer NFM F⁽⁰⁾ = W⁽⁰⁾ᵀW⁽⁰⁾ at the last finite snapshot",
    "agop": "first-layer AGOP Ḡ⁽⁰⁾ = W⁽⁰⁾ᵀK⁽⁰⁾W⁽⁰⁾ at the last finite snapshot",
    "egop": "EGOP of the target, analytic, divided by Var(y)",
    "corrupted_agop": "W⁽⁰⁾ᵀQW⁽⁰⁾, Q = O diag(eig K⁽⁰⁾) Oᵀ with O Haar (draw 0)",
    "rho_nfm_corrupted": "ρ(F⁽⁰⁾, W⁽⁰⁾ᵀQW⁽⁰⁾) for each Q draw",
    "val_loss": "validation cross-entropy on fixed windows at the snapshot",
    "nfm_diag": "diag F⁽⁰⁾ at the end of training, averaged over colour channels",
    "agop_diag": "diag Ḡ⁽⁰⁾ at the end of training, averaged over colour channels",
    "corrupted_diag": "diag W⁽⁰⁾ᵀQW⁽⁰⁾ (Q draw 0), averaged over colour channels",
    "rho_diag_agop": "Pearson ρ(diag F⁽⁰⁾, diag Ḡ⁽⁰⁾)",
    "rho_diag_corrupted": "Pearson ρ(diag F⁽⁰⁾, diag W⁽⁰⁾ᵀQW⁽⁰⁾) for each Q draw",
    "speeds": "adaptive SLO speed C of each weight matrix at each step",
    "diverged": "1 if the run's loss became non-finite",
    "diverged_step": "step at which the loss became non-finite (NaN if never)",
}
# CF units: every quantity is a dimensionless correlation, ratio or matrix of dimensionless inputs and targets
# (MSE of standardized or ±1/one-hot targets), except the cross-entropy and the step of a divergence.
UNITS = {name: "1" for name in LONG_NAMES} | {"val_loss": "nats", "diverged_step": "steps"}
# the loss of every optimizer step, by the run's train.loss
LOSS_ATTRS = {"mse": {"long_name": "training MSE of every optimizer step", "units": "1"},
              "cross_entropy": {"long_name": "training cross-entropy of every optimizer step", "units": "nats"}}
COORD_ATTRS = {
    "layer": {"long_name": "layer ℓ counted from the input (1 = the first weight matrix)", "units": "1"},
    "block": {"long_name": "attention block (1 = the first)", "units": "1"},
    "proj": {"long_name": "attention projection W_q, W_k, W_v"},
    "convention": {"long_name": "correlation convention: cosine = the paper's ρ, pearson = the authors' Fig 2 code"},
    # sweep dimensions (config.yaml's sweep keys; alpha becomes spectrum)
    "seed": {"long_name": "seed of the run", "units": "1"},
    "init_scale": {"long_name": "first-layer init scale s₀", "units": "1"},
    "optimizer": {"long_name": "optimizer"},
    "spectrum": {"long_name": "input covariance spectrum λ_k"},
    "dataset": {"long_name": "dataset (stand-ins named in data_source)"},
}


class Family(Protocol):
    """What a measurement family adds to ``measure_run``'s loop: ``Measurement(spec, data, init, device)`` of its
    ``DISPATCH`` module, ``init`` being the model at initialization (the centering reference W₀)."""

    def snapshot(self, step: int, model: nn.Module) -> dict[str, object]:
        """The quantities of one snapshot by name, each a number or an array of the same shape at every snapshot."""

    def dataset(self, values: dict[str, np.ndarray], time_labels: xr.Dataset) -> xr.Dataset:
        """The run's variables on ``time_labels`` from ``values``: each quantity stacked over the time axis."""

    def extras(self) -> xr.Dataset:
        """What the store holds beyond the snapshots and the run's status (an MLP's final first-layer matrices)."""


def _model_at(spec: dict, data: dict, state: dict[str, torch.Tensor], device: torch.device) -> nn.Module:
    model = build_model(spec, data)
    model.load_state_dict(state)
    return model.to(device).eval()


class _Progress:
    """One log line per finished snapshot with the time left, so a slow job is told apart from a hung one."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self.began = total, 0, time.monotonic()
        hooks.current().start("snapshot")

    def step(self, label: str) -> None:
        self.done += 1
        hooks.current().tick()
        spent = time.monotonic() - self.began
        left = spent / self.done * (self.total - self.done)
        log.info("snapshot %d/%d (%s) measured; %.1f s so far, about %.0f s left", self.done, self.total, label,
                 spent, left)


def time_axis(record: dict, spec: dict) -> tuple[list[int], xr.Dataset]:
    """(snapshot steps, their labels on the dimension ``step``) of a run's measurements.

    Step-counted runs are labelled by ``step``; epoch-counted runs by ``epoch`` = epochs after the
    warm-up, with ``step_of_epoch`` (``featlearn.metrics.axes``); the initialization before a warm-up is
    the centering reference W₀ only, not a row.
    """
    plan = record["schedule"]
    if "epochs" not in spec["train"]:
        return plan["measure"], step_axis(plan["measure"])
    steps = [s for s in plan["measure"] if s >= plan["warmup_steps"]]
    return steps, epoch_axis([(s - plan["warmup_steps"]) / plan["steps_per_epoch"] for s in steps], steps)


def _describe(ds: xr.Dataset) -> xr.Dataset:
    """long_name and units on every variable of a measurement that the tables here name and that has none yet (the
    collapse quantities, the collapse head's layers and the per-step loss carry their own), ahead of its own attributes
    (an MLP NFC's ``convention``)."""
    for name in ds.variables:
        if "long_name" in ds[name].attrs:
            continue
        if name in LONG_NAMES:
            ds[name].attrs = {"long_name": LONG_NAMES[name], "units": UNITS[name], **ds[name].attrs}
        elif name in COORD_ATTRS or name in TIME_ATTRS:
            ds[name].attrs.update(COORD_ATTRS.get(name) or TIME_ATTRS[name])
    return ds


def measure_run(record: dict, data: dict, spec: dict, device: torch.device | str = "cpu") -> xr.Dataset:
    """One run's metric dataset, by the run's measurement family (``measure.family``): the NFA of
    MLP layers, of conv layers (VGG), of attention projections (GPT), or neural collapse; on ``device``."""
    name = spec["measure"].get("family", "nfa")
    if name not in DISPATCH:
        raise ValueError(f"unknown measure.family {name!r}")
    device = torch.device(device)
    steps, time_labels = time_axis(record, spec)
    snaps = record["snapshots"]
    with _exact_float32():
        init = _model_at(spec, data, snaps[0], device)
        family: Family = importlib.import_module(DISPATCH[name]).Measurement(spec, data, init, device)
        progress = _Progress(sum(step in snaps for step in steps))
        rows = {}
        for step in steps:
            if step in snaps:
                rows[step] = family.snapshot(step, _model_at(spec, data, snaps[step], device))
                progress.step(f"step {step}")
        ds = family.dataset(_stack(rows, steps), time_labels).merge(run_status(record, spec)).merge(family.extras())
    return _describe(ds)


def _stack(rows: dict[int, dict[str, object]], steps: list[int]) -> dict[str, np.ndarray]:
    """Each quantity of the measured snapshots over all ``steps``: NaN at a step the run never reached."""
    if not rows:
        raise ValueError("measure_run: the run reached none of the steps it measures (it diverged in its warm-up)")
    shapes = {name: np.shape(value) for name, value in next(iter(rows.values())).items()}
    stacked = {name: np.full((len(steps), *shape), np.nan) for name, shape in shapes.items()}
    for i, step in enumerate(steps):
        for name, value in rows.get(step, {}).items():
            stacked[name][i] = value
    return stacked


@contextmanager
def _exact_float32() -> Iterator[None]:
    """No TF32 while measuring: cuDNN convolutions use it by default on a GPU, and its 10-bit mantissa would move K by
    1e-3, so a store would depend on where it was computed."""
    flags = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = flags


def run_status(record: dict, spec: dict) -> xr.Dataset:
    """The loss of every optimizer step (MSE or cross-entropy, the run's ``train.loss``), whether (and when) the run
    diverged, and the speeds of adaptive SLO's steps when it ran them."""
    step = float("nan") if record["diverged_step"] is None else float(record["diverged_step"])
    losses = record["losses"].numpy()
    loss = LOSS_ATTRS[spec["train"].get("loss", "mse")]
    ds = xr.Dataset({"loss": (("iteration",), losses, loss)}, coords={"iteration": np.arange(len(losses))}).assign({
        "diverged": int(record["status"] == "diverged"), "diverged_step": step})
    if len(record["speeds"]):
        ds["speeds"] = (("iteration_speeds", "matrix"), record["speeds"].numpy())
    return ds


def combine_runs(runs: dict[str, tuple[dict, xr.Dataset]]) -> xr.Dataset:
    """One store for a sweep: every run's dataset placed on the sweep's named dimensions.

    ``runs`` maps run id to (sweep point, dataset). ``alpha`` becomes a ``spectrum`` label so
    that the isotropic case (alpha = None) is a selectable coordinate. Time stays the dimension
    ``step`` (``featlearn.metrics.axes``): step-counted runs are padded to the union of their steps;
    epoch-counted runs are aligned on ``epoch`` and padded to the union of their epochs, each
    run's optimizer steps in ``step_of_epoch`` (NaN past its end), because one epoch is a
    different step on datasets of different sizes.
    """
    parts, sweep = [], set()
    for point, ds in runs.values():
        coords = {("spectrum" if k == "alpha" else k): [spectrum_label(v) if k == "alpha" else v]
                  for k, v in point.items()}
        sweep |= set(coords)
        parts.append(ds.expand_dims(coords))
    # Runs of one sweep may differ in length (MNIST trains 50 epochs, the rest 150) and, counted in epochs, in
    # steps per epoch (datasets of different sizes): pad every other axis to the union first, so only the sweep
    # dims are concatenated, with epoch-counted runs aligned on their epoch (the same epoch is a different step
    # on each dataset); step_of_epoch keeps each run's own steps.
    by_epoch = ["epoch" in part.coords for part in parts]
    if any(by_epoch) and not all(by_epoch):
        raise ValueError("combine_runs: a sweep mixes runs counted in steps and in epochs (train.steps and "
                         "train.epochs); give every run of one experiment the same")
    if all(by_epoch):
        parts = [part.swap_dims(step="epoch") for part in parts]
    parts = xr.align(*parts, join="outer", exclude=sweep)
    store = xr.combine_by_coords(parts, join="outer", combine_attrs="drop_conflicts")
    if all(by_epoch):
        store = store.swap_dims(epoch="step")
    for name in sweep:
        if name not in COORD_ATTRS:
            raise KeyError(f"combine_runs: sweep dimension {name!r} has no long_name/units in "
                           "featlearn.metrics.measure.COORD_ATTRS; add it there")
        store[name].attrs.update(COORD_ATTRS[name])
    return store


def spectrum_label(alpha: float | None) -> str:
    """'isotropic' for Σ = I, else the eigenvalue decay written out: λ_k ∝ 1/(1+k^α)."""
    if alpha is None:
        return "isotropic"
    return "1/(1+k)" if alpha == 1 else f"1/(1+k^{alpha:g})"
