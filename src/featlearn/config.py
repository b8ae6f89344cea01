"""The experiment configuration as jobs read it: per-scale resolution, file keys, spec hashes.

``config.yaml`` states each experiment's paper values once and overrides them per scale
under ``scales``. Everything downstream sees only ``experiment(config, name)`` and the units
its kind makes of it (``featlearn.pipeline.experiments``), so a sweep is data, not code. Checking a
config (the schema, its error messages, the YAML itself) is ``featlearn.pipeline.validation``'s, which
only the Snakefile loads: a job never reruns because an error message was reworded.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from pathlib import Path
from typing import Any

SCALES = ("smoke", "quick", "paper")


class ConfigError(ValueError):
    """A config mistake, phrased as what is wrong, where, and what is allowed."""


def deep_merge(base: dict, override: dict) -> dict:
    """``base`` with ``override`` merged in: dicts merge key by key, anything else replaces."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def resolve(exp: dict, scale: str) -> dict:
    """An experiment entry of config.yaml with its ``scales[scale]`` overrides merged in."""
    base = {k: v for k, v in exp.items() if k != "scales"}
    return deep_merge(base, exp.get("scales", {}).get(scale, {}))


def experiment(config: dict, name: str) -> dict:
    """The experiment ``name`` with the overrides of ``config['scale']`` applied."""
    if name not in config["experiments"]:
        raise ConfigError(f"config.yaml: no experiment {name!r}; defined: {sorted(config['experiments'])}")
    return resolve(config["experiments"][name], config["scale"])


def fmt(value: Any) -> str:
    """A value as it appears in file names: 0.001 -> '0.001', None -> 'none', [128, 128] -> '128x128'."""
    if isinstance(value, list | tuple):
        return "x".join(fmt(v) for v in value)
    return "none" if value is None else str(value)


def key(params: dict) -> str:
    """A readable, stable file key for a parameter dict: 'a-1_b-none_c-gd'."""
    return "_".join(f"{k}-{fmt(v)}" for k, v in sorted(params.items()))


def dataset_key(data: dict) -> str:
    """File key of a dataset: its task (synthetic) or name (real, stand-in), then every parameter that shapes it."""
    name = "task" if "task" in data else "dataset"
    params = {k: v for k, v in data.items() if k != name}
    return f"{data[name]}/{key(params)}"


def spec_json(spec: dict) -> str:
    """Canonical JSON of a spec: what a store records and what a resumed run must match."""
    return json.dumps(spec, sort_keys=True)


def spec_hash(spec: dict) -> str:
    """The first 10 hex digits of the spec's SHA-256: part of every run's and unit store's file name, so a result
    computed from another configuration is never taken for the current one, even by a Snakemake that lost its
    metadata (a fresh clone with copied results, ``rm -rf .snakemake``)."""
    return hashlib.sha256(spec_json(spec).encode()).hexdigest()[:10]


def check_spec(path: str | Path, recorded: str, expected: dict) -> None:
    """Raise if the artifact at ``path`` records another spec than the one the DAG asks for, naming what differs."""
    want = json.loads(spec_json(expected))
    have = json.loads(recorded)
    if have != want:
        keys = sorted(k for k in set(have) | set(want) if have.get(k) != want.get(k))
        raise ConfigError(f"{path} was computed from another configuration than config.yaml now asks for (differs in "
                          f"{keys}); delete it and rerun snakemake")


def write_if_changed(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` (atomically) unless it already holds it: the file's time then marks the last
    change of what it records, which Snakemake sees even without its metadata."""
    path = Path(path)
    if path.exists() and path.read_text() == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
