import math

import numpy as np
import pytest
import torch
from torch import nn

from featlearn.metrics import tangent as tg
from featlearn.models.mlp import MLP, init_mlp

F64 = torch.float64


def _net(bias, widths=(7, 5), d=4, seed=0):
    model = MLP(d, list(widths), bias=bias)
    return init_mlp(model, [1.0] * len(widths), torch.Generator().manual_seed(seed), "he_normal").double()


def _x(n=6, d=4, seed=1):
    return torch.randn(n, d, dtype=F64, generator=torch.Generator().manual_seed(seed))


def _moved(theta, scale, seed=2):
    gen = torch.Generator().manual_seed(seed)
    return {k: v + scale * torch.randn(v.shape, dtype=v.dtype, generator=gen) for k, v in theta.items()}


@pytest.mark.parametrize("bias", [False, True])
def test_batched_jacobian_equals_per_sample_autograd(bias):
    model, x = _net(bias), _x()
    jac = tg.tangent_features(model, x)
    params = list(model.parameters())
    assert jac.shape == (6, sum(p.numel() for p in params))
    for i in range(len(x)):
        expected = torch.autograd.grad(model(x[i:i + 1]).sum(), params)
        torch.testing.assert_close(jac[i], torch.cat([g.reshape(-1) for g in expected]))


def test_layer_kernels_match_the_closed_form():
    # no bias: K^(1) = (x·x')(δ1·δ1'), K^(2) = (h1·h1')(δ2·δ2'), K^(3) = h2·h2'.
    model, x = _net(False), _x()
    w1, w2, w3 = (m.weight.detach() for m in model.layers)
    a1 = x @ w1.T
    h1 = torch.relu(a1)
    a2 = h1 @ w2.T
    h2 = torch.relu(a2)
    d2 = (a2 > 0) * w3[0]
    d1 = (a1 > 0) * (d2 @ w2)
    kernels = tg.layer_kernels(tg.tangent_feature_blocks(model, x))
    torch.testing.assert_close(kernels["layers.0"], (x @ x.T) * (d1 @ d1.T))
    torch.testing.assert_close(kernels["layers.1"], (h1 @ h1.T) * (d2 @ d2.T))
    torch.testing.assert_close(kernels["layers.2"], h2 @ h2.T)
    jac = tg.tangent_features(model, x)
    torch.testing.assert_close(sum(kernels.values()), jac @ jac.T)
    torch.testing.assert_close(tg.initial_ntk(model, x), jac @ jac.T)


def _ftc_errors(points_list):
    model, x = _net(True, widths=(16, 16), d=4), _x(n=32)
    theta0 = tg.parameters(model)
    theta1 = _moved(theta0, 0.3)
    f0, f1 = (torch.func.functional_call(model, p, (x,))[:, 0] for p in (theta0, theta1))
    errors = []
    for points in points_list:
        gbar = tg.average_tangent_feature_blocks(model, x, tg.linear_path(theta0, theta1, points))
        errors.append(tg.ftc_relative_error(gbar, theta0, theta1, f1, f0))
    return errors


def test_average_tangent_features_reproduce_the_function_change():
    # Eq. 2: Ḡ(θ1 − θ0) = f_θ1 − f_θ0; the plain-mean rule converges like 1/K.
    errors = _ftc_errors([2, 5, 50, 400])
    assert errors[0] > 0.05  # the move is far from linear: one endpoint pair is a poor rule
    assert all(a > 1.5 * b for a, b in zip(errors, errors[1:]))
    assert errors[2] < 2e-2 and errors[3] < 3e-3


def test_adapted_kernel_of_a_zero_move_is_the_initial_ntk():
    model, x = _net(True), _x()
    theta0 = tg.parameters(model)
    torch.testing.assert_close(tg.adapted_kernel(model, x, theta0, theta0, points=3), tg.initial_ntk(model, x))
    moved = tg.adapted_kernel(model, x, theta0, _moved(theta0, 0.5), points=3)
    assert not torch.allclose(moved, tg.initial_ntk(model, x))


def test_alignment_is_one_for_identical_kernels_and_scale_invariant():
    j = _x(n=8, d=5)
    k = j @ j.T
    other = _x(n=8, d=8, seed=3)
    other = other @ other.T
    assert tg.kernel_alignment(k, k) == pytest.approx(1.0, abs=1e-12)
    assert tg.kernel_alignment(k, 3.7 * k) == pytest.approx(1.0, abs=1e-12)
    value = tg.kernel_alignment(k, other)
    assert value < 0.999
    assert tg.kernel_alignment(0.2 * k, 5.0 * other) == pytest.approx(value, abs=1e-12)
    assert tg.kernel_alignment(k, other, centered=True) != pytest.approx(value, abs=1e-3)
    assert tg.kernel_alignment(k, -k) == pytest.approx(-1.0, abs=1e-12)


def test_label_kernel_alignment_is_a_rayleigh_quotient():
    f1, f0 = _x(n=8, d=1)[:, 0], _x(n=8, d=1, seed=4)[:, 0]
    r = f1 - f0
    j = _x(n=8, d=20)
    k = j @ j.T
    ky = tg.label_kernel(f1, f0)
    torch.testing.assert_close(ky, torch.outer(r, r))
    assert tg.kernel_alignment(k, ky) == pytest.approx(float(r @ k @ r / (torch.linalg.norm(k) * (r @ r))))


def test_task_difficulty_is_the_minimum_norm_coefficient_norm():
    j, r = _x(n=6, d=30), _x(n=6, d=1, seed=5)[:, 0]
    beta = torch.linalg.pinv(j) @ r  # minimum-norm β with Jβ = r
    assert tg.task_difficulty(j @ j.T, r) == pytest.approx(float(beta @ beta), rel=1e-9)


def test_kernel_decomposition_recovers_an_exact_combination():
    j = _x(n=8, d=20)
    k0, ky = j @ j.T, tg.label_kernel(_x(n=8, d=1)[:, 0], torch.zeros(8, dtype=F64))
    w0, w1, r2 = tg.kernel_decomposition(1.5 * k0 + 0.25 * ky, k0, ky)
    assert (w0, w1, r2) == pytest.approx((1.5, 0.25, 1.0), abs=1e-9)


def test_linear_factors_reject_non_linear_parameters():
    model = nn.Sequential(nn.Linear(4, 3), nn.LayerNorm(3), nn.Linear(3, 1)).double()
    with pytest.raises(ValueError, match="not in an nn.Linear"):
        tg.tangent_features(model, _x())


# --- penalties (Fig 2, docs/figures/tangent.md) ---

V_TABLE = np.array([0.1, 0.5, 0.7071, 1, 2, 5, 10, 100])
SPEC_TABLE = {  # reference values (5 significant digits)
    "w1": [0.00990, 0.21139, 0.38247, 0.66950, 1.86862, 6.24653, 14.40403, 180.7436],
    "w2": [0.01000, 0.25000, 0.49999, 0.88988, 2.00000, 4.52605, 7.77205, 39.7163],
    "w3": [0.00990, 0.21139, 0.38247, 0.66900, 1.53938, 3.36743, 5.52255, 22.5603],
}


def _omega3(s):
    return tg.joint_penalty(tg.omega_quadratic, tg.omega_abs, s)


def test_effective_penalties_match_the_closed_forms_and_the_spec_table():
    v = np.linspace(0, 100, 401)
    np.testing.assert_allclose(tg.effective_penalty(tg.omega_quadratic, v), tg.effective_quadratic_closed(v),
                               rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(tg.effective_penalty(tg.omega_abs, v), tg.effective_abs_closed(v),
                               rtol=1e-9, atol=1e-9)
    numeric = {"w1": tg.omega_quadratic, "w2": tg.omega_abs, "w3": _omega3}
    for name, omega in numeric.items():
        np.testing.assert_allclose(tg.effective_penalty(omega, V_TABLE), SPEC_TABLE[name], rtol=2e-5, atol=1e-5)


def test_joint_penalty_matches_its_closed_form():
    s = np.concatenate([np.linspace(1, 3, 41), [5.0, 10.0, 50.0]])
    np.testing.assert_allclose(_omega3(s), tg.joint_quadratic_abs_closed(s), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(tg.joint_quadratic_abs_closed([1.2, 1.5, 2, 5, 10]),
                               [0.04000, 0.23123, 0.58141, 2.41735, 4.97135], atol=1e-5)
    np.testing.assert_allclose(tg.joint_penalty(tg.omega_abs, None, s), tg.omega_abs(s))  # ω ⊕ χ_{1} = ω


def test_effective_penalties_are_subquadratic_with_quadratic_start():
    # Prop. 3 and Fig 2's claims: u = v² ↦ ω̃ increasing and concave, ω̃(v)/v² → 1, all ≤ v², ω̃3 ≤ min(ω̃1, ω̃2).
    u = np.linspace(0, 25, 201)
    v = np.sqrt(u)
    curves = {name: tg.effective_penalty(omega, v) for name, omega in
              {"w1": tg.omega_quadratic, "w2": tg.omega_abs, "w3": _omega3}.items()}
    for c in curves.values():
        assert np.all(np.diff(c) > 0)
        assert np.all(np.diff(c, 2) <= 1e-10)
        assert np.all(c <= u + 1e-12)
    small = np.array([1e-3, 1e-2])
    for omega in (tg.omega_quadratic, tg.omega_abs, _omega3):
        np.testing.assert_allclose(tg.effective_penalty(omega, small) / small ** 2, 1.0, atol=1e-4)
    assert np.all(curves["w3"] <= np.minimum(curves["w1"], curves["w2"]) + 1e-12)
    cross = v[np.flatnonzero(np.diff(np.sign(curves["w1"] - curves["w2"])))[-1]]
    assert cross == pytest.approx(2.361, abs=0.02)


def test_effective_penalty_tails_follow_the_power_rule():
    # ω(z) ~ z^p gives ω̃(v) ~ v^(2p/(p+2)): exponents 1, 2/3, 1/2 for ω1, ω2, ω3.
    v = np.array([1e4, 2e4])
    for omega, exponent in ((tg.omega_quadratic, 1.0), (tg.omega_abs, 2 / 3), (_omega3, 0.5)):
        slope = np.diff(np.log(tg.effective_penalty(omega, v)))[0] / math.log(2)
        assert slope == pytest.approx(exponent, abs=0.02)


def test_singular_value_split_solves_eq_15():
    d = np.array([0.3, 1.0, 4.0, 20.0])
    s1, s2, sigma = tg.singular_value_split(tg.omega_quadratic, tg.omega_abs, d)
    np.testing.assert_allclose(s1 * s2 * sigma, d, rtol=1e-10)
    assert np.all((s1 >= 1) & (s2 >= 1))
    value = tg.omega_quadratic(s1) + tg.omega_abs(s2) + sigma ** 2
    np.testing.assert_allclose(value, tg.effective_penalty(_omega3, d), rtol=1e-8)
    s1, s2, sigma = tg.singular_value_split(tg.omega_quadratic, None, d)  # Theorem 1: s³(s − 1) = d²
    np.testing.assert_allclose(s2, 1.0)
    np.testing.assert_allclose(s1 ** 3 * (s1 - 1), d ** 2, rtol=1e-6)  # an argmin: ~√eps accurate


def test_group_low_rank_penalty_is_spectral_and_sums_over_layers():
    gen = np.random.default_rng(0)
    b = np.diag([3.0, 0.5, 0.0])
    rot_u, _ = np.linalg.qr(gen.standard_normal((3, 3)))
    rot_v, _ = np.linalg.qr(gen.standard_normal((3, 3)))
    last = np.array([1.0, 2.0, 2.0])
    pairs = [(tg.omega_quadratic, tg.omega_abs), (tg.omega_quadratic, None)]
    expected = tg.effective_penalty(_omega3, [3.0, 0.5, 0.0]).sum() + tg.effective_quadratic_closed(3.0)
    assert tg.group_low_rank_penalty([b, last], pairs) == pytest.approx(expected, rel=1e-9)
    assert tg.group_low_rank_penalty([rot_u @ b @ rot_v.T, last], pairs) == pytest.approx(expected, rel=1e-9)
