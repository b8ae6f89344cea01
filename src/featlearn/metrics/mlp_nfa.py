"""Family ``nfa`` of ``metrics.measure``: the NFA of every hidden layer of an MLP at each snapshot, and its first-layer
matrices at the end (docs/figures/alignment.md, Quantities; Figs 1, 2A–B, 4–6, 8–17).

At every snapshot the K_ℓ of all layers come from one pass over blocks of points, one backward pass per output
(``mlp_feature_covariances``, the library's ``model_nfa.covariances``: no whole Jacobian is held); the centered K̄
recomputes J_0 per block. Its memory (``mlp_covariance_plan``) is checked before the first snapshot. K is taken over
the first ``measure.n_measure`` training points (all when absent), exactly over every output; losses over the whole
training and test splits.
"""

from __future__ import annotations

import json

import numpy as np
import torch
import xarray as xr
from torch import nn

from featlearn import hooks
from featlearn.data.synthetic import haar_orthogonal
from featlearn.metrics import model_nfa, nfa
from featlearn.metrics.layers import module_names
from featlearn.models.mlp import MLP
from featlearn.train import evaluate, training_tensors

NFCS = ("uc_nfc", "c_nfc", "dc_nfc", "ptkc_nfc")
DIMS = ("step", "layer", "convention")  # a quantity's dims, as many as it has
# Bytes of one block of points in ``mlp_feature_covariances``. Fixed, not sized from the free memory: the blocks set
# the order of the float64 sums, and a store must not depend on the machine that computed it.
BLOCK_BYTES = 1 << 30


def mlp_feature_covariances(
    model: MLP, x: torch.Tensor, chunk: int, init: MLP | None = None
) -> tuple[list[torch.Tensor], list[torch.Tensor] | None]:
    """K_ℓ (Eq. 3, as ``nfa.ptk_feature_covariance``) of every hidden layer over the inputs x (n, d), float64, and with
    ``init`` (the model at initialization) K̄_ℓ from J_t − J_0; None in its place without.

    ``model_nfa.covariances`` over blocks of ``chunk`` points, one output at a time: K = (1/n) Σ_blocks Σ_j G_jᵀ G_j
    with G_j = J[block, j, :], so no (n, c, k) Jacobian is ever held (the CIFAR-100 MLP's at n = 50,000: 26 GB).
    J_0 is recomputed per block from ``init`` rather than cached: a cached J_0 would be that whole array again, and
    the second forward pass and c backward passes it costs fall only on the small synthetic runs that ask for K̄.
    """
    names = module_names(model, model.hidden)
    ks, k_bars = model_nfa.covariances(model, x, names, init=init, batch_size=chunk, chunk_bytes=0)
    return [ks[name] for name in names], None if k_bars is None else [k_bars[name] for name in names]


def mlp_covariance_plan(model: MLP, n: int, centered: bool, budget: int = BLOCK_BYTES) -> tuple[int, int]:
    """(points per block, peak bytes) of ``mlp_feature_covariances`` on ``model`` over n points, K̄ if ``centered``.

    Per point of a block, in the model's itemsize s: the graph kept for the c backward passes (the zero shifts, the
    ReLU outputs and the outputs, 2Σk + c), the gradients of two outputs at every layer (the previous one is still
    bound while the next is computed, 2Σk) and the backward's temporaries (2 max k); all of it twice when centered
    (the init model's too); and two layers' gradients in float64 (16 max k: the sum this plan was written for held
    two; ``model_nfa.covariances`` holds one, but the term stays, as it sets the blocks and so the order of the
    stores' float64 sums). On top: K (and K̄), 8 Σk² bytes each, and 64 MiB for BLAS workspaces and small tensors.
    With m = 1 + centered,

        peak = 8 m Σk² + 2^26 + b (m s (4 Σk + c + 2 max k) + 16 max k),

    b the most points ``budget`` holds. Measured peak RSS of the CIFAR-100 MLP on the CPU, 250 to 4,000 points per
    block, centered or not: 83–95% of the terms besides the 64 MiB. The paper's (n = 50,000, c = 100, five layers
    of 256, float32): 39,732 points per block, 1.14 GB.
    """
    widths = [layer.weight.shape[0] for layer in model.hidden]
    outputs = model.layers[-1].weight.shape[0]
    itemsize = next(model.parameters()).element_size()
    copies = 1 + centered
    per_point = copies * itemsize * (4 * sum(widths) + outputs + 2 * max(widths)) + 16 * max(widths)
    chunk = max(1, min(n, budget // per_point))
    return chunk, copies * 8 * sum(k * k for k in widths) + (1 << 26) + chunk * per_point


def _weights(model: nn.Module) -> list[torch.Tensor]:
    return [layer.weight.detach() for layer in model.hidden]


class Measurement:
    """Every per-snapshot, per-layer NFA quantity of one MLP run in both correlation conventions (K̄ and the doubly
    centered quantities with ``measure.centered``, ρ against the EGOP where the data has one), and the first-layer
    matrices at the last finite snapshot."""

    def __init__(self, spec: dict, data: dict, init: nn.Module, device: torch.device) -> None:
        self.spec, self.init = spec, init
        self.centered = spec["measure"].get("centered", False)
        self.tensors = {k: v.to(device) for k, v in training_tensors(data).items()}
        x = self.tensors["x"]
        self.x_k = x[: spec["measure"].get("n_measure") or len(x)]
        egop = data.get("egop")
        self.egop = None if egop is None else egop.to(device)
        self.image = image_shape(data) if spec["measure"].get("image_diagonals") else None
        self.w0 = _weights(init)
        self.chunk, need = mlp_covariance_plan(init, len(self.x_k), self.centered)
        hooks.current().check_fits(
            need, device, f"K of {len(self.w0)} layers over {len(self.x_k):,} points ({self.chunk:,} per block)",
            "free memory on the device (another job may hold it) or run on one with that much free")
        self.last: tuple[int, list[torch.Tensor], list[torch.Tensor]] | None = None

    def snapshot(self, step: int, model: nn.Module) -> dict[str, object]:
        ks, k_bars = mlp_feature_covariances(model, self.x_k, self.chunk, self.init if self.centered else None)
        weights = _weights(model)
        self.last = (step, weights, ks)
        nan = [float("nan")] * len(nfa.CONVENTIONS)
        layers, first = [], None
        for ell, (w, w_init, k) in enumerate(zip(weights, self.w0, ks)):
            w, w_init = w.double(), w_init.double()
            pairs = nfa.nfc_pairs(w, w_init, k, k_bars[ell] if self.centered else None)
            layer = {name: [nfa.correlation(a, b, c) for c in nfa.CONVENTIONS]
                     if name == "uc_nfc" or step > 0 else nan  # centered quantities are undefined at init
                     for name, (a, b) in pairs.items()}
            layer["ratio_c_uc"] = nfa.ratio_c_uc(pairs)
            if self.centered:
                layer["ratio_dc_c"] = nfa.ratio_dc_c(pairs)
            layer["dw_rel"] = nfa.relative_weight_change(w, w_init)
            layer["k_dispersion"] = nfa.eigen_dispersion(k)
            layers.append(layer)
            first = first or pairs["uc_nfc"]  # the first layer's F and Ḡ
        row: dict[str, object] = {name: np.array([layer[name] for layer in layers]) for name in layers[0]}
        row["train_loss"] = evaluate(model, self.tensors["x"], self.tensors["y"])
        row["test_loss"] = evaluate(model, self.tensors["x_test"], self.tensors["y_test"])
        if self.egop is not None:
            f, g = first
            row["rho_nfm_egop"], row["rho_agop_egop"] = nfa.correlation(f, self.egop), nfa.correlation(g, self.egop)
        return row

    def dataset(self, values: dict[str, np.ndarray], time_labels: xr.Dataset) -> xr.Dataset:
        ds = time_labels.assign_coords(layer=np.arange(1, len(self.w0) + 1), convention=list(nfa.CONVENTIONS))
        for name, v in values.items():
            ds[name] = (DIMS[: v.ndim], v)
            if name in NFCS:
                ds[name].attrs["convention"] = "cosine = the paper's ρ; pearson = the authors' Fig 2 code (mat_cov)"
        ds.attrs.update(k_normalization="K = (1/n) Σ_α Σ_j J[α,j]ᵀ J[α,j]; Ḡ = WᵀKW", k_samples=len(self.x_k),
                        final_step=self.last[0])
        return ds

    def extras(self) -> xr.Dataset:
        """First-layer matrices at the last finite snapshot: whole for synthetic d = 32 (Figs 1, 4, 11); as diagonal
        images for real inputs, whose d×d matrices would not fit in a store (Figs 16, 17)."""
        if self.image is not None:
            return _final_diagonals(self.last, self.spec, self.image)
        if "task" in self.spec["data"]:
            return _final_matrices(self.last, self.egop, self.spec)
        return xr.Dataset()


def image_shape(data: dict) -> tuple[int, int, int]:
    """(channels, side, side) of a flattened image dataset, from its preprocessing record."""
    side = json.loads(data["preprocessing"])["size"]
    d = data["x_train"].shape[1]
    return d // (side * side), side, side


def _final_diagonals(last: tuple, spec: dict, image: tuple[int, int, int]) -> xr.Dataset:
    """diag F⁽⁰⁾, diag Ḡ⁽⁰⁾ and diag W⁽⁰⁾ᵀQW⁽⁰⁾ as channel-averaged images, and their Pearson
    correlations (Figs 16, 17): the d×d matrices of a 3·64·64 input would not fit in a store."""
    _, weights, ks = last
    w, k = weights[0].double(), ks[0]
    f, g = (w * w).sum(0), nfa.agop_diagonal(w, k)  # diag F, diag Ḡ
    corrupted = [nfa.agop_diagonal(w, q) for q in _random_q(k, spec)]

    def picture(diag: torch.Tensor) -> np.ndarray:
        return diag.reshape(image).mean(0).cpu().numpy()

    dims = ("row", "col")
    ds = xr.Dataset({"nfm_diag": (dims, picture(f)), "agop_diag": (dims, picture(g)),
                     "rho_diag_agop": nfa.correlation(f, g, "pearson")},
                    attrs={"rho_diagonals": "Pearson over the full diagonal (every channel); images channel-averaged"})
    if corrupted:
        ds["corrupted_diag"] = (dims, picture(corrupted[0]))
        ds["rho_diag_corrupted"] = (("q_draw",), np.array([nfa.correlation(f, c, "pearson") for c in corrupted]))
    return ds


def _random_q(k: torch.Tensor, spec: dict) -> list[torch.Tensor]:
    """Q = O diag(eig K) Oᵀ with O Haar-orthogonal, ``measure.random_q_draws`` times (Figs 1, 16); O's Gaussian is
    drawn on the CPU and its QR runs on K's device, so a seed gives the same Q on every device (to rounding)."""
    eig = torch.linalg.eigvalsh(k)
    gen = torch.Generator().manual_seed(10_000 + spec["seed"])
    draws = []
    for _ in range(spec["measure"].get("random_q_draws", 0)):
        o = haar_orthogonal(len(k), gen, k.device)
        draws.append((o * eig) @ o.T)
    return draws


def _final_matrices(last: tuple, egop: torch.Tensor | None, spec: dict) -> xr.Dataset:
    """First-layer F, Ḡ (and EGOP, corrupted AGOPs) at the last finite snapshot (Figs 1, 4, 11)."""
    _, weights, ks = last
    w, k = weights[0].double(), ks[0]
    f, g = nfa.nfm(w), nfa.agop(w, k)
    dims = ("input_i", "input_j")
    ds = xr.Dataset({"nfm": (dims, f.cpu().numpy()), "agop": (dims, g.cpu().numpy())})
    if egop is not None:
        ds["egop"] = (dims, egop.cpu().numpy())
    corrupted = [nfa.agop(w, q) for q in _random_q(k, spec)]
    if corrupted:
        ds["corrupted_agop"] = (dims, corrupted[0].cpu().numpy())
        ds["rho_nfm_corrupted"] = (("q_draw",), np.array([nfa.correlation(f, c) for c in corrupted]))
    return ds
