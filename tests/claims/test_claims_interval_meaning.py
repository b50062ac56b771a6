"""Every printed 95 % interval means what it says (issue 42). Each case has its answer fixed before
the code ran, recomputed here independently (scipy's distributions and a brute-force profile
likelihood, not the package's own likelihood)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from grokaudit import Reason, make_config
from grokaudit.claims.onset import run_onset
from grokaudit.claims.render import render_text
from grokaudit.claims.simulate import make_log
from grokaudit.claims.stats import MIN_VALID
from grokaudit.claims.survival import aft
from scipy import optimize, special, stats

R = Reason
#: log T = μ + σ·W: W's distribution per AFT family
_W = {"weibull": stats.gumbel_l, "lognormal": stats.norm, "loglogistic": stats.logistic}
#: the same CDFs as bare ufuncs (what each distribution's ``cdf`` evaluates, without its argument
#: checks, which made the brute-force profiles below cost minutes): checked against ``_W``
_CDF = {"weibull": lambda z: -special.expm1(-np.exp(z)), "lognormal": special.ndtr,
        "loglogistic": special.expit}


def test_the_bare_cdfs_are_the_distributions_cdfs() -> None:
    z = np.concatenate((np.linspace(-40, 40, 2001), [-np.inf, np.inf]))
    for fam, dist in _W.items():
        np.testing.assert_allclose(_CDF[fam](z), dist.cdf(z), rtol=1e-14, atol=0)


def _touching_log() -> pd.DataFrame:
    """Item 1's case: logged every 25 steps, the two runs of each cell grok on either side of
    a logged step (99 and 101 → (75, 100] and (100, 125]; ×H): the law T = 100·H touches an
    end of every interval and lies inside none."""
    rows = [{"run": f"H{H}s{s}", "H": H, "seed": s, "t_grok": 100 * H + (2 * s - 1),
             "budget": 2000} for H in (1, 2, 4) for s in range(2)]
    return make_log(pd.DataFrame(rows), every=25)


def _profile_end(fam: str, lo: np.ndarray, up: np.ndarray, x: np.ndarray, b: float) -> float:
    """max over (a, log σ) of the interval-censored log-likelihood with the slope fixed at b:
    every point of a fine grid (a in [4.2, 5.0], log σ in [-8, 1]), then Nelder–Mead from the
    best few."""
    cdf = _CDF[fam]

    def ll(a: np.ndarray, s: np.ndarray) -> np.ndarray:
        mu = a[..., None] + b * x
        sig = np.exp(s)[..., None]
        with np.errstate(divide="ignore", invalid="ignore"):
            p = cdf((np.log(up) - mu) / sig) - cdf((np.log(lo) - mu) / sig)
            return np.where(np.all(p > 0, axis=-1), np.sum(np.log(p), axis=-1), -np.inf)

    def nll(r: np.ndarray) -> float:
        return -float(ll(np.asarray(r[0]), np.asarray(r[1])))

    a, s = np.meshgrid(np.linspace(4.2, 5.0, 161), np.linspace(-8.0, 1.0, 181), indexing="ij")
    grid = ll(a, s)
    best = -float(grid.max())
    for i in np.argsort(grid, axis=None)[::-1][:4]:
        r = optimize.minimize(nll, [a.flat[i], s.flat[i]], method="Nelder-Mead",
                              options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 4000})
        best = min(best, float(r.fun))
    return -best


@pytest.mark.slow  # onset fits and brute-force profiles (about 10 s)
def test_onset_touching_intervals_are_fitted_not_called_degenerate() -> None:
    r = run_onset(_touching_log(), make_config(), by=["H"], n_resamples=MIN_VALID)
    b = r.studies[0].body
    # pre-registered: not degenerate (the likelihood levels off), an AFT fit with a slope
    # interval that is the profile-likelihood set of the chosen family
    assert b.aft.cause != "degenerate" and b.aft.fit is not None, b.aft
    fit = b.aft.fit
    est, low, high = fit.get("log_H")
    assert low is not None and high is not None and low < est < high
    lo = np.array([75, 100, 175, 200, 375, 400], dtype=float)
    up = lo + 25
    x = np.log(np.array([1, 1, 2, 2, 4, 4], dtype=float))
    # the cut: F(1, n − 3)'s 95 % quantile / 2 (6 runs; intercept, slope, σ)
    cut = stats.f.ppf(0.95, 1, 6 - 3) / 2
    # the printed interval joins the profile sets of the chosen family and of every family
    # within 2 of its AIC; each family's set is checked by brute force at both ends
    ends = []
    for fam in (fit.family, *fit.near_families):
        one = aft(np.column_stack((np.ones_like(x), x)), lo, up, ["const", "log_H"],
                  family=fam)
        e, a, z = one.get("log_H")
        ll_hat = max(_profile_end(fam, lo, up, x, e), one.loglik)
        for end, outward in ((a, -1e-3), (z, 1e-3)):
            assert end is not None
            assert ll_hat - _profile_end(fam, lo, up, x, end - outward) < cut  # inside
            assert ll_hat - _profile_end(fam, lo, up, x, end + outward) > cut  # outside
        ends.append((a, z))
    assert low == min(a for a, _ in ends) and high == max(z for _, z in ends)
    assert "σ → 0" not in render_text(r)
    assert not any(f.code is R.NOT_IDENTIFIED for f in r.findings)


def test_aft_slope_interval_is_the_profile_likelihood_set() -> None:
    """On a censored design the printed interval is the profile set (its cut F-calibrated on
    few runs), not Wald's ±1.96·se: checked by brute force at each end, for each family."""
    rng = np.random.default_rng(3)
    H = np.repeat([1.0, 2.0, 4.0, 8.0], 4)
    t = np.exp(np.log(1000) + 0.7 * np.log(H) + 0.3 * np.log(rng.exponential(size=H.size)))
    lo = np.floor(t / 250) * 250
    up = lo + 250
    cens = t > 6000
    lo, up = np.where(cens, 6000.0, lo), np.where(cens, np.inf, up)
    X = np.column_stack((np.ones_like(H), np.log(H)))
    for fam in ("weibull", "lognormal", "loglogistic"):
        fit = aft(X, lo, up, ["const", "log_H"], family=fam)
        cdf = _CDF[fam]

        def prof(b: float, cdf: Any = cdf) -> float:
            def nll(r: np.ndarray) -> float:
                a, s = r
                sig = math.exp(s)
                mu = a + b * X[:, 1]
                zu = np.where(np.isfinite(up), (np.log(np.where(np.isfinite(up), up, 1.0))
                                                - mu) / sig, np.inf)
                p = cdf(zu) - cdf((np.log(lo) - mu) / sig)
                return math.inf if np.any(p <= 0) else -float(np.sum(np.log(p)))

            return -min(float(optimize.minimize(nll, [a0, s0], method="Nelder-Mead",
                                                options={"xatol": 1e-10, "fatol": 1e-12,
                                                         "maxiter": 4000}).fun)
                        for a0 in (6.0, 7.0, 8.0) for s0 in (-2.0, -1.0, 0.0))

        _, low, high = fit.get("log_H")
        cut = stats.f.ppf(0.95, 1, H.size - 3) / 2  # 16 runs; intercept, slope, σ
        for end, out in ((low, -1e-3), (high, 1e-3)):
            assert fit.loglik - prof(end - out) < cut < fit.loglik - prof(end + out), fam
        wald = (fit.coef[1] - 1.96 * fit.se[1], fit.coef[1] + 1.96 * fit.se[1])
        assert (low, high) != (wald[0], wald[1])
