import torch

from featlearn.metrics.jacobians import layer_jacobians, output_gradients, zero_shifts
from featlearn.models.mlp import MLP, init_mlp


def _net(out=1, activation="relu", widths=(7, 5)):
    model = MLP(4, list(widths), out=out, activation=activation)
    return init_mlp(model, [1.0] * len(widths), torch.Generator().manual_seed(0)).double()


def test_batched_jacobian_equals_per_sample_autograd():
    model = _net(out=3)
    x = torch.randn(6, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    jacs = layer_jacobians(model, x)
    assert [j.shape for j in jacs] == [(6, 3, 7), (6, 3, 5)]
    for a in range(len(x)):
        for ell, width in enumerate((7, 5)):
            def f_of_shift(s, a=a, ell=ell):
                shifts = [torch.zeros(1, w, dtype=torch.float64) for w in (7, 5)]
                shifts[ell] = s[None]
                return model(x[a:a + 1], shifts)[0]

            expected = torch.autograd.functional.jacobian(f_of_shift, torch.zeros(width, dtype=torch.float64))
            torch.testing.assert_close(jacs[ell][a], expected)


def test_quadratic_activation_jacobian_is_analytic():
    # f = a·(W x)² with one hidden layer: ∂f/∂h = 2 a ⊙ h.
    model = _net(activation="quadratic", widths=(6,))
    x = torch.randn(5, 4, dtype=torch.float64)
    (jac,) = layer_jacobians(model, x)
    h = x @ model.layers[0].weight.T
    torch.testing.assert_close(jac[:, 0, :], 2 * model.layers[1].weight[0] * h)


def test_output_gradients_give_every_samples_gradient_one_pass_per_output():
    # out[α, j] = Σ_i a[j, i] z_α,i² with z = x + shift: ∂out_j(x_α)/∂z_α = 2 a[j] ⊙ z_α, all α from one pass.
    x = torch.randn(5, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    a = torch.randn(3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    (shift,) = zero_shifts([(5, 4)], torch.float64, torch.device("cpu"))
    grads = list(output_gradients(((x + shift) ** 2) @ a.T, [shift]))
    assert len(grads) == 3
    for j, (g,) in enumerate(grads):
        torch.testing.assert_close(g, 2 * a[j] * x)
