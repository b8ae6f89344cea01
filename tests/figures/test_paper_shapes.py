"""Every figure drawn from SYNTHETIC stores of the paper's shapes has no overlapping text.

The smoke build checks the figures at smoke shapes; the paper's shapes differ (six datasets, 151 epochs, ten Gram
layers, 20 γ values, 5,001 GPT iterations) and so does a rehearsal's (one seed, two snapshots a few optimizer steps
apart: epochs such as 0.0102). The stores here are synthetic: made-up values, with the variables, dimensions and
coordinates the pipeline writes, sized from config.yaml's paper values (rehearsed by
``featlearn.pipeline.rehearsal.cut``).
Time axes come from the training schedule itself (``featlearn.train.schedule``, ``metrics.measure.time_axis``) and the
per-unit stores are stacked by each kind's own ``combine``, so padding (MNIST's 50 of 150 epochs) is the pipeline's.
Values move with the fraction of the paper's run done, so a rehearsal's curves barely move, as a real one's do.

One reduction, which no text depends on: a Gram panel holds 20 points per class instead of the paper's 100 (the
panel's size and labels come from the layout, not from its pixel count).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml

from featlearn import config as fc
from featlearn.figures import figure_numbers, style
from featlearn.metrics import nfa
from featlearn.metrics.collapse_measure import collapse_run_dataset
from featlearn.metrics.measure import time_axis
from featlearn.pipeline import experiments as fx
from featlearn.pipeline import rehearsal
from featlearn.pipeline.projection import points
from featlearn.train import schedule

CONFIG = Path(__file__).resolve().parents[2] / "config.yaml"
SHAPES = ("paper", "paper-rehearsal")
GRAM_PER_CLASS = 20
FIGURES = [(paper, n) for paper, numbers in figure_numbers().items() for n in numbers]


def _experiments(shape: str) -> dict[str, dict]:
    """Every experiment of config.yaml, resolved at the paper scale and, for a rehearsal, cut as the pipeline cuts."""
    cfg = yaml.safe_load(CONFIG.read_text()) | {"scale": "paper"}
    out = {}
    for name in cfg["experiments"]:
        exp = fc.experiment(cfg, name)
        if shape.endswith("-rehearsal"):
            exp = rehearsal.cut(exp, fx.KINDS[exp["kind"]]["repeats"])
        out[name] = exp
    return out


def _units(name: str, exp: dict, shape: str) -> dict[str, dict]:
    units = fx.kind_of(exp["kind"]).units(name, exp)
    return rehearsal.cut_units(units, "/nonexistent") if shape.endswith("-rehearsal") else units


def _progress(unit: dict, steps: np.ndarray) -> np.ndarray:
    """Each snapshot's fraction of the paper's run (a rehearsal's 4 steps are a sliver of it)."""
    paper_unit = {**unit, "train": {k: v for k, v in unit["train"].items() if k != "budget"}}
    total = schedule(paper_unit, points(fx.kind_of(unit["kind"]).datasets(unit)[0]))["steps"]
    return np.asarray(steps, dtype=float) / max(total, 1)


def _curve(rng: np.random.Generator, t: np.ndarray, start: float, end: float, *shape: int) -> np.ndarray:
    """start → end over the run's fraction t (time first), each extra index with its own slight offset."""
    base = start + (end - start) * (1 - np.exp(-5 * t))
    return base.reshape(-1, *[1] * len(shape)) * rng.uniform(0.9, 1.0, (1, *shape))


def _status(unit: dict, steps: list[int]) -> xr.Dataset:
    """The loss of every step and the divergence flags every trained run carries (``measure.run_status``)."""
    n = steps[-1] + 1
    return xr.Dataset({"loss": (("iteration",), np.exp(-np.arange(n) / max(n, 1)) + 0.1),
                       "diverged": 0, "diverged_step": np.nan}, coords={"iteration": np.arange(n)})


def _trained_run(unit: dict, rng: np.random.Generator) -> xr.Dataset:
    """One run's measured store, per measurement family, on its schedule's time labels."""
    n = points(fx.kind_of(unit["kind"]).datasets(unit)[0])
    steps, labels = time_axis({"schedule": schedule(unit, n)}, unit)
    t = _progress(unit, steps)
    conv = list(nfa.CONVENTIONS)
    family = unit["measure"].get("family", "nfa")
    loss = {"train_loss": ("step", _curve(rng, t, 1.0, 1e-3)),
            "test_loss": ("step", _curve(rng, t, 1.0, 0.05))}
    if family == "collapse":
        layers = unit["model"]["depth"]
        values = {"nc1": _curve(rng, t, 5.0, 0.01, layers, 3), "nfa_sqrt": _curve(rng, t, 0.1, 0.8, layers),
                  "nfa_full": _curve(rng, t, 0.05, 0.7, layers), "phi": _curve(rng, t, 0.3, 0.7, layers),
                  "w_over_t": _curve(rng, t, 0.9, 0.01), "b_over_t": _curve(rng, t, 0.1, 0.99)}
        ds = collapse_run_dataset(values, labels).assign(loss)
    elif family == "attention_nfa":
        blocks = unit["model"]["n_layer"]
        nfc = ("step", "block", "proj", "convention")
        ds = labels.assign_coords(block=np.arange(1, blocks + 1), proj=list("qkv"), convention=conv).assign(
            uc_nfc=(nfc, _curve(rng, t, 0.3, 0.9, blocks, 3, 2)), c_nfc=(nfc, _curve(rng, t, 0.2, 0.8, blocks, 3, 2)),
            dw_rel=(nfc[:3], _curve(rng, t, 0.0, 0.6, blocks, 3)),
            val_loss=("step", _curve(rng, t, 4.2, 1.5)))
    else:  # nfa (MLPs) and conv_nfa (VGG): per layer
        layers = 8 if family == "conv_nfa" else len(unit["model"]["widths"])
        names = ("uc_nfc", "c_nfc", "dc_nfc", "ptkc_nfc") if unit["measure"].get("centered") else ("uc_nfc", "c_nfc")
        nfc = ("step", "layer", "convention")
        ds = labels.assign_coords(layer=np.arange(1, layers + 1), convention=conv).assign(
            {name: (nfc, _curve(rng, t, 0.3, 0.9, layers, 2)) for name in names}).assign(
            ratio_c_uc=(nfc[:2], _curve(rng, t, 1e-4, 0.5, layers)), dw_rel=(nfc[:2], _curve(rng, t, 0.0, 0.8, layers)),
            k_dispersion=(nfc[:2], _curve(rng, t, 3.0, 6.0, layers)), **loss)
        if unit["measure"].get("centered"):
            ds["ratio_dc_c"] = (nfc[:2], _curve(rng, t, 1e-4, 0.3, layers))
        ds.attrs["final_step"] = steps[-1]
        ds = ds.merge(_extras(unit, rng))
        if family == "conv_nfa":
            ds = ds.drop_vars(["k_dispersion"])
    if "task" in unit["data"]:  # synthetic data has an EGOP
        ds["rho_nfm_egop"] = ("step", _curve(rng, t, 0.1, 0.9))
        ds["rho_agop_egop"] = ("step", _curve(rng, t, 0.2, 0.95))
    return ds.merge(_status(unit, steps)).assign_attrs(data_source=f"{unit['data'].get('dataset', 'chain')} "
                                                                   "(synthetic test store)")


def _extras(unit: dict, rng: np.random.Generator) -> xr.Dataset:
    """The first layer's matrices (synthetic inputs) or diagonal images (real images) at the last snapshot."""
    draws = unit["measure"].get("random_q_draws", 0)
    if unit["measure"].get("image_diagonals"):
        side = unit["data"].get("size", 32)
        image = ("row", "col")
        ds = xr.Dataset({"nfm_diag": (image, rng.uniform(0, 1, (side, side))),
                         "agop_diag": (image, rng.uniform(0, 1, (side, side))), "rho_diag_agop": 0.9})
        if draws:
            ds["corrupted_diag"] = (image, rng.uniform(0, 1, (side, side)))
            ds["rho_diag_corrupted"] = (("q_draw",), rng.uniform(-0.1, 0.1, draws))
        return ds
    if "task" not in unit["data"]:
        return xr.Dataset()
    d, pair = unit["data"]["d"], ("input_i", "input_j")
    ds = xr.Dataset({name: (pair, rng.normal(0, 1, (d, d))) for name in ("nfm", "agop", "egop")})
    if draws:
        ds["corrupted_agop"] = (pair, rng.normal(0, 1, (d, d)))
        ds["rho_nfm_corrupted"] = (("q_draw",), rng.uniform(0.4, 0.6, draws))
    return ds


def _deep_rfm_unit(unit: dict, rng: np.random.Generator) -> xr.Dataset:
    """One dataset's Deep RFM store: NC metrics per (layer, stage), Grams at the gram layers."""
    depth, grams, classes = unit["model"]["depth"], unit["gram"]["layers"], 10
    side = classes * min(unit["gram"]["per_class"], GRAM_PER_CLASS)
    layer_curve = np.geomspace(5.0, 1e-3, depth)[:, None] * rng.uniform(0.5, 1.0, (1, 3))
    metrics = {name: (("layer", "stage"), layer_curve * scale) for name, scale in
               (("nc1", 1.0), ("nc1_codeconv", 0.1), ("nc2_meansq", 0.01), ("nc2_fro", 0.1), ("trSW", 1.0),
                ("trSB", 1.0))}
    gram = rng.uniform(-1, 1, (len(grams), side, side))
    return xr.Dataset(
        {**metrics, "gram": (("gram_layer", "i", "j"), gram),
         "gram_block_mean": (("gram_layer", "class_a", "class_b"), rng.uniform(-0.2, 1, (len(grams), classes,
                                                                                         classes)))},
        coords={"layer": np.arange(1, depth + 1), "stage": ["X", "MX", "PhiMX"], "gram_layer": grams,
                "i": np.arange(side), "j": np.arange(side), "class_a": np.arange(classes),
                "class_b": np.arange(classes)},
        attrs={"dataset": unit["dataset"], "kernel": unit["model"]["kernel"][unit["dataset"]],
               "solve": "synthetic", "data_source": f"{unit['dataset']} (synthetic test store)"})


def _single(name: str, exp: dict, rng: np.random.Generator) -> xr.Dataset:
    """The one-job kinds' stores (Figs 3, 7 and the tangent paper)."""
    kind = exp["kind"]
    if kind == "reversing":
        g, seeds = exp["gammas"], exp["data_seeds"]
        dims = ("gamma", "data_seed")
        rho = np.linspace(0.2, 0.95, len(g))[:, None] + rng.normal(0, 0.02, (len(g), seeds))
        return xr.Dataset({"rho_observed": (dims, rho), "rho_predicted": (dims, rho[::-1]),
                           "r_moments": (("power",), [1.0, 2.0, 5.0, 14.0])},
                          coords={"gamma": g, "data_seed": np.arange(seeds), "power": [1, 2, 3, 4]},
                          attrs={"x_scale_used": 1 / np.sqrt(exp["d"]), "data_source": "synthetic test store"})
    if kind == "first_order":
        dims = ("activation", "task", "width", "alpha")
        shape = (len(exp["activations"]), len(exp["tasks"]), len(exp["widths"]), len(exp["alphas"]))
        return xr.Dataset({"rho_observed": ((*dims, "net"), rng.uniform(0, 1, (*shape, exp["observed_nets"]))),
                           "rho_predicted": (dims, rng.uniform(0, 1, shape))},
                          coords={"activation": exp["activations"], "task": exp["tasks"], "width": exp["widths"],
                                  "alpha": exp["alphas"], "net": np.arange(exp["observed_nets"])},
                          attrs={"data_source": "synthetic test store"})
    if kind == "tangent_penalties":
        from featlearn.pipeline.experiments.tangent_penalties import penalties_store

        return penalties_store(exp).assign_attrs(data_source="none (analytic)")
    if kind == "tangent_mnist":
        seeds, n = exp["sweep"]["seed"], exp["data"]["n_kernel"]
        y = np.sort(rng.normal(0, 0.6, n))
        vec, mat, run = ("seed", "task", "sample_i"), ("seed", "task", "sample_i", "sample_j"), (len(seeds), 2)
        kernel = np.outer(y, y)[None, None] + rng.normal(0, 0.5, (*run, n, n))
        return xr.Dataset({"y": (vec, np.broadcast_to(y, (*run, n))), "f_init": (vec, rng.normal(0, 0.1, (*run, n))),
                           "f_final": (vec, np.sign(y) + rng.normal(0, 0.01, (*run, n))),
                           "K0": (mat, kernel / 3), "K": (mat, kernel), "alignment": (("seed", "task"),
                                                                                      rng.uniform(0.1, 0.5, run))},
                          coords={"seed": seeds, "task": ["linear", "binary"], "sample_i": np.arange(n),
                                  "sample_j": np.arange(n)},
                          attrs={"data_source": "MNIST 2 vs 3 (synthetic test store)"})
    raise ValueError(f"no synthetic store for kind {kind} ({name})")


def synthetic_stores(shape: str, names: set[str]) -> dict[str, xr.Dataset]:
    """The named experiments' stores at ``shape`` ('paper' or 'paper-rehearsal'), with the provenance the figures
    read (the experiment's resolved config, the scale)."""
    stores = {}
    for name, exp in _experiments(shape).items():
        if name not in names:
            continue
        rng = np.random.default_rng(len(stores))
        kind = fx.kind_of(exp["kind"])
        if exp["kind"] in ("training", "network", "deep_rfm"):
            build = _deep_rfm_unit if exp["kind"] == "deep_rfm" else _trained_run
            parts = {uid: (unit, build(unit, rng)) for uid, unit in _units(name, exp, shape).items()}
            store = kind.combine(exp, parts)
        else:
            store = _single(name, exp, rng)
        stores[name] = store.assign_attrs(experiment_config=fc.spec_json(exp), scale=shape, git_commit="synthetic")
    return stores


@pytest.fixture(scope="module", params=SHAPES)
def shaped(request) -> tuple[str, dict[str, xr.Dataset]]:
    """Every store any figure reads, at one shape."""
    names = set(yaml.safe_load(CONFIG.read_text())["experiments"]) - {"tangent_mnist_author_code"}
    return request.param, synthetic_stores(request.param, names)


def test_stores_have_the_paper_shapes(shaped) -> None:
    """The synthetic stores are what the test claims: the paper's datasets, seeds, epochs and Gram layers."""
    shape, stores = shaped
    mlp, rfm = stores["real_mlp"], stores["deep_rfm_relu"]
    assert sorted(mlp.dataset.values) == ["cifar10", "cifar100", "gtsrb", "mnist", "stl10", "svhn"]

    def snapshots(dataset: str) -> int:
        return int(np.isfinite(mlp.uc_nfc.sel(dataset=dataset, seed=0, layer=1, convention="cosine")).sum())

    if shape == "paper":
        assert mlp.sizes["seed"] == 3 and mlp.sizes["step"] == 151 and rfm.sizes["gram_layer"] == 10
        assert snapshots("cifar10") == 151 and snapshots("mnist") == 51  # MNIST trains 50 epochs
        assert stores["gpt_shakespeare"].sizes["iteration"] == 5001 and stores["reversing"].sizes["gamma"] == 20
    else:  # one seed, two snapshots 4 steps apart: a sliver of an epoch, a different one per dataset size
        assert mlp.sizes["seed"] == 1 and snapshots("cifar10") == 2 and rfm.sizes["layer"] == 2
        assert float(mlp.epoch.where(mlp.step_of_epoch.sel(dataset="svhn", seed=0) == 4).max()) == 4 / 391


@pytest.mark.parametrize(("paper", "n"), FIGURES, ids=[f"{p}-fig{n}" for p, n in FIGURES])
def test_figure_has_no_overlapping_text(shaped, paper: str, n: int, monkeypatch, caplog) -> None:
    """Drawn as the render job draws it: finish() raises OverlapError on any overlap and logs any crowded ticks it
    had to thin, which a figure module must not need. The PDF is not written (the layout is checked before)."""
    import importlib

    shape, stores = shaped
    module = importlib.import_module(f"featlearn.figures.{paper}.fig{n}")
    saved = []
    monkeypatch.setattr(style, "_save", lambda fig, out: saved.append(fig))
    with caplog.at_level(logging.WARNING, logger="featlearn.figures.style"):
        module.render({name: stores[name] for name in module.EXPERIMENTS}, Path(f"{shape}/{paper}/fig{n}.pdf"))
    assert len(saved) == 1
    assert [r.getMessage() for r in caplog.records if "overlapping text" in r.getMessage()] == []
