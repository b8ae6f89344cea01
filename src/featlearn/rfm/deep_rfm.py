"""Deep Recursive Feature Machines (collapse paper Alg. 1; docs/figures/collapse.md), what Figs 1, 3–6 need from a run.

Rows are samples. Layer l (1-based), on X_l (N, d_l):
  1. normalize every sample, x_i ← x_i / ‖x_i‖                                   stage "X"
  2. kernel ridge(less) regression A_l = (k(X_l, X_l) + μI)⁻¹ Y                  (isotropic kernel, Y ∈ {±1}^{N×K})
  3. M_l = AGOP of f_l at the training points, closed form, divided by its largest entry (authors' code)
  4. X̃_l = X_l M_l^{1/2}                                                          stage "MX"
  5. X_{l+1} = Φ_l(X̃_l), fresh random features (ReLU, D = 1024, or cos RFF, D = 4096)   stage "PhiMX"
When N < d_l, steps 2–4 run in the N-dimensional row space of X_l (``thin_range``): same result, N×N instead of d×d.

A layer runs on X's device and holds one N×N float64 buffer: the kernel matrix, factorized in place into its Cholesky
factor and freed once A is solved (``solve="in_place"``); the AGOP and the features recompute what they need of the
kernel over blocks of rows. The paper's N = 50,000 needs 20 GB for it, which leaves room on a 24 GB card. The
two-buffer solve (K kept beside its factor, ``solve="two_buffers"``) gives the same A bit for bit and retries a
failed factorization without rebuilding K, at twice the memory. (The thin route adds its (N, N) coordinates and (d, N)
basis, but only runs at N < d.) A run picks the path that fits its device (``choose_solve``), and each layer checks
that its device has ``layer_bytes`` left before it allocates; ``run_bytes`` is a whole run's need.
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

from featlearn import hooks
from featlearn.metrics.collapse import collapse_gram, collapse_metrics, gram_block_means, stratified_indices
from featlearn.metrics.nfa import psd_sqrt
from featlearn.rfm.features import laplace_fourier_features, relu_features
from featlearn.rfm.kernels import GRADIENT_BLOCK_ROWS, kernel_agop, kernel_matrix, kernel_matrix_float64
from featlearn.rfm.linalg import max_entry, solve_kernel_system, solve_kernel_system_in_place, thin_range

ACTIVATIONS = ("relu", "cos")
DEFAULT_WIDTH = {"relu": 1024, "cos": 4096}  # App. C
STAGES = ("X", "MX", "PhiMX")
STEPS = ("kernel", "solve", "agop", "sqrt", "features")  # the store's ``phase`` dimension (``step`` is optimizer steps)
# how a layer solves (K + μI) A = Y, leanest first; the store's ``solve`` attribute names the one a run took
SOLVES = {"in_place": "one N×N float64 buffer, K factorized in place",
          "two_buffers": "two N×N float64 buffers, K and its Cholesky factor"}
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


def _check_solve(solve: str) -> None:
    if solve not in SOLVES:
        raise ValueError(f"Deep RFM: unknown solve {solve!r}; allowed: {tuple(SOLVES)}")


def layer_bytes(n: int, d: int, width: int, *, solve: str = "in_place", dtype: torch.dtype = torch.float64,
                overwrite: bool = False) -> int:
    """Bytes one layer allocates on its device on top of its input X (n, d) in ``dtype``: an upper bound of its peak,
    the same on every device (torch's allocations; a CUDA context is not counted).

    Alive through the layer: the normalized X (n, d), unless the layer may ``overwrite`` its input, and on the thin
    route (n < d) the coordinates (n, n) and basis (d, n). On top of them, the largest of
      * the solve: the float64 kernel matrix, factorized in place (1 (n, n)) or beside its factor (2), plus for a
        non-float64 X a row block of its kernel (in place) or the whole kernel in X's dtype (two buffers);
      * the AGOP: three (b, n) blocks, b = min(2048, n/4), and its float64 (r, r) sum, r = min(n, d);
      * the features: X̃ (n, d) (thin: first (n, n)), Φ (n, width), the random weights (width, d), and M with eigh's
        workspace and M^{1/2}, at most 4 (r, r) float64;
    plus 64 MiB for the (n, K) targets and coefficients, LAPACK's small workspaces and the allocator's rounding.
    The paper's n = 50,000 with d = width = 4096 (cos): 21.7 GB in place (41.7 GB with two buffers).
    """
    _check_solve(solve)
    item = torch.empty((), dtype=dtype).element_size()
    thin = n < d
    r = min(n, d)
    rows = max(1, min(GRADIENT_BLOCK_ROWS, n // 4))
    held = item * ((not overwrite) * n * d + thin * (n * n + d * n))
    if solve == "in_place":
        solve_bytes = 8 * n * n + (item != 8) * item * GRADIENT_BLOCK_ROWS * n
    else:
        solve_bytes = 16 * n * n + (item != 8) * item * n * n
    agop = 3 * item * rows * n + 8 * r * r
    features = item * (n * d + n * width + width * d) + 8 * (thin * n * n + 4 * r * r)
    return held + max(solve_bytes, agop, features) + (1 << 26)


def run_bytes(n: int, d: int, width: int, *, solve: str = "in_place", dtype: torch.dtype = torch.float64) -> int:
    """Peak bytes of a whole Deep RFM run (``deep_rfm``) on its device, its input included: what a job on a shared
    GPU declares. n samples of dimension d (the data's), random features of ``width``, features kept in ``dtype``.

    The run holds its own copy of X in ``dtype`` (layer 1's input: X given on the CPU or in another dtype, as the
    pipeline gives it) and then the previous layer's features (n, width), and lets each layer normalize them in
    place. The larger of layer 1 (input (n, d)) and the later layers (input (n, width)), each with its three stages
    and two temporaries of the metrics computed between layers. The paper's n = 50,000, in place: 21.7 GB for cos
    (width 4096), 21.3 GB for ReLU at d = 3072 (CIFAR-10, SVHN) and 20.5 GB at d = 784 (MNIST).
    """
    item = torch.empty((), dtype=dtype).element_size()

    def one(d_in: int) -> int:
        stages = item * (n * d_in + n * d_in + n * width + 2 * n * max(d_in, width))  # X, X̃, Φ; metrics temporaries
        return max(item * n * d_in + layer_bytes(n, d_in, width, solve=solve, dtype=dtype, overwrite=True), stages)

    return max(one(d), one(width))


def choose_solve(n: int, d: int, width: int, dtype: torch.dtype, device: torch.device | str,
                 prefer: str = "in_place") -> str:
    """The solve a run takes: ``prefer`` where its need (``run_bytes``) fits the memory ``device`` has left, else the
    leanest (whose own check then stops the run if even that does not fit). The default prefers the leanest: a job
    sharing a GPU must stay within what it declared (``run_bytes`` in place), and two buffers only save a rebuilt K
    on jitter retries."""
    _check_solve(prefer)
    need = run_bytes(n, d, width, solve=prefer, dtype=dtype)
    if prefer == "in_place" or need <= hooks.current().available_bytes(device):
        return prefer
    log.info("deep_rfm: %s would need %.3g GB at N = %d; %s fits: taking it", SOLVES[prefer],
             need / 1e9, n, SOLVES["in_place"])
    return "in_place"


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
    normalize_agop: bool = True, thin: bool | None = None, solve: str = "in_place", overwrite: bool = False,
) -> RFMLayer:
    """One iteration of Algorithm 1 on X (N, d) with targets Y (N, K), on X's device; ``thin`` (default: N < d) picks
    the row-space route for steps 2–4, ``solve`` how A is solved (``SOLVES``: the same A either way), ``overwrite``
    lets the layer normalize X in place (the caller hands X over). Returns normalized X, X̃ = X M^{1/2} and Φ(X̃)."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"rfm_layer: unknown activation {activation!r}; allowed: {ACTIVATIONS}")
    width = width or DEFAULT_WIDTH[activation]
    need = layer_bytes(len(x), x.shape[1], width, solve=solve, dtype=x.dtype, overwrite=overwrite)
    hooks.current().check_fits(need, x.device,
                      f"a Deep RFM layer at N = {len(x):,} (d = {x.shape[1]:,}, width {width:,}; {SOLVES[solve]})",
                      "lower data.n (or rehearse_max_n), or run on a GPU with that much memory free")
    seconds: dict[str, float] = {}
    if overwrite:  # what normalize computes, in X's own storage
        x = x.div_(x.norm(2.0, 1, keepdim=True).clamp_min_(1e-12))
    else:
        x = torch.nn.functional.normalize(x, dim=1)
    thin = len(x) < x.shape[1] if thin is None else thin
    with _timed(seconds, "kernel", x.device):  # includes the thin QR
        coords, q = thin_range(x) if thin else (x, None)  # x = coords qᵀ keeps every distance: same k, same f
        if solve == "two_buffers":
            k = kernel_matrix(kernel, coords, bandwidth=bandwidth)  # N×N buffer 1
    builds: list[float] = []  # in place, K is built inside the solve (again on each jitter retry): timed as "kernel"

    def build() -> torch.Tensor:
        with _timed(seconds, "build", x.device):
            k = kernel_matrix_float64(kernel, coords, bandwidth=bandwidth)  # the one N×N buffer
        builds.append(seconds.pop("build"))
        return k

    with _timed(seconds, "solve", x.device):
        if solve == "two_buffers":
            coef, jitter = solve_kernel_system(k, y, ridge, overwrite=True)  # buffer 2: K's Cholesky factor
            del k
        else:
            coef, jitter = solve_kernel_system_in_place(build, y, ridge)
    seconds["kernel"] += sum(builds)
    seconds["solve"] -= sum(builds)
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
    gram_per_class: int = 100, dtype: torch.dtype = torch.float64, device: torch.device | str | None = None,
    solve: str = "in_place",
) -> xr.Dataset:
    """Run ``depth`` layers of Deep RFM on X (N, d) with integer labels (N,) and return, per layer:

    * ``nc1``, ``nc1_codeconv``, ``nc2_meansq``, ``nc2_fro``, ``trSW``, ``trSB`` (layer, stage) for the stages
      X_l, M_l^{1/2} X_l, Φ(M_l^{1/2} X_l) (Figs 3, 4);
    * ``gram`` (gram_layer, i, j): X̄ X̄ᵀ of the centered, normalized M_l^{1/2} X_l on the first ``gram_per_class``
      samples of each class, grouped by class, and ``gram_block_mean`` (gram_layer, class_a, class_b) of the full Gram
      (Figs 1, 5, 6; docs/figures/collapse.md, Gram matrices);
    * ``jitter`` (layer) added to K in the solve and ``seconds`` (layer, step), wall-clock per step.

    Runs on ``device`` (default: X's), on its own copy of X in ``dtype`` when X has another device or dtype: pass X on
    the CPU and the run holds only that copy on the device (``run_bytes``). Labels are moved there; the metrics are
    float64 and the stored arrays NumPy. ``solve`` is the preferred solve (``choose_solve``); the store's ``solve``
    attribute names the one taken, the same A either way. Logs one INFO
    line per layer (time, NC1 of X_l, any jitter, on CUDA the peak memory so far), so a slow run reads differently
    from a hung one. Features are kept in ``dtype`` (float64 by default: the ridgeless solve interpolates nearly
    collapsed points, whose float32 distances are noise that Ξ = k/(L r) amplifies). The run is a function of
    ``generator``'s state.
    """
    if depth < 1 or not all(1 <= g <= depth for g in gram_layers):
        raise ValueError(f"deep_rfm: need depth >= 1 and gram_layers within 1..{depth} (got {depth}, {gram_layers})")
    if activation not in ACTIVATIONS:
        raise ValueError(f"deep_rfm: unknown activation {activation!r}; allowed: {ACTIVATIONS}")
    device = x.device if device is None else torch.device(device)
    width = width or DEFAULT_WIDTH[activation]
    n, d = x.shape
    solve = choose_solve(n, d, width, dtype, device, solve)
    log.info("deep_rfm: N = %d, d = %d on %s; solve: %s (%.3g GB)", n, d, device, SOLVES[solve],
             run_bytes(n, d, width, solve=solve, dtype=dtype) / 1e9)
    labels = labels.to(device=device, dtype=torch.long)
    y = pm_one_hot(labels)
    subset = stratified_indices(labels, gram_per_class)
    k = y.shape[1]
    metrics = {name: np.full((depth, len(STAGES)), np.nan) for name in METRICS}
    jitter, seconds = np.zeros(depth), np.zeros((depth, len(STEPS)))
    gram = np.zeros((len(gram_layers), len(subset), len(subset)))
    block = np.zeros((len(gram_layers), k, k))
    h = x.to(device=device, dtype=dtype)
    owned = h is not x  # the run's own copy: its layers may normalize it in place, as every later layer's input
    hooks.current().start("layer")
    for layer in range(1, depth + 1):
        start = time.perf_counter()
        out = rfm_layer(
            h, y, generator, kernel=kernel, bandwidth=bandwidth, ridge=ridge, activation=activation, width=width,
            gamma=gamma, normalize_agop=normalize_agop, solve=solve, overwrite=owned,
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
        _log_layer(layer, depth, time.perf_counter() - start, metrics["nc1"][layer - 1, 0], out.jitter, device)
        hooks.current().tick()
        h, owned = out.features, True
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
            "width": width, "gamma": gamma, "normalize_agop": int(normalize_agop),
            "n_samples": n, "input_dim": d, "num_classes": k, "seed": generator.initial_seed(),
            "dtype": str(dtype), "solve": solve,
        },
    )
    for name, attrs in ATTRS.items():
        ds[name].attrs.update(attrs)
    return ds
