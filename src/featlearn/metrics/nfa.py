"""Neural feature ansatz quantities (docs/figures/alignment.md, Quantities).

Shapes: W is k_{ℓ+1}×k_ℓ (one hidden weight matrix), J is (n, c, k_{ℓ+1}) from
``layer_jacobians``, K is k_{ℓ+1}×k_{ℓ+1}. K carries the 1/n of Eq. 3, so that Ḡ = WᵀKW is the
AGOP with respect to the layer input; every ratio below uses one K convention top and bottom.
All algebra runs in float64 (the correlations of tiny centered terms need it). The measurements' K sums over
samples live in ``model_nfa.covariances``, which imports this module.
"""

from __future__ import annotations

import numpy as np
import torch

from featlearn.metrics.jacobians import layer_jacobians
from featlearn.models.mlp import MLP

CONVENTIONS = ("cosine", "pearson")
# What each NFC quantity is, as stores and the library API (``model_nfa``) label it.
LONG_NAMES = {
    "uc_nfc": "uncentered NFC ρ(WᵀW, WᵀKW)",
    "c_nfc": "centered NFC ρ(W̄ᵀW̄, W̄ᵀKW̄)",
    "dc_nfc": "double-centered NFC ρ(W̄ᵀW̄, W̄ᵀK̄W̄)",
    "ptkc_nfc": "PTK-centered NFC ρ(W₀ᵀW₀, W₀ᵀK̄W₀)",
    "ratio_c_uc": "R_C = ⟨W̄ᵀW̄, W̄ᵀKW̄⟩ / ⟨WᵀW, WᵀKW⟩",
    "ratio_dc_c": "R_DC = ⟨W̄ᵀW̄, W̄ᵀK̄W̄⟩ / ⟨W̄ᵀW̄, W̄ᵀKW̄⟩",
    "dw_rel": "relative weight change ‖W − W₀‖_F / ‖W‖_F",
}


def nfm(w: torch.Tensor) -> torch.Tensor:
    """Neural feature matrix F = WᵀW, (k_ℓ, k_ℓ)."""
    return w.T @ w


def ptk_feature_covariance(jac: torch.Tensor) -> torch.Tensor:
    """K = (1/n) Σ_{α,j} J[α,j,:] J[α,j,:]ᵀ, (k_{ℓ+1}, k_{ℓ+1}) (Eq. 3)."""
    flat = jac.reshape(-1, jac.shape[-1]).to(torch.float64)
    return flat.T @ flat / jac.shape[0]


def agop(w: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """AGOP with respect to the layer input, Ḡ = WᵀKW, (k_ℓ, k_ℓ)."""
    w = w.to(k.dtype)
    return w.T @ k @ w


def agop_diagonal(w: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """diag Ḡ = diag(WᵀKW) = Σ_j (KW)_j ⊙ W_j, (k_ℓ,), without the k_ℓ × k_ℓ matrix: at CelebA's 12,288 inputs each
    such matrix is 1.2 GB, and Fig 16 needs the diagonals of twelve (F, Ḡ, ten WᵀQW)."""
    w = w.to(k.dtype)
    return ((k @ w) * w).sum(0)


def psd_sqrt(m: torch.Tensor) -> torch.Tensor:
    """M^{1/2} = V Λ₊^{1/2} Vᵀ of a symmetric PSD matrix by eigh in float64, negative eigenvalues clipped, (d, d):
    the AGOP^{1/2} of the collapse paper's NFA and Deep RFM's M^{1/2} (the authors' ``matrix_sqrt``)."""
    lam, v = torch.linalg.eigh(m.to(torch.float64))
    return (v * lam.clamp_min(0).sqrt()) @ v.T


def ptk_matrix(jac: torch.Tensor) -> torch.Tensor:
    """PTK 𝒦 = J Jᵀ over samples and outputs, (n·c, n·c)."""
    flat = jac.reshape(-1, jac.shape[-1]).to(torch.float64)
    return flat @ flat.T


def correlation(a: torch.Tensor, b: torch.Tensor, convention: str = "cosine") -> float:
    """ρ(A, B) = ⟨A, B⟩_F / (‖A‖_F ‖B‖_F) (paper, 'cosine'), or the same after removing each
    matrix's mean entry ('pearson', the authors' Fig 2 code). NaN when either side is zero."""
    a, b = a.to(torch.float64).flatten(), b.to(torch.float64).flatten()
    if convention == "pearson":
        a, b = a - a.mean(), b - b.mean()
    elif convention != "cosine":
        raise ValueError(f"unknown correlation convention {convention!r}; allowed: {CONVENTIONS}")
    denom = a.norm() * b.norm()
    return float(a @ b / denom) if denom > 0 else float("nan")


def nfc(w: torch.Tensor, k: torch.Tensor, convention: str = "cosine") -> float:
    """Uncentered NFC, ρ(WᵀW, WᵀKW)."""
    w = w.to(torch.float64)
    return correlation(nfm(w), agop(w, k), convention)


def centered_nfc(w: torch.Tensor, w0: torch.Tensor, k: torch.Tensor, convention: str = "cosine") -> float:
    """C-NFC, ρ(W̄ᵀW̄, W̄ᵀKW̄) with W̄ = W − W₀ and K the current PTK covariance."""
    return nfc(w.to(torch.float64) - w0.to(torch.float64), k, convention)


def double_centered_nfc(
    w: torch.Tensor, w0: torch.Tensor, k_bar: torch.Tensor, convention: str = "cosine"
) -> float:
    """DC-NFC, ρ(W̄ᵀW̄, W̄ᵀK̄W̄) with K̄ built from J_t − J_0."""
    return nfc(w.to(torch.float64) - w0.to(torch.float64), k_bar, convention)


def ptk_centered_nfc(w0: torch.Tensor, k_bar: torch.Tensor, convention: str = "cosine") -> float:
    """PTK-centered NFC, ρ(W₀ᵀW₀, W₀ᵀK̄W₀) (Fig 6)."""
    return nfc(w0, k_bar, convention)


def nfc_pairs(
    w: torch.Tensor, w0: torch.Tensor, k: torch.Tensor, k_bar: torch.Tensor | None = None
) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """The (NFM side, AGOP side) matrices of every NFC variant, each built once, so that
    several correlation conventions (and the ratios) reuse them: uc, c, and with K̄ dc and ptkc."""
    w, w0 = w.to(torch.float64), w0.to(torch.float64)
    wb = w - w0
    f_bar = nfm(wb)
    pairs = {"uc_nfc": (nfm(w), agop(w, k)), "c_nfc": (f_bar, agop(wb, k))}
    if k_bar is not None:
        pairs["dc_nfc"] = (f_bar, agop(wb, k_bar))
        pairs["ptkc_nfc"] = (nfm(w0), agop(w0, k_bar))
    return pairs


def nfc_columns(
    ws: list[torch.Tensor], w0s: list[torch.Tensor], ks: list[torch.Tensor], at_init: bool
) -> dict[str, np.ndarray]:
    """UC and C-NFC (both conventions), R_C and ‖ΔW‖/‖W‖ of each weight matrix against its K, one row per matrix: the
    conv and attention families' quantities (``metrics.measure``). C-NFC is NaN at init, where W − W₀ = 0."""
    rows, nan = [], [float("nan")] * len(CONVENTIONS)
    for w, w0, k in zip(ws, w0s, ks):
        pairs = nfc_pairs(w, w0, k)
        rows.append({
            "uc_nfc": [correlation(*pairs["uc_nfc"], c) for c in CONVENTIONS],
            "c_nfc": nan if at_init else [correlation(*pairs["c_nfc"], c) for c in CONVENTIONS],
            "ratio_c_uc": ratio_c_uc(pairs),
            "dw_rel": relative_weight_change(w.double(), w0.double()),
        })
    return {name: np.array([row[name] for row in rows]) for name in rows[0]}


def _inner(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a * b).sum())


def ratio_c_uc(pairs: dict[str, tuple[torch.Tensor, torch.Tensor]]) -> float:
    """R_C = ⟨W̄ᵀW̄, W̄ᵀKW̄⟩_F / ⟨WᵀW, WᵀKW⟩_F (Figs 4, 17), from ``nfc_pairs``; NaN for a layer whose units all
    died (W or K zero), as ``measure_nfa`` records it."""
    denom = _inner(*pairs["uc_nfc"])
    return _inner(*pairs["c_nfc"]) / denom if denom != 0 else float("nan")


def ratio_dc_c(pairs: dict[str, tuple[torch.Tensor, torch.Tensor]]) -> float:
    """R_DC = ⟨W̄ᵀW̄, W̄ᵀK̄W̄⟩_F / ⟨W̄ᵀW̄, W̄ᵀKW̄⟩_F (Fig 5), from ``nfc_pairs`` with K̄; NaN at init
    where both vanish."""
    denom = _inner(*pairs["c_nfc"])
    return _inner(*pairs["dc_nfc"]) / denom if denom != 0 else float("nan")


def relative_weight_change(w: torch.Tensor, w0: torch.Tensor) -> float:
    """‖W − W₀‖_F / ‖W‖_F (Figs 14, 15)."""
    return float((w - w0).norm() / w.norm())


def eigen_dispersion(k: torch.Tensor) -> float:
    """std(eig K) / mean(eig K): how far K is from a multiple of the identity (Fig 1: 5.9)."""
    eig = torch.linalg.eigvalsh(k.to(torch.float64))
    return float(eig.std(correction=0) / eig.mean())


def hidden_layer_nfcs(model: MLP, x: torch.Tensor) -> list[float]:
    """UC-NFC of every hidden layer at the current weights over inputs x (adaptive SLO's per-step measurement)."""
    jacs = layer_jacobians(model, x)
    return [nfc(layer.weight.detach(), ptk_feature_covariance(j.detach())) for layer, j in zip(model.hidden, jacs)]
