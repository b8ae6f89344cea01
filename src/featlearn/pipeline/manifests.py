"""A build's manifest read back and held to the published one: the reproduction check's job, which loads no store,
run or torch (``featlearn.pipeline.reproduction`` writes manifests and compares trees)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

SEAL = "seal"


def seal(manifest: dict) -> str:
    """The digest a manifest carries of its own content, so that a hand edit is detected."""
    body = {k: v for k, v in manifest.items() if k != SEAL}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def read_manifest(path: Path) -> dict:
    """A published manifest, refused if its content no longer matches its seal (edited by hand)."""
    data = json.loads(Path(path).read_text())
    if data.get(SEAL) != seal(data):
        raise ValueError(f"{path} was edited after it was written (its seal does not match its content); publish it "
                         "again from a build: `snakemake publish_manifest --config scale=<scale>`")
    return data


def _relative_gap(a: float, b: float) -> float:
    scale = max(abs(a), abs(b))
    return 0.0 if a == b else abs(a - b) / scale if scale else float("inf")


def _summary_gap(mine: dict | None, theirs: dict | None) -> str:
    """How far two summaries of a variable are apart: the largest relative gap among them."""
    if mine is None or theirs is None:
        return "text differs"
    if mine.get("finite") != theirs.get("finite"):
        return f"finite values {theirs.get('finite')} → {mine.get('finite')}"
    gaps = {k: _relative_gap(mine[k], theirs[k]) for k in ("sum", "norm", "min", "max") if k in mine and k in theirs}
    worst = max(gaps, key=gaps.get, default=None)
    return f"{gaps[worst]:.2g} (its {worst})" if worst else "—"


def check(built: dict, published: dict, where: str) -> tuple[str, bool]:
    """Hold a build's manifest to the published one: the text to print, and whether every file is bitwise equal."""
    mine, theirs = built["files"], published["files"]
    shared = sorted(set(mine) & set(theirs))
    same = [f for f in shared if mine[f] == theirs[f]]
    by_kind = {kind: [f for f in shared if f.endswith(suffix)] for kind, suffix in (("stores", ".nc"), ("runs", ".pt"))}
    counts = ", ".join(f"{sum(f in same for f in fs)} of {len(fs)} {kind}" for kind, fs in by_kind.items())
    lines = [f"Reproduction check of {where} against the published manifest of scale {published['scale']}:"]
    ok = len(same) == len(shared) and set(mine) == set(theirs)
    lines.append(f"reproduced bitwise: {counts}" if ok else f"differs: bitwise equal {counts}")
    for f in sorted(set(theirs) - set(mine)):
        lines.append(f"  not built here: {f}")
    for f in sorted(set(mine) - set(theirs)):
        lines.append(f"  not in the manifest: {f}")
    differing = [f for f in shared if f not in same]
    if differing:
        lines.append("  | file | variable | largest relative gap of its summaries (finite count, sum, norm, min, max)"
                     " |")
        lines.append("  |---|---|---|")
        for f in differing:
            for name in sorted(set(mine[f]) | set(theirs[f])):
                a, b = mine[f].get(name), theirs[f].get(name)
                if a is None or b is None:
                    lines.append(f"  | {f} | {name} | {'only here' if b is None else 'missing here'} |")
                elif a["digest"] != b["digest"]:
                    lines.append(f"  | {f} | {name} | {_summary_gap(a['summary'], b['summary'])} |")
    flipped = [(k, v["status"], built["claims"][k]["status"]) for k, v in published["claims"].items()
               if k in built["claims"] and built["claims"][k]["status"] != v["status"]]
    if flipped:
        lines.append(f"claims whose verdict changed: {len(flipped)}")
        lines += [f"  {k}: {was} → {now}" for k, was, now in flipped]
    elif built["claims"]:
        moved = sum(built["claims"][k]["measured"] != v["measured"] for k, v in published["claims"].items()
                    if k in built["claims"])
        lines.append(f"claims: no verdict changed ({moved} measured values moved)")
    if not ok:
        lines.append(_machines(built["numerics"], published["numerics"]))
    return "\n".join(lines) + "\n", ok


def _machines(mine: list[dict], theirs: list[dict]) -> str:
    """What differs between the machines of two builds, where their bits could come from."""
    def show(ns: list[dict]) -> str:
        return "; ".join(f"{n.get('cpu')} ({n.get('vendor')}, {n.get('native_isa')}) on {n.get('device', 'cpu')}, "
                         f"pinned {n.get('pinned')}" for n in ns) or "unknown"

    return f"this build ran on: {show(mine)}\nthe manifest's build ran on: {show(theirs)}"


