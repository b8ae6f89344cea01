"""Fig 11: first-layer NFM and AGOP after training, per init scale s₀, with standard GD and with SLO."""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from featlearn.figures.alignment.panels import egop_note, heatmap, seeds_note, with_divergence
from featlearn.figures.style import apply_style, figure, finish, grid, suptitle

EXPERIMENTS = ("slo_sweep",)

ROWS = (
    ("(a) NFM · GD", "gd", "nfm"),
    ("(b) AGOP · GD", "gd", "agop"),
    ("(c) NFM · SLO", "slo", "nfm"),
    ("(d) AGOP · SLO", "slo", "agop"),
)


def render(stores: dict[str, xr.Dataset], out: Path) -> None:
    """Rows (a)–(d) × one column per s₀ (largest first), seed 0, each ÷ max |entry|; the extra
    column shows the target's EGOP, the structure both matrices should recover."""
    apply_style()
    ds = stores["slo_sweep"]
    scales = sorted((float(s) for s in ds.init_scale.values), reverse=True)
    fig = figure(1.75 * (len(scales) + 1), 1.9 * len(ROWS), ds)
    axes = grid(fig, len(ROWS), len(scales) + 1)
    for row, (label, method, matrix) in zip(axes, ROWS):
        for ax, s0 in zip(row, scales):
            run = ds.sel(optimizer=method, init_scale=s0)
            heatmap(ax, run[matrix].isel(seed=0), f"s₀ = {s0:g}", with_divergence(egop_note(run, matrix), run, "\n"))
        row[0].set_ylabel(label, fontweight="bold")
        row[-1].set_axis_off()
    axes[0, -1].set_axis_on()
    heatmap(axes[0, -1], ds.egop.isel(init_scale=0, optimizer=0, seed=0), "target EGOP", "for reference")
    suptitle(fig, f"Fig 11 · first-layer F⁽⁰⁾ and Ḡ⁽⁰⁾ after training (seed 0; ρ to EGOP: {seeds_note(ds)})")
    finish(fig, out)
