"""Kind ``first_order`` (experiments/first_order.py): the Fig 7 store from metrics/theory.py's quantities."""

from __future__ import annotations

import pytest
import torch

from featlearn.data.synthetic import regression_task
from featlearn.metrics.theory import draw_layer0_ptks, first_order_prediction, second_derivative_correlation
from featlearn.pipeline.experiments.first_order import first_order_store


def test_first_order_store_shares_nets_across_datasets():
    cfg = {
        "n": 12,
        "d": 8,
        "widths": [8, 16],
        "alphas": [0.0, 2.0],
        "activations": ["quadratic", "relu"],
        "tasks": ["chain_monomial", "high_rank_quadratic"],
        "r": 3,
        "mc_inits": 3,
        "observed_nets": 2,
        "seed": 9,
    }
    datasets = {
        (t, al): regression_task(t, 12, 0, 8, al, seed=1, r=3) for t in cfg["tasks"] for al in cfg["alphas"]
    }
    store = first_order_store(cfg, datasets)
    assert store["rho_observed"].dims == ("activation", "task", "width", "alpha", "net")
    assert store["rho_predicted"].dims == ("activation", "task", "width", "alpha")
    # The same value as drawing the nets for this one dataset alone: reuse changes nothing.
    x, y = datasets[("high_rank_quadratic", 2.0)]["x"], datasets[("high_rank_quadratic", 2.0)]["y"]
    ptks = draw_layer0_ptks(x[None], 16, "relu", 5, torch.Generator().manual_seed(9))[:, 0]
    sel = {"activation": "relu", "task": "high_rank_quadratic", "width": 16, "alpha": 2.0}
    assert float(store["rho_predicted"].sel(sel)) == pytest.approx(
        first_order_prediction(x, y, ptks[:3]), rel=1e-10
    )
    observed = second_derivative_correlation(x, y, ptks[4])
    assert float(store["rho_observed"].sel(sel).sel(net=1)) == pytest.approx(observed, rel=1e-10)
