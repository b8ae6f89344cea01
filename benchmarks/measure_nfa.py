"""featlearn's K sum against torch.func and batched autograd, and measure_nfa's overhead over its K sum.

Part 1, the Fig 8 MLP at 1, 10 and 100 outputs: ``k_sum.py``'s table (every route checked equal, then timed in
interleaved rounds; see that script).

Part 2 (``--resnet``): ``measure_nfa(resnet18, 64 (``--resnet-n``) CIFAR-size inputs, init, matrices=False)``
against the K sum it runs (``k_sum.covariances(fast=True)``) and the pipeline's (``fast=False``), each the best of
``--repeat // 2``.

Both parts run on ``--device`` (default cpu); on a GPU each call ends with a synchronisation, times are the wall
clock's and part 2 prints the peak memory allocated.

Run: ``python benchmarks/measure_nfa.py [--threads N] [--repeat R] [--resnet [--resnet-n N]] [--skip-mlp]
[--device cuda]`` (``--tiny``: both parts in seconds, as the tests run it).
"""

import os
import sys

os.environ["OPENBLAS_NUM_THREADS"] = sys.argv[sys.argv.index("--threads") + 1] if "--threads" in sys.argv else "1"

import argparse  # noqa: E402 (numpy's BLAS reads its thread count when numpy loads)
import copy  # noqa: E402
from collections.abc import Callable  # noqa: E402

import torch  # noqa: E402
from jacobians import best_of  # noqa: E402 (benchmarks/ is on sys.path when a benchmark runs as a script)
from k_sum import table  # noqa: E402

from featlearn.metrics import k_sum, model_nfa  # noqa: E402


def resnet_line(repeat: int, n: int, device: str = "cpu", classes: int = 1000) -> None:
    import torchvision

    torch.manual_seed(0)
    init = torchvision.models.resnet18(num_classes=classes)
    model = copy.deepcopy(init)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.01 * torch.randn_like(p))
    init, model, x = init.to(device), model.to(device), torch.randn(n, 3, 32, 32).to(device)

    def synced(fn: Callable[[], object]) -> Callable[[], None]:
        def call() -> None:
            fn()
            if x.is_cuda:
                torch.cuda.synchronize(x.device)

        return call

    k = best_of(synced(lambda: k_sum.covariances(model, x, fast=True)), repeat=repeat)
    pinned = best_of(synced(lambda: k_sum.covariances(model, x)), repeat=repeat)
    whole = best_of(synced(lambda: model_nfa.measure_nfa(model, x, init, matrices=False)), repeat=repeat)
    peak = f", peak GPU memory {torch.cuda.max_memory_allocated(x.device) / 2**30:.2f} GiB" if x.is_cuda else ""
    print(f"resnet18, {n} inputs of 3×32×32, {classes:,} outputs, {device}: K sum {k:.2f} s (the pipeline's pinned sum "
          f"{pinned:.2f} s), measure_nfa(init, matrices=False) {whole:.2f} s, ratio {whole / k:.2f}{peak}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="torch's and numpy's BLAS threads (default 1)")
    parser.add_argument("--repeat", type=int, default=5, help="rounds of part 1; part 2 takes the best of half")
    parser.add_argument("--resnet", action="store_true", help="also time measure_nfa on resnet18 (torchvision)")
    parser.add_argument("--resnet-n", type=int, default=64, help="resnet18's inputs (default 64)")
    parser.add_argument("--skip-mlp", action="store_true")
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument("--tiny", action="store_true",
                        help="one round at 2 outputs, resnet18 with 2 outputs on 2 inputs: that it runs (the tests)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), {args.repeat} rounds")
    if args.tiny:
        table([2], 1, args.device)
        resnet_line(1, 2, args.device, classes=2)
        return
    if not args.skip_mlp:
        table([1, 10, 100], args.repeat, args.device)
    if args.resnet:
        resnet_line(max(1, args.repeat // 2), args.resnet_n, args.device)


if __name__ == "__main__":
    main()
