"""Fig 12: adaptive SLO vs standard GD in a 3-hidden-layer MLP: UC-NFC of every layer and test loss."""

from __future__ import annotations

from pathlib import Path

import xarray as xr
from matplotlib.lines import Line2D

from featlearn.figures.alignment.panels import (
    CONVENTION,
    experiment_config,
    plot_seed_mean,
    seeds_note,
    with_divergence,
)
from featlearn.figures.style import apply_style, figure, finish, grid, legend_right, ordered_colors, suptitle
from featlearn.figures.ticks import log_scale

EXPERIMENTS = ("adaptive_slo",)

LINESTYLES = {"slo_adaptive": "-", "gd": "--"}


def render(stores: dict[str, xr.Dataset], out: Path) -> None:
    """(a) UC-NFC per layer (one colour each), SLO solid, GD dashed; (b) test loss of both, log y,
    because the text claims adaptive SLO also generalizes better."""
    apply_style()
    ds = stores["adaptive_slo"]
    cfg = experiment_config(ds)
    lrs = dict(zip(cfg["sweep"]["optimizer"], cfg["train"]["lr"]))
    adaptive = cfg["train"]["slo_adaptive"]
    names = {"gd": f"standard GD, lr {lrs['gd']:g}",
             "slo_adaptive": f"adaptive SLO, lr {lrs['slo_adaptive']:g}, s = {adaptive['s']:g}, "
                             f"ε = {adaptive['eps']:g}"}
    layers = [int(layer) for layer in ds.layer.values]
    colors = dict(zip(layers, ordered_colors(len(layers))))
    fig = figure(10, 3.0, ds)
    axes = grid(fig, 1, 2)
    nfc_ax, loss_ax = axes[0]
    method_handles = []
    for method in ds.optimizer.values:
        run = ds.sel(optimizer=method)
        style = LINESTYLES[str(method)]
        for layer in layers:
            values = run.uc_nfc.sel(layer=layer, convention=CONVENTION)
            plot_seed_mean(nfc_ax, values, colors[layer], f"layer {layer}", linestyle=style)
        plot_seed_mean(loss_ax, run.test_loss, "0.2", "", linestyle=style)
        method_handles.append(Line2D([], [], color="0.2", linestyle=style,
                                     label=with_divergence(names[str(method)], run)))
    nfc_ax.set(title=r"(a) UC-NFC $\rho(W^\top W, W^\top K W)$ per hidden layer", xlabel="step")
    loss_ax.set(title="(b) test loss", xlabel="step")
    log_scale(loss_ax)
    layer_handles = [Line2D([], [], color=colors[layer], label=f"layer {layer}") for layer in layers]
    legend_right(loss_ax, layer_handles + method_handles)
    suptitle(fig, f"Fig 12 · chain monomial r={cfg['data']['r']}, init scale "
                  f"{', '.join(f'{s:g}' for s in cfg['model']['init_scales'])}, ρ = cosine; {seeds_note(ds)}")
    finish(fig, out)
