"""What a job spent: seconds per unit of work after warm-up, the units it ran, peak memory and the device.

Every training, measurement, Deep RFM and data job keeps one meter. The library ticks it once per unit of its work
(an optimizer step, a snapshot measured, a Deep RFM layer, the items of a dataset); the job writes the record beside
Snakemake's own benchmark file. The first tick closes the warm-up (allocation, compilation of kernels, caches), so
the time per unit is taken between the first and the last tick. ``featlearn.pipeline.projection`` turns a rehearsal's
records into the paper scale's projected hours and memory.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from featlearn.pipeline.integrity import keep_with, land, rescued


class Meter:
    """Ticks of one job's units of work, with the time of each."""

    def __init__(self) -> None:
        self.unit = "job"
        self.began = self.phase_began = time.monotonic()
        self.ticks: list[tuple[float, int]] = []  # (seconds since start, units done so far)
        self.rss_start_mb: float | None = None  # set when the work starts: libraries loaded, inputs read

    def start(self, unit: str) -> None:
        """Name the unit the job counts ('step', 'snapshot', 'layer', 'item'); ticks of an earlier phase are
        dropped (a measurement job loads its data before it counts snapshots)."""
        self.unit, self.ticks = unit, []
        self.phase_began = time.monotonic()
        if self.rss_start_mb is None:  # what the job holds before its work grows: torch, the inputs, the model
            self.rss_start_mb = rss_mb()

    def tick(self, units: int = 1) -> None:
        """``units`` more units are done."""
        done = (self.ticks[-1][1] if self.ticks else 0) + units
        self.ticks.append((time.monotonic() - self.began, done))

    def record(self) -> dict[str, Any]:
        """Seconds per unit after the first tick (the warm-up), the units run, peak memory and the total time."""
        total = time.monotonic() - self.began
        units = self.ticks[-1][1] if self.ticks else 0
        if len(self.ticks) >= 2:
            (t0, u0), (t1, u1) = self.ticks[0], self.ticks[-1]
            per_unit, how = (t1 - t0) / (u1 - u0), "after warm-up"
        elif units:
            per_unit = (self.ticks[0][0] - (self.phase_began - self.began)) / units
            how = "whole phase (one tick: warm-up included)"
        else:
            per_unit, how = total, "whole job (no units counted)"
        return {"unit": self.unit, "units_run": units or 1, "seconds_per_unit": per_unit, "per_unit_from": how,
                "seconds": total, "peak_rss_mb": peak_rss_mb(),
                "rss_start_mb": rss_mb() if self.rss_start_mb is None else self.rss_start_mb,
                "cuda_peak_mb": cuda_peak_mb()}


def start(unit: str) -> None:
    """Begin counting this job's units of work (see ``Meter.start``)."""
    METER.start(unit)


def tick(units: int = 1) -> None:
    """One (or ``units``) more units of this job's work are done."""
    METER.tick(units)


def _status_mb(field: str) -> float | None:
    """A memory line of /proc/self/status (Linux) in MB, or None elsewhere."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def peak_rss_mb() -> float:
    """This process's peak resident memory: VmHWM, not getrusage's ru_maxrss, which Linux keeps across the fork and
    exec that start a job, so it would report the Snakemake process's own peak."""
    return _status_mb("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_mb() -> float:
    """This process's resident memory now."""
    return _status_mb("VmRSS") or peak_rss_mb()


def cuda_peak_mb() -> float | None:
    """``torch.cuda.max_memory_allocated`` where this job used CUDA, else None (torch is not imported for it)."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return None
    return torch.cuda.max_memory_allocated() / 2**20


METER = Meter()  # this process's: one job per process


def _bytes(paths: list[str | Path]) -> int:
    return sum(Path(p).stat().st_size for p in paths if Path(p).is_file())


def record(device: str, outputs: list[str | Path], inputs: list[str | Path] = (), **extra: Any) -> dict[str, Any]:
    """This job's record so far (``Meter.record``), with its device, host and the size of its inputs and outputs."""
    return {**METER.record(), "device": device, "host": os.uname().nodename, "input_bytes": _bytes(list(inputs)),
            "output_bytes": _bytes(list(outputs)), **extra}


def _text(rec: dict[str, Any]) -> str:
    return json.dumps(rec, indent=1, sort_keys=True) + "\n"


def _keep_landed(err: OSError, outputs: list[str | Path]) -> None:
    """Where ``err`` says a result was rescued, copy each of ``outputs`` that landed to a rescue folder too, named in
    ``err``: Snakemake deletes them once the job fails."""
    for out in outputs:
        if Path(out).is_file():
            keep_with(err, out, lambda tmp, out=out: shutil.copyfile(out, tmp))


def write(path: str | Path, device: str, outputs: list[str | Path], inputs: list[str | Path] = (),
          **extra: Any) -> dict[str, Any]:
    """Write this job's record as JSON to ``path`` through ``land``; returns it. A record that cannot land is rescued
    with a copy of the job's ``outputs``, and the error names the ``mv`` of each: a result put back without its
    record would be computed again."""
    rec = record(device, outputs, inputs, **extra)
    try:
        land(lambda tmp: tmp.write_text(_text(rec)), path)
    except OSError as err:
        _keep_landed(err, outputs)
        raise
    return rec


@contextmanager
def recorded(path: str | Path, device: str, outputs: list[str | Path], inputs: list[str | Path] = (),
             **extra: Any) -> Iterator[None]:
    """Run a job's work, then ``write`` its record. When an output of the work cannot land and is rescued
    (``featlearn.pipeline.integrity.land``), the record is written beside it in the rescue folder and the error names
    the ``mv`` of both: Snakemake reruns a job that misses its usage record, so a run put back alone is trained
    again."""
    try:
        yield
    except OSError as err:
        moves = rescued(err)
        if not any(Path(out).absolute() in moves for out in outputs):
            raise
        rec = record(device, [moves.get(Path(out).absolute(), out) for out in outputs], inputs, **extra)
        _keep_landed(err, outputs)
        keep_with(err, path, lambda tmp: tmp.write_text(_text(rec)))
        raise
    write(path, device, outputs, inputs, **extra)
