"""Fig 4: SLO vs standard GD on the chain monomial: UC/C-NFC, R_C and loss vs step, and F, Ḡ at s₀ = 1."""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from featlearn.figures.alignment.panels import (
    Panel,
    egop_note,
    experiment_config,
    heatmap,
    seeds_note,
    trajectory_row,
    with_divergence,
)
from featlearn.figures.style import apply_style, figure, finish, grid, legend_right, suptitle

EXPERIMENTS = ("slo_sweep",)

PANELS = (
    Panel("uc_nfc", "layer 1 · UC-NFC", layer=1),
    Panel("c_nfc", "layer 1 · C-NFC", layer=1),
    Panel("ratio_c_uc", "layer 1 · $R_C$ (centered / uncentered)", layer=1, log=True),
    Panel("train_loss", "train loss", log=True),
)


def render(stores: dict[str, xr.Dataset], out: Path) -> None:
    """Rows A (GD) and B (SLO): layer-1 trajectories coloured by s₀. Row 3: F⁽⁰⁾ and Ḡ⁽⁰⁾ after
    training at the s₀ nearest 1 (seed 0), (C) GD and (D) SLO, with their ρ to the EGOP."""
    apply_style()
    ds = stores["slo_sweep"]
    cfg = experiment_config(ds)
    slo = cfg["train"]["slo"]
    lrs = ", ".join(f"{s0:g}→{lr:g}" for s0, lr in zip(cfg["sweep"]["init_scale"], cfg["train"]["lr"]))
    rows = {
        "gd": "A · standard GD",
        "slo": f"B · SLO  C = {', '.join(f'{c:g}' for c in slo['speeds'])}, ε = {slo['eps']:g}",
    }
    fig = figure(11, 7.6, ds)
    axes = grid(fig, 3, 4)
    for row, (method, label) in zip(axes, rows.items()):
        legend_right(row[-1], trajectory_row(row, ds.sel(optimizer=method), PANELS), "init scale")
        row[0].set_ylabel(label, fontweight="bold")
    s0 = float(ds.init_scale.sel(init_scale=1.0, method="nearest"))
    letters = {"gd": "C · GD", "slo": "D · SLO"}
    for col, (method, matrix) in enumerate([(m, x) for m in rows for x in ("nfm", "agop")]):
        run = ds.sel(optimizer=method, init_scale=s0)
        name = "NFM F⁽⁰⁾" if matrix == "nfm" else "AGOP Ḡ⁽⁰⁾"
        heatmap(axes[2, col], run[matrix].isel(seed=0), f"{letters[method]} · {name}, s₀ = {s0:g}",
                with_divergence(egop_note(run, matrix), run, "\n"))
    suptitle(fig, f"Fig 4 · chain monomial r={cfg['data']['r']}, first layer, ρ = cosine, lr per s₀ {lrs}; "
                  f"{seeds_note(ds)} (heatmaps: seed 0, each ÷ max |entry|)")
    finish(fig, out)
