"""Fig 2: UC vs C-NFC on real data: (A) MLP trajectories, (B) per-layer init/final summary over six
datasets, (C) VGG-11 on CIFAR-10, (D) GPT on Shakespeare-char."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.figure import Figure, SubFigure

from featlearn.figures.alignment.panels import last_finite
from featlearn.figures.alignment.real_panels import (
    NFC_LABEL,
    NFC_VARS,
    PEARSON,
    dataset_name,
    missing_datasets,
    nfc_panel,
    present_seeds,
    run_label,
)
from featlearn.figures.spread import sample_sd, spread_note
from featlearn.figures.style import apply_style, figure, finish, suptitle

EXPERIMENTS = ("real_mlp", "vgg_cifar", "gpt_shakespeare")

SHOWN_DATASET = "cifar10"  # (A): unstated in the paper; CIFAR-10 is gen_plots.py's default


def mlp_trajectories(sub: SubFigure, mlp: xr.Dataset) -> None:
    """(A) one panel per hidden layer: UC/C-NFC vs epoch of the MLP on CIFAR-10 (or the first
    dataset the store has, said in the title)."""
    dataset = SHOWN_DATASET if SHOWN_DATASET in mlp.dataset.values else str(mlp.dataset.values[0])
    title = f"A · MLP on {dataset_name(dataset)}"
    if dataset != SHOWN_DATASET:
        title += f" ({dataset_name(SHOWN_DATASET)} is not in this store)"
    run = present_seeds(mlp.sel(dataset=dataset), "train_loss")
    axes = sub.subplots(1, mlp.sizes["layer"], sharey=True, squeeze=False)[0]
    for ax, layer in zip(axes, mlp.layer.values):
        handles = nfc_panel(ax, run, PEARSON, f"layer {layer}", "epoch", layer=layer)
        ax.set_xlabel("epoch (0 = after warm-up)")
    axes[0].set_ylabel(NFC_LABEL)
    axes[0].legend(handles=handles, frameon=False)
    suptitle(sub, run_label(title, run, "train_loss"))


def layer_summary(sub: SubFigure, mlp: xr.Dataset) -> None:
    """(B) UC/C-NFC at init (epoch 0, every run's first row) and at each run's last epoch, per layer, mean ± sd over
    every (dataset, seed) run present. Diverged runs are left out of both, and listed."""
    runs = mlp.stack(run=("dataset", "seed"))
    ran = runs.train_loss.notnull().any("step").values
    diverged = runs.diverged.values == 1
    keep = runs.isel(run=np.flatnonzero(ran & ~diverged))
    ax = sub.subplots()
    for i, (var, color, label) in enumerate(NFC_VARS):
        nfc = keep[var].sel(convention=PEARSON)
        for j, (when, values, face) in enumerate([("init", nfc.isel(step=0), "white"),
                                                  ("final", last_finite(nfc), color)]):
            ax.errorbar(values.layer.values + 0.24 * (2 * i + j) - 0.36, values.mean("run"),
                        yerr=sample_sd(values, "run"), fmt="os"[j], color=color, markerfacecolor=face, capsize=2,
                        label=f"{label} {when}")
    ax.set_xticks(mlp.layer.values)
    ax.set_xlabel("hidden layer")
    ax.set_ylabel(NFC_LABEL)
    ax.legend(frameon=False, fontsize=6, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.2))
    datasets = sorted({str(d) for d in keep.dataset.values}, key=list(mlp.dataset.values).index)
    notes = [f"{spread_note(keep.sizes['run'], 'run')}: {', '.join(dataset_name(d) for d in datasets)}"]
    if diverged.any():
        notes.append("left out, diverged: " + ", ".join(
            f"{dataset_name(d)} seed {s}" for d, s in runs.run.values[diverged]))
    if missing := missing_datasets(mlp):
        notes.append(f"not in this store: {', '.join(missing)}")
    ax.set_title("\n".join(textwrap.fill(n, 48) for n in notes), fontsize=6)
    suptitle(sub, "B · MLP, every layer: init vs final")


def vgg_trajectories(sub: SubFigure, vgg: xr.Dataset) -> None:
    """(C) one panel per conv layer of VGG-11: UC/C-NFC vs epoch."""
    run = present_seeds(vgg, "train_loss")
    axes = sub.subplots(2, int(np.ceil(vgg.sizes["layer"] / 2)), sharex=True, squeeze=False)
    for ax, layer in zip(axes.flat, vgg.layer.values):
        nfc_panel(ax, run, PEARSON, f"conv layer {layer}", "epoch", layer=layer)
    for ax in axes[-1]:
        ax.set_xlabel("epoch (0 = after warm-up)")
    for ax in axes[:, 0]:
        ax.set_ylabel(NFC_LABEL)
    suptitle(sub, run_label("C · VGG-11 (no BatchNorm) on CIFAR-10", run, "train_loss"))


def gpt_trajectories(sub: SubFigure, gpt: xr.Dataset) -> None:
    """(D) rows = attention blocks, columns = Q, K, V: UC/C-NFC vs iteration."""
    run = present_seeds(gpt, "val_loss")
    axes = sub.subplots(gpt.sizes["block"], gpt.sizes["proj"], sharex=True, squeeze=False)
    for row, block in zip(axes, gpt.block.values):
        for ax, proj in zip(row, gpt.proj.values):
            nfc_panel(ax, run, PEARSON, f"block {block} · {str(proj).upper()}", "step", block=block, proj=proj)
        row[0].set_ylabel(NFC_LABEL)
    for ax in axes[-1]:
        ax.set_xlabel("iteration")
    suptitle(sub, run_label("D · GPT (3 blocks) on Shakespeare-char", run, "val_loss"))


def draw(stores: dict[str, xr.Dataset]) -> Figure:
    """(A) and (B) on top, (C) and (D) below; UC blue, C green everywhere."""
    apply_style()
    mlp = stores["real_mlp"]
    fig = figure(15, 10.5, list(stores.values()))
    top, bottom = fig.subfigures(2, 1, height_ratios=[1, 2])
    a, b = top.subfigures(1, 2, width_ratios=[5, 1.6])
    c, d = bottom.subfigures(1, 2, width_ratios=[4, 3])
    mlp_trajectories(a, mlp)
    layer_summary(b, mlp)
    vgg_trajectories(c, stores["vgg_cifar"])
    gpt_trajectories(d, stores["gpt_shakespeare"])
    suptitle(fig, "Fig 2 · uncentered (UC) vs centered (C) NFC on real data, init scale 1; "
                  r"$\bar\rho$ = Pearson throughout, as in the authors' code")
    return fig


def render(stores: dict[str, xr.Dataset], out: Path) -> None:
    """Draw Fig 2 and save it with the shared footer."""
    finish(draw(stores), out)
