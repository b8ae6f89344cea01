"""Random feature maps Φ_l of Deep RFM, drawn fresh at every layer (docs/figures/collapse.md, Deep RFM).

Rows are samples: Φ maps X (N, d) to (N, D). Every draw takes an explicit ``torch.Generator`` and is made on the
generator's device (the pipeline's are CPU generators), then moved to X's: a seed gives the same features whether X
lives on the CPU or a GPU, and a CPU generator never meets a CUDA tensor (which torch refuses).
"""

from __future__ import annotations

import math

import torch


def l1_laplace_kernel(x: torch.Tensor, z: torch.Tensor, gamma: float) -> torch.Tensor:
    """exp(−γ‖x_i − z_j‖₁), (n, p): the kernel the cos random features approximate (App. C)."""
    return torch.exp(-gamma * torch.cdist(x, z, p=1))


def relu_features(x: torch.Tensor, width: int, generator: torch.Generator) -> torch.Tensor:
    """Φ(z) = ReLU(W z), W (D, d) i.i.d. N(0, 1), no bias (§3.3; App. C: D = 1024); rows ReLU(X Wᵀ), (N, D)."""
    w = torch.randn(width, x.shape[1], generator=generator, dtype=x.dtype, device=generator.device)
    return (x @ w.to(x.device).T).relu_()  # in place: one (N, D) buffer


def laplace_fourier_features(x: torch.Tensor, width: int, gamma: float, generator: torch.Generator) -> torch.Tensor:
    """Φ(z) = √(2/D) cos(Ωz + b), Ω (D, d) i.i.d. Cauchy(0, γ), b i.i.d. U[0, 2π], (N, D).

    E[Φ(x)ᵀΦ(z)] = exp(−γ‖x − z‖₁), random Fourier features of the ℓ1-Laplacian kernel (App. C: D = 4096, γ = 0.05):
    the Cauchy(0, γ) law is the Fourier transform of exp(−γ|t|) in each coordinate.
    """
    draw = {"dtype": x.dtype, "device": generator.device}
    omega = torch.empty(width, x.shape[1], **draw).cauchy_(0.0, gamma, generator=generator)
    b = 2 * math.pi * torch.rand(width, generator=generator, **draw)
    return (x @ omega.to(x.device).T).add_(b.to(x.device)).cos_().mul_(math.sqrt(2 / width))  # one (N, D) buffer
