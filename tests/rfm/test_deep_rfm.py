import logging

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from featlearn.metrics import collapse
from featlearn.rfm import DeepRFM
from featlearn.rfm.deep_rfm import METRICS, STAGES
from featlearn.rfm.layer import STEPS, pm_one_hot, rfm_layer


def _classes(k=3, n=20, d=30, seed=0):
    """K classes that differ in 3 of d coordinates; the other d − 3 are noise the AGOP should learn to ignore."""
    g = torch.Generator().manual_seed(seed)
    labels = torch.arange(k).repeat_interleave(n)
    means = torch.zeros(k, d, dtype=torch.float64)
    means[:, :3] = 2 * torch.randn(k, 3, dtype=torch.float64, generator=g)
    return means[labels] + torch.randn(k * n, d, dtype=torch.float64, generator=g), labels


def test_pm_one_hot():
    y = pm_one_hot(torch.tensor([0, 2, 1]))
    torch.testing.assert_close(y, torch.tensor([[1, -1, -1], [-1, -1, 1], [-1, 1, -1]], dtype=torch.float64))


@pytest.mark.parametrize("kernel", ["laplace", "gaussian"])
@pytest.mark.parametrize("activation", ["relu", "cos"])
def test_thin_route_gives_the_same_layer_as_the_dense_one(kernel, activation):
    x, labels = _classes(n=10, d=50)  # N = 30 < d = 50
    y = pm_one_hot(labels)
    kw = dict(kernel=kernel, activation=activation, width=64, gamma=0.5)
    thin = rfm_layer(x, y, torch.Generator().manual_seed(0), thin=True, **kw)
    dense = rfm_layer(x, y, torch.Generator().manual_seed(0), thin=False, **kw)
    torch.testing.assert_close(thin.x, dense.x)
    scale = float(dense.x_tilde.abs().max())
    torch.testing.assert_close(thin.x_tilde, dense.x_tilde, rtol=0, atol=1e-7 * scale)
    torch.testing.assert_close(thin.features, dense.features, rtol=0, atol=1e-5 * float(dense.features.abs().max()))
    assert set(thin.seconds) == set(STEPS)


def test_layer_normalizes_samples_and_the_agop_projection_reduces_nc1():
    x, labels = _classes()
    out = rfm_layer(x, pm_one_hot(labels), torch.Generator().manual_seed(0), kernel="laplace", width=256)
    torch.testing.assert_close(out.x.norm(dim=1), torch.ones(len(x), dtype=torch.float64))
    assert out.features.shape == (60, 256) and (out.features >= 0).all()
    assert collapse.nc1(out.x_tilde, labels) < 0.3 * collapse.nc1(out.x, labels)


def test_deep_rfm_dataset_layout_and_collapse_with_depth():
    x, labels = _classes()
    ds = DeepRFM(depth=4, kernel="laplace", activation="relu", width=128, gram_layers=(1, 4),
                 gram_per_class=5).fit(x, labels).dataset_
    assert ds.nc1.dims == ("layer", "stage") and ds.nc1.shape == (4, 3)
    assert list(ds.stage.values) == list(STAGES) and list(ds.layer.values) == [1, 2, 3, 4]
    for name in ("nc1", "nc1_codeconv", "nc2_meansq", "nc2_fro", "trSW", "trSB"):
        assert np.isfinite(ds[name].values).all(), name
    np.testing.assert_allclose(ds.nc1_codeconv.values, ds.nc1.values / 3)
    assert ds.gram.shape == (2, 15, 15) and ds.class_i.values.tolist() == [0] * 5 + [1] * 5 + [2] * 5
    assert ds.gram_block_mean.shape == (2, 3, 3)
    np.testing.assert_allclose(np.diagonal(ds.gram.values, axis1=1, axis2=2), 1.0)
    nc1 = ds.nc1.sel(stage="X").values
    assert nc1[-1] < 0.1 * nc1[0]
    assert (ds.nc1.sel(stage="MX") < ds.nc1.sel(stage="X")).all()
    assert ds.attrs["seed"] == 0 and ds.attrs["width"] == 128 and ds.seconds.dims == ("layer", "phase")


@pytest.mark.parametrize(("kernel", "activation", "width", "rel"), [
    ("laplace", "relu", 48, 1e-8), ("gaussian", "relu", 48, 1e-8), ("laplace", "cos", 48, 1e-8),
    ("gaussian", "cos", 48, 1e-8), ("gaussian", "relu", 96, 1e-5), ("laplace", "cos", 96, 1e-5),
])
def test_deep_rfm_equals_the_full_matrix_algorithm(kernel, activation, width, rel, full_matrix):
    """Three layers of the lean run against Algorithm 1 written with full N×N matrices and (N, K, d) Jacobians, as the
    previous implementation computed it (conftest): every stage's metrics and the Gram subsample agree.

    N = 75: width 48 keeps the dense route at every layer (seen: 1e-9 relative). Width 96 > N takes the thin route
    from layer 2, which the reference never does: M^{1/2} of the rank-deficient 96×96 AGOP against that of its 75×75
    range differs where eigh clips eigenvalues at rounding level (seen: 6e-7). Three layers, because each ridgeless
    solve amplifies rounding by K's condition number: deeper, two implementations (or one on 1 and 2 threads) drift
    apart by up to a few percent (benchmarks/README.md).
    """
    x, labels = _classes(n=25, d=20)
    run = dict(depth=3, kernel=kernel, activation=activation, width=width, gamma=0.5, gram_layers=(3,),
               gram_per_class=4)
    ds = DeepRFM(**run).fit(x, labels).dataset_
    assert (ds.jitter == 0).all()  # the reference solves without jitter
    y, h, generator = pm_one_hot(labels), x, torch.Generator().manual_seed(0)
    for layer in range(3):
        stages = full_matrix.layer(h, y, generator, kernel, activation, width, gamma=0.5)
        for s, stage in enumerate(stages):
            for name, value in collapse.collapse_metrics(stage, labels).items():
                assert ds[name].values[layer, s] == pytest.approx(value, rel=rel), (layer + 1, STAGES[s], name)
        h = stages[2]
    gram = collapse.collapse_gram(stages[1], labels, collapse.stratified_indices(labels, 4))
    np.testing.assert_allclose(ds.gram.sel(gram_layer=3).values, gram.numpy(), rtol=0, atol=rel)


def test_deep_rfm_logs_its_solve_and_one_progress_line_per_layer(caplog):
    x, labels = _classes(n=6)
    with caplog.at_level(logging.INFO, logger="featlearn.rfm.deep_rfm"):
        DeepRFM(depth=3, width=16, gram_layers=(), gram_per_class=1).fit(x, labels)
    first, *lines = [r.getMessage() for r in caplog.records if r.name == "featlearn.rfm.deep_rfm"]
    assert first.startswith("deep_rfm: N = 18, d = 30 on cpu; solve: one N×N float64 buffer, K factorized in place (")
    assert len(lines) == 3 and all(line.startswith(f"deep_rfm layer {i}/3: ") for i, line in enumerate(lines, 1))
    assert all(" s, NC1(X) " in line and "GB" not in line for line in lines)  # peak memory only on CUDA


def test_deep_rfm_is_a_function_of_the_generator():
    x, labels = _classes(n=8)
    run = dict(depth=2, kernel="gaussian", activation="cos", width=64, gamma=0.2, gram_layers=(2,), gram_per_class=2)
    a = DeepRFM(random_state=5, **run).fit(x, labels).dataset_
    b = DeepRFM(random_state=torch.Generator().manual_seed(5), **run).fit(x, labels).dataset_
    c = DeepRFM(random_state=6, **run).fit(x, labels).dataset_
    np.testing.assert_array_equal(a.nc1.values, b.nc1.values)
    np.testing.assert_array_equal(a.gram.values, b.gram.values)
    np.testing.assert_array_equal(a.nc1.sel(layer=1, stage="MX"), c.nc1.sel(layer=1, stage="MX"))  # no randomness yet
    assert not np.array_equal(a.nc1.sel(stage="PhiMX").values, c.nc1.sel(stage="PhiMX").values)


def test_deep_rfm_errors_name_the_parameter():
    x, labels = _classes(n=4)
    with pytest.raises(ValueError, match="activation"):
        DeepRFM(depth=1, activation="tanh", gram_layers=()).fit(x, labels)
    with pytest.raises(ValueError, match="gram_layers"):
        DeepRFM(depth=2, gram_layers=(3,)).fit(x, labels)
    with pytest.raises(ValueError, match="allowed"):
        DeepRFM(depth=1, kernel="cauchy", gram_layers=()).fit(x, labels)
    with pytest.raises(ValueError, match="allowed"):
        DeepRFM(depth=1, solve="lu", gram_layers=()).fit(x, labels)
    with pytest.raises(ValueError, match="Invalid parameter 'layers'"):
        DeepRFM().set_params(layers=3)


def test_fit_returns_the_estimator_with_every_measurement_a_fitted_attribute():
    """scikit-learn's conventions: hyper-parameters in __init__, untouched by fit; what fit measured ends in ``_``;
    the Dataset labels the same arrays."""
    x, labels = _classes(n=8)
    rfm = DeepRFM(depth=3, kernel="gaussian", activation="cos", width=24, gamma=0.3, gram_layers=(1, 3),
                  gram_per_class=3)
    params = rfm.get_params()
    assert rfm.fit(x, labels) is rfm and rfm.get_params() == params
    assert set(rfm.metrics_) == set(METRICS) and rfm.metrics_["nc1"].shape == (3, len(STAGES))
    assert rfm.jitter_.shape == (3,) and rfm.seconds_.shape == (3, len(STEPS)) and (rfm.seconds_ > 0).all()
    assert rfm.gram_.shape == (2, 9, 9) and rfm.gram_block_mean_.shape == (2, 3, 3)
    assert rfm.gram_indices_.tolist() == [0, 1, 2, 8, 9, 10, 16, 17, 18]
    assert (rfm.solve_, rfm.width_, rfm.n_features_in_, rfm.classes_.tolist()) == ("in_place", 24, 30, [0, 1, 2])
    ds = rfm.dataset_
    for name in METRICS:
        np.testing.assert_array_equal(ds[name].values, rfm.metrics_[name])
    np.testing.assert_array_equal(ds.gram.values, rfm.gram_)
    np.testing.assert_array_equal(ds.gram_block_mean.values, rfm.gram_block_mean_)
    np.testing.assert_array_equal(ds.i.values, rfm.gram_indices_)
    assert ds.attrs["seed"] == 0 and ds.attrs["solve"] == rfm.solve_ and ds.attrs["width"] == 24


def test_the_estimator_clones_and_refits_as_scikit_learn_expects():
    x, labels = _classes(n=6)
    rfm = DeepRFM(depth=2, width=16, gram_layers=(2,), gram_per_class=2, random_state=3)
    twin = clone(rfm)
    assert twin is not rfm and twin.get_params() == rfm.get_params()
    assert "metrics_" not in vars(twin)
    a, b = rfm.fit(x, labels).dataset_, twin.fit(x, labels).dataset_
    assert a.drop_vars("seconds").identical(b.drop_vars("seconds"))  # an integer seed: each fit starts afresh
    refit = rfm.set_params(depth=3, gram_layers=(1, 3)).fit(x, labels)
    assert refit is rfm and rfm.metrics_["nc1"].shape == (3, 3)
    np.testing.assert_array_equal(rfm.metrics_["nc1"][:2], a.nc1.values)  # the first layers do not see the depth


def test_the_parameters_are_the_constructor_s():
    """get_params reads the constructor's signature (BaseEstimator): no list of names to keep beside it."""
    import inspect

    assert list(DeepRFM().get_params()) == sorted(inspect.signature(DeepRFM).parameters)


def test_predict_reads_the_last_layer_s_kernel_machine():
    """Ridgeless, the last layer interpolates its ±1 targets: the training points get their labels back, whatever
    the labels are called, and new points of the same classes mostly theirs; predict maps new points as fit did."""
    x, labels = _classes(n=20)
    names = np.array(["cat", "dog", "eel"])
    rfm = DeepRFM(depth=3, width=64, gram_layers=(), random_state=1).fit(x.numpy(), names[labels])
    assert rfm.classes_.tolist() == ["cat", "dog", "eel"]
    np.testing.assert_array_equal(rfm.predict(x), names[labels])
    scores = rfm.decision_function(x)
    assert scores.shape == (60, 3) and np.allclose(scores, 2 * np.eye(3)[labels] - 1, atol=1e-4)
    x_new, labels_new = _classes(n=20, seed=0)[0][::2] + 0.05, labels[::2]
    assert (rfm.predict(x_new) == names[labels_new]).mean() > 0.8


def test_predict_needs_the_predictor_kept():
    x, labels = _classes(n=4)
    rfm = DeepRFM(depth=1, width=8, gram_layers=(), predictor=False).fit(x, labels)
    with pytest.raises(AttributeError, match="predictor=False"):
        rfm.predict(x)


def test_the_estimator_runs_in_a_pipeline():
    x, labels = _classes(n=10)
    model = make_pipeline(StandardScaler(), DeepRFM(depth=2, width=32, activation="cos", gram_layers=()))
    assert model.fit(x.numpy(), labels.numpy()).score(x.numpy(), labels.numpy()) == 1.0


# scikit-learn's estimator checks, on a small run; two do not apply, each with the reason.
NOT_APPLICABLE = {
    "check_parameters_default_constructible": "dtype defaults to torch.float64, a torch.dtype the check does not know",
    "check_fit2d_1feature": "one non-negative feature normalizes every sample to 1 (Algorithm 1, step 1): the classes "
                            "coincide and NC1 = tr Σ_W / tr Σ_B, which fit measures, divides by zero",
}


@parametrize_with_checks([DeepRFM(depth=2, width=16, gram_layers=(), gram_per_class=1)],
                         expected_failed_checks=lambda estimator: NOT_APPLICABLE)
def test_scikit_learn_s_estimator_checks(estimator, check):
    check(estimator)
