"""NFA quantities of conv layers (docs/figures/alignment.md, Conv layers; Fig 2C).

A 3×3 conv with padding 1 applies W ∈ R^{C_out×C_in·9} to every unfolded input patch p: h = W p + b at each position.
So the NFM is WᵀW and the AGOP with respect to the patches is WᵀKW with
K = (1/n) Σ_images Σ_positions Σ_outputs (∂f_j/∂h)(∂f_j/∂h)ᵀ ∈ R^{C_out×C_out}, h the conv output before ReLU: the
same K convention as ``nfa.ptk_feature_covariance`` (1/n over images), so ``nfa.agop``/``nfa.nfc_pairs`` apply as is.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
import xarray as xr

from featlearn.metrics import model_nfa, nfa
from featlearn.metrics.layers import conv_weight_matrix, module_names
from featlearn.models.vgg import VGG11
from featlearn.train import evaluate, training_tensors


def conv_feature_covariances(
    model: VGG11, x: torch.Tensor, batch_size: int = 256, drop_biases: bool = True
) -> list[torch.Tensor]:
    """K_ℓ (C_out×C_out, float64) for the 8 conv layers on images ``x`` (n, C, H, W), exact over the outputs.

    Computed on a copy of ``model`` in eval mode (dropout off). With ``drop_biases`` the copy's conv biases are zeroed
    before the forward pass: the authors' code measures K on a rebuilt network without conv biases
    although training uses them; pass False for the K of the trained network itself. The sum is the library's
    (``model_nfa.covariances``): per batch, one forward pass and one backward pass per output j of Σ_images f_j with
    respect to zero shifts on every conv output gives ∂f_j/∂h_ℓ at every image, position and layer (images do not
    interact without BatchNorm). ``model`` is left untouched.
    """
    net = copy.deepcopy(model).eval().requires_grad_(False)
    if drop_biases:
        with torch.no_grad():
            for conv in net.conv_layers:
                conv.bias.zero_()
    names = module_names(net, net.conv_layers)
    ks, _ = model_nfa.covariances(net, x, names, batch_size=batch_size)
    return [ks[name] for name in names]


class Measurement:
    """Family ``conv_nfa`` of ``metrics.measure``: UC/C-NFC of every conv layer on the first ``measure.n_measure``
    training images, and the losses over the whole splits, per snapshot."""

    def __init__(self, spec: dict, data: dict, init: VGG11, device: torch.device) -> None:
        self.tensors = {k: v.to(device) for k, v in training_tensors(data).items()}
        self.x_k = self.tensors["x"][: spec["measure"].get("n_measure") or len(self.tensors["x"])]
        self.w0 = [conv_weight_matrix(c) for c in init.conv_layers]

    def snapshot(self, step: int, model: VGG11) -> dict[str, object]:
        ks = conv_feature_covariances(model, self.x_k)
        weights = [conv_weight_matrix(c) for c in model.conv_layers]
        t = self.tensors
        return {**nfa.nfc_columns(weights, self.w0, ks, step == 0), "train_loss": evaluate(model, t["x"], t["y"]),
                "test_loss": evaluate(model, t["x_test"], t["y_test"])}

    def dataset(self, values: dict[str, np.ndarray], time_labels: xr.Dataset) -> xr.Dataset:
        ds = time_labels.assign_coords(layer=list(range(1, len(self.w0) + 1)), convention=list(nfa.CONVENTIONS))
        for name, v in values.items():
            ds[name] = (("step", "layer", "convention")[: v.ndim], v)
        ds.attrs.update(k_samples=len(self.x_k),
                        k_convention="K without conv biases, eval mode (the authors' code)")
        return ds

    def extras(self) -> xr.Dataset:
        return xr.Dataset()
