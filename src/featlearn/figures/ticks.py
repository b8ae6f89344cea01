"""Axis ticks that stay readable on any span and any panel width: log axes labelled whatever their span
(``log_scale``), a few round ticks on a narrow linear axis (``sparse_ticks``), and fewer ticks where an axis's own
labels collide (``thin_ticks``, which ``style.finish`` applies).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.ticker import Formatter, Locator, LogFormatterSciNotation, LogLocator, MaxNLocator

MIN_TICKS = 3  # labelled ticks on a log axis spanning less than two decades


def _decades(vmin: float, vmax: float) -> np.ndarray:
    """The powers of ten inside [vmin, vmax]."""
    return 10.0 ** np.arange(math.ceil(math.log10(vmin) - 1e-9), math.floor(math.log10(vmax) + 1e-9) + 1)


def _in(ticks: np.ndarray, vmin: float, vmax: float) -> np.ndarray:
    return ticks[(ticks >= vmin * (1 - 1e-9)) & (ticks <= vmax * (1 + 1e-9))]


def _span_ticks(vmin: float, vmax: float, nbins: int) -> tuple[str, np.ndarray]:
    """The major ticks of a log axis on [vmin, vmax] and how to label them: decades where at least two are in view,
    else 1-2-5 steps where MIN_TICKS are, else about nbins evenly spaced values (a span under a factor of ~10)."""
    vmin, vmax = sorted((vmin, vmax))
    if not (np.isfinite(vmin) and np.isfinite(vmax)) or vmin <= 0:
        return "decades", np.array([])
    decades = _decades(vmin, vmax)
    if decades.size >= 2:
        return "decades", LogLocator(base=10, numticks=nbins + 2).tick_values(vmin, vmax)
    below = _decades(vmin / 10, vmax)
    one_two_five = _in(np.concatenate([below, 2 * below, 5 * below]), vmin, vmax)
    if one_two_five.size >= MIN_TICKS:
        return "values", np.unique(one_two_five)
    even = MaxNLocator(nbins=nbins, steps=[1, 2, 2.5, 5, 10], min_n_ticks=MIN_TICKS).tick_values(vmin, vmax)
    return "values", _in(even, vmin, vmax)


class _SpanLogLocator(Locator):
    """Major (or minor) ticks of ``log_scale``: see ``_span_ticks``; minor ticks only between labelled decades."""

    def __init__(self, minor: bool = False, nbins: int = 4) -> None:
        self.minor, self.nbins = minor, nbins

    def __call__(self) -> np.ndarray:
        return self.tick_values(*self.axis.get_view_interval())

    def tick_values(self, vmin: float, vmax: float) -> np.ndarray:
        kind, major = _span_ticks(vmin, vmax, self.nbins)
        if not self.minor:
            return major
        if kind != "decades":
            return np.array([])
        return LogLocator(base=10, subs=np.arange(2, 10), numticks=12).tick_values(*sorted((vmin, vmax)))


class _SpanLogFormatter(Formatter):
    """Labels of ``log_scale``: 10ⁿ on decades, otherwise plain numbers with just enough digits to tell apart."""

    def __init__(self, nbins: int = 4) -> None:
        self.nbins = nbins
        self.decades = LogFormatterSciNotation(labelOnlyBase=True)

    def format_ticks(self, values: Sequence[float]) -> list[str]:
        kind, _ = _span_ticks(*self.axis.get_view_interval(), self.nbins)
        if kind == "decades":
            self.decades.set_axis(self.axis)
            return self.decades.format_ticks(values)
        return plain_labels(np.asarray(values, dtype=float))

    def __call__(self, x: float, pos: int | None = None) -> str:
        return self.format_ticks([x])[0]


def plain_labels(values: np.ndarray) -> list[str]:
    """'0.0902', '0.09025' …: the fewest significant digits that write every tick exactly (to a millionth of the
    spacing), so that labels are distinct and none is rounded."""
    finite = values[np.isfinite(values)]
    spacing = np.diff(np.sort(finite)).min() if finite.size > 1 else abs(finite[0]) if finite.size else 1.0
    for digits in range(1, 16):
        labels = [f"{v:.{digits}g}" for v in values]
        if all(abs(float(label) - v) <= 1e-6 * spacing for label, v in zip(labels, values) if np.isfinite(v)):
            return labels
    return [f"{v:.16g}" for v in values]


def log_scale(ax: Axes, axis: str = "y", nbins: int = 4) -> None:
    """Make ax's x or y axis logarithmic with labelled ticks whatever its span: decades (10ⁿ) where two are in
    view, otherwise a few plain-number ticks (a loss that moves within a decade still shows its values)."""
    target = ax.yaxis if axis == "y" else ax.xaxis
    (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
    target.set_major_locator(_SpanLogLocator(nbins=nbins))
    target.set_minor_locator(_SpanLogLocator(minor=True, nbins=nbins))
    target.set_major_formatter(_SpanLogFormatter(nbins))
    target.set_minor_formatter(plt.NullFormatter())


def sparse_ticks(ax: Axes, axis: str = "x", nbins: int = 3) -> None:
    """At most nbins + 1 round ticks on ax's linear x or y axis: a panel about 2 in wide then holds its labels
    whatever the span, 0 … 150 epochs or a rehearsal's 0.000 … 0.010 (matplotlib's default puts five labels such as
    0.0025 there, which collide)."""
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(MaxNLocator(nbins=nbins, steps=[1, 2, 2.5, 5, 10], min_n_ticks=2))


def thin_ticks(axis: Axis) -> bool:
    """Fewer labelled ticks on an axis whose own tick labels collide (a long span, a narrow panel, labels such as
    0.0025 on a rehearsal's fraction of an epoch); False where the axis cannot thin (fixed ticks, a log axis already
    at its fewest). The axis keeps its formatter and, with MaxNLocator, round steps."""
    ticks = [t for t in axis.get_majorticklocs() if np.isfinite(t)]
    locator = axis.get_major_locator()
    if isinstance(locator, _SpanLogLocator):
        if locator.nbins <= 2:
            return False
        nbins = max(2, locator.nbins // 2)
        axis.set_major_locator(_SpanLogLocator(nbins=nbins))
        axis.set_minor_locator(_SpanLogLocator(minor=True, nbins=nbins))
        formatter = axis.get_major_formatter()
        if isinstance(formatter, _SpanLogFormatter):
            formatter.nbins = nbins
        return True
    if axis.get_scale() != "linear" or not isinstance(locator, MaxNLocator) or len(ticks) <= 2:
        return False
    axis.set_major_locator(MaxNLocator(nbins=max(1, len(ticks) // 2 - 1), steps=[1, 2, 2.5, 5, 10], min_n_ticks=2))
    return True
