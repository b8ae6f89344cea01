"""Device-correctness of Deep RFM without a GPU: every tensor is created on its inputs' device, every random draw on
its generator's device.

Three checks, each catching a different CUDA mix-up on a CPU-only machine:

* inputs on torch's ``meta`` device: a tensor created without ``device=`` lands on the CPU and torch refuses to mix
  it with meta tensors, as it refuses cpu with cuda. Paths that read numbers back (the solve's ``float`` and its
  Cholesky status) cannot run on meta;
* so those run with CPU inputs under ``torch.device("meta")`` as the default device: a tensor created without
  ``device=`` lands on meta and the same refusal fires, while correct code computes on the CPU as usual;
* neither catches a draw from the pipeline's CPU generator into a CUDA tensor (``torch.randn(..., generator=cpu_gen,
  device="cuda")``, which CUDA refuses but CPU and meta allow), so the last test makes the draws enforce CUDA's rule.
"""

from __future__ import annotations

import pytest
import torch

from featlearn.metrics.nfa import psd_sqrt
from featlearn.rfm.features import laplace_fourier_features, relu_features
from featlearn.rfm.kernels import KERNELS, KernelRidge, kernel_agop, kernel_gradients, kernel_matrix
from featlearn.rfm.layer import pm_one_hot, rfm_layer
from featlearn.rfm.linalg import thin_range

META = torch.device("meta")


def _data(n=12, d=7, k=3):
    g = torch.Generator().manual_seed(0)
    labels = torch.arange(n) % k
    return torch.randn(n, d, dtype=torch.float64, generator=g), pm_one_hot(labels)


@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel_gradients_agop_and_square_root_stay_on_the_inputs_device(kernel):
    x = torch.empty(12, 7, dtype=torch.float64, device=META)
    coef = torch.empty(12, 3, dtype=torch.float64, device=META)
    k = kernel_matrix(kernel, x)
    grads = kernel_gradients(kernel, x, coef, block_rows=5)
    m = kernel_agop(kernel, x, coef, block_rows=5)
    coords, q = thin_range(torch.empty(5, 7, dtype=torch.float64, device=META))
    assert all(t.device == META for t in (k, grads, m, psd_sqrt(m), coords, q))
    assert k.shape == (12, 12) and grads.shape == (12, 3, 7) and m.shape == (7, 7)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("activation", ["relu", "cos"])
@pytest.mark.parametrize("thin", [False, True])
def test_layer_and_kernel_ridge_create_no_tensor_on_the_default_device(kernel, activation, thin):
    """A whole layer (the solve included, with jitter: identical rows make K singular) and KernelRidge under a meta
    default device compute on the CPU, where their inputs are, and give the values they give without it."""
    x, y = _data(n=12, d=20 if thin else 7)
    x[1] = x[0]  # a duplicate point: the ridgeless solve needs jitter
    kw = dict(kernel=kernel, activation=activation, width=16, gamma=0.5, thin=thin)
    expected = rfm_layer(x, y, torch.Generator().manual_seed(0), **kw)
    model = KernelRidge(kernel, ridge=0.1).fit(x, y)
    with torch.device(META):
        out = rfm_layer(x, y, torch.Generator().manual_seed(0), **kw)
        fitted = KernelRidge(kernel, ridge=0.1).fit(x, y)
        predicted, agop = fitted.predict(x[:4]), fitted.agop(x[:4])
    assert expected.jitter > 0 and out.jitter == expected.jitter
    for got, want in ((out.x_tilde, expected.x_tilde), (out.features, expected.features),
                      (predicted, model.predict(x[:4])), (agop, model.agop(x[:4]))):
        assert got.device == torch.device("cpu")
        torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.fixture
def draws_on_the_generators_device(monkeypatch):
    """Make torch.randn, torch.rand and Tensor.cauchy_ refuse a generator on another device than the tensor they fill,
    as CUDA does (CPU and meta do not check)."""
    def check(device, generator):
        device = torch.device(device) if device is not None else torch.get_default_device()
        if generator is not None and device != generator.device:
            raise RuntimeError(f"a {generator.device} generator cannot draw on {device}")

    def wrap(draw):
        def checked(*args, generator=None, device=None, **kw):
            check(device, generator)
            return draw(*args, generator=generator, device=device, **kw)
        return checked

    cauchy = torch.Tensor.cauchy_

    def cauchy_(self, *args, generator=None, **kw):
        check(self.device, generator)
        return cauchy(self, *args, generator=generator, **kw)

    monkeypatch.setattr(torch, "randn", wrap(torch.randn))
    monkeypatch.setattr(torch, "rand", wrap(torch.rand))
    monkeypatch.setattr(torch.Tensor, "cauchy_", cauchy_)


def test_random_features_draw_on_the_generators_device_and_land_on_the_inputs(draws_on_the_generators_device):
    """The pipeline seeds CPU generators; features of X on another device (meta standing for CUDA) are drawn on the
    CPU and moved, so a seed gives the same W, Ω, b wherever X lives. Drawing into X's device fails here."""
    x = torch.empty(5, 7, dtype=torch.float64, device=META)
    for phi in (relu_features(x, 16, torch.Generator().manual_seed(0)),
                laplace_fourier_features(x, 16, 0.5, torch.Generator().manual_seed(0))):
        assert phi.device == META and phi.shape == (5, 16)
    with pytest.raises(RuntimeError, match="cpu generator cannot draw on meta"):
        torch.randn(3, generator=torch.Generator(), device=META)  # the check itself works
