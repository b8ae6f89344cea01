"""Speed Limited Optimization as a run's optimizer: ``slo`` with the fixed speeds of ``train.slo``, ``slo_adaptive``
with the speeds reassigned before every step from the hidden layers' alignment (``train.slo_adaptive``). The update
itself is ``speed_limited``'s."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch
    from torch import nn

    from featlearn.optim.speed_limited import SLO


def make(model: nn.Module, train: dict) -> SLO:
    """One speed per weight matrix: ``train.slo.speeds``, or 1 each until adaptive SLO's first step reassigns them."""
    from featlearn.optim.speed_limited import SLO

    if train["optimizer"] == "slo_adaptive":
        adaptive = train["slo_adaptive"]
        return SLO(model.parameters(), train["lr"], [1.0] * len(model.layers), adaptive["eps"],
                   adaptive.get("relax", "sum"))
    return SLO(model.parameters(), train["lr"], train["slo"]["speeds"], train["slo"]["eps"])


def before_step(optimizer: SLO, model: nn.Module, x: torch.Tensor | None, train: dict,
                layer_nfcs: Callable[[nn.Module, torch.Tensor], list[float]] | None) -> list[float] | None:
    """Adaptive SLO: the speeds of this step from every hidden layer's UC-NFC over the inputs ``x`` at the current
    weights (``layer_nfcs``: ``metrics.nfa``'s, passed in from above the optimizer layer), returned for the record.
    Plain SLO keeps its speeds: None."""
    if train["optimizer"] != "slo_adaptive":
        return None
    from featlearn.optim.speed_limited import adaptive_speeds

    if layer_nfcs is None:
        raise ValueError("train: adaptive SLO needs layer_nfcs (featlearn.metrics.nfa.hidden_layer_nfcs)")
    adaptive = train["slo_adaptive"]
    optimizer.set_speeds(adaptive_speeds(layer_nfcs(model, x), len(model.layers), adaptive["s"],
                                         adaptive.get("readout_speed")))
    return [group["speed"] for group in optimizer.param_groups]


def state_copies(train: dict) -> int:
    """Copies of the parameters SLO's state is counted as (a job's memory request): one, a margin for the update's
    temporaries (its rule keeps no buffer between steps)."""
    return 1


def check(exp: dict, where: str, name: str) -> list[str]:
    """``train.<name>`` must be given; the speeds go one per weight matrix of a bias-free MLP; adaptive SLO measures
    the hidden layers on synthetic inputs, which only kind training trains on."""
    train, model = exp["train"], exp["model"]
    if name == "slo_adaptive" and exp["kind"] != "training":
        return [f"{where}: optimizer slo_adaptive runs only in kind training (it steers by the UC-NFC of a "
                "bias-free MLP's hidden layers on its inputs at every step); use slo with fixed train.slo.speeds"]
    if name not in train:
        return [f"{where}.train.{name} is required when optimizer {name} is used"]
    if train[name].get("relax") == "product" and not train[name]["eps"]:
        return [f"{where}.train.{name}.relax product divides the gradient by ε‖g‖, which ε = 0 makes infinite; give "
                "eps > 0 or relax sum"]
    if model.get("arch", "mlp") != "mlp" or "widths" not in model:  # SLO counts other networks' parameters itself
        return []
    if model.get("bias"):
        return [f"{where}.model.bias adds bias vectors, which optimizer {name} has no speed for (it moves weight "
                "matrices only); set model.bias: false"]
    matrices, speeds = len(model["widths"]) + 1, train[name].get("speeds")
    if speeds is not None and len(speeds) != matrices:
        return [f"{where}.train.slo.speeds needs one speed per weight matrix ({matrices}, readout included), "
                f"got {len(speeds)}"]
    return []
