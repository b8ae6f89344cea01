import math

import pytest
import torch

from featlearn.metrics import nfa
from featlearn.metrics.jacobians import layer_jacobians
from featlearn.models.mlp import MLP, init_mlp


def _trained_like(out=2):
    g = torch.Generator().manual_seed(3)
    model = init_mlp(MLP(6, [9, 8], out=out), [1.0, 1.0], g).double()
    x = torch.randn(11, 6, dtype=torch.float64, generator=g)
    return model, x


def test_agop_from_ptk_covariance_equals_autograd_agop_at_every_layer():
    model, x = _trained_like(out=2)
    jacs = layer_jacobians(model, x)
    inputs = model.layer_inputs(x)
    for ell, layer in enumerate(model.hidden):
        # ∂f_j/∂x_ℓ per sample by autograd, through the rest of the network.
        def rest(x_ell, ell=ell):
            h = x_ell
            for i in range(ell, len(model.hidden)):
                h = model.phi(model.layers[i](h))
            return model.layers[-1](h)

        grads = torch.stack([torch.autograd.functional.jacobian(rest, inputs[ell][a]) for a in range(len(x))])
        expected = torch.einsum("ncd,nce->de", grads, grads) / len(x)
        got = nfa.agop(layer.weight.detach(), nfa.ptk_feature_covariance(jacs[ell]))
        torch.testing.assert_close(got, expected)


def test_cosine_and_pearson_on_hand_made_matrices():
    a = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    b = torch.tensor([[2.0, 0.0], [0.0, 2.0]])
    c = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
    assert nfa.correlation(a, b) == pytest.approx(1.0)
    assert nfa.correlation(a, c) == pytest.approx(0.0)
    # cosine of [1,0,0,1] and [1,1,1,1] is 2/(√2·2) = 1/√2; Pearson removes the mean: undefined
    # for the constant matrix, and -1 for the anti-diagonal pair.
    ones = torch.ones(2, 2)
    assert nfa.correlation(a, ones) == pytest.approx(1 / math.sqrt(2))
    assert math.isnan(nfa.correlation(a, ones, "pearson"))
    assert nfa.correlation(a, c, "pearson") == pytest.approx(-1.0)
    # Pearson is invariant to adding a constant, cosine is not.
    assert nfa.correlation(a + 5, c, "pearson") == pytest.approx(-1.0)
    assert nfa.correlation(a + 5, c) > 0.5
    with pytest.raises(ValueError, match="allowed"):
        nfa.correlation(a, b, "spearman")


def test_eq4_decomposition_of_nfm_and_agop():
    g = torch.Generator().manual_seed(0)
    w0 = torch.randn(5, 4, dtype=torch.float64, generator=g)
    w = w0 + 0.3 * torch.randn(5, 4, dtype=torch.float64, generator=g)
    k = torch.randn(5, 5, dtype=torch.float64, generator=g)
    k = k @ k.T
    wb = w - w0
    torch.testing.assert_close(nfa.nfm(w), wb.T @ wb + w0.T @ wb + wb.T @ w0 + w0.T @ w0)
    torch.testing.assert_close(nfa.agop(w, k), wb.T @ k @ wb + w0.T @ k @ wb + wb.T @ k @ w0 + w0.T @ k @ w0)


def test_ratios_and_weight_change():
    g = torch.Generator().manual_seed(1)
    w0 = torch.randn(5, 4, dtype=torch.float64, generator=g)
    k = torch.eye(5, dtype=torch.float64)
    assert nfa.ratio_c_uc(nfa.nfc_pairs(w0, w0, k)) == 0.0
    assert nfa.ratio_c_uc(nfa.nfc_pairs(w0, torch.zeros_like(w0), k)) == pytest.approx(1.0)
    assert math.isnan(nfa.ratio_c_uc(nfa.nfc_pairs(w0, w0, torch.zeros_like(k))))  # every unit dead: K = 0
    assert math.isnan(nfa.ratio_dc_c(nfa.nfc_pairs(w0, w0, k, k)))
    assert nfa.ratio_dc_c(nfa.nfc_pairs(2 * w0, w0, k, k)) == pytest.approx(1.0)


def test_nfc_pairs_give_the_named_correlations():
    g = torch.Generator().manual_seed(2)
    w0 = torch.randn(6, 4, dtype=torch.float64, generator=g)
    w = w0 + 0.2 * torch.randn(6, 4, dtype=torch.float64, generator=g)
    k = torch.randn(6, 6, dtype=torch.float64, generator=g)
    k, k_bar = k @ k.T, torch.eye(6, dtype=torch.float64) + 0.1 * k @ k.T
    pairs = nfa.nfc_pairs(w, w0, k, k_bar)
    for c in nfa.CONVENTIONS:
        assert nfa.correlation(*pairs["uc_nfc"], c) == pytest.approx(nfa.nfc(w, k, c))
        assert nfa.correlation(*pairs["c_nfc"], c) == pytest.approx(nfa.centered_nfc(w, w0, k, c))
        assert nfa.correlation(*pairs["dc_nfc"], c) == pytest.approx(nfa.double_centered_nfc(w, w0, k_bar, c))
        assert nfa.correlation(*pairs["ptkc_nfc"], c) == pytest.approx(nfa.ptk_centered_nfc(w0, k_bar, c))
    assert nfa.relative_weight_change(2 * w0, w0) == pytest.approx(0.5)
    assert nfa.eigen_dispersion(3 * torch.eye(4)) == pytest.approx(0.0)


def test_agop_diagonal_is_the_diagonal_of_the_agop():
    from featlearn.metrics.nfa import agop, agop_diagonal

    gen = torch.Generator().manual_seed(0)
    w, a = torch.randn(7, 30, generator=gen, dtype=torch.float64), torch.randn(7, 7, generator=gen, dtype=torch.float64)
    k = a @ a.T
    assert torch.allclose(agop_diagonal(w, k), torch.diagonal(agop(w, k)), rtol=1e-12, atol=0)
