"""What an edit reruns, read from Snakemake's own plan of the whole DAG (``snakemake all --forceall -n``).

Every job lists one code stamp per source file it runs (``featlearn.deps.code_stamp``), so a real edit to a source
reruns the jobs listing its stamp and, along the DAG, every job reading their outputs. The benchmark
``benchmarks/blast_radius.py`` tabulates it per module; the tests check that an SLO edit reaches only SLO runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from featlearn import deps

SNAKEMAKE = Path(sys.executable).with_name("snakemake")
Job = tuple[set[str], set[str]]  # (inputs, outputs)


def planned_jobs(repo: Path, scale: str) -> list[Job]:
    """Each job of the scale's whole DAG as (inputs, outputs), from a forced dry run's job blocks.

    Planning writes code stamps and spec files, so ``repo`` should be a copy, not the checkout."""
    env = {**os.environ, "PYTHONPATH": str(repo / "src")}
    cmd = [str(SNAKEMAKE), "all", "--forceall", "-n", "--cores", "1", "--config", f"scale={scale}"]
    proc = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, check=True)
    jobs: list[Job] = []
    for line in (raw.strip() for raw in proc.stdout.splitlines()):  # a group's jobs are indented
        if line.startswith(("rule ", "localrule ")) and line.endswith(":"):
            jobs.append((set(), set()))
        elif jobs and line.startswith(("input: ", "output: ")):
            key, _, value = line.partition(": ")
            jobs[-1][key == "output"].update(p.strip() for p in value.split(","))
    return jobs


def downstream(jobs: list[Job], start: set[int]) -> set[int]:
    """The jobs ``start`` names and every job that reads, directly or not, one of their outputs."""
    producer = {out: i for i, (_, outputs) in enumerate(jobs) for out in outputs}
    readers: dict[int, set[int]] = {}
    for i, (inputs, _) in enumerate(jobs):
        for path in inputs:
            if path in producer:
                readers.setdefault(producer[path], set()).add(i)
    found: set[int] = set()
    todo = list(start)
    while todo:
        i = todo.pop()
        if i not in found:
            found.add(i)
            todo += readers.get(i, ())
    return found


def rerun_by(jobs: list[Job], source: str) -> set[int]:
    """The jobs a real code edit to ``source`` (repository-relative) reruns."""
    stamp = f"{deps.STAMPS}/{source}.ast"
    return downstream(jobs, {i for i, (inputs, _) in enumerate(jobs) if stamp in inputs})
