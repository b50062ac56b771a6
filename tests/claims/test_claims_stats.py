"""The small-sample statistics against known answers (textbook values, brute force, scipy)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from grokaudit.claims.stats import (
    aicc,
    bootstrap_ci,
    cohen_dz,
    min_wilcoxon_p,
    ols,
    sign_flip_test,
    wilcoxon_exact,
    wilson,
)
from scipy import stats


def test_aicc_matches_the_formula_and_refuses_tiny_n() -> None:
    rss, n, k = 2.5, 10, 3
    expected = n * math.log(rss / n) + 2 * k + 2 * k * (k + 1) / (n - k - 1)
    assert aicc(rss, n, k) == pytest.approx(expected)
    assert aicc(1.0, 4, 3) is None  # n − k − 1 = 0


def test_wilson_known_values() -> None:
    # Newcombe (1998), Table I: 5/10 → (0.2366, 0.7634); 0/10 → (0, 0.2775)
    p = wilson(5, 10)
    assert (p.low, p.high) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    p0 = wilson(0, 10)
    assert p0.low == 0.0 and p0.high == pytest.approx(0.2775, abs=1e-4)
    assert wilson(0, 0).rate is None


def test_bootstrap_is_seeded_and_covers_a_known_mean() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(10.0, 1.0, 60)
    a = bootstrap_ci(x, np.mean, seed=3, method="bca", n_resamples=499)
    b = bootstrap_ci(x, np.mean, seed=3, method="bca", n_resamples=499)
    assert (a.low, a.high) == (b.low, b.high)
    assert a.low < 10.0 < a.high
    assert a.method == "bca"


def test_bootstrap_bca_falls_back_on_a_constant_sample() -> None:
    ci = bootstrap_ci(np.ones(8), np.mean, seed=0, method="bca", n_resamples=99)
    assert ci.method.startswith("percentile")


def test_paired_bootstrap_resamples_units_together() -> None:
    a = np.arange(20.0)
    b = a + 5.0  # the paired difference is exactly 5 in every unit
    ci = bootstrap_ci((a, b), lambda x, y: float(np.mean(y - x)), seed=0, paired=True,
                      n_resamples=199)
    assert ci.low == pytest.approx(5.0) and ci.high == pytest.approx(5.0)


def _brute_wilcoxon(d: np.ndarray) -> float:
    d = d[d != 0]
    r = stats.rankdata(np.abs(d))
    w = r[d > 0].sum()
    c = r.sum() / 2
    ws = [sum(ri for ri, s in zip(r, signs) if s) for signs in
          itertools.product((0, 1), repeat=d.size)]
    return float(np.mean([abs(x - c) >= abs(w - c) - 1e-9 for x in ws]))


def test_wilcoxon_exact_matches_scipy_without_ties() -> None:
    d = np.array([1.5, -0.3, 2.2, 3.1, 0.7, -1.1, 4.0, 2.6])
    ours = wilcoxon_exact(d)
    ref = stats.wilcoxon(d, method="exact")
    assert ours.p_value == pytest.approx(ref.pvalue)


def test_wilcoxon_exact_with_ties_matches_enumeration() -> None:
    d = np.array([1.0, 1.0, -2.0, 3.0, 3.0, 3.0, 0.0, 4.0])
    res = wilcoxon_exact(d)
    assert res.n_zeros == 1 and res.n == 7
    assert res.p_value == pytest.approx(_brute_wilcoxon(d))


def test_five_pairs_cannot_reach_five_percent() -> None:
    assert wilcoxon_exact(np.array([1.0, 2, 3, 4, 5])).p_value == pytest.approx(2 / 32)
    assert min_wilcoxon_p(5) >= 0.05 > min_wilcoxon_p(6)


def test_sign_flip_exact_and_monte_carlo() -> None:
    d = np.array([0.5, 1.2, -0.2, 2.0, 0.9, 1.4])
    ex = sign_flip_test(d)
    signs = np.array(list(itertools.product((1, -1), repeat=d.size)))
    brute = np.mean(np.abs(signs @ d) >= abs(d.sum()) - 1e-12)
    assert ex.exact and ex.p_value == pytest.approx(brute)
    rng = np.random.default_rng(0)
    big = rng.normal(0.0, 1.0, 30)
    mc1 = sign_flip_test(big, seed=5, n_resamples=2000)
    mc2 = sign_flip_test(big, seed=5, n_resamples=2000)
    assert not mc1.exact and mc1.p_value == mc2.p_value
    assert mc1.p_value > 0.05  # the null is true


def test_cohen_dz() -> None:
    assert cohen_dz(np.array([1.0, 2.0, 3.0])) == pytest.approx(2.0)
    assert cohen_dz(np.array([1.0])) is None


def test_ols_recovers_noiseless_coefficients_and_loo() -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, 12)
    y = 1.0 + 2.0 * x + rng.normal(0, 0.1, 12)
    X = np.column_stack((np.ones(12), x))
    fit = ols(X, y, ["c", "x"])
    assert fit.get("x")[1] < 2.0 < fit.get("x")[2]
    press = 0.0
    for i in range(12):
        m = np.arange(12) != i
        b, *_ = np.linalg.lstsq(X[m], y[m], rcond=None)
        press += (y[i] - X[i] @ b) ** 2
    assert fit.loo_r2 == pytest.approx(1 - press / np.sum((y - y.mean()) ** 2))
