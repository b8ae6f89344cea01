"""Kind ``network``: MLPs, VGG-11, the GPT and the collapse paper's networks on real (or stand-in) data, one run per
sweep point (alignment Figs 2, 13–17; collapse Figs 2, 7–12).

Runs are expanded, trained, measured and combined as the synthetic ``training`` kind's; what differs is the
architecture (``model.arch``), which decides the measurement family, and the data (the data stage's prepared
files). The same run spec holds everything a job needs.
"""

from __future__ import annotations

from featlearn.experiments.training import combine, datasets, entries, following_errors, measure, units

# The kind's flags (featlearn.experiments): what its units go through and where they compute.
KIND = {"trained": True, "device": True, "heavy": True, "repeats": {}}

__all__ = ["ARCH_FAMILY", "ARCH_KEYS", "check", "combine", "datasets", "entries", "measure", "units"]

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


def check(exp: dict, where: str) -> list[str]:
    """One time unit, per-arch keys, the measurement family of the architecture, list values that follow a sweep."""
    from featlearn.data.offline import offline_size_errors  # a check: no code input of the measure and combine jobs

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
    problems += following_errors(exp, where)
    images = [d for d in sweep.get("dataset", [exp["data"]["dataset"]]) if d != "shakespeare_char"]
    if images:  # every offline image dataset draws on the same digits
        problems += offline_size_errors({**exp["data"], "dataset": images[0]}, where)
    return problems
