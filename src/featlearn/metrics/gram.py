"""K += A Aᵀ in float64, for the K sum (``k_sum``): A holds one site's gradients, (features, rows), rows being every
output, sample and position of a chunk of batched backward passes.

Two products, equal to rounding (relative ~1e-16) but not bitwise:

* pinned (``k_sum.covariances``' default, the pipeline's families): blocks of addmm_ in a fixed order, the upper
  triangle only, then ``symmetric``. The published stores were computed with it, so it must not change.
* fast (``measure_nfa``, ``agop``): on the CPU, numpy's matmul of a block and its own transpose, which numpy hands to
  BLAS's symmetric rank-k update (syrk): half the products of a full one, and torch exposes none. It runs in numpy's
  BLAS, so its threads follow OPENBLAS_NUM_THREADS (or OMP_NUM_THREADS), not torch.set_num_threads. On other devices
  a full addmm_.

``zero_one`` is the exact shortcut for A of zeros and ones (ReLU's derivatives in ``readout``'s closed form).
"""

from __future__ import annotations

import numpy as np
import torch

# Bytes of the float64 rows one product of ``pinned`` converts at a time.
ROW_BYTES = 1 << 24
# Bytes of the float64 block one syrk of ``fast`` takes: small enough to stay in a core's cache (1,024 rows of 256
# features).
FAST_BYTES = 1 << 21
# Fewest columns per syrk block, so that a site with very many features still multiplies in tall blocks.
FAST_MIN_COLUMNS = 256


def pinned(k: torch.Tensor, flat: torch.Tensor) -> None:
    """The upper triangle of K += A Aᵀ (A = ``flat``, (features, rows)) in float64: A converted ``ROW_BYTES`` of rows at
    a time (no float64 copy of the whole chunk) and, past 128 features, in up to four blocks of rows of K, each
    multiplied only from its diagonal on (62% of the products at four). ``symmetric`` fills the lower triangle."""
    features = len(flat)
    blocks = max(1, min(4, features // 64))
    edges = [features * i // blocks for i in range(blocks + 1)]
    step = max(1, ROW_BYTES // (8 * features))
    for start in range(0, flat.shape[1], step):
        a = flat[:, start:start + step].to(torch.float64)
        for lo, hi in zip(edges[:-1], edges[1:]):
            k[lo:hi, lo:].addmm_(a[lo:hi], a[lo:].T)


def symmetric(k: torch.Tensor) -> torch.Tensor:
    """K from its upper triangle (``pinned``), in place."""
    lower = torch.ones_like(k, dtype=torch.bool).tril_(-1)
    return k.copy_(torch.where(lower, k.T, k))


def fast(k: torch.Tensor, flat: torch.Tensor, dtype: torch.dtype = torch.float64) -> None:
    """All of K += A Aᵀ (A = ``flat``, (features, rows)), ``FAST_BYTES``' worth of columns at a time, each block's
    product in ``dtype`` (float64; float32 only where it is exact, ``zero_one``) and summed into K: on the CPU one syrk
    per block through numpy, into buffers reused from block to block (fresh ones would cost their page faults, ~0.5 ms
    a call at 2,560 rows of 256), and added to ``k`` through its numpy view; elsewhere a matmul."""
    features, rows = flat.shape
    step = max(FAST_MIN_COLUMNS, FAST_BYTES // (8 * features))
    if k.device.type != "cpu":
        for start in range(0, rows, step):
            a = flat[:, start:start + step].to(dtype)
            if dtype == k.dtype:
                k.addmm_(a, a.T)
            else:
                k.add_(a @ a.T)
        return
    buffer = torch.empty((min(step, rows), features), dtype=dtype)  # a block's rows, each a column of A
    target, product = k.numpy(), np.empty((features, features), dtype=buffer.numpy().dtype)
    for start in range(0, rows, step):
        block = buffer[:min(step, rows - start)]
        block.copy_(flat[:, start:start + step].T)
        rows_first = block.numpy()
        np.matmul(rows_first.T, rows_first, out=product)  # the same buffer and its transpose: numpy calls syrk
        target += product


def zero_one(k: torch.Tensor, flat: torch.Tensor) -> bool:
    """K += A Aᵀ (A = ``flat``, (features, rows)) where A holds only zeros and ones: ``fast`` in float32, whose every
    block product is a count of at most a block's rows (far below float32's exact 2^24), summed into K in float64, so
    K gets what the float64 product gives, ~2.5× faster on the CPU. False, K untouched, for any other A, or one on the
    meta device (no values)."""
    if flat.is_meta or not flat.is_floating_point() or bool((flat * (1 - flat)).any()):
        return False
    fast(k, flat, torch.float32)
    return True
