"""featlearn's K sum against torch.func and batched autograd, and measure_nfa's overhead over it.

Part 1, the Fig 8 MLP (n = 256, d = 32, two hidden layers of 256, ReLU, float32): K of both hidden layers in float64
at 1, 10 and 100 outputs by five routes, checked equal before timing (relative 1e-10), each the best of ``--repeat``:
``model_nfa.covariances``; the previous one-backward-pass-per-output loop; ``vmap(jacrev)`` over samples; ``jacrev``
of the sum over samples; ``torch.autograd.grad(..., is_grads_batched=True)`` over all outputs at once. The last three
take the Jacobians through the MLP's own ``shifts`` argument and form K = JᵀJ/n in float64 as featlearn does.

Part 2 (``--resnet``): ``measure_nfa(resnet18, 64 (``--resnet-n``) CIFAR-size inputs, init, matrices=False)``
against its K sum alone.

Run: ``python benchmarks/measure_nfa.py [--threads N] [--repeat R] [--resnet [--resnet-n N]]
[--skip-mlp]``.
"""

import argparse
import copy

import torch
from jacobians import best_of  # benchmarks/ is on sys.path when a benchmark runs as a script
from torch.func import jacrev, vmap

from featlearn.metrics import model_nfa
from featlearn.models.mlp import MLP, init_mlp


def _k(jacs: list[torch.Tensor], n: int) -> list[torch.Tensor]:
    """(1/n) Σ g gᵀ over every index but the last, in float64."""
    out = []
    for jac in jacs:
        flat = jac.reshape(-1, jac.shape[-1]).to(torch.float64)
        out.append(flat.T @ flat / n)
    return out


def _zeros(model: MLP, n: int) -> list[torch.Tensor]:
    return [torch.zeros(n, layer.out_features) for layer in model.hidden]


def featlearn_sum(model: MLP, x: torch.Tensor) -> list[torch.Tensor]:
    names = [f"layers.{i}" for i in range(len(model.hidden))]
    ks, _ = model_nfa.covariances(model, x, names, batch_size=len(x))
    return [ks[name] for name in names]


def per_output_loop(model: MLP, x: torch.Tensor) -> list[torch.Tensor]:
    """featlearn's sum before batching: one backward pass per output, K accumulated in float64."""
    shifts = [s.requires_grad_() for s in _zeros(model, len(x))]
    out = model(x, shifts)
    ks = [torch.zeros(s.shape[1], s.shape[1], dtype=torch.float64) for s in shifts]
    for j in range(out.shape[1]):
        for k, g in zip(ks, torch.autograd.grad(out[:, j].sum(), shifts, retain_graph=True)):
            g = g.to(torch.float64)
            k.addmm_(g.T, g)
    return [k / len(x) for k in ks]


def vmap_jacrev(model: MLP, x: torch.Tensor) -> list[torch.Tensor]:
    def f(xa, shifts):
        return model(xa[None], [s[None] for s in shifts])[0]

    zeros = [s[0] for s in _zeros(model, 1)]
    return _k(vmap(jacrev(f, argnums=1), in_dims=(0, None))(x, zeros), len(x))


def jacrev_of_sum(model: MLP, x: torch.Tensor) -> list[torch.Tensor]:
    return _k(jacrev(lambda shifts: model(x, shifts).sum(0))(_zeros(model, len(x))), len(x))


def grads_batched(model: MLP, x: torch.Tensor) -> list[torch.Tensor]:
    shifts = [s.requires_grad_() for s in _zeros(model, len(x))]
    out = model(x, shifts)
    c = out.shape[1]
    v = torch.eye(c)[:, None, :].expand(c, len(x), c)
    return _k(torch.autograd.grad(out, shifts, v, is_grads_batched=True), len(x))


ROUTES = {"featlearn covariances": featlearn_sum, "per-output loop (before)": per_output_loop,
          "vmap(jacrev) per sample": vmap_jacrev, "jacrev of the sample sum": jacrev_of_sum,
          "is_grads_batched": grads_batched}


def mlp_table(repeat: int) -> None:
    print("| outputs | " + " | ".join(ROUTES) + " | featlearn vs best torch.func / batched |")
    print("|---" * (len(ROUTES) + 2) + "|")
    for outputs in (1, 10, 100):
        g = torch.Generator().manual_seed(outputs)
        model = init_mlp(MLP(32, [256, 256], out=outputs), [1.0, 1.0], g)
        x = torch.randn(256, 32, generator=g)
        reference = featlearn_sum(model, x)
        for name, route in ROUTES.items():
            for k, ref in zip(route(model, x), reference, strict=True):
                assert float((k - ref).detach().norm() / ref.norm()) < 1e-10, name
        times = {name: best_of(route, model, x, repeat=repeat) for name, route in ROUTES.items()}
        ours = ("featlearn covariances", "per-output loop (before)")
        rivals = min(t for name, t in times.items() if name not in ours)
        cells = " | ".join(f"{1e3 * t:.2f} ms" for t in times.values())
        print(f"| {outputs} | {cells} | {rivals / times['featlearn covariances']:.2f}× |", flush=True)


def resnet_line(repeat: int, n: int) -> None:
    import torchvision

    torch.manual_seed(0)
    init = torchvision.models.resnet18()
    model = copy.deepcopy(init)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.01 * torch.randn_like(p))
    x = torch.randn(n, 3, 32, 32)
    k_sum = best_of(model_nfa.covariances, model, x, repeat=repeat)
    whole = best_of(lambda: model_nfa.measure_nfa(model, x, init, matrices=False), repeat=repeat)
    print(f"resnet18, {n} inputs of 3×32×32, 1,000 outputs: K sum {k_sum:.2f} s, measure_nfa(init, matrices=False) "
          f"{whole:.2f} s, ratio {whole / k_sum:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--resnet", action="store_true", help="also time measure_nfa on resnet18 (torchvision)")
    parser.add_argument("--resnet-n", type=int, default=64, help="resnet18's inputs (default 64)")
    parser.add_argument("--skip-mlp", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), best of {args.repeat}")
    if not args.skip_mlp:
        mlp_table(args.repeat)
    if args.resnet:
        resnet_line(max(1, args.repeat // 2), args.resnet_n)


if __name__ == "__main__":
    main()
