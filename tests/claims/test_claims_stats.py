"""The small-sample statistics against known answers (textbook values, brute force, scipy)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from grokaudit.claims.stats import (
    MIN_VALID,
    aicc,
    bootstrap,
    cohen_dz,
    mcnemar_exact,
    min_detectable_dz,
    min_wilcoxon_p,
    ols,
    pearson,
    sign_flip_test,
    sign_test,
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
    (a,) = bootstrap(x.size, lambda ix: np.mean(x[ix]), seed=3, method="bca", n_resamples=499)
    (b,) = bootstrap(x.size, lambda ix: np.mean(x[ix]), seed=3, method="bca", n_resamples=499)
    assert (a.low, a.high) == (b.low, b.high)
    assert a.low < 10.0 < a.high
    assert a.method == "BCa" and a.n_valid == 499
    (p,) = bootstrap(x.size, lambda ix: np.mean(x[ix]), seed=3, n_resamples=499)
    assert p.low == pytest.approx(np.mean(x) - 1.96 / np.sqrt(60), abs=0.06)


def test_bootstrap_bca_matches_scipy() -> None:
    rng = np.random.default_rng(2)
    x = rng.exponential(1.0, 40)
    (ours,) = bootstrap(x.size, lambda ix: np.mean(x[ix]), seed=0, method="bca",
                        n_resamples=4999)
    ref = stats.bootstrap((x,), np.mean, method="BCa", n_resamples=4999,
                          random_state=np.random.default_rng(0)).confidence_interval
    assert (ours.low, ours.high) == pytest.approx((ref.low, ref.high), rel=0.03)


def test_bootstrap_never_gives_a_zero_width_interval() -> None:
    (ci,) = bootstrap(8, lambda ix: float(np.mean(np.ones(8)[ix])), seed=0, method="bca",
                      n_resamples=99)
    assert ci.estimate == 1.0 and ci.low is None and ci.high is None and not ci.identified
    assert "no spread" in ci.note
    # paired differences exactly 5 in every unit: no interval, not [5, 5]
    a = np.arange(20.0)
    b = a + 5.0
    (ci,) = bootstrap(20, lambda ix: float(np.mean(b[ix] - a[ix])), seed=0, n_resamples=199)
    assert ci.estimate == pytest.approx(5.0) and not ci.identified


def test_bootstrap_one_draw_rule_and_strata() -> None:
    x = np.arange(30.0)
    # a statistic that fails on most resamples gets no interval, and says why
    (ci,) = bootstrap(30, lambda ix: float(np.mean(x[ix])) if ix[0] < 3 else None, seed=0,
                      n_resamples=200)
    assert not ci.identified and "resamples gave a value" in ci.note and ci.n_valid < 100
    assert MIN_VALID == 20
    # strata are resampled within themselves: each resample keeps 10 + 20 units
    seen = set()

    def stat(ix: np.ndarray) -> float:
        seen.add((int(np.sum(ix < 10)), int(np.sum(ix >= 10))))
        return float(np.mean(x[ix]))

    bootstrap([np.arange(10), np.arange(10, 30)], stat, seed=1, n_resamples=50)
    assert seen == {(10, 20)}
    # a vector statistic gets one interval per component
    lo_hi = bootstrap(30, lambda ix: [np.mean(x[ix]), np.median(x[ix])], seed=0,
                      n_resamples=99)
    assert len(lo_hi) == 2 and all(c.identified for c in lo_hi)


def test_bootstrap_keeps_a_censored_end_unbounded() -> None:
    t = np.array([100.0, 120, 130, np.inf, np.inf])
    (ci,) = bootstrap(5, lambda ix: float(np.median(t[ix])), seed=0, n_resamples=199)
    assert ci.estimate == 130 and ci.low is not None and ci.high is None and ci.high_unbounded
    assert ci.identified and ci.excludes(50.0) and not ci.excludes(1e9)


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


def test_sign_test_and_mcnemar_known_values() -> None:
    st = sign_test(np.array([1, 1, 1, 1, 1, 0, -1]))
    assert (st.n, st.n_zeros, st.statistic) == (6, 1, 5)
    assert st.p_value == pytest.approx(2 * 7 / 64)  # P(X ≥ 5) + P(X ≤ 1), Binomial(6, ½)
    assert sign_test(np.ones(5)).p_value == pytest.approx(min_wilcoxon_p(5))
    m = mcnemar_exact([True] * 8 + [False, True], [False] * 8 + [True, True])
    assert (m.statistic, m.n) == (8, 9)
    assert m.p_value == pytest.approx((9 + 1) / 512)  # P(X ≥ 8), Binomial(9, ½)
    assert mcnemar_exact([True, False], [True, False]).p_value == 1.0


def test_min_detectable_dz_has_the_stated_power() -> None:
    rng = np.random.default_rng(0)
    for n in (6, 10):
        dz = min_detectable_dz(n)
        x = rng.normal(dz, 1.0, (40000, n))
        t = x.mean(axis=1) / (x.std(axis=1, ddof=1) / np.sqrt(n))
        power = float(np.mean(np.abs(t) > stats.t.ppf(0.975, n - 1)))
        assert power == pytest.approx(0.8, abs=0.01)
    assert min_detectable_dz(10) == pytest.approx(0.996, abs=0.001)
    assert min_detectable_dz(1) is None


def test_pearson_with_fisher_interval() -> None:
    x = np.arange(10.0)
    y = x + np.array([0.5, -0.5] * 5)
    c = pearson(x, y)
    r = float(np.corrcoef(x, y)[0, 1])
    h = 1.959964 / np.sqrt(7)
    assert c.r == pytest.approx(r)
    assert (c.low, c.high) == pytest.approx((np.tanh(np.arctanh(r) - h),
                                             np.tanh(np.arctanh(r) + h)))
    assert pearson(x[:3], y[:3]).low is None and pearson(x, np.ones(10)).r is None


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


def test_a_bootstrap_of_two_or_three_units_is_refused_not_the_sample_range() -> None:
    """With two pairs every resample is a, b or their mean (a, b each with probability ¼): the
    95 % percentile interval was [a, b], the sample's range, printed as a CI (its coverage of
    the mean is 50 %). Three units: each extreme still has probability 1/27 > 2.5 %."""
    d = np.array([3.0, 10.0, 4.0, 8.0])
    for n in (2, 3):
        (c,) = bootstrap(n, lambda ix, n=n: float(np.mean(d[:n][ix])), seed=0, level=0.95)
        assert c.low is None and c.high is None and c.note
        assert c.estimate == pytest.approx(np.mean(d[:n]))
    (c4,) = bootstrap(4, lambda ix: float(np.mean(d[ix])), seed=0, level=0.95)
    assert c4.low is not None and d.min() < c4.low < c4.high < d.max()
    # at 99.9 % four units are too few as well (4⁻⁴ ≈ 0.0039 ≥ 0.0005)
    (c4x,) = bootstrap(4, lambda ix: float(np.mean(d[ix])), seed=0, level=0.999)
    assert c4x.low is None
