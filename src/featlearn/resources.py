"""What each job asks of a scheduler (runtime, memory, GPUs), and so where it computes.

A job computes on CUDA exactly when its rule asked for a GPU (``jobs.job_device``), so the request below is the one
place that decides where each stage runs:

* ``device: cpu``: no job asks for a GPU;
* ``device: cuda``: every job whose code runs on a device (training, metric extraction, Deep RFM) asks for one;
* ``device: auto`` (the default): the heavy families of the scale ask for one (``GPU_KINDS`` at the paper scale:
  networks on real data and Deep RFM), the rest stays on the CPU. This is decided when the DAG is planned, not on the
  machine a job lands on, so a SLURM login node without a GPU still asks for GPUs for its compute nodes.

Data preparation, one-job stores (theory, tangent), combining, figures and claims never use a GPU.
"""

from __future__ import annotations

# Stages whose code takes a device.
DEVICE_STAGES = ("train", "measure", "deep_rfm")
# Experiment kinds that want a GPU at the paper's sizes under ``device: auto``.
GPU_KINDS = ("network", "deep_rfm")
GPU_SCALES = ("paper",)

# (runtime in minutes, mem_mb) by scale and weight. Quick-scale memory is about twice the peak RSS measured in
# results/benchmarks/ (benchmarks/README.md).
JOB_RESOURCES = {
    "smoke": {"light": (5, 1000), "cpu": (10, 1000), "gpu": (10, 2000)},
    "quick": {"light": (10, 1000), "cpu": (30, 2000), "gpu": (60, 4000)},
    "paper": {"light": (30, 4000), "cpu": (240, 16000), "gpu": (1440, 32000)},
}


def gpus(device: str, scale: str, stage: str, kind: str) -> int:
    """GPUs a job of ``stage`` (``DEVICE_STAGES`` or any other rule) for an experiment of ``kind`` asks for."""
    if stage not in DEVICE_STAGES or device == "cpu":
        return 0
    if device == "cuda":
        return 1
    return int(kind in GPU_KINDS and scale in GPU_SCALES)


def weight(kind: str) -> str:
    """``gpu`` for the heavy kinds (networks, Deep RFM), ``cpu`` for the rest."""
    return "gpu" if kind in GPU_KINDS else "cpu"


def fixed_resources(scale: str, weight_: str) -> dict[str, int]:
    """``runtime`` (minutes) and ``mem_mb`` of a job that never uses a GPU, by its weight (light, cpu, gpu)."""
    runtime, mem_mb = JOB_RESOURCES[scale][weight_]
    return {"runtime": runtime, "mem_mb": mem_mb}


def job_resources(device: str, scale: str, stage: str, kind: str) -> dict[str, int]:
    """``runtime`` (minutes), ``mem_mb`` and ``gpu`` of one job of ``stage`` for an experiment of ``kind``."""
    return {**fixed_resources(scale, weight(kind)), "gpu": gpus(device, scale, stage, kind)}
