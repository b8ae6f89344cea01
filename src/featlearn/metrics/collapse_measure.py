"""One snapshot of a collapse-paper network -> the NC1/NFA quantities of Figs 2, 7–12 (docs/figures/collapse.md).

For head layer l = 1..5 with input h^l (post-ReLU; h¹ = flattened input or backbone output) and weight W_l:

* NC1 at the three SVD stages of W_l = U S Vᵀ: h^l (blue), S Vᵀh^l (green), ReLU(W_l h^l) = h^{l+1} (red);
* φ_l, the share of the layer's log-NC1 reduction made by S Vᵀ (our statistic);
* AGOP_l = (1/n) Σ_i J_iᵀJ_i, J_i = ∂f(x_i)/∂h^l (10 × d_l), and ρ(W_lᵀW_l, AGOP_l^{1/2}) (``nfa_sqrt``, the paper's
  NFA) and ρ(W_lᵀW_l, AGOP_l) (``nfa_full``), Pearson over entries;
* tr Σ_W/tr Σ_T and tr Σ_B/tr Σ_T of h⁶, the readout's input (Figs 10–12 col. 1, the authors' code).

Everything NC-related uses all N samples; the AGOP uses a class-balanced subset (``collapse.stratified_indices``: the
first n_agop/K samples of each class in data order), the same at every snapshot so curves carry no subset noise.
"""

from __future__ import annotations

import numpy as np
import torch
import xarray as xr

from featlearn.metrics import nfa
from featlearn.metrics.collapse import (
    between_over_total,
    right_singular_fraction,
    stratified_indices,
    svd_stage_nc1,
    within_over_total,
)
from featlearn.models.collapse_nets import CollapseNet
from featlearn.train import evaluate, training_tensors

STAGES = ("input", "right", "left")  # Φ(X) blue, S Vᵀ Φ(X) green, ReLU(U S Vᵀ Φ(X)) red
LONG_NAMES = {
    "nc1": "NC1 = tr Σ_W / tr Σ_B of h^l (input), S Vᵀ h^l (right), ReLU(W_l h^l) (left)",
    "nfa_sqrt": "NFA: Pearson ρ(W_lᵀW_l, AGOP_l^{1/2}), AGOP w.r.t. the layer input h^l",
    "nfa_full": "Pearson ρ(W_lᵀW_l, AGOP_l) (Ansatz 3.2 with the plain AGOP)",
    "phi": "φ_l: share of the layer's log-NC1 reduction made by S Vᵀ (input→right over input→left)",
    "w_over_t": "tr Σ_W / tr Σ_T of h^6, the readout's input",
    "b_over_t": "tr Σ_B / tr Σ_T of h^6, the readout's input",
}


def preactivation_jacobians(model: CollapseNet, layer: int, h: torch.Tensor) -> torch.Tensor:
    """A[i, c, :] = ∂f_c(x_i)/∂z^l at the pre-activation z^l = W_l h^l, float64 (n, C, m): the collapse head's
    counterpart of ``metrics.jacobians.layer_jacobians``.

    Samples do not interact in the head, so one backward pass per output c of Σ_i f_c(x_i) gives row c of every A_i:
    C backward passes in all, for h = h^l (n, d_l).
    """
    z = (h.detach() @ model.head[layer - 1].weight.detach().T).requires_grad_(True)
    out = model.head_from(layer + 1, torch.relu(z))
    rows = [torch.autograd.grad(out[:, c].sum(), z, retain_graph=c < out.shape[1] - 1)[0]
            for c in range(out.shape[1])]
    return torch.stack(rows, dim=1).to(torch.float64)


def agop_and_sqrt(w: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """AGOP_l = W_lᵀ K_l W_l (J_i = A_i W_l, the chain rule) and its PSD root, float64 (d_l, d_l) each.

    The AGOP has rank ≤ m, so its root comes from the (m, d_l) factor B = K^{1/2} W = U S Vᵀ: AGOP^{1/2} = V S Vᵀ,
    exactly the eigh root with clipped eigenvalues (§2.2) at O(m² d_l) instead of a d_l × d_l eigh (27 s at
    d_l = 3072 on the 2-core CPU; MLP on CIFAR/SVHN, VGG head layer 1).
    """
    w = w.to(torch.float64)
    agop = nfa.agop(w, k)
    if w.shape[1] <= w.shape[0]:  # d_l ≤ m: the plain eigh is the cheaper root (0.07 s against 0.3 s at 512)
        return agop, nfa.psd_sqrt(agop)
    _, s, vh = torch.linalg.svd(nfa.psd_sqrt(k) @ w, full_matrices=False)
    return agop, (vh.T * s) @ vh


@torch.no_grad()
def _head_inputs(model: CollapseNet, x: torch.Tensor, batch_size: int) -> list[torch.Tensor]:
    chunks = [model.head_inputs(x[i:i + batch_size]) for i in range(0, len(x), batch_size)]
    return [torch.cat(parts) for parts in zip(*chunks)]


def measure_collapse(model: CollapseNet, x: torch.Tensor, labels: torch.Tensor, n_agop: int | None = None,
                     batch_size: int = 1000) -> dict[str, np.ndarray]:
    """Every per-snapshot quantity of Figs 2, 7–12 for inputs x (N, …) with int labels (N,), in eval mode.

    Returns nc1 (5, 3) over (layer, stage ∈ ``STAGES``), nfa_sqrt, nfa_full, phi (5,), w_over_t, b_over_t (). The
    AGOP uses ``n_agop`` class-balanced samples (None: all N); features are computed ``batch_size`` samples at a time.
    The model's train/eval mode is restored afterwards.
    """
    was_training = model.training
    model.eval()  # BatchNorm running statistics, as the authors measure (the authors' code)
    try:
        hs = _head_inputs(model, x, batch_size)
        subset = stratified_indices(labels, n_agop // (int(labels.max()) + 1)) if n_agop else slice(None)
        nc1, phi, nfa_sqrt, nfa_full = [], [], [], []
        for layer, fc in enumerate(model.head, start=1):
            w = fc.weight.detach()
            stages = svd_stage_nc1(w, hs[layer - 1], labels)
            nc1.append([stages[s] for s in STAGES])
            phi.append(right_singular_fraction(stages))
            k = nfa.ptk_feature_covariance(preactivation_jacobians(model, layer, hs[layer - 1][subset]))
            agop, root = agop_and_sqrt(w, k)
            # nfa_correlation(w, agop) would redo the root by a d×d eigh; same Pearson ρ, precomputed root
            nfm = nfa.nfm(w.to(torch.float64))
            nfa_sqrt.append(nfa.correlation(nfm, root, "pearson"))
            nfa_full.append(nfa.correlation(nfm, agop, "pearson"))
    finally:
        model.train(was_training)
    last = hs[-1]
    return {
        "nc1": np.array(nc1), "nfa_sqrt": np.array(nfa_sqrt), "nfa_full": np.array(nfa_full), "phi": np.array(phi),
        "w_over_t": np.array(within_over_total(last, labels)), "b_over_t": np.array(between_over_total(last, labels)),
    }


def collapse_run_dataset(values: dict[str, np.ndarray], time_labels: xr.Dataset) -> xr.Dataset:
    """One run's ``measure_collapse`` quantities, each stacked over the measured epochs, as a Dataset on the run's time
    labels (``featlearn.metrics.axes.epoch_axis``: dimension ``step``, coordinate ``epoch``): nc1 (step, layer, stage);
    nfa_sqrt, nfa_full, phi (step, layer); w_over_t, b_over_t (step). Layers are numbered 1..5 as in the figures;
    every quantity is a dimensionless ratio or correlation (units "1")."""
    if len(values["phi"]) != time_labels.sizes["step"]:
        raise ValueError(f"collapse_run_dataset: {len(values['phi'])} measurements for {time_labels.sizes['step']} "
                         "epochs")
    dims = {"nc1": ("step", "layer", "stage"), "nfa_sqrt": ("step", "layer"), "nfa_full": ("step", "layer"),
            "phi": ("step", "layer"), "w_over_t": ("step",), "b_over_t": ("step",)}
    layers = np.arange(1, values["phi"].shape[1] + 1)
    return time_labels.assign(
        {name: (dim, values[name], {"long_name": LONG_NAMES[name], "units": "1"}) for name, dim in dims.items()},
    ).assign_coords(
        layer=("layer", layers, {"long_name": "head layer l (1 = the first fully connected layer)", "units": "1"}),
        stage=("stage", list(STAGES), {"long_name": "SVD stage of W_l = U S Vᵀ: input h^l, right S Vᵀh^l, left "
                                                    "ReLU(W_l h^l)"}),
    )


class Measurement:
    """Family ``collapse`` of ``metrics.measure``: ``measure_collapse`` and the losses, per snapshot, on the whole
    training subset; the AGOP on ``measure.n_measure`` class-balanced samples."""

    def __init__(self, spec: dict, data: dict, init: CollapseNet, device: torch.device) -> None:
        self.tensors = {k: v.to(device) for k, v in training_tensors(data).items()}
        self.labels = data["labels_train"].to(device)
        self.n_agop = spec["measure"].get("n_measure")

    def snapshot(self, step: int, model: CollapseNet) -> dict[str, object]:
        t = self.tensors
        return {**measure_collapse(model, t["x"], self.labels, self.n_agop),
                "train_loss": evaluate(model, t["x"], t["y"]), "test_loss": evaluate(model, t["x_test"], t["y_test"])}

    def dataset(self, values: dict[str, np.ndarray], time_labels: xr.Dataset) -> xr.Dataset:
        ds = collapse_run_dataset(values, time_labels)
        ds["train_loss"], ds["test_loss"] = ("step", values["train_loss"]), ("step", values["test_loss"])
        return ds

    def extras(self) -> xr.Dataset:
        return xr.Dataset()
