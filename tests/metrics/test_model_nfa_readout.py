"""The library's K sum through a Linear readout (``readout``): passes from the readout's input, the readout's own K,
and the closed form of the layer feeding it through elementwise activations, each against per-sample torch.func
Jacobians in float64 (relative 1e-10), and each shown to be the path taken."""

import pytest
import torch
from torch import nn
from torch.func import jacrev

from featlearn.metrics import gram, k_sum, readout

F64 = torch.float64
TOL = 1e-10


def reference_ks(model, x, names):
    """K = (1/n) Σ_α Σ_j Σ_positions g gᵀ of each named module's output, from jacrev of each sample's outputs with
    respect to zero shifts that this function's own hooks add to those outputs."""
    current, shapes, handles = {}, {}, []
    for name in names:
        module = model.get_submodule(name)
        handles.append(module.register_forward_hook(lambda m, a, out, n=name: shapes.setdefault(n, out.shape[1:])
                                                    and out + current.get(n, 0)))
    try:
        with torch.no_grad():
            model(x[:1])
        ks = {name: 0 for name in names}
        for a in range(len(x)):
            def f(shifts, xa=x[a:a + 1]):
                current.update(shifts)
                return model(xa).flatten()

            jacs = jacrev(f)({name: torch.zeros(shapes[name], dtype=F64) for name in names})
            for name, jac in jacs.items():
                flat = jac.detach().reshape(-1, jac.shape[-1])
                ks[name] = ks[name] + flat.T @ flat / len(x)
    finally:
        for handle in handles:
            handle.remove()
    return ks


@pytest.fixture
def taken(monkeypatch):
    """Which of the readout's paths the sum took: counts of plans with passes from z, own and closed-form layers."""
    counts = {"from_z": 0, "own": 0, "elementwise": 0}
    plan = readout.plan

    def spy(*args):
        found = plan(*args)
        if found is not None:
            counts["from_z"] += found.z is not None
            counts["own"] += len(found.own)
            counts["elementwise"] += len(found.elementwise)
        return found

    monkeypatch.setattr(readout, "plan", spy)
    return counts


def _assert_ks(model, x, names, batch_size=4):
    model = model.double().eval()
    got, _ = k_sum.covariances(model, x, names, batch_size=batch_size, fast=True)
    expected = reference_ks(model, x, names)
    pinned, _ = k_sum.covariances(model, x, names, batch_size=batch_size)
    for name in names:
        assert float(expected[name].norm()) > 0, name
        assert float((got[name] - expected[name]).norm() / expected[name].norm()) <= TOL, name
        assert float((got[name] - pinned[name]).norm() / pinned[name].norm()) <= TOL, name


def _inputs(*shape, seed=0):
    return torch.randn(*shape, dtype=F64, generator=torch.Generator().manual_seed(seed))


def test_mlp_last_hidden_layer_in_closed_form_the_others_from_the_readout_input(taken):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 6), nn.ReLU(), nn.Linear(6, 4))
    _assert_ks(model, _inputs(9, 5), ["0", "2", "4"])
    # three batches, each: passes from z, the readout's own K, the closed form of "2"
    assert taken == {"from_z": 3, "own": 3, "elementwise": 3}


@pytest.mark.parametrize(("activation", "zero_one"), [(nn.ReLU, True), (nn.GELU, False)])
def test_one_output_takes_the_closed_form_exact_in_float32_for_relu(taken, monkeypatch, activation, zero_one):
    """ReLU's derivatives are zeros and ones: their Σ d dᵀ is counted in float32 (``gram.zero_one``), GELU's not."""
    counted = []
    product = gram.zero_one
    monkeypatch.setattr(gram, "zero_one", lambda k, flat: counted.append(product(k, flat)) or counted[-1])
    torch.manual_seed(5)
    model = nn.Sequential(nn.Linear(5, 7), activation(), nn.Linear(7, 6), activation(), nn.Linear(6, 1))
    _assert_ks(model, _inputs(9, 5, seed=6), ["0", "2"])
    assert taken["elementwise"] == 3 and counted == [zero_one] * 3


def test_more_outputs_than_readout_inputs_pass_through_the_r_of_its_qr(taken):
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(5, 6), nn.Tanh(), nn.Linear(6, 3), nn.GELU(), nn.Dropout(0.5), nn.Linear(3, 11))
    _assert_ks(model, _inputs(7, 5, seed=1), ["0", "2"])
    assert taken["from_z"] == 2 and taken["elementwise"] == 2


def test_sequences_pass_one_position_at_a_time_and_in_place_activations_are_followed(taken):
    torch.manual_seed(2)
    model = nn.Sequential(nn.Linear(4, 6), nn.SiLU(), nn.Linear(6, 5), nn.ReLU(inplace=True), nn.Linear(5, 3))
    _assert_ks(model, _inputs(5, 3, 4, seed=2), ["0", "2", "4"])
    assert taken == {"from_z": 2, "own": 2, "elementwise": 2}


class _Residual(nn.Module):
    """f = W_R (relu(h) + x): the readout's input is no elementwise function of h alone."""

    def __init__(self):
        super().__init__()
        self.hidden, self.head = nn.Linear(4, 4), nn.Linear(4, 3)

    def forward(self, x):
        return self.head(torch.relu(self.hidden(x)) + x)


def test_a_normalisation_or_a_residual_path_keeps_the_general_sum_from_the_readout_input(taken):
    torch.manual_seed(3)
    normed = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 5), nn.LayerNorm(5), nn.Linear(5, 3))
    _assert_ks(normed, _inputs(6, 4, seed=3), ["0", "2"])
    _assert_ks(_Residual(), _inputs(6, 4, seed=4), ["hidden"])
    assert taken["from_z"] == 4 and taken["elementwise"] == 0


def test_an_output_that_is_not_the_readouts_own_keeps_the_general_sum(taken):
    torch.manual_seed(4)
    model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3), nn.Tanh())
    _assert_ks(model, _inputs(6, 4, seed=5), ["0", "2"])
    assert taken == {"from_z": 0, "own": 0, "elementwise": 0}
