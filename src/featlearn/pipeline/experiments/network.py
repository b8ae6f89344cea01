"""Kind ``network``: MLPs, VGG-11, the GPT and the collapse paper's networks on real (or stand-in) data, one run per
sweep point (alignment Figs 2, 13–17; collapse Figs 2, 7–12).

Runs are expanded, trained, measured and combined as the synthetic ``training`` kind's; what differs is the
architecture (``model.arch``), which decides the measurement family, and the data (the data stage's prepared
files). The same run spec holds everything a job needs.
"""

from __future__ import annotations

from featlearn.pipeline.experiments.training import combine, datasets, entries, following_errors, measure, units

# The kind's flags (featlearn.pipeline.experiments): what its units go through and where they compute.
KIND = {"trained": True, "device": True, "heavy": True, "repeats": {}, "twin": True}

__all__ = ["check", "combine", "datasets", "entries", "measure", "units"]

def check(exp: dict, where: str) -> list[str]:
    """One time unit, per-arch keys, the measurement family of the architecture, list values that follow a sweep."""
    from featlearn.data.offline import offline_size_errors  # checks: no code input of the measure and combine jobs
    from featlearn.pipeline.deps import literal

    archs = literal("featlearn.models", "DISPATCH")

    problems = []
    train, model, sweep = exp["train"], exp["model"], exp["sweep"]
    if ("epochs" in train) == ("steps" in train):
        problems.append(f"{where}.train needs exactly one of epochs and steps")
    arch = model["arch"]
    missing = [k for k in archs[arch]["keys"] if k not in model]
    if missing:
        problems.append(f"{where}.model.arch {arch} needs model.{', model.'.join(missing)}")
    if exp["measure"]["family"] != archs[arch]["family"]:
        problems.append(f"{where}.measure.family must be {archs[arch]['family']} for model.arch {arch} "
                        f"(got {exp['measure']['family']})")
    text = [d for d in sweep.get("dataset", [exp["data"]["dataset"]]) if d == "shakespeare_char"]
    if (arch == "gpt") != bool(text):
        problems.append(f"{where}: model.arch gpt goes with data.dataset shakespeare_char, and only it")
    if arch == "mlp" and len(model.get("init_scales", [])) != len(model.get("widths", [])):
        problems.append(f"{where}.model.init_scales needs one scale per hidden layer ({len(model.get('widths', []))})")
    problems += following_errors(exp, where)
    images = [d for d in sweep.get("dataset", [exp["data"]["dataset"]]) if d != "shakespeare_char"]
    if images:  # every offline image dataset draws on the same digits
        problems += offline_size_errors({**exp["data"], "dataset": images[0]}, where)
    return problems
