"""A build's manifest read back and held to the published one: the reproduction check's job, which loads no store,
run or torch (``featlearn.pipeline.reproduction`` writes manifests and compares trees).

The check leads with one line: whether the claims' verdicts are the same, and how many runs and stores are bitwise
equal, within rounding or beyond it (``featlearn.pipeline.sensitivity``); then a few lines naming what changed, and a
per-variable table for a file of its own.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from featlearn.pipeline import sensitivity as sens

SEAL = "seal"
FRAGILE = "fragile"
CONTRADICTED = {"passed", "failed"}
FILE_KINDS = (("stores", ".nc"), ("runs", ".pt"))
RESTORE = "restore it from git: `git checkout -- {path}` (`git log -- {path}` lists the commits that published it)"
REBUILD = "delete it and rerun snakemake: the `manifest` rule writes it again"


class ManifestError(ValueError):
    """A manifest that cannot be held to: missing, damaged, edited by hand, or of another scale."""


def seal(manifest: dict) -> str:
    """The digest a manifest carries of its own content, so that a hand edit is detected."""
    body = {k: v for k, v in manifest.items() if k != SEAL}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def read_manifest(path: Path, fix: str = RESTORE) -> dict:
    """A manifest, refused if damaged or if its content no longer matches its seal (edited by hand); ``fix`` says
    how to get it back (``RESTORE`` from git for a published one, ``REBUILD`` for a build's own)."""
    how = fix.format(path=path)
    try:
        data = json.loads(Path(path).read_text())
    except json.JSONDecodeError as e:
        raise ManifestError(f"{path} is damaged (not valid JSON: {e}; truncated?); {how}") from None
    if not isinstance(data, dict) or data.get(SEAL) != seal(data):
        raise ManifestError(f"{path} was edited after it was written (its seal does not match its content); {how}. "
                            "Publishing a build (`make manifest`) is for setting a new reference on purpose, not the "
                            "fix")
    return data


def published_manifest(path: Path) -> dict | None:
    """The published manifest at ``path``, or None for a scale that never had one; refused if git knows it was
    deleted (with the command that restores it)."""
    if Path(path).is_file():
        return read_manifest(path)
    restore = _restore_command(Path(path))
    if restore:
        raise ManifestError(f"the published manifest {path} is missing (git has it); restore it: `{restore}`. "
                            "Publishing this build instead (`make manifest`) would make it the reference every later "
                            "build is held to: do that only to set a new reference on purpose")
    return None


def _restore_command(path: Path) -> str | None:
    """The git command that brings back a deleted tracked file, None if git never had it (or there is no git)."""
    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], capture_output=True, text=True, check=False)

    try:
        last = git("log", "-1", "--format=%h", "--", str(path)).stdout.strip()
    except OSError:
        return None
    if not last:
        return None
    if git("cat-file", "-e", f"HEAD:{path}").returncode == 0:
        return f"git checkout -- {path}"
    return f"git checkout {last}~1 -- {path}"  # deleted by the commit ``last``


@dataclass(frozen=True)
class Report:
    """The check: ``summary`` (a few lines, check.txt), ``details`` (the per-variable table), ``ok`` (no claim's
    verdict contradicted: passed in one build, failed in the other)."""

    summary: str
    details: str
    ok: bool


def check(built: dict, published: dict, where: str, reference: str, details: str | None = None) -> Report:
    """Hold a build's manifest (of the build at ``where``) to the published one (read from ``reference``); the
    summary names ``details``, the file the caller writes the table to (None: not written)."""
    if built.get("scale") != published.get("scale"):
        raise ManifestError(f"the manifest of {where} is of scale {built.get('scale')!r}, but {reference} is of scale "
                            f"{published.get('scale')!r}: hold a build to the published manifest of its own scale, "
                            f"reproduction/{built.get('scale')}.json")
    measured = sens.merged(sens.sensitivity(built["files"]), sens.sensitivity(published["files"]))
    mine, theirs = built["files"], published["files"]
    verdicts = [sens.classify(f, mine[f], theirs[f], measured.get(f)) for f in sorted(set(mine) & set(theirs))]
    claims = _claims(built["claims"], published["claims"])
    missing, extra = sorted(set(theirs) - set(mine)), sorted(set(mine) - set(theirs))
    lines = [f"{claims.line}; {_files_line(verdicts, missing, extra)}",
             f"Reproduction check of {where} against {reference} (scale {published['scale']}); a file is within "
             f"rounding when each variable's gap, relative to its scale, is within {sens.TWIN_FACTOR:g} × the gap "
             f"its rounding twin measured, at least {sens.GPU_RTOL:g} ({sens.GPU_RTOL:g} without a twin):"]
    lines += [_kind_line(kind, [v for v in verdicts if v.path.endswith(ext)]) for kind, ext in FILE_KINDS]
    lines += claims.changed + _beyond_lines(verdicts) + [f"  not built here: {f}" for f in missing]
    lines += [f"  not in the published manifest: {f}" for f in extra]
    if any(v.verdict != sens.BITWISE for v in verdicts):
        lines.append(_machines(built["numerics"], published["numerics"]))
    if details:
        lines.append(f"every differing variable, its gap and tolerance: {details}")
    return Report("\n".join(lines) + "\n", _details(lines[0], verdicts), claims.contradicted == 0)


def _counts(verdicts: list[sens.Verdict]) -> tuple[int, int, int, int]:
    """Bitwise, within rounding, beyond it, and of those beyond, how many had no measured sensitivity."""
    c = Counter(v.verdict for v in verdicts)
    unmeasured = sum(v.verdict == sens.BEYOND and not v.measured for v in verdicts)
    return c[sens.BITWISE], c[sens.WITHIN], c[sens.BEYOND], unmeasured


def _files_line(verdicts: list[sens.Verdict], missing: list[str], extra: list[str]) -> str:
    bitwise, within, beyond, unmeasured = _counts(verdicts)
    if bitwise == len(verdicts) and not missing and not extra:
        kinds = (f"{sum(v.path.endswith(ext) for v in verdicts)} {kind}" for kind, ext in FILE_KINDS)
        return "reproduced bitwise: " + ", ".join(f"{n.split()[0]} of {n}" for n in kinds)
    line = f"of {len(verdicts)} runs and stores, {bitwise} bitwise, {within} within rounding, {beyond} beyond it"
    if beyond:
        line += f" (listed below; {unmeasured} of them with no rounding twin to measure rounding by)"
    if missing or extra:
        line += f"; {len(missing)} not built here, {len(extra)} not in the published manifest"
    return line


def _kind_line(kind: str, verdicts: list[sens.Verdict]) -> str:
    bitwise, within, beyond, unmeasured = _counts(verdicts)
    return (f"  {kind}: {bitwise} of {len(verdicts)} bitwise, {within} within rounding, {beyond} beyond it"
            + (f" ({unmeasured} with no measured sensitivity)" if unmeasured else ""))


def _beyond_lines(verdicts: list[sens.Verdict]) -> list[str]:
    """The files beyond rounding, one line per experiment: how many, and its file farthest beyond."""
    by_experiment = defaultdict(list)
    for v in verdicts:
        if v.verdict == sens.BEYOND:
            place = sens.place(v.path)
            by_experiment[place.experiment if place else v.path].append(v)
    if not by_experiment:
        return []
    lines = ["beyond rounding, by experiment (its file farthest beyond):"]
    for experiment, vs in sorted(by_experiment.items()):
        kinds = ", ".join(f"{n} {kind if n > 1 else kind[:-1]}" for kind, ext in FILE_KINDS
                          if (n := sum(v.path.endswith(ext) for v in vs)))
        worst = max(vs, key=lambda v: v.worst().gap / v.worst().tolerance)
        lines.append(f"  {experiment}: {kinds}; {_row_text(worst.path, worst.worst())}")
    return lines


def _row_text(path: str, row: sens.Row) -> str:
    source = "its twin's gap" if row.measured else "no twin"
    return f"{path} {row.variable}: {_gap(row)} (its {row.summary}), tolerance {row.tolerance:.2g} ({source})"


def _gap(row: sens.Row) -> str:
    return f"{row.gap:.2g}" if row.gap != float("inf") else "not comparable"


def _details(first: str, verdicts: list[sens.Verdict]) -> str:
    """The per-variable table of every file that is not bitwise equal."""
    lines = ["# Reproduction check: every differing variable", "", first, "",
             f"gap: the largest of the summaries' gaps (finite count, sum, norm, min, max), each relative to the "
             f"variable's scale (the largest |value| for min and max, the norm for the norm, √count × norm for the "
             f"sum); tolerance: {sens.TWIN_FACTOR:g} × the gap to the file's rounding twin, at least "
             f"{sens.GPU_RTOL:g} ({sens.GPU_RTOL:g} without a twin)", "",
             "| file | verdict | variable | gap | of its | tolerance | tolerance from |",
             "|---|---|---|---|---|---|---|"]
    for v in verdicts:
        for r in v.rows:
            lines.append(f"| {v.path} | {v.verdict} | {r.variable} | {_gap(r)} | {r.summary} | {r.tolerance:.2g} | "
                         f"{'its twin' if r.measured else 'no twin'} |")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class _Claims:
    line: str
    changed: list[str]
    contradicted: int


def _claims(mine: dict, theirs: dict) -> _Claims:
    """The claims' verdicts of two builds: the summary's part, a line per changed verdict, how many contradict."""
    shared = sorted(set(mine) & set(theirs))
    changed = [(k, theirs[k]["status"], mine[k]["status"]) for k in shared if mine[k]["status"] != theirs[k]["status"]]
    fragile = sum(FRAGILE in (was, now) for _, was, now in changed)
    contradicted = sum({was, now} == CONTRADICTED for _, was, now in changed)
    if not changed:
        line = f"same verdicts on all {len(shared)} claims" if shared else "no claims to compare"
    else:
        line = (f"same verdicts on {len(shared) - len(changed)} of {len(shared)} claims, {fragile} fragile in one "
                f"build and decided in the other, {contradicted} contradicted (passed in one, failed in the other)")
        if other := len(changed) - fragile - contradicted:
            line += f", {other} measured in one build only"
    if only := len(set(mine) ^ set(theirs)):
        line += f", {only} claims in one build only"
    lines = ["verdicts changed (published → this build):"] if changed else []
    lines += [f"  {k}: {was} → {now}" for k, was, now in changed]
    return _Claims(line, lines, contradicted)


def _machines(mine: list[dict], theirs: list[dict]) -> str:
    """What differs between the machines of two builds, where their bits could come from."""
    def show(ns: list[dict]) -> str:
        return "; ".join(f"{n.get('cpu')} ({n.get('vendor')}, {n.get('native_isa')}) on {n.get('device', 'cpu')}, "
                         f"pinned {n.get('pinned')}" for n in ns) or "unknown"

    return f"this build ran on: {show(mine)}\nthe published build ran on: {show(theirs)}"
