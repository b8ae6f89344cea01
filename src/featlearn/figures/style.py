"""The one figure style and the one figure builder.

Every figure is made by ``figure()`` and saved by ``finish()``. The builder uses constrained layout and puts the
provenance footer in the figure's ``supxlabel`` slot and the title in its ``suptitle`` slot, so the layout engine
reserves a row for each: neither can land on an axis label, however many lines the footer has. Legends outside the
panels go through ``legend_right()``, in a margin the layout engine widens for them. ``text_overlaps()``
checks the result with matplotlib's own text extents; ``finish()`` thins an axis whose own tick labels collide
(``ticks.thin_ticks``) and refuses (``OverlapError``, naming the texts and their panels) any other collision, at every
scale, and the tests assert that no figure needs either.

Ordered conditions (init scales, layers, blocks) take ``ordered_colors()``; log axes go through ``ticks.log_scale()``
and spreads through ``spread`` (the sample sd, said in the title). No backend is chosen here: the render job picks
Agg, a notebook keeps its own.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
import xarray as xr
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure, FigureBase
from matplotlib.legend import Legend
from matplotlib.text import Text

from featlearn.figures.ticks import thin_ticks

log = logging.getLogger(__name__)

PALETTE = "viridis"  # sequential, colour-blind safe, monotone in lightness
PALETTE_END = 0.82  # viridis beyond this is yellow that vanishes on white
UC_COLOR, C_COLOR = "tab:blue", "tab:green"
TITLE_SIZE = 9
FOOTER_SIZE = 6
OVERLAP_PX = 1.0  # two texts collide when their boxes share more than this (at 100 dpi) in both directions


def apply_style() -> None:
    """Set the shared seaborn theme; every render function calls it first."""
    sns.set_theme(context="paper", style="ticks", font_scale=0.9)
    plt.rcParams.update({"pdf.fonttype": 42, "axes.titlesize": 9, "figure.dpi": 100})


def footer_text(stores: Sequence[xr.Dataset]) -> str:
    """'featlearn · scale: quick · data: … · commit …' from the stores' provenance attributes (stand-ins named)."""
    scales = sorted({str(s.attrs.get("scale", "?")) for s in stores})
    sources = sorted({str(s.attrs.get("data_source", "?")) for s in stores})
    commit = str(stores[0].attrs.get("git_commit", "?"))[:8] if stores else "?"
    return f"featlearn · scale: {', '.join(scales)} · data: {'; '.join(sources)} · commit {commit}"


def store_warnings(stores: Sequence[xr.Dataset]) -> list[str]:
    """What a reader must know before trusting the curves, from the stores themselves: runs that diverged (named by
    their sweep coordinates), a test loss that has no value (the runs had no test split), and a rehearsal's stores
    (``featlearn.pipeline.rehearsal``: the paper's shapes for a few steps and one seed, not its results)."""
    notes = []
    if any(str(ds.attrs.get("scale", "")).endswith("-rehearsal") for ds in stores):
        notes.append("⚠ REHEARSAL of the paper scale: its shapes for a few optimizer steps, the first seed and two "
                     "snapshots (Deep RFM: two layers); the curves are not the paper's results")
    for ds in stores:
        if "diverged" in ds:
            flags = np.asarray(ds["diverged"], dtype=float)
            bad = np.argwhere(flags == 1)
            if len(bad):
                dims = ds["diverged"].dims
                runs = ["; ".join(f"{d} = {ds[d].values[i]}" for d, i in zip(dims, row)) for row in bad[:3]]
                more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
                notes.append(f"⚠ {len(bad)} of {int(np.isfinite(flags).sum())} runs diverged ({', '.join(runs)}{more}):"
                             " their curves stop at the last finite step")
        if "test_loss" in ds and bool(ds["test_loss"].isnull().all()):
            notes.append("⚠ no test loss: the runs had no test split (data.n_test = 0)")
    return notes


def figure(width: float, height: float, stores: xr.Dataset | Sequence[xr.Dataset]) -> Figure:
    """A constrained-layout figure of width × height inches with the stores' footer in its own bottom row; the
    footer turns red and starts with a warning where a run diverged or a quantity was not measured."""
    stores = [stores] if isinstance(stores, xr.Dataset) else list(stores)
    fig = plt.figure(figsize=(width, height), layout="constrained")
    warnings = store_warnings(stores)
    footer = _wrap(fig, "\n".join([*warnings, footer_text(stores)]), FOOTER_SIZE, 0.99 * width)
    fig.supxlabel(footer, x=0.995, ha="right", fontsize=FOOTER_SIZE, color="tab:red" if warnings else "0.4")
    return fig


def grid(fig: FigureBase, nrows: int, ncols: int, **kwargs: object) -> np.ndarray:
    """fig.subplots that always returns a 2-D array of axes."""
    return fig.subplots(nrows, ncols, squeeze=False, **kwargs)


def _text_width(fig: FigureBase, text: str, size: float) -> float:
    """Width in inches of one line of text at this size, measured by the figure's renderer."""
    probe = Text(0, 0, text, fontsize=size, figure=fig.figure)
    return probe.get_window_extent(fig.figure.canvas.get_renderer()).width / fig.figure.dpi


def _wrap(fig: FigureBase, text: str, size: float, width: float) -> str:
    """text with line breaks between words (never inside $mathtext$) so that no line is wider than width inches;
    a ' · ' separator at a break is dropped."""
    lines: list[str] = []
    for paragraph in text.split("\n"):
        words: list[str] = []
        for word in paragraph.split(" "):
            if words and words[-1].count("$") % 2:
                words[-1] += f" {word}"
            else:
                words.append(word)
        line = ""
        for word in words:
            candidate = f"{line} {word}" if line else word
            if line and _text_width(fig, candidate, size) > width:
                lines.append(line.removesuffix(" ·"))
                line = "" if word == "·" else word
            else:
                line = candidate
        lines.append(line)
    return "\n".join(lines)


def suptitle(fig: FigureBase, text: str, size: float = TITLE_SIZE) -> Text:
    """Title of a figure or subfigure, wrapped to its width so that the layout engine reserves every line."""
    width = fig.bbox.width / fig.figure.dpi
    return fig.suptitle(_wrap(fig, text, size, 0.97 * width), fontsize=size)


def legend_right(ax: Axes, handles: Sequence[Artist], title: str | None = None, **kwargs: object) -> Legend:
    """Legend in the margin right of ax, top-aligned with it: put on a row's last panel it serves the row, on the
    top-right panel the whole figure. The layout engine widens that margin for it, and it stays below the title row
    (a figure legend placed 'outside' shares the title's row and runs into it)."""
    kwargs = {"frameon": False, "fontsize": 7} | kwargs
    return ax.legend(handles=handles, title=title, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0,
                     **kwargs)


def ordered_colors(n: int) -> list[tuple[float, float, float]]:
    """n colours of the shared sequential palette for an ordered condition (s₀ decades, layers, blocks): first
    dark, last light, ends far apart whatever n is."""
    cmap = plt.get_cmap(PALETTE)
    return [tuple(cmap(x)[:3]) for x in np.linspace(0.0, PALETTE_END, n)] if n > 1 else [tuple(cmap(0.0)[:3])]


# Overlap check --------------------------------------------------------------------------------------------------


class OverlapError(RuntimeError):
    """A figure whose texts overlap: its render job fails rather than write a figure that cannot be read."""


def _shown(text: Text) -> bool:
    return text.get_visible() and bool(text.get_text().strip()) and text.get_alpha() != 0


def _panel(ax: Axes) -> str:
    return f" of panel '{ax.get_title() or ax.get_label()}'"


def _tick_labels(axis: Axis) -> Iterator[tuple[Text, str]]:
    """The tick labels the axis draws: those of ticks inside the view interval."""
    lo, hi = sorted(axis.get_view_interval())
    tol = 1e-9 * max(abs(lo), abs(hi), 1e-300)
    name = axis.axis_name
    for ticks in (axis.get_major_ticks(), axis.get_minor_ticks()):
        for tick in ticks:
            loc = tick.get_loc()
            if loc is None or not (lo - tol <= loc <= hi + tol) or not tick.get_visible():
                continue
            for label in (tick.label1, tick.label2):
                yield label, f"{name} tick label"


def _axes_texts(ax: Axes) -> Iterator[tuple[Text, str, Axis | None]]:
    """Every text an axes draws, with what it is and, for a tick label, its axis."""
    where = _panel(ax)
    for child in ax.get_children():
        if not child.get_visible():
            continue
        if isinstance(child, Axis):
            if not ax.axison:
                continue
            yield child.label, f"{child.axis_name} label{where}", None
            yield child.offsetText, f"{child.axis_name} offset{where}", None
            for label, what in _tick_labels(child):
                yield label, what + where, child
        elif isinstance(child, Legend):
            yield from ((t, f"legend{where}", None) for t in [child.get_title(), *child.get_texts()])
        elif isinstance(child, Text):
            yield child, ("title" if child in (ax.title,) else "text") + where, None
        else:
            yield from ((t, f"text{where}", None) for t in child.findobj(Text, include_self=False))


def _figure_texts(fig: FigureBase) -> Iterator[tuple[Text, str, Axis | None]]:
    """Every text of a figure and its subfigures, with what it is."""
    label = "figure" if fig is fig.figure else "subfigure"
    for attr, what in (("_suptitle", "suptitle"), ("_supxlabel", "footer/supxlabel"), ("_supylabel", "supylabel")):
        text = getattr(fig, attr, None)
        if text is not None:
            yield text, f"{label} {what}", None
    yield from ((t, f"{label} text", None) for t in fig.texts)
    for legend in fig.legends:
        yield from ((t, f"{label} legend", None) for t in [legend.get_title(), *legend.get_texts()])
    for ax in fig.axes if fig is fig.figure else []:
        if ax.get_visible():
            yield from _axes_texts(ax)


def _collisions(fig: Figure) -> list[tuple[tuple[str, Axis | None], tuple[str, Axis | None]]]:
    """Every pair of drawn texts whose boxes overlap, each as (name, its axis if a tick label)."""
    if not hasattr(fig.canvas, "get_renderer"):  # closed by finish(): give it a canvas that measures text again
        FigureCanvasAgg(fig)
    fig.draw_without_rendering()
    if any(ax.get_aspect() != "auto" or ax.get_box_aspect() is not None for ax in fig.get_axes()):
        fig.draw_without_rendering()  # fixed-aspect panels shrank after the first pass placed their titles
    renderer = fig.canvas.get_renderer()
    subfigures = [f for f in fig.findobj(lambda a: isinstance(a, FigureBase)) if f is not fig]
    found = [item for source in (fig, *subfigures) for item in _figure_texts(source)]
    seen: set[int] = set()
    names, boxes = [], []
    for text, what, axis in found:
        if id(text) in seen or not _shown(text):
            continue
        seen.add(id(text))
        box = text.get_window_extent(renderer)
        if box.width <= 0 or box.height <= 0:
            continue
        names.append((f"{what}: {text.get_text()[:40]!r}", axis))
        boxes.append(box.extents)
    if not boxes:
        return []
    b = np.asarray(boxes) * (100.0 / fig.dpi)
    wide = np.minimum(b[:, None, 2], b[None, :, 2]) - np.maximum(b[:, None, 0], b[None, :, 0])
    tall = np.minimum(b[:, None, 3], b[None, :, 3]) - np.maximum(b[:, None, 1], b[None, :, 1])
    hits = np.argwhere(np.triu((wide > OVERLAP_PX) & (tall > OVERLAP_PX), k=1))
    return [(names[i], names[j]) for i, j in hits]


def text_overlaps(fig: Figure) -> list[str]:
    """'A ↔ B' for every pair of drawn texts (titles, labels, tick labels, legends, annotations, footer) whose
    boxes overlap once the figure is laid out, by matplotlib's own extents; each names the text, what it is and its
    panel. A figure with fixed-aspect panels (heatmaps, colour bars) is laid out twice, as savefig(bbox_inches="tight")
    does: the first pass places titles before those panels shrink."""
    return [f"{a} ↔ {b}" for (a, _), (b, _) in _collisions(fig)]


def settle_overlaps(fig: Figure, out: Path | str = "figure") -> None:
    """Check the figure's texts: where only an axis's own tick labels collide, thin that axis's ticks and say so;
    any other collision, or one that thinning does not clear, raises OverlapError naming every pair (the texts,
    what they are and their panel)."""
    pairs = _collisions(fig)
    for _ in range(3):
        crowded = {id(a): a for (_, a), (_, b) in pairs if a is not None and a is b}
        thinned = [axis for axis in crowded.values() if thin_ticks(axis)]
        if not thinned:
            break
        for axis in thinned:
            log.warning("%s: overlapping text: crowded %s tick labels%s, drawn with fewer ticks", out,
                        axis.axis_name, _panel(axis.axes))
        pairs = _collisions(fig)
    if pairs:
        listing = "\n  ".join(f"{a} ↔ {b}" for (a, _), (b, _) in pairs)
        raise OverlapError(f"{out}: {len(pairs)} pair(s) of overlapping text, so the figure is not written "
                           f"(fix its layout in its figure module):\n  {listing}")


def _save(fig: Figure, out: Path) -> None:
    """Save a vector PDF atomically: a killed job never leaves a half-written figure."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.stem}.{os.getpid()}.tmp.pdf")
    fig.savefig(tmp, bbox_inches="tight")
    os.replace(tmp, out)


def finish(fig: Figure, out: Path) -> None:
    """Check the figure's texts (``settle_overlaps``: crowded ticks thinned, any other overlap raises
    OverlapError, so the render job fails at every scale rather than write an unreadable figure), save it, close
    it."""
    out = Path(out)
    try:
        settle_overlaps(fig, out)
        _save(fig, out)
    finally:
        plt.close(fig)
