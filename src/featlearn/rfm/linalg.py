"""Linear algebra of Deep RFM (collapse spec §2.2–§2.3): the kernel system solve and PSD square roots.

Linear systems are solved by Cholesky factorization, never by forming an inverse. Square roots use eigh in float64
with negative eigenvalues clipped to 0 (the authors' ``matrix_sqrt``).
"""

from __future__ import annotations

import logging

import torch

log = logging.getLogger(__name__)

JITTER_START = 1e-8  # first jitter, in units of tr(K)/N (spec §2.3)
JITTER_MAX = 1e-2  # beyond this the "ridgeless" solve is a ridge solve in disguise: stop and say so


def solve_kernel_system(
    k: torch.Tensor, y: torch.Tensor, ridge: float = 0.0, *, overwrite: bool = False
) -> tuple[torch.Tensor, float]:
    """A = (K + μI)⁻¹ Y by Cholesky in float64, (N, K) (Algorithm 1, "learn coefficients"); returns (A, jitter).

    When K + μI is not numerically positive definite, jitter ε·I is added, starting at ε = 1e-8·tr(K)/N and growing
    10× until the factorization succeeds; the final ε is logged as a warning and returned (0.0 when none was needed).

    μ and ε go onto the diagonal in place, never through an N×N identity. ``overwrite=True`` (for a float64 K the caller
    drops afterwards) uses K itself as that workspace, so the solve holds two N×N buffers, K and its Cholesky factor,
    not three (Deep RFM at N = 50,000: 40 GB, not 60); K's diagonal is left as K_ii + μ + ε. The default works on a
    copy and leaves K as it was.
    """
    scale = float(torch.diagonal(k).to(torch.float64).mean())  # tr(K)/N
    a = k.to(torch.float64, copy=not overwrite)
    diagonal = a.diagonal()
    shifted = diagonal + ridge  # K_ii + μ, (N,)
    diagonal.copy_(shifted)
    jitter = 0.0
    chol, info = torch.linalg.cholesky_ex(a)
    while info != 0:
        del chol  # the failed factor goes before the next one is made: never three N×N buffers
        jitter = JITTER_START * scale if jitter == 0.0 else 10 * jitter
        if jitter > JITTER_MAX * scale:
            raise torch.linalg.LinAlgError(
                f"solve_kernel_system: K + μI (N={len(k)}, μ={ridge}) is not positive definite even with jitter "
                f"{JITTER_MAX:g}·tr(K)/N; set a ridge μ > 0 or check the kernel matrix for NaN/duplicate rows"
            )
        diagonal.copy_(shifted + jitter)
        chol, info = torch.linalg.cholesky_ex(a)
    if jitter:
        log.warning(
            "solve_kernel_system: Cholesky of K + μI failed (N=%d, μ=%g); added jitter %.3g·I (%.0e·tr(K)/N)",
            len(k), ridge, jitter, jitter / scale,
        )
    del a, diagonal  # a copy (overwrite=False) is freed before the solve
    # two triangular solves rather than cholesky_solve, which works on a copy of the factor (a third N×N buffer)
    rhs = y.to(device=chol.device, dtype=torch.float64)
    z = torch.linalg.solve_triangular(chol, rhs, upper=False)  # L Z = Y
    return torch.linalg.solve_triangular(chol.mT, z, upper=True), jitter  # Lᵀ A = Z


def thin_range(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(C, Q) with X = C Qᵀ: thin QR Xᵀ = QR, Q (d, N) orthonormal columns, coordinates C = Rᵀ (N, N).

    For N < d every AGOP of a kernel machine on X lives in span(Q) (its gradients are combinations of the rows of X),
    so M = Q M̃ Qᵀ with M̃ (N, N) computed from C, M^{1/2} = Q M̃^{1/2} Qᵀ and X M^{1/2} = C M̃^{1/2} Qᵀ (spec §2.3.4).
    """
    q, r = torch.linalg.qr(x.T)
    return r.T, q


def max_entry(m: torch.Tensor, q: torch.Tensor | None = None) -> float:
    """max_ab M_ab of M = Q m Qᵀ (or of m when q is None), m symmetric PSD.

    For a PSD matrix |M_ab| ≤ √(M_aa M_bb), so the largest entry is the largest diagonal entry: O(d N²) instead of
    forming the d×d matrix.
    """
    diag = torch.diagonal(m) if q is None else ((q @ m) * q).sum(1)
    return float(diag.max())
