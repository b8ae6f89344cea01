"""The one training loop: weight snapshots on the measurement schedule, resumable, deterministic.

Every model the papers train goes through ``train``: the bias-free MLPs on synthetic data,
and the MLPs, VGG, GPT and collapse networks on real (or stand-in) data. A run writes its
snapshots (init, the schedule, final) and the loss of every step; metric extraction reads the
snapshots, so a metric change never retrains. A checkpoint beside the output lets a killed
run resume where it stopped and finish bitwise identical to an uninterrupted one. A
non-finite loss stops the run and records it as diverged. SIGTERM (SLURM's time limit, preemption,
``scancel``) writes a checkpoint at the next step boundary and exits, so the requeued job loses nothing.

Time is counted in optimizer steps. Experiments stated in epochs (``train.epochs``) are
converted with the run's steps per epoch, after an optional warm-up (``train.warmup``: the
alignment code's epoch at lr 1e-4 that defines its "init" point).

The learning rate is constant, nanoGPT's warm-up and cosine (``train.schedule``, in steps), or PyTorch's
CosineAnnealingLR stepped once per epoch (``train.cosine_annealing``, the tangent paper's). The init and the
minibatch order draw from generators seeded with the run's seed, or with ``seeds.init`` and ``seeds.shuffle`` where
the run keys its random streams (``featlearn.seeds``).
"""

from __future__ import annotations

import logging
import math
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from featlearn import hooks, optim
from featlearn.config import spec_json
from featlearn.models import build_model

log = logging.getLogger(__name__)


def measurement_steps(steps: int, every: int, start: int = 0, stride: int = 1) -> list[int]:
    """Init, step 1 (the first centered point), every ``every``-th unit after ``start``, and the final step.

    Units are steps (``stride`` 1) or epochs of ``stride`` steps, counted from step ``start``
    (the end of the warm-up); epoch schedules skip step 1, which is inside the first epoch.
    """
    if stride == 1 and start == 0:
        return sorted({0, 1, *range(0, steps + 1, every), steps})
    return sorted({0, *range(start, steps + 1, every * stride), steps})


def training_tensors(data: dict) -> dict[str, torch.Tensor]:
    """Inputs and targets of any dataset file: synthetic (x, y), images (x_train, y_train) or a
    character corpus (train, val). Scalar targets become one output column."""
    if "x" in data or "x_train" in data:
        x, y = (data["x"], data["y"]) if "x" in data else (data["x_train"], data["y_train"])
        xt, yt = data.get("x_test", x[:0]), data.get("y_test", y[:0])
    else:
        return {"tokens": torch.as_tensor(data["train"]).long(),
                "val_tokens": torch.as_tensor(data["val"]).long()}
    column = (lambda t: t[:, None]) if y.dim() == 1 else (lambda t: t)
    return {"x": x.float(), "y": column(y.float()), "x_test": xt.float(), "y_test": column(yt.float())}


def schedule(spec: dict, n: int) -> dict[str, int]:
    """steps, steps_per_epoch, warmup_steps and the measurement list of one run on n examples.

    A rehearsal's run (``train.budget``, ``featlearn.pipeline.rehearsal``) takes the first ``budget.steps`` steps of
    that plan at the run's own lr, without the warm-up epoch, and is measured at init and at its end."""
    tr = spec["train"]
    if "epochs" not in tr:
        plan = {"steps": tr["steps"], "steps_per_epoch": 1, "warmup_steps": 0,
                "measure": measurement_steps(tr["steps"], tr["measure_every"])}
    else:
        per_epoch = math.ceil(n / (tr.get("batch_size") or n))
        warmup = tr.get("warmup", {}).get("epochs", 0) * per_epoch
        steps = warmup + tr["epochs"] * per_epoch
        plan = {"steps": steps, "steps_per_epoch": per_epoch, "warmup_steps": warmup,
                "measure": measurement_steps(steps, tr["measure_every"], warmup, per_epoch)}
    if "budget" in tr:
        steps = min(plan["steps"], tr["budget"]["steps"])
        plan |= {"steps": steps, "warmup_steps": 0, "measure": [0, steps]}
    return plan


def annealed_lr(lr: float, epoch: int, t_max: int) -> float:
    """The learning rate of epoch ``epoch`` (0 = the first) under PyTorch's CosineAnnealingLR (η_min = 0, period
    ``t_max`` epochs, rising again after it), ≈ lr (1 + cos(π epoch / t_max)) / 2. Replays the scheduler's recursive
    update, whose last bits differ from the closed form, so that a run matches one driven by the scheduler bit for
    bit."""
    value = lr
    for e in range(1, epoch + 1):
        if (e - 1 - t_max) % (2 * t_max) == 0:
            value = value + lr * (1 - math.cos(math.pi / t_max)) / 2
        else:
            value = (1 + math.cos(math.pi * e / t_max)) / (1 + math.cos(math.pi * (e - 1) / t_max)) * value
    return value


def cosine_lr(it: int, lr: float, min_lr: float, warmup: int, decay_iters: int) -> float:
    """nanoGPT's schedule: linear warmup lr·(it+1)/(warmup+1), cosine decay to ``min_lr`` at ``decay_iters``, then
    constant ``min_lr``."""
    if it < warmup:
        return lr * (it + 1) / (warmup + 1)
    if it > decay_iters:
        return min_lr
    ratio = (it - warmup) / (decay_iters - warmup)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (lr - min_lr)


def lr_at(tr: dict, step: int, plan: dict[str, int]) -> float:
    """The learning rate of one step: a constant after the alignment warm-up epoch, nanoGPT's linear warm-up then
    cosine decay (``train.schedule``), or a cosine annealed per epoch (``train.cosine_annealing``, period ``t_max``
    epochs, default ``train.epochs``). ``plan`` is the run's ``schedule``."""
    if step < plan["warmup_steps"]:
        return tr["warmup"]["lr"]
    if "cosine_annealing" in tr:
        epoch = (step - plan["warmup_steps"]) // plan["steps_per_epoch"]
        return annealed_lr(tr["lr"], epoch, tr["cosine_annealing"].get("t_max") or tr["epochs"])
    cosine = tr.get("schedule")
    if cosine is None:
        return tr["lr"]
    return cosine_lr(step, tr["lr"], cosine["min_lr"], cosine["warmup_steps"], cosine["decay_steps"])


def loss_fn(name: str, out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """MSE, mean over samples and outputs (``nn.MSELoss``), or next-token cross-entropy."""
    if name == "cross_entropy":
        return F.cross_entropy(out.reshape(-1, out.shape[-1]), target.reshape(-1))
    return F.mse_loss(out, target)


def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor, loss: str = "mse", chunk: int = 1024) -> float:
    """Mean loss over a whole split in chunks, in eval mode (dropout off); NaN for an empty split."""
    if len(x) == 0:
        return float("nan")
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    total = 0.0
    with torch.no_grad():
        for i in range(0, len(x), chunk):
            xb, yb = x[i:i + chunk].to(device), y[i:i + chunk].to(device)
            total += float(loss_fn(loss, model(xb), yb)) * len(xb)
    model.train(was_training)
    return total / len(x)


def token_batch(tokens: torch.Tensor, batch: int, block: int, generator: torch.Generator) -> tuple[torch.Tensor, ...]:
    """nanoGPT's random windows: inputs (batch, block) and the next characters as targets."""
    start = torch.randint(len(tokens) - block - 1, (batch,), generator=generator)
    window = torch.stack([tokens[s:s + block + 1] for s in start.tolist()])
    return window[:, :-1], window[:, 1:]


def snapshot(model: nn.Module) -> dict[str, torch.Tensor]:
    """Every parameter and buffer on the CPU: what metric extraction rebuilds the model from."""
    return {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}


CHECKPOINT_KEYS = {"spec", "model", "optimizer", "shuffle", "rng", "snapshots", "losses", "speeds", "step", "order"}


class Interrupted(RuntimeError):
    """Training stopped on SIGTERM after writing its checkpoint; rerunning the job resumes from it."""


class _StopOnSigterm:
    """While active, SIGTERM only sets ``requested``: the loop checkpoints at a step boundary, then stops.

    A handler is only installed in the main thread (Python's rule); elsewhere SIGTERM keeps its default.
    """

    def __init__(self) -> None:
        self.requested = False
        self._previous = None

    def __enter__(self) -> _StopOnSigterm:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGTERM, self._handle)
        return self

    def _handle(self, signum: int, frame: object) -> None:
        self.requested = True

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGTERM, self._previous)


def _load_checkpoint(path: Path, spec: str) -> dict | None:
    if not path.exists():
        return None
    try:
        ckpt = hooks.current().load(path)
    except OSError as err:  # a truncated or corrupted file: say so, start over
        log.warning("checkpoint %s: %s; training from scratch", path, err)
        return None
    if ckpt.get("spec") != spec:
        log.warning("checkpoint %s belongs to another configuration; training from scratch", path)
        return None
    if not CHECKPOINT_KEYS <= ckpt.keys():
        log.warning("checkpoint %s lacks %s (an older version wrote it); training from scratch",
                    path, sorted(CHECKPOINT_KEYS - ckpt.keys()))
        return None
    log.info("resuming from %s at step %d", path, ckpt["step"])
    return ckpt


LayerNFCs = Callable[[nn.Module, torch.Tensor], list[float]]


@dataclass
class _Run:
    """What one run's loop reads, built once by ``_setup`` (the same whether it starts or resumes)."""

    spec: dict
    canonical: str  # the spec as its checkpoint and record name it
    device: torch.device
    model: nn.Module
    optimizer: torch.optim.Optimizer
    before_step: Callable[..., Any] | None  # an optimizer steered by the network's state (adaptive SLO)
    layer_nfcs: LayerNFCs | None
    tokens: torch.Tensor | None  # a character corpus; else x and y
    x: torch.Tensor | None
    y: torch.Tensor | None
    n: int
    batch: int
    plan: dict
    shuffle: torch.Generator  # the minibatch order's (or the corpus windows') random stream

    @property
    def tr(self) -> dict:
        return self.spec["train"]

    @property
    def per_epoch(self) -> int:
        return math.ceil(self.n / self.batch)

    @property
    def loss(self) -> str:
        return self.tr.get("loss", "mse")


def nudge(model: nn.Module, ulps: int) -> None:
    """Move every floating-point parameter ``ulps`` units in the last place up: a rounding twin's start
    (``featlearn.pipeline.twins``), the least change of a run there is."""
    with torch.no_grad():
        for p in model.parameters():
            if p.is_floating_point():
                for _ in range(ulps):
                    p.copy_(torch.nextafter(p, torch.full_like(p, math.inf)))


def _setup(spec: dict, data: dict, device: torch.device | str, layer_nfcs: LayerNFCs | None) -> _Run:
    """The model, its optimizer, the data on ``device``, the schedule and the minibatch generator; then the global
    generator seeded for dropout (the order of these draws is part of every run's bits)."""
    tr = spec["train"]
    device = torch.device(device)
    tensors = training_tensors(data)
    model = build_model(spec, data).to(device)
    nudge(model, spec.get("nudge", 0))
    model.train()
    rule = optim.module(tr["optimizer"])
    optimizer = rule.make(model, tr)
    if "tokens" in tensors:
        tokens, n, x, y = tensors["tokens"], tr["batch_size"], None, None
    else:
        tokens, x, y = None, tensors["x"].to(device), tensors["y"].to(device)
        n = len(x)
    plan = schedule(spec, n)
    shuffle = torch.Generator().manual_seed(spec.get("seeds", {}).get("shuffle", spec["seed"] + 1))
    torch.manual_seed(spec["seed"] + 2)  # dropout draws from the global generator: seed it, checkpoint it
    return _Run(spec, spec_json(spec), device, model, optimizer, getattr(rule, "before_step", None), layer_nfcs,
                tokens, x, y, n, tr.get("batch_size") or n, plan, shuffle)


def _resume(run: _Run, checkpoint: Path) -> dict:
    """The loop's state: fresh, or the checkpoint's, with the model, optimizer and both generators restored."""
    state = {"snapshots": {}, "losses": [], "speeds": [], "step": 0, "order": torch.arange(run.n)}
    ckpt = _load_checkpoint(checkpoint, run.canonical)
    if ckpt is not None:
        run.model.load_state_dict(ckpt["model"])
        run.optimizer.load_state_dict(ckpt["optimizer"])
        run.shuffle.set_state(ckpt["shuffle"])
        torch.set_rng_state(ckpt["rng"])
        state = {k: ckpt[k] for k in state}
    return state


def _save_checkpoint(run: _Run, state: dict, checkpoint: Path) -> None:
    """Everything a resumed run needs to go on bit for bit: weights, optimizer, both generators, the loop's state."""
    hooks.current().save({"spec": run.canonical, "model": run.model.state_dict(),
                          "optimizer": run.optimizer.state_dict(), "shuffle": run.shuffle.get_state(),
                          "rng": torch.get_rng_state(), **state}, checkpoint)


def _batch(run: _Run, state: dict, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Step ``step``'s minibatch: nanoGPT's random windows, or the next slice of the epoch's order (reshuffled at
    each epoch's first step when the batch is smaller than the data)."""
    if run.tokens is not None:
        block = run.spec["model"]["block_size"]
        xb, yb = (t.to(run.device) for t in token_batch(run.tokens, run.batch, block, run.shuffle))
        return xb, yb
    if run.batch < run.n and step % run.per_epoch == 0:
        state["order"] = torch.randperm(run.n, generator=run.shuffle)
    idx = state["order"][(step % run.per_epoch) * run.batch:][:run.batch]
    return run.x[idx], run.y[idx]


def _step(run: _Run, state: dict, step: int, xb: torch.Tensor, yb: torch.Tensor) -> bool:
    """One optimizer step on a minibatch, its loss recorded; False, before any update, where the loss is not finite."""
    speeds = run.before_step(run.optimizer, run.model, run.x, run.tr, run.layer_nfcs) if run.before_step else None
    if speeds is not None:
        state["speeds"].append(speeds)
    for group in run.optimizer.param_groups:
        group["lr"] = lr_at(run.tr, step, run.plan)
    run.optimizer.zero_grad()
    loss = loss_fn(run.loss, run.model(xb), yb)
    state["losses"].append(loss.item())
    if not math.isfinite(state["losses"][-1]):
        return False
    loss.backward()
    if run.tr.get("grad_clip"):
        nn.utils.clip_grad_norm_(run.model.parameters(), run.tr["grad_clip"])
    run.optimizer.step()
    return True


def _final_loss(run: _Run, state: dict) -> bool:
    """Record the whole training split's loss after the last step (not for a corpus); False where it is not
    finite."""
    if run.tokens is not None:
        return True
    final = evaluate(run.model, run.x, run.y, run.loss)
    state["losses"].append(final)
    return math.isfinite(final)


def _record(run: _Run, state: dict, status: str, diverged_at: int | None, seconds: float) -> dict:
    """What the run file holds: the snapshots metric extraction reads, the losses, the schedule and how it ended."""
    return {
        "spec": run.canonical,
        "snapshots": state["snapshots"],
        "schedule": run.plan,
        "losses": torch.tensor(state["losses"], dtype=torch.float64),
        "speeds": torch.tensor(state["speeds"], dtype=torch.float64),
        "status": status,
        "diverged_step": diverged_at,
        "seconds": seconds,
    }


def train(spec: dict, data: dict, out: Path, checkpoint: Path, device: torch.device | str = "cpu",
          layer_nfcs: LayerNFCs | None = None) -> dict:
    """Train one run on ``device`` and write ``out``: snapshots, per-step losses, schedule, status. Returns the record.

    ``spec`` is one entry of ``featlearn.config.runs``; ``data`` the run's dataset file. The device is not part of the
    spec: where a run computes does not change what it is (a checkpoint written on a GPU resumes on the CPU).
    Adaptive SLO needs every hidden layer's UC-NFC at each step: ``layer_nfcs(model, x)`` (``metrics.nfa``), passed in
    so that training stays below the metrics layer.
    """
    out, checkpoint = Path(out), Path(checkpoint)
    run = _setup(spec, data, device, layer_nfcs)
    state = _resume(run, checkpoint)
    steps, measure_at, every_s = run.plan["steps"], set(run.plan["measure"]), run.tr.get("checkpoint_seconds", 60.0)
    start = time.monotonic()
    last_ckpt = start
    hooks.current().start("step")
    status, diverged_at = "completed", None
    step = state["step"]
    with _StopOnSigterm() as stop:
        while True:
            if step in measure_at:
                state["snapshots"][step] = snapshot(run.model)
            if step < steps and (stop.requested or time.monotonic() - last_ckpt >= every_s):
                _save_checkpoint(run, state, checkpoint)
                last_ckpt = time.monotonic()
                if stop.requested:
                    raise Interrupted(f"{out}: SIGTERM at step {step}/{steps}; checkpoint {checkpoint} "
                                      "written, rerun the job to resume")
            if step == steps:
                if not _final_loss(run, state):
                    status, diverged_at = "diverged", step
                    state["snapshots"].pop(step, None)
                break
            if not _step(run, state, step, *_batch(run, state, step)):
                status, diverged_at = "diverged", step
                state["snapshots"].pop(step, None)
                log.warning("run %s diverged at step %d (loss %s)", out, step, state["losses"][-1])
                break
            hooks.current().tick()
            step += 1
            state["step"] = step
            if step % max(1, steps // 20) == 0:
                log.info("step %d/%d loss %.4g", step, steps, state["losses"][-1])
    record = _record(run, state, status, diverged_at, time.monotonic() - start)
    hooks.current().save(record, out)
    checkpoint.unlink(missing_ok=True)
    return record
