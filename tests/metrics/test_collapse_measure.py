import numpy as np
import pytest
import torch

from featlearn.metrics.axes import epoch_axis
from featlearn.metrics.collapse import nfa_correlation, nfa_correlation_full, stratified_indices
from featlearn.metrics.collapse_measure import (
    LONG_NAMES,
    STAGES,
    agop_and_sqrt,
    collapse_run_dataset,
    measure_collapse,
    preactivation_jacobians,
)
from featlearn.metrics.nfa import psd_sqrt, ptk_feature_covariance
from featlearn.models.collapse_nets import CollapseNet, init_collapse_net
from featlearn.pipeline.store import check_attributes

CLASSES = 3


def _tiny(d_in=12, width=8, seed=0):
    """d_in > width makes head layer 1 take the low-rank AGOP root; layers 2–5 (d = width) the eigh root."""
    model = CollapseNet(None, 1, d_in, classes=CLASSES, width=width)
    return init_collapse_net(model, 1.0, torch.Generator().manual_seed(seed)).double()


def _data(n=12, d_in=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    labels = torch.arange(n) // (n // CLASSES)  # class-sorted, as the pipeline's data
    return torch.randn(n, d_in, generator=g, dtype=torch.float64), labels


def _loop_agop(model, layer, h):
    """(1/n) Σ_i J_iᵀJ_i with J_i = ∂f(x_i)/∂h^l from one autograd Jacobian per sample."""
    jacs = [torch.autograd.functional.jacobian(lambda v: model.head_from(layer, v[None])[0], hi) for hi in h]
    return sum(j.T @ j for j in jacs) / len(h)


def test_agop_is_the_per_sample_autograd_agop():
    model = _tiny()
    x, _ = _data()
    hs = model.head_inputs(x)
    for layer in (1, 3):
        k = ptk_feature_covariance(preactivation_jacobians(model, layer, hs[layer - 1]))
        agop, root = agop_and_sqrt(model.head[layer - 1].weight, k)
        expected = _loop_agop(model, layer, hs[layer - 1])
        torch.testing.assert_close(agop, expected)
        torch.testing.assert_close(root, psd_sqrt(expected))


@pytest.mark.parametrize("n_agop", [None, 6])
def test_nfa_matches_collapse_nfa_on_autograd_agop(n_agop):
    """n_agop = 6 must use the first 2 samples of each class, not the first 6 samples (all class 0 here)."""
    model = _tiny()
    x, labels = _data()
    out = measure_collapse(model, x, labels, n_agop)
    subset = slice(None) if n_agop is None else stratified_indices(labels, n_agop // CLASSES)
    hs = model.head_inputs(x)
    for layer, fc in enumerate(model.head, start=1):
        agop = _loop_agop(model, layer, hs[layer - 1][subset])
        assert out["nfa_sqrt"][layer - 1] == pytest.approx(nfa_correlation(fc.weight.detach(), agop), abs=1e-8)
        assert out["nfa_full"][layer - 1] == pytest.approx(nfa_correlation_full(fc.weight.detach(), agop), abs=1e-8)


def test_shapes_red_is_next_blue_and_ratios_sum_to_one():
    model = _tiny(d_in=20, width=16).float().train()
    x, labels = _data(n=30, d_in=20)
    out = measure_collapse(model, x.float(), labels, None)
    assert model.training  # mode restored
    assert out["nc1"].shape == (5, 3) and out["phi"].shape == out["nfa_sqrt"].shape == (5,)
    np.testing.assert_allclose(out["nc1"][:-1, STAGES.index("left")], out["nc1"][1:, STAGES.index("input")], rtol=1e-5)
    assert float(out["w_over_t"] + out["b_over_t"]) == pytest.approx(1.0, abs=1e-12)
    phi = (np.log(out["nc1"][:, 0]) - np.log(out["nc1"][:, 1])) / (np.log(out["nc1"][:, 0]) - np.log(out["nc1"][:, 2]))
    np.testing.assert_allclose(out["phi"], phi)


def test_collapsed_input_stays_collapsed():
    """Every sample at its class prototype (up to 1e-7 noise): NC1 ≈ 1e-14 at every layer and stage."""
    model = _tiny(d_in=20, width=16)
    _, labels = _data(n=30, d_in=20)
    g = torch.Generator().manual_seed(1)
    prototypes = torch.randn(CLASSES, 20, generator=g, dtype=torch.float64)
    x = prototypes[labels] + 1e-7 * torch.randn(30, 20, generator=g, dtype=torch.float64)
    out = measure_collapse(model, x, labels, None)
    assert out["nc1"].max() < 1e-9
    assert float(out["w_over_t"]) < 1e-9


def test_run_dataset_labels_every_variable():
    rows = [measure_collapse(_tiny(seed=s), *_data(), None) for s in (0, 1)]
    values = {name: np.stack([row[name] for row in rows]) for name in rows[0]}
    ds = collapse_run_dataset(values, epoch_axis([0, 10], [0, 70]))
    assert ds.nc1.dims == ("step", "layer", "stage") and list(ds.stage.values) == list(STAGES)
    assert ds.nfa_sqrt.dims == ("step", "layer") and ds.w_over_t.dims == ("step",)
    assert list(ds.layer.values) == [1, 2, 3, 4, 5] and list(ds.epoch.values) == [0, 10]
    assert list(ds.step_of_epoch.values) == [0, 70]
    assert float(ds.nc1.isel(step=1).sel(layer=2, stage="right")) == rows[1]["nc1"][1, 1]
    assert {name: ds[name].attrs["long_name"] for name in LONG_NAMES} == LONG_NAMES
    check_attributes(ds)
    with pytest.raises(ValueError, match="2 measurements for 3 epochs"):
        collapse_run_dataset(values, epoch_axis([0, 10, 20], [0, 70, 140]))
