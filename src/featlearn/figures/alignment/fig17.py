"""Fig 17: SLO vs standard GD on SVHN (4 hidden layers, init 1): layer-1 UC-NFC, C-NFC and R_C vs
epoch, and the diagonals of F⁽⁰⁾ and Ḡ⁽⁰⁾ as images."""

from __future__ import annotations

from itertools import product
from pathlib import Path

import xarray as xr
from matplotlib.figure import Figure

from featlearn.figures.alignment.panels import experiment_config, plot_seed_mean
from featlearn.figures.alignment.real_panels import COSINE, diag_image, loss_panel, present_seeds, run_label
from featlearn.figures.style import apply_style, figure, finish, suptitle
from featlearn.figures.ticks import log_scale

EXPERIMENTS = ("svhn_slo",)

OPTIMIZERS = {"gd": ("0.25", "standard GD"), "slo": ("tab:red", "SLO")}
LAYER = 1  # the paper plots the first layer only
TRAJECTORIES = (("uc_nfc", "UC-NFC"), ("c_nfc", "C-NFC"),
                (("ratio_c_uc", r"$R_C = \langle \bar F, \bar G_c\rangle \,/\, \langle F, \bar G\rangle$")))
IMAGES = (("nfm_diag", "b · diag F⁽⁰⁾"), ("agop_diag", "c · diag Ḡ⁽⁰⁾"))


def draw(stores: dict[str, xr.Dataset]) -> Figure:
    """Row 1: plot (a) split into UC, C and R_C panels (R_C on a log axis, as in Fig 4), then the
    losses; GD grey, SLO red. Row 2: plots (b), (c): diag F⁽⁰⁾ and diag Ḡ⁽⁰⁾ after training of the
    first seed present, GD then SLO, each ÷ its max."""
    apply_style()
    ds = stores["svhn_slo"]
    runs = {opt: present_seeds(ds.sel(optimizer=opt), "train_loss") for opt in OPTIMIZERS}
    fig = figure(12, 6.4, [ds])
    top, bottom = fig.subplots(2, 4)
    for ax, (var, title) in zip(top, TRAJECTORIES):
        handles = []
        for opt, (color, name) in OPTIMIZERS.items():
            values = runs[opt][var].sel(layer=LAYER)
            if "convention" in values.dims:
                values = values.sel(convention=COSINE)
            handles.append(plot_seed_mean(ax, values, color, run_label(name, runs[opt], "train_loss"), x="step"))
        ax.set_title(f"a · layer {LAYER} · {title}")
        ax.set_xlabel("epoch (full batch)")
    log_scale(top[2])
    top[0].legend(handles=handles, frameon=False, fontsize=6)
    curves = [(runs[opt][f"{split}_loss"], color, f"{name} · {split}", style)
              for opt, (color, name) in OPTIMIZERS.items() for split, style in (("train", "-"), ("test", "--"))]
    top[3].legend(handles=loss_panel(top[3], curves, "MSE loss", "step"), frameon=False, fontsize=6)
    top[3].set_xlabel("epoch (full batch)")
    for ax, ((var, title), opt) in zip(bottom, product(IMAGES, OPTIMIZERS)):
        shown = runs[opt].isel(seed=0)
        diag_image(ax, shown[var], f"{title} · {OPTIMIZERS[opt][1]}", f"seed {shown.seed.item()}, channel mean")
    slo = experiment_config(ds)["train"]["slo"]
    suptitle(fig, f"Fig 17 · SVHN, 4 hidden layers (width 256, init scale 1), ρ = cosine; SLO "
                 f"C = {', '.join(f'{c:g}' for c in slo['speeds'])}, ε = {slo['eps']:g}")
    return fig


def render(stores: dict[str, xr.Dataset], out: Path) -> None:
    """Draw Fig 17 and save it with the shared footer."""
    finish(draw(stores), out)
