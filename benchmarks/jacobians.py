"""Batched per-layer Jacobians (one backward pass) vs a per-sample autograd loop, Fig 8 network.

Times the whole K/AGOP computation for every hidden layer: n = 256, d = 32, width 256, two
hidden layers, ReLU. Run: `python benchmarks/jacobians.py` (add --threads N to change torch's; --tiny: seconds).
"""

import argparse
import time

import torch

from featlearn.metrics import nfa
from featlearn.metrics.jacobians import layer_jacobians
from featlearn.models.mlp import MLP, init_mlp


def batched(model: MLP, x: torch.Tensor) -> list[torch.Tensor]:
    jacs = layer_jacobians(model, x)
    return [nfa.agop(layer.weight.detach(), nfa.ptk_feature_covariance(j)) for layer, j in zip(model.hidden, jacs)]


def per_sample_jacobians(model: MLP, x: torch.Tensor) -> list[torch.Tensor]:
    """The straightforward way: one backward pass per sample."""
    rows: list[list[torch.Tensor]] = [[] for _ in model.hidden]
    for a in range(len(x)):
        shifts = [torch.zeros(1, layer.weight.shape[0], requires_grad=True) for layer in model.hidden]
        grads = torch.autograd.grad(model(x[a:a + 1], shifts).sum(), shifts)
        for ell, g in enumerate(grads):
            rows[ell].append(g)
    return [torch.cat(r)[:, None, :] for r in rows]


def per_sample(model: MLP, x: torch.Tensor) -> list[torch.Tensor]:
    jacs = per_sample_jacobians(model, x)
    return [nfa.agop(layer.weight.detach(), nfa.ptk_feature_covariance(j)) for layer, j in zip(model.hidden, jacs)]


def best_of(fn, *args, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--tiny", action="store_true", help="n = 16, width 16, one repeat: that it runs (the tests)")
    args = parser.parse_args()
    n, width, repeat = (16, 16, 1) if args.tiny else (256, 256, 5)
    torch.set_num_threads(args.threads)
    g = torch.Generator().manual_seed(0)
    model = init_mlp(MLP(32, [width, width]), [1.0, 1.0], g)
    x = torch.randn(n, 32, generator=g)
    for a, b in zip(batched(model, x), per_sample(model, x)):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
    print(f"Fig 8 network (n={n}, d=32, width {width}, 2 hidden layers), torch threads={args.threads}")
    for what, fast, slow in [("Jacobians of all layers", layer_jacobians, per_sample_jacobians),
                             ("Jacobians + K + AGOP (float64)", batched, per_sample)]:
        t_batch, t_loop = best_of(fast, model, x, repeat=repeat), best_of(slow, model, x, repeat=repeat)
        print(f"{what}: batched {t_batch * 1e3:.2f} ms, per-sample loop {t_loop * 1e3:.2f} ms, "
              f"speed-up {t_loop / t_batch:.1f}x")


if __name__ == "__main__":
    main()
