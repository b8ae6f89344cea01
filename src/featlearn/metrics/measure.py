"""Per-run metric extraction: snapshots in, a labelled xarray Dataset out (spec §1.5, §1.6, §6).

At every snapshot one batched backward pass gives J_t for all layers; J_0 is cached, so the
centered quantities cost no extra pass. Steps the run never reached (it diverged) are NaN.
"""

from __future__ import annotations

import numpy as np
import torch
import xarray as xr

from featlearn.data.synthetic import haar_orthogonal
from featlearn.metrics import nfa
from featlearn.metrics.jacobians import layer_jacobians
from featlearn.models.mlp import MLP
from featlearn.train import build_model, measurement_steps

LONG_NAMES = {
    "uc_nfc": "uncentered NFC ρ(WᵀW, WᵀKW)",
    "c_nfc": "centered NFC ρ(W̄ᵀW̄, W̄ᵀKW̄)",
    "dc_nfc": "double-centered NFC ρ(W̄ᵀW̄, W̄ᵀK̄W̄)",
    "ptkc_nfc": "PTK-centered NFC ρ(W₀ᵀW₀, W₀ᵀK̄W₀)",
    "ratio_c_uc": "R_C = ⟨W̄ᵀW̄, W̄ᵀKW̄⟩ / ⟨WᵀW, WᵀKW⟩",
    "ratio_dc_c": "R_DC = ⟨W̄ᵀW̄, W̄ᵀK̄W̄⟩ / ⟨W̄ᵀW̄, W̄ᵀKW̄⟩",
    "dw_rel": "relative weight change ‖W − W₀‖_F / ‖W‖_F",
    "k_dispersion": "std(eig K) / mean(eig K)",
    "train_loss": "training MSE at the snapshot (full batch)",
    "test_loss": "test MSE at the snapshot",
    "loss": "training MSE of every optimizer step",
    "rho_nfm_egop": "ρ(F⁽⁰⁾, EGOP)",
    "rho_agop_egop": "ρ(Ḡ⁽⁰⁾, EGOP)",
    "nfm": "first-layer NFM F⁽⁰⁾ = W⁽⁰⁾ᵀW⁽⁰⁾ at the last finite snapshot",
    "agop": "first-layer AGOP Ḡ⁽⁰⁾ = W⁽⁰⁾ᵀK⁽⁰⁾W⁽⁰⁾ at the last finite snapshot",
    "egop": "EGOP of the target, analytic, divided by Var(y)",
    "corrupted_agop": "W⁽⁰⁾ᵀQW⁽⁰⁾, Q = O diag(eig K⁽⁰⁾) Oᵀ with O Haar (draw 0)",
    "rho_nfm_corrupted": "ρ(F⁽⁰⁾, W⁽⁰⁾ᵀQW⁽⁰⁾) for each Q draw",
    "speeds": "adaptive SLO speed C of each weight matrix at each step",
    "diverged": "1 if the run's loss became non-finite",
    "diverged_step": "step at which the loss became non-finite (NaN if never)",
}


def _model_at(spec: dict, weights: list[torch.Tensor]) -> MLP:
    model = build_model(spec)
    with torch.no_grad():
        for layer, w in zip(model.layers, weights):
            layer.weight.copy_(w)
    return model


def _mse(model: MLP, x: torch.Tensor, y: torch.Tensor) -> float:
    if len(x) == 0:
        return float("nan")
    with torch.no_grad():
        return float(torch.nn.functional.mse_loss(model(x)[:, 0], y))


def measure_run(record: dict, data: dict, spec: dict) -> xr.Dataset:
    """Every per-step, per-layer NFA quantity of one run, both correlation conventions."""
    tr, centered = spec["train"], spec["measure"].get("centered", False)
    steps = measurement_steps(tr["steps"], tr["measure_every"])
    layers = len(spec["model"]["widths"])
    x, y = data["x"].float(), data["y"].float()
    x_test, y_test = data["x_test"].float(), data["y_test"].float()
    snaps = record["snapshots"]
    conv = list(nfa.CONVENTIONS)

    def empty(*shape: int) -> np.ndarray:
        return np.full(shape, np.nan)

    per_layer = {k: empty(len(steps), layers, len(conv)) for k in ("uc_nfc", "c_nfc", "dc_nfc", "ptkc_nfc")}
    scalars = {k: empty(len(steps), layers) for k in ("ratio_c_uc", "ratio_dc_c", "dw_rel", "k_dispersion")}
    losses = {k: empty(len(steps)) for k in ("train_loss", "test_loss", "rho_nfm_egop", "rho_agop_egop")}
    egop = data.get("egop")
    w0, j0, last = snaps[0], None, None
    for i, step in enumerate(steps):
        if step not in snaps:
            continue
        model = _model_at(spec, snaps[step])
        jacs = [j.detach() for j in layer_jacobians(model, x)]
        j0 = jacs if step == 0 else j0
        last = (step, snaps[step], jacs)
        losses["train_loss"][i] = _mse(model, x, y)
        losses["test_loss"][i] = _mse(model, x_test, y_test)
        for ell in range(layers):
            w, w_init = snaps[step][ell].double(), w0[ell].double()
            k = nfa.ptk_feature_covariance(jacs[ell])
            k_bar = nfa.ptk_feature_covariance(jacs[ell] - j0[ell]) if centered else None
            pairs = nfa.nfc_pairs(w, w_init, k, k_bar)
            for name, (a, b) in pairs.items():
                if name == "uc_nfc" or step > 0:  # centered quantities are undefined at init
                    per_layer[name][i, ell] = [nfa.correlation(a, b, c) for c in conv]
            scalars["ratio_c_uc"][i, ell] = nfa.ratio_c_uc(pairs)
            scalars["dw_rel"][i, ell] = nfa.relative_weight_change(w, w_init)
            scalars["k_dispersion"][i, ell] = nfa.eigen_dispersion(k)
            if centered:
                scalars["ratio_dc_c"][i, ell] = nfa.ratio_dc_c(pairs)
            if ell == 0 and egop is not None:
                f, g = pairs["uc_nfc"]
                losses["rho_nfm_egop"][i] = nfa.correlation(f, egop)
                losses["rho_agop_egop"][i] = nfa.correlation(g, egop)

    coords = {"step": steps, "layer": np.arange(1, layers + 1), "convention": conv}
    ds = xr.Dataset(coords=coords)
    for name, values in per_layer.items():
        if name in ("dc_nfc", "ptkc_nfc") and not centered:
            continue
        ds[name] = (("step", "layer", "convention"), values)
    for name, values in scalars.items():
        if name != "ratio_dc_c" or centered:
            ds[name] = (("step", "layer"), values)
    for name, values in losses.items():
        if not name.startswith("rho_") or egop is not None:
            ds[name] = (("step",), values)
    ds["loss"] = (("iteration",), record["losses"].numpy())
    if len(record["speeds"]):
        ds["speeds"] = (("iteration_speeds", "matrix"), record["speeds"].numpy())
    ds["diverged"] = int(record["status"] == "diverged")
    ds["diverged_step"] = float("nan") if record["diverged_step"] is None else float(record["diverged_step"])
    ds = ds.merge(_final_matrices(last, egop, spec))
    for name in ds.data_vars:
        ds[name].attrs["long_name"] = LONG_NAMES[name]
    for name in per_layer:
        if name in ds:
            ds[name].attrs["convention"] = "cosine = the paper's ρ; pearson = the authors' Fig 2 code (mat_cov)"
    ds.attrs["k_normalization"] = "K = (1/n) Σ_α Σ_j J[α,j]ᵀ J[α,j]; Ḡ = WᵀKW"
    ds.attrs["final_step"] = last[0]
    return ds


def _final_matrices(last: tuple, egop: torch.Tensor | None, spec: dict) -> xr.Dataset:
    """First-layer F, Ḡ (and EGOP, corrupted AGOPs) at the last finite snapshot (Figs 1, 4, 11)."""
    _, weights, jacs = last
    w = weights[0].double()
    k = nfa.ptk_feature_covariance(jacs[0])
    f, g = nfa.nfm(w), nfa.agop(w, k)
    dims = ("input_i", "input_j")
    ds = xr.Dataset({"nfm": (dims, f.numpy()), "agop": (dims, g.numpy())})
    if egop is not None:
        ds["egop"] = (dims, egop.numpy())
    draws = spec["measure"].get("random_q_draws", 0)
    if draws:
        eig = torch.linalg.eigvalsh(k)
        gen = torch.Generator().manual_seed(10_000 + spec["seed"])
        rhos, first = [], None
        for _ in range(draws):
            o = haar_orthogonal(len(k), gen)
            corrupted = nfa.agop(w, (o * eig) @ o.T)
            first = corrupted if first is None else first
            rhos.append(nfa.correlation(f, corrupted))
        ds["corrupted_agop"] = (dims, first.numpy())
        ds["rho_nfm_corrupted"] = (("q_draw",), np.array(rhos))
    return ds


def combine_runs(runs: dict[str, tuple[dict, xr.Dataset]]) -> xr.Dataset:
    """One store for a sweep: every run's dataset placed on the sweep's named dimensions.

    ``runs`` maps run id to (sweep point, dataset). ``alpha`` becomes a ``spectrum`` label so
    that the isotropic case (alpha = None) is a selectable coordinate.
    """
    parts = []
    for point, ds in runs.values():
        coords = {("spectrum" if k == "alpha" else k): [spectrum_label(v) if k == "alpha" else v]
                  for k, v in point.items()}
        parts.append(ds.expand_dims(coords))
    return xr.combine_by_coords(parts, combine_attrs="drop_conflicts")


def spectrum_label(alpha: float | None) -> str:
    """'isotropic' for Σ = I, else the eigenvalue decay written out: λ_k ∝ 1/(1+k^α)."""
    if alpha is None:
        return "isotropic"
    return "1/(1+k)" if alpha == 1 else f"1/(1+k^{alpha:g})"
