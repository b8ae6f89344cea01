"""Checking a configuration before any job runs: the YAML itself, the schema, each kind's cross-field rules, the
output folders and the device, with messages that say what is wrong, where, and the fix.

Only the Snakefile (and the tests) load this module; jobs read their resolved spec through ``featlearn.config``, so
rewording a message or tightening a check reruns nothing (``featlearn.pipeline.deps``).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from featlearn import config as fc
from featlearn import optim
from featlearn.config import SCALES, ConfigError
from featlearn.pipeline import deps
from featlearn.pipeline import experiments as fx
from featlearn.pipeline.memory import FREE_DISK, FULL_BELOW


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
        return f"{place} must be of type {value} (got {error.instance!r}){_number_hint(error.instance, value)}"
    if error.validator == "uniqueItems":
        repeated = sorted({repr(v) for i, v in enumerate(error.instance) if v in error.instance[:i]})
        return (f"{place} lists {', '.join(repeated)} more than once (got {error.instance!r}); each value is one "
                "run or dataset, and a repeat would be silently dropped: list each value once")
    return f"{place}: {error.message}"


def _number_hint(instance: Any, expected: Any) -> str:
    """Why a number reached the config as a string: quoted ('0.1'), or an exponent YAML 1.1 does not read (1e-3)."""
    if not (isinstance(instance, str) and "number" in str(expected) and _looks_numeric(instance)):
        return ""
    if isinstance(yaml.safe_load(instance), int | float):
        return f"; the value is quoted, which makes it a string: write {instance} without quotes"
    return (f"; YAML 1.1 reads {instance} as a string (an exponent needs a sign and a dot): "
            f"write {float(instance):.1e}".replace("e+0", "e+").replace("e-0", "e-"))


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
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor`: its keys may be overridden here
                continue
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
        if d.is_symlink() and not d.exists():
            target = Path(os.readlink(d))
            raise ConfigError(f"{d} is a symbolic link to {target}, which does not exist (a disk not mounted, a "
                              f"folder moved or deleted); mount or create it (mkdir -p '{target}'), or remove the "
                              f"link (rm '{d}') to keep {d}/ in this checkout")
        if d.exists() and not d.is_dir():
            raise ConfigError(f"{d} exists but is not a directory, so nothing can be written under {d}/; "
                              f"move or delete that file")
        probe = d if d.exists() else d.resolve().parent
        if os.path.isdir(probe) and os.statvfs(probe).f_flag & os.ST_RDONLY:
            raise ConfigError(f"{probe} is on a read-only file system (mounted read-only), so {d}/ cannot be "
                              "written; remount it read-write, or run from a checkout on a writable disk")
        if not os.access(probe, os.W_OK | os.X_OK):
            raise ConfigError(f"{probe} is not writable by this user, so {d}/ cannot be written; "
                              "fix its permissions or run from a writable checkout")
        free = shutil.disk_usage(probe).free
        if free < FULL_BELOW:
            raise ConfigError(f"the disk holding {d}/ is full ({free / 1e6:.3g} MB free): planning writes its code "
                              f"and spec stamps there before any job; {FREE_DISK}")


FUTURE_SLACK_S = 60.0  # clocks of machines sharing a file system (NFS, a cluster) may differ by seconds


def check_future_dates(*dirs: str | Path, now: float | None = None) -> None:
    """Raise a ConfigError naming the outputs under ``dirs`` dated in the future, before any stamp or job is
    written: Snakemake compares dates, so a code edit stamped now would look older than them and rerun nothing.

    Files come from the future after a clock was set back, an archive was unpacked with its dates, or another
    machine's clock ran ahead."""
    limit = (time.time() if now is None else now) + FUTURE_SLACK_S
    ahead = sorted((entry.stat(follow_symlinks=False).st_mtime, entry.path)
                   for d in map(Path, dirs) if d.is_dir() for entry in _walk(d)
                   if entry.stat(follow_symlinks=False).st_mtime > limit)
    if ahead:
        latest, path = ahead[-1]
        when = datetime.fromtimestamp(latest).isoformat(sep=" ", timespec="seconds")
        folders = " ".join(str(d) for d in dirs)
        raise ConfigError(f"{len(ahead)} file(s) under {', '.join(map(str, dirs))} are dated in the future (the "
                          f"latest: {path}, {when}, {(latest - limit + FUTURE_SLACK_S) / 3600:.2g} h ahead of this "
                          "machine's clock): Snakemake compares dates, so an edit made now would look older than "
                          f"them and rerun nothing. Date them now (find {folders} -newermt now -exec touch -h {{}} +), "
                          "then rerun snakemake; or fix this machine's clock if it is the one behind")


def _walk(folder: Path) -> Iterator[os.DirEntry]:
    """Every entry under ``folder`` (links not followed)."""
    for entry in os.scandir(folder):
        yield entry
        if entry.is_dir(follow_symlinks=False):
            yield from _walk(Path(entry.path))


NAME_MAX = 255  # bytes in one file name on the filesystems results/ lives on (ext4, XFS, NFS, Lustre)
NAME_ROOM = 40  # what featlearn adds around a name in a file name: '.<name>.<spec hash>.log.attempts', '.<pid>.tmp'


def check_names(config: dict) -> list[str]:
    """Every experiment name too long to become a file name (``<name>.<spec>.nc``, its log, lock and temporary
    files): the OS refuses it with ``[Errno 36] File name too long`` at parse time, naming no key."""
    limit = NAME_MAX - NAME_ROOM
    experiments = config.get("experiments") if isinstance(config, dict) else None
    return [f"config.yaml: experiments.{name[:40]}… is {len(name.encode())} bytes long; experiment names become "
            f"file names (results/<scale>/metrics/<name>.<spec>.nc and its logs), which the filesystem limits to "
            f"{NAME_MAX} bytes, so a name may have at most {limit}: shorten it"
            for name in (experiments if isinstance(experiments, dict) else {})
            if len(str(name).encode()) > limit]


def check_own_code(basedir: str | Path) -> None:
    """Raise a ConfigError unless the importable ``featlearn`` is this checkout's ``src/featlearn``.

    Snakemake runs the Snakefile of one checkout, but imports ``featlearn`` from wherever Python finds it: a virtual
    environment installed (editable) from another checkout would stamp, run and record that checkout's code."""
    import featlearn

    here = (Path(basedir) / "src" / "featlearn").resolve()
    found = Path(featlearn.__file__).resolve().parent
    if found != here:
        raise ConfigError(f"this build's Snakefile is in {Path(basedir).resolve()}, but Python imports featlearn from "
                          f"{found}: its jobs would run and record that other checkout's code; install this checkout "
                          f"into the environment (`pip install -e {Path(basedir).resolve()}`, or `make` there), or "
                          f"run with PYTHONPATH={here.parent}")


def check_device(device: str, computes_here: bool, gpus: Callable[[], int]) -> None:
    """Raise a ConfigError for ``device: cuda`` when the jobs would compute on this machine and it has no GPU.

    ``computes_here`` is false for cluster executors (the login node needs no GPU); ``gpus`` counts this machine's
    GPUs (``featlearn.pipeline.gpus.gpu_count``, without initializing CUDA). The Snakefile calls it from ``onstart``,
    which a dry run skips.
    """
    if device == "cuda" and computes_here and gpus() == 0:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "unset")
        raise ConfigError(f"config.yaml: device is 'cuda' but this machine has no GPU (nvidia-smi lists none; "
                          f"CUDA_VISIBLE_DEVICES={visible}); set device: auto or cpu, or run on a GPU machine or "
                          "through a cluster profile (--profile profiles/slurm)")


# Schema choices whose names are a table's keys (module, table; read without importing it: planning stays torch-free),
# so adding an optimizer or an architecture (its module and its table line) or a dataset (its registry entry) is never
# a schema edit as well.
CHOICES = {"optimizer": ("featlearn.optim", "DISPATCH"), "arch": ("featlearn.models", "DISPATCH"),
           "dataset": ("featlearn.data.registry", "DATASETS"), "family": ("featlearn.metrics.measure", "DISPATCH")}


def semantic(exp: dict, where: str) -> list[str]:
    """The cross-field problems of one resolved experiment: its kind's, then its optimizers' (each rule once, in the
    optimizer's module, whichever kind trains with it)."""
    trains = "optimizer" in exp.get("train", {})
    return fx.check(exp, where) + (optim.check(exp, where) if trains else [])


def validate(config: dict, schema_path: str | Path) -> None:
    """Check ``config`` against the schema and each experiment against its kind's cross-field rules
    (``featlearn.pipeline.experiments.check``), at every scale, before any job runs.

    ``--config download=true`` reaches Snakemake's config as the string 'true': top-level
    booleans written as true/false are read as YAML first (in place). Raises ``ConfigError``
    listing every mistake as ``config.yaml: <key path> …``.
    """
    schema = yaml.safe_load(Path(schema_path).read_text())
    for choice, (module, table) in CHOICES.items():
        schema["$defs"][choice] = {"enum": list(deps.literal(module, table))}
    schema["properties"]["experiments"]["additionalProperties"]["properties"]["kind"] = {"enum": sorted(fx.KINDS)}
    for key, rule in schema["properties"].items():
        takes_boolean = "boolean" in [r.get("type") for r in (rule, *rule.get("oneOf", ()))]  # twins: or a list
        if takes_boolean and str(config.get(key)).lower() in ("true", "false"):
            config[key] = str(config[key]).lower() == "true"
    problems = _errors(config, schema, "config.yaml:") + check_names(config)
    data_dir = Path(str(config.get("data_dir", "")))
    if data_dir.exists() and not data_dir.is_dir():
        problems.append(f"config.yaml: data_dir {str(data_dir)!r} is a file, not a folder; point it at the folder "
                        "that holds (or will hold) the datasets")
    defs = schema["$defs"]
    experiments = config.get("experiments") if isinstance(config, dict) else None
    for kind in sorted(set(fx.KINDS) - set(defs)):
        problems.append(f"{schema_path}: experiment kind {kind!r} ({fx.KINDS[kind]['module']}) has no schema; add "
                        f"$defs.{kind} there, the keys its experiments take")
    for name, exp in (experiments if isinstance(experiments, dict) else {}).items():
        if isinstance(exp, dict) and exp.get("kind") in defs and isinstance(exp.get("scales", {}), dict):
            kind_schema = {"$defs": defs, **defs[exp["kind"]]}
            at_scales: dict[str, list[str]] = {}
            for scale in SCALES:
                where = f"config.yaml: experiments.{name}"
                resolved = fc.resolve(exp, scale)
                found = _errors(resolved, kind_schema, where) or semantic(resolved, where)
                for problem in found:
                    at_scales.setdefault(problem, []).append(scale)
            problems += [f"{p} [at scale {', '.join(s)}]" for p, s in at_scales.items()]
    if problems:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(problems))
