"""What an edit reruns, read from Snakemake's own plan of the whole DAG (``snakemake all --forceall -n``).

Every job lists one code stamp per source file it runs (``featlearn.pipeline.deps.code_stamp``), so a real edit to a
source reruns the jobs listing its stamp and, along the DAG, every job reading their outputs. The benchmark
``benchmarks/blast_radius.py`` tabulates it per module; the tests check that an SLO edit reaches only SLO runs.

And what a rerun keeps, which the Snakefile asks before Snakemake plans: finished work is never redone
(``keep_finished``: an output whose digest checks out is kept whatever Snakemake's incomplete marker says, and
``refuse_duplicates``: a job whose orphan still computes is named, never run twice; ``refuse_damaged_inputs``: a job
never deletes its outputs to read a broken input), a run or store gone missing under files made from it is rebuilt
(``rebuild_missing``), a shared output-cache entry is read-only, checked before it is linked and never costs a result
(``guard_cache``), and the stores record the config that ran (``record_config_edits``). What of Snakemake's
internals this leans on is ``featlearn.pipeline.snakemake_patches``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from featlearn.config import spec_hash
from featlearn.pipeline import deps
from featlearn.pipeline import snakemake_patches as patches
from featlearn.pipeline.integrity import file_problem
from featlearn.pipeline.jobs import JobRunning, lock_holder
from featlearn.pipeline.snakemake_patches import CHECKED, incomplete_markers
from featlearn.pipeline.snakemake_patches import guard_cache as guard_cache  # its documented name here

SNAKEMAKE = Path(sys.executable).with_name("snakemake")
Job = tuple[set[str], set[str]]  # (inputs, outputs)


def planned_jobs(repo: Path, scale: str) -> list[Job]:
    """Each job of the scale's whole DAG as (inputs, outputs), from a forced dry run's job blocks."""
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


CONFIG_EDITS = "FEATLEARN_CONFIG_EDITED"  # read by featlearn.pipeline.store.provenance in every job


def keep_finished(workflow: Any, snakemake_dir: Path = Path(".snakemake")) -> list[str]:
    """Clear Snakemake's incomplete marker of every job whose outputs all exist and check out (``file_problem``)
    while no process holds its job lock: a job orphaned by a killed Snakemake that finished, or a build killed after
    the write. With ``rerun-incomplete`` Snakemake would delete and recompute them (hours of GPU time at the paper
    scale). Only the main Snakemake process does this, and only when no other Snakemake holds the folder's lock
    (whose own running jobs are marked incomplete until they finish). Returns the outputs kept."""
    locks = snakemake_dir / "locks"
    if not workflow.is_main_process or (locks.is_dir() and any(locks.iterdir())):
        return []
    markers = incomplete_markers(snakemake_dir)
    seen: set[str] = set()
    kept: list[str] = []
    for out in sorted(markers):
        rule = next((r for r in workflow.rules if r.is_producer(out)), None)
        if out in seen or rule is None:
            continue
        wildcards = rule.get_wildcards(out)
        outputs = [str(o.apply_wildcards(wildcards)) for o in rule.output]
        seen.update(outputs)
        if any(lock_holder(o.apply_wildcards(wildcards)) for o in rule.log):
            continue  # its orphan still computes: refuse_duplicates names it if this build needs it
        if all(Path(o).suffix in CHECKED and Path(o).is_file() and file_problem(o) is None for o in outputs):
            for o in outputs:
                if o in markers:
                    markers[o].unlink(missing_ok=True)
            kept += outputs
            print(f"featlearn: keeping {', '.join(outputs)}: finished by a job Snakemake lost track of (a killed "
                  "snakemake), and its content checks out; Snakemake's incomplete marker is cleared", file=sys.stderr)
    return kept


def refuse_duplicates(jobs: Any) -> None:
    """Stop before any job when a job this build would run is still computing in an orphaned process (its job lock
    is held): running it again would delete what the orphan is about to write, and its log."""
    running = [f"{', '.join(map(str, job.output))} (pid and host: {holder})" for job in jobs
               for holder in {lock_holder(log) for log in job.log} - {None}]
    if running:
        raise JobRunning("still computing, left over from a killed snakemake: " + "; ".join(running) + ". Wait for "
                         "them to finish (the next build keeps a result whose digest checks out) or kill them, then "
                         "rerun")


def edited_specs(config: dict, experiments: dict[str, dict], units: dict[str, dict[str, dict]],
                 root: str | Path) -> list[str]:
    """The spec hashes (experiment and units) of every experiment whose section of the parsed ``config`` differs from
    the committed config.yaml (all of them outside git): what a store computed from it records as not committed."""
    try:
        shown = subprocess.run(["git", "show", "HEAD:./config.yaml"], cwd=root, capture_output=True, text=True,
                               check=True).stdout
        committed = (yaml.safe_load(shown) or {}).get("experiments") or {}
    except (OSError, subprocess.CalledProcessError, yaml.YAMLError):
        committed = {}
    edited = [n for n in experiments if config["experiments"].get(n) != committed.get(n)]
    return sorted({spec_hash(spec) for n in edited for spec in [experiments[n], *units[n].values()]})


def record_config_edits(config: dict, experiments: dict[str, dict], units: dict[str, dict[str, dict]],
                        root: str | Path) -> None:
    """Hand ``edited_specs`` of the config as parsed now to every job this Snakemake starts (they inherit its
    environment), so that an edit to config.yaml made while they run does not mark their stores dirty."""
    os.environ[CONFIG_EDITS] = json.dumps(edited_specs(config, experiments, units, root))


def rebuild_missing(workflow: Any, paths: list[str]) -> None:
    """Have Snakemake rebuild ``paths`` (``Plan.missing_intermediates``: runs and stores gone while something made
    from them stands), naming each: "delete it and rerun" then does what it says."""
    for path in patches.rebuild_missing(workflow, paths):
        print(f"featlearn: rebuilding {path}: it is missing while files made from it remain (Snakemake alone would "
              "keep them and rebuild nothing)", file=sys.stderr)


class DamagedInput(OSError):
    """An input of jobs that would run is unreadable or corrupted; their finished outputs are still in place."""


def refuse_damaged_inputs(dag: Any) -> None:
    """Stop before any job when an input that changed since a job's outputs were made does not check out: the job
    would delete its finished outputs (a trained run) and only then fail reading it. The fix rebuilds the input
    alone; come back identical, Snakemake compares it by content and the outputs that read it are kept."""
    found = patches.damaged_inputs(dag)
    if found:
        raise DamagedInput("; ".join(
            f"{path} is {problem}, and the jobs reading it would first delete {', '.join(sorted(set(outputs)))}: "
            f"rebuild it alone (snakemake '{path}' --forcerun '{path}', with this call's --config and --cores), or "
            f"put back a good copy, then rerun snakemake; the outputs that read it are kept when it comes back "
            "identical" for path, problem, outputs in found))


def explain_stop() -> None:
    """Say why a build stopped when Snakemake's own words do not (onerror): a SIGTERM."""
    message = patches.sigterm_message()
    if message:
        print(message, file=sys.stderr)
