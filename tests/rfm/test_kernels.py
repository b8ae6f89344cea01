import logging
import math

import numpy as np
import pytest
import torch
from scipy.spatial.distance import cdist

from featlearn.metrics.nfa import psd_sqrt
from featlearn.rfm.features import l1_laplace_kernel, laplace_fourier_features, relu_features
from featlearn.rfm.kernels import (
    KERNELS,
    KernelRidge,
    gaussian_kernel,
    kernel_agop,
    kernel_gradients,
    kernel_matrix,
    laplace_kernel,
    mahalanobis_distances,
)
from featlearn.rfm.linalg import max_entry, solve_kernel_system, thin_range

L = 2.0


def _data(n=12, d=5, k=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, dtype=torch.float64, generator=g)
    y = 2 * torch.nn.functional.one_hot(torch.arange(n) % k, k).double() - 1
    a = torch.randn(d, d, dtype=torch.float64, generator=g)
    return x, y, a @ a.T / d, g


def test_kernels_match_the_pairwise_formulas_with_and_without_mahalanobis():
    x, _, m, g = _data()
    z = torch.randn(4, 5, dtype=torch.float64, generator=g)
    for mm in (None, m):
        mat = np.eye(5) if mm is None else mm.numpy()
        r = cdist(x.numpy(), z.numpy(), "mahalanobis", VI=mat)
        np.testing.assert_allclose(mahalanobis_distances(x, z, mm).numpy(), r, rtol=1e-10)
        np.testing.assert_allclose(laplace_kernel(x, z, bandwidth=L, m=mm).numpy(), np.exp(-r / L), rtol=1e-10)
        np.testing.assert_allclose(gaussian_kernel(x, z, bandwidth=L, m=mm).numpy(), np.exp(-(r**2) / (2 * L**2)),
                                   rtol=1e-10)
    assert torch.all(torch.diagonal(mahalanobis_distances(x)) == 0)


@pytest.mark.parametrize("kernel", ["laplace", "gaussian"])
@pytest.mark.parametrize("ridge", [0.0, 0.1])
def test_kernel_ridge_matches_the_closed_form(kernel, ridge):
    x, y, _, g = _data(n=15)
    r = cdist(x.numpy(), x.numpy())
    k = np.exp(-r / L) if kernel == "laplace" else np.exp(-(r**2) / (2 * L**2))
    coef = np.linalg.solve(k + ridge * np.eye(15), y.numpy())
    model = KernelRidge(kernel, bandwidth=L, ridge=ridge).fit(x, y)
    np.testing.assert_allclose(model.coef_.numpy(), coef, rtol=1e-8, atol=1e-10)
    assert model.jitter_ == 0.0
    z = torch.randn(3, 5, dtype=torch.float64, generator=g)
    kz = np.exp(-cdist(z.numpy(), x.numpy()) / L) if kernel == "laplace" else \
        np.exp(-cdist(z.numpy(), x.numpy()) ** 2 / (2 * L**2))
    np.testing.assert_allclose(model.predict(z).numpy(), kz @ coef, rtol=1e-8, atol=1e-10)
    if ridge == 0.0:  # ridgeless regression interpolates (up to the 1e-8 float64 error of r_ii in k(x_i, x_i))
        torch.testing.assert_close(model.predict(x), y, rtol=0, atol=1e-6)


def test_jitter_fallback_is_logged_and_recorded(caplog):
    x = torch.zeros(3, 4, dtype=torch.float64)  # identical points: K = 11ᵀ, singular, Cholesky fails
    y = torch.tensor([[1.0], [1.0], [1.0]], dtype=torch.float64)
    with caplog.at_level(logging.WARNING, logger="featlearn.rfm.linalg"):
        model = KernelRidge("laplace").fit(x, y)
    assert model.jitter_ == pytest.approx(1e-8)  # 1e-8·tr(K)/N with tr(K)/N = 1
    assert "jitter 1e-08" in caplog.text and "N=3" in caplog.text
    assert torch.isfinite(model.coef_).all()
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert solve_kernel_system(torch.eye(3), y)[1] == 0.0
    assert caplog.text == ""
    with pytest.raises(torch.linalg.LinAlgError, match="set a ridge"):
        solve_kernel_system(torch.diag(torch.tensor([1.0, -0.5])), y[:2])


def _relative(a, b):
    return float(torch.linalg.norm(a - b) / torch.linalg.norm(b))


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("thin", [False, True])
def test_lean_kernel_solve_and_blockwise_agop_equal_the_full_matrix_formulas(kernel, thin, full_matrix):
    """K built in one buffer, the in-place Cholesky solve and the AGOP accumulated over blocks of 5 rows (uneven: 23 =
    4·5 + 3; every self pair i = j off its block's main diagonal) against the full-matrix definitions (conftest), to
    1e-10 relative. thin: N < d, the same machine in the coordinates C of X's row space (X = C Qᵀ), whose AGOP is
    Qᵀ M Q."""
    n, d = (20, 50) if thin else (23, 6)
    x, y, _, _ = _data(n=n, d=d)
    x = torch.nn.functional.normalize(x, dim=1)  # Deep RFM's inputs: on the sphere, distances up to 2
    coords, q = thin_range(x) if thin else (x, None)
    k = kernel_matrix(kernel, coords, bandwidth=L)
    assert _relative(k, full_matrix.kernel_matrix(kernel, x, L)) < 1e-12
    coef, jitter = solve_kernel_system(k, y, overwrite=True)
    expected_coef = full_matrix.coefficients(kernel, x, y, L)
    assert jitter == 0.0 and _relative(coef, expected_coef) < 1e-10
    grads = kernel_gradients(kernel, coords, coef, bandwidth=L, block_rows=5)
    m = kernel_agop(kernel, coords, coef, bandwidth=L, block_rows=5)
    # blocks of one row or of five: the same AGOP up to rounding
    torch.testing.assert_close(kernel_agop(kernel, coords, coef, bandwidth=L, block_rows=1), m, rtol=1e-12, atol=0)
    if thin:
        grads, m = grads @ q.T, q @ m @ q.T
    assert _relative(grads, full_matrix.gradients(kernel, x, expected_coef, L)) < 1e-10
    assert _relative(m, full_matrix.agop(kernel, x, expected_coef, L)) < 1e-10


def test_solve_overwrite_uses_k_as_its_workspace_and_the_default_leaves_k_alone():
    x, y, _, _ = _data(n=10)
    k = laplace_kernel(x, bandwidth=L)
    before = k.clone()
    a, _ = solve_kernel_system(k, y, 0.1)
    assert torch.equal(k, before)
    a_overwrite, _ = solve_kernel_system(k, y, 0.1, overwrite=True)
    assert torch.equal(a_overwrite, a)
    torch.testing.assert_close(k, before + 0.1 * torch.eye(10, dtype=torch.float64), rtol=0, atol=0)


def _reference_predictor(kernel, x, coef, m):
    """f(z) = Σ_j A[j] k(z, x_j), written directly per pair so autograd can differentiate it."""
    def f(z):
        diff = z[None] - x
        sq = ((diff @ m) * diff).sum(1)
        k = torch.exp(-sq.sqrt() / L) if kernel == "laplace" else torch.exp(-sq / (2 * L**2))
        return k @ coef
    return f


@pytest.mark.parametrize("kernel", ["laplace", "gaussian"])
@pytest.mark.parametrize("mahalanobis", [False, True])
def test_closed_form_gradients_and_agop_match_autograd(kernel, mahalanobis):
    x, y, m, g = _data()
    m_used = m if mahalanobis else None
    model = KernelRidge(kernel, bandwidth=L, m=m_used).fit(x, y)
    mm = m if mahalanobis else torch.eye(5, dtype=torch.float64)
    z = torch.randn(7, 5, dtype=torch.float64, generator=g)
    expected = torch.func.vmap(torch.func.jacrev(_reference_predictor(kernel, x, model.coef_, mm)))(z)
    torch.testing.assert_close(model.gradients(z), expected, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(model.agop(z), torch.einsum("nkd,nke->de", expected, expected) / 7)
    # At a training point the Laplace kernel's self term is not differentiable; its gradient is taken as 0, which is
    # the gradient of the predictor without that term.
    at_train = torch.stack([
        torch.func.jacrev(_reference_predictor(kernel, x[torch.arange(12) != i], model.coef_[torch.arange(12) != i],
                                               mm))(x[i])
        for i in range(12)
    ])
    torch.testing.assert_close(model.gradients(), at_train, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(kernel_gradients(kernel, x, model.coef_, x, bandwidth=L, m=m_used), at_train,
                               rtol=1e-6, atol=1e-8)


def test_psd_sqrt_squares_back_and_clips_negative_eigenvalues():
    _, _, m, g = _data()
    root = psd_sqrt(m)
    torch.testing.assert_close(root @ root, m)
    torch.testing.assert_close(root, root.T)
    o, _ = torch.linalg.qr(torch.randn(4, 4, dtype=torch.float64, generator=g))
    lam = torch.tensor([2.0, 1.0, 0.0, -1.0], dtype=torch.float64)
    clipped = psd_sqrt((o * lam) @ o.T)
    torch.testing.assert_close(clipped @ clipped, (o * lam.clamp_min(0)) @ o.T)


@pytest.mark.parametrize("kernel", ["laplace", "gaussian"])
def test_thin_range_agop_and_sqrt_match_the_dense_ones(kernel):
    x, y, _, _ = _data(n=20, d=50)
    model = KernelRidge(kernel, bandwidth=L).fit(x, y)
    m = model.agop()  # dense (50, 50), rank ≤ 20
    coords, q = thin_range(x)
    torch.testing.assert_close(coords @ q.T, x)
    torch.testing.assert_close(q.T @ q, torch.eye(20, dtype=torch.float64))
    m_range = KernelRidge(kernel, bandwidth=L).fit(coords, y).agop()  # (20, 20), the same machine in coordinates
    torch.testing.assert_close(q @ m_range @ q.T, m)
    assert max_entry(m_range, q) == pytest.approx(float(m.max()), rel=1e-12)
    assert max_entry(m) == pytest.approx(float(m.max()), rel=1e-12)
    scale = float(m.max())
    torch.testing.assert_close(q @ psd_sqrt(m_range) @ q.T, psd_sqrt(m), rtol=0, atol=1e-6 * scale**0.5)
    torch.testing.assert_close(coords @ psd_sqrt(m_range) @ q.T, x @ psd_sqrt(m), rtol=0, atol=1e-7 * scale**0.5)


def test_random_fourier_features_approximate_the_l1_laplace_kernel_better_as_d_grows():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(40, 5, dtype=torch.float64, generator=g)
    gamma = 0.3
    exact = l1_laplace_kernel(x, x, gamma)
    assert 0.01 < float(exact.min()) < 0.5  # the test spans a range of kernel values, not only ≈1
    errors = []
    for width in (16, 256, 4096):
        per_seed = []
        for seed in range(3):
            phi = laplace_fourier_features(x, width, gamma, torch.Generator().manual_seed(seed))
            per_seed.append(float((phi @ phi.T - exact).abs().mean()))
        errors.append(sum(per_seed) / 3)
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.02
    assert errors[0] / errors[2] > 8  # about the √(4096/16) = 16 of Monte-Carlo error


def test_relu_features_match_the_arc_cosine_kernel_of_prop_a1():
    """E[ReLU(wᵀx) ReLU(wᵀy)] = (1/2π)[√(1 − r²) + r(π − arccos r)] for unit x, y, r = xᵀy, w ~ N(0, I) (App. B.3)."""
    rs = torch.tensor([-0.6, 0.0, 0.5, 0.95], dtype=torch.float64)
    x = torch.stack([torch.ones_like(rs), torch.zeros_like(rs)], 1)
    y = torch.stack([rs, (1 - rs**2).sqrt()], 1)
    phi = relu_features(torch.cat([x, y]), 40000, torch.Generator().manual_seed(0))
    estimate = (phi[:4] * phi[4:]).mean(1)
    exact = ((1 - rs**2).sqrt() + rs * (math.pi - torch.arccos(rs))) / (2 * math.pi)
    torch.testing.assert_close(estimate, exact, rtol=0, atol=0.01)


def test_errors_name_the_parameter():
    with pytest.raises(ValueError, match="allowed"):
        KernelRidge("cauchy")
    with pytest.raises(ValueError, match="bandwidth"):
        KernelRidge("laplace", bandwidth=0.0)
    with pytest.raises(ValueError, match="ridge"):
        KernelRidge("laplace", ridge=-1.0)
