"""Kind ``tangent_penalties``: the tangent paper's effective penalties (Fig 2), computed in one unit; no data. The
penalties and their closed forms are ``metrics.tangent``'s; this module builds the store from them."""

from __future__ import annotations

from typing import Any

from featlearn.pipeline.experiments.single import check, combine, datasets, entries, units

# The kind's flags (featlearn.pipeline.experiments): what its units go through and where they compute.
KIND = {"trained": False, "device": False, "heavy": False, "repeats": {}}

__all__ = ["check", "combine", "datasets", "entries", "measure", "penalties_store", "units"]


def penalties_store(cfg: dict) -> Any:
    """Fig 2: ω̃_k(v) on the ``v`` grid and ω_k(s) on the ``s`` grid for k = 1, 2, 3 (numerical, Eqs. 11–12),
    with the closed forms of ω̃1, ω̃2 and ω3 alongside (NaN where none exists)."""
    import numpy as np
    import xarray as xr

    from featlearn.metrics.tangent import (
        effective_abs_closed,
        effective_penalty,
        effective_quadratic_closed,
        joint_penalty,
        joint_quadratic_abs_closed,
        omega_abs,
        omega_quadratic,
    )

    penalties = {  # k -> (label, ω_k)
        "w1": ("ω₁(s) = (s−1)²", omega_quadratic),
        "w2": ("ω₂(s) = |s−1|", omega_abs),
        "w3": ("ω₃ = ω₁⊕ω₂", lambda s: joint_penalty(omega_quadratic, omega_abs, s)),
    }
    closed_effective = {"w1": effective_quadratic_closed, "w2": effective_abs_closed}
    v = np.linspace(cfg["v"]["start"], cfg["v"]["stop"], cfg["v"]["num"])
    s = np.linspace(cfg["s"]["start"], cfg["s"]["stop"], cfg["s"]["num"])
    names = list(penalties)
    tilde = np.stack([effective_penalty(penalties[k][1], v) for k in names])
    closed = np.stack([closed_effective[k](v) if k in closed_effective else np.full_like(v, np.nan) for k in names])
    omega = np.stack([penalties[k][1](s) for k in names])
    omega_closed = np.stack([omega[0], omega[1], joint_quadratic_abs_closed(s)])
    return xr.Dataset(
        {
            "omega_tilde": (("penalty", "v"), tilde, {"long_name": "effective penalty ω̃(v) = min_{z≥1} ω(z) + v²/z² "
                                                                   "(Eq. 12), grid + golden section", "units": "1"}),
            "omega_tilde_closed": (("penalty", "v"), closed, {"long_name": "closed form of ω̃ (NaN: none)",
                                                              "units": "1"}),
            "omega": (("penalty", "s"), omega, {"long_name": "penalty ω(s); ω₃ = ω₁⊕ω₂ numerically (Eq. 11)",
                                                "units": "1"}),
            "omega_closed": (("penalty", "s"), omega_closed, {"long_name": "closed form of ω(s)", "units": "1"}),
        },
        coords={
            "penalty": ("penalty", names, {"long_name": "penalty ω_k"}),
            "v": ("v", v, {"long_name": "v", "units": "1"}),
            "s": ("s", s, {"long_name": "s ≥ 1", "units": "1"}),
            "penalty_label": ("penalty", [penalties[k][0] for k in names], {"long_name": "penalty ω_k, written out"}),
        },
        attrs={"data_source": "no data (penalty functions)"},
    )


def measure(unit: dict, data: list[dict], run: None, device: Any) -> Any:
    return penalties_store(unit).assign_attrs(data_source="none (analytic)")
