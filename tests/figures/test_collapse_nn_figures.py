import importlib
import logging

import matplotlib.pyplot as plt
import numpy as np
import pytest
import xarray as xr

from featlearn.figures.collapse import nn_panels

FIGURES = (2, 7, 8, 9, 10, 11, 12)
EPOCHS = np.arange(0, 21)  # loss every epoch, measurements every 5


def _store(datasets=("mnist", "cifar10", "svhn"), seed_missing="svhn", diverged=("cifar10", 2), not_run=None,
           untrained=None):
    """A combined store with the pipeline's schema: ``seed_missing`` ran seed 0 only, ``diverged`` = (dataset, seed)
    turns NaN after epoch 12, ``not_run`` has no data at all, ``untrained``'s loss falls only 2× (the rest 40×)."""
    rng = np.random.default_rng(0)
    d, s, e = len(datasets), 3, len(EPOCHS)
    decay = np.exp(-EPOCHS / 8.0)
    measured = (EPOCHS % 5 == 0)[None, None, :]
    nc1 = (rng.uniform(0.5, 2, (d, s, 1, 5, 3)) * (0.05 + decay)[None, None, :, None, None])
    nc1[..., 1] *= 0.5
    nfa = 0.8 - 0.5 * decay[None, None, :, None] + rng.normal(0, 0.05, (d, s, e, 5))
    nfa = np.where(measured[..., None], np.clip(nfa, -0.1, 1), np.nan)
    w = np.where(measured, 0.9 * decay + 0.01, np.nan) * np.ones((d, s, 1))
    loss = (0.001 + np.exp(-EPOCHS / 5.0)) * rng.uniform(0.99, 1.01, (d, s, e))
    if untrained in datasets:
        loss[list(datasets).index(untrained)] = 0.5 + 0.5 * decay
    ds = xr.Dataset(
        {"nc1": (("dataset", "seed", "step", "layer", "stage"), np.where(measured[..., None, None], nc1, np.nan)),
         "nfa_sqrt": (("dataset", "seed", "step", "layer"), nfa),
         "nfa_full": (("dataset", "seed", "step", "layer"), nfa ** 2),
         "phi": (("dataset", "seed", "step", "layer"), np.where(measured[..., None], 0.7 + nfa * 0, np.nan)),
         "w_over_t": (("dataset", "seed", "step"), w), "b_over_t": (("dataset", "seed", "step"), 1 - w),
         "train_loss": (("dataset", "seed", "step"), loss), "test_loss": (("dataset", "seed", "step"), 1.2 * loss),
         "diverged": (("dataset", "seed"), np.zeros((d, s), dtype=bool))},
        coords={"dataset": list(datasets), "seed": [0, 1, 2], "epoch": ("step", EPOCHS), "layer": [1, 2, 3, 4, 5],
                "stage": ["input", "right", "left"]},
        attrs={"scale": "smoke", "data_source": "MNIST (real); CIFAR-10 stand-in", "git_commit": "0123456789"},
    )
    data_vars = [v for v in ds.data_vars if v != "diverged"]
    if seed_missing in datasets:
        for v in data_vars:
            ds[v].loc[{"dataset": seed_missing, "seed": [1, 2]}] = np.nan
    if diverged[0] in datasets:
        for v in data_vars:
            ds[v].loc[{"dataset": diverged[0], "seed": diverged[1], "step": EPOCHS[EPOCHS > 12]}] = np.nan
        ds["diverged"].loc[{"dataset": diverged[0], "seed": diverged[1]}] = True
    if not_run in datasets:
        for v in data_vars:
            ds[v].loc[{"dataset": not_run}] = np.nan
    return ds


STORES = {
    "collapse_mlp": _store(untrained="mnist"),
    "collapse_resnet": _store(not_run="mnist"),
    "collapse_vgg": _store(datasets=("mnist", "cifar10")),  # a scale that skipped SVHN: the row is left out
}


@pytest.mark.parametrize("number", FIGURES)
def test_figure_renders_without_overlapping_text(number, tmp_path, caplog):
    module = importlib.import_module(f"featlearn.figures.collapse.fig{number}")
    out = tmp_path / f"fig{number}.pdf"
    with caplog.at_level(logging.WARNING, logger="featlearn.figures.style"):
        module.render({name: STORES[name] for name in module.EXPERIMENTS}, out)
    assert out.stat().st_size > 5000
    assert [r.getMessage() for r in caplog.records if "overlapping text" in r.getMessage()] == []


def test_seed_groups_keep_the_diverged_run_and_skip_missing_seeds():
    ds = STORES["collapse_mlp"]
    assert nn_panels.seed_groups(ds.sel(dataset="cifar10")) == ([0, 1], [2])
    assert nn_panels.seed_groups(ds.sel(dataset="svhn")) == ([0], [])
    assert nn_panels.seeds_label(ds.sel(dataset="cifar10")) == "2 seeds · seed 2 diverged"
    assert nn_panels.seed_groups(STORES["collapse_resnet"].sel(dataset="mnist")) == ([], [])


def test_band_draws_the_diverged_seed_and_floors_the_lower_edge():
    run = STORES["collapse_mlp"].sel(dataset="cifar10")
    values = run.train_loss.copy()
    values.loc[{"seed": 1}] = -0.5 * values.sel(seed=0)  # sd > mean: the lower edge must stop at 0.01 × mean
    fig, ax = plt.subplots()
    nn_panels.band(ax, values, run, "k", "loss")
    mean = values.sel(seed=[0, 1]).mean("seed").values
    edges = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert edges.min() == pytest.approx(0.01 * mean.min())
    sample_sd = values.sel(seed=[0, 1]).std("seed", ddof=1).values  # two seeds: the sample sd, √2 × the population sd
    assert edges.max() == pytest.approx(np.nanmax(mean + sample_sd))
    diverged_line = ax.lines[1]
    assert diverged_line.get_linestyle() == "--" and diverged_line.get_xdata()[-1] == 12
    plt.close(fig)


def test_final_values_use_the_last_measured_epoch_of_healthy_seeds():
    run = STORES["collapse_mlp"].sel(dataset="cifar10")
    final = nn_panels.final_values(run.nfa_sqrt, run)
    np.testing.assert_array_equal(final, run.nfa_sqrt.sel(seed=[0, 1], step=20).values.ravel())


def test_a_row_that_did_not_pass_the_training_gate_says_so_on_its_panels(tmp_path):
    ds = STORES["collapse_mlp"]
    note = nn_panels.untrained_note(ds.sel(dataset="mnist"), "quick")
    drop = 1 / (0.5 + 0.5 * np.exp(-EPOCHS[-1] / 8.0))  # the untrained row's loss, first over last
    assert note.startswith(f"not trained to collapse: train loss fell {drop:.1f}× (gate 10×)")
    assert "see paper scale" in note
    assert "see paper scale" not in nn_panels.untrained_note(ds.sel(dataset="mnist"), "paper")
    assert nn_panels.untrained_note(ds.sel(dataset="cifar10"), "quick") is None
    texts = []
    plt.close("all")
    original = nn_panels.finish
    try:
        nn_panels.finish = lambda fig, out: texts.extend(t.get_text() for ax in fig.axes for t in ax.texts)
        nn_panels.nfa_figure(ds, tmp_path / "f.pdf", "Fig 10")
    finally:
        nn_panels.finish = original
    assert sum(t.startswith("not trained to collapse") for t in texts) == 1
