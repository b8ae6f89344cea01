"""Deep Recursive Feature Machines (collapse paper Algorithm 1; spec §2.3) and what Figs 1, 3–6 need from a run.

Rows are samples. Layer l (1-based), on X_l (N, d_l):
  1. normalize every sample, x_i ← x_i / ‖x_i‖                                   stage "X"
  2. kernel ridge(less) regression A_l = (k(X_l, X_l) + μI)⁻¹ Y                  (isotropic kernel, Y ∈ {±1}^{N×K})
  3. M_l = AGOP of f_l at the training points, closed form, divided by its largest entry (authors' code)
  4. X̃_l = X_l M_l^{1/2}                                                          stage "MX"
  5. X_{l+1} = Φ_l(X̃_l), fresh random features (ReLU, D = 1024, or cos RFF, D = 4096)   stage "PhiMX"
When N < d_l, steps 2–4 run in the N-dimensional row space of X_l (``thin_range``): same result, N×N instead of d×d.

A layer runs on X's device and holds at most two N×N float64 buffers at a time (the kernel matrix and its Cholesky
factor, freed once A is solved; the AGOP is accumulated over blocks of rows): the paper's N = 50,000 needs 40 GB
for them, one 80 GB GPU. (The thin route adds its (N, N) coordinates and (d, N) basis, but only runs at N < d.)
Each layer checks that its device has ``layer_bytes`` left before it allocates them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch
import xarray as xr

from featlearn import usage
from featlearn.memory import check_fits
from featlearn.metrics.collapse import collapse_gram, collapse_metrics, gram_block_means, stratified_indices
from featlearn.metrics.nfa import psd_sqrt
from featlearn.rfm.features import laplace_fourier_features, relu_features
from featlearn.rfm.kernels import kernel_agop, kernel_matrix
from featlearn.rfm.linalg import max_entry, solve_kernel_system, thin_range

ACTIVATIONS = ("relu", "cos")
DEFAULT_WIDTH = {"relu": 1024, "cos": 4096}  # App. C
STAGES = ("X", "MX", "PhiMX")
STEPS = ("kernel", "solve", "agop", "sqrt", "features")  # the store's ``phase`` dimension (``step`` is optimizer steps)
# long_name and units (CF) of every variable and coordinate of a run's Dataset (``store.write_store`` requires them)
ATTRS = {
    "nc1": {"long_name": "NC1 = tr Σ_W / tr Σ_B of the stage's features", "units": "1"},
    "nc1_codeconv": {"long_name": "NC1 as the authors' code computes it (Σ_W over K·N): NC1 / K", "units": "1"},
    "nc2_meansq": {"long_name": "NC2 = mean squared entry of H̄ᵀH̄ − Σ_ETF (the authors' code)", "units": "1"},
    "nc2_fro": {"long_name": "‖H̄ᵀH̄ − Σ_ETF‖_F = K √NC2", "units": "1"},
    "trSW": {"long_name": "tr Σ_W = (1/N) Σ_i ‖h_i − μ_c(i)‖² of the stage's features", "units": "1"},
    "trSB": {"long_name": "tr Σ_B = (1/K) Σ_c ‖μ_c − μ_G‖² of the stage's features", "units": "1"},
    "jitter": {"long_name": "jitter ε·I added to K + μI in the layer's solve (0: none)", "units": "1"},
    "seconds": {"long_name": "wall-clock time of each phase of the layer", "units": "s"},
    "gram": {"long_name": "Gram X̄X̄ᵀ of the centered, normalized M_l^{1/2}X_l on the class-sorted subsample",
             "units": "1"},
    "gram_block_mean": {"long_name": "mean of the full Gram X̄X̄ᵀ over each (class_a, class_b) block", "units": "1"},
    "layer": {"long_name": "Deep RFM layer l (1 = the first)", "units": "1"},
    "stage": {"long_name": "stage of the layer: X_l (X), M_l^{1/2}X_l (MX), Φ(M_l^{1/2}X_l) (PhiMX)"},
    "phase": {"long_name": "phase of Algorithm 1 within a layer (kernel, solve, agop, sqrt, features)"},
    "gram_layer": {"long_name": "layer l whose Gram is stored", "units": "1"},
    "i": {"long_name": "sample index of a Gram row (class-sorted subsample)", "units": "1"},
    "j": {"long_name": "sample index of a Gram column (class-sorted subsample)", "units": "1"},
    "class_i": {"long_name": "class of Gram row i", "units": "1"},
    "class_j": {"long_name": "class of Gram column j", "units": "1"},
    "class_a": {"long_name": "class a of a Gram block", "units": "1"},
    "class_b": {"long_name": "class b of a Gram block", "units": "1"},
}
METRICS = ("nc1", "nc1_codeconv", "nc2_meansq", "nc2_fro", "trSW", "trSB")

log = logging.getLogger(__name__)


def pm_one_hot(labels: torch.Tensor, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Y[i, c] = +1 if sample i is in class c, else −1, (N, K) (App. C)."""
    k = int(labels.max()) + 1
    return 2 * torch.nn.functional.one_hot(labels, k).to(dtype) - 1


def layer_bytes(n: int, d: int, width: int) -> int:
    """Bytes one layer allocates on top of its input X (n, d), float64: an upper bound of its peak.

    Alive through the layer: the normalized X (n, d) and, on the thin route (n < d), its coordinates (n, n) and basis
    (d, n). On top of them, the larger of
      * the solve: the kernel matrix and its Cholesky factor, 2 (n, n) (the AGOP after it holds at most 3 (n/4, n));
      * the features: X̃ (n, d) (thin: first (n, n)), Φ (n, width), the random weights (width, d), and M with eigh's
        workspace and M^{1/2}, at most 4 (r, r), r = min(n, d);
    plus 64 MiB for the (n, K) targets and coefficients, LAPACK's small workspaces and the allocator's rounding.
    The paper's n = 50,000 with d = width = 4096 (cos): 41.7 GB, the solve's two 20 GB buffers (43 GB with the input).
    """
    thin = n < d
    r = min(n, d)
    held = n * d + thin * (n * n + d * n)
    solve = 2 * n * n
    features = n * d + thin * n * n + n * width + width * d + 4 * r * r
    return 8 * (held + max(solve, features)) + (1 << 26)


@dataclass
class RFMLayer:
    """One Deep RFM layer: its three stages (N, ·), the solve's jitter and the seconds spent per step (``STEPS``)."""

    x: torch.Tensor
    x_tilde: torch.Tensor
    features: torch.Tensor
    jitter: float
    seconds: dict[str, float]


def _sync(device: torch.device) -> None:
    """Wait for the device's queued kernels, so a clock reading on CUDA measures work done, not work queued."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@contextmanager
def _timed(seconds: dict[str, float], step: str, device: torch.device) -> Iterator[None]:
    _sync(device)
    start = time.perf_counter()
    yield
    _sync(device)
    seconds[step] = time.perf_counter() - start


def rfm_layer(
    x: torch.Tensor, y: torch.Tensor, generator: torch.Generator, *, kernel: str = "laplace", bandwidth: float = 2.0,
    ridge: float = 0.0, activation: str = "relu", width: int | None = None, gamma: float = 0.05,
    normalize_agop: bool = True, thin: bool | None = None,
) -> RFMLayer:
    """One iteration of Algorithm 1 on X (N, d) with targets Y (N, K), on X's device; ``thin`` (default: N < d) picks
    the row-space route for steps 2–4. Returns normalized X, X̃ = X M^{1/2} and Φ(X̃)."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"rfm_layer: unknown activation {activation!r}; allowed: {ACTIVATIONS}")
    width = width or DEFAULT_WIDTH[activation]
    check_fits(layer_bytes(len(x), x.shape[1], width), x.device,
               f"a Deep RFM layer at N = {len(x):,} (d = {x.shape[1]:,}, width {width:,}; two N×N float64 buffers)",
               "lower data.n (or rehearse_max_n), or run on a GPU with that much memory free")
    seconds: dict[str, float] = {}
    x = torch.nn.functional.normalize(x, dim=1)
    thin = len(x) < x.shape[1] if thin is None else thin
    with _timed(seconds, "kernel", x.device):  # includes the thin QR
        coords, q = thin_range(x) if thin else (x, None)  # x = coords qᵀ keeps every distance: same k, same f
        k = kernel_matrix(kernel, coords, bandwidth=bandwidth)  # N×N buffer 1
    with _timed(seconds, "solve", x.device):
        coef, jitter = solve_kernel_system(k, y, ridge, overwrite=True)  # buffer 2: K's Cholesky factor
        del k
    with _timed(seconds, "agop", x.device):
        m = kernel_agop(kernel, coords, coef, bandwidth=bandwidth)  # blockwise; Qᵀ M Q on the thin route
        if normalize_agop:
            m = m / max_entry(m, q)
    with _timed(seconds, "sqrt", x.device):
        x_tilde = coords.to(torch.float64) @ psd_sqrt(m)
        x_tilde = (x_tilde if q is None else x_tilde @ q.to(torch.float64).T).to(x.dtype)
    with _timed(seconds, "features", x.device):
        if activation == "relu":
            features = relu_features(x_tilde, width, generator)
        else:
            features = laplace_fourier_features(x_tilde, width, gamma, generator)
    return RFMLayer(x, x_tilde, features, jitter, seconds)


def _log_layer(layer: int, depth: int, seconds: float, nc1: float, jitter: float, device: torch.device) -> None:
    msg, args = "deep_rfm layer %d/%d: %.1f s, NC1(X) %.3g", [layer, depth, seconds, nc1]
    if jitter:
        msg, args = msg + ", jitter %.2g", [*args, jitter]
    if device.type == "cuda":
        msg, args = msg + ", peak %.1f GB", [*args, torch.cuda.max_memory_allocated(device) / 1e9]
    log.info(msg, *args)


def deep_rfm(
    x: torch.Tensor, labels: torch.Tensor, generator: torch.Generator, *, depth: int = 20, kernel: str = "laplace",
    bandwidth: float = 2.0, ridge: float = 0.0, activation: str = "relu", width: int | None = None,
    gamma: float = 0.05, normalize_agop: bool = True, gram_layers: tuple[int, ...] = tuple(range(1, 20, 2)),
    gram_per_class: int = 100, dtype: torch.dtype = torch.float64,
) -> xr.Dataset:
    """Run ``depth`` layers of Deep RFM on X (N, d) with integer labels (N,) and return, per layer:

    * ``nc1``, ``nc1_codeconv``, ``nc2_meansq``, ``nc2_fro``, ``trSW``, ``trSB`` (layer, stage) for the stages
      X_l, M_l^{1/2} X_l, Φ(M_l^{1/2} X_l) (Figs 3, 4);
    * ``gram`` (gram_layer, i, j): X̄ X̄ᵀ of the centered, normalized M_l^{1/2} X_l on the first ``gram_per_class``
      samples of each class, grouped by class, and ``gram_block_mean`` (gram_layer, class_a, class_b) of the full Gram
      (Figs 1, 5, 6; spec §2.4);
    * ``jitter`` (layer) added to K in the solve and ``seconds`` (layer, step), wall-clock per step.

    Runs on X's device (labels are moved there); the metrics are float64 and the stored arrays NumPy. Logs one INFO
    line per layer (time, NC1 of X_l, any jitter, on CUDA the peak memory so far), so a slow run reads differently
    from a hung one. Features are kept in ``dtype`` (float64 by default: the ridgeless solve interpolates nearly
    collapsed points, whose float32 distances are noise that Ξ = k/(L r) amplifies). The run is a function of
    ``generator``'s state.
    """
    if depth < 1 or not all(1 <= g <= depth for g in gram_layers):
        raise ValueError(f"deep_rfm: need depth >= 1 and gram_layers within 1..{depth} (got {depth}, {gram_layers})")
    labels = labels.to(device=x.device, dtype=torch.long)
    y = pm_one_hot(labels)
    subset = stratified_indices(labels, gram_per_class)
    k = y.shape[1]
    metrics = {name: np.full((depth, len(STAGES)), np.nan) for name in METRICS}
    jitter, seconds = np.zeros(depth), np.zeros((depth, len(STEPS)))
    gram = np.zeros((len(gram_layers), len(subset), len(subset)))
    block = np.zeros((len(gram_layers), k, k))
    h = x.to(dtype)
    usage.start("layer")
    for layer in range(1, depth + 1):
        start = time.perf_counter()
        out = rfm_layer(
            h, y, generator, kernel=kernel, bandwidth=bandwidth, ridge=ridge, activation=activation, width=width,
            gamma=gamma, normalize_agop=normalize_agop,
        )
        for s, stage in enumerate((out.x, out.x_tilde, out.features)):
            for name, value in collapse_metrics(stage, labels).items():
                metrics[name][layer - 1, s] = value
        jitter[layer - 1] = out.jitter
        seconds[layer - 1] = [out.seconds[step] for step in STEPS]
        if layer in gram_layers:
            g = gram_layers.index(layer)
            gram[g] = collapse_gram(out.x_tilde, labels, subset).cpu().numpy()
            block[g] = gram_block_means(out.x_tilde, labels).cpu().numpy()
        _log_layer(layer, depth, time.perf_counter() - start, metrics["nc1"][layer - 1, 0], out.jitter, x.device)
        usage.tick()
        h = out.features
        del out  # this layer's X and X̃ go before the next layer's N×N buffers arrive
    sub_labels = labels[subset].cpu().numpy()
    ds = xr.Dataset(
        {
            **{name: (("layer", "stage"), v) for name, v in metrics.items()},
            "jitter": ("layer", jitter),
            "seconds": (("layer", "phase"), seconds),
            "gram": (("gram_layer", "i", "j"), gram),
            "gram_block_mean": (("gram_layer", "class_a", "class_b"), block),
        },
        coords={
            "layer": np.arange(1, depth + 1),
            "stage": list(STAGES),
            "phase": list(STEPS),
            "gram_layer": list(gram_layers),
            "i": subset.cpu().numpy(),
            "j": subset.cpu().numpy(),
            "class_i": ("i", sub_labels),
            "class_j": ("j", sub_labels),
            "class_a": np.arange(k),
            "class_b": np.arange(k),
        },
        attrs={
            "kernel": kernel, "bandwidth": bandwidth, "ridge": ridge, "activation": activation,
            "width": width or DEFAULT_WIDTH[activation], "gamma": gamma, "normalize_agop": int(normalize_agop),
            "n_samples": len(x), "input_dim": x.shape[1], "num_classes": k, "seed": generator.initial_seed(),
            "dtype": str(dtype),
        },
    )
    for name, attrs in ATTRS.items():
        ds[name].attrs.update(attrs)
    return ds
