"""Neural-collapse metrics of the collapse paper (docs/figures/collapse.md, Quantities).

Features h are rows: H (N, d), integer labels (N,) in 0..K−1. Class means μ_c, global mean μ_G = (1/K) Σ_c μ_c (the
mean of class means, the authors' code; the sample mean for balanced classes). Everything is computed in float64 and
only through traces, never d×d covariances:

    tr Σ_W = (1/N) Σ_i ‖h_i − μ_c(i)‖²,   tr Σ_B = (1/K) Σ_c ‖μ_c − μ_G‖²,   NC1 = tr Σ_W / tr Σ_B       (§3.2)

The ``*_codeconv`` functions reproduce the normalization of the authors' code (``get_class_variance``), which the
published plots use; see each docstring for how it differs from the paper's formula.
"""

from __future__ import annotations

import math

import torch

from featlearn.metrics import nfa


def class_means(h: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """μ_c = (1/n_c) Σ_{i: c(i)=c} h_i, float64, (K, d), K = max label + 1; every class must occur."""
    k = int(labels.max()) + 1
    counts = torch.bincount(labels, minlength=k)
    if (counts == 0).any():
        raise ValueError(f"class_means: classes {(counts == 0).nonzero().flatten().tolist()} have no samples")
    sums = torch.zeros(k, h.shape[1], dtype=torch.float64, device=h.device).index_add_(0, labels, h.to(torch.float64))
    return sums / counts[:, None]


def global_mean(h: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """μ_G = (1/K) Σ_c μ_c, (d,)."""
    return class_means(h, labels).mean(0)


def within_class_trace(h: torch.Tensor, labels: torch.Tensor) -> float:
    """tr Σ_W = (1/N) Σ_i ‖h_i − μ_c(i)‖² (§3.2)."""
    return float(((h.to(torch.float64) - class_means(h, labels)[labels]) ** 2).sum() / len(h))


def between_class_trace(h: torch.Tensor, labels: torch.Tensor) -> float:
    """tr Σ_B = (1/K) Σ_c ‖μ_c − μ_G‖² (§3.2)."""
    mu = class_means(h, labels)
    return float(((mu - mu.mean(0)) ** 2).sum() / len(mu))


def total_trace(h: torch.Tensor, labels: torch.Tensor) -> float:
    """tr Σ_T = tr Σ_W + tr Σ_B (caption of Figs 10–12); the total scatter (1/N) Σ_i ‖h_i − h̄‖² for balanced classes."""
    return within_class_trace(h, labels) + between_class_trace(h, labels)


def nc1(h: torch.Tensor, labels: torch.Tensor) -> float:
    """NC1 = tr Σ_W / tr Σ_B (§3.2, Figs 2–4, 7–9)."""
    return within_class_trace(h, labels) / between_class_trace(h, labels)


def within_over_total(h: torch.Tensor, labels: torch.Tensor) -> float:
    """tr Σ_W / tr Σ_T (Figs 10–12, column 1); with ``between_over_total`` it sums to 1."""
    return within_class_trace(h, labels) / total_trace(h, labels)


def between_over_total(h: torch.Tensor, labels: torch.Tensor) -> float:
    """tr Σ_B / tr Σ_T (Figs 10–12, column 1)."""
    return between_class_trace(h, labels) / total_trace(h, labels)


def _code_total_trace(h: torch.Tensor, labels: torch.Tensor) -> float:
    """The code's tr Σ_T: the scatter about μ_G divided by K·N, (1/(KN)) Σ_i ‖h_i − μ_G‖²."""
    mu = class_means(h, labels)
    return float(((h.to(torch.float64) - mu.mean(0)) ** 2).sum() / (len(mu) * len(h)))


def nc1_codeconv(h: torch.Tensor, labels: torch.Tensor) -> float:
    """NC1 as the authors' code computes it: Σ_W divided by K·N instead of N, so NC1_code = NC1 / K."""
    return nc1(h, labels) / (int(labels.max()) + 1)


def within_over_total_codeconv(h: torch.Tensor, labels: torch.Tensor) -> float:
    """The code's tr Σ_W / tr Σ_T: Σ_i ‖h_i − μ_c(i)‖² / Σ_i ‖h_i − μ_G‖² (both over K·N).

    Equals ``within_over_total`` for balanced classes; for unbalanced ones the code's Σ_T is the scatter about μ_G,
    not Σ_W + Σ_B.
    """
    k = int(labels.max()) + 1
    return within_class_trace(h, labels) / k / _code_total_trace(h, labels)


def between_over_total_codeconv(h: torch.Tensor, labels: torch.Tensor) -> float:
    """The code's tr Σ_B / tr Σ_T: Σ_B over K but Σ_T over K·N, so K × ``between_over_total`` for balanced classes
    (the published y-axis reaching 10¹, the code's convention)."""
    return between_class_trace(h, labels) / _code_total_trace(h, labels)


def simplex_etf(k: int) -> torch.Tensor:
    """Σ_ETF = (1 + 1/(K−1)) I_K − (1/(K−1)) 1 1ᵀ: 1 on the diagonal, −1/(K−1) off it, (K, K) (Def. 3.1)."""
    return (1 + 1 / (k - 1)) * torch.eye(k, dtype=torch.float64) - torch.ones(k, k, dtype=torch.float64) / (k - 1)


def normalized_class_means(h: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Rows (μ_c − μ_G)/‖μ_c − μ_G‖, (K, d): the paper's H̄ with its typo fixed (divided by the column norms)."""
    centered = class_means(h, labels)
    centered = centered - centered.mean(0)
    return centered / centered.norm(dim=1, keepdim=True)


def _etf_gap(h: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    mu = normalized_class_means(h, labels)
    return mu @ mu.T - simplex_etf(len(mu)).to(mu.device)


def nc2(h: torch.Tensor, labels: torch.Tensor) -> float:
    """NC2 = (1/K²) Σ_ab (H̄ᵀH̄ − Σ_ETF)²_ab, the mean squared entry (Figs 3–4; the authors' code).

    The paper writes ‖H̄ᵀH̄ − Σ_ETF‖ without naming the norm; ``nc2_fro`` is the Frobenius norm.
    """
    return float((_etf_gap(h, labels) ** 2).mean())


def nc2_fro(h: torch.Tensor, labels: torch.Tensor) -> float:
    """‖H̄ᵀH̄ − Σ_ETF‖_F = K √NC2."""
    return float(torch.linalg.matrix_norm(_etf_gap(h, labels)))


def collapse_metrics(h: torch.Tensor, labels: torch.Tensor) -> dict[str, float]:
    """Every per-feature-matrix collapse quantity the figures store (docs/figures/collapse.md), by name."""
    return {
        "nc1": nc1(h, labels),
        "nc1_codeconv": nc1_codeconv(h, labels),
        "nc2_meansq": nc2(h, labels),
        "nc2_fro": nc2_fro(h, labels),
        "trSW": within_class_trace(h, labels),
        "trSB": between_class_trace(h, labels),
    }


def centered_normalized(z: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """X̄ = (Z − μ_G) ÷⃝ ‖Z − μ_G‖, rows centered by the global mean and scaled to unit norm, float64, (N, d) (§4.1)."""
    z = z.to(torch.float64) - global_mean(z, labels)
    return z / z.norm(dim=1, keepdim=True)


def collapse_gram(z: torch.Tensor, labels: torch.Tensor, subset: torch.Tensor | None = None) -> torch.Tensor:
    """X̄ X̄ᵀ over ``subset`` (default: all), (n, n): cosines of centered points, 1 within and −1/(K−1) across classes
    at collapse (Figs 1, 5, 6). Centering uses μ_G of the whole set."""
    zbar = centered_normalized(z, labels)
    zbar = zbar if subset is None else zbar[subset]
    return zbar @ zbar.T


def gram_block_means(z: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """K×K means of the full Gram X̄ X̄ᵀ over each class block, (1/(n_a n_b)) s_aᵀ s_b with s_a = Σ_{i∈a} x̄_i."""
    zbar = centered_normalized(z, labels)
    sums = class_means(zbar, labels)
    return sums @ sums.T


def stratified_indices(labels: torch.Tensor, per_class: int) -> torch.Tensor:
    """The first ``per_class`` samples of every class in data order, grouped by class 0..K−1 (Gram subsample)."""
    order = torch.argsort(labels, stable=True)
    ranks = torch.arange(len(labels), device=labels.device) - torch.searchsorted(labels[order], labels[order])
    return order[ranks < per_class]


def svd_stages(w: torch.Tensor, h: torch.Tensor) -> dict[str, torch.Tensor]:
    """The three stages of a bias-free ReLU layer W = U S Vᵀ (m, d) applied to H (N, d), float64 (§5, Fig 2):

    ``input`` Φ(X) = h, ``right`` S Vᵀ h (reduced SVD), ``left`` ReLU(U S Vᵀ h) = ReLU(W h). Because U has orthonormal
    columns, NC1 and NC2 of ``right`` equal those of the pre-activation W h for every W.
    """
    h, w = h.to(torch.float64), w.to(torch.float64)
    _, s, vh = torch.linalg.svd(w, full_matrices=False)
    return {"input": h, "right": (h @ vh.T) * s, "left": torch.relu(h @ w.T)}


def svd_stage_nc1(w: torch.Tensor, h: torch.Tensor, labels: torch.Tensor) -> dict[str, float]:
    """NC1 at the three ``svd_stages``: input (blue), right (green), left (red) of Figs 2, 7–9.

    NC1 is a ratio of traces, unchanged by U's orthonormal columns, so ``right`` is measured on W h itself: no SVD
    (a third of a collapse snapshot's measurement at d = 3072)."""
    h, w = h.to(torch.float64), w.to(torch.float64)
    pre = h @ w.T
    return {"input": nc1(h, labels), "right": nc1(pre, labels), "left": nc1(torch.relu(pre), labels)}


def right_singular_fraction(stage_nc1: dict[str, float]) -> float:
    """φ = [log NC1(h) − log NC1(S Vᵀh)] / [log NC1(h) − log NC1(ReLU(W h))]: the share of the layer's
    log-NC1 reduction made by the right singular structure (our statistic; the paper's claim is φ > 0.5;
    φ > 1: the ReLU raised NC1)."""
    log_in, log_right, log_left = (math.log(stage_nc1[s]) for s in ("input", "right", "left"))
    return (log_in - log_right) / (log_in - log_left)


def nfa_correlation(w: torch.Tensor, agop: torch.Tensor) -> float:
    """ρ(WᵀW, AGOP^{1/2}), Pearson over entries (App. C: each matrix minus its mean entry; Figs 10–12)."""
    return nfa.correlation(nfa.nfm(w.to(torch.float64)), nfa.psd_sqrt(agop), "pearson")


def nfa_correlation_full(w: torch.Tensor, agop: torch.Tensor) -> float:
    """ρ(WᵀW, AGOP), Pearson over entries: Ansatz 3.2 with the plain AGOP."""
    return nfa.correlation(nfa.nfm(w.to(torch.float64)), agop, "pearson")
