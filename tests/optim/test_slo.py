import torch

from featlearn.optim.speed_limited import SLO, adaptive_speeds


def _grads(weights):
    g = torch.Generator().manual_seed(0)
    for w in weights:
        w.grad = torch.randn(w.shape, generator=g)


def _weights():
    g = torch.Generator().manual_seed(1)
    return [torch.randn(4, 3, generator=g, requires_grad=True), torch.randn(1, 4, generator=g, requires_grad=True)]


def test_plain_slo_moves_each_matrix_exactly_lr_times_speed():
    weights = _weights()
    before = [w.detach().clone() for w in weights]
    _grads(weights)
    SLO(weights, lr=0.1, speeds=[2.0, 0.5]).step()
    for w, b, c in zip(weights, before, [2.0, 0.5]):
        step = w.detach() - b
        torch.testing.assert_close(step, -0.1 * c * w.grad / w.grad.norm())
        torch.testing.assert_close(step.norm(), torch.tensor(0.1 * c))


def test_relaxed_slo_divides_by_eps_plus_norm():
    weights = _weights()
    before = [w.detach().clone() for w in weights]
    _grads(weights)
    SLO(weights, lr=0.3, speeds=[500.0, 0.002], eps=0.1).step()
    for w, b, c in zip(weights, before, [500.0, 0.002]):
        torch.testing.assert_close(w.detach() - b, -0.3 * c * w.grad / (0.1 + w.grad.norm()))


def test_adaptive_slo_speeds_up_the_least_aligned_layer():
    assert adaptive_speeds([0.9, 0.4, 0.7], n_matrices=4, s=20) == [0.05, 20, 0.05, 0.05]
    weights = _weights()
    before = [w.detach().clone() for w in weights]
    _grads(weights)
    opt = SLO(weights, lr=0.05, speeds=[1.0, 1.0], eps=0.01)
    opt.set_speeds(adaptive_speeds([0.2], n_matrices=2, s=20))
    opt.step()
    for w, b, c in zip(weights, before, [20.0, 1 / 20]):
        torch.testing.assert_close(w.detach() - b, -0.05 * c * w.grad / (0.01 + w.grad.norm()))


def test_the_literal_relaxation_divides_by_eps_times_norm():
    """App. K's literal ε‖∇𝓛‖ (relax="product"): each matrix moves η·C/ε, not about η·C."""
    weights = _weights()
    before = [w.detach().clone() for w in weights]
    _grads(weights)
    SLO(weights, lr=0.05, speeds=[20.0, 0.05], eps=0.01, relax="product").step()
    for w, b, c in zip(weights, before, [20.0, 0.05]):
        torch.testing.assert_close((w.detach() - b).norm(), torch.tensor(0.05 * c / 0.01))


def test_adaptive_speeds_can_leave_the_readout_outside_the_rule():
    assert adaptive_speeds([0.9, 0.4, 0.7], n_matrices=4, s=20, readout=1.0) == [0.05, 20, 0.05, 1.0]


def test_a_zero_gradient_leaves_its_matrix_where_it_is():
    """g/(ε‖g‖) at g = 0 (a layer whose units all died) is no step, not a division by zero."""
    weights = _weights()
    before = [w.detach().clone() for w in weights]
    for w in weights:
        w.grad = torch.zeros_like(w)
    SLO(weights, lr=0.05, speeds=[20.0, 0.05], eps=0.01, relax="product").step()
    for w, b in zip(weights, before):
        torch.testing.assert_close(w.detach(), b)
