"""Optimizers, one table: ``DISPATCH`` maps each ``train.optimizer`` name to the module that builds it, or to
``{"module": …, "metrics": …}`` for an optimizer steered by a measurement of the network while it trains: the metric
module whose ``hidden_layer_nfcs`` the train script hands it (adaptive SLO's layer NFCs), also a code input of its
jobs. A run imports only its own optimizer's module, so an SLO edit never reruns a GPT job
(``featlearn.pipeline.deps``); the table is also the list of names config.yaml may use
(``featlearn.pipeline.validation`` writes it into the schema).

Adding an optimizer: write its module and add one line to ``DISPATCH`` (a new line reruns no existing job,
``featlearn.pipeline.deps``). The module imports torch only inside its
functions (the Snakefile runs ``check`` while planning, without torch; an optimizer class of its own goes in a module
that ``make`` imports, as ``slo`` imports ``speed_limited``) and exposes

    make(model, train) -> torch.optim.Optimizer      the run's optimizer; ``train`` is the run's train block
    check(exp, where, name) -> [problem]             its cross-field rules for an experiment using optimizer ``name``
                                                     (what is wrong, where, the fix); [] if it has none
    state_copies(train) -> int                       how many copies of the parameters its state holds (Adam's two
                                                     moments: 2), which a training job's memory request counts
    before_step(optimizer, model, x, train, layer_nfcs) -> speeds | None
                                                     optional: adjusts the optimizer from the network's state before
                                                     each step and returns what the run records (adaptive SLO)

A setting of its own (beyond lr, momentum, weight_decay, betas) is a key of the train block of each kind that offers it
in ``workflow/schemas/config.schema.yaml``.
"""

from __future__ import annotations

import importlib
from types import ModuleType

# train.optimizer -> the module that builds it (and the metric module it is steered by, if any)
DISPATCH = {
    "gd": "featlearn.optim.standard",
    "sgd": "featlearn.optim.standard",
    "adam": "featlearn.optim.standard",
    "adamw": "featlearn.optim.adamw",
    "slo": "featlearn.optim.slo",
    "slo_adaptive": {"module": "featlearn.optim.slo", "metrics": "featlearn.metrics.nfa"},
}


def _entry(name: str) -> dict[str, str]:
    if name not in DISPATCH:
        raise ValueError(f"unknown train.optimizer {name!r}; choose one of {tuple(DISPATCH)}")
    entry = DISPATCH[name]
    return {"module": entry} if isinstance(entry, str) else entry


def module(name: str) -> ModuleType:
    """The module of optimizer ``name``, imported on first use."""
    return importlib.import_module(_entry(name)["module"])


def metrics(name: str) -> str | None:
    """The metric module that steers optimizer ``name`` while it trains (not imported: planning stays torch-free), or
    None for an optimizer that measures nothing."""
    return _entry(name).get("metrics")


def check(exp: dict, where: str) -> list[str]:
    """The cross-field rules of every optimizer an experiment uses (``train.optimizer``, or its sweep's), each once."""
    names = exp.get("sweep", {}).get("optimizer", [exp["train"]["optimizer"]])
    return [problem for name in dict.fromkeys(names) for problem in module(name).check(exp, where, name)]
