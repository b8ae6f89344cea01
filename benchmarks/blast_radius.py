"""What a real code edit to each source module reruns: jobs of the quick and of the paper DAG, counted without building.

Every job lists one code stamp per source file it runs (``featlearn.deps.code_stamp``), so an edit to a module reruns
the jobs listing its stamp and, along the DAG, every job reading their outputs. The DAGs come from Snakemake's own
plan, ``snakemake all --forceall -n`` in a temporary copy of the repository (planning writes stamps and spec files,
which must not touch the checkout), whose job blocks list each job's inputs and outputs. A comment, docstring or
formatting edit changes no stamp and reruns nothing. Run: ``python benchmarks/blast_radius.py`` (``--scales`` to pick).
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from featlearn import deps

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")


def planned_jobs(repo: Path, scale: str) -> list[tuple[set[str], set[str]]]:
    """Each job of the scale's whole DAG as (inputs, outputs), from a forced dry run's job blocks."""
    env = {**os.environ, "PYTHONPATH": str(repo / "src")}
    cmd = [str(SNAKEMAKE), "all", "--forceall", "-n", "--cores", "1", "--config", f"scale={scale}"]
    proc = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, check=True)
    jobs: list[tuple[set[str], set[str]]] = []
    for line in proc.stdout.splitlines():
        if line.startswith(("rule ", "localrule ")):
            jobs.append((set(), set()))
        elif jobs and line.startswith(("    input: ", "    output: ")):
            key, _, value = line.strip().partition(": ")
            jobs[-1][key == "output"].update(p.strip() for p in value.split(","))
    return jobs


def rerun_counts(jobs: list[tuple[set[str], set[str]]], modules: list[str]) -> dict[str, int]:
    """For each module, how many jobs an edit to it reruns: those listing its stamp, and everything downstream."""
    producer = {out: i for i, (_, outputs) in enumerate(jobs) for out in outputs}
    readers: dict[int, set[int]] = {}
    for i, (inputs, _) in enumerate(jobs):
        for path in inputs:
            if path in producer:
                readers.setdefault(producer[path], set()).add(i)
    counts = {}
    for module in modules:
        stamp = f"{deps.STAMPS}/{module}.ast"
        todo = [i for i, (inputs, _) in enumerate(jobs) if stamp in inputs]
        rerun: set[int] = set()
        while todo:
            i = todo.pop()
            if i not in rerun:
                rerun.add(i)
                todo += readers.get(i, ())
        counts[module] = len(rerun)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scales", nargs="+", default=["quick", "paper"])
    args = parser.parse_args()
    modules = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "src/featlearn").rglob("*.py"))
    modules += sorted(str(p.relative_to(ROOT)) for p in (ROOT / "workflow/scripts").glob("*.py"))
    counts, totals = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        for name in ("Snakefile", "config.yaml", "workflow", "src"):
            (shutil.copytree if (ROOT / name).is_dir() else shutil.copy2)(ROOT / name, repo / name)
        for scale in args.scales:
            jobs = planned_jobs(repo, scale)
            counts[scale], totals[scale] = rerun_counts(jobs, modules), len(jobs)
    print("| module | " + " | ".join(f"{s} jobs (of {totals[s]})" for s in args.scales) + " |")
    print("|---|" + "---:|" * len(args.scales))
    for module in modules:
        cells = [f"`{module.removeprefix('src/featlearn/')}`", *(str(counts[s][module]) for s in args.scales)]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
