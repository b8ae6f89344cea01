"""The one figure style: seaborn 'paper' context, vector PDF, a footer with scale and data source."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import seaborn as sns  # noqa: E402
import xarray as xr  # noqa: E402

PALETTE = "viridis"
UC_COLOR, C_COLOR = "tab:blue", "tab:green"


def apply_style() -> None:
    """Set the shared seaborn theme; every render function calls it first."""
    sns.set_theme(context="paper", style="ticks", font_scale=0.9)
    plt.rcParams.update({"pdf.fonttype": 42, "axes.titlesize": 9, "figure.dpi": 100})


def subplots(nrows: int, ncols: int, width: float, height: float) -> tuple[plt.Figure, np.ndarray]:
    """Constrained-layout grid (axes always 2-D) that keeps its bottom 0.15 in free for the
    footer that finish() writes there, so it never overlaps the lowest axis labels."""
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, height), layout="constrained", squeeze=False)
    fig.get_layout_engine().set(rect=(0, 0.15 / height, 1, 1 - 0.15 / height))
    return fig, axes


def footer_text(stores: list[xr.Dataset]) -> str:
    """'scale: quick · data: …' from the stores' provenance attributes (stand-ins named)."""
    scales = sorted({str(s.attrs.get("scale", "?")) for s in stores})
    sources = sorted({str(s.attrs.get("data_source", "?")) for s in stores})
    commit = str(stores[0].attrs.get("git_commit", "?"))[:8] if stores else "?"
    return f"featlearn · scale: {', '.join(scales)} · data: {'; '.join(sources)} · commit {commit}"


def finish(fig: plt.Figure, out: Path, stores: xr.Dataset | list[xr.Dataset]) -> None:
    """Add the footer, save a vector PDF atomically, close the figure."""
    stores = stores if isinstance(stores, list) else [stores]
    fig.text(0.995, 0.003, footer_text(stores), ha="right", va="bottom", fontsize=6, color="0.4")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.stem}.{os.getpid()}.tmp.pdf")
    fig.savefig(tmp, bbox_inches="tight")
    os.replace(tmp, out)
    plt.close(fig)
