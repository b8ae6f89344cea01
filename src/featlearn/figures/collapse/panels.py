"""Shared panels of the collapse figures: NC1/NC2 against layer (Figs 3, 4) and Gram heatmaps (Figs 1, 5, 6).

Stores come from ``featlearn.pipeline.experiments.deep_rfm.combine``: one per activation, datasets along ``dataset``.
Rows for datasets a store lacks (smoke runs MNIST only) are left out, and the Gram columns are the store's gram layers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize

from featlearn.data import registry
from featlearn.figures.style import apply_style, figure, finish, grid, suptitle
from featlearn.figures.ticks import log_scale

STAGE_STYLE = {  # the Fig 3 caption: green X_l, orange M^{1/2}X_l, blue Φ(M^{1/2}X_l)
    "X": ("tab:green", "$X_l$"),
    "MX": ("tab:orange", "$M_l^{1/2} X_l$"),
    "PhiMX": ("tab:blue", "$\\Phi(M_l^{1/2} X_l)$"),
}
METRICS = {  # NC2: the mean squared entry of H̄ᵀH̄ − Σ_ETF, as the authors' code (metrics.collapse.nc2)
    "nc1": "NC1 = tr $\\Sigma_W$ / tr $\\Sigma_B$",
    "nc2_meansq": "NC2 = mean$(\\bar H\\bar H^T - \\Sigma_{ETF})^2$",
}
CMAP = "RdBu_r"


def present(ds: xr.Dataset, order: tuple[str, ...]) -> list[str]:
    """The datasets of ``order`` that the store holds, in that order."""
    return [d for d in order if d in ds.dataset.values]


def _setup(ds: xr.Dataset, dataset: str) -> str:
    kernel = ds.attrs.get(f"kernel_{dataset}", "?")
    extra = f", γ = {ds.attrs['gamma']:g}" if ds.attrs["activation"] == "cos" else ""
    return f"{kernel} kernel, {ds.attrs['activation']} D = {ds.attrs['width']}{extra}"


def nc_figure(ds: xr.Dataset, out: Path, number: int, order: tuple[str, ...] = ("cifar10", "mnist", "svhn")) -> None:
    """Rows: datasets; columns: NC1 and NC2 of the three stages against layer, log y (Figs 3, 4)."""
    apply_style()
    rows = present(ds, order)
    fig = figure(7.0, 2.2 * len(rows) + 0.6, ds)
    axes = grid(fig, len(rows), 2)
    layers = ds.layer.values
    for r, dataset in enumerate(rows):
        run = ds.sel(dataset=dataset)
        for c, (metric, label) in enumerate(METRICS.items()):
            ax = axes[r, c]
            for stage, (color, name) in STAGE_STYLE.items():
                values = run[metric].sel(stage=stage).values
                ax.plot(layers, np.where(values > 0, values, np.nan), "o-", ms=2.5, lw=1, color=color, label=name)
            log_scale(ax)
            ax.set_xticks(layers if len(layers) <= 10 else layers[::2])
            ax.set_title(f"{registry.title(dataset)}: {label.split(' ')[0]}  ({_setup(ds, dataset)})", fontsize=8)
            ax.set_ylabel(label, fontsize=7)
            if r == len(rows) - 1:
                ax.set_xlabel("layer $l$")
    axes[0, 0].legend(fontsize=7, frameon=False)
    suptitle(fig, f"Fig {number} · Deep RFM, σ = {ds.attrs['activation']}: neural collapse against layer "
                  f"(N = {ds.attrs['n_samples']})")
    finish(fig, out)


def gram_figure(rows: list[tuple[str, xr.Dataset, str]], out: Path, title: str) -> None:
    """One row per (row label, store, dataset): heatmaps of the centered, normalized Gram of M^{1/2}X_l at the store's
    gram layers, class-sorted, colour −1..1; under each panel the full-set mean within- and between-class cosine
    (ETF: 1 and −1/(K−1))."""
    apply_style()
    rows = [row for row in rows if row[2] in row[1].dataset.values]
    cols = max(row[1].sizes["gram_layer"] for row in rows)
    fig = figure(1.35 * cols + 0.9, 1.75 * len(rows) + 0.8, list({id(row[1]): row[1] for row in rows}.values()))
    axes = grid(fig, len(rows), cols)
    for r, (label, ds, dataset) in enumerate(rows):
        run = ds.sel(dataset=dataset)
        k = run.sizes["class_a"]
        off = ~np.eye(k, dtype=bool)
        for c in range(cols):
            ax = axes[r, c]
            ax.set_xticks([])
            ax.set_yticks([])
            if c >= run.sizes["gram_layer"]:
                ax.axis("off")
                continue
            at = run.isel(gram_layer=c)
            ax.imshow(at.gram.values, cmap=CMAP, vmin=-1, vmax=1, interpolation="nearest")
            block = at.gram_block_mean.values
            ax.set_title(f"layer {int(at.gram_layer)}", fontsize=7)
            ax.set_xlabel(f"w {np.diag(block).mean():.2f} · b {block[off].mean():+.3f}", fontsize=6)
            if c == 0:
                ax.set_ylabel(f"{label}\n{registry.title(dataset)}, {ds.attrs['activation']}", fontsize=7)
    classes = rows[0][1].sizes["class_a"]
    etf = -1 / (classes - 1)  # between-class cosine of a simplex ETF
    bar = fig.colorbar(ScalarMappable(Normalize(-1, 1), cmap=CMAP), ax=axes.ravel().tolist(), ticks=[-1, etf, 1],
                       fraction=0.02, pad=0.01, aspect=30)
    bar.ax.set_yticklabels(["−1", f"−1/{classes - 1}", "1"], fontsize=6)
    suptitle(fig, f"{title} · w/b: mean within/between-class cosine over the full set (ETF: 1 and {etf:.3f})")
    finish(fig, out)
