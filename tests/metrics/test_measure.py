import copy

import numpy as np
import pytest
import torch

from featlearn.data.synthetic import make_dataset
from featlearn.metrics import nfa
from featlearn.metrics.jacobians import layer_jacobians
from featlearn.metrics.measure import DISPATCH, combine_runs, measure_run
from featlearn.metrics.theory import second_derivative_correlation
from featlearn.models import DISPATCH as ARCHS
from featlearn.models import build_model
from featlearn.pipeline.integrity import dataset_digest
from featlearn.pipeline.store import check_attributes, provenance, read_store, write_store
from featlearn.train import train

SPEC = {
    "experiment": "t", "sweep": {}, "seed": 0,
    "data": {"task": "chain_monomial", "r": 5, "d": 8, "n": 48, "n_test": 16, "alpha": None, "seed": 0},
    "model": {"widths": [32, 24], "activation": "relu", "init_scales": [1.0, 1.0], "init_convention": "torch_std",
              "readout_scale": 1.0},
    "train": {"optimizer": "gd", "lr": 1e-3, "steps": 1, "measure_every": 1},
    "measure": {"centered": True, "random_q_draws": 3},
}


def test_one_gd_step_centered_nfc_equals_second_derivative_correlation(tmp_path):
    """After one full-batch step W̄ = −η∇𝓛 exactly, so C-NFC = ρ(Xᵀ𝓛̇𝒦𝓛̇X, Xᵀ𝓛̇𝒦²𝓛̇X) up to O(η)."""
    data = make_dataset(SPEC["data"])
    record = train(SPEC, data, tmp_path / "r.pt", tmp_path / "r.ckpt")
    ds = measure_run(record, data, SPEC)
    model = build_model(SPEC, data).double()
    x = data["x"]
    with torch.no_grad():
        residual = model(x)[:, 0] - data["y"]  # 𝓛̇ ∝ f₀ − y for the MSE
    jac0 = layer_jacobians(model, x)[0].detach()
    expected = second_derivative_correlation(x, residual, nfa.ptk_matrix(jac0))
    measured = float(ds.c_nfc.sel(step=1, layer=1, convention="cosine"))
    assert measured == pytest.approx(expected, abs=2e-3)
    # and it is not trivially 1: the test could fail
    assert expected < 0.999


def test_measure_run_schema_and_nan_conventions(tmp_path):
    spec = copy.deepcopy(SPEC)
    spec["train"].update(steps=20, measure_every=10, lr=0.05)
    data = make_dataset(spec["data"])
    ds = measure_run(train(spec, data, tmp_path / "r.pt", tmp_path / "r.ckpt"), data, spec)
    assert list(ds.step.values) == [0, 1, 10, 20]
    assert ds.uc_nfc.dims == ("step", "layer", "convention")
    assert np.isnan(ds.c_nfc.sel(step=0)).all() and np.isfinite(ds.c_nfc.sel(step=20)).all()
    assert np.isfinite(ds.uc_nfc).all()
    assert ds.rho_nfm_corrupted.sizes["q_draw"] == 3
    check_attributes(ds)  # long_name everywhere, units on every data variable and numeric coordinate
    assert "epoch" not in ds.coords and ds.step.attrs["units"] == "steps"


def test_diverged_run_is_nan_after_divergence_and_flagged(tmp_path):
    spec = copy.deepcopy(SPEC)
    spec["train"].update(steps=30, measure_every=5, lr=1e4)
    data = make_dataset(spec["data"])
    ds = measure_run(train(spec, data, tmp_path / "r.pt", tmp_path / "r.ckpt"), data, spec)
    assert int(ds.diverged) == 1
    after = ds.step > float(ds.diverged_step)
    assert np.isnan(ds.uc_nfc.where(after, drop=True)).all()


def test_combine_runs_puts_sweep_points_on_named_dimensions(tmp_path):
    parts = {}
    for s0 in (1.0, 0.1):
        spec = copy.deepcopy(SPEC)
        spec["model"]["init_scales"][0] = s0
        spec["train"].update(steps=5, measure_every=5)
        data = make_dataset(spec["data"])
        ds = measure_run(train(spec, data, tmp_path / f"{s0}.pt", tmp_path / "c.ckpt"), data, spec)
        parts[str(s0)] = ({"alpha": None, "init_scale": s0}, ds)
    store = combine_runs(parts)
    assert store.uc_nfc.dims[:2] == ("spectrum", "init_scale")
    assert list(store.spectrum.values) == ["isotropic"]
    assert sorted(store.init_scale.values) == [0.1, 1.0]


def test_combine_runs_of_different_lengths_pads_only_time_axes(tmp_path):
    """A sweep whose runs train for different numbers of steps (MNIST's 50 epochs against 150) gets one
    step axis, NaN past a run's end, and stays one entry per sweep point (no spurious concatenation)."""
    parts = {}
    for steps in (5, 10):
        spec = copy.deepcopy(SPEC)
        spec["train"].update(steps=steps, measure_every=5)
        data = make_dataset(spec["data"])
        ds = measure_run(train(spec, data, tmp_path / f"{steps}.pt", tmp_path / "c.ckpt"), data, spec)
        parts[str(steps)] = ({"seed": steps}, ds)
    store = combine_runs(parts)
    assert store.uc_nfc.dims == ("seed", "step", "layer", "convention")
    assert list(store.step.values) == [0, 1, 5, 10]
    assert np.isnan(store.uc_nfc.sel(seed=5, step=10)).all()
    assert np.isfinite(store.uc_nfc.sel(seed=10, step=10)).all()
    assert store.loss.dims == ("seed", "iteration") and store.sizes["iteration"] == 11
    check_attributes(store)


def test_combine_runs_aligns_epoch_counted_runs_on_epoch(tmp_path):
    """Runs counted in epochs on datasets of different sizes (48 and 32 points in batches of 16: 3 and 2 steps per
    epoch) and lengths (2 and 3 epochs after a warm-up epoch): one row per epoch, whatever step it is in each run;
    NaN past a run's end; every run's own steps in step_of_epoch."""
    parts, runs = {}, {}
    for n, epochs in ((48, 2), (32, 3)):
        spec = copy.deepcopy(SPEC)
        spec["data"].update(n=n)
        spec["train"] = {"optimizer": "sgd", "lr": 0.01, "batch_size": 16, "epochs": epochs, "measure_every": 1,
                         "warmup": {"epochs": 1, "lr": 1e-4}}
        data = make_dataset(spec["data"])
        runs[n] = measure_run(train(spec, data, tmp_path / f"{n}.pt", tmp_path / "c.ckpt"), data, spec)
        parts[str(n)] = ({"seed": n}, runs[n])
    assert "step" not in runs[48].coords and list(runs[48].epoch.values) == [0, 1, 2]
    assert list(runs[48].step_of_epoch.values) == [3, 6, 9] and list(runs[32].step_of_epoch.values) == [2, 4, 6, 8]
    store = combine_runs(parts)
    assert store.uc_nfc.dims == ("seed", "step", "layer", "convention") and "step" not in store.coords
    assert list(store.epoch.values) == [0, 1, 2, 3] and store.epoch.attrs["units"] == "epochs"
    np.testing.assert_array_equal(store.step_of_epoch.sel(seed=48), [3, 6, 9, np.nan])
    np.testing.assert_array_equal(store.step_of_epoch.sel(seed=32), [2, 4, 6, 8])
    for n, run in runs.items():  # each run's rows land on its epochs, unchanged
        rows = store.c_nfc.sel(seed=n).isel(step=slice(0, run.sizes["step"]))
        np.testing.assert_array_equal(rows, run.c_nfc)
    assert np.isnan(store.uc_nfc.sel(seed=48).isel(step=-1)).all()
    check_attributes(store)


def test_two_identical_runs_give_bitwise_identical_stores_on_cpu(tmp_path):
    """Train, measure and write twice from scratch: every value of the two stores is the same bit for bit (the
    digest hashes the raw bytes); only the creation time differs among the attributes."""
    spec = copy.deepcopy(SPEC)
    spec["train"].update(optimizer="sgd", batch_size=8, lr=0.05, steps=40, measure_every=10)
    stores = []
    for name in ("a", "b"):
        data = make_dataset(spec["data"])
        record = train(spec, data, tmp_path / f"{name}.pt", tmp_path / f"{name}.ckpt")
        path = tmp_path / f"{name}.nc"
        write_store(measure_run(record, data, spec), path, provenance("{}", "smoke", "measure_run", "synthetic", "{}"))
        stores.append(path)
    a, b = (read_store(p) for p in stores)
    assert dataset_digest(a) == dataset_digest(b)
    assert a.drop_attrs().identical(b.drop_attrs())
    assert {k: v for k, v in a.attrs.items() if k != "created"} == {k: v for k, v in b.attrs.items() if k != "created"}


def test_every_architecture_is_measured_by_a_family_of_the_family_table():
    """``models.DISPATCH`` (arch -> family) and ``measure.DISPATCH`` (family -> module) name the same families."""
    assert {arch["family"] for arch in ARCHS.values()} == set(DISPATCH)
