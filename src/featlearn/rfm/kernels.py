"""Kernels, kernel ridge regression and the closed-form AGOP of a kernel machine (collapse spec §2.2–§2.3).

Rows are samples: X is (N, d). A Mahalanobis matrix M (d, d), symmetric PSD, defines ‖v‖_M = √(vᵀMv); M = None is
the identity (Deep RFM's kernels are isotropic). L is the bandwidth (App. C: L = 2).

    Laplace   k_M(x, z) = exp(−‖x − z‖_M / L)            (App. C)
    Gaussian  k_M(x, z) = exp(−‖x − z‖²_M / (2L²))       (the authors' code; the paper gives no formula)

A kernel machine f(z) = Σ_j A[j, :] k(z, x_j) has input gradients

    ∇f_c(z) = M Σ_j Ξ(z, x_j) A[j, c] (x_j − z),   Ξ = k/(L r) (Laplace), k/L² (Gaussian),  r = ‖z − x_j‖_M,

with Ξ = 0 where r < 1e-10: the Laplace kernel is not differentiable at r = 0 (the self term at a training point), and
its gradient there is taken as 0 [authors' code].
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from featlearn.metrics import nfa
from featlearn.rfm.linalg import solve_kernel_system

KERNELS = ("laplace", "gaussian")
DISTANCE_FLOOR = 1e-10


def mahalanobis_distances(
    x: torch.Tensor, z: torch.Tensor | None = None, m: torch.Tensor | None = None
) -> torch.Tensor:
    """r_ij = ‖x_i − z_j‖_M, (n, p); z = None gives the pairwise distances within x, with an exact zero diagonal."""
    zz = x if z is None else z
    mx, mz = (x, zz) if m is None else (x @ m, zz @ m)
    sq = (mx * x).sum(1)[:, None] + (mz * zz).sum(1)[None, :] - 2 * mx @ zz.T
    if z is None:
        sq.fill_diagonal_(0)
    return sq.clamp_min_(0).sqrt_()


def _laplace(r: torch.Tensor, bandwidth: float) -> torch.Tensor:
    return torch.exp(-r / bandwidth)


def _gaussian(r: torch.Tensor, bandwidth: float) -> torch.Tensor:
    return torch.exp(-(r**2) / (2 * bandwidth**2))


PROFILES: dict[str, Callable[[torch.Tensor, float], torch.Tensor]] = {"laplace": _laplace, "gaussian": _gaussian}


def check_kernel(kernel: str, bandwidth: float) -> None:
    """Raise a ValueError naming the bad kernel name or bandwidth."""
    if kernel not in KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}; allowed: {KERNELS}")
    if not bandwidth > 0:
        raise ValueError(f"kernel bandwidth L must be > 0 (got {bandwidth})")


def laplace_kernel(
    x: torch.Tensor, z: torch.Tensor | None = None, *, bandwidth: float = 2.0, m: torch.Tensor | None = None
) -> torch.Tensor:
    """k_M(x_i, z_j) = exp(−‖x_i − z_j‖_M / L), (n, p) (App. C)."""
    return _laplace(mahalanobis_distances(x, z, m), bandwidth)


def gaussian_kernel(
    x: torch.Tensor, z: torch.Tensor | None = None, *, bandwidth: float = 2.0, m: torch.Tensor | None = None
) -> torch.Tensor:
    """k_M(x_i, z_j) = exp(−‖x_i − z_j‖²_M / (2L²)), (n, p)."""
    return _gaussian(mahalanobis_distances(x, z, m), bandwidth)


def kernel_matrix(
    kernel: str, x: torch.Tensor, z: torch.Tensor | None = None, *, bandwidth: float = 2.0,
    m: torch.Tensor | None = None,
) -> torch.Tensor:
    """k(x_i, z_j) for the named kernel, (n, p); z = None is k(X, X)."""
    check_kernel(kernel, bandwidth)
    return PROFILES[kernel](mahalanobis_distances(x, z, m), bandwidth)


def kernel_gradients(
    kernel: str, x_train: torch.Tensor, coef: torch.Tensor, z: torch.Tensor | None = None, *,
    bandwidth: float = 2.0, m: torch.Tensor | None = None,
) -> torch.Tensor:
    """J[i, c, :] = ∇f_c(z_i)ᵀ of f(z) = Σ_j A[j, :] k(z, x_j), (n, K, d); z = None evaluates at the training points.

    Batched over samples: with Ξ (n, N), J[:, c] = Ξ diag(A[:, c]) X − diag(Ξ A[:, c]) Z, then right-multiplied by M.
    """
    check_kernel(kernel, bandwidth)
    pts = x_train if z is None else z
    r = mahalanobis_distances(x_train, m=m) if z is None else mahalanobis_distances(z, x_train, m)
    k = PROFILES[kernel](r, bandwidth)
    if kernel == "laplace":
        xi = torch.where(r > DISTANCE_FLOOR, k / (bandwidth * r.clamp_min(DISTANCE_FLOOR)), 0.0)
    else:
        xi = k / bandwidth**2
    coef = coef.to(x_train.dtype)
    n_train, d = x_train.shape
    weighted = (coef[:, :, None] * x_train[:, None, :]).reshape(n_train, -1)  # row j: A[j, c] x_j for every c
    jac = (xi @ weighted).reshape(len(pts), -1, d) - (xi @ coef)[:, :, None] * pts[:, None, :]
    return jac if m is None else jac @ m


def agop(jacobians: torch.Tensor) -> torch.Tensor:
    """AGOP = (1/n) Σ_i J_iᵀ J_i from J (n, K, d), float64, (d, d) (§3.3; Algorithm 1 drops the 1/n)."""
    return nfa.ptk_feature_covariance(jacobians)


class KernelRidge:
    """Kernel ridge regression f(z) = Σ_j A[j, :] k(z, x_j), A = (K + μI)⁻¹ Y (Algorithm 1), scikit-learn style.

    kernel: "laplace" or "gaussian"; bandwidth: L; ridge: μ (0 = ridgeless interpolation, App. C); m: Mahalanobis
    matrix (d, d) or None. After ``fit``: ``x_train_`` (N, d), ``coef_`` A (N, K), ``jitter_`` (0.0 unless the
    Cholesky factorization needed one, see ``solve_kernel_system``).
    """

    def __init__(
        self, kernel: str = "laplace", bandwidth: float = 2.0, ridge: float = 0.0, m: torch.Tensor | None = None
    ) -> None:
        check_kernel(kernel, bandwidth)
        if not ridge >= 0:
            raise ValueError(f"KernelRidge: ridge μ must be >= 0 (got {ridge})")
        self.kernel, self.bandwidth, self.ridge, self.m = kernel, bandwidth, ridge, m

    def kernel_matrix(self, x: torch.Tensor, z: torch.Tensor | None = None) -> torch.Tensor:
        """k(x_i, z_j), (n, p)."""
        return kernel_matrix(self.kernel, x, z, bandwidth=self.bandwidth, m=self.m)

    def fit(self, x: torch.Tensor, y: torch.Tensor) -> KernelRidge:
        """Solve (K + μI) A = Y on X (N, d), Y (N, K)."""
        self.x_train_ = x
        coef, self.jitter_ = solve_kernel_system(self.kernel_matrix(x), y, self.ridge)
        self.coef_ = coef.to(x.dtype)
        return self

    def predict(self, z: torch.Tensor) -> torch.Tensor:
        """f(z_i) = k(z_i, X) A, (n, K)."""
        return self.kernel_matrix(z, self.x_train_) @ self.coef_

    def gradients(self, z: torch.Tensor | None = None) -> torch.Tensor:
        """∇f_c(z_i) in closed form, (n, K, d); z = None: at the training points."""
        return kernel_gradients(
            self.kernel, self.x_train_, self.coef_, z, bandwidth=self.bandwidth, m=self.m
        )

    def agop(self, z: torch.Tensor | None = None) -> torch.Tensor:
        """AGOP of the fitted machine over z (default: the training points), (d, d)."""
        return agop(self.gradients(z))

