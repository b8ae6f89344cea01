"""What Deep RFM needs of its device's memory, stated by the code that allocates it, so that a job declares and checks
the same numbers the algorithm spends (docs/figures/collapse.md, Deep RFM).

A layer runs on X's device and holds one N×N float64 buffer: the kernel matrix, factorized in place into its Cholesky
factor and freed once A is solved (``solve="in_place"``); the AGOP and the features recompute what they need of the
kernel over blocks of rows. The paper's N = 50,000 needs 20 GB for it, which leaves room on a 24 GB card. The
two-buffer solve (K kept beside its factor, ``solve="two_buffers"``) gives the same A bit for bit and retries a
failed factorization without rebuilding K, at twice the memory. (The thin route adds its (N, N) coordinates and (d, N)
basis, but only runs at N < d.) ``layer_bytes`` is one layer's need, ``run_bytes`` a whole run's.
"""

from __future__ import annotations

import torch

from featlearn.rfm.kernels import GRADIENT_BLOCK_ROWS

# how a layer solves (K + μI) A = Y, leanest first; the store's ``solve`` attribute names the one a run took
SOLVES = {"in_place": "one N×N float64 buffer, K factorized in place",
          "two_buffers": "two N×N float64 buffers, K and its Cholesky factor"}


def check_solve(solve: str) -> None:
    """Raise a ValueError naming the allowed solves, before anything is allocated."""
    if solve not in SOLVES:
        raise ValueError(f"Deep RFM: unknown solve {solve!r}; allowed: {tuple(SOLVES)}")


def layer_bytes(n: int, d: int, width: int, *, solve: str = "in_place", dtype: torch.dtype = torch.float64,
                overwrite: bool = False) -> int:
    """Bytes one layer allocates on its device on top of its input X (n, d) in ``dtype``: an upper bound of its peak,
    the same on every device (torch's allocations; a CUDA context is not counted).

    Alive through the layer: the normalized X (n, d), unless the layer may ``overwrite`` its input, and on the thin
    route (n < d) the coordinates (n, n) and basis (d, n). On top of them, the largest of
      * the solve: the float64 kernel matrix, factorized in place (1 (n, n)) or beside its factor (2), plus for a
        non-float64 X a row block of its kernel (in place) or the whole kernel in X's dtype (two buffers);
      * the AGOP: three (b, n) blocks, b = min(2048, n/4), and its float64 (r, r) sum, r = min(n, d);
      * the features: X̃ (n, d) (thin: first (n, n)), Φ (n, width), the random weights (width, d), and M with eigh's
        workspace and M^{1/2}, at most 4 (r, r) float64;
    plus 64 MiB for the (n, K) targets and coefficients, LAPACK's small workspaces and the allocator's rounding.
    The paper's n = 50,000 with d = width = 4096 (cos): 21.7 GB in place (41.7 GB with two buffers).
    """
    check_solve(solve)
    item = torch.empty((), dtype=dtype).element_size()
    thin = n < d
    r = min(n, d)
    rows = max(1, min(GRADIENT_BLOCK_ROWS, n // 4))
    held = item * ((not overwrite) * n * d + thin * (n * n + d * n))
    if solve == "in_place":
        solve_bytes = 8 * n * n + (item != 8) * item * GRADIENT_BLOCK_ROWS * n
    else:
        solve_bytes = 16 * n * n + (item != 8) * item * n * n
    agop = 3 * item * rows * n + 8 * r * r
    features = item * (n * d + n * width + width * d) + 8 * (thin * n * n + 4 * r * r)
    return held + max(solve_bytes, agop, features) + (1 << 26)


def run_bytes(n: int, d: int, width: int, *, solve: str = "in_place", dtype: torch.dtype = torch.float64) -> int:
    """Peak bytes of a whole Deep RFM run (``DeepRFM.fit``) on its device, its input included: what a job on a shared
    GPU declares. n samples of dimension d (the data's), random features of ``width``, features kept in ``dtype``.

    The run holds its own copy of X in ``dtype`` (layer 1's input: X given on the CPU or in another dtype, as the
    pipeline gives it) and then the previous layer's features (n, width), and lets each layer normalize them in
    place. The larger of layer 1 (input (n, d)) and the later layers (input (n, width)), each with its three stages
    and two temporaries of the metrics computed between layers. The paper's n = 50,000, in place: 21.7 GB for cos
    (width 4096), 21.3 GB for ReLU at d = 3072 (CIFAR-10, SVHN) and 20.5 GB at d = 784 (MNIST).
    """
    item = torch.empty((), dtype=dtype).element_size()

    def one(d_in: int) -> int:
        stages = item * (n * d_in + n * d_in + n * width + 2 * n * max(d_in, width))  # X, X̃, Φ; metrics temporaries
        return max(item * n * d_in + layer_bytes(n, d_in, width, solve=solve, dtype=dtype, overwrite=True), stages)

    return max(one(d), one(width))
