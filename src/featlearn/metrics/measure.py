"""Per-run metric extraction: snapshots in, a labelled xarray Dataset out (spec §1.5, §1.6, §6).

At every snapshot the MLP's K_ℓ of all layers come from one pass over blocks of points, one backward pass per output
(``nfa.mlp_feature_covariances``: no whole Jacobian is held); the centered K̄ recomputes J_0 per block. Its memory is
checked before the first snapshot. Steps the run never reached (it diverged) are NaN.
Time is the dimension ``step`` labelled by ``step`` or, for runs counted in epochs, by ``epoch``
with ``step_of_epoch`` beside it (``featlearn.store``); ``combine_runs`` aligns a sweep's runs
on that label.
Everything runs on the job's ``device``: the models, the inputs, the Jacobians and the float64
algebra (K, NFC, NC); only finished numbers come back to the CPU.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch
import xarray as xr
from torch import nn

from featlearn import usage
from featlearn.data.synthetic import haar_orthogonal
from featlearn.memory import check_fits
from featlearn.metrics import nfa
from featlearn.models import build_model
from featlearn.store import TIME_ATTRS, epoch_axis, step_axis
from featlearn.train import evaluate, token_batch, training_tensors

log = logging.getLogger(__name__)

# measure.family -> the module its measurement imports inside ``measure_*_run`` (``featlearn.deps`` reads this table:
# a job's code inputs include its family's module only, so a conv edit never reruns an MLP measurement)
DISPATCH = {
    "nfa": "featlearn.metrics.jacobians",
    "conv_nfa": "featlearn.metrics.conv_nfa",
    "attention_nfa": "featlearn.metrics.attention_nfa",
    "collapse": "featlearn.metrics.collapse_measure",
}

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
    "rho_nfm_egop": "ρ(F⁽⁰⁾, EGOP)",
    "rho_agop_egop": "ρ(Ḡ⁽⁰⁾, EGOP)",
    "nfm": "first-layer NFM F⁽⁰⁾ = W⁽⁰⁾ᵀW⁽⁰⁾ at the last finite snapshot",
    "agop": "first-layer AGOP Ḡ⁽⁰⁾ = W⁽⁰⁾ᵀK⁽⁰⁾W⁽⁰⁾ at the last finite snapshot",
    "egop": "EGOP of the target, analytic, divided by Var(y)",
    "corrupted_agop": "W⁽⁰⁾ᵀQW⁽⁰⁾, Q = O diag(eig K⁽⁰⁾) Oᵀ with O Haar (draw 0)",
    "rho_nfm_corrupted": "ρ(F⁽⁰⁾, W⁽⁰⁾ᵀQW⁽⁰⁾) for each Q draw",
    "val_loss": "validation cross-entropy on fixed windows at the snapshot",
    "nfm_diag": "diag F⁽⁰⁾ at the end of training, averaged over colour channels",
    "agop_diag": "diag Ḡ⁽⁰⁾ at the end of training, averaged over colour channels",
    "corrupted_diag": "diag W⁽⁰⁾ᵀQW⁽⁰⁾ (Q draw 0), averaged over colour channels",
    "rho_diag_agop": "Pearson ρ(diag F⁽⁰⁾, diag Ḡ⁽⁰⁾)",
    "rho_diag_corrupted": "Pearson ρ(diag F⁽⁰⁾, diag W⁽⁰⁾ᵀQW⁽⁰⁾) for each Q draw",
    "speeds": "adaptive SLO speed C of each weight matrix at each step",
    "diverged": "1 if the run's loss became non-finite",
    "diverged_step": "step at which the loss became non-finite (NaN if never)",
}
# CF units: every quantity is a dimensionless correlation, ratio or matrix of dimensionless inputs and targets
# (MSE of standardized or ±1/one-hot targets), except the cross-entropy and the step of a divergence.
UNITS = {name: "1" for name in LONG_NAMES} | {"val_loss": "nats", "diverged_step": "steps"}
# the loss of every optimizer step, by the run's train.loss
LOSS_ATTRS = {"mse": {"long_name": "training MSE of every optimizer step", "units": "1"},
              "cross_entropy": {"long_name": "training cross-entropy of every optimizer step", "units": "nats"}}
COORD_ATTRS = {
    "layer": {"long_name": "layer ℓ counted from the input (1 = the first weight matrix)", "units": "1"},
    "block": {"long_name": "attention block (1 = the first)", "units": "1"},
    "proj": {"long_name": "attention projection W_q, W_k, W_v"},
    "convention": {"long_name": "correlation convention: cosine = the paper's ρ, pearson = the authors' Fig 2 code"},
    # sweep dimensions (config.yaml's sweep keys; alpha becomes spectrum)
    "seed": {"long_name": "seed of the run", "units": "1"},
    "init_scale": {"long_name": "first-layer init scale s₀", "units": "1"},
    "optimizer": {"long_name": "optimizer"},
    "spectrum": {"long_name": "input covariance spectrum λ_k"},
    "dataset": {"long_name": "dataset (stand-ins named in data_source)"},
}


def _model_at(spec: dict, data: dict, state: dict[str, torch.Tensor], device: torch.device) -> nn.Module:
    model = build_model(spec, data)
    model.load_state_dict(state)
    return model.to(device).eval()


class _Progress:
    """One log line per finished snapshot with the time left, so a slow job is told apart from a hung one."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self.began = total, 0, time.monotonic()
        usage.start("snapshot")

    def step(self, label: str) -> None:
        self.done += 1
        usage.tick()
        spent = time.monotonic() - self.began
        left = spent / self.done * (self.total - self.done)
        log.info("snapshot %d/%d (%s) measured; %.1f s so far, about %.0f s left", self.done, self.total, label,
                 spent, left)


def _weights(model: nn.Module) -> list[torch.Tensor]:
    return [layer.weight.detach() for layer in model.hidden]


def time_axis(record: dict, spec: dict) -> tuple[list[int], xr.Dataset]:
    """(snapshot steps, their labels on the dimension ``step``) of a run's measurements.

    Step-counted runs are labelled by ``step``; epoch-counted runs by ``epoch`` = epochs after the
    warm-up, with ``step_of_epoch`` (``featlearn.store``); the initialization before a warm-up is
    the centering reference W₀ only, not a row.
    """
    plan = record["schedule"]
    if "epochs" not in spec["train"]:
        return plan["measure"], step_axis(plan["measure"])
    steps = [s for s in plan["measure"] if s >= plan["warmup_steps"]]
    return steps, epoch_axis([(s - plan["warmup_steps"]) / plan["steps_per_epoch"] for s in steps], steps)


def _describe(ds: xr.Dataset) -> xr.Dataset:
    """long_name and units on every variable of a measurement that the tables here name and that has none yet (the
    collapse quantities, the collapse head's layers and the per-step loss carry their own)."""
    for name in ds.variables:
        if "long_name" in ds[name].attrs:
            continue
        if name in LONG_NAMES:
            ds[name].attrs.update(long_name=LONG_NAMES[name], units=UNITS[name])
        elif name in COORD_ATTRS or name in TIME_ATTRS:
            ds[name].attrs.update(COORD_ATTRS.get(name) or TIME_ATTRS[name])
    return ds


def measure_run(record: dict, data: dict, spec: dict, device: torch.device | str = "cpu") -> xr.Dataset:
    """One run's metric dataset, by the run's measurement family (``measure.family``): the NFA of
    MLP layers, of conv layers (VGG), of attention projections (GPT), or neural collapse; on ``device``."""
    family = spec["measure"].get("family", "nfa")
    families = {"nfa": measure_mlp_run, "conv_nfa": measure_conv_run, "attention_nfa": measure_attention_run,
                "collapse": measure_collapse_run}
    if family not in families:
        raise ValueError(f"unknown measure.family {family!r}")
    with _exact_float32():
        return families[family](record, data, spec, torch.device(device))


@contextmanager
def _exact_float32() -> Iterator[None]:
    """No TF32 while measuring: cuDNN convolutions use it by default on a GPU, and its 10-bit mantissa would move K by
    1e-3, so a store would depend on where it was computed."""
    flags = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = flags


def measure_mlp_run(record: dict, data: dict, spec: dict, device: torch.device) -> xr.Dataset:
    """Every per-snapshot, per-layer NFA quantity of one MLP run, both correlation conventions.

    K is taken over the first ``measure.n_measure`` training points (all when absent), exactly
    over every output; losses over the whole training and test splits.
    """
    centered = spec["measure"].get("centered", False)
    steps, time_labels = time_axis(record, spec)
    layers = len(spec["model"]["widths"])
    tensors = {k: v.to(device) for k, v in training_tensors(data).items()}
    x, y = tensors["x"], tensors["y"]
    x_k = x[: spec["measure"].get("n_measure") or len(x)]
    snaps = record["snapshots"]
    progress = _Progress(sum(step in snaps for step in steps))
    conv = list(nfa.CONVENTIONS)

    def empty(*shape: int) -> np.ndarray:
        return np.full(shape, np.nan)

    per_layer = {k: empty(len(steps), layers, len(conv)) for k in ("uc_nfc", "c_nfc", "dc_nfc", "ptkc_nfc")}
    scalars = {k: empty(len(steps), layers) for k in ("ratio_c_uc", "ratio_dc_c", "dw_rel", "k_dispersion")}
    losses = {k: empty(len(steps)) for k in ("train_loss", "test_loss", "rho_nfm_egop", "rho_agop_egop")}
    egop = data.get("egop")
    egop = None if egop is None else egop.to(device)
    init = _model_at(spec, data, snaps[0], device)
    w0 = _weights(init)
    chunk, need = nfa.mlp_covariance_plan(init, len(x_k), centered)
    check_fits(need, device, f"K of {layers} layers over {len(x_k):,} points ({chunk:,} per block)",
               "free memory on the device (another job may hold it) or run on one with that much free")
    last = None
    for i, step in enumerate(steps):
        if step not in snaps:
            continue
        model = _model_at(spec, data, snaps[step], device)
        ks, k_bars = nfa.mlp_feature_covariances(model, x_k, chunk, init if centered else None)
        weights = _weights(model)
        last = (step, weights, ks)
        losses["train_loss"][i] = evaluate(model, x, y)
        losses["test_loss"][i] = evaluate(model, tensors["x_test"], tensors["y_test"])
        for ell in range(layers):
            w, w_init = weights[ell].double(), w0[ell].double()
            k = ks[ell]
            pairs = nfa.nfc_pairs(w, w_init, k, k_bars[ell] if centered else None)
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
        progress.step(f"step {step}")

    ds = time_labels.assign_coords(layer=np.arange(1, layers + 1), convention=conv)
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
    ds = ds.merge(run_status(record, spec))
    if len(record["speeds"]):
        ds["speeds"] = (("iteration_speeds", "matrix"), record["speeds"].numpy())
    # First-layer matrices: whole for synthetic d = 32 (Figs 1, 4, 11); as diagonal images for real inputs
    if spec["measure"].get("image_diagonals"):
        ds = ds.merge(_final_diagonals(last, spec, image_shape(data)))
    elif "task" in spec["data"]:
        ds = ds.merge(_final_matrices(last, egop, spec))
    ds = _describe(ds)
    for name in per_layer:
        if name in ds:
            ds[name].attrs["convention"] = "cosine = the paper's ρ; pearson = the authors' Fig 2 code (mat_cov)"
    ds.attrs["k_normalization"] = "K = (1/n) Σ_α Σ_j J[α,j]ᵀ J[α,j]; Ḡ = WᵀKW"
    ds.attrs["k_samples"] = len(x_k)
    ds.attrs["final_step"] = last[0]
    return ds


def _nfc_row(w: torch.Tensor, w0: torch.Tensor, k: torch.Tensor, at_init: bool) -> dict[str, object]:
    """UC and C-NFC (both conventions), R_C and ‖ΔW‖/‖W‖ of one weight matrix against its K."""
    pairs = nfa.nfc_pairs(w, w0, k)
    nan = [float("nan")] * len(nfa.CONVENTIONS)
    return {
        "uc_nfc": [nfa.correlation(*pairs["uc_nfc"], c) for c in nfa.CONVENTIONS],
        "c_nfc": nan if at_init else [nfa.correlation(*pairs["c_nfc"], c) for c in nfa.CONVENTIONS],
        "ratio_c_uc": nfa.ratio_c_uc(pairs),
        "dw_rel": nfa.relative_weight_change(w.double(), w0.double()),
    }


def _nfc_dataset(rows: list[list[dict] | None], time_labels: xr.Dataset, layer_dims: dict[str, list]) -> xr.Dataset:
    """Stack per-snapshot lists of ``_nfc_row`` dicts (None for a snapshot the run never reached) into
    (step, *layer dims[, convention]) variables on the run's ``time_axis`` labels; the layer list is in the
    row-major order of ``layer_dims``."""
    shape = [len(v) for v in layer_dims.values()]
    conv = len(nfa.CONVENTIONS)
    ds = time_labels.assign_coords(**layer_dims, convention=list(nfa.CONVENTIONS))
    for name in ("uc_nfc", "c_nfc", "ratio_c_uc", "dw_rel"):
        per_conv = name.endswith("nfc")
        values = np.full((len(rows), *shape, *([conv] if per_conv else [])), np.nan)
        for i, row in enumerate(rows):
            if row is not None:
                values[i] = np.reshape([r[name] for r in row], values.shape[1:])
        ds[name] = (("step", *layer_dims, *(["convention"] if per_conv else [])), values)
    return ds


def measure_conv_run(record: dict, data: dict, spec: dict, device: torch.device) -> xr.Dataset:
    """UC/C-NFC of every VGG conv layer (weights as patch → channel matrices, K summed over positions,
    spec §1.11) on the first ``measure.n_measure`` training images, and the losses, per snapshot."""
    from featlearn.metrics.conv_nfa import conv_feature_covariances, conv_weight_matrix

    steps, time_labels = time_axis(record, spec)
    tensors = {k: v.to(device) for k, v in training_tensors(data).items()}
    x_k = tensors["x"][: spec["measure"].get("n_measure") or len(tensors["x"])]
    w0 = [conv_weight_matrix(c) for c in _model_at(spec, data, record["snapshots"][0], device).conv_layers]
    rows, train_loss, test_loss = [], np.full(len(steps), np.nan), np.full(len(steps), np.nan)
    progress = _Progress(sum(step in record["snapshots"] for step in steps))
    for i, step in enumerate(steps):
        if step not in record["snapshots"]:
            rows.append(None)
            continue
        model = _model_at(spec, data, record["snapshots"][step], device)
        ks = conv_feature_covariances(model, x_k)
        weights = [conv_weight_matrix(c) for c in model.conv_layers]
        rows.append([_nfc_row(w, w_init, k, step == 0) for w, w_init, k in zip(weights, w0, ks)])
        train_loss[i] = evaluate(model, tensors["x"], tensors["y"])
        test_loss[i] = evaluate(model, tensors["x_test"], tensors["y_test"])
        progress.step(f"step {step}")
    ds = _nfc_dataset(rows, time_labels, {"layer": list(range(1, len(w0) + 1))})
    ds["train_loss"], ds["test_loss"] = ("step", train_loss), ("step", test_loss)
    ds.attrs["k_samples"] = len(x_k)
    ds.attrs["k_convention"] = "K without conv biases, eval mode (the authors' code, spec §1.11)"
    return _describe(ds.merge(run_status(record, spec)))


def measure_attention_run(record: dict, data: dict, spec: dict, device: torch.device) -> xr.Dataset:
    """UC/C-NFC of every block's W_q, W_k, W_v (input LN₁(x_t)) with the random-probe K over all
    next-token logits (spec §1.12) on fixed training windows, and the validation loss, per snapshot."""
    from featlearn.metrics.attention_nfa import attention_feature_covariances
    from featlearn.models.gpt import attention_weights

    m = spec["measure"]
    steps, time_labels = time_axis(record, spec)
    tensors = training_tensors(data)
    block = spec["model"]["block_size"]
    windows = torch.Generator().manual_seed(0)  # the same windows for every snapshot and seed, on any device
    idx, _ = (t.to(device) for t in token_batch(tensors["tokens"], m["windows"], block, windows))
    val_x, val_y = (t.to(device) for t in token_batch(tensors["val_tokens"], m["windows"], block, windows))
    w0 = {k: w.clone() for k, w in attention_weights(_model_at(spec, data, record["snapshots"][0], device)).items()}
    keys = sorted(w0)
    rows, val_loss = [], np.full(len(steps), np.nan)
    progress = _Progress(sum(step in record["snapshots"] for step in steps))
    for i, step in enumerate(steps):
        if step not in record["snapshots"]:
            rows.append(None)
            continue
        model = _model_at(spec, data, record["snapshots"][step], device)
        ks = attention_feature_covariances(model, idx, m["probes"], torch.Generator().manual_seed(spec["seed"]))
        weights = attention_weights(model)
        rows.append([_nfc_row(weights[key], w0[key], ks[key], step == 0) for key in keys])
        val_loss[i] = evaluate(model, val_x, val_y, "cross_entropy")
        progress.step(f"step {step}")
    blocks = sorted({b for b, _ in keys})
    ds = _nfc_dataset(rows, time_labels, {"block": blocks, "proj": ["k", "q", "v"]})
    ds = ds.drop_vars("ratio_c_uc").reindex(proj=["q", "k", "v"])
    ds["val_loss"] = ("step", val_loss)
    ds.attrs["k_estimator"] = f"{m['probes']} Gaussian probes over all next-token logits, {m['windows']} windows"
    return _describe(ds.merge(run_status(record, spec)))


def measure_collapse_run(record: dict, data: dict, spec: dict, device: torch.device) -> xr.Dataset:
    """NC1 through each head layer's SVD stages, the NFA of every head layer, the last hidden layer's
    W/T and B/T (collapse Figs 2, 7–12) and the losses, per snapshot, on the whole training subset;
    the AGOP on ``measure.n_measure`` class-balanced samples."""
    from featlearn.metrics.collapse_measure import collapse_run_dataset, measure_collapse

    steps, time_labels = time_axis(record, spec)
    tensors = {k: v.to(device) for k, v in training_tensors(data).items()}
    labels = data["labels_train"].to(device)
    rows, train_loss, test_loss, blank = [], np.full(len(steps), np.nan), np.full(len(steps), np.nan), None
    progress = _Progress(sum(step in record["snapshots"] for step in steps))
    for i, step in enumerate(steps):
        if step not in record["snapshots"]:
            rows.append(None)
            continue
        model = _model_at(spec, data, record["snapshots"][step], device)
        rows.append(measure_collapse(model, tensors["x"], labels, spec["measure"].get("n_measure")))
        blank = {k: np.full(np.shape(v), np.nan) for k, v in rows[-1].items()}
        train_loss[i] = evaluate(model, tensors["x"], tensors["y"])
        test_loss[i] = evaluate(model, tensors["x_test"], tensors["y_test"])
        progress.step(f"step {step}")
    ds = collapse_run_dataset([blank if r is None else r for r in rows], time_labels)
    ds["train_loss"], ds["test_loss"] = ("step", train_loss), ("step", test_loss)
    return _describe(ds.merge(run_status(record, spec)))


def run_status(record: dict, spec: dict) -> xr.Dataset:
    """The loss of every optimizer step (MSE or cross-entropy, the run's ``train.loss``) and whether (and when) the
    run diverged."""
    step = float("nan") if record["diverged_step"] is None else float(record["diverged_step"])
    losses = record["losses"].numpy()
    loss = LOSS_ATTRS[spec["train"].get("loss", "mse")]
    return xr.Dataset({"loss": (("iteration",), losses, loss)}, coords={"iteration": np.arange(len(losses))}).assign({
        "diverged": int(record["status"] == "diverged"), "diverged_step": step})


def image_shape(data: dict) -> tuple[int, int, int]:
    """(channels, side, side) of a flattened image dataset, from its preprocessing record."""
    side = json.loads(data["preprocessing"])["size"]
    d = data["x_train"].shape[1]
    return d // (side * side), side, side


def _final_diagonals(last: tuple, spec: dict, image: tuple[int, int, int]) -> xr.Dataset:
    """diag F⁽⁰⁾, diag Ḡ⁽⁰⁾ and diag W⁽⁰⁾ᵀQW⁽⁰⁾ as channel-averaged images, and their Pearson
    correlations (Figs 16, 17): the d×d matrices of a 3·64·64 input would not fit in a store."""
    _, weights, ks = last
    w, k = weights[0].double(), ks[0]
    f, g = (w * w).sum(0), nfa.agop_diagonal(w, k)  # diag F, diag Ḡ
    corrupted = [nfa.agop_diagonal(w, q) for q in _random_q(k, spec)]

    def picture(diag: torch.Tensor) -> np.ndarray:
        return diag.reshape(image).mean(0).cpu().numpy()

    dims = ("row", "col")
    ds = xr.Dataset({"nfm_diag": (dims, picture(f)), "agop_diag": (dims, picture(g)),
                     "rho_diag_agop": nfa.correlation(f, g, "pearson")},
                    attrs={"rho_diagonals": "Pearson over the full diagonal (every channel); images channel-averaged"})
    if corrupted:
        ds["corrupted_diag"] = (dims, picture(corrupted[0]))
        ds["rho_diag_corrupted"] = (("q_draw",), np.array([nfa.correlation(f, c, "pearson") for c in corrupted]))
    return ds


def _random_q(k: torch.Tensor, spec: dict) -> list[torch.Tensor]:
    """Q = O diag(eig K) Oᵀ with O Haar-orthogonal, ``measure.random_q_draws`` times (Figs 1, 16); O's Gaussian is
    drawn on the CPU and its QR runs on K's device, so a seed gives the same Q on every device (to rounding)."""
    eig = torch.linalg.eigvalsh(k)
    gen = torch.Generator().manual_seed(10_000 + spec["seed"])
    draws = []
    for _ in range(spec["measure"].get("random_q_draws", 0)):
        o = haar_orthogonal(len(k), gen, k.device)
        draws.append((o * eig) @ o.T)
    return draws


def _final_matrices(last: tuple, egop: torch.Tensor | None, spec: dict) -> xr.Dataset:
    """First-layer F, Ḡ (and EGOP, corrupted AGOPs) at the last finite snapshot (Figs 1, 4, 11)."""
    _, weights, ks = last
    w, k = weights[0].double(), ks[0]
    f, g = nfa.nfm(w), nfa.agop(w, k)
    dims = ("input_i", "input_j")
    ds = xr.Dataset({"nfm": (dims, f.cpu().numpy()), "agop": (dims, g.cpu().numpy())})
    if egop is not None:
        ds["egop"] = (dims, egop.cpu().numpy())
    corrupted = [nfa.agop(w, q) for q in _random_q(k, spec)]
    if corrupted:
        ds["corrupted_agop"] = (dims, corrupted[0].cpu().numpy())
        ds["rho_nfm_corrupted"] = (("q_draw",), np.array([nfa.correlation(f, c) for c in corrupted]))
    return ds


def combine_runs(runs: dict[str, tuple[dict, xr.Dataset]]) -> xr.Dataset:
    """One store for a sweep: every run's dataset placed on the sweep's named dimensions.

    ``runs`` maps run id to (sweep point, dataset). ``alpha`` becomes a ``spectrum`` label so
    that the isotropic case (alpha = None) is a selectable coordinate. Time stays the dimension
    ``step`` (``featlearn.store``): step-counted runs are padded to the union of their steps;
    epoch-counted runs are aligned on ``epoch`` and padded to the union of their epochs, each
    run's optimizer steps in ``step_of_epoch`` (NaN past its end), because one epoch is a
    different step on datasets of different sizes.
    """
    parts, sweep = [], set()
    for point, ds in runs.values():
        coords = {("spectrum" if k == "alpha" else k): [spectrum_label(v) if k == "alpha" else v]
                  for k, v in point.items()}
        sweep |= set(coords)
        parts.append(ds.expand_dims(coords))
    # Runs of one sweep may differ in length (MNIST trains 50 epochs, the rest 150) and, counted in epochs, in
    # steps per epoch (datasets of different sizes): pad every other axis to the union first, so only the sweep
    # dims are concatenated, with epoch-counted runs aligned on their epoch (the same epoch is a different step
    # on each dataset); step_of_epoch keeps each run's own steps.
    by_epoch = ["epoch" in part.coords for part in parts]
    if any(by_epoch) and not all(by_epoch):
        raise ValueError("combine_runs: a sweep mixes runs counted in steps and in epochs (train.steps and "
                         "train.epochs); give every run of one experiment the same")
    if all(by_epoch):
        parts = [part.swap_dims(step="epoch") for part in parts]
    parts = xr.align(*parts, join="outer", exclude=sweep)
    store = xr.combine_by_coords(parts, join="outer", combine_attrs="drop_conflicts")
    if all(by_epoch):
        store = store.swap_dims(epoch="step")
    for name in sweep:
        if name not in COORD_ATTRS:
            raise KeyError(f"combine_runs: sweep dimension {name!r} has no long_name/units in "
                           "featlearn.metrics.measure.COORD_ATTRS; add it there")
        store[name].attrs.update(COORD_ATTRS[name])
    return store


def spectrum_label(alpha: float | None) -> str:
    """'isotropic' for Σ = I, else the eigenvalue decay written out: λ_k ∝ 1/(1+k^α)."""
    if alpha is None:
        return "isotropic"
    return "1/(1+k)" if alpha == 1 else f"1/(1+k^{alpha:g})"
