"""One layer of Deep Recursive Feature Machines (collapse paper Alg. 1; docs/figures/collapse.md).

Rows are samples. Layer l (1-based), on X_l (N, d_l):
  1. normalize every sample, x_i ← x_i / ‖x_i‖                                   stage "X"
  2. kernel ridge(less) regression A_l = (k(X_l, X_l) + μI)⁻¹ Y                  (isotropic kernel, Y ∈ {±1}^{N×K})
  3. M_l = AGOP of f_l at the training points, closed form, divided by its largest entry (authors' code)
  4. X̃_l = X_l M_l^{1/2}                                                          stage "MX"
  5. X_{l+1} = Φ_l(X̃_l), fresh random features (ReLU, D = 1024, or cos RFF, D = 4096)   stage "PhiMX"
When N < d_l, steps 2–4 run in the N-dimensional row space of X_l (``thin_range``): same result, N×N instead of d×d.
The layer checks that its device has ``memory.layer_bytes`` left before it allocates; ``featlearn.rfm.deep_rfm``
stacks layers into a run.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from featlearn import hooks
from featlearn.metrics.nfa import psd_sqrt
from featlearn.rfm.features import laplace_fourier_features, relu_features
from featlearn.rfm.kernels import kernel_agop, kernel_matrix, kernel_matrix_float64
from featlearn.rfm.linalg import max_entry, solve_kernel_system, solve_kernel_system_in_place, thin_range
from featlearn.rfm.memory import SOLVES, layer_bytes

ACTIVATIONS = ("relu", "cos")
DEFAULT_WIDTH = {"relu": 1024, "cos": 4096}  # App. C
STEPS = ("kernel", "solve", "agop", "sqrt", "features")  # the store's ``phase`` dimension (``step`` is optimizer steps)


def pm_one_hot(labels: torch.Tensor, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Y[i, c] = +1 if sample i is in class c, else −1, (N, K) (App. C)."""
    k = int(labels.max()) + 1
    return 2 * torch.nn.functional.one_hot(labels, k).to(dtype) - 1


def check_activation(activation: str, where: str) -> None:
    """Raise a ValueError naming the allowed activations, before anything is allocated."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"{where}: unknown activation {activation!r}; allowed: {ACTIVATIONS}")


@dataclass
class RFMLayer:
    """One Deep RFM layer: its three stages (N, ·), the solve's jitter and the seconds spent per step (``STEPS``), and
    what maps new points as it mapped X: the kernel machine's coefficients A (N, K), M^{1/2} in the coordinates the
    layer solved in (``sqrt_m``) and, on the thin route, their orthonormal basis Q (``basis``; None otherwise)."""

    x: torch.Tensor
    x_tilde: torch.Tensor
    features: torch.Tensor
    jitter: float
    seconds: dict[str, float]
    coef: torch.Tensor
    sqrt_m: torch.Tensor
    basis: torch.Tensor | None


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
    check_activation(activation, "rfm_layer")
    width = width or DEFAULT_WIDTH[activation]
    need = layer_bytes(len(x), x.shape[1], width, solve=solve, dtype=x.dtype, overwrite=overwrite)
    hooks.current().check_fits(
        need, x.device, f"a Deep RFM layer at N = {len(x):,} (d = {x.shape[1]:,}, width {width:,}; {SOLVES[solve]})",
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
        sqrt_m = psd_sqrt(m)
        x_tilde = coords.to(torch.float64) @ sqrt_m
        x_tilde = (x_tilde if q is None else x_tilde @ q.to(torch.float64).T).to(x.dtype)
    with _timed(seconds, "features", x.device):
        if activation == "relu":
            features = relu_features(x_tilde, width, generator)
        else:
            features = laplace_fourier_features(x_tilde, width, gamma, generator)
    return RFMLayer(x, x_tilde, features, jitter, seconds, coef, sqrt_m, q)
