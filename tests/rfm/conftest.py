"""Deep RFM written with full matrices, as the implementation was before it was made lean: the reference its tests
compare with (small N only).

Every quantity from its definition: distances from explicit differences (exact zeros at i = j), the kernel, A from a
general solve of (K + μI) A = Y, Ξ, per-sample gradients ∇f_c(x_i) = Σ_j Ξ_ij A[j, c] (x_j − x_i) as an (N, K, d)
array, AGOP = (1/N) Σ_i J_iᵀ J_i, and M^{1/2} of the d×d AGOP (no thin route).
"""

import math
from types import SimpleNamespace

import pytest
import torch


def _profile(kernel, r, bandwidth):
    return torch.exp(-r / bandwidth) if kernel == "laplace" else torch.exp(-(r**2) / (2 * bandwidth**2))


def kernel_matrix(kernel, x, bandwidth=2.0):
    """k(x_i, x_j), (N, N)."""
    return _profile(kernel, (x[:, None] - x[None]).norm(dim=2), bandwidth)


def coefficients(kernel, x, y, bandwidth=2.0, ridge=0.0):
    """A = (K + μI)⁻¹ Y by LU, (N, K)."""
    return torch.linalg.solve(kernel_matrix(kernel, x, bandwidth) + ridge * torch.eye(len(x), dtype=x.dtype), y)


def gradients(kernel, x, coef, bandwidth=2.0):
    """J[i, c] = ∇f_c(x_i) = Σ_j Ξ_ij A[j, c] (x_j − x_i), (N, K, d); Ξ = k/(L r), self term 0 (Laplace), or k/L²."""
    diff = x[None, :, :] - x[:, None, :]  # [i, j] = x_j − x_i
    r = diff.norm(dim=2)
    k = _profile(kernel, r, bandwidth)
    xi = torch.where(r > 0, k / (bandwidth * r), 0.0) if kernel == "laplace" else k / bandwidth**2
    return torch.einsum("ij,jc,ijd->icd", xi, coef, diff)


def agop(kernel, x, coef, bandwidth=2.0):
    """(1/N) Σ_i J_iᵀ J_i, (d, d)."""
    jac = gradients(kernel, x, coef, bandwidth)
    return torch.einsum("icd,ice->de", jac, jac) / len(x)


def layer(x, y, generator, kernel, activation, width, gamma=0.05, bandwidth=2.0):
    """One layer of Algorithm 1: (X_l, X_l M^{1/2}, Φ(X_l M^{1/2})), M the AGOP over its largest entry, the random
    features drawn from ``generator`` in the library's order (W; or Ω, then b)."""
    x = x / x.norm(dim=1, keepdim=True)
    m = agop(kernel, x, coefficients(kernel, x, y, bandwidth), bandwidth)
    lam, v = torch.linalg.eigh(m / m.max())
    x_tilde = x @ (v * lam.clamp_min(0).sqrt()) @ v.T
    if activation == "relu":
        w = torch.randn(width, x.shape[1], generator=generator, dtype=x.dtype)
        return x, x_tilde, torch.relu(x_tilde @ w.T)
    omega = torch.empty(width, x.shape[1], dtype=x.dtype).cauchy_(0.0, gamma, generator=generator)
    b = 2 * math.pi * torch.rand(width, generator=generator, dtype=x.dtype)
    return x, x_tilde, math.sqrt(2 / width) * torch.cos(x_tilde @ omega.T + b)


@pytest.fixture
def full_matrix():
    """The full-matrix reference formulas above, by name."""
    return SimpleNamespace(kernel_matrix=kernel_matrix, coefficients=coefficients, gradients=gradients, agop=agop,
                           layer=layer)
