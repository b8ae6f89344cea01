"""Shared panels of the alignment paper's real-data figures (2, 13–17).

panels.py draws trajectories along the time dimension `step` and coloured by init scale; the
real-data stores are labelled by `epoch` (MLP, VGG, CelebA: counted in epochs) or `step` (GPT,
SVHN SLO) and indexed by dataset, optimizer, layer, block or projection, and may hold seeds that
were never run (all NaN). Each panel here plots against the coordinate `x` its figure is drawn
against, drops only never-run seeds (a diverged seed stays, so its NaNs end the mean curve with
an ×) and names every divergence where the run is drawn.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.lines import Line2D

from featlearn.data import registry
from featlearn.figures.alignment.panels import plot_seed_mean, seeds_note, with_divergence
from featlearn.figures.style import C_COLOR, PALETTE, UC_COLOR, ordered_colors
from featlearn.figures.ticks import log_scale, sparse_ticks

PEARSON = "pearson"  # the released Fig 2 code's ρ̄: Figs 2 and 13
COSINE = "cosine"  # the paper's ρ: every other figure
NFC_LABEL = r"NFC (Pearson $\bar\rho$)"  # Figs 2 and 13: the released code's mat_cov (docs/figures/alignment.md)
NFC_VARS = (("uc_nfc", UC_COLOR, "UC-NFC"), ("c_nfc", C_COLOR, "C-NFC"))
WEIGHT_CHANGE = r"$\|W - W_0\|_F \,/\, \|W\|_F$"
PAPER_DATASETS = ("cifar10", "cifar100", "svhn", "mnist", "gtsrb", "stl10")  # Fig 2B / 13 / 14, the paper's order


def dataset_name(dataset: object) -> str:
    """'cifar10' -> 'CIFAR-10' for titles: the registry's title (``featlearn.data.registry``)."""
    return registry.title(str(dataset))


def missing_datasets(ds: xr.Dataset) -> list[str]:
    """The titles of the paper's datasets this store lacks (a quick-scale store may train fewer)."""
    present = {str(d) for d in ds.dataset.values}
    return [registry.title(key) for key in PAPER_DATASETS if key not in present]


def divergence(run: xr.Dataset, loss: str) -> xr.Dataset:
    """diverged and diverged_step per seed: the store's own when it records them (every measured store does),
    otherwise read off the loss of a step-counted store (finite at first, non-finite at the end: diverged at the
    first non-finite step)."""
    if "diverged" in run.data_vars:
        return run[["diverged", "diverged_step"]]
    if "step" not in run.coords:
        raise ValueError(f"divergence: the store records no 'diverged' and no step coordinate to read it off "
                         f"{loss} (coordinates {list(run.coords)})")
    finite = np.isfinite(run[loss]).transpose("seed", "step").values
    steps = run.step.values
    diverged = finite.any(axis=1) & ~finite[:, -1]
    first_bad = [steps[len(row) - np.argmax(row[::-1])] if bad else np.nan for row, bad in zip(finite, diverged)]
    return xr.Dataset({"diverged": ("seed", diverged.astype(int)),
                       "diverged_step": ("seed", np.asarray(first_bad, dtype=float))}, coords={"seed": run.seed.values})


def present_seeds(run: xr.Dataset, loss: str) -> xr.Dataset:
    """run without the seeds that were never run (loss all NaN and not diverged), so that means,
    bands and 'n seeds' count only runs that exist."""
    ran = run[loss].notnull().any([d for d in run[loss].dims if d != "seed"]) | (divergence(run, loss).diverged == 1)
    return run.sel(seed=run.seed.values[ran.values])


def nfc_panel(ax: Axes, run: xr.Dataset, convention: str, title: str, x: str, **where: object) -> list[Line2D]:
    """UC-NFC (blue) and C-NFC (green) of one layer (selected by `where`) vs x, mean ± sd over seeds; few x ticks,
    as these panels stand five or six abreast (a rehearsal's epochs 0.0025 apart would collide)."""
    handles = [plot_seed_mean(ax, run[var].sel(convention=convention, **where), color, label, x=x)
               for var, color, label in NFC_VARS]
    ax.set_title(title)
    sparse_ticks(ax)
    return handles


def weight_change_panel(ax: Axes, run: xr.Dataset, dim: str, label: str, title: str, x: str,
                        **where: object) -> list[Line2D]:
    """‖W − W₀‖_F / ‖W‖_F vs x, one line per level of dim (layer or block), dark = first."""
    values = run.dw_rel.sel(**where)
    levels = values[dim].values
    handles = [plot_seed_mean(ax, values.sel({dim: level}), color, f"{label} {level}", x=x)
               for level, color in zip(levels, ordered_colors(len(levels)))]
    ax.set_title(title)
    ax.set_ylabel(WEIGHT_CHANGE)
    return handles


def loss_panel(ax: Axes, curves: Sequence[tuple[xr.DataArray, object, str, str]], title: str,
               x: str) -> list[Line2D]:
    """Losses (values(seed, time), colour, label, linestyle) vs x on a log axis, mean ± sd over seeds."""
    handles = [plot_seed_mean(ax, values, color, label, linestyle=style, x=x)
               for values, color, label, style in curves]
    log_scale(ax)
    ax.set_title(title)
    return handles


def diag_image(ax: Axes, image: xr.DataArray, title: str, note: str = "") -> None:
    """A (row, col) diagonal map divided by its largest |value|, so maps of different scale compare."""
    m = np.asarray(image.transpose("row", "col"), dtype=float)
    ax.imshow(m / np.nanmax(np.abs(m)), cmap=PALETTE)
    ax.set_title(title)
    ax.set_xlabel(note, fontsize=7)
    ax.set_xticks([])
    ax.set_yticks([])


def run_label(text: str, run: xr.Dataset, loss: str, sep: str = " · ") -> str:
    """text plus the seeds present and any divergence, e.g. 'CIFAR-10 · 3 seeds · diverged at step 40'."""
    return with_divergence(f"{text}{sep}{seeds_note(run)}", divergence(run, loss), sep)
