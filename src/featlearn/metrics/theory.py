"""Early-time theory of the centered NFC (alignment paper Sec. 4, App. E–G; docs/figures/alignment.md).

At init the first non-zero time derivatives of the centered NFM and AGOP are (Prop. 3, Eq. 6)
XᵀY𝒦YX and XᵀY𝒦²YX, with 𝒦 the layer's PTK matrix and Y = diag(y) the loss derivative of
MSE at zero output (the "subtract copy" convention, Method 7). Figs 3 and 7 compare their
correlation ρ_2nd (Eq. 7) with two predictions: the free-probability formula for a
one-hidden-layer quadratic net (App. F, Fig 3) and the first-order (mean-𝒦) approximation for
deeper nets (App. E, Fig 7). Everything runs in float64: the traces are degree-8 polynomials in X.

Shapes: X is (n, d), y is (n,), 𝒦 is (n, n); the quadratic net has W (k, d) and a (k,).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from featlearn.metrics.jacobians import layer_jacobians
from featlearn.metrics.nfa import correlation
from featlearn.models.mlp import MLP, init_mlp

DEN2_VARIANTS = ("corrected", "printed")
F64 = torch.float64


def _label_weighted(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """YX, (n, d): the loss derivative 𝓛̇ = Y = diag(y) applied to the layer input."""
    return y.to(F64)[:, None] * x.to(F64)


def second_derivative_correlation(x: torch.Tensor, y: torch.Tensor, ptk: torch.Tensor) -> float:
    """ρ_2nd = ρ(XᵀY𝒦YX, XᵀY𝒦²YX) (Eq. 7), cosine convention; 𝒦 (n, n) symmetric."""
    z = _label_weighted(x, y)
    kz = ptk.to(F64) @ z
    return correlation(z.T @ kz, kz.T @ kz)


def sample_quadratic_net(
    d: int, k: int, generator: torch.Generator, batch: tuple[int, ...] = ()
) -> tuple[torch.Tensor, torch.Tensor]:
    """W ~ N(0, 1/k) of shape (*batch, k, d) and a ~ N(0, I_k) of shape (*batch, k) (Prop. 16)."""
    w = torch.randn(*batch, k, d, generator=generator, dtype=F64) / math.sqrt(k)
    a = torch.randn(*batch, k, generator=generator, dtype=F64)
    return w, a


def quadratic_net_ptk(x: torch.Tensor, w: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
    """𝒦 = JJᵀ for f = aᵀ(Wx)², with J = ∂f/∂h = 2 (XWᵀ) diag(a); (*batch, n, n).

    Equals 4 X R Xᵀ with R = Wᵀ diag(a²) W (App. F keeps R and drops the 4).
    """
    jac = 2 * (x.to(F64) @ w.transpose(-1, -2)) * a.unsqueeze(-2)
    return jac @ jac.transpose(-1, -2)


def r_moments(w: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
    """τ(Rᵖ), p = 1…4, of R = Wᵀ diag(a²) W (d, d) with τ = tr/d; shape (4,) (Eq. 16).

    The network half of the free-probability prediction; average it over net seeds.
    """
    aw = a[:, None] * w
    r = aw.T @ aw
    r2 = r @ r
    d = r.shape[0]
    return torch.stack([torch.trace(r), (r * r).sum(), (r2 * r).sum(), (r2 * r2).sum()]) / d


@dataclass(frozen=True)
class DataTraces:
    """Normalized traces of A = (XᵀYX)², B = XᵀX and Ā = A − τ(A)I, B̄ = B − τ(B)I (Eq. 16).

    The data half of the free-probability prediction, exact for each dataset.
    """

    a: float  # τ(A)
    b: float  # τ(B)
    a2: float  # τ(A²)
    abar2: float  # τ(Ā²)
    bbar2: float  # τ(B̄²)
    abar_bbar: float  # τ(ĀB̄)
    abar2_bbar: float  # τ(Ā²B̄)
    abar_bbar2: float  # τ(ĀB̄²)
    abar_bbar_sq: float  # τ((ĀB̄)²)


def _tau_product(m1: torch.Tensor, m2: torch.Tensor) -> float:
    """τ(M₁M₂) = Σ_ij (M₁)_ij (M₂)_ji / dim, without forming the product."""
    return float((m1 * m2.T).sum() / m1.shape[0])


def data_traces(x: torch.Tensor, y: torch.Tensor) -> DataTraces:
    """The traces of A, B, Ā, B̄ that App. F's formulas need, for one dataset."""
    x = x.to(F64)
    m = x.T @ _label_weighted(x, y)
    a_mat, b_mat = m @ m, x.T @ x
    d = a_mat.shape[0]
    eye = torch.eye(d, dtype=F64, device=x.device)
    tau_a, tau_b = float(torch.trace(a_mat)) / d, float(torch.trace(b_mat)) / d
    abar, bbar = a_mat - tau_a * eye, b_mat - tau_b * eye
    p = abar @ bbar
    return DataTraces(
        a=tau_a,
        b=tau_b,
        a2=_tau_product(a_mat, a_mat),
        abar2=_tau_product(abar, abar),
        bbar2=_tau_product(bbar, bbar),
        abar_bbar=float(torch.trace(p)) / d,
        abar2_bbar=_tau_product(abar, p),
        abar_bbar2=_tau_product(p, bbar),
        abar_bbar_sq=_tau_product(p, p),
    )


def free_numerator(t: DataTraces, r: torch.Tensor) -> float:
    """τ(ARARBR) = τ(A)²τ(B)τ(R³) + 2τ(A)τ(R²)τ(R)τ(ĀB̄) + τ(B)τ(R)τ(R²)τ(Ā²) + τ(R)³τ(Ā²B̄) (Eq. 20)."""
    r1, r2, r3, _ = r.tolist()
    return (
        t.a**2 * t.b * r3 + 2 * t.a * r2 * r1 * t.abar_bbar + t.b * r1 * r2 * t.abar2 + r1**3 * t.abar2_bbar
    )


def free_den1(t: DataTraces, r: torch.Tensor) -> float:
    """τ(ARAR) = τ(A²)τ(R)² + τ(A)²τ(R²) − τ(A)²τ(R)² (Eq. 22)."""
    r1, r2, _, _ = r.tolist()
    return t.a2 * r1**2 + t.a**2 * r2 - t.a**2 * r1**2


def free_den2(t: DataTraces, r: torch.Tensor, den2: str = "corrected") -> float:
    """τ(ARBRARBR) (Eq. 28).

    The printed last term τ(Ā)²τ(B²)τ(R²)² is identically 0 since τ(Ā) = 0; expanding
    τ(B)² τ(R²ĀR²Ā) of Eq. 27 with Eq. 13 gives τ(B)²τ(Ā²)τ(R²)² instead ("corrected",
    our reading). ``den2="printed"`` keeps the paper's zero term.
    """
    if den2 not in DEN2_VARIANTS:
        raise ValueError(f"den2 must be one of {DEN2_VARIANTS} (got {den2!r})")
    r1, r2, r3, r4 = r.tolist()
    last = t.b**2 * t.abar2 * r2**2 if den2 == "corrected" else 0.0
    return (
        r1**4 * t.abar_bbar_sq
        + 2 * r1**2 * (r2 - r1**2) * t.abar_bbar**2
        + 2 * r1**2 * r2 * (t.b * t.abar2_bbar + t.a * t.abar_bbar2)
        + 4 * t.a * t.b * r3 * r1 * t.abar_bbar
        + t.a**2 * t.b**2 * r4
        + t.a**2 * t.bbar2 * r2**2
        + last
    )


def free_probability_prediction(
    x: torch.Tensor, y: torch.Tensor, r_moments: torch.Tensor, den2: str = "corrected"
) -> float:
    """ρ_pred = Num / √(Den1 · Den2) (Eqs. 20, 22, 28) for f = aᵀ(Wx)² under freeness of {X, Y}
    and {W, a}; ``r_moments`` is τ(Rᵖ), p = 1…4, averaged over net seeds by the caller."""
    t = data_traces(x, y)
    return free_numerator(t, r_moments) / math.sqrt(free_den1(t, r_moments) * free_den2(t, r_moments, den2))


def first_order_prediction(x: torch.Tensor, y: torch.Tensor, kernel_samples: torch.Tensor) -> float:
    """ρ(XᵀY E[𝒦] YX, XᵀY E[𝒦²] YX) (App. E, Eq. 9 mean term), expectations over the
    (S, n, n) PTK samples; E[𝒦²] is the mean of the squares, not the square of the mean."""
    kernels = kernel_samples.to(F64)
    z = _label_weighted(x, y)
    mean_k = kernels.mean(dim=0)
    mean_k2 = (kernels @ kernels).mean(dim=0)
    return correlation(z.T @ mean_k @ z, z.T @ mean_k2 @ z)


def sample_mlp(d: int, width: int, activation: str, generator: torch.Generator) -> MLP:
    """A 2-hidden-layer, width-k, float64 MLP at init scale 1, PyTorch-default init (Fig 7)."""
    model = MLP(d, [width, width], activation=activation).to(F64)
    return init_mlp(model, [1.0, 1.0], generator, convention="torch_std")


def layer0_ptk(model: MLP, xs: torch.Tensor) -> torch.Tensor:
    """𝒦 = J₀J₀ᵀ of the first hidden layer for a stack of inputs xs (G, n, d): (G, n, n).

    Samples do not interact, so the G datasets go through one batched backward pass.
    """
    g, n, d = xs.shape
    jac = layer_jacobians(model, xs.reshape(g * n, d).to(F64))[0][:, 0, :].reshape(g, n, -1)
    return jac @ jac.transpose(-1, -2)


def draw_layer0_ptks(
    xs: torch.Tensor, width: int, activation: str, count: int, generator: torch.Generator
) -> torch.Tensor:
    """Layer-0 PTKs of ``count`` independent nets (``sample_mlp``) on every input in xs (G, n, d):
    shape (count, G, n, n). Each net is drawn once and reused across the G datasets."""
    return torch.stack(
        [layer0_ptk(sample_mlp(xs.shape[-1], width, activation, generator), xs) for _ in range(count)]
    )


# The conventions every theory store records (experiments.reversing, experiments.first_order; the pipeline adds
# config and provenance).
CONVENTION_ATTRS = {
    "correlation": "cosine",
    "loss_derivative": "Y = diag(y): zero output by subtracting a copy",
}
