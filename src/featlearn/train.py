"""The one training loop: weight snapshots on the measurement schedule, resumable, deterministic.

A run writes its snapshots (init, the schedule, final) and the loss of every step; metric
extraction reads the snapshots, so a metric change never retrains. A checkpoint beside the
output lets a killed run resume where it stopped and finish bitwise identical to an
uninterrupted one. A non-finite loss stops the run and records it as diverged.
"""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path

import torch

from featlearn.config import spec_json
from featlearn.jobs import save_tensors
from featlearn.metrics.jacobians import layer_jacobians
from featlearn.metrics.nfa import nfc, ptk_feature_covariance
from featlearn.models.mlp import MLP, init_mlp
from featlearn.optim.slo import SLO, adaptive_speeds

log = logging.getLogger(__name__)


def resolve_device(device: str) -> torch.device:
    """``auto`` is CUDA when present, else the CPU."""
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(device)


def measurement_steps(steps: int, every: int) -> list[int]:
    """Init, step 1 (the first centered point), every ``every``-th step, and the final step."""
    return sorted({0, 1, *range(0, steps + 1, every), steps})


def build_model(spec: dict) -> MLP:
    """The run's network at initialization, drawn from its own seeded generator."""
    m = spec["model"]
    model = MLP(spec["data"]["d"], m["widths"], out=1, activation=m["activation"])
    generator = torch.Generator().manual_seed(spec["seed"])
    return init_mlp(model, m["init_scales"], generator, m["init_convention"], m["readout_scale"])


def make_optimizer(model: MLP, train: dict) -> torch.optim.Optimizer:
    method, lr = train["optimizer"], train["lr"]
    if method in ("gd", "sgd"):
        return torch.optim.SGD(model.parameters(), lr=lr, momentum=train.get("momentum", 0.0))
    if method == "adam":
        return torch.optim.Adam(model.parameters(), lr=lr)
    if method == "slo":
        return SLO(model.parameters(), lr, train["slo"]["speeds"], train["slo"]["eps"])
    if method == "slo_adaptive":
        n = len(model.layers)
        return SLO(model.parameters(), lr, [1.0] * n, train["slo_adaptive"]["eps"])
    raise ValueError(f"unknown optimizer {method!r}")


def _weights(model: MLP) -> list[torch.Tensor]:
    return [layer.weight.detach().cpu().clone() for layer in model.layers]


def _load_checkpoint(path: Path, spec: str) -> dict | None:
    if not path.exists():
        return None
    try:
        ckpt = torch.load(path, weights_only=False)
    except Exception as err:  # a truncated or corrupted file: say so, start over
        log.warning("checkpoint %s is unreadable (%s); training from scratch", path, err)
        return None
    if ckpt.get("spec") != spec:
        log.warning("checkpoint %s belongs to another configuration; training from scratch", path)
        return None
    log.info("resuming from %s at step %d", path, ckpt["step"])
    return ckpt


def train(spec: dict, data: dict, out: Path, checkpoint: Path) -> dict:
    """Train one run and write ``out``: snapshots, per-step losses, status. Returns the record.

    ``spec`` is one entry of ``featlearn.config.runs``; ``data`` a synthetic dataset dict.
    """
    out, checkpoint = Path(out), Path(checkpoint)
    tr = spec["train"]
    device = resolve_device(spec["device"])
    model = build_model(spec).to(device)
    optimizer = make_optimizer(model, tr)
    x = data["x"].to(device, torch.float32)
    y = data["y"].to(device, torch.float32)[:, None]
    n = len(x)
    batch = tr.get("batch_size") or n
    shuffle = torch.Generator().manual_seed(spec["seed"] + 1)
    schedule = set(measurement_steps(tr["steps"], tr["measure_every"]))
    canonical = spec_json(spec)
    every_s = tr.get("checkpoint_seconds", 60.0)

    state = {"snapshots": {}, "losses": [], "speeds": [], "step": 0, "order": torch.arange(n)}
    ckpt = _load_checkpoint(checkpoint, canonical)
    if ckpt is not None:
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        shuffle.set_state(ckpt["shuffle"])
        state = {k: ckpt[k] for k in state}
    start = time.monotonic()
    last_ckpt = start
    status, diverged_at = "completed", None
    step = state["step"]
    while True:
        if step in schedule:
            state["snapshots"][step] = _weights(model)
            if time.monotonic() - last_ckpt >= every_s and step < tr["steps"]:
                save_tensors({"spec": canonical, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                              "shuffle": shuffle.get_state(), **state, "step": step}, checkpoint)
                last_ckpt = time.monotonic()
        if step == tr["steps"]:
            with torch.no_grad():
                final = float(torch.nn.functional.mse_loss(model(x), y))
            state["losses"].append(final)
            if not math.isfinite(final):
                status, diverged_at = "diverged", step
                state["snapshots"].pop(step, None)
            break
        if batch < n and step % math.ceil(n / batch) == 0:
            state["order"] = torch.randperm(n, generator=shuffle)
        idx = state["order"][(step % math.ceil(n / batch)) * batch:][:batch]
        if tr["optimizer"] == "slo_adaptive":
            optimizer.set_speeds(_adaptive(model, x, tr["slo_adaptive"]["s"]))
            state["speeds"].append([g["speed"] for g in optimizer.param_groups])
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x[idx]), y[idx])
        state["losses"].append(loss.item())
        if not math.isfinite(state["losses"][-1]):
            status, diverged_at = "diverged", step
            state["snapshots"].pop(step, None)
            log.warning("run %s diverged at step %d (loss %s)", out, step, state["losses"][-1])
            break
        loss.backward()
        optimizer.step()
        step += 1
        state["step"] = step

    record = {
        "spec": canonical,
        "snapshots": state["snapshots"],
        "losses": torch.tensor(state["losses"], dtype=torch.float64),
        "speeds": torch.tensor(state["speeds"], dtype=torch.float64),
        "status": status,
        "diverged_step": diverged_at,
        "seconds": time.monotonic() - start,
    }
    save_tensors(record, out)
    checkpoint.unlink(missing_ok=True)
    return record


def _adaptive(model: MLP, x: torch.Tensor, s: float) -> list[float]:
    """Adaptive SLO: measure every hidden layer's UC-NFC at the current weights (full batch)."""
    jacs = layer_jacobians(model, x)
    uc = [nfc(layer.weight.detach().cpu(), ptk_feature_covariance(j.detach().cpu()))
          for layer, j in zip(model.hidden, jacs)]
    return adaptive_speeds(uc, len(model.layers), s)
