"""Whether a build reproduced another: manifests of what it computed, checked and compared value by value.

A manifest records, for every run and metric store of one build (paths relative to ``results/<tag>/``), a digest of
each variable's values (a store's variables and coordinates, a run's top-level entries), never its attributes nor
the wall-clock ``seconds`` a machine spent (``WALL_CLOCK``); beside each digest the variable's summaries (finite
count, sum, norm, min, max), so a build that differs learns by how much without the other build's files; every
claim's verdict; and what decided the bits (the stores' ``numerics``). ``reproduction/<scale>.json`` in the
repository is such a manifest, published by the rule ``publish_manifest`` and sealed with a digest of its own
content, so a hand edit is detected (``featlearn.pipeline.manifests`` reads one and holds a build to it, in the light
check
job). ``compare`` holds two ``results/`` trees to each other, every value, within a tolerance: 0 between CPU builds
and between builds on the same GPU model, ``GPU_RTOL`` where a GPU's kernels meet the CPU's or another card's.

``python -m featlearn.pipeline.reproduction compare A B`` prints the comparison of two trees (``make compare``);
``python -m featlearn.pipeline.reproduction check-manifest OTHER.json`` holds another build's manifest to the published
one of its scale, as the build's own check does (exit 0 when no claim's verdict is contradicted, 1 when one is, 2 when
a manifest is refused).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from featlearn.pipeline.manifests import SEAL, ManifestError, check, published_manifest, read_manifest, seal
from featlearn.pipeline.sensitivity import GPU_RTOL

WALL_CLOCK = {"seconds"}  # how long a machine took: part of no result
OTHER_BUILD = "get it again from the build that wrote it (its results/<scale>/reproduction/manifest.json)"


def _leaves(obj: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """The leaves of a run file's nested dicts and lists, with their paths."""
    if isinstance(obj, dict):
        for key in sorted(obj, key=str):
            yield from _leaves(obj[key], f"{path}/{key}")
    elif isinstance(obj, list | tuple):
        for i, item in enumerate(obj):
            yield from _leaves(item, f"{path}[{i}]")
    else:
        yield path, obj


def _array(value: Any) -> np.ndarray:
    if hasattr(value, "detach"):  # a tensor
        return value.detach().cpu().numpy()
    return np.asarray(value)


def variables(path: Path) -> dict[str, np.ndarray]:
    """The values of a store (``.nc``: every variable and coordinate) or a run (``.pt``: each top-level entry, its
    leaves concatenated in order) that a build's result consists of, without ``WALL_CLOCK``."""
    if path.suffix == ".nc":
        from featlearn.pipeline.store import read_store

        ds = read_store(path)
        return {name: np.asarray(ds.variables[name].values) for name in sorted(ds.variables) if name not in WALL_CLOCK}
    from featlearn.pipeline.jobs import load_tensors

    run = load_tensors(path)
    out = {}
    for key in sorted(run, key=str):
        if key in WALL_CLOCK:
            continue
        arrays = [_array(leaf) for _, leaf in _leaves(run[key])]
        numeric = [a.ravel() for a in arrays if a.dtype.kind in "biuf"]
        text = [repr(a.tolist()) for a in arrays if a.dtype.kind not in "biuf"]
        out[str(key)] = np.concatenate(numeric).astype(float) if numeric and not text else np.asarray(text or [""])
    return out


def _digest(values: np.ndarray) -> str:
    h = hashlib.sha256(f"{values.dtype.str}{values.shape}".encode())
    if values.dtype.kind in "OUS":
        h.update("\0".join(map(str, values.ravel())).encode())
    else:
        h.update(np.ascontiguousarray(values).tobytes())
    return h.hexdigest()


def _summary(values: np.ndarray) -> dict[str, float] | None:
    """Finite count, sum, norm, min and max of a numeric variable (None for text)."""
    if values.dtype.kind not in "biuf":
        return None
    v = values.astype(float).ravel()
    v = v[np.isfinite(v)]
    if not v.size:
        return {"finite": 0}
    return {"finite": int(v.size), "sum": float(v.sum()), "norm": float(np.linalg.norm(v)), "min": float(v.min()),
            "max": float(v.max())}


def file_entry(path: Path) -> dict[str, dict]:
    """A manifest's entry for one store or run: each variable's digest and summary."""
    return {name: {"digest": _digest(v), "summary": _summary(v)} for name, v in variables(path).items()}


def _verdicts(claims_files: list[Path]) -> dict[str, dict[str, Any]]:
    out = {}
    for path in claims_files:
        for c in json.loads(path.read_text())["checks"]:
            key = f"{c['paper']} fig {c['figure']}: {c['statement']}"
            out[key] = {"status": c.get("verdict", c["status"]), "measured": c["measured"]}  # fragile, or the status
    return out


def _numerics(stores: list[Path]) -> list[dict]:
    """The distinct ``numerics`` attributes of the stores (what decided their bits)."""
    import netCDF4

    seen = set()
    for path in stores:
        with netCDF4.Dataset(path) as nc:
            seen.add(getattr(nc, "numerics", "{}"))
    flat = []
    for text in sorted(seen):
        value = json.loads(text)
        flat += value if isinstance(value, list) else [value]
    unique = {json.dumps({k: v for k, v in d.items() if k != "threads"}, sort_keys=True) for d in flat}
    return [json.loads(u) for u in sorted(unique)]


def manifest(results: Path, files: list[Path], claims_files: list[Path], scale: str) -> dict:
    """The manifest of the build in ``results`` (``results/<tag>``): its runs and stores ``files``, its claims."""
    entries = {str(Path(f).relative_to(results)): file_entry(Path(f)) for f in sorted(files, key=str)}
    out = {"scale": scale, "files": entries, "claims": _verdicts(claims_files),
           "numerics": _numerics([Path(f) for f in files if Path(f).suffix == ".nc"])}
    return out | {SEAL: seal(out)}


def _device(tree: Path, f: str) -> str:
    """The device(s) a file of a tree was computed on: a store's own record; a run's, that of the unit store of the
    same name (measured where it was trained)."""
    store = tree / f if f.endswith(".nc") else tree / "metrics" / Path(f).relative_to("runs").with_suffix(".nc")
    if not store.is_file():
        return "unknown"
    return ", ".join(sorted({n.get("device", "cpu") for n in _numerics([store])}))


def tolerance(a: Path, b: Path, f: str) -> float:
    """0 (bitwise) when a file was computed on the same device model in both trees (CPU or one GPU model), else
    ``GPU_RTOL``."""
    da, db = _device(a, f), _device(b, f)
    return 0.0 if da == db and da != "unknown" else GPU_RTOL


def _files(tree: Path) -> set[str]:
    return {str(p.relative_to(tree)) for pattern in ("metrics/**/*.nc", "runs/**/*.pt") for p in tree.glob(pattern)}


def _gap(a: np.ndarray, b: np.ndarray) -> tuple[float, float] | None:
    """(largest |a − b|, that over the largest |a|) of two numeric arrays of one shape; None where they cannot be
    compared value by value (text, another shape, NaN in other places)."""
    if a.shape != b.shape or a.dtype.kind not in "biuf" or b.dtype.kind not in "biuf":
        return None
    a, b = a.astype(float), b.astype(float)
    if not np.array_equal(np.isnan(a), np.isnan(b)):
        return None
    finite = np.isfinite(a) & np.isfinite(b)
    if not finite.any():
        return 0.0, 0.0
    diff = float(np.max(np.abs(a[finite] - b[finite])))
    top = float(np.max(np.abs(a[finite])))
    return diff, diff / top if top else (0.0 if diff == 0 else float("inf"))


def compare(a: Path, b: Path, rtol: float | None = None) -> tuple[str, bool]:
    """Compare two ``results/<tag>`` trees store by store and run by run, every value: the text to print, and
    whether every shared file is within its tolerance (``rtol``, else ``tolerance``) and both trees hold the same
    files."""
    a, b = Path(a), Path(b)
    fa, fb = _files(a), _files(b)
    shared = sorted(fa & fb)
    rows, equal, within, bounds = [], 0, 0, set()
    for f in shared:
        bound = tolerance(a, b, f) if rtol is None else rtol
        bounds.add(bound)
        va, vb = variables(a / f), variables(b / f)
        worst = 0.0
        for name in sorted(set(va) | set(vb)):
            if name not in va or name not in vb:
                rows.append(f"| {f} | {name} | only in {'B' if name in vb else 'A'} | | ✗ |")
                worst = float("inf")
                continue
            if _digest(va[name]) == _digest(vb[name]):
                continue
            gap = _gap(va[name], vb[name])
            if gap is None:
                rows.append(f"| {f} | {name} | not comparable value by value (shape, text or NaN places) | | ✗ |")
                worst = float("inf")
                continue
            worst = max(worst, gap[1])
            rows.append(f"| {f} | {name} | {gap[0]:.3g} | {gap[1]:.3g} | {'✓' if gap[1] <= bound else '✗'} |")
        equal += worst == 0.0
        within += worst <= bound
    held = " and ".join("bitwise" if r == 0 else f"max |A − B| / max |A| ≤ {r:g}" for r in sorted(bounds)) or "—"
    lines = [f"Comparing A = {a} and B = {b}, held to {held} (bitwise on one device model, else {GPU_RTOL:g}):",
             f"{len(shared)} files in both: {equal} bitwise equal, {within} within the tolerance"]
    lines += [f"  only in A: {f}" for f in sorted(fa - fb)] + [f"  only in B: {f}" for f in sorted(fb - fa)]
    if rows:
        header = "| file | variable | max abs. difference | relative to max \\|A\\| | within |"
        lines += [header, "|---|---|---|---|---|", *rows]
    ok = within == len(shared) and fa == fb
    return "\n".join(lines) + "\n", ok


def check_manifest(other: Path, published: Path | None = None, details: Path | None = None) -> tuple[str, bool]:
    """Hold another build's manifest to the published one of its scale (``reproduction/<scale>.json`` unless
    ``published``): the check's summary, and whether no claim's verdict is contradicted; the per-variable table is
    written to ``details`` if given."""
    built = read_manifest(other, OTHER_BUILD)
    reference = published or Path("reproduction") / f"{built['scale']}.json"
    held = published_manifest(reference)
    if held is None:
        raise ManifestError(f"{reference} does not exist and git never had it: scale {built['scale']!r} has no "
                            "published manifest; run from the repository root, or name one with --published")
    report = check(built, held, str(other), str(reference), str(details) if details else None)
    if details:
        details.write_text(report.details)
    return report.summary, report.ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m featlearn.pipeline.reproduction",
                                     description="Compare two results/<tag> trees store by store, or hold another "
                                                 "build's manifest to the published one.")
    sub = parser.add_subparsers(dest="command", required=True)
    cmp = sub.add_parser("compare", help="every value of two builds' runs and stores")
    cmp.add_argument("a", type=Path)
    cmp.add_argument("b", type=Path)
    cmp.add_argument("--rtol", type=float, default=None,
                     help=f"largest relative difference allowed (default: 0 on one device model, else {GPU_RTOL})")
    chk = sub.add_parser("check-manifest", help="another build's manifest held to the published one of its scale "
                                                "(exit 0: no claim's verdict contradicted; 1: some; 2: refused)")
    chk.add_argument("other", type=Path, help="another build's results/<scale>/reproduction/manifest.json")
    chk.add_argument("--published", type=Path, default=None,
                     help="the manifest to hold it to (default: reproduction/<its scale>.json)")
    chk.add_argument("--details", type=Path, default=None, help="write every differing variable's gap there")
    args = parser.parse_args(argv)
    if args.command == "check-manifest":
        try:
            text, ok = check_manifest(args.other, args.published, args.details)
        except (ManifestError, FileNotFoundError) as e:
            print(e, file=sys.stderr)
            return 2
    else:
        for tree in (args.a, args.b):
            if not tree.is_dir():
                parser.error(f"{tree} is not a folder; give two results/<tag> folders, e.g. results/quick")
        text, ok = compare(args.a, args.b, args.rtol)
    print(text, end="")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
