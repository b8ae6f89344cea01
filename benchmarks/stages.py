"""Where a build's time and memory go, stage by stage, from the benchmark file Snakemake writes for each job, and for
the data and training jobs (cacheable rules, which keep no benchmark file) from their usage record.

Run after a build (`make figures`, or any `snakemake` call): `python benchmarks/stages.py [results/quick/benchmarks]`.
Prints, per stage (the first folder under results/<scale>/benchmarks: data, train, measure, deep_rfm, stores, combine,
figures, claims), the number of jobs, their summed wall time, the slowest job and the largest peak RSS. Summed
wall time is CPU-bound work: with `--cores 2` the build's wall clock is roughly half of it.
"""

import argparse
import csv
import json
from collections import defaultdict
from pathlib import Path


def read(root: Path) -> list[tuple[str, str, float, float]]:
    """(stage, job, wall seconds, peak RSS MB) of every benchmark file under ``root``."""
    rows = []
    for path in sorted(root.rglob("*.tsv")):
        with path.open() as f:
            first = next(csv.DictReader(f, delimiter="\t"))
        job = path.relative_to(root).with_suffix("")
        rows.append((job.parts[0], str(job), float(first["s"]), float(first["max_rss"])))
    # the stages without benchmark files: seconds and peak RSS from the job's own usage record (its Python process
    # after start-up, where the benchmark file measured the whole job)
    usage = root.parent / "usage"
    benchmarked = {row[0] for row in rows}
    for path in sorted(usage.rglob("*.json")) if usage.is_dir() else []:
        job = path.relative_to(usage).with_suffix("")
        if job.parts[0] not in benchmarked:
            record = json.loads(path.read_text())
            rows.append((job.parts[0], str(job), float(record["seconds"]), float(record["peak_rss_mb"])))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("root", nargs="?", default="results/quick/benchmarks", type=Path)
    args = parser.parse_args()
    rows = read(args.root)
    if not rows:
        raise SystemExit(f"no benchmark files under {args.root}: build something first")
    stages: dict[str, list] = defaultdict(list)
    for row in rows:
        stages[row[0]].append(row)
    print("| stage | jobs | summed wall s | slowest job | its s | peak RSS MB |\n|---|---|---|---|---|---|")
    for stage, jobs in sorted(stages.items(), key=lambda kv: -sum(r[2] for r in kv[1])):
        slowest = max(jobs, key=lambda r: r[2])
        print(f"| {stage} | {len(jobs)} | {sum(r[2] for r in jobs):.0f} | {slowest[1]} | {slowest[2]:.1f} | "
              f"{max(r[3] for r in jobs):.0f} |")
    total, biggest = sum(r[2] for r in rows), max(rows, key=lambda r: r[3])
    print(f"| all | {len(rows)} | {total:.0f} | {max(rows, key=lambda r: r[2])[1]} | "
          f"{max(r[2] for r in rows):.1f} | {biggest[3]:.0f} ({biggest[1]}) |")


if __name__ == "__main__":
    main()
