"""Kind ``first_order``: alignment Fig 7, observed ρ_2nd at layer 0 against the first-order prediction, in one unit
over every (task, α) dataset. The quantities are ``metrics.theory``'s; this module builds the store from them."""

from __future__ import annotations

from typing import Any

from featlearn.pipeline.experiments.single import check, combine, entries, units

# The kind's flags (featlearn.pipeline.experiments): what its units go through and where they compute.
KIND = {"trained": False, "device": False, "heavy": False, "repeats": {}}

__all__ = ["check", "combine", "datasets", "entries", "first_order_store", "measure", "units"]


def datasets(unit: dict) -> list[dict]:
    return [{"task": t, "n": unit["n"], "n_test": 0, "d": unit["d"], "alpha": a, "seed": unit["seed"], "r": unit["r"]}
            for t in unit["tasks"] for a in unit["alphas"]]


def first_order_store(cfg: dict, datasets: dict[tuple[str, float], dict]) -> Any:
    """Fig 7: observed ρ_2nd vs first-order prediction at layer 0 of 2-hidden-layer MLPs.

    ``datasets[(task, alpha)]`` holds float64 ``x`` (n, d) and ``y`` (n,). For each (activation,
    width) one generator seeded with ``seed`` draws ``mc_inits`` nets for E[𝒦], E[𝒦²] and then
    ``observed_nets`` further nets; every net is reused on all datasets, and datasets sharing
    the same inputs (tasks at one α) share their PTKs.
    """
    import torch
    import xarray as xr

    from featlearn.metrics.theory import (
        CONVENTION_ATTRS,
        F64,
        draw_layer0_ptks,
        first_order_prediction,
        second_derivative_correlation,
    )

    acts, tasks, widths, alphas = cfg["activations"], cfg["tasks"], cfg["widths"], cfg["alphas"]
    missing = [(t, al) for t in tasks for al in alphas if (t, al) not in datasets]
    if missing:
        raise KeyError(
            f"first_order_store: no dataset for (task, alpha) {missing[:3]} ({len(missing)} missing)"
        )
    inputs: list[torch.Tensor] = []
    input_of: dict[tuple[str, float], int] = {}
    for key in [(t, al) for t in tasks for al in alphas]:
        x = datasets[key]["x"].to(F64)
        input_of[key] = next((i for i, seen in enumerate(inputs) if torch.equal(seen, x)), len(inputs))
        if input_of[key] == len(inputs):
            inputs.append(x)
    xs = torch.stack(inputs)
    mc, n_obs = cfg["mc_inits"], cfg["observed_nets"]
    observed = torch.empty(len(acts), len(tasks), len(widths), len(alphas), n_obs, dtype=F64)
    predicted = torch.empty(len(acts), len(tasks), len(widths), len(alphas), dtype=F64)
    for ia, act in enumerate(acts):
        for iw, width in enumerate(widths):
            ptks = draw_layer0_ptks(xs, width, act, mc + n_obs, torch.Generator().manual_seed(cfg["seed"]))
            for it, task in enumerate(tasks):
                for il, alpha in enumerate(alphas):
                    g = input_of[(task, alpha)]
                    x, y = datasets[(task, alpha)]["x"], datasets[(task, alpha)]["y"]
                    predicted[ia, it, iw, il] = first_order_prediction(x, y, ptks[:mc, g])
                    for j in range(n_obs):
                        observed[ia, it, iw, il, j] = second_derivative_correlation(x, y, ptks[mc + j, g])
    dims = ("activation", "task", "width", "alpha")
    return xr.Dataset(
        {
            "rho_observed": (
                (*dims, "net"),
                observed.numpy(),
                {"long_name": "observed ρ_2nd (Eq. 7) at layer 0, one value per net", "units": "1"},
            ),
            "rho_predicted": (
                dims,
                predicted.numpy(),
                {"long_name": f"first-order prediction ρ(XᵀYE[𝒦]YX, XᵀYE[𝒦²]YX), {mc} Monte-Carlo nets",
                 "units": "1"},
            ),
        },
        coords={
            "activation": ("activation", acts, {"long_name": "activation of the hidden layers"}),
            "task": ("task", tasks, {"long_name": "target function of the data"}),
            "width": ("width", widths, {"long_name": "hidden-layer width", "units": "1"}),
            "alpha": ("alpha", alphas, {"long_name": "input spectrum decay α: λ_k ∝ 1/(1+k^α)", "units": "1"}),
            "net": ("net", list(range(n_obs)), {"long_name": "observed net (independent init draw)", "units": "1"}),
        },
        attrs={**CONVENTION_ATTRS, "init": "2 hidden layers, PyTorch default (scale 1), float64"},
    )


def measure(unit: dict, data: list[dict], run: None, device: Any) -> Any:
    keyed = {(p["task"], p["alpha"]): d for p, d in zip(datasets(unit), data)}
    return first_order_store(unit, keyed).assign_attrs(data_source="synthetic (generated)")
