"""Shared drawing of the collapse paper's neural-network figures: NC1 through the SVD of each head layer (Figs 2, 7–9)
and NC ratios / NFA / train loss (Figs 10–12) (docs/figures/collapse.md).

Stores (one per architecture, from ``metrics.collapse_measure``) have dims (dataset, seed, step, layer, stage): nc1;
(dataset, seed, step, layer): nfa_sqrt, nfa_full, phi; (dataset, seed, step): w_over_t, b_over_t, train_loss,
test_loss; (dataset, seed): diverged; the time dimension ``step`` is labelled by the coordinate ``epoch``
(``featlearn.metrics.axes``), which every panel plots against. A row is NaN where a run has no measurement at that epoch
(a shorter run, a divergence), and a (dataset, seed) that a scale did not run is all NaN.

Curves are the mean over the seeds that ran and did not diverge, with a ±1 sample sd band when there are ≥ 2 of them,
the lower edge raised to 0.01 × mean as in the paper (App. C). A diverged seed is drawn on its own, dashed, ending in an
×, and named in the row label: it never vanishes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.axes import Axes

from featlearn.data import registry
from featlearn.figures.spread import mean_sd, sample_sd, spread_note
from featlearn.figures.style import apply_style, figure, finish, grid, legend_right, ordered_colors, suptitle
from featlearn.figures.ticks import log_scale

ORDER = ("mnist", "cifar10", "svhn")
LETTERS = {"mnist": "A", "cifar10": "B", "svhn": "C"}  # the paper's rows (Figs 7–12)
STAGE_STYLE = {  # Figs 7–9 captions
    "input": ("tab:blue", "$\\Phi(X)$"),
    "right": ("tab:green", "$SV^\\top\\Phi(X)$"),
    "left": ("tab:red", "ReLU$(USV^\\top\\Phi(X))$"),
}
NFA_CHANCE = 512 ** -0.5  # ≈ 0.04: correlation of unrelated width-512 matrices (§5)
BAND_FLOOR = 0.01  # lower band edge ≥ 0.01 × mean (App. C)
BAND_VARS = ("nc1", "train_loss")  # what decides that a seed ran
TRAINED_DROP = 10.0  # our gate: a run is trained once its train loss is below 10% of its initial value


def seed_groups(run: xr.Dataset) -> tuple[list[int], list[int]]:
    """(healthy, diverged) seeds of one dataset's runs; seeds with no data at all (not run at this scale) in neither."""
    ran = [int(s) for s in run.seed.values
           if any(bool(np.isfinite(run[v].sel(seed=s).values).any()) for v in BAND_VARS if v in run)]
    diverged = {int(s) for s in run.seed.values if bool(run.diverged.sel(seed=s))}
    return [s for s in ran if s not in diverged], sorted(diverged)


def seeds_label(run: xr.Dataset) -> str:
    """'3 seeds', '1 seed', plus '· seed 2 diverged' where that happened."""
    healthy, diverged = seed_groups(run)
    text = f"{len(healthy)} seed{'s' if len(healthy) != 1 else ''}"
    if diverged:
        text += f" · seed {', '.join(map(str, diverged))} diverged"
    return text


def band(ax: Axes, values: xr.DataArray, run: xr.Dataset, color: object, label: str | None) -> None:
    """Mean ± sd over the healthy seeds of values(seed, step) vs epoch and a dashed line per diverged seed."""
    healthy, diverged = seed_groups(run)
    if healthy:
        kept = values.sel(seed=healthy).dropna("step", how="all")
        mean = kept.mean("seed").values
        epochs = kept.epoch.values
        ax.plot(epochs, mean, color=color, label=label, lw=1.2)
        if (sd := sample_sd(kept, "seed")) is not None:
            ax.fill_between(epochs, np.maximum(mean - sd.values, BAND_FLOOR * mean), mean + sd.values, color=color,
                            alpha=0.2, lw=0)
    for seed in diverged:
        own = values.sel(seed=seed).dropna("step")
        if own.size:
            ax.plot(own.epoch.values, own.values, color=color, ls="--", lw=0.8)
            ax.plot(own.epoch.values[-1], own.values[-1], marker="x", color=color, ms=5)


def final_values(values: xr.DataArray, run: xr.Dataset) -> np.ndarray:
    """The healthy seeds' values at their last measured epoch, flattened over any other dims, finite only."""
    healthy, _ = seed_groups(run)
    if not healthy:
        return np.array([])
    kept = values.sel(seed=healthy).dropna("step", how="all")
    last = kept.isel(step=-1).values.ravel() if kept.sizes["step"] else np.array([])
    return last[np.isfinite(last)]


def _no_data(ax: Axes, run: xr.Dataset) -> bool:
    healthy, diverged = seed_groups(run)
    if healthy or diverged:
        return False
    ax.text(0.5, 0.5, "not run at this scale", ha="center", va="center", transform=ax.transAxes, fontsize=7)
    return True


def untrained_note(run: xr.Dataset, scale: str) -> str | None:
    """'not trained to collapse: train loss fell 3.1× (gate 10×) · quick scale, see paper scale' when the healthy
    seeds' mean train loss did not pass the gate; None when it did (or nothing ran)."""
    healthy, _ = seed_groups(run)
    if not healthy:
        return None
    loss = run.train_loss.sel(seed=healthy).mean("seed").dropna("step").values
    if loss.size < 2 or loss[0] / loss[-1] >= TRAINED_DROP:
        return None
    where = "" if scale == "paper" else f" · {scale} scale, see paper scale"
    return f"not trained to collapse: train loss fell {loss[0] / loss[-1]:.1f}× (gate {TRAINED_DROP:g}×){where}"


def _flag_untrained(ax: Axes, run: xr.Dataset, scale: str) -> None:
    """The row's ``untrained_note`` on the panel itself, in red: a reader looking at the curves sees it."""
    note = untrained_note(run, scale)
    if note:
        ax.text(0.5, 0.5, note.replace(": ", ":\n", 1).replace(" · ", "\n"), transform=ax.transAxes, ha="center",
                va="center", fontsize=6.5, color="tab:red", bbox={"facecolor": "white", "alpha": 0.8, "lw": 0})


def _rows(ds: xr.Dataset) -> list[str]:
    return [d for d in ORDER if d in ds.dataset.values]


def band_note(runs: list[xr.Dataset]) -> str:
    """What the curves of these rows are, from the seeds each row has: 'mean ± sd over 3 seeds (…)', or 'one seed
    per row, no band' when no row has two."""
    counts = {len(seed_groups(run)[0]) for run in runs} - {0}
    if not counts or max(counts) == 1:
        return "1 seed per row, no band"
    over = spread_note(counts.pop()) if len(counts) == 1 else "mean ± sample sd over the seeds named per row"
    return f"{over} (lower edge ≥ {BAND_FLOOR:g} × mean)"


def svd_figure(rows: list[tuple[str, xr.Dataset, str]], out: Path, title: str) -> None:
    """One row per (label, store, dataset), one column per head layer: NC1 of h^l (blue), S Vᵀh^l (green) and
    ReLU(W_l h^l) (red) against epoch, log y, rows sharing y; each panel names φ_l at the last epoch (claim: > 0.5)."""
    apply_style()
    layers = rows[0][1].layer.values
    stores = list({id(ds): ds for _, ds, _ in rows}.values())
    fig = figure(1.75 * len(layers) + 1.6, 1.9 * len(rows) + 0.9, stores)
    axes = grid(fig, len(rows), len(layers), sharey="row")
    for r, (label, ds, dataset) in enumerate(rows):
        run = ds.sel(dataset=dataset)
        for c, layer in enumerate(layers):
            ax = axes[r, c]
            if c:
                ax.tick_params(labelleft=False)
            ax.set_title(f"Layer {int(layer)}")
            if _no_data(ax, run):
                continue
            at = run.sel(layer=layer)
            for stage, (color, name) in STAGE_STYLE.items():
                band(ax, at.nc1.sel(stage=stage), run, color, name if (r, c) == (0, 0) else None)
            log_scale(ax)
            ax.text(0.97, 0.97, f"φ = {mean_sd(final_values(at.phi, run))}", transform=ax.transAxes, ha="right",
                    va="top", fontsize=6.5)
            if r == len(rows) - 1:
                ax.set_xlabel("epoch")
            if c == len(layers) // 2:
                _flag_untrained(ax, run, str(ds.attrs.get("scale", "?")))
        axes[r, 0].set_ylabel(f"{label} {registry.title(dataset)}\n{seeds_label(run)}\n"
                              "NC1 = tr$\\Sigma_W$/tr$\\Sigma_B$")
    legend_right(axes[0, -1], axes[0, 0].get_legend_handles_labels()[0])
    runs = [ds.sel(dataset=dataset) for _, ds, dataset in rows]
    suptitle(fig, f"{title}: NC1 of each layer's input, after $SV^\\top$ and after the layer · {band_note(runs)} · "
                  "φ: share of the log-NC1 drop made by $SV^\\top$, last epoch")
    finish(fig, out)


def svd_rows(ds: xr.Dataset) -> list[tuple[str, xr.Dataset, str]]:
    """The paper's rows of Figs 7–9: (A) MNIST, (B) CIFAR-10, (C) SVHN, those the store holds."""
    return [(f"({LETTERS[d]})", ds, d) for d in _rows(ds)]


def nfa_figure(ds: xr.Dataset, out: Path, title: str) -> None:
    """Rows: datasets; columns: tr Σ_W/tr Σ_T (green) and tr Σ_B/tr Σ_T (blue) of h⁶, log y; the NFA
    ρ(W_lᵀW_l, AGOP_l^{1/2}) per layer (dark = layer 1) with the final mean ± sd over layers × seeds (paper: MNIST MLP
    0.74 ± 0.13, ResNet CIFAR-10 0.74 ± 0.17) and the chance level; the train loss, log y (Figs 10–12)."""
    apply_style()
    rows = _rows(ds)
    fig = figure(9.0, 2.0 * len(rows) + 0.9, ds)
    axes = grid(fig, len(rows), 3)
    for r, dataset in enumerate(rows):
        run = ds.sel(dataset=dataset)
        ratio, nfa_ax, loss = axes[r]
        ratio.set_ylabel(f"({LETTERS[dataset]}) {registry.title(dataset)}\n{seeds_label(run)}")
        if _no_data(ratio, run):
            continue
        band(ratio, run.w_over_t, run, "tab:green", "tr$\\Sigma_W$/tr$\\Sigma_T$")
        band(ratio, run.b_over_t, run, "tab:blue", "tr$\\Sigma_B$/tr$\\Sigma_T$")
        log_scale(ratio)
        ratio.set_title("NC ratios of $h^6$ (readout input)")
        for layer, color in zip(run.layer.values, ordered_colors(run.sizes["layer"])):
            band(nfa_ax, run.nfa_sqrt.sel(layer=layer), run, color, f"layer {int(layer)}")
        nfa_ax.axhline(NFA_CHANCE, color="0.5", ls=":", lw=0.8, label=f"chance ≈ {NFA_CHANCE:.2f}")
        nfa_ax.set_ylim(min(0.0, float(run.nfa_sqrt.min())), 1.0)
        nfa_ax.set_yticks(np.linspace(0, 1, 11))
        nfa_ax.set_title(f"NFA ρ($W^\\top W$, AGOP$^{{1/2}}$) · final {mean_sd(final_values(run.nfa_sqrt, run))}")
        band(loss, run.train_loss, run, "k", None)
        log_scale(loss)
        _flag_untrained(loss, run, str(ds.attrs.get("scale", "?")))
        loss.set_title("train loss (MSE, epoch mean)")
        if r == 0:
            ratio.legend(fontsize=6.5, frameon=False)
            nfa_ax.legend(fontsize=6, frameon=False, ncol=2)
    for ax in axes[-1]:
        ax.set_xlabel("epoch")
    suptitle(fig, f"{title}: neural collapse, NFA and train loss · {band_note([ds.sel(dataset=d) for d in rows])}")
    finish(fig, out)
