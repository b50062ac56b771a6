"""The Weibull AFT (exact, interval- and right-censored times) and Harrell's concordance."""

from __future__ import annotations

import numpy as np
import pytest
from grokaudit.claims.survival import aft, fit_families, harrell_c, weibull_aft

TRUE = (5.0, 1.2)  # log T = 5 + 1.2·x + 0.5·W
SIGMA = 0.5


def _simulate(seed: int, n: int = 60) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weibull AFT times observed on a logging grid of 25 steps (interval-censored) with a
    budget of 400 steps (right-censored beyond it)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, n)
    t = np.exp(TRUE[0] + TRUE[1] * x + SIGMA * np.log(rng.exponential(size=n)))
    every, budget = 25.0, 400.0
    upper = np.ceil(t / every) * every
    lower = upper - every
    cens = upper > budget
    return (np.column_stack((np.ones(n), x)), np.where(cens, budget, lower),
            np.where(cens, np.inf, upper))


@pytest.mark.slow  # 50 simulated fits (about 20 s)
def test_aft_covers_the_true_coefficients_in_90_percent_of_50_simulations() -> None:
    covered = np.zeros(3, dtype=int)
    n_censored = 0
    for seed in range(50):
        X, lo, up = _simulate(seed)
        fit = weibull_aft(X, lo, up, ["intercept", "x"])
        assert fit.converged
        n_censored += fit.n_right
        for i, truth in enumerate(TRUE):
            covered[i] += fit.ci_low[i] <= truth <= fit.ci_high[i]
        covered[2] += fit.sigma_ci[0] <= SIGMA <= fit.sigma_ci[1]
    assert n_censored > 50 * 3  # the design really censors
    assert (covered[:2] >= 45).all(), covered  # the coefficients: the acceptance criterion
    assert covered[2] >= 40, covered  # the Weibull scale, a looser guard


def test_exact_times_are_a_special_case() -> None:
    rng = np.random.default_rng(7)
    x = rng.normal(size=200)
    t = np.exp(2.0 - 0.8 * x + 0.3 * np.log(rng.exponential(size=200)))
    fit = weibull_aft(np.column_stack((np.ones(200), x)), t, t, ["c", "x"])
    assert fit.n_exact == 200 and fit.n_right == 0
    assert fit.ci_low[1] < -0.8 < fit.ci_high[1]
    assert fit.shape == pytest.approx(1 / 0.3, rel=0.2)


def test_lognormal_aft_on_exact_times_is_ols() -> None:
    """With every time exact, the normal likelihood of log T is least squares: the log-normal
    AFT's coefficients are the OLS coefficients and σ̂² = RSS/n."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=80)
    t = np.exp(2.0 + 0.7 * x + 0.3 * rng.normal(size=80))
    X = np.column_stack((np.ones(80), x))
    fit = aft(X, t, t, ["c", "x"], family="lognormal")
    co, *_ = np.linalg.lstsq(X, np.log(t), rcond=None)
    assert fit.coef == pytest.approx(tuple(co), abs=1e-7)
    assert fit.sigma == pytest.approx(np.sqrt(np.mean((np.log(t) - X @ co) ** 2)), rel=1e-6)


@pytest.mark.parametrize("family", ["weibull", "lognormal", "loglogistic"])
def test_aic_picks_the_true_error_family(family: str) -> None:
    rng = np.random.default_rng(11)
    n = 400
    x = rng.uniform(-1, 1, n)
    w = {"weibull": np.log(rng.exponential(size=n)), "lognormal": rng.normal(size=n),
         "loglogistic": rng.logistic(size=n)}[family]
    t = np.exp(5.0 + 1.0 * x + 0.4 * w)
    upper = np.ceil(t / 10) * 10  # interval-censored on a 10-step grid
    X = np.column_stack((np.ones(n), x))
    fits, best = fit_families(X, upper - 10, upper, ["c", "x"])
    assert best == family
    assert fits[family].ci_low[1] <= 1.0 <= fits[family].ci_high[1]


def test_aft_rejects_malformed_input() -> None:
    X = np.ones((3, 1))
    with pytest.raises(ValueError):
        weibull_aft(X, np.array([1.0, 2.0, 3.0]), np.array([1.0, 1.0, 3.0]), ["c"])
    with pytest.raises(ValueError):
        weibull_aft(X, np.zeros(3), np.zeros(3), ["c"])


def test_harrell_c_known_answers() -> None:
    t = np.array([1.0, 2.0, 3.0, 4.0])
    ev = np.ones(4, dtype=bool)
    assert harrell_c(t, t, ev) == 1.0
    assert harrell_c(t, -t, ev) == 0.0
    assert harrell_c(t, np.zeros(4), ev) == 0.5
    # censoring: run 0 censored at 1 is comparable with no one (it is the shortest)
    ev2 = np.array([False, True, True, True])
    pred = np.array([10.0, 1.0, 3.0, 2.0])
    # comparable pairs: (1,2) conc, (1,3) conc, (2,3) disc → 2/3
    assert harrell_c(t, pred, ev2) == pytest.approx(2 / 3)


def test_cross_check_with_lifelines() -> None:
    pytest.importorskip("lifelines")
    import pandas as pd
    from lifelines import WeibullAFTFitter
    from lifelines.utils import concordance_index

    rng = np.random.default_rng(3)
    n = 120
    x = rng.normal(size=n)
    z = rng.uniform(size=n)
    t = np.exp(2 + 0.7 * x - 0.4 * z + 0.6 * np.log(rng.exponential(size=n)))
    c = np.exp(rng.uniform(1.5, 4, n))
    e = t < c
    d = np.minimum(t, c)
    X = np.column_stack((np.ones(n), x, z))
    fit = weibull_aft(X, d, np.where(e, d, np.inf), ["Intercept", "x", "z"])
    ref = WeibullAFTFitter().fit(pd.DataFrame({"T": d, "E": e.astype(int), "x": x, "z": z}),
                                 "T", "E")
    p = ref.params_
    assert fit.get("Intercept")[0] == pytest.approx(p[("lambda_", "Intercept")], abs=1e-4)
    assert fit.get("x")[0] == pytest.approx(p[("lambda_", "x")], abs=1e-4)
    assert fit.get("z")[0] == pytest.approx(p[("lambda_", "z")], abs=1e-4)
    assert np.log(fit.shape) == pytest.approx(p[("rho_", "Intercept")], abs=1e-4)
    assert fit.concordance == pytest.approx(concordance_index(d, X @ np.array(fit.coef), e),
                                            abs=1e-4)
    assert fit.concordance == pytest.approx(ref.concordance_index_, abs=1e-4)
