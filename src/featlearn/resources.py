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

from featlearn.experiments import KINDS

GPU_SCALES = ("paper",)

# (runtime in minutes, mem_mb) by scale and weight. Quick-scale memory is about twice the peak RSS measured in
# results/quick/benchmarks/. Paper-scale GPU jobs: twice the longest job benchmarks/paper_scale.py projects on one
# H100 (Deep RFM, 0.42 h), rounded up to 4 h while most measurement families have no GPU number (benchmarks/README.md).
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


def fixed_resources(scale: str, weight_: str) -> dict[str, int]:
    """``runtime`` (minutes) and ``mem_mb`` of a job that never uses a GPU, by its weight (light, cpu, gpu)."""
    runtime, mem_mb = JOB_RESOURCES[scale][weight_]
    return {"runtime": runtime, "mem_mb": mem_mb}


def job_resources(device: str, scale: str, stage: str, kind: str) -> dict[str, int]:
    """``runtime`` (minutes), ``mem_mb`` and ``gpu`` of one job of ``stage`` for an experiment of ``kind``."""
    return {**fixed_resources(scale, weight(kind)), "gpu": gpus(device, scale, stage, kind)}
