import numpy as np
import torch

from featlearn.data.prepare import prepare
from featlearn.pipeline.experiments import deep_rfm as kind
from featlearn.pipeline.experiments.deep_rfm import data_block


def _cfg(**data):
    return {
        "kind": "deep_rfm", "seed": 0,
        "data": {"source": "offline", "datasets": ["mnist", "cifar10"], "n": 30, **data},
        "model": {"activation": "relu", "width": 32, "kernel": {"cifar10": "laplace", "mnist": "gaussian",
                                                                 "svhn": "laplace"},
                  "bandwidth": 2.0, "ridge": 0.0, "gamma": 0.05, "normalize_agop": True, "depth": 3},
        "gram": {"layers": [1, 3], "per_class": 2},
    }


def _data(cfg, name, tmp_path):
    return prepare(data_block(cfg, name), tmp_path)


def test_inputs_are_balanced_standardized_and_class_sorted(tmp_path):
    data = _data(_cfg(n=40), "cifar10", tmp_path)
    x, labels = data["x_train"], data["labels_train"]
    assert x.shape == (40, 3072) and "x_test" not in data
    assert torch.equal(labels, torch.arange(10).repeat_interleave(4))
    kept = x.std(dim=0, correction=0) > 0
    torch.testing.assert_close(x.mean(dim=0), torch.zeros(3072), atol=1e-5, rtol=0)
    torch.testing.assert_close(x.std(dim=0, correction=0)[kept], torch.ones(int(kept.sum())))
    assert torch.equal(data["y_train"].argmax(1), labels) and set(data["y_train"].unique().tolist()) == {-1.0, 1.0}
    assert "stand-in" in data["source"]


def test_store_stacks_datasets_and_names_sources(tmp_path):
    cfg = _cfg()
    units = kind.units("rfm", cfg)
    assert list(units) == cfg["data"]["datasets"] and kind.datasets(units["mnist"]) == [data_block(cfg, "mnist")]
    parts = {name: (unit, kind.measure(unit, [_data(cfg, name, tmp_path)], None, "cpu"))
             for name, unit in units.items()}
    ds = kind.combine(cfg, parts)
    assert list(ds.dataset.values) == ["mnist", "cifar10"]
    assert ds.nc1.shape == (2, 3, 3) and np.isfinite(ds.nc1.values).all()
    assert ds.gram.shape == (2, 2, 20, 20)
    assert ds.attrs["kernel_mnist"] == "gaussian" and ds.attrs["kernel_cifar10"] == "laplace"
    assert "MNIST" in ds.attrs["data_source"] and "CIFAR-10" in ds.attrs["data_source"]
    again = kind.measure(units["mnist"], [_data(cfg, "mnist", tmp_path)], None, "cpu")
    assert again.drop_vars("seconds").identical(parts["mnist"][1].drop_vars("seconds"))  # seeded
