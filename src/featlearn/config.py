"""The experiment configuration: validation, per-scale resolution, file keys.

``config.yaml`` states each experiment's paper values once and overrides them per scale
under ``scales``. Everything downstream sees only ``experiment(config, name)`` and the units
its kind makes of it (``featlearn.experiments``), so a sweep is data, not code.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import yaml

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


def _describe(error: jsonschema.ValidationError, where: str) -> str:
    if error.validator in ("oneOf", "anyOf") and error.context:
        matching_type = [e for e in error.context if e.validator != "type"] or error.context
        best = jsonschema.exceptions.best_match(matching_type)
        best.path = error.path + best.path
        return _describe(best, where)
    path = ".".join(str(p) for p in error.absolute_path)
    sep = " " if where.endswith(":") else "."
    place = f"{where}{sep}{path}" if path else f"{where.rstrip(':')} (top level)"
    value = error.validator_value
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        return f"{place}: unknown key(s) {extra}; allowed keys: {allowed}"
    if error.validator == "enum":
        return f"{place} must be one of {value} (got {error.instance!r})"
    if error.validator == "exclusiveMinimum":
        return f"{place} must be > {value} (got {error.instance!r})"
    if error.validator == "minimum":
        return f"{place} must be >= {value} (got {error.instance!r})"
    if error.validator == "maximum":
        return f"{place} must be <= {value} (got {error.instance!r})"
    if error.validator == "required":
        return f"{place}: {error.message}"
    if error.validator == "not" and set(value) == {"required"}:
        return f"{place}: {' and '.join(value['required'])} exclude each other; keep one"
    if error.validator == "type":
        hint = ""
        if isinstance(error.instance, str) and "number" in str(value) and _looks_numeric(error.instance):
            hint = (f"; YAML 1.1 reads {error.instance} as a string (an exponent needs a sign and a dot): "
                    f"write {float(error.instance):.1e}".replace("e+0", "e+").replace("e-0", "e-"))
        return f"{place} must be of type {value} (got {error.instance!r}){hint}"
    return f"{place}: {error.message}"


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _errors(instance: Any, schema: dict, where: str) -> list[str]:
    validator = jsonschema.Draft202012Validator(schema)
    found = sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path)))
    return [_describe(e, where) for e in found]


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML keeps the last of two equal keys without a word: a second ``train:`` silently replaces the first."""

    path = "config.yaml"

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise ConfigError(f"{self.path}: key {key!r} appears twice in one mapping (lines {seen[key]} and "
                                  f"{line}); YAML would keep only the second: merge them into one")
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def check_yaml(path: str | Path, root: str | Path) -> None:
    """Parse ``path`` as YAML and raise a ConfigError naming the line and column of a syntax error, or both lines of a
    duplicated key; a missing file names the repository ``root`` to run from (``snakemake -s ../Snakefile`` from a
    subfolder looks for ``path`` in the subfolder).

    Snakemake's own message for a broken config file says neither where nor what, and it accepts duplicate keys.
    """
    if not Path(path).is_file():
        root = Path(root).resolve()
        raise ConfigError(f"no {path} in {Path.cwd()}: run snakemake from the repository root, `cd {root}` "
                          f"(or `snakemake --directory {root}`)")
    try:
        loader = _UniqueKeyLoader(Path(path).read_text())
        loader.path = str(path)
        try:
            loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as err:
        def at(mark: yaml.Mark | None) -> str:
            return f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""

        context = f" ({err.context}{at(err.context_mark)})" if err.context else ""
        raise ConfigError(f"{path} is not valid YAML: {err.problem}{at(err.problem_mark)}{context}; "
                          "fix the syntax there (spaces, not tabs; closed brackets and quotes)") from None


def check_output_dirs(*dirs: str | Path) -> None:
    """Raise a ConfigError if an output directory cannot be created or written, before any job starts."""
    for d in map(Path, dirs):
        if d.exists() and not d.is_dir():
            raise ConfigError(f"{d} exists but is not a directory, so nothing can be written under {d}/; "
                              f"move or delete that file")
        probe = d if d.exists() else d.resolve().parent
        if not os.access(probe, os.W_OK | os.X_OK):
            raise ConfigError(f"{probe} is not writable by this user, so {d}/ cannot be written; "
                              "fix its permissions or run from a writable checkout")


def check_device(device: str, computes_here: bool, gpus: Callable[[], int]) -> None:
    """Raise a ConfigError for ``device: cuda`` when the jobs would compute on this machine and it has no GPU.

    ``computes_here`` is false for cluster executors (the login node needs no GPU); ``gpus`` counts this machine's
    GPUs (``featlearn.gpus.gpu_count``, without initializing CUDA). The Snakefile calls it from ``onstart``, which
    a dry run skips.
    """
    if device == "cuda" and computes_here and gpus() == 0:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "unset")
        raise ConfigError(f"config.yaml: device is 'cuda' but this machine has no GPU (nvidia-smi lists none; "
                          f"CUDA_VISIBLE_DEVICES={visible}); set device: auto or cpu, or run on a GPU machine or "
                          "through a cluster profile (--workflow-profile workflow/profiles/slurm)")


def validate(config: dict, schema_path: str | Path, semantic: Callable[[dict, str], list[str]]) -> None:
    """Check ``config`` against the schema and each experiment against ``semantic`` (its kind's cross-field rules,
    ``featlearn.experiments.check``), at every scale, before any job runs.

    ``--config download=true`` reaches Snakemake's config as the string 'true': top-level
    booleans written as true/false are read as YAML first (in place). Raises ``ConfigError``
    listing every mistake as ``config.yaml: <key path> …``.
    """
    schema = yaml.safe_load(Path(schema_path).read_text())
    for key, rule in schema["properties"].items():
        if rule.get("type") == "boolean" and str(config.get(key)).lower() in ("true", "false"):
            config[key] = str(config[key]).lower() == "true"
    problems = _errors(config, schema, "config.yaml:")
    data_dir = Path(str(config.get("data_dir", "")))
    if data_dir.exists() and not data_dir.is_dir():
        problems.append(f"config.yaml: data_dir {str(data_dir)!r} is a file, not a folder; point it at the folder "
                        "that holds (or will hold) the datasets")
    defs = schema["$defs"]
    experiments = config.get("experiments") if isinstance(config, dict) else None
    for name, exp in (experiments if isinstance(experiments, dict) else {}).items():
        if isinstance(exp, dict) and exp.get("kind") in defs and isinstance(exp.get("scales", {}), dict):
            kind_schema = {"$defs": defs, **defs[exp["kind"]]}
            at_scales: dict[str, list[str]] = {}
            for scale in SCALES:
                where = f"config.yaml: experiments.{name}"
                resolved = _resolve(exp, scale)
                found = _errors(resolved, kind_schema, where) or semantic(resolved, where)
                for problem in found:
                    at_scales.setdefault(problem, []).append(scale)
            problems += [f"{p} [at scale {', '.join(s)}]" for p, s in at_scales.items()]
    if problems:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(problems))


def _resolve(exp: dict, scale: str) -> dict:
    base = {k: v for k, v in exp.items() if k != "scales"}
    return deep_merge(base, exp.get("scales", {}).get(scale, {}))


def experiment(config: dict, name: str) -> dict:
    """The experiment ``name`` with the overrides of ``config['scale']`` applied."""
    if name not in config["experiments"]:
        raise ConfigError(f"config.yaml: no experiment {name!r}; defined: {sorted(config['experiments'])}")
    return _resolve(config["experiments"][name], config["scale"])


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
