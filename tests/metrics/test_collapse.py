import math

import pytest
import torch

from featlearn.data.synthetic import haar_orthogonal
from featlearn.metrics import collapse


def _features(k=4, n=6, d=7, seed=0, spread=1.0):
    """Class means at random positions plus within-class noise, labels 0..k−1 grouped, float64."""
    g = torch.Generator().manual_seed(seed)
    labels = torch.arange(k).repeat_interleave(n)
    means = 3 * torch.randn(k, d, dtype=torch.float64, generator=g)
    return means[labels] + spread * torch.randn(k * n, d, dtype=torch.float64, generator=g), labels, g


def _etf_means(k, d, g):
    """K centered unit vectors with pairwise inner products −1/(K−1), rotated into R^d."""
    e = torch.eye(k, dtype=torch.float64) - 1 / k
    e = e / e.norm(dim=1, keepdim=True)
    return 5 * e @ haar_orthogonal(d, g)[:k]


def test_nc1_by_hand_in_one_dimension():
    h = torch.tensor([[0.0], [2.0], [10.0], [14.0]])
    labels = torch.tensor([0, 0, 1, 1])
    # μ = (1, 12), μ_G = 6.5; tr Σ_W = (1 + 1 + 4 + 4)/4; tr Σ_B = (5.5² + 5.5²)/2
    assert collapse.within_class_trace(h, labels) == pytest.approx(2.5)
    assert collapse.between_class_trace(h, labels) == pytest.approx(30.25)
    assert collapse.nc1(h, labels) == pytest.approx(2.5 / 30.25)
    assert collapse.nc1_codeconv(h, labels) == pytest.approx(2.5 / 30.25 / 2)


def test_nc1_is_zero_for_collapsed_features_and_positive_otherwise():
    h, labels, _ = _features()
    collapsed = collapse.class_means(h, labels)[labels]
    assert collapse.within_class_trace(collapsed, labels) == pytest.approx(0.0, abs=1e-24)
    assert collapse.nc1(collapsed, labels) == pytest.approx(0.0, abs=1e-24)
    assert collapse.nc1(h, labels) > 0.01


def test_nc1_and_nc2_are_invariant_to_orthogonal_maps_and_translations_but_not_to_general_linear_maps():
    h, labels, g = _features()
    q = haar_orthogonal(7, g)
    shift = torch.randn(7, dtype=torch.float64, generator=g)
    for name in ("nc1", "nc2"):
        f = getattr(collapse, name)
        assert f(h @ q.T + shift, labels) == pytest.approx(f(h, labels), rel=1e-10)
        assert f(h @ torch.diag(torch.linspace(0.1, 3, 7, dtype=torch.float64)), labels) != pytest.approx(
            f(h, labels), rel=1e-2)


def test_within_and_between_over_total_sum_to_one_and_total_is_the_total_variance_when_balanced():
    h, labels, _ = _features()
    assert collapse.within_over_total(h, labels) + collapse.between_over_total(h, labels) == pytest.approx(1.0)
    # law of total variance for balanced classes: tr Σ_W + tr Σ_B = (1/N) Σ ‖h_i − h̄‖²
    assert collapse.total_trace(h, labels) == pytest.approx(float(((h - h.mean(0)) ** 2).sum() / len(h)))
    unbalanced = torch.cat([labels[:-3], torch.zeros(3, dtype=torch.long)])
    assert collapse.within_over_total(h, unbalanced) + collapse.between_over_total(h, unbalanced) == pytest.approx(1.0)


def test_code_convention_scales_as_the_spec_says():
    h, labels, _ = _features()
    k = 4
    assert collapse.nc1_codeconv(h, labels) == pytest.approx(collapse.nc1(h, labels) / k)
    assert collapse.within_over_total_codeconv(h, labels) == pytest.approx(collapse.within_over_total(h, labels))
    assert collapse.between_over_total_codeconv(h, labels) == pytest.approx(k * collapse.between_over_total(h, labels))
    unbalanced = torch.cat([labels[:-3], torch.zeros(3, dtype=torch.long)])
    assert collapse.within_over_total_codeconv(h, unbalanced) != pytest.approx(
        collapse.within_over_total(h, unbalanced), rel=1e-3)


def test_nc2_is_zero_for_a_simplex_etf_and_matches_a_hand_example():
    g = torch.Generator().manual_seed(1)
    k = 5
    labels = torch.arange(k).repeat_interleave(3)
    h = _etf_means(k, 9, g)[labels] + 0.3 * torch.randn(15, 9, dtype=torch.float64, generator=g)
    h = h - collapse.class_means(h, labels)[labels] + _etf_means(k, 9, g)[labels]  # noisy, means exactly ETF
    assert collapse.nc2(h, labels) == pytest.approx(0.0, abs=1e-24)
    assert collapse.nc2_fro(h, labels) == pytest.approx(0.0, abs=1e-12)
    torch.testing.assert_close(collapse.simplex_etf(k).diagonal(), torch.ones(k, dtype=torch.float64))
    assert float(collapse.simplex_etf(k)[0, 1]) == pytest.approx(-1 / (k - 1))
    # class means 0, 1, 3 on a line: centered (−4/3, −1/3, 5/3), normalized signs (−1, −1, 1);
    # H̄ᵀH̄ − Σ_ETF has off-diagonal entries 1.5 (twice) and −0.5 (four times)
    line = torch.tensor([[0.0], [1.0], [3.0]])
    labels3 = torch.tensor([0, 1, 2])
    assert collapse.nc2(line, labels3) == pytest.approx((2 * 2.25 + 4 * 0.25) / 9)
    assert collapse.nc2_fro(line, labels3) == pytest.approx(math.sqrt(5.5))
    h, labels, _ = _features()
    assert collapse.nc2(h, labels) > 1e-3
    assert collapse.nc2_fro(h, labels) == pytest.approx(4 * math.sqrt(collapse.nc2(h, labels)))


def test_gram_of_collapsed_etf_features_is_one_within_and_minus_one_over_k_minus_one_across():
    g = torch.Generator().manual_seed(2)
    k = 4
    labels = torch.tensor([2, 0, 1, 3, 0, 2, 1, 3, 3, 0, 1, 2])  # not sorted: the Gram subsample groups by class
    z = _etf_means(k, 6, g)[labels] + 7.0  # an offset that centering must remove
    idx = collapse.stratified_indices(labels, 2)
    assert labels[idx].tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert idx.tolist() == [1, 4, 2, 6, 0, 5, 3, 7]
    gram = collapse.collapse_gram(z, labels, idx)
    same = labels[idx][:, None] == labels[idx][None, :]
    torch.testing.assert_close(gram[same], torch.ones(int(same.sum()), dtype=torch.float64))
    torch.testing.assert_close(gram[~same], torch.full((int((~same).sum()),), -1 / (k - 1), dtype=torch.float64))
    torch.testing.assert_close(collapse.gram_block_means(z, labels), collapse.simplex_etf(k))
    h, labels, _ = _features()
    full = collapse.collapse_gram(h, labels)
    block = torch.stack([torch.stack([full[labels == a][:, labels == b].mean() for b in range(4)]) for a in range(4)])
    torch.testing.assert_close(collapse.gram_block_means(h, labels), block)


@pytest.mark.parametrize("shape", [(12, 7), (4, 7)])  # W taller and wider than its input
def test_right_singular_stage_has_the_nc1_of_the_pre_activation(shape):
    h, labels, g = _features()
    w = torch.randn(*shape, dtype=torch.float64, generator=g)
    stages = collapse.svd_stages(w, h)
    torch.testing.assert_close(stages["input"], h)
    torch.testing.assert_close(stages["left"], torch.relu(h @ w.T))
    # NC1(S Vᵀh) = NC1(U S Vᵀh) = NC1(W h) for every W: U has orthonormal columns, tr(UΣUᵀ) = tr Σ (§5)
    assert collapse.nc1(stages["right"], labels) == pytest.approx(collapse.nc1(h @ w.T, labels), rel=1e-10)
    assert collapse.nc2(stages["right"], labels) == pytest.approx(collapse.nc2(h @ w.T, labels), rel=1e-10)
    # what is not true: S Vᵀ changes NC1, and a non-orthonormal left factor would too
    assert collapse.nc1(stages["right"], labels) != pytest.approx(collapse.nc1(h, labels), rel=1e-3)
    r = stages["right"].shape[1]
    skew = torch.eye(r, dtype=torch.float64) + torch.triu(torch.ones(r, r, dtype=torch.float64), 1)
    assert collapse.nc1(stages["right"] @ skew.T, labels) != pytest.approx(collapse.nc1(stages["right"], labels),
                                                                            rel=1e-3)


def test_svd_stage_nc1_and_the_right_singular_fraction():
    h, labels, g = _features()
    w = torch.randn(5, 7, dtype=torch.float64, generator=g)
    stage_nc1 = collapse.svd_stage_nc1(w, h, labels)
    assert stage_nc1 == {s: pytest.approx(collapse.nc1(f, labels)) for s, f in collapse.svd_stages(w, h).items()}
    assert collapse.right_singular_fraction({"input": 1.0, "right": 0.1, "left": 0.01}) == pytest.approx(0.5)
    assert collapse.right_singular_fraction({"input": 1.0, "right": 0.01, "left": 0.1}) == pytest.approx(2.0)


def test_nfa_correlation_uses_the_agop_square_root():
    g = torch.Generator().manual_seed(3)
    w = torch.randn(9, 6, dtype=torch.float64, generator=g)
    nfm = w.T @ w
    agop = 4.0 * nfm @ nfm  # AGOP^{1/2} = 2 WᵀW
    assert collapse.nfa_correlation(w, agop) == pytest.approx(1.0)
    assert collapse.nfa_correlation_full(w, agop) < 0.99
    assert collapse.nfa_correlation_full(w, 3 * nfm) == pytest.approx(1.0)
    other = torch.randn(6, 6, dtype=torch.float64, generator=g)
    assert abs(collapse.nfa_correlation(w, other @ other.T)) < 0.9


def test_class_means_names_missing_classes():
    with pytest.raises(ValueError, match=r"classes \[1\]"):
        collapse.class_means(torch.ones(3, 2), torch.tensor([0, 2, 2]))
