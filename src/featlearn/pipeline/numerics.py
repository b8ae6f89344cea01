"""The CPU settings that decide a result's bits: pinned once, before torch loads, and recorded in every store.

torch's CPU kernels choose their code by the machine's instruction set: MKL (matmuls, solves) by its own dispatch,
oneDNN (convolutions) by the instruction set its JIT targets, ATen's vectorised loops (reductions, elementwise math)
by the CPU capability torch detects, numpy by its SIMD dispatch and OpenBLAS core type. The same build then rounds
differently on an AVX-512 and an AVX2 machine, and a plateau's escape can move by hundreds of steps. ``PINNED``
holds each of them at AVX2, which every x86-64 CPU of the last decade has, so that such CPUs run the same kernels:

* ``MKL_CBWR=AVX2``: MKL's conditional numerical reproducibility on its AVX2 branch (fixed kernels, cache sizes and
  reduction order). Intel documents the branch for Intel CPUs; elsewhere MKL takes its AUTO branch in the same
  reproducible mode, so AMD and Intel machines may still differ from each other (docs/reproducibility.md says what was
  measured).
* ``ONEDNN_MAX_CPU_ISA=AVX2`` and ``ATEN_CPU_CAPABILITY=avx2``: convolutions and ATen's kernels at AVX2.
* ``NPY_DISABLE_CPU_FEATURES`` and ``OPENBLAS_CORETYPE``: numpy's ufunc loops and BLAS at AVX2 (Haswell).

The pins cost nothing on an AMD EPYC (MKL takes no AVX-512 path there) and up to 1.6× on an Intel AVX-512 CPU's
MKL-bound workloads (docs/reproducibility.md). ``numerics: native`` in the config trades bits for speed: ``use``
lifts the pins, every job computes on the machine's own kernels and records ``"mode": "native"`` in its stores, and
the reproduction check holds such a build to the published one within rounding (what each file's rounding twin
measured), not bitwise. A switch of mode reruns every job under the same file names (``mode_stamp``).

The thread count also splits sums differently, so it is part of every unit's spec (``featlearn.pipeline.experiments``):
a change of ``threads`` is another result, with another file name and cache key. ``pin`` runs first in the Snakefile
(every job inherits the environment) and in the tests; ``check`` in every job refuses to compute without it, unless
the build chose native numerics."""

from __future__ import annotations

import json
import os
import platform
import sys
from importlib import metadata

PINNED = {
    "MKL_CBWR": "AVX2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "ATEN_CPU_CAPABILITY": "avx2",
    "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR",
    "OPENBLAS_CORETYPE": "Haswell",
}
_LIBRARIES = ("torch", "numpy", "netCDF4")
MODES = ("pinned", "native")  # config.yaml's `numerics`: the same bits on every x86-64 CPU of a vendor, or speed
MODE = "FEATLEARN_NUMERICS"  # the environment variable that carries the build's mode to its jobs


def pin() -> None:
    """Set ``PINNED`` in this process's environment, which every job Snakemake starts inherits.

    torch reads these variables once, when it loads: after that a different value would be silently ignored in this
    process, so that raises instead. (Snakemake itself loads numpy before the Snakefile; its planning computes no
    result, and every job starts a fresh interpreter.)"""
    if "torch" in sys.modules and (stale := unpinned()):
        raise RuntimeError(f"featlearn.pipeline.numerics.pin() ran after torch loaded, with {stale} not yet pinned: "
                           "call it before importing torch (first line of the Snakefile, tests/conftest.py)")
    os.environ.update(PINNED)


def use(mode: str) -> None:
    """The build's numerics ``mode`` (one of ``MODES``), after ``pin``: native lifts every pin again, before any job
    starts; every job inherits the choice through ``MODE``."""
    if mode not in MODES:
        raise ValueError(f"config.yaml: numerics must be one of {MODES} (got {mode!r})")
    if mode == "native":
        for key in PINNED:
            os.environ.pop(key, None)
    os.environ[MODE] = mode


def mode() -> str:
    """This process's numerics mode (pinned unless the build chose native)."""
    return os.environ.get(MODE, "pinned")


def mode_stamp(mode: str) -> dict[str, str]:
    """What a native build adds to every experiment's stamp: a switch of mode reruns each job (the bits change) but
    keeps its file names, so the check can hold a native build's files to the published ones file by file."""
    return {} if mode == "pinned" else {"numerics": mode}


def unpinned() -> dict[str, str | None]:
    """The pinned variables this process's environment lacks or sets otherwise (empty when pinned)."""
    return {k: os.environ.get(k) for k, v in PINNED.items() if os.environ.get(k) != v}


def check() -> None:
    """Refuse to compute a result whose bits would depend on this machine: a job started outside the Snakefile's
    environment (a hand-run script, a scheduler that dropped the environment) names what it lacks and the fix; a
    build that chose native numerics computes as the machine does."""
    if mode() != "native" and (missing := unpinned()):
        raise RuntimeError(f"this job's environment does not pin the CPU numerics ({missing}); run it through "
                           "snakemake (the Snakefile pins them) or call featlearn.pipeline.numerics.pin() before torch "
                           "loads")


def deterministic_cuda() -> None:
    """Make a GPU job repeat itself bit for bit on one card model: cuBLAS with a fixed workspace and torch's
    deterministic algorithms (set before CUDA initializes). Where torch has none (the backward of AdaptiveAvgPool2d,
    in the collapse networks and the VGG) it warns, and the warning, naming the operation, goes to the job's log."""
    import logging

    import torch

    os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.benchmark = False
    logging.captureWarnings(True)


def _cpu() -> tuple[str, str, str]:
    """(model name, vendor, widest vector instruction set) of this CPU, from /proc/cpuinfo where there is one."""
    model, vendor, flags = platform.processor() or platform.machine(), "unknown", set()
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    model = value.strip()
                elif key.strip() == "vendor_id":
                    vendor = value.strip()
                elif key.strip() in ("flags", "Features"):
                    flags = set(value.split())
                    break
    except OSError:
        pass
    isa = next((name for name in ("avx512f", "avx2", "avx", "sse4_2", "asimd") if name in flags), "unknown")
    return model, vendor, isa


def describe(threads: int, device: object = "cpu") -> str:
    """What decides a result's bits on this machine, as the JSON a store records in its ``numerics`` attribute:
    the pinned settings, the thread count, the CPU (its vendor picks MKL's branch), its native instruction set, the
    numeric libraries and the device the job computed on (a GPU by its model: its kernels are its own)."""
    model, vendor, isa = _cpu()
    versions = {}
    for name in _LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    torch = sys.modules.get("torch")
    capability = torch.backends.cpu.get_cpu_capability() if torch is not None else None
    where = str(device)
    if where.startswith("cuda") and torch is not None:
        where = f"cuda ({torch.cuda.get_device_name(torch.device(where))})"
    return json.dumps({"mode": mode(), "pinned": {k: os.environ.get(k) for k in PINNED}, "threads": threads,
                       "cpu": model, "vendor": vendor, "machine": platform.machine(), "native_isa": isa,
                       "aten_capability": capability, "libraries": versions, "device": where}, sort_keys=True)


def merged(described: list[str]) -> str:
    """One ``numerics`` attribute for a store combined from units: theirs if they agree, else the JSON list of every
    distinct one (units computed on several machines of a cluster)."""
    distinct = sorted(set(described))
    return distinct[0] if len(distinct) == 1 else json.dumps([json.loads(d) for d in distinct])
