"""featlearn's K sum against torch.func and batched autograd, at 1, 10 and 100 outputs, on the CPU or a GPU.

The Fig 8 MLP (n = 256, d = 32, two hidden layers of 256, ReLU, float32): K = (1/n) Σ_samples Σ_outputs g gᵀ,
g = ∂f_j/∂h, of both hidden layers in float64, by
* featlearn: ``k_sum.covariances(fast=True)``, the sum ``measure_nfa`` and ``agop`` run (its checks included), and
  the pipeline's pinned products (``fast=False``), for comparison;
* ``vmap(jacrev)`` over samples, ``jacrev`` of the sum over samples, and ``torch.autograd.grad(...,
  is_grads_batched=True)`` over all outputs at once: the Jacobians through the MLP's own ``shifts`` argument, then
  K = JᵀJ/n in float64.
All are checked equal (relative 1e-10) first. Then rounds: each route once per round, in an order rotated from
round to round, timed by the process's CPU time (``time.process_time``: time another job holds the core is not
counted) and by the wall clock. Two ratios: per round, the fastest reference's time over featlearn's (the median over
rounds and the range: the luckiest of three draws against one, the stricter), and the best reference route's median
time over featlearn's. With ``--device cuda`` each route ends with a synchronisation and the table is timed by the
wall clock (the CPU time is the host's).

Page faults per call (the median minor faults, featlearn's and the references') are printed beside: on the CPU a
fault on freshly mapped memory costs microseconds, and how many a route takes depends on what glibc kept from the
route before it. ``GLIBC_TUNABLES=glibc.malloc.mmap_threshold=268435456:glibc.malloc.trim_threshold=1073741824``
(set before Python starts) keeps freed memory for reuse, so that no route faults and the times are the compute's.

torch and numpy's BLAS (where featlearn's float64 product runs on the CPU, ``gram.fast``) both get ``--threads``:
OPENBLAS_NUM_THREADS is set before numpy loads.

Run: ``[GLIBC_TUNABLES=…] python benchmarks/k_sum.py [--threads N] [--rounds R] [--outputs 1 10 100] [--device cuda]``.
"""

import os
import sys

os.environ["OPENBLAS_NUM_THREADS"] = sys.argv[sys.argv.index("--threads") + 1] if "--threads" in sys.argv else "1"

import argparse  # noqa: E402 (numpy's BLAS reads its thread count when numpy loads)
import resource  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
from torch.func import jacrev, vmap  # noqa: E402

from featlearn.metrics import k_sum  # noqa: E402
from featlearn.models.mlp import MLP, init_mlp  # noqa: E402

REFERENCES = ("vmap(jacrev)", "jacrev of the sum", "is_grads_batched")
# Per route, per round: (CPU seconds, wall seconds, minor page faults).
Times = dict[str, list[tuple[float, float, int]]]


def _k(jacs: list[torch.Tensor], n: int) -> list[torch.Tensor]:
    """(1/n) Σ g gᵀ over every index but the last, in float64."""
    out = []
    for jac in jacs:
        flat = jac.reshape(-1, jac.shape[-1]).to(torch.float64)
        out.append(flat.T @ flat / n)
    return out


def _zeros(model: MLP, n: int) -> list[torch.Tensor]:
    device = model.layers[0].weight.device
    return [torch.zeros(n, layer.out_features, device=device) for layer in model.hidden]


def _names(model: MLP) -> list[str]:
    return [f"layers.{i}" for i in range(len(model.layers) - 1)]  # not model.hidden: slicing a Sequential is slow


def featlearn_fast(model: MLP, x: torch.Tensor) -> list[torch.Tensor]:
    ks, _ = k_sum.covariances(model, x, _names(model), batch_size=len(x), fast=True)
    return [ks[name] for name in _names(model)]


def featlearn_pinned(model: MLP, x: torch.Tensor) -> list[torch.Tensor]:
    ks, _ = k_sum.covariances(model, x, _names(model), batch_size=len(x))
    return [ks[name] for name in _names(model)]


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
    v = torch.eye(c, device=out.device)[:, None, :].expand(c, len(x), c)
    return _k(torch.autograd.grad(out, shifts, v, is_grads_batched=True), len(x))


ROUTES = {"featlearn": featlearn_fast, "featlearn pinned": featlearn_pinned, "vmap(jacrev)": vmap_jacrev,
          "jacrev of the sum": jacrev_of_sum, "is_grads_batched": grads_batched}


def mlp(outputs: int, device: str = "cpu") -> tuple[MLP, torch.Tensor]:
    """The Fig 8 MLP with ``outputs`` outputs and its n = 256 inputs, on ``device``."""
    g = torch.Generator().manual_seed(outputs)
    model, x = init_mlp(MLP(32, [256, 256], out=outputs), [1.0, 1.0], g), torch.randn(256, 32, generator=g)
    return model.to(device), x.to(device)


def check(model: MLP, x: torch.Tensor) -> None:
    """Every route's K equals featlearn's to relative 1e-10."""
    reference = featlearn_fast(model, x)
    for name, route in ROUTES.items():
        for k, ref in zip(route(model, x), reference, strict=True):
            assert float((k - ref).detach().norm() / ref.norm()) < 1e-10, name


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def rounds(model: MLP, x: torch.Tensor, count: int) -> Times:
    """(CPU seconds, wall seconds, minor page faults) of every route in each of ``count`` rounds, after one warm-up
    round."""
    names = list(ROUTES)
    times: Times = {name: [] for name in names}
    for r in range(count + 1):
        for name in names[r % len(names):] + names[:r % len(names)]:
            _sync(x)
            faults, cpu, wall = _faults(), time.process_time(), time.perf_counter()
            ROUTES[name](model, x)
            _sync(x)
            if r:
                times[name].append((time.process_time() - cpu, time.perf_counter() - wall, _faults() - faults))
    return times


def _sync(x: torch.Tensor) -> None:
    if x.is_cuda:
        torch.cuda.synchronize(x.device)


def ratios(times: Times, clock: int, rivals: tuple[str, ...]) -> list[float]:
    """Per round: the fastest of ``rivals`` over featlearn, on one clock (0: CPU, 1: wall)."""
    ours = times["featlearn"]
    return [min(times[name][r][clock] for name in rivals) / ours[r][clock] for r in range(len(ours))]


def _median(times: Times, name: str, column: int) -> float:
    return statistics.median(t[column] for t in times[name])


def _cell(values: list[float]) -> str:
    return f"{statistics.median(values):.2f}× [{min(values):.2f}–{max(values):.2f}]"


def table(outputs: list[int], count: int, device: str = "cpu") -> None:
    """The table, timed by the CPU time on the CPU and by the wall clock on a GPU (where the CPU time is the host's);
    the per-round ratio on the other clock beside."""
    clock, other = (1, 0) if device.startswith("cuda") else (0, 1)
    unit, rest = ("wall", "CPU") if clock else ("CPU", "wall")
    print("| outputs | " + " | ".join(f"{name} ({unit} ms)" for name in ROUTES) + f" | best reference / featlearn per "
          f"round, {unit} | same, {rest} | best reference's median / featlearn's, {unit} | per reference, {unit} | "
          "page faults per call: featlearn; references |")
    print("|---" * (len(ROUTES) + 6) + "|")
    for c in outputs:
        model, x = mlp(c, device)
        check(model, x)
        times = rounds(model, x, count)
        cells = " | ".join(f"{1e3 * _median(times, name, clock):.1f}" for name in ROUTES)
        best = min(_median(times, name, clock) for name in REFERENCES) / _median(times, "featlearn", clock)
        each = ", ".join(f"{statistics.median(ratios(times, clock, (name,))):.2f}×" for name in REFERENCES)
        faults = ", ".join(f"{_median(times, name, 2):.0f}" for name in REFERENCES)
        print(f"| {c} | {cells} | {_cell(ratios(times, clock, REFERENCES))} | {_cell(ratios(times, other, REFERENCES))}"
              f" | {best:.2f}× | {each} | {_median(times, 'featlearn', 2):.0f}; {faults} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="torch's and numpy's BLAS threads (default 1)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--outputs", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    where = torch.cuda.get_device_name(args.device) if args.device.startswith("cuda") else "CPU"
    print(f"torch {torch.__version__}, {where}, {torch.get_num_threads()} thread(s), OPENBLAS_NUM_THREADS="
          f"{os.environ['OPENBLAS_NUM_THREADS']}, GLIBC_TUNABLES={os.environ.get('GLIBC_TUNABLES', '(unset)')}, "
          f"{args.rounds} rounds, load average {os.getloadavg()[0]:.1f}")
    table(args.outputs, args.rounds, args.device)


if __name__ == "__main__":
    main()
