"""What a real code edit to each source module reruns: jobs of the quick and of the paper DAG, counted without building.

The DAGs come from Snakemake's own plan in a temporary copy of the repository (``featlearn.pipeline.reruns``: planning
writes
stamps and spec files, which must not touch the checkout). A comment, docstring or formatting edit changes no stamp and
reruns nothing. Run: ``python benchmarks/blast_radius.py`` (``--scales`` to pick).
"""

import argparse
import shutil
import tempfile
from pathlib import Path

from featlearn.pipeline.reruns import planned_jobs, rerun_by

ROOT = Path(__file__).resolve().parents[1]


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
            counts[scale], totals[scale] = {m: len(rerun_by(jobs, m)) for m in modules}, len(jobs)
    print("| module | " + " | ".join(f"{s} jobs (of {totals[s]})" for s in args.scales) + " |")
    print("|---|" + "---:|" * len(args.scales))
    for module in modules:
        cells = [f"`{module.removeprefix('src/featlearn/')}`", *(str(counts[s][module]) for s in args.scales)]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
