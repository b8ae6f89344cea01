"""Kind ``reversing`` (experiments/reversing.py): the Fig 3 store from metrics/theory.py's quantities."""

from __future__ import annotations

import pytest
import torch

from featlearn.data.synthetic import alignment_reversing
from featlearn.metrics.theory import quadratic_net_ptk, sample_quadratic_net, second_derivative_correlation
from featlearn.pipeline.experiments.reversing import reversing_store


def test_reversing_store_uses_one_fixed_net():
    cfg = {
        "n": 16,
        "d": 16,
        "k": 16,
        "gammas": [0.25, 1.0],
        "data_seeds": 2,
        "r_seeds": 3,
        "net_seed": 5,
        "den2": "corrected",
        "eps1": 0.5,
        "eps2": 0.01,
        "x_scale": None,
    }
    datasets = {(g, s): alignment_reversing(16, 16, g, s) for g in cfg["gammas"] for s in range(2)}
    store = reversing_store(cfg, datasets)
    assert store["rho_observed"].dims == ("gamma", "data_seed")
    assert store["rho_predicted"].attrs["long_name"] and store["rho_observed"].attrs["long_name"]
    assert store.attrs["x_scale_used"] == pytest.approx(0.25)
    w, a = sample_quadratic_net(16, 16, torch.Generator().manual_seed(5))
    x, y = datasets[(0.25, 1)]["x"], datasets[(0.25, 1)]["y"]
    expected = second_derivative_correlation(x, y, quadratic_net_ptk(x, w, a))
    assert float(store["rho_observed"].sel(gamma=0.25, data_seed=1)) == pytest.approx(expected, rel=1e-12)
    with pytest.raises(KeyError, match="gamma"):
        reversing_store(cfg, {k: v for k, v in datasets.items() if k != (1.0, 0)})


def test_one_file_per_gamma_holds_every_seed_and_measures_like_separate_draws():
    from featlearn.data.synthetic import make_dataset
    from featlearn.pipeline.experiments import reversing

    unit = {"n": 16, "d": 16, "k": 16, "gammas": [0.25, 1.0], "data_seeds": 3, "r_seeds": 2, "net_seed": 0,
            "den2": "corrected", "eps1": 0.5, "eps2": 0.01, "x_scale": None}
    params = reversing.datasets(unit)
    assert len(params) == 2
    files = [make_dataset(p) for p in params]
    assert files[0]["x"].shape == (3, 16, 16)
    assert torch.equal(files[0]["x"][2], alignment_reversing(16, 16, 0.25, 2)["x"])
    store = reversing.measure(unit, files, None, "cpu")
    separate = reversing_store(unit, {(g, s): alignment_reversing(16, 16, g, s) for g in unit["gammas"]
                                      for s in range(3)})
    assert store["rho_observed"].equals(separate["rho_observed"])
