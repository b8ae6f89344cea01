"""Kind ``reversing``: alignment Fig 3, observed ρ_2nd against the free-probability prediction on the
alignment-reversing data (App. F, G), in one unit over every (γ, data seed) dataset. The quantities are
``metrics.theory``'s; this module builds the store from them."""

from __future__ import annotations

from typing import Any

from featlearn.pipeline.experiments.single import check, combine, entries, units

# The kind's flags (featlearn.pipeline.experiments): what its units go through and where they compute.
KIND = {"trained": False, "device": False, "heavy": False, "repeats": {}}

__all__ = ["check", "combine", "datasets", "entries", "measure", "reversing_store", "units"]


def datasets(unit: dict) -> list[dict]:
    """One file per γ, holding every data seed's draw."""
    fixed = {k: unit[k] for k in ("n", "d", "eps1", "eps2", "x_scale", "data_seeds")}
    return [{"task": "alignment_reversing", "gamma": g, **fixed} for g in unit["gammas"]]


def reversing_store(cfg: dict, datasets: dict[tuple[float, int], dict]) -> Any:
    """Fig 3: observed ρ_2nd and free-probability ρ_pred on the alignment-reversing data.

    ``datasets[(gamma, data_seed)]`` holds float64 ``x`` (n, d) and ``y`` (n,). The observed value
    uses one quadratic net for every dataset (the first draw from ``net_seed``); the prediction
    uses R-moments averaged over the next ``r_seeds`` draws of the same generator, so the two
    are decoupled (App. J).
    """
    import math

    import torch
    import xarray as xr

    from featlearn.metrics.theory import (
        CONVENTION_ATTRS,
        F64,
        free_probability_prediction,
        quadratic_net_ptk,
        r_moments,
        sample_quadratic_net,
        second_derivative_correlation,
    )

    gammas, seeds = list(cfg["gammas"]), list(range(cfg["data_seeds"]))
    missing = [(g, s) for g in gammas for s in seeds if (g, s) not in datasets]
    if missing:
        raise KeyError(
            f"reversing_store: no dataset for (gamma, data_seed) {missing[:3]} ({len(missing)} missing)"
        )
    gen = torch.Generator().manual_seed(cfg["net_seed"])
    w, a = sample_quadratic_net(cfg["d"], cfg["k"], gen)
    moments = torch.stack(
        [r_moments(*sample_quadratic_net(cfg["d"], cfg["k"], gen)) for _ in range(cfg["r_seeds"])]
    )
    r_mean = moments.mean(dim=0)
    observed = torch.empty(len(gammas), len(seeds), dtype=F64)
    predicted = torch.empty_like(observed)
    for i, g in enumerate(gammas):
        for j, s in enumerate(seeds):
            x, y = datasets[(g, s)]["x"], datasets[(g, s)]["y"]
            observed[i, j] = second_derivative_correlation(x, y, quadratic_net_ptk(x, w, a))
            predicted[i, j] = free_probability_prediction(x, y, r_mean, cfg["den2"])
    dims = ("gamma", "data_seed")
    x_scale = cfg["x_scale"] if cfg["x_scale"] is not None else 1 / math.sqrt(cfg["d"])
    return xr.Dataset(
        {
            "rho_observed": (
                dims, observed.numpy(), {"long_name": "observed ρ_2nd (Eq. 7), one fixed net", "units": "1"}
            ),
            "rho_predicted": (
                dims,
                predicted.numpy(),
                {"long_name": f"free-probability prediction (Eqs. 20, 22, 28; Den2 {cfg['den2']})", "units": "1"},
            ),
            "r_moments": (
                ("power",),
                r_mean.numpy(),
                {"long_name": "τ(Rᵖ), R = Wᵀdiag(a²)W, mean over r_seeds nets", "units": "1"},
            ),
        },
        coords={
            "gamma": ("gamma", gammas, {"long_name": "γ of the alignment-reversing data (App. G)", "units": "1"}),
            "data_seed": ("data_seed", seeds, {"long_name": "seed of the data draw", "units": "1"}),
            "power": ("power", [1, 2, 3, 4], {"long_name": "moment order p of τ(Rᵖ)", "units": "1"}),
        },
        attrs={**CONVENTION_ATTRS, "x_scale_used": x_scale},
    )


def measure(unit: dict, data: list[dict], run: None, device: Any) -> Any:
    keyed = {(p["gamma"], s): {"x": d["x"][s], "y": d["y"][s]}
             for p, d in zip(datasets(unit), data) for s in range(p["data_seeds"])}
    return reversing_store(unit, keyed).assign_attrs(data_source="synthetic (generated)")
