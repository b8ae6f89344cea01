"""The figure builder (featlearn.figures.style): the overlap finder catches colliding texts and finds none on a
builder figure with a long title, a figure legend and a multi-line footer; log axes are labelled at any span."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import matplotlib.pyplot as plt
import numpy as np
import pytest
import xarray as xr
from matplotlib.ticker import MaxNLocator

from featlearn.figures import spread, style, ticks

STORE = xr.Dataset(attrs={"scale": "smoke", "git_commit": "0123456789abcdef",
                          "data_source": "cifar10 stand-in: labelled Gaussian blobs\nsvhn stand-in: labelled "
                                         "Gaussian blobs\nmnist: real"})


def test_deliberately_overlapping_texts_are_named() -> None:
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.set_title("a panel title")
    ax.text(0.5, 1.02, "an annotation on the title", transform=ax.transAxes, ha="center")
    fig.text(0.5, 0.01, "a footer over the x tick labels", ha="center")
    overlaps = style.text_overlaps(fig)
    plt.close(fig)
    assert any("title" in o and "an annotation on the title" in o for o in overlaps), overlaps
    assert any("x tick label" in o and "a footer over the x tick labels" in o for o in overlaps), overlaps


def test_builder_reserves_title_legend_and_footer_rows() -> None:
    style.apply_style()
    fig = style.figure(6, 2.5, [STORE])
    axes = style.grid(fig, 1, 3)
    handles = []
    for ax, color in zip(axes[0], style.ordered_colors(3)):
        handles += ax.plot(np.arange(10), np.exp(-np.arange(10) / 3), color=color, label=f"s₀ = {color[0]:.2f}")
        ticks.log_scale(ax)
        ax.set(title="layer 1 · train loss", xlabel="epoch", ylabel="loss")
    style.legend_right(axes[0, -1], handles, title="init scale")
    style.suptitle(fig, "Fig 0 · a deliberately long title that names the experiment, its learning rate, "
                        "its data source and the number of seeds, mean ± sd over 3 seeds · ρ = cosine " * 2)
    assert style.text_overlaps(fig) == []
    assert "\n" in fig.get_suptitle()  # wrapped to the figure's width rather than running off it
    plt.close(fig)


def test_titles_wrap_between_words_but_never_inside_mathtext() -> None:
    fig = style.figure(2, 2, STORE)
    title = style.suptitle(fig, r"spectrum $\lambda_k \propto 1/(1+k^2)$ and $R_C = \langle F, G \rangle$ · " * 3)
    assert all(line.count("$") % 2 == 0 for line in title.get_text().split("\n"))
    assert max(style._text_width(fig, line, style.TITLE_SIZE) for line in title.get_text().split("\n")) < 2
    plt.close(fig)


@pytest.mark.parametrize("scale", ["smoke", "quick", "paper", "paper-rehearsal"])
def test_finish_refuses_overlapping_text_at_every_scale(scale: str, tmp_path) -> None:
    """The render job fails, naming both texts and their panel, and writes no figure, whatever the scale."""
    fig = style.figure(3, 2, STORE.assign_attrs(scale=scale))
    ax = fig.subplots()
    ax.set_title("NFC")
    ax.text(0.5, 0.5, "one", transform=ax.transAxes)
    ax.text(0.5, 0.5, "one", transform=ax.transAxes)
    with pytest.raises(style.OverlapError) as err:
        style.finish(fig, tmp_path / "fig.pdf")
    assert "1 pair(s) of overlapping text" in str(err.value)
    assert "text of panel 'NFC': 'one' ↔ text of panel 'NFC': 'one'" in str(err.value)
    assert not (tmp_path / "fig.pdf").exists() and not list(tmp_path.iterdir())
    assert not plt.fignum_exists(fig.number)
    assert len(style.text_overlaps(fig)) == 1  # a closed figure can still be checked


def test_finish_thins_crowded_tick_labels_and_says_so(tmp_path, caplog) -> None:
    """A rehearsal's fraction of an epoch on a narrow panel, 0.000 … 0.010 in eleven labels, which collide;
    finish() draws about half as many ticks, logs it, and saves."""
    style.apply_style()
    fig = style.figure(2.4, 2, STORE)  # Fig 13's panel: 1.7 in wide
    ax = fig.subplots()
    ax.plot([0, 0.0102], [0.3, 0.5])
    ax.set(title="MNIST · layer 1", ylabel="NFC")
    ax.xaxis.set_major_locator(MaxNLocator(nbins=10))
    assert any("x tick label of panel 'MNIST · layer 1'" in o for o in style.text_overlaps(fig))
    with caplog.at_level(logging.WARNING, logger="featlearn.figures.style"):
        style.finish(fig, tmp_path / "fig.pdf")
    assert (tmp_path / "fig.pdf").read_bytes()[:5] == b"%PDF-"
    assert any("crowded x tick labels of panel 'MNIST · layer 1'" in r.getMessage() for r in caplog.records)
    assert style.text_overlaps(fig) == [] and 2 <= len([x for x in ax.get_xticks() if 0 <= x <= 0.0102]) <= 6


def test_sparse_ticks_hold_a_rehearsals_epochs_on_a_narrow_panel() -> None:
    style.apply_style()
    fig = style.figure(2.4, 2, STORE)
    ax = fig.subplots()
    ax.plot([0, 0.0102], [0.3, 0.5])
    ax.set(title="MNIST · layer 1", ylabel="NFC")
    ax.xaxis.set_major_locator(MaxNLocator(nbins=10))
    assert style.text_overlaps(fig) != []
    ticks.sparse_ticks(ax)
    assert style.text_overlaps(fig) == []
    plt.close(fig)


def drawn_labels(ax: plt.Axes) -> list[str]:
    ax.figure.draw_without_rendering()
    lo, hi = ax.get_ylim()
    return [t.get_text() for t in ax.get_yticklabels() if lo <= t.get_position()[1] <= hi and t.get_text()]


@pytest.mark.parametrize(("low", "high"), [(0.3, 0.9), (0.15, 1.6), (0.09022, 0.09031), (2e-5, 3e-5), (1e-4, 1.0)])
def test_log_axis_has_labelled_ticks_at_any_span(low: float, high: float) -> None:
    fig, ax = plt.subplots(figsize=(2.5, 2))
    ax.plot([0, 1], [low, high])
    ticks.log_scale(ax)
    labels = drawn_labels(ax)
    assert len(labels) >= 2 and len(set(labels)) == len(labels), labels
    assert style.text_overlaps(fig) == []
    plt.close(fig)


def test_ordered_colors_have_distinct_ends() -> None:
    for n in (2, 3, 5):
        colors = np.asarray(style.ordered_colors(n))
        assert len(colors) == n
        assert np.abs(colors[0] - colors[-1]).sum() > 1.0  # first dark, last light, not two shades of one hue


def test_spread_note_drops_the_band_for_one_seed() -> None:
    assert spread.spread_note(1) == "1 seed" and spread.spread_note(0, "run") == "0 runs"
    assert spread.spread_note(3, "net") == "mean ± sample sd over 3 nets"


def test_bands_and_text_spread_are_the_sample_sd() -> None:
    """Two seeds at 0 and 2: the sample sd (ddof = 1) is √2; the population sd would be 1."""
    values = xr.DataArray([[0.0, 0.0], [2.0, 2.0]], dims=("seed", "step"))
    np.testing.assert_allclose(spread.sample_sd(values, "seed").values, [np.sqrt(2), np.sqrt(2)])
    assert spread.mean_sd(np.array([0.0, 2.0])) == "1.00 ± 1.41"


def test_one_value_has_no_band_and_no_plus_minus() -> None:
    """The sample sd of one value is undefined: no band (not a 0-wide one), no '± nan'."""
    assert spread.sample_sd(xr.DataArray([[1.0, 2.0]], dims=("seed", "step")), "seed") is None
    assert spread.mean_sd(np.array([0.7, np.nan])) == "0.70"
    assert spread.mean_sd(np.array([])) == "–"


def test_importing_the_style_leaves_the_backend_alone() -> None:
    """A notebook importing the figure code keeps its own backend; only the render job picks Agg. Run without
    MPLBACKEND (which conftest sets), where no backend is chosen until something draws."""
    code = ("import matplotlib\nbefore = matplotlib.get_backend(auto_select=False)\nimport featlearn.figures.style\n"
            "print(before, matplotlib.get_backend(auto_select=False))")
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert out.split() == ["None", "None"]


def test_plain_tick_labels_are_exact_not_rounded() -> None:
    assert ticks.plain_labels(np.array([0.089925, 0.08995, 0.089975, 0.09])) == ["0.089925", "0.08995", "0.089975",
                                                                                  "0.09"]


def _runs(diverged: list[list[float]], test_loss: float = 0.1) -> xr.Dataset:
    flags = np.array(diverged)
    return xr.Dataset(
        {"diverged": (("init_scale", "seed"), flags),
         "test_loss": (("init_scale", "seed", "step"), np.full((*flags.shape, 3), test_loss))},
        coords={"init_scale": [1.0, 0.1][: flags.shape[0]], "seed": list(range(flags.shape[1]))},
        attrs={"scale": "smoke", "data_source": "synthetic"})


def test_the_footer_names_diverged_runs_and_a_missing_test_loss_in_red() -> None:
    ds = _runs([[0, 1], [np.nan, 0]], test_loss=np.nan)  # one diverged, one never run
    assert style.store_warnings([ds]) == [
        "⚠ 1 of 3 runs diverged (init_scale = 1.0; seed = 1): their curves stop at the last finite step",
        "⚠ no test loss: the runs had no test split (data.n_test = 0)"]
    fig = style.figure(6, 3, ds)
    footer = fig._supxlabel
    assert footer.get_text().startswith("⚠ 1 of 3 runs diverged") and footer.get_color() == "tab:red"
    plt.close(fig)


def test_a_clean_store_has_a_grey_footer_without_warnings() -> None:
    ds = _runs([[0, 0]])
    assert style.store_warnings([ds]) == []
    fig = style.figure(6, 3, ds)
    assert fig._supxlabel.get_color() == "0.4" and "⚠" not in fig._supxlabel.get_text()
    plt.close(fig)
