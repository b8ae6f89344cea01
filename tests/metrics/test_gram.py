"""The K sum's float64 products (``metrics.gram``): both add A Aᵀ to K, over several blocks of columns."""

import torch

from featlearn.metrics import gram


def _rows_first(features: int, rows: int, seed: int) -> torch.Tensor:
    """A (features, rows) as the K sum hands it over: a transposed view of float32 gradients, rows first in memory."""
    return torch.randn(rows, features, generator=torch.Generator().manual_seed(seed)).T


def test_the_fast_product_adds_a_aT_over_blocks_to_what_k_holds():
    a = _rows_first(64, 3 * gram.FAST_BYTES // (8 * 64) + 5, 0)  # three whole blocks of columns and a partial one
    b = torch.randn(64, 64, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    before = b @ b.T + (b @ b.T).T  # a K so far: exactly symmetric
    k = before.clone()
    gram.fast(k, a)
    exact = before + a.double() @ a.double().T
    assert torch.allclose(k, exact, rtol=1e-13, atol=1e-10)
    assert torch.equal(k, k.T)  # each block's syrk is symmetric, and so is their sum


def test_the_pinned_product_fills_the_upper_triangle_and_symmetric_the_rest():
    a = _rows_first(200, 700, 2)
    k = torch.zeros(200, 200, dtype=torch.float64)
    gram.pinned(k, a)
    assert torch.allclose(gram.symmetric(k), a.double() @ a.double().T, rtol=1e-13, atol=1e-10)


def test_zeros_and_ones_are_counted_exactly_in_float32():
    a = (torch.randn(300, 5000, generator=torch.Generator().manual_seed(3)) > 0.3).float()  # ReLU's derivatives
    k = torch.ones(300, 300, dtype=torch.float64)
    assert gram.zero_one(k, a)
    assert torch.equal(k, 1 + a.double() @ a.double().T)  # integer counts: no rounding at all


def test_anything_but_zeros_and_ones_is_left_to_the_float64_product():
    a = (torch.randn(30, 40, generator=torch.Generator().manual_seed(4)) > 0).float()
    k = torch.zeros(30, 30, dtype=torch.float64)
    for entry in (0.5, -1.0, float("nan"), 2.0):
        other = a.clone()
        other[3, 7] = entry
        assert not gram.zero_one(k, other)
    assert not k.any()
