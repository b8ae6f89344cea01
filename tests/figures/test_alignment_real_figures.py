"""The alignment paper's real-data figures (2, 13–17) render from small synthetic stores built to the
store schema, including a missing dataset, a never-run seed, diverged runs, and 1- and 2-seed stores."""

from __future__ import annotations

import importlib
import json
import logging

import numpy as np
import pytest
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.text import Text

from featlearn.figures.alignment.real_panels import divergence, present_seeds

CONVENTIONS = ["cosine", "pearson"]


def attrs(source: str) -> dict[str, str]:
    return {"scale": "smoke", "data_source": source, "git_commit": "0123456789abcdef",
            "experiment_config": json.dumps({"train": {"slo": {"speeds": [2.5, 0.4, 0.4, 0.4, 0.4], "eps": 0.2}}})}


def nfc(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.uniform(0.2, 1.0, shape)


def real_mlp(seeds: int = 3, datasets: tuple[str, ...] = ("cifar10", "svhn", "mnist")) -> xr.Dataset:
    """cifar10 seed 1 diverges after epoch 3, svhn's last seed never ran, mnist trains 4 of 6 epochs."""
    rng = np.random.default_rng(0)
    n_d, n_e, n_l = len(datasets), 7, 5
    dims4 = ("dataset", "seed", "step", "layer")
    ds = xr.Dataset(
        {"uc_nfc": (dims4 + ("convention",), nfc(rng, n_d, seeds, n_e, n_l, 2)),
         "c_nfc": (dims4 + ("convention",), nfc(rng, n_d, seeds, n_e, n_l, 2)),
         "dw_rel": (dims4, np.cumsum(rng.uniform(0, 0.1, (n_d, seeds, n_e, n_l)), axis=2)),
         "train_loss": (dims4[:3], np.exp(-np.arange(n_e)) * rng.uniform(0.5, 1, (n_d, seeds, n_e))),
         "test_loss": (dims4[:3], 0.5 + np.exp(-np.arange(n_e)) * rng.uniform(0.5, 1, (n_d, seeds, n_e))),
         "diverged": (("dataset", "seed"), np.zeros((n_d, seeds), dtype=int)),
         "diverged_step": (("dataset", "seed"), np.full((n_d, seeds), np.nan)),
         # datasets differ in steps per epoch: rows are aligned on epoch, each run's steps beside them
         "step_of_epoch": (dims4[:3], np.arange(n_e) * np.arange(100, 100 + 10 * n_d, 10)[:, None, None]
                           * np.ones((1, seeds, 1)))},
        coords={"dataset": list(datasets), "seed": np.arange(seeds), "epoch": ("step", np.arange(n_e)),
                "layer": np.arange(1, n_l + 1), "convention": CONVENTIONS},
        attrs=attrs("\n".join(f"{d} stand-in: labelled Gaussian blobs" for d in datasets)))
    time_vars = ["uc_nfc", "c_nfc", "dw_rel", "train_loss", "test_loss"]
    if "cifar10" in datasets and seeds > 1:
        for var in time_vars:
            ds[var].loc[{"dataset": "cifar10", "seed": 1, "step": slice(4, None)}] = np.nan
        ds.diverged.loc[{"dataset": "cifar10", "seed": 1}] = 1
        ds.diverged_step.loc[{"dataset": "cifar10", "seed": 1}] = 1234
    for var in time_vars:
        if "svhn" in datasets and seeds > 1:
            ds[var].loc[{"dataset": "svhn", "seed": seeds - 1}] = np.nan
        if "mnist" in datasets:
            ds[var].loc[{"dataset": "mnist", "step": slice(5, None)}] = np.nan
    return ds


def vgg_cifar(seeds: int = 2) -> xr.Dataset:
    rng = np.random.default_rng(1)
    dims = ("seed", "step", "layer")
    return xr.Dataset(
        {"uc_nfc": (dims + ("convention",), nfc(rng, seeds, 6, 8, 2)),
         "c_nfc": (dims + ("convention",), nfc(rng, seeds, 6, 8, 2)),
         "dw_rel": (dims, np.cumsum(rng.uniform(0, 0.1, (seeds, 6, 8)), axis=1)),
         "train_loss": (dims[:2], rng.uniform(0.1, 1, (seeds, 6))),
         "test_loss": (dims[:2], rng.uniform(0.1, 1, (seeds, 6))),
         "diverged": ("seed", np.zeros(seeds, dtype=int)), "diverged_step": ("seed", np.full(seeds, np.nan))},
        coords={"seed": np.arange(seeds), "epoch": ("step", np.arange(6)), "layer": np.arange(1, 9),
                "convention": CONVENTIONS},
        attrs=attrs("CIFAR-10 stand-in: labelled Gaussian blobs"))


def gpt_shakespeare(seeds: int = 1, diverge: bool = False) -> xr.Dataset:
    """With diverge, the last seed's losses and metrics are NaN from iteration 300 on."""
    rng = np.random.default_rng(2)
    steps, iterations = np.arange(0, 501, 100), np.arange(501)
    dims = ("seed", "step", "block", "proj")
    ds = xr.Dataset(
        {"uc_nfc": (dims + ("convention",), nfc(rng, seeds, 6, 3, 3, 2)),
         "c_nfc": (dims + ("convention",), nfc(rng, seeds, 6, 3, 3, 2)),
         "dw_rel": (dims, np.cumsum(rng.uniform(0, 0.1, (seeds, 6, 3, 3)), axis=1)),
         "val_loss": (dims[:2], rng.uniform(1, 4, (seeds, 6))),
         "loss": (("seed", "iteration"), rng.uniform(1, 4, (seeds, 501)))},
        coords={"seed": np.arange(seeds), "step": steps, "iteration": iterations, "block": [1, 2, 3],
                "proj": ["q", "k", "v"], "convention": CONVENTIONS},
        attrs=attrs("Shakespeare-char (real)"))
    if diverge:
        for var in ("uc_nfc", "c_nfc", "dw_rel", "val_loss"):
            ds[var].loc[{"seed": seeds - 1, "step": slice(300, None)}] = np.nan
        ds.loss.loc[{"seed": seeds - 1, "iteration": slice(300, None)}] = np.nan
    return ds


def celeba_glasses(seeds: int = 2) -> xr.Dataset:
    rng = np.random.default_rng(3)
    dims = ("seed", "row", "col")
    return xr.Dataset(
        {"nfm_diag": (dims, rng.uniform(0, 1, (seeds, 8, 8))),
         "agop_diag": (dims, rng.uniform(0, 1, (seeds, 8, 8))),
         "corrupted_diag": (dims, rng.uniform(0, 1, (seeds, 8, 8))),
         "rho_diag_agop": ("seed", rng.uniform(0.85, 0.95, seeds)),
         "rho_diag_corrupted": (("seed", "q_draw"), rng.uniform(-0.1, 0.1, (seeds, 4))),
         "train_loss": (("seed", "step"), rng.uniform(0.01, 0.3, (seeds, 5))),
         "diverged": ("seed", np.zeros(seeds, dtype=int)), "diverged_step": ("seed", np.full(seeds, np.nan))},
        coords={"seed": np.arange(seeds), "q_draw": np.arange(4), "row": np.arange(8), "col": np.arange(8),
                "epoch": ("step", np.arange(5))},
        attrs=attrs("CelebA stand-in: labelled Gaussian blobs"))


def svhn_slo(seeds: int = 2) -> xr.Dataset:
    """The last SLO seed diverges at step 250."""
    rng = np.random.default_rng(4)
    steps = np.arange(0, 301, 50)
    dims = ("optimizer", "seed", "step", "layer")
    ds = xr.Dataset(
        {"uc_nfc": (dims + ("convention",), nfc(rng, 2, seeds, 7, 4, 2)),
         "c_nfc": (dims + ("convention",), nfc(rng, 2, seeds, 7, 4, 2)),
         "ratio_c_uc": (dims, rng.uniform(0.01, 1, (2, seeds, 7, 4))),
         "nfm_diag": (("optimizer", "seed", "row", "col"), rng.uniform(0, 1, (2, seeds, 8, 8))),
         "agop_diag": (("optimizer", "seed", "row", "col"), rng.uniform(0, 1, (2, seeds, 8, 8))),
         "train_loss": (dims[:3], rng.uniform(0.01, 1, (2, seeds, 7))),
         "test_loss": (dims[:3], rng.uniform(0.01, 1, (2, seeds, 7)))},
        coords={"optimizer": ["gd", "slo"], "seed": np.arange(seeds), "step": steps, "layer": [1, 2, 3, 4],
                "convention": CONVENTIONS, "row": np.arange(8), "col": np.arange(8)},
        attrs=attrs("SVHN stand-in: labelled Gaussian blobs"))
    for var in ("uc_nfc", "c_nfc", "ratio_c_uc", "train_loss", "test_loss"):
        ds[var].loc[{"optimizer": "slo", "seed": seeds - 1, "step": slice(250, None)}] = np.nan
    return ds


VARIANTS = {
    "several seeds": {"real_mlp": real_mlp(), "vgg_cifar": vgg_cifar(), "gpt_shakespeare": gpt_shakespeare(2, True),
                      "celeba_glasses": celeba_glasses(), "svhn_slo": svhn_slo()},
    "one seed": {"real_mlp": real_mlp(1, ("svhn", "mnist")), "vgg_cifar": vgg_cifar(1),
                 "gpt_shakespeare": gpt_shakespeare(), "celeba_glasses": celeba_glasses(1), "svhn_slo": svhn_slo(1)},
}


def texts(fig: Figure) -> str:
    """Every piece of text on the figure, subfigures and legends included, with every run of whitespace (a line
    break of a label, or one the builder made to wrap a title) read as one space."""
    return " ".join(" ".join(t.get_text().split()) for t in fig.findobj(Text))


def draw(n: int, variant: str) -> Figure:
    module = importlib.import_module(f"featlearn.figures.alignment.fig{n}")
    return module.draw({name: VARIANTS[variant][name] for name in module.EXPERIMENTS})


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("n", [2, 13, 14, 15, 16, 17])
def test_renders_pdf_without_overlapping_text(n: int, variant: str, tmp_path, caplog) -> None:
    module = importlib.import_module(f"featlearn.figures.alignment.fig{n}")
    out = tmp_path / f"fig{n}.pdf"
    with caplog.at_level(logging.WARNING, logger="featlearn.figures.style"):
        module.render({name: VARIANTS[variant][name] for name in module.EXPERIMENTS}, out)
    assert out.read_bytes()[:5] == b"%PDF-" and out.stat().st_size > 5000
    assert [r.getMessage() for r in caplog.records if "overlapping text" in r.getMessage()] == []


def test_fig16_titles_carry_the_pearson_values() -> None:
    store = VARIANTS["several seeds"]["celeba_glasses"]
    text = texts(draw(16, "several seeds"))
    agop, corrupted = store.rho_diag_agop.values, store.rho_diag_corrupted.values.ravel()
    assert f"ρ̄(diag F, diag Ḡ) = {agop.mean():.2f} ± {agop.std(ddof=1):.2f} (n = 2) (paper 0.91)" in text
    assert f"ρ̄(diag F, diag WᵀQW) = {corrupted.mean():.2f} ± {corrupted.std(ddof=1):.2f} (n = 8) (paper 0.04)" in text
    assert "ρ̄: mean ± sample sd over 2 seeds, 4 Q draws" in text
    one = VARIANTS["one seed"]["celeba_glasses"].rho_diag_agop.item()
    assert f"ρ̄(diag F, diag Ḡ) = {one:.2f} (paper 0.91)" in texts(draw(16, "one seed"))


def test_divergence_and_missing_runs_are_named() -> None:
    fig13 = texts(draw(13, "several seeds"))
    assert "CIFAR-10 mean ± sample sd over 3 seeds 1/3 seeds diverged (step 1234)" in fig13  # diverged seed kept
    assert "SVHN mean ± sample sd over 2 seeds" in fig13  # the never-run seed is not counted
    assert "not in this store: CIFAR-100, GTSRB, STL-10" in fig13
    fig2 = texts(draw(2, "several seeds"))
    assert "left out, diverged: CIFAR-10 seed 1" in fig2
    assert "1/2 seeds diverged (step 300)" in fig2  # GPT: read off the validation loss
    assert "SLO · mean ± sample sd over 2 seeds · 1/2 seeds diverged (step 250)" in texts(draw(17, "several seeds"))


def test_fig2_says_which_dataset_replaces_cifar10() -> None:
    assert "A · MLP on SVHN (CIFAR-10 is not in this store) · 1 seed" in texts(draw(2, "one seed"))


def test_layer_summary_averages_runs_that_exist() -> None:
    """Fig 2B: UC-NFC of layer 1 at init and at each run's last epoch (MNIST trains fewer), averaged
    over the runs that ran and did not diverge."""
    fig = draw(2, "several seeds")
    ds = VARIANTS["several seeds"]["real_mlp"]
    init = ds.uc_nfc.sel(convention="pearson", step=0, layer=1)
    runs = [(d, s) for d in ds.dataset.values for s in ds.seed.values
            if np.isfinite(ds.train_loss.sel(dataset=d, seed=s)).any() and not ds.diverged.sel(dataset=d, seed=s)]
    last = {"cifar10": 6, "svhn": 6, "mnist": 4}
    final = ds.uc_nfc.sel(convention="pearson", layer=1)
    summary = next(ax for ax in fig.findobj(lambda a: hasattr(a, "get_xlabel")) if ax.get_xlabel() == "hidden layer")
    points = {c.get_label(): c.lines[0].get_ydata()[0] for c in summary.containers}
    init_bars = next(c for c in summary.containers if c.get_label() == "UC-NFC init")
    low, high = init_bars.lines[2][0].get_segments()[0][:, 1]  # layer 1's error bar
    assert len(runs) == 7  # 3 datasets × 3 seeds, less svhn's never-run seed and cifar10's diverged one
    assert points["UC-NFC init"] == pytest.approx(np.mean([init.sel(dataset=d, seed=s) for d, s in runs]))
    assert (high - low) / 2 == pytest.approx(np.std([init.sel(dataset=d, seed=s) for d, s in runs], ddof=1))
    assert "mean ± sample sd over 7 runs: CIFAR-10, SVHN, MNIST" in texts(fig)
    assert points["UC-NFC final"] == pytest.approx(np.mean([final.sel(dataset=d, seed=s, step=last[d])
                                                            for d, s in runs]))


def test_divergence_read_off_the_loss_when_not_recorded() -> None:
    run = present_seeds(gpt_shakespeare(3, True), "val_loss")
    flags = divergence(run, "val_loss")
    assert flags.diverged.values.tolist() == [0, 0, 1]
    assert flags.diverged_step.values[2] == 300 and np.isnan(flags.diverged_step.values[:2]).all()
