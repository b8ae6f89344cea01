"""Fig 2: effective penalties are sub-quadratic (ω̃ for ω1 = (v−1)², ω2 = |v−1|, ω3 = ω1⊕ω2, against v²)."""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from featlearn.figures.style import apply_style, figure, finish

EXPERIMENTS = ("tangent_penalties",)
CURVES = (("w1", "-", "C0", r"$\tilde\omega_1(v)$"), ("w2", "--", "C1", r"$\tilde\omega_2(v)$"),
          ("w3", "-.", "C2", r"$\tilde\omega_3(v)$"))


def render(stores: dict[str, xr.Dataset], out: Path) -> None:
    """One panel: the three effective penalties and the reference v²; the y-range is that of the three
    penalties, so v² leaves the frame (as in the paper)."""
    apply_style()
    ds = stores["tangent_penalties"]
    fig = figure(3.2, 3.0, ds)
    ax = fig.subplots()
    for name, style, color, label in CURVES:
        ax.plot(ds.v, ds.omega_tilde.sel(penalty=name), style, color=color, label=label)
    ylim = ax.get_ylim()
    ax.plot(ds.v, ds.v ** 2, ":", color="black", label="$v^2$")
    ax.set_ylim(ylim)
    ax.set_xlabel("$v$")
    ax.legend(loc="upper left")
    end = ds.omega_tilde.isel(v=-1)
    ax.set_title(f"Fig 2 · at v = {float(ds.v[-1]):g}: " + ", ".join(f"{float(x):.2f}" for x in end.values),
                 fontsize=8)
    finish(fig, out)
