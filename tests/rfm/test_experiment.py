import numpy as np
import pytest
import torch

from featlearn.rfm.experiment import dataset_inputs, deep_rfm_store


def _cfg(**data):
    return {
        "seed": 0,
        "data": {"source": "offline", "datasets": ["mnist", "cifar10"], "n": 30, **data},
        "model": {"activation": "relu", "width": 32, "kernel": {"cifar10": "laplace", "mnist": "gaussian",
                                                                 "svhn": "laplace"},
                  "bandwidth": 2.0, "ridge": 0.0, "gamma": 0.05, "normalize_agop": True, "depth": 3},
        "gram": {"layers": [1, 3], "per_class": 2},
    }


def test_inputs_are_balanced_standardized_and_class_sorted():
    x, labels, source = dataset_inputs("cifar10", 40, seed=0)
    assert x.shape == (40, 3072) and x.dtype == torch.float64
    assert torch.equal(labels, torch.arange(10).repeat_interleave(4))
    kept = x.std(dim=0, correction=0) > 0
    torch.testing.assert_close(x.mean(dim=0), torch.zeros(3072, dtype=torch.float64))
    torch.testing.assert_close(x.std(dim=0, correction=0)[kept], torch.ones(int(kept.sum()), dtype=torch.float64))
    assert "stand-in" in source


def test_store_stacks_datasets_and_names_sources():
    ds = deep_rfm_store(_cfg())
    assert list(ds.dataset.values) == ["mnist", "cifar10"]
    assert ds.nc1.shape == (2, 3, 3) and np.isfinite(ds.nc1.values).all()
    assert ds.gram.shape == (2, 2, 20, 20)
    assert ds.attrs["kernel_mnist"] == "gaussian" and ds.attrs["kernel_cifar10"] == "laplace"
    assert "MNIST" in ds.attrs["data_source"] and "CIFAR-10" in ds.attrs["data_source"]
    assert deep_rfm_store(_cfg()).drop_vars("seconds").identical(ds.drop_vars("seconds"))  # seeded


def test_real_data_is_refused_until_wired():
    with pytest.raises(NotImplementedError, match="not wired"):
        deep_rfm_store(_cfg(source="real"))
