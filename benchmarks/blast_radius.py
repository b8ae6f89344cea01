"""What a real code edit to each source module reruns: jobs of the quick and of the paper DAG, counted without building.

The DAGs come from Snakemake's own plan in a temporary copy of the repository (``featlearn.pipeline.reruns``: planning
writes stamps and spec files, which must not touch the checkout). A comment, docstring or formatting edit changes no
stamp and reruns nothing. A dispatch table's lines are counted apart: changing one reruns the jobs listing its entry
stamp (``featlearn.pipeline.deps.entry_stamp``), and a new line is measured by adding one to the copy and planning
again: the jobs whose code inputs (paths or stamp contents) changed, and what reads their outputs. Run:
``python benchmarks/blast_radius.py`` (``--scales`` to pick; ``--tiny``: the smoke DAG, one new line).
"""

import argparse
import ast
import shutil
import tempfile
from pathlib import Path

from featlearn.pipeline import deps
from featlearn.pipeline.literals import assigned
from featlearn.pipeline.reruns import Job, downstream, planned_jobs, rerun_by

ROOT = Path(__file__).resolve().parents[1]
# Every dispatcher with a literal table: the package's library names, architectures, optimizers (with the metric
# that steers each), measurement families and data blocks.
DISPATCHERS = ("featlearn", "featlearn.models", "featlearn.optim", "featlearn.metrics.measure",
               "featlearn.data.prepare")


def _stamps(repo: Path) -> dict[str, str]:
    """Every code stamp the copy's planning wrote, by path, with its content."""
    return {str(p.relative_to(repo)): p.read_text() for p in (repo / deps.STAMPS).rglob("*.ast")}


def _add_line(path: Path) -> str:
    """Add to a dispatcher's table a new choice taking its last entry's value; the source as it was."""
    text = path.read_text()
    last = assigned(ast.parse(text), ("DISPATCH",)).values[-1]
    end = sum(len(row) for row in text.splitlines(keepends=True)[:last.end_lineno - 1]) + last.end_col_offset
    path.write_text(f"{text[:end]}, \"blast_radius_choice\": {ast.get_source_segment(text, last)}{text[end:]}")
    return text


def new_line_reruns(repo: Path, scale: str, jobs: list[Job], dispatcher: str) -> set[int]:
    """The jobs of ``jobs`` (the scale's plan in ``repo``) that adding a line to ``dispatcher``'s table reruns,
    measured by adding it and planning again."""
    path = repo / (dispatcher if dispatcher.endswith(".py") else deps.module_file(dispatcher).relative_to(deps.ROOT))
    stamps = _stamps(repo)
    text = _add_line(path)
    try:
        replanned = {frozenset(outputs): inputs for inputs, outputs in planned_jobs(repo, scale)}
        changed = {s for s, content in _stamps(repo).items() if stamps.get(s, content) != content}
    finally:
        path.write_text(text)
    start = {i for i, (inputs, outputs) in enumerate(jobs)
             if replanned.get(frozenset(outputs)) != inputs or inputs & changed}
    return downstream(jobs, start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scales", nargs="+", default=["quick", "paper"])
    parser.add_argument("--tiny", action="store_true",
                        help="the smoke DAG, and one dispatcher's new line: that it runs (the tests)")
    args = parser.parse_args()
    scales, dispatchers = (["smoke"], DISPATCHERS[:1]) if args.tiny else (args.scales, DISPATCHERS)
    modules = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "src/featlearn").rglob("*.py"))
    modules += sorted(str(p.relative_to(ROOT)) for p in (ROOT / "workflow/scripts").glob("*.py"))
    entries = [(d, c, deps.entry_stamp_path(d, c)) for d in DISPATCHERS for c in deps.dispatch(d)]
    counts, totals, changed, added = {}, {}, {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        for name in ("Snakefile", "config.yaml", "workflow", "src"):
            (shutil.copytree if (ROOT / name).is_dir() else shutil.copy2)(ROOT / name, repo / name)
        for scale in scales:
            jobs = planned_jobs(repo, scale)
            counts[scale], totals[scale] = {m: len(rerun_by(jobs, m)) for m in modules}, len(jobs)
            changed[scale] = {stamp: len(downstream(jobs, {i for i, (inputs, _) in enumerate(jobs) if stamp in inputs}))
                              for _, _, stamp in entries}
            added[scale] = {d: len(new_line_reruns(repo, scale, jobs, d)) for d in dispatchers}
    header = " | ".join(f"{s} jobs (of {totals[s]})" for s in scales)
    print(f"| module | {header} |\n|---|" + "---:|" * len(scales))
    for module in modules:
        cells = [f"`{module.removeprefix('src/featlearn/')}`", *(str(counts[s][module]) for s in scales)]
        print("| " + " | ".join(cells) + " |")
    print(f"\n| dispatch line | {header} |\n|---|" + "---:|" * len(scales))
    for dispatcher in dispatchers:
        print(f"| `{dispatcher}`: a new line | " + " | ".join(str(added[s][dispatcher]) for s in scales) + " |")
        for d, choice, stamp in entries:
            if d == dispatcher:
                print(f"| `{d}`: changing `{choice!r}` | " + " | ".join(str(changed[s][stamp]) for s in scales)
                      + " |")


if __name__ == "__main__":
    main()
