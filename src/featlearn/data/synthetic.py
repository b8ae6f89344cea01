"""Synthetic datasets of the alignment paper (docs/figures/alignment.md, Datasets).

Every generator takes an explicit ``torch.Generator`` so that a dataset is a pure function
of its parameters: the data rule keys its output file by them.
"""

from __future__ import annotations

import math

import torch


def spectral_covariance(d: int, alpha: float | None, generator: torch.Generator) -> torch.Tensor:
    """Σ = O diag(λ) Oᵀ with O Haar-orthogonal and λ_k = 1/(1 + k^α), k = 1…d.

    ``alpha=None`` is the identity (Figs 1, 4, 8); α = 0 gives Σ = I/2, the projector limit
    of Fig 7.
    """
    if alpha is None:
        return torch.eye(d, dtype=torch.float64)
    lam = 1.0 / (1.0 + torch.arange(1, d + 1, dtype=torch.float64) ** alpha)
    o = haar_orthogonal(d, generator)
    return (o * lam) @ o.T


def haar_orthogonal(d: int, generator: torch.Generator, device: torch.device | str | None = None) -> torch.Tensor:
    """A Haar-distributed d×d orthogonal matrix (QR of a Gaussian, signs fixed by R's diagonal), on ``device``
    (default: the generator's). The Gaussian comes from ``generator`` wherever it lives and only the QR runs on
    ``device``: a seed gives the same matrix on every device (to rounding), and a large QR runs where the job computes.
    """
    gauss = torch.randn(d, d, generator=generator, dtype=torch.float64, device=generator.device)
    q, r = torch.linalg.qr(gauss.to(device or generator.device))
    return q * torch.sign(torch.diagonal(r))


def gaussian_inputs(n: int, sigma: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """n rows x ~ N(0, Σ), float64, shape (n, d)."""
    root = torch.linalg.cholesky(sigma + 1e-12 * torch.eye(len(sigma), dtype=torch.float64))
    return torch.randn(n, len(sigma), generator=generator, dtype=torch.float64) @ root.T


def chain_adjacency(r: int, d: int) -> torch.Tensor:
    """A with ∇y(x) = A x for the chain monomial y = Σ_{i<r} x_i x_{(i+1) mod r}."""
    a = torch.zeros(d, d, dtype=torch.float64)
    for i in range(r):
        j = (i + 1) % r
        a[i, j] += 1.0
        a[j, i] += 1.0
    return a


def chain_monomial(x: torch.Tensor, r: int) -> torch.Tensor:
    """y = Σ_{i=0}^{r−1} x_i x_{(i+1) mod r} (0-indexed cycle), shape (n,)."""
    return (x[:, :r] * torch.roll(x[:, :r], shifts=-1, dims=1)).sum(dim=1)


def chain_monomial_egop(r: int, sigma: torch.Tensor) -> torch.Tensor:
    """Analytic EGOP E[∇y ∇yᵀ] = A Σ A of the chain monomial, divided by Var(y).

    Dividing by the population variance matches labels scaled to unit standard deviation.
    For y = xᵀSx with S = A/2 and x ~ N(0, Σ), Var(y) = 2 tr((SΣ)²).
    """
    a = chain_adjacency(r, len(sigma))
    s_sigma = 0.5 * a @ sigma
    return a @ sigma @ a / (2 * torch.trace(s_sigma @ s_sigma))


def high_rank_quadratic(x: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """y = Σ_i (Qx)_i² (Fig 7's high-rank task), shape (n,)."""
    return ((x @ q.T) ** 2).sum(dim=1)


def regression_task(
    task: str,
    n: int,
    n_test: int,
    d: int,
    alpha: float | None,
    seed: int,
    r: int = 5,
) -> dict[str, torch.Tensor]:
    """Train and test sets for a polynomial task on spectral Gaussian inputs.

    Labels are divided by the training labels' standard deviation ("in all polynomial tasks
    we scaled the label vector to have standard deviation 1"); the mean is kept.
    The test labels get the same factor. ``task`` is ``chain_monomial`` or ``high_rank_quadratic``.
    """
    g = torch.Generator().manual_seed(seed)
    sigma = spectral_covariance(d, alpha, g)
    x = gaussian_inputs(n + n_test, sigma, g)
    out: dict[str, torch.Tensor] = {"sigma": sigma}
    if task == "chain_monomial":
        y = chain_monomial(x, r)
        out["egop"] = chain_monomial_egop(r, sigma)
    elif task == "high_rank_quadratic":
        y = high_rank_quadratic(x, torch.randn(d, d, generator=g, dtype=torch.float64))
    else:
        raise ValueError(f"unknown task {task!r}; allowed: chain_monomial, high_rank_quadratic")
    scale = y[:n].std()
    out.update(x=x[:n], y=y[:n] / scale, x_test=x[n:], y_test=y[n:] / scale)
    return out


def alignment_reversing(
    n: int,
    d: int,
    gamma: float,
    seed: int,
    eps1: float = 0.5,
    eps2: float = 1e-2,
    x_scale: float | None = None,
) -> dict[str, torch.Tensor]:
    """The alignment-reversing ("Balance") dataset of App. G, float64 (docs/figures/alignment.md).

    X⁽¹⁾ (round(γn) rows, label 1) ~ N(0, 𝟙𝟙ᵀ + ε₁I); X⁽²⁾ (label 0) = V₂ S₁⁻¹ U₁ᵀ so that
    X⁽²⁾ᵀX⁽²⁾ = (X⁽¹⁾ᵀX⁽¹⁾)⁻². As printed this is ill-posed for n = d (X⁽¹⁾ᵀX⁽¹⁾ is rank
    deficient and V₂'s shape does not match), so we invert only the nonzero eigenvalues
    (relative tolerance 1e−10) and keep the top m = min(n₂, rank) directions. ``x_scale``
    multiplies X⁽¹⁾ (default 1/√d: the construction needs eig(X⁽¹⁾ᵀX⁽¹⁾) < 1 to reverse alignment).
    """
    g = torch.Generator().manual_seed(seed)
    x_scale = 1.0 / math.sqrt(d) if x_scale is None else x_scale

    def draw(rows: int) -> torch.Tensor:
        common = torch.randn(rows, 1, generator=g, dtype=torch.float64)
        return common + math.sqrt(eps1) * torch.randn(rows, d, generator=g, dtype=torch.float64)

    n1 = round(gamma * n)
    n2 = n - n1
    x1 = draw(n1) * x_scale
    parts, labels = [x1], [torch.ones(n1, dtype=torch.float64)]
    if n2 > 0:
        s1, u1 = torch.linalg.eigh(x1.T @ x1)
        s1, u1 = s1.flip(0), u1.flip(1)
        rank = int((s1 > 1e-10 * s1[0]).sum()) if n1 > 0 else 0
        v2 = torch.linalg.svd(draw(n2), full_matrices=False)[0]
        m = min(n2, rank)
        parts.append(v2[:, :m] / s1[:m] @ u1[:, :m].T if m > 0 else torch.zeros(n2, d, dtype=torch.float64))
        labels.append(torch.zeros(n2, dtype=torch.float64))
    x = torch.cat(parts) + eps2 * torch.randn(n, d, generator=g, dtype=torch.float64)
    y = torch.cat(labels) + 1e-5
    return {"x": x, "y": y}


def make_dataset(params: dict) -> dict[str, torch.Tensor]:
    """The dataset a config entry describes (``featlearn.config.datasets`` gives the entries).

    An ``alignment_reversing`` entry gives a count of ``data_seeds``: one file holds the draws of seeds 0, 1, … of one
    γ, stacked as x (data_seeds, n, d) and y (data_seeds, n). A file per (γ, seed) made the quick build 100 jobs,
    each paying 2 s of imports for 0.1 s of work."""
    p = dict(params)
    task = p.pop("task")
    if task == "alignment_reversing":
        seeds = p.pop("data_seeds")
        draws = [alignment_reversing(seed=s, **p) for s in range(seeds)]
        return {key: torch.stack([draw[key] for draw in draws]) for key in ("x", "y")}
    return regression_task(task, **p)
