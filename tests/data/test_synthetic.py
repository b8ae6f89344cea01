import pytest
import torch

from featlearn.data import synthetic as syn


def test_chain_monomial_egop_matches_monte_carlo():
    g = torch.Generator().manual_seed(0)
    sigma = syn.spectral_covariance(8, 1.0, g)
    x = syn.gaussian_inputs(400_000, sigma, g)
    grads = x @ syn.chain_adjacency(5, 8)  # ∇y = A x, A symmetric
    y = syn.chain_monomial(x, 5)
    mc = grads.T @ grads / len(x) / y.var()
    torch.testing.assert_close(syn.chain_monomial_egop(5, sigma), mc, atol=0.01, rtol=0.03)


def test_chain_monomial_gradient_is_adjacency_times_x():
    x = torch.randn(3, 6, dtype=torch.float64, requires_grad=True)
    (grad,) = torch.autograd.grad(syn.chain_monomial(x, 4).sum(), x)
    torch.testing.assert_close(grad, x.detach() @ syn.chain_adjacency(4, 6))


def test_isotropic_r5_egop_has_the_paper_spectrum():
    egop = syn.chain_monomial_egop(5, torch.eye(32, dtype=torch.float64)) * 5  # undo Var(y) = r
    eig = torch.linalg.eigvalsh(egop)[-5:]
    torch.testing.assert_close(eig, torch.tensor([0.382, 0.382, 2.618, 2.618, 4.0], dtype=torch.float64),
                               atol=1e-3, rtol=0)


def test_spectral_covariance_has_the_requested_eigenvalues():
    sigma = syn.spectral_covariance(16, 2.0, torch.Generator().manual_seed(0))
    lam = 1 / (1 + torch.arange(1, 17, dtype=torch.float64) ** 2)
    torch.testing.assert_close(torch.linalg.eigvalsh(sigma).flip(0), lam)
    assert not torch.allclose(sigma, torch.diag(torch.diagonal(sigma)))  # a random basis, not the axes


def test_regression_task_is_a_pure_function_of_its_parameters():
    a = syn.make_dataset({"task": "chain_monomial", "r": 5, "d": 8, "n": 20, "n_test": 10, "alpha": None,
                          "seed": 3})
    b = syn.make_dataset({"task": "chain_monomial", "r": 5, "d": 8, "n": 20, "n_test": 10, "alpha": None,
                          "seed": 3})
    assert torch.equal(a["x"], b["x"]) and torch.equal(a["y_test"], b["y_test"])
    assert abs(float(a["y"].std()) - 1) < 1e-12
    assert a["x_test"].shape == (10, 8)


def test_alignment_reversing_second_block_inverts_the_first():
    d = syn.alignment_reversing(n=64, d=32, gamma=0.25, seed=0, eps2=0.0)
    x, y = d["x"], d["y"]
    assert x.shape == (64, 32) and int((y > 0.5).sum()) == 16
    x1, x2 = x[:16], x[16:]
    s1, u1 = torch.linalg.eigh(x1.T @ x1)
    keep = s1 > 1e-10 * s1.max()
    u, s = u1[:, keep], s1[keep]
    # On range(X1), X2ᵀX2 = (X1ᵀX1)^(-2).
    torch.testing.assert_close(u.T @ x2.T @ x2 @ u, torch.diag(s ** -2.0), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a GPU"))])
def test_a_haar_draw_is_the_same_wherever_its_qr_runs(device):
    """The Gaussian comes from the (CPU) generator either way; only the QR moves: the old all-CPU draw, to 1e-10."""
    ref_gen, gen = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    for _ in range(2):  # the generator advances alike: the second draw matches too
        q, r = torch.linalg.qr(torch.randn(300, 300, generator=ref_gen, dtype=torch.float64))
        expected = q * torch.sign(torch.diagonal(r))
        o = syn.haar_orthogonal(300, gen, device)
        assert o.device.type == device
        torch.testing.assert_close(o.cpu(), expected, rtol=0, atol=1e-10)
    assert torch.equal(syn.haar_orthogonal(300, torch.Generator().manual_seed(3)), syn.haar_orthogonal(
        300, torch.Generator().manual_seed(3), "cpu"))
