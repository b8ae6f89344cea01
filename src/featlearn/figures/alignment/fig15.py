"""Fig 15: losses and relative weight change ‖W − W₀‖/‖W‖ of (A) VGG-11 on CIFAR-10, per conv layer,
and (B) GPT on Shakespeare-char, per Q, K, V projection."""

from __future__ import annotations

from pathlib import Path

import xarray as xr
from matplotlib.figure import Figure, SubFigure

from featlearn.figures.alignment.panels import plot_seed_mean
from featlearn.figures.alignment.real_panels import (
    WEIGHT_CHANGE,
    loss_panel,
    present_seeds,
    run_label,
    weight_change_panel,
)
from featlearn.figures.style import apply_style, figure, finish, suptitle

EXPERIMENTS = ("vgg_cifar", "gpt_shakespeare")


def vgg_row(sub: SubFigure, vgg: xr.Dataset) -> None:
    """(A) column 1 the train/test loss, then one column per conv layer (shared y), as the paper's figure."""
    run = present_seeds(vgg, "train_loss")
    axes = sub.subplots(1, 1 + vgg.sizes["layer"], squeeze=False)[0]
    handles = loss_panel(axes[0], [(run.train_loss, "k", "train", "-"), (run.test_loss, "k", "test", "--")],
                         "MSE loss", "epoch")
    axes[0].legend(handles=handles, frameon=False)
    for ax, layer in zip(axes[1:], vgg.layer.values):
        weight_change_panel(ax, run, "layer", "conv layer", f"conv layer {layer}", "epoch", layer=[layer])
    for ax in axes[2:]:
        ax.sharey(axes[1])
    for ax in axes:
        ax.set_xlabel("epoch")
    suptitle(sub, run_label("A · VGG-11 (no BatchNorm) on CIFAR-10", run, "train_loss"))


def gpt_row(sub: SubFigure, gpt: xr.Dataset) -> None:
    """(B) column 1 the training loss of every iteration and the validation loss, then Q, K, V with
    one line per attention block (dark = block 1)."""
    run = present_seeds(gpt, "val_loss")
    axes = sub.subplots(1, 1 + gpt.sizes["proj"], squeeze=False)[0]
    handles = [plot_seed_mean(axes[0], run.loss, "0.55", "train (every iteration)", x="iteration"),
               *loss_panel(axes[0], [(run.val_loss, "k", "validation", "--")], "cross-entropy loss", "step")]
    axes[0].legend(handles=handles, frameon=False)
    for ax, proj in zip(axes[1:], gpt.proj.values):
        blocks = weight_change_panel(ax, run, "block", "block", f"{str(proj).upper()} projection", "step",
                                     proj=proj)
    for ax in axes[2:]:
        ax.sharey(axes[1])
    axes[-1].legend(handles=blocks, frameon=False)
    for ax in axes:
        ax.set_xlabel("iteration")
    suptitle(sub, run_label("B · GPT (3 blocks) on Shakespeare-char", run, "val_loss"))


def draw(stores: dict[str, xr.Dataset]) -> Figure:
    """(A) above (B), mean ± sd over seeds where there are several."""
    apply_style()
    fig = figure(16, 5.6, list(stores.values()))
    a, b = fig.subfigures(2, 1)
    vgg_row(a, stores["vgg_cifar"])
    gpt_row(b, stores["gpt_shakespeare"])
    suptitle(fig, f"Fig 15 · losses and relative weight change {WEIGHT_CHANGE}")
    return fig


def render(stores: dict[str, xr.Dataset], out: Path) -> None:
    """Draw Fig 15 and save it with the shared footer."""
    finish(draw(stores), out)
