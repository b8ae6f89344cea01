"""Shared panels of the alignment figures: seed-averaged trajectories coloured by s₀, heatmaps.

Figs 4–6 and 8–12 all draw the same kind of curve (a store variable vs step, mean ± sd over
seeds, one colour per first-layer init scale s₀) and Figs 4 and 11 the same kind of heatmap;
both live here once. A diverged run is never dropped: its curve stops where the loss became
non-finite, ends in an ×, and its legend entry says at which step.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.lines import Line2D

from featlearn.figures.spread import mean_sd, sample_sd, spread_note
from featlearn.figures.style import apply_style, figure, finish, grid, legend_right, ordered_colors, suptitle
from featlearn.figures.ticks import log_scale

RHO_2ND = r"$\rho_{\mathrm{2nd}}$"  # Eq. 7, the quantity of Figs 3 and 7
CONVENTION = "cosine"  # the paper's ρ (docs/figures/alignment.md); Pearson is only for Figs 2 and 13

SPECTRUM_TITLES = {
    "isotropic": r"isotropic $\Sigma = I$",
    "1/(1+k)": r"$\lambda_k \propto 1/(1+k)$",
    "1/(1+k^2)": r"$\lambda_k \propto 1/(1+k^2)$",
}


@dataclass(frozen=True)
class Panel:
    """One trajectory panel: a store variable (at one layer, if it has layers) vs step.

    ``normalize`` divides every curve by the largest value of any curve in the panel, as the
    captions of Figs 8–10 do for the losses ("scaled by the maximum loss achieved").
    """

    var: str
    title: str
    layer: int | None = None
    log: bool = False
    normalize: bool = False


def s0_colors(ds: xr.Dataset) -> dict[float, tuple[float, float, float]]:
    """Colour per init scale present in the store: small s₀ dark, large s₀ light."""
    scales = sorted(float(s) for s in ds.init_scale.values)
    return dict(zip(scales, ordered_colors(len(scales))))


def with_divergence(text: str, run: xr.Dataset, sep: str = " · ") -> str:
    """text, plus e.g. 'diverged at step 120' (or '2/3 seeds diverged (step 120, 340)') if any
    seed of this run diverged, so that a diverged run is always named where it is drawn."""
    diverged = np.atleast_1d(run.diverged.values).astype(bool)
    if not diverged.any():
        return text
    steps = ", ".join(f"{s:g}" for s in np.atleast_1d(run.diverged_step.values)[diverged])
    if diverged.size == 1:
        return f"{text}{sep}diverged at step {steps}"
    return f"{text}{sep}{diverged.sum()}/{diverged.size} seeds diverged (step {steps})"


def experiment_config(ds: xr.Dataset) -> dict:
    """The experiment's resolved config.yaml entry, which the store carries as provenance."""
    return json.loads(ds.attrs["experiment_config"])


def seeds_note(ds: xr.Dataset) -> str:
    """'1 seed' or 'mean ± sample sd over 3 seeds', for the suptitle."""
    return spread_note(ds.sizes["seed"])


def _values(run: xr.Dataset, panel: Panel) -> xr.DataArray:
    da = run[panel.var]
    if "convention" in da.dims:
        da = da.sel(convention=CONVENTION)
    return da if panel.layer is None else da.sel(layer=panel.layer)


def plot_seed_mean(ax: Axes, values: xr.DataArray, color: object, label: str, scale: float = 1.0,
                   linestyle: str = "-", x: str = "step") -> Line2D:
    """Mean over seeds (± sd band if several) of values(seed, time) / scale against the time coordinate ``x``:
    ``step``, ``epoch`` (an epoch-counted store) or ``iteration`` (the loss of every step).

    NaNs are not skipped, so the mean ends at the first seed's divergence instead of silently
    switching to the surviving seeds; an × marks where a curve ends before the last step.
    """
    mean = values.mean("seed", skipna=False) / scale
    steps = values[x].values
    (line,) = ax.plot(steps, mean.values, color=color, label=label, linestyle=linestyle)
    if (sd := sample_sd(values / scale, "seed", skipna=False)) is not None:
        ax.fill_between(steps, (mean - sd).values, (mean + sd).values, color=color, alpha=0.2, linewidth=0)
    finite = np.flatnonzero(np.isfinite(mean.values))
    if finite.size and finite[-1] < len(steps) - 1:
        ax.plot(steps[finite[-1]], mean.values[finite[-1]], marker="x", color=color, markersize=6)
    return line


def trajectory_row(axes: Sequence[Axes], ds: xr.Dataset, panels: Sequence[Panel]) -> list[Line2D]:
    """Draw each panel on its axis, one curve per s₀ in ds (dims init_scale, seed, step, …).

    Returns one legend handle per s₀, largest first, labelled with any divergence.
    """
    colors = s0_colors(ds)
    runs = {s0: ds.sel(init_scale=s0) for s0 in colors}
    handles: dict[float, Line2D] = {}
    for ax, panel in zip(axes, panels):
        scale = 1.0
        if panel.normalize:
            scale = max(float(np.nanmax(_values(run, panel).mean("seed", skipna=False).values))
                        for run in runs.values())
        for s0, run in runs.items():
            label = with_divergence(f"s₀ = {s0:g}", run)
            handles[s0] = plot_seed_mean(ax, _values(run, panel), colors[s0], label, scale)
        ax.set_title(panel.title)
        ax.set_xlabel("step")
        if panel.log:
            log_scale(ax)
    return [handles[s0] for s0 in sorted(handles, reverse=True)]


def last_finite(da: xr.DataArray) -> xr.DataArray:
    """Value at the last step where it is finite: the final step, or the last one before divergence."""
    valid = da.notnull()
    index = (valid * xr.DataArray(np.arange(da.sizes["step"]), dims="step")).argmax("step")
    return da.isel(step=index)


def egop_note(run: xr.Dataset, matrix: str) -> str:
    """'ρ(F, EGOP) = 0.93' (± sd over seeds if several) at the end of training, for a heatmap."""
    var, symbol = {"nfm": ("rho_nfm_egop", "F"), "agop": ("rho_agop_egop", "Ḡ")}[matrix]
    return f"ρ({symbol}, EGOP) = {mean_sd(last_finite(run[var]))}"


def heatmap(ax: Axes, matrix: xr.DataArray | np.ndarray, title: str, note: str = "") -> None:
    """d×d matrix divided by its largest |entry|, RdBu_r centred at 0 (as in Fig 1)."""
    m = np.asarray(matrix, dtype=float)
    ax.imshow(m / np.abs(m).max(), cmap="RdBu_r", vmin=-1, vmax=1)
    ax.set_title(title)
    ax.set_xlabel(note, fontsize=7)
    ax.set_xticks([])
    ax.set_yticks([])


def missing_spectrum(ax: Axes, ds: xr.Dataset, spectrum: str) -> None:
    """Say on the figure that this scale's sweep did not include the spectrum."""
    present = ", ".join(str(s) for s in ds.spectrum.values)
    ax.text(0.5, 0.5, f"spectrum {spectrum} is not in this store\n(scale '{ds.attrs.get('scale', '?')}' "
            f"sweeps only: {present})", ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()


def layer_row(axes: Sequence[Axes], ds: xr.Dataset, spectrum: str, var: str, name: str, log: bool = False) -> None:
    """One panel per hidden layer of var vs step for one input spectrum, coloured by s₀ (Figs 5, 6)."""
    if spectrum not in ds.spectrum.values:
        missing_spectrum(axes[0], ds, spectrum)
        for ax in axes[1:]:
            ax.set_axis_off()
        return
    panels = [Panel(var, f"{SPECTRUM_TITLES.get(spectrum, spectrum)} · layer {layer} · {name}", int(layer), log)
              for layer in ds.layer.values]
    legend_right(axes[-1], trajectory_row(axes, ds.sel(spectrum=spectrum), panels), "init scale")


def spectrum_figure(stores: dict[str, xr.Dataset], out: Path, spectrum: str, number: int) -> None:
    """Figs 8–10: rows layer 1, 2 × columns UC-NFC, C-NFC, train and test loss (each divided by
    the panel's largest value, log y) vs step, one curve per s₀, for one input spectrum."""
    apply_style()
    ds = stores["init_sweep"]
    title = f"Fig {number} · {SPECTRUM_TITLES.get(spectrum, spectrum)}"
    if spectrum not in ds.spectrum.values:
        fig = figure(6, 1.5, ds)
        missing_spectrum(fig.subplots(), ds, spectrum)
        suptitle(fig, title)
        finish(fig, out)
        return
    run = ds.sel(spectrum=spectrum)
    layers = [int(layer) for layer in run.layer.values]
    fig = figure(11, 2.4 * len(layers), ds)
    axes = grid(fig, len(layers), 4)
    for row, layer in zip(axes, layers):
        handles = trajectory_row(row, run, [
            Panel("uc_nfc", f"layer {layer} · UC-NFC", layer),
            Panel("c_nfc", f"layer {layer} · C-NFC", layer),
            Panel("train_loss", "train loss / max", log=True, normalize=True),
            Panel("test_loss", "test loss / max", log=True, normalize=True),
        ])
    legend_right(axes[0, -1], handles, "init scale")
    cfg = experiment_config(ds)
    suptitle(fig, f"{title} · chain monomial r={cfg['data']['r']}, GD lr {cfg['train']['lr']}, ρ = cosine; "
                  f"{seeds_note(run)}")
    finish(fig, out)
