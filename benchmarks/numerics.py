"""What pinning the CPU numerics (featlearn.pipeline.numerics.PINNED) costs: quick-scale training and measurement,
the Fig 8 Jacobian/AGOP sum and a Deep RFM layer,
each timed in a fresh process with and without the pins, in alternation.

Run from the repository root: `python benchmarks/numerics.py [--repeats 3]`. Each workload runs as a child process
(the pins are read when torch loads), pinned and unpinned in turn, so a drift in the machine's speed falls on both;
the table gives the median seconds of each and their ratio (`--tiny --repeats 1`: three small workloads, seconds).
The training workloads are the first quick-scale unit of each named experiment, trained and measured as its jobs do
(synthetic data generated, real data from its offline source), on one thread; the convolutional networks for their
first ``EPOCHS`` epochs.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = ["chain_fig1", "real_mlp", "vgg_cifar", "gpt_shakespeare", "collapse_resnet"]
EPOCHS = 2  # the convolutional networks' quick runs take minutes; their first epochs cost what any epoch does


def unit_workload(name: str, scale: str = "quick") -> float:
    """Train and measure the first unit of experiment ``name`` at ``scale``; the seconds it took."""
    import torch
    import yaml

    from featlearn.data.prepare import prepare
    from featlearn.data.synthetic import make_dataset
    from featlearn.metrics.nfa import hidden_layer_nfcs
    from featlearn.pipeline import experiments as fx
    from featlearn.train import train

    torch.set_num_threads(1)
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text()) | {"scale": scale}
    unit = next(iter(fx.units(cfg, name).values()))
    if "epochs" in unit["train"] and unit["model"].get("arch", "mlp") != "mlp":
        unit["train"]["epochs"] = EPOCHS
    kind = fx.kind_of(unit["kind"])
    blocks = kind.datasets(unit)
    data = [make_dataset(b) if "task" in b else prepare(b, str(ROOT / "data")) for b in blocks]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        nfcs = hidden_layer_nfcs if unit["train"]["optimizer"] == "slo_adaptive" else None
        run = train(unit, data[0], Path(tmp) / "run.pt", Path(tmp) / "run.ckpt", "cpu", nfcs)
        kind.measure(unit, data, run, torch.device("cpu"))
    return time.perf_counter() - start


def jacobian_workload(times: int = 20) -> float:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import torch
    from jacobians import batched

    from featlearn.models.mlp import MLP, init_mlp

    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    model = init_mlp(MLP(32, [256, 256]), [1.0, 1.0], g)
    x = torch.randn(256, 32, generator=g)
    start = time.perf_counter()
    for _ in range(times):
        batched(model, x)
    return time.perf_counter() - start


def deep_rfm_workload(n: int = 3000) -> float:
    import torch

    from featlearn.rfm.deep_rfm import DeepRFM

    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(n, 64, generator=g, dtype=torch.float64), torch.randint(0, 10, (n,), generator=g)
    start = time.perf_counter()
    DeepRFM(depth=2, width=256, kernel="gaussian", bandwidth=10.0, ridge=1e-3, gram_layers=(1,)).fit(x, y)
    return time.perf_counter() - start


WORKLOADS = {**{f"train+measure {e}": ("unit", f"quick/{e}") for e in EXPERIMENTS},
             "Fig 8 Jacobians ×20": ("jacobian", "20"), "Deep RFM, N = 3000, 2 layers": ("deep_rfm", "3000")}
# --tiny: that every workload runs, in seconds (the tests)
TINY = {"train+measure chain_fig1 (smoke)": ("unit", "smoke/chain_fig1"), "Fig 8 Jacobians ×1": ("jacobian", "1"),
        "Deep RFM, N = 300, 2 layers": ("deep_rfm", "300")}


def child(kind: str, arg: str) -> None:
    """Run one workload: ``unit`` with ``<scale>/<experiment>``, the others with their size."""
    if kind == "unit":
        seconds = unit_workload(*reversed(arg.split("/")))
    else:
        seconds = {"jacobian": jacobian_workload, "deep_rfm": deep_rfm_workload}[kind](int(arg))
    print(json.dumps(seconds))


def timed(kind: str, arg: str, pinned: bool) -> float:
    from featlearn.pipeline.numerics import PINNED

    env = {k: v for k, v in os.environ.items() if k not in PINNED} | (PINNED if pinned else {})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))
    out = subprocess.run([sys.executable, __file__, "--child", kind, arg], env=env, cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tiny", action="store_true", help="one repeat of three small workloads: that they run")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    print("| workload | unpinned (s) | pinned (s) | pinned / unpinned |\n|---|---:|---:|---:|")
    for label, (kind, arg) in (TINY if args.tiny else WORKLOADS).items():
        free, pinned = [], []
        for _ in range(args.repeats):
            free.append(timed(kind, arg, False))
            pinned.append(timed(kind, arg, True))
        ratio = statistics.median(p / f for p, f in zip(pinned, free))
        print(f"| {label} | {statistics.median(free):.2f} | {statistics.median(pinned):.2f} | {ratio:.2f} |",
              flush=True)


if __name__ == "__main__":
    main()
