"""Adaptive tangent features (LeJeune & Alemohammad; docs/figures/tangent.md).

Kernels: the tangent features J(θ) = ∇_θ f_θ(X) (N, P) of a single-output network, their average Ḡ along
the straight path θ0 → θ̂ (Eq. 2), the initial NTK K0 = J(θ0)J(θ0)ᵀ, the adapted kernel K = ḠḠᵀ (Eq. 7), the
label kernel K_ŷ = r rᵀ (Eq. 9) and their uncentred cosine alignment. Every parameter lives in an nn.Linear, whose
per-sample gradient is the outer product δ hᵀ of the layer's output gradient δ and input h: one batched forward
and backward pass gives all samples, and the path mean Σ_k δ_k h_kᵀ / K is one batched matmul. Kernels are
accumulated in float64.

Penalties: the joint penalty ω1⊕ω2 (Eq. 11), the scalar effective penalty ω̃ (Eq. 12), the per-singular-value
split of Theorem 2 (Eq. 15) and the group approximate low-rank penalty (Eq. 16), each a minimisation over a
scalar z, solved by a dense grid and a vectorised golden-section refinement; closed forms for Fig 2's ω1 = (v−1)²,
ω2 = |v−1| and ω3 = ω1⊕ω2 where they exist (docs/figures/tangent.md, Penalties).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import nn
from torch.func import functional_call

from featlearn.metrics.jacobians import output_gradients

Params = dict[str, torch.Tensor]
Penalty = Callable[[np.ndarray], np.ndarray]
F64 = torch.float64
GRAM_CHUNK = 8192  # columns of J converted to float64 at a time: bounds the extra memory of the float64 sums


# ---------------------------------------------------------------------------------------------------------------
# Tangent features and kernels


def parameters(model: nn.Module) -> Params:
    """θ as detached copies, in ``named_parameters`` order (the order of θ = concat(vec W1, …))."""
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def linear_factors(
    model: nn.Module, x: torch.Tensor, params: Params | None = None
) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """(h, δ) per nn.Linear module: its input h (N, in) and δ = ∂f(x_i)/∂(its output) (N, out), at ``params``
    (default: the model's own), so that ∂f/∂W = δ hᵀ and ∂f/∂b = δ. Samples do not interact, so one
    forward and one backward pass of Σ_i f(x_i) serve every sample; each Linear must run once per forward.
    """
    params = parameters(model) if params is None else params
    linears = {name: m for name, m in model.named_modules() if isinstance(m, nn.Linear)}
    foreign = [k for k in params if k.rpartition(".")[0] not in linears]
    if foreign:
        raise ValueError(f"tangent features: parameters {foreign} are not in an nn.Linear (the only layer supported)")
    seen: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}

    def record(name: str) -> Callable:
        def hook(module: nn.Module, args: tuple[torch.Tensor, ...], out: torch.Tensor) -> None:
            seen[name] = (args[0].detach(), out)

        return hook

    hooks = [m.register_forward_hook(record(name)) for name, m in linears.items()]
    try:
        f = functional_call(model, {k: v.detach().requires_grad_() for k, v in params.items()}, (x,))
    finally:
        for hook in hooks:
            hook.remove()
    if f.shape != (len(x), 1):
        raise ValueError(f"tangent features need a single-output network (C = 1); got output shape {tuple(f.shape)}")
    (deltas,) = output_gradients(f, [seen[name][1] for name in linears])
    return {name: (seen[name][0], delta) for name, delta in zip(linears, deltas)}


def linear_path(theta0: Params, theta1: Params, points: int) -> list[Params]:
    """θ0 + t_k(θ1 − θ0) for t_k = linspace(0, 1, points), endpoints included (the authors' rule)."""
    return [{k: theta0[k] + float(t) * (theta1[k] - theta0[k]) for k in theta0} for t in np.linspace(0, 1, points)]


def average_tangent_feature_blocks(model: nn.Module, x: torch.Tensor, path: Sequence[Params]) -> Params:
    """Ḡ = ∫₀¹ J(θ_t) dt ≈ (1/K) Σ_k J(θ_k), the plain mean over the K path points (Eq. 2; [C]'s rule), per
    parameter tensor (N, *shape): (1/K) Σ_k δ_k h_kᵀ for a weight, (1/K) Σ_k δ_k for a bias."""
    factors = [linear_factors(model, x, point) for point in path]
    blocks = {}
    for name in path[0]:
        module, _, kind = name.rpartition(".")
        delta = torch.stack([f[module][1] for f in factors])
        if kind == "weight":
            h = torch.stack([f[module][0] for f in factors])
            blocks[name] = torch.einsum("kno,kni->noi", delta, h) / len(path)
        else:
            blocks[name] = delta.mean(0)
    return blocks


def tangent_feature_blocks(model: nn.Module, x: torch.Tensor, params: Params | None = None) -> Params:
    """∇_θ f_θ(x_i) per parameter tensor, each (N, *shape), at ``params`` (default: the model's own)."""
    return average_tangent_feature_blocks(model, x, [parameters(model) if params is None else params])


def tangent_features(model: nn.Module, x: torch.Tensor, params: Params | None = None) -> torch.Tensor:
    """J(θ), (N, P): row i is ∇_θ f_θ(x_i), columns in the order of θ's concatenation."""
    blocks = tangent_feature_blocks(model, x, params)
    return torch.cat([b.reshape(len(x), -1) for b in blocks.values()], dim=1)


def tangent_kernel(features: Params | torch.Tensor) -> torch.Tensor:
    """Σ_b J_b J_bᵀ, (N, N) float64, over feature blocks J_b (N, …) or one (N, P) matrix."""
    blocks = list(features.values()) if isinstance(features, dict) else [features]
    n = blocks[0].shape[0]
    kernel = torch.zeros(n, n, dtype=F64, device=blocks[0].device)
    for block in blocks:
        flat = block.reshape(n, -1)
        for start in range(0, flat.shape[1], GRAM_CHUNK):
            chunk = flat[:, start:start + GRAM_CHUNK].to(F64)
            kernel.addmm_(chunk, chunk.T)
    return kernel


def layer_kernels(features: Params) -> dict[str, torch.Tensor]:
    """Per-layer kernel blocks K^(ℓ) = Σ_{b ∈ layer ℓ} J_b J_bᵀ, keyed by the module name
    ('0.weight' and '0.bias' both belong to layer '0'); they sum to ``tangent_kernel(features)``."""
    layers: dict[str, Params] = {}
    for name, block in features.items():
        layers.setdefault(name.rpartition(".")[0], {})[name] = block
    return {layer: tangent_kernel(blocks) for layer, blocks in layers.items()}


def initial_ntk(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """K0 = J(θ0)J(θ0)ᵀ, (N, N): the adapted kernel at M = I_P, the empirical NTK (paper Eq. 7 with M = I)."""
    return tangent_kernel(tangent_feature_blocks(model, x))


def adapted_kernel(
    model: nn.Module, x: torch.Tensor, theta0: Params, theta1: Params, points: int = 50
) -> torch.Tensor:
    """K = ḠḠᵀ, (N, N), with Ḡ averaged over ``points`` points of the path θ0 → θ1 (Eq. 7)."""
    return tangent_kernel(average_tangent_feature_blocks(model, x, linear_path(theta0, theta1, points)))


def label_kernel(f_final: torch.Tensor, f_init: torch.Tensor) -> torch.Tensor:
    """K_ŷ = r rᵀ with r = f_θ̂(X) − f_θ0(X), (N, N) float64 (Eq. 9)."""
    r = (f_final.to(F64) - f_init.to(F64)).reshape(-1)
    return torch.outer(r, r)


def kernel_alignment(a: torch.Tensor, b: torch.Tensor, centered: bool = False) -> float:
    """cos(A, B) = ⟨A, B⟩_F / (‖A‖_F ‖B‖_F) of two (N, N) Gram matrices, uncentred as in the paper (§1.7);
    ``centered`` applies H = I − 11ᵀ/N on both sides first."""
    a, b = a.to(F64), b.to(F64)
    if centered:
        a = a - a.mean(0, keepdim=True) - a.mean(1, keepdim=True) + a.mean()
        b = b - b.mean(0, keepdim=True) - b.mean(1, keepdim=True) + b.mean()
    return float((a * b).sum() / (torch.linalg.norm(a) * torch.linalg.norm(b)))


def linearized_change(gbar: Params, theta0: Params, theta1: Params) -> torch.Tensor:
    """Ḡ(θ1 − θ0), (N,) float64: the right-hand side of Eq. 2."""
    n = len(next(iter(gbar.values())))
    out = torch.zeros(n, dtype=F64, device=next(iter(gbar.values())).device)
    for k, block in gbar.items():
        flat, step = block.reshape(n, -1), (theta1[k] - theta0[k]).reshape(-1)
        for start in range(0, len(step), GRAM_CHUNK):
            out += flat[:, start:start + GRAM_CHUNK].to(F64) @ step[start:start + GRAM_CHUNK].to(F64)
    return out


def ftc_relative_error(
    gbar: Params, theta0: Params, theta1: Params, f_final: torch.Tensor, f_init: torch.Tensor
) -> float:
    """‖Ḡ(θ1 − θ0) − (f_θ1(X) − f_θ0(X))‖ / ‖f_θ1(X) − f_θ0(X)‖: the discretisation error of Eq. 2."""
    change = (f_final.to(F64) - f_init.to(F64)).reshape(-1)
    return float(torch.linalg.norm(linearized_change(gbar, theta0, theta1) - change) / torch.linalg.norm(change))


def task_difficulty(k0: torch.Tensor, r: torch.Tensor) -> float:
    """‖β̂‖² = rᵀK0⁻¹r: the squared norm of the minimum-norm tangent coefficients fitting r (Eq. 5 with
    Ω̃ = ‖·‖², Theorem 1); a float64 solve, K0 (N, N) being positive definite when P ≫ N."""
    r = r.to(F64).reshape(-1)
    return float(r @ torch.linalg.solve(k0.to(F64), r))


def kernel_decomposition(k: torch.Tensor, k0: torch.Tensor, ky: torch.Tensor) -> tuple[float, float, float]:
    """(w0, w1, R²) of the least-squares fit K ≈ w0 K0 + w1 K_ŷ over all entries ([C]'s decomposition, §1.8)."""
    design = torch.stack([k0.reshape(-1), ky.reshape(-1)], dim=1).to(F64)
    target = k.reshape(-1, 1).to(F64)
    w = torch.linalg.lstsq(design, target).solution
    residual = target - design @ w
    r2 = 1 - float((residual ** 2).sum() / ((target - target.mean()) ** 2).sum())
    return float(w[0]), float(w[1]), r2


# ---------------------------------------------------------------------------------------------------------------
# Penalties (Sec. 3, Fig 2)

GOLDEN = (math.sqrt(5) - 1) / 2
Z_GRID = 1 + np.concatenate([[0.0], np.logspace(-8, 6, 3000)])  # z ≥ 1 for Eq. 12; minimisers reach ~ v^(2/3)
U_GRID = np.linspace(0.0, 1.0, 1001)  # z = s^u spans [1, s] for Eq. 11


def omega_quadratic(s: np.ndarray) -> np.ndarray:
    """ω1(s) = (s − 1)²."""
    return (np.asarray(s, dtype=float) - 1) ** 2


def omega_abs(s: np.ndarray) -> np.ndarray:
    """ω2(s) = |s − 1|."""
    return np.abs(np.asarray(s, dtype=float) - 1)


def _golden_min(objective: Penalty, lo: np.ndarray, hi: np.ndarray, iters: int = 80) -> np.ndarray:
    """Argmin of a batch of 1-D objectives, each unimodal on its bracket [lo, hi] (shapes (n,))."""
    a, b = lo.astype(float), hi.astype(float)
    for _ in range(iters):
        c, d = b - GOLDEN * (b - a), a + GOLDEN * (b - a)
        left = objective(c) <= objective(d)
        a, b = np.where(left, a, c), np.where(left, d, b)
    return (a + b) / 2


def _grid_bracket(values: np.ndarray, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[grid[i−1], grid[i+1]] around each row's grid argmin i; ``values`` (n, G), ``grid`` (G,) or (n, G)."""
    i = values.argmin(axis=1)
    grid = np.broadcast_to(grid, values.shape)
    rows = np.arange(len(values))
    return grid[rows, np.maximum(i - 1, 0)], grid[rows, np.minimum(i + 1, values.shape[1] - 1)]


def _joint(omega1: Penalty, omega2: Penalty, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """((ω1⊕ω2)(s), z*) of Eq. 11 for s ≥ 1, (n,) each; searched as z = s^u, u ∈ [0, 1]."""
    log_s = np.log(s)[:, None]

    def objective(u: np.ndarray) -> np.ndarray:
        return omega1(np.exp(u * log_s)) + omega2(np.exp((1 - u) * log_s))

    lo, hi = _grid_bracket(objective(U_GRID[None, :]), U_GRID)
    u = _golden_min(lambda t: objective(t[:, None])[:, 0], lo, hi)
    return objective(u[:, None])[:, 0], np.exp(u * log_s[:, 0])


def joint_penalty(omega1: Penalty, omega2: Penalty | None, s: np.ndarray) -> np.ndarray:
    """(ω1⊕ω2)(s) = min_{1≤z≤s} ω1(z) + ω2(s/z) for s ≥ 1 (Eq. 11); ω1, ω2 act elementwise on arrays.

    ``omega2=None`` is χ_{1} (a fixed transform, M^(2) = I), for which ω1⊕χ_{1} = ω1 (Theorem 2, last layer).
    """
    s = np.atleast_1d(np.asarray(s, dtype=float))
    if omega2 is None:
        return omega1(s)
    if np.any(s < 1):
        raise ValueError(f"joint_penalty is defined for s ≥ 1 (got min s = {s.min():g})")
    return _joint(omega1, omega2, s)[0]


def _effective(omega: Penalty, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ω̃(v), z*) of Eq. 12; ω is tabulated once on Z_GRID, so a numerical ω (e.g. ω1⊕ω2) stays cheap."""
    v2 = np.atleast_1d(np.asarray(v, dtype=float))[:, None] ** 2
    on_grid = omega(Z_GRID)[None, :] + v2 / Z_GRID[None, :] ** 2
    lo, hi = _grid_bracket(on_grid, Z_GRID)

    def objective(z: np.ndarray) -> np.ndarray:
        return omega(z) + v2[:, 0] / z ** 2

    z = _golden_min(objective, lo, hi)
    return objective(z), z


def effective_penalty(omega: Penalty, v: np.ndarray) -> np.ndarray:
    """ω̃(v) = min_{z≥1} ω(z) + v²/z² (Eq. 12), vectorised over v; even in v."""
    return _effective(omega, v)[0]


def effective_scale(omega: Penalty, v: np.ndarray) -> np.ndarray:
    """z*(v) = argmin_{z≥1} ω(z) + v²/z²: Theorem 1's singular value s of M̂ at v = ‖β̂‖."""
    return _effective(omega, v)[1]


def effective_quadratic_closed(v: np.ndarray) -> np.ndarray:
    """ω̃1 for ω1 = (z−1)²: (z*−1)² + v²/z*² with z* the root ≥ 1 of z⁴ − z³ − v² = 0 (docs/figures/tangent.md)."""
    v2 = np.asarray(v, dtype=float) ** 2
    z = 1 + np.sqrt(v2)  # Newton from the right of the root: the quartic is increasing and convex on z ≥ 1
    for _ in range(100):
        z = z - (z ** 4 - z ** 3 - v2) / (4 * z ** 3 - 3 * z ** 2)
    return (z - 1) ** 2 + v2 / z ** 2


def effective_abs_closed(v: np.ndarray) -> np.ndarray:
    """ω̃2 for ω2 = |z−1|: v² for v² ≤ 1/2 (z* = 1), else (3/2)(2v²)^(1/3) − 1 (docs/figures/tangent.md, Penalties)."""
    v2 = np.asarray(v, dtype=float) ** 2
    return np.where(v2 <= 0.5, v2, 1.5 * np.cbrt(2 * v2) - 1)


def joint_quadratic_abs_closed(s: np.ndarray) -> np.ndarray:
    """ω3 = ω1⊕ω2 (Eq. 11): (s−1)² for s ≤ (1+√3)/2, else (z−1)² + s/z − 1 with z the root in (1, s)
    of 2z³ − 2z² − s = 0 (docs/figures/tangent.md, Penalties)."""
    s = np.asarray(s, dtype=float)
    z = np.maximum(s, 1.0)  # Newton from the right: the cubic is increasing and convex on z ≥ 1
    for _ in range(100):
        z = z - (2 * z ** 3 - 2 * z ** 2 - s) / (6 * z ** 2 - 4 * z)
    return np.where(s <= (1 + math.sqrt(3)) / 2, (s - 1) ** 2, (z - 1) ** 2 + s / z - 1)


def singular_value_split(omega1: Penalty, omega2: Penalty | None, d: np.ndarray) -> tuple[np.ndarray, ...]:
    """(s1, s2, σ) of Eq. 15 for singular values d of B̂_ℓ: s = s1 s2 = argmin_{s≥1} (ω1⊕ω2)(s) + d²/s²,
    s1 = argmin_{1≤z≤s} ω1(z) + ω2(s/z), s2 = s/s1, σ = d/s; so s1 σ s2 = d."""
    d = np.atleast_1d(np.asarray(d, dtype=float))
    s = effective_scale(lambda z: joint_penalty(omega1, omega2, z), d)
    s1 = s if omega2 is None else _joint(omega1, omega2, s)[1]
    return s1, s / s1, d / s


def spectral_effective_penalty(b: np.ndarray, omega: Penalty) -> float:
    """Ω̃_ω(B) = Σ_j ω̃(σ_j(B)) (Eq. 12); a vector B (the last layer with C = 1) has the one value ‖B‖."""
    b = np.asarray(b, dtype=float)
    sigma = np.linalg.svd(b.reshape(len(b), -1), compute_uv=False)
    return float(effective_penalty(omega, sigma).sum())


def group_low_rank_penalty(blocks: Sequence[np.ndarray], omegas: Sequence[tuple[Penalty, Penalty | None]]) -> float:
    """R(B_1, …, B_L) = Σ_ℓ Ω̃_{ω_ℓ^(1)⊕ω_ℓ^(2)}(B_ℓ) (Eq. 16): the group approximate low-rank penalty.

    ``omegas[ℓ] = (ω_ℓ^(1), ω_ℓ^(2))``; use (ω, None) for the last layer, whose M_L^(2) is fixed (χ_{1}).
    """
    if len(blocks) != len(omegas):
        raise ValueError(f"group_low_rank_penalty: {len(blocks)} blocks B_ℓ but {len(omegas)} penalty pairs")
    return sum(spectral_effective_penalty(b, lambda z, w=w: joint_penalty(w[0], w[1], z))
               for b, w in zip(blocks, omegas))
