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
"""

from __future__ import annotations

from pathlib import Path

from featlearn.experiments import KINDS
from featlearn.projection import read_csv, request

GPU_SCALES = ("paper",)

# (runtime in minutes, mem_mb) by scale and weight, for a job the projection does not cover: × the attempt number on a
# retry. Quick-scale memory is about twice the peak RSS measured in results/quick/benchmarks/. Paper scale: generous
# defaults until a rehearsal on the cluster's own nodes has measured every job (README, "The paper scale").
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
    """A rehearsal's projection (``featlearn.projection``) keyed by job ('train/<experiment>/<unit>',
    'data/<data key>'); empty where there is none yet."""
    if not Path(path).is_file():
        return {}
    return {f"{row['stage']}/{row['experiment']}/{row['unit']}" if row["stage"] != "data"
            else f"data/{row['unit']}": row for row in read_csv(path)}


def projected(row: dict[str, str] | None, gpu: int, attempt: int) -> dict[str, int]:
    """The requests a projection row gives a job (``projection.request``), where the row was measured on the kind
    of device the job computes on (a CPU rehearsal's hours say nothing of a GPU job's); else nothing."""
    if row is None or row["device"].startswith("cuda") != bool(gpu):
        return {}
    return request(row, attempt)


def check_disk(projection: dict[str, dict[str, str]], results: str | Path) -> None:
    """Stop a build up front when ``results`` lacks the disk its projected outputs need (what is already there
    counts as written), naming the need, the free space and the fix (``featlearn.memory.check_disk``)."""
    from featlearn.memory import check_disk as check

    need = sum(float(row["disk_mb"]) for row in projection.values()) * 2**20
    done = sum(p.stat().st_size for p in Path(results).rglob("*") if p.is_file()) if Path(results).is_dir() else 0
    check(results, need - done, f"this build's outputs (their rehearsal's projection: {need / 1e9:.3g} GB in all)")


def job_resources(device: str, scale: str, stage: str, kind: str, row: dict[str, str] | None = None,
                  attempt: int = 1) -> dict[str, int]:
    """``runtime`` (minutes), ``mem_mb``, ``gpu`` and ``gpu_mem_mb`` of one job of ``stage`` for an experiment of
    ``kind``: from its projection ``row`` where that applies, else from the table; both grow with ``attempt``."""
    gpu = gpus(device, scale, stage, kind)
    return {**fixed_resources(scale, weight(kind), attempt), "gpu": gpu, "gpu_mem_mb": 0,
            **projected(row, gpu, attempt)}
