"""Kernels, kernel ridge regression and the closed-form AGOP of a kernel machine (docs/figures/collapse.md).

Rows are samples: X is (N, d). A Mahalanobis matrix M (d, d), symmetric PSD, defines ‖v‖_M = √(vᵀMv); M = None is
the identity (Deep RFM's kernels are isotropic). L is the bandwidth (App. C: L = 2).

    Laplace   k_M(x, z) = exp(−‖x − z‖_M / L)            (App. C)
    Gaussian  k_M(x, z) = exp(−‖x − z‖²_M / (2L²))       (the authors' code; the paper gives no formula)

A kernel machine f(z) = Σ_j A[j, :] k(z, x_j) has input gradients

    ∇f_c(z) = M Σ_j Ξ(z, x_j) A[j, c] (x_j − z),   Ξ = k/(L r) (Laplace), k/L² (Gaussian),  r = ‖z − x_j‖_M,

with Ξ = 0 where r < 1e-10: the Laplace kernel is not differentiable at r = 0 (the self term at a training point), and
its gradient there is taken as 0 [authors' code].

Memory: Deep RFM at the paper's N = 50,000 must fit one GPU, where an N×N float64 matrix is 20 GB. Every (n, p)
kernel matrix is therefore built in one buffer by in-place steps, and gradients and the AGOP are computed over blocks
of evaluation points, never with an N×N Ξ. Every tensor is created on its inputs' device.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import torch

from featlearn.rfm.linalg import solve_kernel_system

KERNELS = ("laplace", "gaussian")
DISTANCE_FLOOR = 1e-10
# Evaluation points per gradient block. A block's temporaries (distances, Ξ, Ξ·A[:, c]: three (b, N) float64) grow
# like N, never N²: 0.8 GB each at N = 50,000 (an N×N buffer is 20 GB), and (b, N) @ (N, d) products this tall run at
# full matmul speed. Below 4·2048 points a block is N/4 rows, so the three stay under one N×N buffer at small N too.
GRADIENT_BLOCK_ROWS = 2048


def _distances_(prod: torch.Tensor, sq_rows: torch.Tensor, sq_cols: torch.Tensor,
                self_diagonal: int | None) -> torch.Tensor:
    """Turn cross products ⟨x_i, z_j⟩_M (n, p) into r_ij = √(‖x_i‖²_M + ‖z_j‖²_M − 2⟨x_i, z_j⟩_M) in place, clamped
    at 0, with exact zeros on the diagonal at offset ``self_diagonal`` (the pairs of a point with itself)."""
    r = prod.mul_(-2).add_(sq_rows[:, None]).add_(sq_cols[None, :])
    if self_diagonal is not None:
        r.diagonal(self_diagonal).zero_()
    return r.clamp_min_(0).sqrt_()


def mahalanobis_distances(
    x: torch.Tensor, z: torch.Tensor | None = None, m: torch.Tensor | None = None
) -> torch.Tensor:
    """r_ij = ‖x_i − z_j‖_M in one (n, p) buffer; z = None gives the pairwise distances within x, with an exact zero
    diagonal."""
    zz = x if z is None else z
    mx = x if m is None else x @ m
    mz = zz if m is None else (mx if z is None else zz @ m)
    # the squared norms first: their (n, d) products are gone before the (n, p) buffer arrives
    sq_rows, sq_cols = (mx * x).sum(1), (mz * zz).sum(1)
    return _distances_(mx @ zz.T, sq_rows, sq_cols, 0 if z is None else None)


def _laplace_(r: torch.Tensor, bandwidth: float) -> torch.Tensor:
    return r.div_(-bandwidth).exp_()


def _gaussian_(r: torch.Tensor, bandwidth: float) -> torch.Tensor:
    return r.square_().div_(-2 * bandwidth**2).exp_()


# Kernel profiles k(r), in place: they overwrite the distances r with the kernel values.
PROFILES: dict[str, Callable[[torch.Tensor, float], torch.Tensor]] = {"laplace": _laplace_, "gaussian": _gaussian_}


def _xi_(kernel: str, r: torch.Tensor, bandwidth: float) -> torch.Tensor:
    """Ξ = k/(L r), 0 where r ≤ 1e-10 (Laplace), or k/L² (Gaussian), from distances r, which it overwrites."""
    if kernel == "gaussian":
        return _gaussian_(r, bandwidth).div_(bandwidth**2)
    self_terms = r <= DISTANCE_FLOOR
    k = r.div(-bandwidth).exp_()
    return k.div_(r.mul_(bandwidth)).masked_fill_(self_terms, 0.0)


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
    return kernel_matrix("laplace", x, z, bandwidth=bandwidth, m=m)


def gaussian_kernel(
    x: torch.Tensor, z: torch.Tensor | None = None, *, bandwidth: float = 2.0, m: torch.Tensor | None = None
) -> torch.Tensor:
    """k_M(x_i, z_j) = exp(−‖x_i − z_j‖²_M / (2L²)), (n, p)."""
    return kernel_matrix("gaussian", x, z, bandwidth=bandwidth, m=m)


def kernel_matrix(
    kernel: str, x: torch.Tensor, z: torch.Tensor | None = None, *, bandwidth: float = 2.0,
    m: torch.Tensor | None = None,
) -> torch.Tensor:
    """k(x_i, z_j) for the named kernel, (n, p); z = None is k(X, X). One (n, p) buffer: the distances' matmul output
    becomes the kernel in place."""
    check_kernel(kernel, bandwidth)
    return PROFILES[kernel](mahalanobis_distances(x, z, m), bandwidth)


def kernel_matrix_float64(
    kernel: str, x: torch.Tensor, *, bandwidth: float = 2.0, block_rows: int = GRADIENT_BLOCK_ROWS
) -> torch.Tensor:
    """k(X, X) in one float64 (N, N) buffer, the one an in-place solve factorizes. A float64 X takes ``kernel_matrix``'s
    single matmul (the same K, bit for bit); any other dtype fills the buffer ``block_rows`` rows at a time, each block
    computed in X's dtype, so no second N×N matrix (X's dtype, then its float64 copy) is ever alive."""
    check_kernel(kernel, bandwidth)
    if x.dtype == torch.float64:
        return kernel_matrix(kernel, x, bandwidth=bandwidth)
    out = torch.empty(len(x), len(x), dtype=torch.float64, device=x.device)
    sq = (x * x).sum(1)
    for start in range(0, len(x), block_rows):
        rows = x[start : start + block_rows]
        r = _distances_(rows @ x.T, sq[start : start + block_rows], sq, start)
        out[start : start + len(rows)].copy_(PROFILES[kernel](r, bandwidth))
    return out


def _class_gradients(
    xi: torch.Tensor, zb: torch.Tensor, x_train: torch.Tensor, coef: torch.Tensor, m: torch.Tensor | None
) -> Iterator[torch.Tensor]:
    """J_B[:, c, :] = (Ξ_B ⊙ A[:, c]) X − (Ξ_B A[:, c]) ⊙ z_B, right-multiplied by M, one class c at a time, (b, d)."""
    for a in coef.T:
        grad = (xi * a).matmul(x_train) - (xi @ a)[:, None] * zb
        yield grad if m is None else grad @ m


def _gradient_blocks(
    kernel: str, x_train: torch.Tensor, coef: torch.Tensor, z: torch.Tensor | None, bandwidth: float,
    m: torch.Tensor | None, block_rows: int,
) -> Iterator[Iterator[torch.Tensor]]:
    """Per block of b consecutive evaluation points (z, or the training points when z is None), the gradients of
    every class, (b, d) each (``_class_gradients``), from the block's Ξ_B (b, N)."""
    pts = x_train if z is None else z
    coef = coef.to(x_train.dtype)
    sq_train = ((x_train if m is None else x_train @ m) * x_train).sum(1)
    rows = max(1, min(block_rows, len(pts) // 4))
    for start in range(0, len(pts), rows):
        zb = pts[start : start + rows]
        zbm = zb if m is None else zb @ m
        # at the training points, pair (i, start + i) is point i with itself: distance exactly 0
        r = _distances_(zbm @ x_train.T, (zbm * zb).sum(1), sq_train, start if z is None else None)
        xi = _xi_(kernel, r, bandwidth)
        del r  # the Laplace Ξ is a new buffer: free the distances before the per-class products
        yield _class_gradients(xi, zb, x_train, coef, m)


def kernel_gradients(
    kernel: str, x_train: torch.Tensor, coef: torch.Tensor, z: torch.Tensor | None = None, *,
    bandwidth: float = 2.0, m: torch.Tensor | None = None, block_rows: int = GRADIENT_BLOCK_ROWS,
) -> torch.Tensor:
    """J[i, c, :] = ∇f_c(z_i)ᵀ of f(z) = Σ_j A[j, :] k(z, x_j), (n, K, d); z = None evaluates at the training points.

    Computed over blocks of ``block_rows`` points, so the working memory beyond the (n, K, d) result is (b, N).
    """
    check_kernel(kernel, bandwidth)
    blocks = _gradient_blocks(kernel, x_train, coef, z, bandwidth, m, block_rows)
    return torch.cat([torch.stack(list(grads), dim=1) for grads in blocks])


def kernel_agop(
    kernel: str, x_train: torch.Tensor, coef: torch.Tensor, z: torch.Tensor | None = None, *,
    bandwidth: float = 2.0, m: torch.Tensor | None = None, block_rows: int = GRADIENT_BLOCK_ROWS,
) -> torch.Tensor:
    """AGOP = (1/n) Σ_i J_iᵀ J_i of f over z (default: the training points), float64, (d, d) (§3.3, Algorithm 1's
    M_l, which drops the 1/n).

    Accumulated block by block of ``block_rows`` points: no N×N matrix and no (N, K, d) Jacobian is ever formed.
    """
    check_kernel(kernel, bandwidth)
    d = x_train.shape[1]
    out = torch.zeros(d, d, dtype=torch.float64, device=x_train.device)
    for grads in _gradient_blocks(kernel, x_train, coef, z, bandwidth, m, block_rows):
        for grad in grads:
            grad = grad.to(torch.float64)
            out.addmm_(grad.T, grad)
    return out.div_(len(x_train) if z is None else len(z))


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
        """Solve (K + μI) A = Y on X (N, d), Y (N, K); K is built for the solve and consumed by it."""
        self.x_train_ = x
        coef, self.jitter_ = solve_kernel_system(self.kernel_matrix(x), y, self.ridge, overwrite=True)
        self.coef_ = coef.to(x.dtype)
        return self

    def predict(self, z: torch.Tensor) -> torch.Tensor:
        """f(z_i) = k(z_i, X) A, (n, K)."""
        return self.kernel_matrix(z, self.x_train_) @ self.coef_

    def gradients(self, z: torch.Tensor | None = None) -> torch.Tensor:
        """∇f_c(z_i) in closed form, (n, K, d); z = None: at the training points."""
        return kernel_gradients(self.kernel, self.x_train_, self.coef_, z, bandwidth=self.bandwidth, m=self.m)

    def agop(self, z: torch.Tensor | None = None) -> torch.Tensor:
        """AGOP of the fitted machine over z (default: the training points), (d, d)."""
        return kernel_agop(self.kernel, self.x_train_, self.coef_, z, bandwidth=self.bandwidth, m=self.m)
