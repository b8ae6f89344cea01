"""The paper scale's cost, projected from its rehearsal: hours, peak memory and disk of every paper job.

A rehearsal (``featlearn.pipeline.rehearsal``) runs each paper job at the paper's shapes for a cut budget, and each job
records its seconds per unit of work after warm-up, the units it ran and its peak memory (``featlearn.pipeline.usage``).
A paper job is projected from the rehearsed job of the same id (the first seed's, for other seeds: same shapes):

    seconds = overhead + seconds per unit × (N_paper / N_run)^time order × units of the paper job
    memory  = at start + inputs × (N_paper / N_run − 1) + (peak − at start) × (N_paper / N_run)^memory order

where overhead is what the rehearsed job spent outside its counted units (start-up, loading, warm-up), the memory at
start is what the job held when its work began (libraries, its inputs, the model), the inputs (its data files) grow
with the points, and the ratio of points is 1 unless ``rehearse_max_n`` capped them. The orders are each stage's
(``ORDERS``), stated with why. A row is "measured" when the rehearsed job was the paper job itself (nothing cut), else
"extrapolated", with how. A capped extrapolation of memory is an upper bound: all growth above the start is taken to
follow the stage's order (Deep RFM's N² bound applies to its linear parts too).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

# (time order, memory order) in the number of points N, by stage, where the size cap lowered N.
ORDERS = {
    "data": (1, 1),     # reading and preprocessing are per image; the file holds every image
    "train": (0, 1),    # a step costs one batch (full-batch runs: see units); the training set sits on the device
    "measure": (1, 1),  # Jacobians and losses over every measured point, in blocks
    "deep_rfm": (2, 2),  # kernel, AGOP over N² pairs and one N×N buffer (the cubic Cholesky is a minority at the
                        # N ≤ 8,000 of benchmarks/README.md's Deep RFM table: time grew 2.6× from 4,000 to 8,000)
}


@dataclass(frozen=True)
class Job:
    """One paper job and the rehearsed job that times it."""

    stage: str          # data, train or measure
    experiment: str
    unit: str           # the unit id, or the dataset key of a data job
    figures: tuple[str, ...]
    kind: str
    units_paper: dict[str, int]  # the paper job's work in each unit its rehearsal may count (step, snapshot, …)
    n_ratio: float      # paper points / rehearsed points (1 unless capped)
    usage: str          # the rehearsed job's usage record
    same_job: bool      # the rehearsed job is the paper job itself (nothing cut, no other seed)
    outputs_ratio: float  # paper output size / rehearsed output size (snapshots, points)


@dataclass(frozen=True)
class Row:
    figures: str
    stage: str
    experiment: str
    unit: str
    device: str
    status: str
    how: str
    unit_name: str
    units_run: int
    units_paper: int
    seconds_per_unit: float
    hours: float
    peak_mb: float
    cuda_peak_mb: float | None
    disk_mb: float


def project(job: Job, record: dict) -> Row:
    """One paper job's projected hours, peak memory and output size from its rehearsed job's ``record``."""
    stage = "deep_rfm" if job.kind == "deep_rfm" and job.stage == "measure" else job.stage
    time_order, memory_order = ORDERS[stage]
    units = job.units_paper.get(record["unit"], record["units_run"])
    per_unit = record["seconds_per_unit"] * job.n_ratio ** time_order
    overhead = max(0.0, record["seconds"] - record["seconds_per_unit"] * record["units_run"])
    seconds = overhead + per_unit * units
    grow = job.n_ratio ** memory_order
    held = record.get("input_bytes", 0) / 2**20 * (job.n_ratio - 1) if job.stage != "data" else 0.0
    peak = record["rss_start_mb"] + held + (record["peak_rss_mb"] - record["rss_start_mb"]) * grow
    cuda = None if record.get("cuda_peak_mb") is None else record["cuda_peak_mb"] * grow
    disk = record["output_bytes"] / 2**20 * job.outputs_ratio
    if job.same_job and record["units_run"] == units and job.n_ratio == 1:
        status, how = "measured", "the rehearsed job is the paper job"
    else:
        parts = [f"{record['seconds_per_unit']:.3g} s/{record['unit']} ({record['per_unit_from']}) × "
                 f"{units:,} {record['unit']}s (ran {record['units_run']:,})"]
        if job.n_ratio != 1:
            parts.append(f"N × {job.n_ratio:.3g}: time order {time_order}, memory order {memory_order}")
        if not job.same_job:
            parts.append("timed on the first seed's run (same shapes)")
        status, how = "extrapolated", "; ".join(parts)
    return Row(" ".join(job.figures), job.stage, job.experiment, job.unit, record["device"], status, how,
               record["unit"], record["units_run"], units, per_unit, seconds / 3600, peak, cuda, disk)


def points(block: dict) -> int:
    """The training points a data block yields: its ``n``, or for a real dataset the first n of its split (all of a
    smaller one, as the data stage takes them; ``featlearn.data.registry.IMAGES`` holds the sizes)."""
    from featlearn.data.registry import IMAGES, split_points

    n = block.get("n", block.get("n_train"))
    if block.get("dataset") in IMAGES:
        n = split_points(block["dataset"], "train", n)
    return int(n or 1)


def work(unit: dict, data: list[dict]) -> tuple[dict[str, int], int, int]:
    """What one unit's jobs do: ({unit name: count} of its work, its training points, its measured points)."""
    from featlearn.train import schedule

    n = points(data[0]) if data else 1
    counts = {"job": 1, "item": n}
    if "train" in unit:
        plan = schedule(unit, n)
        counts["step"] = plan["steps"]
        counts["snapshot"] = len([s for s in plan["measure"] if s >= plan["warmup_steps"]])
    if "depth" in unit.get("model", {}) and "gram" in unit:  # Deep RFM: its layers
        counts["layer"] = unit["model"]["depth"]
    return counts, n, int(unit.get("measure", {}).get("n_measure") or n)


def plan(planned: dict[str, dict[str, dict]], rehearsed: dict[str, dict[str, dict]], kinds: dict[str, str],
         trained: set[str], datasets: dict[str, list[dict]], figures: dict[str, list[str]],
         usage: dict[str, str]) -> list[Job]:
    """Every paper job (``planned``: experiment → unit id → paper unit spec) with the rehearsed job that times it
    (``rehearsed``: the same of the rehearsal). ``datasets`` gives each unit's data blocks (key 'experiment/unit',
    both builds' units), ``figures`` the figures reading each experiment, ``usage`` the usage record of each rehearsed
    job ('stage/experiment/unit', 'data/<data key>')."""
    from featlearn.config import dataset_key
    from featlearn.pipeline.rehearsal import without_seed

    jobs: dict[str, Job] = {}
    for exp, units in planned.items():
        twins = {without_seed(uid): uid for uid in rehearsed[exp]}
        for uid, unit in units.items():
            twin = uid if uid in rehearsed[exp] else twins[without_seed(uid)]
            paper_data, run_data = datasets[f"paper/{exp}/{uid}"], datasets[f"rehearsal/{exp}/{twin}"]
            counts, n, n_measure = work(unit, paper_data)
            run_counts, run_n, run_measure = work(rehearsed[exp][twin], run_data)
            same = uid == twin
            stages = (["train"] if exp in trained else []) + ["measure"]
            for stage in stages:
                ratio = n_measure / run_measure if stage == "measure" else n / run_n
                snapshots = counts.get("snapshot", 1) / run_counts.get("snapshot", 1)
                key = f"{stage}/{exp}/{uid}"
                jobs[key] = Job(stage, exp, uid, tuple(figures.get(exp, ())), kinds[exp], counts, ratio,
                                usage[f"{stage}/{exp}/{twin}"], same, snapshots)
            for block, run_block in zip(paper_data, run_data):
                key, run_key = dataset_key(block), dataset_key(run_block)
                ratio = points(block) / points(run_block)
                previous = jobs.get(f"data/{key}")
                shown = tuple(sorted({*figures.get(exp, ()), *(previous.figures if previous else ())}))
                jobs[f"data/{key}"] = Job("data", exp, key, shown, kinds[exp], {"item": points(block), "job": 1},
                                          ratio, usage[f"data/{run_key}"], key == run_key, ratio)
    return list(jobs.values())


def rows(jobs: Iterable[Job]) -> list[Row]:
    """Every job's projection, reading each rehearsed job's usage record."""
    return [project(job, json.loads(Path(job.usage).read_text())) for job in jobs]


def to_csv(table: list[Row]) -> str:
    out = io.StringIO()
    fields = list(Row.__dataclass_fields__)
    writer = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for row in table:
        writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in asdict(row).items()})
    return out.getvalue()


def read_csv(path: str | Path) -> list[dict[str, str]]:
    """A projection table as written by ``to_csv``."""
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def _hours(h: float) -> str:
    return f"{h:.3g}" if h >= 0.01 else f"{h * 3600:.2g} s"


def to_markdown(table: list[Row], title: str) -> str:
    """Totals per figure and for all, then every job; a job shared by figures counts in each figure's total and
    once in the whole."""
    figures = sorted({f for row in table for f in row.figures.split()},
                     key=lambda f: (f.split("/")[0], int(f.split("fig")[1])))
    lines = [f"# {title}", "", "| figure | jobs | measured | projected hours | largest job (h) | peak memory (MB) |"
             " GPU peak (MB) | disk (MB) |", "|---|---|---|---|---|---|---|---|"]

    def total(name: str, rows_: list[Row]) -> str:
        cuda = [r.cuda_peak_mb for r in rows_ if r.cuda_peak_mb is not None]
        return (f"| {name} | {len(rows_)} | {sum(r.status == 'measured' for r in rows_)} | "
                f"{_hours(sum(r.hours for r in rows_))} | {_hours(max((r.hours for r in rows_), default=0))} | "
                f"{max((r.peak_mb for r in rows_), default=0):,.0f} | "
                f"{f'{max(cuda):,.0f}' if cuda else '—'} | {sum(r.disk_mb for r in rows_):,.0f} |")

    for fig in figures:
        lines.append(total(fig, [r for r in table if fig in r.figures.split()]))
    lines.append(total(f"**all {len(figures)}**", table))
    devices = sorted({r.device for r in table})
    lines += ["", f"Devices of the rehearsed jobs: {', '.join(devices)}. Hours are projected on those devices.", "",
              "| stage | experiment | unit | device | status | projected h | peak MB | how |",
              "|---|---|---|---|---|---|---|---|"]
    for r in sorted(table, key=lambda r: -r.hours):
        lines.append(f"| {r.stage} | {r.experiment} | {r.unit} | {r.device} | {r.status} | {_hours(r.hours)} | "
                     f"{r.peak_mb:,.0f} | {r.how} |")
    return "\n".join(lines) + "\n"


MARGIN = 1.5  # requests are the projection × this, × the attempt number on a retry
# A GPU job's memory is its measured peak × this, on every attempt: the rehearsal ran the paper's shapes, whose peak
# repeats, and a retry cannot use more than its card holds (Snakemake would cap the request at the card silently).
GPU_MARGIN = 1.1


def request(row: dict[str, str], attempt: int = 1) -> dict[str, int]:
    """``runtime`` (minutes) and ``mem_mb`` a paper job asks for, from its projection row: the projection × MARGIN
    × ``attempt`` (Snakemake's retry counter), at least 5 minutes and 1 GB; a GPU job also ``gpu_mem_mb``, torch's
    peak (MiB) in MB × GPU_MARGIN."""
    grow = MARGIN * attempt
    out = {"runtime": max(5, math.ceil(float(row["hours"]) * 60 * grow)),
           "mem_mb": max(1000, math.ceil(float(row["peak_mb"]) * grow))}
    if row.get("cuda_peak_mb"):
        out["gpu_mem_mb"] = math.ceil(float(row["cuda_peak_mb"]) * 1.048576 * GPU_MARGIN)
    return out
