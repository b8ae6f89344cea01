"""Linear algebra of Deep RFM (docs/figures/collapse.md, Deep RFM): the kernel system solve and PSD square roots.

Linear systems are solved by Cholesky factorization, never by forming an inverse. Square roots use eigh in float64
with negative eigenvalues clipped to 0 (the authors' ``matrix_sqrt``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import torch

log = logging.getLogger(__name__)

JITTER_START = 1e-8  # first jitter, in units of tr(K)/N (docs/figures/collapse.md)
JITTER_MAX = 1e-2  # beyond this the "ridgeless" solve is a ridge solve in disguise: stop and say so
MIRROR_BLOCK_ROWS = 256  # columns per block of ``mirror_lower_``: a strided copy of (N − b, b) at a time


def _next_jitter(jitter: float, scale: float, n: int, ridge: float) -> float:
    """The jitter after a failed factorization with ``jitter``: 1e-8·``scale`` (tr(K)/N), then 10× more each time;
    a LinAlgError past 1e-2·``scale``. Both solves try the same jitters in the same order."""
    jitter = JITTER_START * scale if jitter == 0.0 else 10 * jitter
    if jitter > JITTER_MAX * scale:
        raise torch.linalg.LinAlgError(
            f"solve_kernel_system: K + μI (N={n}, μ={ridge}) is not positive definite even with jitter "
            f"{JITTER_MAX:g}·tr(K)/N; set a ridge μ > 0 or check the kernel matrix for NaN/duplicate rows"
        )
    return jitter


def _log_jitter(jitter: float, scale: float, n: int, ridge: float) -> None:
    if jitter:
        log.warning(
            "solve_kernel_system: Cholesky of K + μI failed (N=%d, μ=%g); added jitter %.3g·I (%.0e·tr(K)/N)",
            n, ridge, jitter, jitter / scale,
        )


def _triangular_solves(chol: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """A from L Lᵀ A = Y, (N, K): two triangular solves rather than cholesky_solve, which works on a copy of the factor
    (one N×N buffer more). L column-major and Lᵀ, its row-major view, are both read in place."""
    rhs = y.to(device=chol.device, dtype=torch.float64)
    z = torch.linalg.solve_triangular(chol, rhs, upper=False)  # L Z = Y
    return torch.linalg.solve_triangular(chol.mT, z, upper=True)  # Lᵀ A = Z


def solve_kernel_system(
    k: torch.Tensor, y: torch.Tensor, ridge: float = 0.0, *, overwrite: bool = False
) -> tuple[torch.Tensor, float]:
    """A = (K + μI)⁻¹ Y by Cholesky in float64, (N, K) (Algorithm 1, "learn coefficients"); returns (A, jitter).

    When K + μI is not numerically positive definite, jitter ε·I is added, starting at ε = 1e-8·tr(K)/N and growing
    10× until the factorization succeeds; the final ε is logged as a warning and returned (0.0 when none was needed).

    μ and ε go onto the diagonal in place, never through an N×N identity. ``overwrite=True`` (for a float64 K the caller
    drops afterwards) uses K itself as that workspace, so the solve holds two N×N buffers, K and its Cholesky factor,
    not three; K's diagonal is left as K_ii + μ + ε. The default works on a copy and leaves K as it was. A retry only
    refactors: K is still there. ``solve_kernel_system_in_place`` needs one buffer and gives the same A bit for bit.
    """
    scale = float(torch.diagonal(k).to(torch.float64).mean())  # tr(K)/N
    a = k.to(torch.float64, copy=not overwrite)
    diagonal = a.diagonal()
    shifted = diagonal + ridge  # K_ii + μ, (N,)
    diagonal.copy_(shifted)
    jitter = 0.0
    chol, info = torch.linalg.cholesky_ex(a)  # reads K's lower triangle into a new column-major buffer
    while info != 0:
        del chol  # the failed factor goes before the next one is made: never three N×N buffers
        jitter = _next_jitter(jitter, scale, len(k), ridge)
        diagonal.copy_(shifted + jitter)
        chol, info = torch.linalg.cholesky_ex(a)
    _log_jitter(jitter, scale, len(k), ridge)
    del a, diagonal  # a copy (overwrite=False) is freed before the solve
    return _triangular_solves(chol, y), jitter


def mirror_lower_(a: torch.Tensor, block_rows: int = MIRROR_BLOCK_ROWS) -> torch.Tensor:
    """Copy the strict lower triangle of the square ``a`` onto its upper one, in place, ``block_rows`` columns at a
    time (temporaries of (b, b)); returns ``a``, now exactly symmetric.

    A kernel matrix built from ‖x‖² + ‖z‖² − 2⟨x, z⟩ is symmetric only to rounding. Cholesky reads one triangle: after
    this, the column-major view ``a.mT`` has K's lower triangle as its lower one, the triangle ``cholesky_ex(a)`` reads
    from the row-major ``a``, so the in-place factor is the two-buffer one bit for bit."""
    n = len(a)
    for start in range(0, n, block_rows):
        stop = min(start + block_rows, n)
        a[start:stop, stop:].copy_(a[stop:, start:stop].mT)
        block = a[start:stop, start:stop]
        upper = torch.ones(stop - start, stop - start, dtype=torch.bool, device=a.device).triu_(1)
        block.copy_(torch.where(upper, block.mT, block))
    return a


def solve_kernel_system_in_place(
    build: Callable[[], torch.Tensor], y: torch.Tensor, ridge: float = 0.0
) -> tuple[torch.Tensor, float]:
    """A = (K + μI)⁻¹ Y as ``solve_kernel_system`` computes it, bit for bit, with one N×N float64 buffer: K = build()
    (row-major float64, made for this solve) is factorized in place and becomes L.

    Half the memory of the two-buffer solve (Deep RFM at N = 50,000: 20 GB, not 40), for one price: a failed
    factorization has overwritten K, so each jitter retry calls ``build`` again (after the failed buffer is freed).
    ``cholesky_ex`` writes L into its ``out``: given the column-major view of K's own storage, it factorizes there.
    """
    a = build()
    n = len(a)
    scale = float(torch.diagonal(a).mean())  # tr(K)/N
    shifted = a.diagonal() + ridge  # K_ii + μ, (N,)
    info = torch.empty((), dtype=torch.int32, device=a.device)
    jitter = 0.0
    while True:
        a.diagonal().copy_(shifted + jitter)
        chol = mirror_lower_(a).mT
        del a  # the factor's view is the only reference: a failed one is freed before K is built again
        torch.linalg.cholesky_ex(chol, out=(chol, info))
        if info == 0:
            break
        del chol
        jitter = _next_jitter(jitter, scale, n, ridge)
        a = build()  # the failed attempt overwrote K
    _log_jitter(jitter, scale, n, ridge)
    return _triangular_solves(chol, y), jitter


def thin_range(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(C, Q) with X = C Qᵀ: thin QR Xᵀ = QR, Q (d, N) orthonormal columns, coordinates C = Rᵀ (N, N).

    For N < d every AGOP of a kernel machine on X lives in span(Q) (its gradients are combinations of the rows of X),
    so M = Q M̃ Qᵀ with M̃ (N, N) computed from C, M^{1/2} = Q M̃^{1/2} Qᵀ and X M^{1/2} = C M̃^{1/2} Qᵀ (thin QR).
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
