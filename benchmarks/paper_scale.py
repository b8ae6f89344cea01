"""Projected paper-scale cost: time one unit of every job family on tensors of the paper's shapes, multiply out.

The paper scale has never run end to end, and a cluster's time and memory requests (``featlearn.resources``) should
come from measurements. This script times ONE unit of each job family on this machine's device and multiplies it by
the counts the configuration implies:

* training: one optimizer step of the run's network at the paper's batch and input shape (a full-batch step for GD),
  × the steps of a run (``featlearn.train.schedule`` with the dataset's real size), × the runs of the experiment;
* measurement: one measured snapshot (``featlearn.metrics.measure.measure_run`` on a record of two snapshots,
  halved), × the snapshots of a run, plus the once-per-run random-Q draws (Figs 1 and 16);
* deep_rfm: one Deep RFM layer (``featlearn.rfm.deep_rfm.rfm_layer`` + the collapse metrics of its three stages,
  float64) at the paper's N and d, × the depth, one job per dataset;
* store: the one-job stores that take no device (theory, tangent penalties), whole; tangent MNIST per seed (its
  small CPU runs, both tasks: data, training and kernels through the pipeline's functions).

Inputs are random tensors with the keys and shapes the data stage writes: these costs do not depend on the values
(one exception, said in the table: a real collapsed Deep RFM layer may need extra Cholesky attempts). Where the
paper's size does not fit this machine (its memory, or the time you give it), ``--measure-n`` and ``--rfm-n`` time
smaller sizes and extrapolate; the table says "extrapolated" and how. ``--unit-seconds FILE.json`` replaces unit
costs by ones measured elsewhere (by hand on a GPU, say) to project from those.

Run: `python benchmarks/paper_scale.py [--device auto|cpu|cuda] [--only training measurement deep_rfm store]
[--threads N] [--repeat K] [--measure-n N] [--rfm-n N ...] [--json PATH] [--unit-seconds FILE.json [--skip-timing]]`
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import platform
import resource
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
import yaml

from featlearn import resources
from featlearn.data.prepare import prepare
from featlearn.data.real import DATASETS, preprocess
from featlearn.data.synthetic import haar_orthogonal, make_dataset
from featlearn.experiments import KINDS, kind_of, units
from featlearn.experiments.deep_rfm import data_block
from featlearn.metrics.collapse import collapse_metrics
from featlearn.metrics.nfa import hidden_layer_nfcs
from featlearn.models import build_model
from featlearn.optim.slo import adaptive_speeds
from featlearn.rfm.deep_rfm import STEPS, pm_one_hot, rfm_layer
from featlearn.train import loss_fn, make_optimizer, schedule, snapshot, token_batch, train, training_tensors

ROOT = Path(__file__).resolve().parents[1]
FAMILIES = ("training", "measurement", "deep_rfm", "store")
PAPERS = {"alignment": 17, "collapse": 12, "tangent": 3}
# Sweep keys that change values, not shapes: runs differing only in these share one timing (and one table row).
COST_FREE = ("seed", "alpha", "init_scale")
# Training and test points the data stage keeps of each dataset (the first 50,000 where there are more; GTSRB and
# STL-10 have fewer, config.yaml's real_mlp comment), and the Shakespeare corpus (vocabulary, train/val characters).
AVAILABLE = {"mnist": (60_000, 10_000), "cifar10": (50_000, 10_000), "cifar100": (50_000, 10_000),
             "svhn": (73_257, 26_032), "gtsrb": (26_640, 12_630), "stl10": (5_000, 8_000), "celeba": (7_500, 0)}
SHAKESPEARE = {"vocab": 65, "train": 1_003_854, "val": 111_540}
# Orders in N of each step of a Deep RFM layer: k(X, X) N²d, Cholesky N³, AGOP N²Kd + NKd² (the second dominates
# below N ≈ d), M^{1/2} = eigh of d×d (none), features NdD, collapse metrics Nd.
RFM_ORDERS = {"kernel": (2,), "solve": (3,), "agop": (1, 2), "sqrt": (0,), "features": (1,), "metrics": (1,)}
HAAR_D_MAX = 4096  # larger Haar draws (CelebA's d = 12,288) are timed here and scaled by d³ (a QR and a product)


@dataclass
class Row:
    """One kind of job: what one unit is, how many units a job has, how many such jobs the figures need."""

    family: str
    experiment: str
    variant: str  # the sweep values the cost depends on ("cifar10", "slo"); "" when the experiment has one kind
    unit: str
    units_per_job: int
    jobs: int
    runs_on: str  # where the job computes under `device: auto` at the paper scale (featlearn.resources)
    seconds: float | None = None  # one unit
    once_s: float = 0.0  # once per job on top of the units (measurement: random-Q draws)
    how: str = ""  # measured, extrapolated (how), or given (file)
    memory_mb: float | None = None
    memory_how: str = ""
    maxrss_growth_mb: float | None = None  # CPU: growth of the process's ru_maxrss (0 below an earlier peak)
    note: str = ""
    paper_n: int | None = None  # Deep RFM: the paper's N, to scale a unit cost given at another N
    detail: dict = field(default_factory=dict)
    cpu_utilization: float | None = None  # process CPU s / wall s while timing: below the threads = a busy machine

    @property
    def id(self) -> str:
        return "/".join(p for p in (self.family, self.experiment, self.variant) if p)

    @property
    def hours_per_job(self) -> float | None:
        return None if self.seconds is None else (self.seconds * self.units_per_job + self.once_s) / 3600

    @property
    def total_hours(self) -> float | None:
        return None if self.seconds is None else self.hours_per_job * self.jobs


@dataclass
class Timing:
    """A timed unit: seconds, the seconds once per job, peak memory (MiB), and how each was obtained."""

    seconds: float
    how: str = "measured"
    memory_mb: float | None = None
    memory_how: str = ""
    once_s: float = 0.0
    note: str = ""
    maxrss_growth_mb: float | None = None
    detail: dict = field(default_factory=dict)  # per-step seconds and sizes, for the JSON


@dataclass
class Job:
    row: Row
    signature: str  # rows with equal signatures (CIFAR-10 and SVHN shapes, say) are timed once
    time_unit: Callable[[], Timing] = field(repr=False)


# ---- the device: synchronization, medians, peak memory --------------------------------------------------------------


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def clock(fn: Callable[[], object], device: torch.device) -> float:
    """Seconds of one call, the device's queue drained on both sides."""
    sync(device)
    start = time.perf_counter()
    fn()
    sync(device)
    return time.perf_counter() - start


def median_seconds(fn: Callable[[], object], device: torch.device, repeat: int, warmup: int) -> float:
    """Median of ``repeat`` calls after ``warmup`` untimed ones (CUDA context, cuDNN autotuning, allocator growth)."""
    for _ in range(warmup):
        fn()
    return statistics.median(clock(fn, device) for _ in range(repeat))


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class PeakMemory:
    """Peak memory of a block, in MiB. CUDA: ``max_memory_allocated`` above what was allocated at entry. CPU: the
    highest resident set size sampled every 5 ms above the size at entry; ``ru_maxrss`` (also kept, as
    ``maxrss_growth_mb``) only ever grows, so it reads 0 for a family smaller than one timed before it."""

    def __init__(self, device: torch.device) -> None:
        self.device, self.peak_mb, self.maxrss_growth_mb = device, 0.0, 0.0

    def __enter__(self) -> PeakMemory:
        gc.collect()
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
            self._base = torch.cuda.memory_allocated()
        else:
            self._base, self._peak, self._stop = _rss_bytes(), _rss_bytes(), threading.Event()
            self._maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.005):
            self._peak = max(self._peak, _rss_bytes())

    def __exit__(self, *exc: object) -> None:
        if self.device.type == "cuda":
            self.peak_mb = (torch.cuda.max_memory_allocated() - self._base) / 2**20
            return
        self._stop.set()
        self._thread.join()
        self.peak_mb = (max(self._peak, _rss_bytes()) - self._base) / 2**20
        self.maxrss_growth_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - self._maxrss) / 1024

    @property
    def label(self) -> str:
        return "CUDA max_memory_allocated" if self.device.type == "cuda" else "peak RSS growth (sampled)"


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return f"{torch.cuda.get_device_name(device)} (CUDA {torch.version.cuda}, torch {torch.__version__})"
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor() or "unknown CPU")
    return (f"CPU {model}, {torch.get_num_threads()} torch threads ({os.cpu_count()} cores visible), "
            f"torch {torch.__version__}")


# ---- fake datasets with the paper's keys and shapes ---------------------------------------------------------------


def sizes(data: dict) -> tuple[int, int]:
    """(training, test) points a run's dataset file holds at the paper scale."""
    if "task" in data:
        return data["n"], data["n_test"]
    have_train, have_test = AVAILABLE[data["dataset"]]
    return min(data["n"], have_train), min(data.get("n_test", 10_000), have_test)


def fake_data(data: dict, fraction: float = 1.0) -> dict:
    """A run's dataset file as the data stage writes it, with random values: synthetic tasks are generated for real
    (they are tiny), images go through the library's own ``preprocess`` (keys, target format, flattening, class
    order), text is random character ids. ``fraction`` shrinks the image splits (for extrapolation in n)."""
    if "task" in data:
        return make_dataset(data)
    gen = torch.Generator().manual_seed(0)
    if data["dataset"] == "shakespeare_char":
        def ids(n: int) -> torch.Tensor:
            return torch.randint(SHAKESPEARE["vocab"], (n,), generator=gen).to(torch.uint16)

        vocab = "".join(chr(32 + i) for i in range(SHAKESPEARE["vocab"]))
        return {"vocab": vocab, "train": ids(SHAKESPEARE["train"]), "val": ids(SHAKESPEARE["val"])}
    spec = DATASETS[data["dataset"]]
    side = data.get("size") or spec.size
    n_train, n_test = (round(s * fraction) for s in sizes(data))

    def split(n: int) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.rand(n, spec.channels, side, side, generator=gen), torch.randint(spec.classes, (n,), generator=gen)

    tensors = preprocess(split(n_train), split(n_test) if n_test else None, spec.classes,
                         standardize=data["standardize"], targets=data["targets"], flatten=data["flatten"],
                         sort_by_class=data.get("sort_by_class", False))
    return tensors | {"name": data["dataset"], "source": "random tensors of the paper's shapes (benchmark)",
                      "preprocessing": json.dumps({"size": side})}


def data_shape(data: dict) -> dict:
    """What a dataset contributes to a unit's cost: shapes and sizes, not names or values."""
    if "task" in data:
        return {"d": data["d"], "n": data["n"], "n_test": data["n_test"]}
    if data["dataset"] == "shakespeare_char":
        return {"text": SHAKESPEARE}
    spec = DATASETS[data["dataset"]]
    return {"image": (spec.channels, data.get("size") or spec.size), "classes": spec.classes, "sizes": sizes(data),
            "flatten": data["flatten"], "targets": data["targets"]}


def input_dim(data: dict) -> int:
    """d of a flattened input (synthetic or image)."""
    if "task" in data:
        return data["d"]
    spec = DATASETS[data["dataset"]]
    return spec.channels * (data.get("size") or spec.size) ** 2


def signature(*parts: object) -> str:
    return json.dumps(parts, sort_keys=True, default=str)


def variants(config: dict, name: str) -> dict[str, list[dict]]:
    """The runs of an experiment grouped by the sweep values that change their cost (dataset, optimizer)."""
    groups: dict[str, list[dict]] = {}
    for spec in units(config, name).values():
        label = ",".join(str(v) for k, v in spec["sweep"].items() if k not in COST_FREE)
        groups.setdefault(label, []).append(spec)
    return groups


def runs_on(stage: str, kind: str) -> str:
    """Where a job of ``stage`` (train, measure) computes under ``device: auto`` at the paper scale."""
    return "GPU" if resources.gpus("auto", "paper", stage, kind) else "CPU"


def uncosted(spec: dict) -> dict:
    """A spec without the values that do not change a unit's cost (learning rates, init scales, schedule lengths)."""
    model = {k: v for k, v in spec["model"].items() if k not in ("gain", "init_scales", "readout_scale")}
    train = {k: spec["train"].get(k) for k in ("optimizer", "batch_size", "momentum", "loss", "grad_clip")}
    return {"model": model, "train": train, "measure": spec["measure"], "data": data_shape(spec["data"])}


# ---- training: one optimizer step --------------------------------------------------------------------------------


def time_training_step(spec: dict, device: torch.device, repeat: int) -> Timing:
    """Median seconds of one step as ``featlearn.train.train`` takes it: the batch, forward, loss read back with
    ``.item()`` (as the loop does, which synchronizes), backward, clipping, the optimizer; adaptive SLO adds its
    full-batch UC-NFC. The learning rate is a small constant: values do not change the cost, diverging NaNs could."""
    tr = spec["train"]
    with PeakMemory(device) as memory:  # the dataset counts: a job holds it (on the GPU too, as train.train does)
        data = fake_data(spec["data"])
        model = build_model(spec, data).to(device).train()
        optimizer = make_optimizer(model, tr)
        tensors = training_tensors(data)
        gen = torch.Generator().manual_seed(0)
        if "tokens" in tensors:
            def batch() -> tuple[torch.Tensor, ...]:
                pair = token_batch(tensors["tokens"], tr["batch_size"], spec["model"]["block_size"], gen)
                return tuple(t.to(device) for t in pair)
        else:
            x, y = tensors["x"].to(device), tensors["y"].to(device)
            size = tr.get("batch_size") or len(x)
            order = torch.randperm(len(x), generator=gen)

            def batch() -> tuple[torch.Tensor, ...]:
                idx = order[:size]
                return x[idx], y[idx]

        def step() -> None:
            if tr["optimizer"] == "slo_adaptive":
                optimizer.set_speeds(adaptive_speeds(hidden_layer_nfcs(model, x), len(model.layers),
                                                     tr["slo_adaptive"]["s"]))
            for group in optimizer.param_groups:
                group["lr"] = 1e-6
            optimizer.zero_grad()
            xb, yb = batch()
            loss = loss_fn(tr.get("loss", "mse"), model(xb), yb)
            loss.item()
            loss.backward()
            if tr.get("grad_clip"):
                torch.nn.utils.clip_grad_norm_(model.parameters(), tr["grad_clip"])
            optimizer.step()

        seconds = median_seconds(step, device, repeat, warmup=3 if device.type == "cuda" else 1)
    return Timing(seconds, memory_mb=memory.peak_mb, memory_how=memory.label, maxrss_growth_mb=memory.maxrss_growth_mb)


def training_jobs(config: dict, names: list[str], device: torch.device, repeat: int) -> list[Job]:
    jobs = []
    for name in names:
        kind = config["experiments"][name]["kind"]
        for variant, specs in variants(config, name).items():
            spec = specs[0]
            n = spec["train"]["batch_size"] if spec["data"].get("dataset") == "shakespeare_char" else sizes(
                spec["data"])[0]
            batch = spec["train"].get("batch_size")
            unit = f"one step, batch {batch}" if batch else f"one full-batch step, n = {n:,}"
            row = Row("training", name, variant, unit, schedule(spec, n)["steps"], len(specs), runs_on("train", kind))
            jobs.append(Job(row, signature("training", uncosted(spec)),
                            lambda spec=spec: time_training_step(spec, device, repeat)))
    return jobs


# ---- measurement: one snapshot ------------------------------------------------------------------------------------


def snapshot_seconds(spec: dict, fraction: float, device: torch.device) -> tuple[float, float, str]:
    """(seconds per snapshot, peak MiB with the dataset, memory label) of the run's measurement job (its kind's
    ``measure``, i.e. ``metrics.measure.measure_run``) on ``fake_data(…, fraction)`` and a record of two snapshots
    (init and a perturbed copy, so centered quantities are not zero), halved: its once-per-run parts are small once
    the random-Q draws are out (``haar_seconds``)."""
    with PeakMemory(device) as memory:
        data = fake_data(spec["data"], fraction)
        model = build_model(spec, data)
        first = snapshot(model)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.01 * torch.randn_like(p))
        record = {"snapshots": {0: first, 1: snapshot(model)}, "losses": torch.zeros(1, dtype=torch.float64),
                  "speeds": torch.zeros(0, dtype=torch.float64), "status": "completed", "diverged_step": None,
                  "schedule": {"steps": 1, "steps_per_epoch": 1, "warmup_steps": 0, "measure": [0, 1]}}
        seconds = clock(lambda: kind_of(spec["kind"]).measure(spec, [data], record, device), device)
    return seconds / 2, memory.peak_mb, memory.label


def haar_seconds(d: int, draws: int, device: torch.device) -> tuple[float, str]:
    """Seconds of a run's ``draws`` random Q = O diag(λ) Oᵀ at d (O Haar, drawn on the CPU as measure.py does, then
    the product on the device): once per run, after the last snapshot. Above ``HAAR_D_MAX``, scaled by d³."""
    at = min(d, HAAR_D_MAX)
    lam = torch.rand(at, dtype=torch.float64, device=device)

    def draw() -> torch.Tensor:
        o = haar_orthogonal(at, torch.Generator().manual_seed(0)).to(device)
        return (o * lam) @ o.T

    seconds = draws * clock(draw, device) * (d / at) ** 3
    how = f"{draws} Haar draws at d = {d:,}" + (f", extrapolated by d³ from d = {at:,}" if at < d else "")
    return seconds, how


def time_measurement(spec: dict, device: torch.device, max_n: int | None) -> Timing:
    """Seconds of one snapshot at the paper's n; or, when ``max_n`` is smaller, with every per-sample set shrunk by
    one factor f (training and test points, VGG's n_measure images) at f = max_n/n/4 and max_n/n, extrapolated
    affinely in f to f = 1: a snapshot is per-sample work (Jacobians, K, losses, NC1), linear in f, plus constant
    d×d algebra. The random-Q draws are timed apart (``haar_seconds``), once per run."""
    spec = json.loads(json.dumps(spec))
    draws = spec["measure"].pop("random_q_draws", 0)
    data = spec["data"]
    n_paper = None if data.get("dataset") == "shakespeare_char" or "task" in data else sizes(data)[0]

    def at(f: float) -> tuple[float, float, str]:
        shrunk = json.loads(json.dumps(spec))
        if "n_measure" in shrunk["measure"]:
            shrunk["measure"]["n_measure"] = max(1, round(shrunk["measure"]["n_measure"] * f))
        return snapshot_seconds(shrunk, f, device)

    if device.type == "cuda":  # warm-up, untimed: CUDA context, cuBLAS/cuDNN handles, the allocator
        at(min(1.0, 256 / n_paper) if n_paper else 1.0)
    if n_paper is None or max_n is None or max_n >= n_paper:
        seconds, peak, label = at(1.0)
        how, memory_how = "measured", label
    else:
        (t1, m1, label), (t2, m2, _) = at(max_n / n_paper / 4), at(max_n / n_paper)
        f2 = max_n / n_paper
        per_f = (t2 - t1) / (0.75 * f2)
        seconds = t2 + per_f * (1 - f2) if per_f > 0 else t2 / f2  # noise can invert them: then proportional
        peak = m2 + max(m2 - m1, 0) / (0.75 * f2) * (1 - f2)
        how = f"extrapolated: affine in n from n = {max_n // 4:,} and {max_n:,}"
        memory_how = f"{label}, extrapolated alike"
    once, note = haar_seconds(input_dim(data), draws, device) if draws else (0.0, "")
    return Timing(seconds, how, peak, memory_how, once_s=once,
                  note=f"+ {once:.3g} s once per run: {note}" if once else "")


def measurement_jobs(config: dict, names: list[str], device: torch.device, max_n: int | None) -> list[Job]:
    jobs = []
    for name in names:
        kind = config["experiments"][name]["kind"]
        for variant, specs in variants(config, name).items():
            spec = specs[0]
            text = spec["data"].get("dataset") == "shakespeare_char"
            plan = schedule(spec, spec["train"]["batch_size"] if text else sizes(spec["data"])[0])
            snapshots = sum(s >= plan["warmup_steps"] for s in plan["measure"])
            snapshots += bool(spec["measure"].get("centered") and plan["warmup_steps"])  # J₀ before a warm-up
            family = spec["measure"].get("family", "nfa")
            row = Row("measurement", name, variant, f"one snapshot ({family})", snapshots, len(specs),
                      runs_on("measure", kind))
            jobs.append(Job(row, signature("measurement", uncosted(spec)),
                            lambda spec=spec: time_measurement(spec, device, max_n)))
    return jobs


# ---- Deep RFM: one layer ------------------------------------------------------------------------------------------


LAYERS: dict[str, dict[str, float]] = {}  # one timing per layer shape: the cos jobs share their layers at d = 4,096


def rfm_layer_seconds(model: dict, kernel: str, d: int, n: int, thin: bool, device: torch.device) -> dict[str, float]:
    """Seconds per step of one layer (``rfm_layer``'s own split) on X (n, d) float64 already on the device, plus
    the collapse metrics deep_rfm computes on its three stages, and the peak memory (key ``memory_mb``)."""
    key = signature(model["activation"], model["width"], model["gamma"], kernel, d, n, thin, str(device))
    if key in LAYERS:
        return LAYERS[key]
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(n, d, dtype=torch.float64, generator=gen).to(device)
    labels = (torch.arange(n) * 10 // n).to(device)  # class-sorted, as the data stage writes Deep RFM's data
    y = pm_one_hot(labels)
    with PeakMemory(device) as memory:
        sync(device)
        start = time.perf_counter()
        out = rfm_layer(x, y, gen, kernel=kernel, bandwidth=model["bandwidth"], ridge=model["ridge"],
                        activation=model["activation"], width=model["width"], gamma=model["gamma"],
                        normalize_agop=model["normalize_agop"], thin=thin)
        sync(device)
        layer = time.perf_counter() - start
        metrics = clock(lambda: [collapse_metrics(h, labels) for h in (out.x, out.x_tilde, out.features)], device)
    steps = dict(out.seconds) if set(STEPS) <= set(out.seconds) else {"solve": layer}  # else: all of it as N³
    LAYERS[key] = {**steps, "metrics": metrics, "total": layer + metrics, "memory_mb": memory.peak_mb}
    return LAYERS[key]


def project_step(times: dict[int, float], orders: tuple[int, ...], n_paper: int) -> float:
    """One step's seconds at n_paper: t(N) = Σ c_k N^k over its orders, fitted to the timed sizes when it has more
    than one and the fit is nonnegative; else the highest order from the largest size (an upper bound)."""
    ns = sorted(times)
    if len(orders) > 1 and len(ns) >= len(orders):
        coef = np.linalg.lstsq(np.array([[n**k for k in orders] for n in ns], dtype=float),
                               np.array([times[n] for n in ns]), rcond=None)[0]
        if min(coef) >= 0:
            return float(sum(c * n_paper**k for c, k in zip(coef, orders)))
    return times[ns[-1]] * (n_paper / ns[-1]) ** max(orders)


def project_rfm(by_n: dict[int, dict[str, float]], n_paper: int) -> tuple[float, str]:
    """(seconds at n_paper, how): each step by its orders in N (``RFM_ORDERS``, ``project_step``), with the
    log-log slope of the totals (how far from N³ these sizes are) and plain N³ scaling of the total (an upper
    bound, far off while the d×d and N·d² terms dominate)."""
    ns = sorted(by_n)
    steps = [k for k in RFM_ORDERS if k in by_n[ns[-1]]]
    seconds = sum(project_step({n: by_n[n][k] for n in ns}, RFM_ORDERS[k], n_paper) for k in steps)
    cubic = by_n[ns[-1]]["total"] * (n_paper / ns[-1]) ** 3
    slope = np.polyfit(np.log(ns), np.log([by_n[n]["total"] for n in ns]), 1)[0] if len(ns) > 1 else float("nan")
    return seconds, (f"from N = {', '.join(f'{n:,}' for n in ns)} by step orders (fitted exponent {slope:.2f}; "
                     f"∝ N³: {cubic:.3g} s)")


def time_rfm_job(unit: dict, dataset: str, d: int, n_paper: int, ns: list[int] | None,
                 device: torch.device) -> Timing:
    """Mean seconds per layer of one Deep RFM job: layer 1 at the dataset's d, layers 2..depth at d = width; at the
    paper's N, or at the smaller ``ns`` and extrapolated (``project_rfm``). Memory at a smaller N adds what two
    N×N float64 buffers grow by up to the paper's N: the most ``rfm_layer`` holds at once (its docstring)."""
    model = unit["model"]
    kernel, depth, width = model["kernel"][dataset], model["depth"], model["width"]
    ns = sorted(n for n in ns or [] if n < n_paper) or [n_paper]
    rfm_layer_seconds(model, kernel, 64, 64, False, device)  # warm-up, untimed
    per_layer, memory, notes, detail = [], 0.0, [], {}
    for d_l in (d, width):
        # thin: the route the paper's N takes (N > d: the full one), even where a smaller n would pick the other
        by_n = {n: rfm_layer_seconds(model, kernel, d_l, n, n_paper < d_l, device) for n in ns}
        detail[f"d={d_l}"] = by_n
        memory = max(memory, by_n[ns[-1]]["memory_mb"] + 2 * 8 * (n_paper**2 - ns[-1] ** 2) / 2**20)
        if ns == [n_paper]:
            per_layer.append(by_n[n_paper]["total"])
        else:
            seconds, how = project_rfm(by_n, n_paper)
            per_layer.append(seconds)
            notes.append(f"d = {d_l:,} {how}")
    label = PeakMemory(device).label
    timing = Timing((per_layer[0] + (depth - 1) * per_layer[1]) / depth, "measured", memory, label, detail=detail)
    if notes:
        timing.how = "extrapolated " + "; ".join(notes)
        timing.memory_how = f"{label} at N = {ns[-1]:,}, extrapolated: + two N×N float64 buffers up to N = {n_paper:,}"
    timing.note = (f"layer 1 {per_layer[0]:.3g} s, later layers {per_layer[1]:.3g} s; random data: a collapsed "
                   "real layer may add Cholesky retries (jitter)")
    return timing


def deep_rfm_jobs(config: dict, names: list[str], device: torch.device, ns: list[int] | None) -> list[Job]:
    jobs = []
    for name in names:
        for dataset, unit in units(config, name).items():
            m = unit["model"]
            d = input_dim({"dataset": dataset})
            n = sizes(data_block(unit, dataset))[0]
            what = f"one layer (mean of layer 1 at d = {d:,} and {m['depth'] - 1} at d = {m['width']:,}), N = {n:,}"
            row = Row("deep_rfm", name, dataset, what, m["depth"], 1, runs_on("measure", "deep_rfm"), paper_n=n)
            key = signature("deep_rfm", m, m["kernel"][dataset], d, n)
            jobs.append(Job(row, key, lambda u=unit, dataset=dataset, d=d, n=n: time_rfm_job(u, dataset, d, n, ns,
                                                                                           device)))
    return jobs


# ---- one-job stores (CPU code: they take no device) ---------------------------------------------------------------


def time_cpu(fn: Callable[[], object]) -> Timing:
    cpu = torch.device("cpu")
    with PeakMemory(cpu) as memory:
        seconds = clock(fn, cpu)
    return Timing(seconds, memory_mb=memory.peak_mb, memory_how=memory.label,
                  maxrss_growth_mb=memory.maxrss_growth_mb)


def whole_store(unit: dict) -> object:
    """The store job as the pipeline runs it (its kind's ``measure``) on its data. Reversing's 200 datasets are data
    jobs of their own, alike in cost (timed on their own row): one is made and reused for every key."""
    kind = kind_of(unit["kind"])
    params = kind.datasets(unit)
    if unit["kind"] == "reversing":
        data = [make_dataset(params[0])] * len(params)
    else:
        data = [make_dataset(p) for p in params]
    return kind.measure(unit, data, None, torch.device("cpu"))


def tangent_seed(runs: list[dict]) -> None:
    """The tangent MNIST runs of one seed as the pipeline computes them: data file, training, kernels."""
    kind = kind_of("tangent_mnist")
    with tempfile.TemporaryDirectory() as tmp:
        for i, unit in enumerate(runs):
            data = prepare(unit["data"], tmp)
            run = train(unit, data, Path(tmp) / f"{i}.pt", Path(tmp) / f"{i}.ckpt")
            kind.measure(unit, [data], run, torch.device("cpu"))


def store_jobs(config: dict, names: list[str]) -> list[Job]:
    """The one-job stores: reversing (and its data jobs), first order, tangent penalties; and tangent MNIST, whose
    unit is one seed (both tasks' data, training and kernels; the runs are small CPU jobs)."""
    jobs = []
    for name in names:
        if config["experiments"][name]["kind"] == "tangent_mnist":
            runs = units(config, name)
            seed = next(iter(runs.values()))["sweep"]["seed"]
            first = [u for u in runs.values() if u["sweep"]["seed"] == seed]
            row = Row("store", name, "", "one seed (both tasks: data, training + kernels)", len(runs) // len(first),
                      1, "CPU")
            jobs.append(Job(row, name, lambda u=first: time_cpu(lambda: tangent_seed(u))))
            continue
        unit = next(iter(units(config, name).values()))
        jobs.append(Job(Row("store", name, "", "whole store job", 1, 1, "CPU"), name,
                        lambda u=unit: time_cpu(lambda: whole_store(u))))
        if unit["kind"] == "reversing":
            params = kind_of("reversing").datasets(unit)
            row = Row("store", name, "data", f"one dataset (a data job), n = d = {unit['n']:,}", 1, len(params), "CPU")
            jobs.append(Job(row, f"{name}/data", lambda p=params[0]: time_cpu(lambda: make_dataset(p))))
    return jobs


# ---- the plan, the overrides, the table ---------------------------------------------------------------------------


def figure_experiments() -> set[str]:
    """Every experiment some figure reads: the EXPERIMENTS of each of the 32 figure modules."""
    return {name for paper, count in PAPERS.items() for n in range(1, count + 1)
            for name in importlib.import_module(f"featlearn.figures.{paper}.fig{n}").EXPERIMENTS}


def plan(config: dict, families: list[str], device: torch.device, args: argparse.Namespace) -> list[Job]:
    """Every kind of job of the experiments the 32 figures read, in config order, by family: trained kinds give
    training and measurement jobs, Deep RFM its layers, the rest one CPU store job each."""
    read = figure_experiments()
    names = [n for n in config["experiments"] if n in read]
    kind = {n: config["experiments"][n]["kind"] for n in names}
    # tangent MNIST's runs are timed whole, per seed, with the stores: its measurement is its kind's own
    trained = [n for n in names if KINDS[kind[n]]["trained"] and kind[n] != "tangent_mnist"]
    rfm = [n for n in names if kind[n] == "deep_rfm"]
    stores = [n for n in names if n not in trained + rfm]
    builders = {
        "training": lambda: training_jobs(config, trained, device, args.repeat),
        "measurement": lambda: measurement_jobs(config, trained, device, args.measure_n),
        "deep_rfm": lambda: deep_rfm_jobs(config, rfm, device, args.rfm_n),
        "store": lambda: store_jobs(config, stores),
    }
    return [job for family in families for job in builders[family]()]


def apply_overrides(rows: list[Row], path: Path) -> str:
    """Unit costs from ``path`` replace measured ones. The file: {"label": "...", "missing": "...", "units":
    {row id: seconds | {"seconds": s} | {"seconds": s, "n": N} (a Deep RFM layer at N, scaled by N³) |
    {"job_seconds": s} (a whole job, divided by its units), optional "note"}}. Returns the file's "missing" text,
    for the rows it does not name."""
    given = json.loads(path.read_text())
    units = given.get("units", {})
    unknown = sorted(set(units) - {r.id for r in rows})
    if unknown:
        raise SystemExit(f"{path}: no such rows {unknown}; row ids are family/experiment[/variant], e.g. "
                         f"{rows[0].id!r} (run without --unit-seconds to list them)")
    label = given.get("label", str(path))
    for row in rows:
        entry = units.get(row.id)
        if entry is None:
            continue
        entry = {"seconds": entry} if isinstance(entry, int | float) else entry
        row.once_s, row.memory_mb, row.memory_how, row.how = 0.0, None, "", f"given ({label})"
        if "job_seconds" in entry:
            row.seconds = entry["job_seconds"] / row.units_per_job
            row.how += f": {entry['job_seconds']:g} s per whole job"
        elif "n" in entry:
            row.seconds = entry["seconds"] * (row.paper_n / entry["n"]) ** 3
            row.how += f": {entry['seconds']:g} s at N = {entry['n']:,}, extrapolated ∝ N³"
        else:
            row.seconds = entry["seconds"]
        row.note = entry.get("note", "")
    return given.get("missing", f"not in {path}")


def fmt(value: float | None, missing: str = "—") -> str:
    if value is None:
        return missing
    return f"{value:.3g}" if value < 1e4 else f"{value:,.0f}"


def table(rows: list[Row], missing: str = "not timed") -> str:
    lines = ["| family | job | runs on | unit | unit s | units/job | h/job | jobs | total h | peak memory MiB | how |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        job = "/".join(p for p in (r.experiment, r.variant) if p)
        memory = "—" if r.memory_mb is None else f"{r.memory_mb:,.0f}" + (" (extrapolated)" * (
            "extrapolated" in r.memory_how))
        how = "; ".join(p for p in (r.how or missing, r.note) if p)
        lines.append(f"| {r.family} | {job} | {r.runs_on} | {r.unit} | {fmt(r.seconds, missing)} | "
                     f"{r.units_per_job:,} | {fmt(r.hours_per_job)} | {r.jobs} | {fmt(r.total_hours)} | {memory} | "
                     f"{how} |")
    return "\n".join(lines)


def totals(rows: list[Row]) -> dict:
    """Hours by family and in all, the longest job, and what is left out for lack of a unit cost."""
    done = [r for r in rows if r.seconds is not None]
    by_family = {f: sum(r.total_hours for r in done if r.family == f) for f in FAMILIES
                 if any(r.family == f for r in done)}
    by_device = {d: sum(r.total_hours for r in done if r.runs_on == d) for d in ("GPU", "CPU")}
    longest = max(done, key=lambda r: r.hours_per_job, default=None)
    return {"hours": sum(by_family.values()), "hours_by_family": by_family, "hours_by_device_auto": by_device,
            "longest_job": None if longest is None else {"row": longest.id, "hours": longest.hours_per_job},
            "rows_without_unit_cost": [r.id for r in rows if r.seconds is None]}


def summary(rows: list[Row], total: dict, every_family: bool) -> str:
    """The totals in words; "all 32 figures" only when every kind of job of every family has a unit cost."""
    parts = ", ".join(f"{f} {h:,.1f} h" for f, h in total["hours_by_family"].items())
    device = ", ".join(f"{d} jobs {h:,.1f} h" for d, h in total["hours_by_device_auto"].items())
    costed = len(rows) - len(total["rows_without_unit_cost"])
    scope = "all 32 figures" if every_family and costed == len(rows) else (
        f"the {costed} of {len(rows)} kinds of job with a unit cost")
    lines = [f"Total for {scope}: {total['hours']:,.1f} h ({parts}); under device: auto, {device}."]
    if total["longest_job"]:
        lines.append(f"Longest single job: {total['longest_job']['row']}, {total['longest_job']['hours']:,.2f} h.")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument("--only", nargs="+", choices=FAMILIES, default=list(FAMILIES), metavar="FAMILY",
                        help=f"families to run, of {', '.join(FAMILIES)}")
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's own)")
    parser.add_argument("--repeat", type=int, default=5, help="timed optimizer steps per network (median)")
    parser.add_argument("--measure-n", type=int, help="time snapshots at n/2 and n points and extrapolate to the "
                        "paper's n (default: the paper's n; CIFAR-100's Jacobians at 50,000 need ~35 GB)")
    parser.add_argument("--rfm-n", type=int, nargs="+", help="Deep RFM sample sizes to time and extrapolate from "
                        "(default: the paper's N; N = 50,000 needs ~70 GB)")
    parser.add_argument("--json", type=Path, help="write the rows and totals here")
    parser.add_argument("--unit-seconds", type=Path, help="JSON of unit costs that replace measured ones "
                        "(format: apply_overrides)")
    parser.add_argument("--skip-timing", action="store_true", help="time nothing: project from --unit-seconds only")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no CUDA device on this machine; run on a GPU node, or use "
                         "--device cpu (or auto)")
    device = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available() else
                          "cpu" if args.device == "auto" else args.device)
    torch.manual_seed(0)
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    config["scale"] = "paper"
    began = time.perf_counter()
    jobs = plan(config, args.only, device, args)
    rows = [job.row for job in jobs]
    name = "no device: projected from the given unit costs" if args.skip_timing else device_name(device)
    load = [os.getloadavg()[0]]  # other processes on the machine inflate wall times: say how busy it was
    print(f"Device: {name}; load average {load[0]:.1f}\nPaper scale, {len(rows)} kinds of job in "
          f"{', '.join(args.only)}\n", flush=True)
    cache: dict[str, Timing] = {}
    for job in [] if args.skip_timing else jobs:
        wall, cpu = time.perf_counter(), time.process_time()
        if job.signature not in cache:
            cache[job.signature] = job.time_unit()
        t, row = cache[job.signature], job.row
        row.seconds, row.how, row.memory_mb, row.memory_how = t.seconds, t.how, t.memory_mb, t.memory_how
        row.once_s, row.note, row.maxrss_growth_mb, row.detail = t.once_s, t.note, t.maxrss_growth_mb, t.detail
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        row.cpu_utilization = cpu / wall if wall > 1 else None
        print(f"  {row.id}: {t.seconds:.4g} s per unit (timed in {wall:.1f} s, {cpu:.1f} s of CPU)", flush=True)
    missing = apply_overrides(rows, args.unit_seconds) if args.unit_seconds else "not timed"
    total = totals(rows)
    memory = "no device" if args.skip_timing else PeakMemory(device).label
    print(f"\nPeak memory: {memory}, the job's dataset included (store rows: CPU RSS)\n{table(rows, missing)}\n\n"
          f"{summary(rows, total, set(args.only) == set(FAMILIES))}")
    elapsed = time.perf_counter() - began
    load.append(os.getloadavg()[0])
    print(f"Script wall time: {elapsed:.0f} s; load average {load[0]:.1f} at the start, {load[1]:.1f} at the end")
    if args.json:
        arguments = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
        out = {"device": name, "threads": torch.get_num_threads(), "torch": torch.__version__, "args": arguments,
               "wall_seconds": elapsed, "load_average": load, "totals": total,
               "rows": [{"id": r.id, **asdict(r), "hours_per_job": r.hours_per_job, "total_hours": r.total_hours}
                        for r in rows]}
        args.json.write_text(json.dumps(out, indent=1))
        print(f"Wrote {args.json}")


if __name__ == "__main__":
    main()
