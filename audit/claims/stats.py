"""Small-sample statistics of the claim audits, with scipy and numpy only.

Every function here is pure and deterministic: a bootstrap or permutation test takes a ``seed``
and gives the same answer for the same input. Each estimator's formula is in ``docs/claims.md``.

- :func:`aicc` — Akaike's criterion with the small-sample correction (Gaussian residuals).
- :func:`wilson` — the Wilson score interval of a binomial proportion.
- :func:`bootstrap_ci` — seeded percentile or BCa interval via ``scipy.stats.bootstrap``.
- :func:`wilcoxon_exact` — the exact signed-rank test (mid-ranks for ties, zeros dropped).
- :func:`sign_flip_test` — the paired sign-flip permutation test of the mean difference.
- :func:`min_wilcoxon_p` — the smallest two-sided p-value n pairs can reach.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

#: Replaces ±inf (a censored bound) inside a bootstrap so that quantiles stay defined.
_BIG = 1e300


# ------------------------------------------------------------------------------------------
# model comparison
# ------------------------------------------------------------------------------------------

def aicc(rss: float, n: int, k: int) -> float | None:
    """AICc of a least-squares fit with Gaussian errors: ``n·ln(RSS/n) + 2k + 2k(k+1)/(n−k−1)``.

    ``k`` counts every fitted parameter *including* the residual variance. Returns ``None``
    when ``n ≤ k + 1`` (the correction is undefined: too few points for the model).
    """
    if n - k - 1 <= 0:
        return None
    rss = max(float(rss), 1e-300 * n)  # an exact fit would give −inf
    return n * math.log(rss / n) + 2 * k + 2 * k * (k + 1) / (n - k - 1)


def gaussian_aic(rss: float, n: int, k: int) -> float:
    """Plain AIC ``n·ln(RSS/n) + 2k`` (the same constant-free form as :func:`aicc`)."""
    rss = max(float(rss), 1e-300 * n)
    return n * math.log(rss / n) + 2 * k


# ------------------------------------------------------------------------------------------
# proportions
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Proportion:
    """``k`` of ``n`` with its Wilson score interval at ``level``."""

    k: int
    n: int
    rate: float | None
    low: float | None
    high: float | None
    level: float

    def to_dict(self) -> dict[str, Any]:
        return {"k": self.k, "n": self.n, "rate": self.rate, "low": self.low,
                "high": self.high, "level": self.level}


def wilson(k: int, n: int, level: float = 0.95) -> Proportion:
    """The Wilson score interval ``(p̂ + z²/2n ± z·√(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n)``.

    With ``n = 0`` the rate and interval are ``None`` (nothing was observed).
    """
    if n <= 0:
        return Proportion(int(k), 0, None, None, None, level)
    if not 0 <= k <= n:
        raise ValueError(f"wilson: k={k} must lie in [0, n={n}]")
    z = float(stats.norm.ppf(0.5 + level / 2))
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return Proportion(int(k), int(n), p, max(0.0, centre - half), min(1.0, centre + half), level)


# ------------------------------------------------------------------------------------------
# bootstrap
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class BootstrapCI:
    """A seeded bootstrap interval; ``distribution`` is kept as evidence (not serialized)."""

    estimate: float | None
    low: float | None
    high: float | None
    level: float
    method: str
    n_resamples: int
    seed: int
    distribution: np.ndarray | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"estimate": _f(self.estimate), "low": _f(self.low), "high": _f(self.high),
                "level": self.level, "method": self.method, "n_resamples": self.n_resamples,
                "seed": self.seed}


def _f(x: float | None) -> float | None:
    if x is None:
        return None
    x = float(x)
    if math.isnan(x):
        return None
    if abs(x) >= _BIG / 10:
        return math.copysign(math.inf, x)  # the JSON layer turns inf into null
    return x


def bootstrap_ci(data: Sequence[np.ndarray] | np.ndarray, statistic: Callable[..., float], *,
                 seed: int = 0, level: float = 0.95, method: str = "percentile",
                 n_resamples: int = 999, paired: bool = False) -> BootstrapCI:
    """Seeded bootstrap CI of ``statistic(*samples)`` with ``scipy.stats.bootstrap``.

    ``data`` is one array or a sequence of arrays. Unpaired samples are resampled independently
    (a stratified bootstrap: one stratum per sample); ``paired=True`` resamples the same indices
    in every sample (a design where sample ``i`` of each array belongs to the same unit).
    ``method`` is ``percentile`` or ``bca``; BCa falls back to percentile when its acceleration
    is undefined (e.g. a constant sample), and the result says so in ``method``.
    ±inf values (censored bounds) are carried through as a huge finite number.
    """
    samples = [np.asarray(data, dtype=float)] if isinstance(data, np.ndarray) else \
        [np.asarray(d, dtype=float) for d in data]
    samples = [np.where(np.isposinf(s), _BIG, np.where(np.isneginf(s), -_BIG, s)) for s in samples]
    est = float(statistic(*samples))
    if any(s.size < 2 for s in samples):
        return BootstrapCI(_f(est), None, None, level, method, 0, seed)
    rng = np.random.default_rng(seed)

    def run(m: str) -> Any:
        return stats.bootstrap(tuple(samples), statistic, n_resamples=n_resamples,
                               confidence_level=level, method=m, paired=paired,
                               vectorized=False, random_state=rng)

    used = method
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = run(method)
            lo, hi = res.confidence_interval
            if method == "bca" and not (np.isfinite(lo) and np.isfinite(hi)):
                rng = np.random.default_rng(seed)
                res = run("percentile")
                lo, hi = res.confidence_interval
                used = "percentile (BCa undefined)"
    dist = np.asarray(res.bootstrap_distribution)
    return BootstrapCI(_f(est), _f(lo), _f(hi), level, used, n_resamples, seed, dist)


# ------------------------------------------------------------------------------------------
# paired tests
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TestResult:
    """A test statistic, its two-sided p-value, and how many pairs it used."""

    name: str
    statistic: float | None
    p_value: float | None
    n: int
    exact: bool
    n_zeros: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "statistic": _f(self.statistic), "p_value": _f(self.p_value),
                "n": self.n, "exact": self.exact, "n_zeros": self.n_zeros}


def _signed_rank_distribution(ranks2: np.ndarray) -> np.ndarray:
    """Counts of each value of ``Σ (signs · ranks2)_+`` over all 2ⁿ sign patterns.

    ``ranks2`` are twice the mid-ranks (integers). Dynamic programming over ranks: index ``s``
    of the result counts patterns whose positive-rank sum (×2) equals ``s``.
    """
    total = int(ranks2.sum())
    dist = np.zeros(total + 1, dtype=float)
    dist[0] = 1.0
    for r in ranks2.astype(int):
        shifted = np.zeros_like(dist)
        shifted[r:] = dist[: total + 1 - r]
        dist = dist + shifted
    return dist


def wilcoxon_exact(d: Sequence[float] | np.ndarray) -> TestResult:
    """The exact two-sided Wilcoxon signed-rank test of ``median(d) = 0``.

    Zeros are dropped (Wilcoxon's convention, counted in ``n_zeros``); ties get mid-ranks and the
    null distribution is enumerated for those mid-ranks, so it stays exact. ``statistic`` is
    ``W⁺`` (the sum of the ranks of the positive differences); the p-value is
    ``P(|W⁺ − n(n+1)/4| ≥ |w − n(n+1)/4|)`` under random signs.
    """
    x = np.asarray(d, dtype=float)
    x = x[np.isfinite(x)]
    nz = int(np.sum(x == 0))
    x = x[x != 0]
    n = int(x.size)
    if n == 0:
        return TestResult("wilcoxon_exact", None, None, 0, True, nz)
    ranks = stats.rankdata(np.abs(x))
    ranks2 = np.round(2 * ranks).astype(int)
    w2 = int(ranks2[x > 0].sum())
    dist = _signed_rank_distribution(ranks2)
    probs = dist / dist.sum()
    centre2 = ranks2.sum() / 2.0
    vals = np.arange(dist.size)
    dev = np.abs(vals - centre2)
    p = float(probs[dev >= abs(w2 - centre2) - 1e-9].sum())
    return TestResult("wilcoxon_exact", w2 / 2.0, min(1.0, p), n, True, nz)


def min_wilcoxon_p(n: int) -> float:
    """The smallest two-sided p-value the exact signed-rank test can give with ``n`` pairs:
    ``2 / 2ⁿ`` (every difference the same sign, no ties). 1.0 for ``n = 0``."""
    if n <= 0:
        return 1.0
    return min(1.0, 2.0 / 2.0 ** n)


def sign_flip_test(d: Sequence[float] | np.ndarray, *, seed: int = 0,
                   n_resamples: int = 20000, max_exact: int = 16) -> TestResult:
    """The paired sign-flip permutation test of ``mean(d) = 0``, two-sided.

    Under the null each difference is as likely to have either sign. With ``n ≤ max_exact``
    every one of the 2ⁿ sign patterns is enumerated (exact); otherwise ``n_resamples`` random
    patterns are drawn with ``seed`` and the p-value is ``(1 + #{|mean*| ≥ |mean|}) / (1 + B)``.
    """
    x = np.asarray(d, dtype=float)
    x = x[np.isfinite(x)]
    n = int(x.size)
    if n == 0:
        return TestResult("sign_flip", None, None, 0, True)
    obs = abs(float(x.mean()))
    tol = 1e-12 * max(1.0, float(np.abs(x).max()))
    if n <= max_exact:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=n)))
        means = np.abs(signs @ x) / n
        p = float(np.mean(means >= obs - tol))
        return TestResult("sign_flip", float(x.mean()), p, n, True)
    rng = np.random.default_rng(seed)
    signs = rng.choice((1.0, -1.0), size=(n_resamples, n))
    means = np.abs(signs @ x) / n
    p = (1.0 + float(np.sum(means >= obs - tol))) / (1.0 + n_resamples)
    return TestResult("sign_flip", float(x.mean()), p, n, False)


def cohen_dz(d: Sequence[float] | np.ndarray) -> float | None:
    """Cohen's ``d_z`` for paired data: ``mean(d) / sd(d)`` (``ddof = 1``); None if undefined."""
    x = np.asarray(d, dtype=float)
    x = x[np.isfinite(x)]
    if x.size < 2:
        return None
    sd = float(x.std(ddof=1))
    if sd == 0:
        return None
    return float(x.mean()) / sd


# ------------------------------------------------------------------------------------------
# least squares
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LinearFit:
    """Ordinary least squares ``y = Xb``: coefficients with t-intervals, R² and LOO R²."""

    names: tuple[str, ...]
    coef: tuple[float, ...]
    se: tuple[float | None, ...]
    ci_low: tuple[float | None, ...]
    ci_high: tuple[float | None, ...]
    n: int
    rss: float
    r2: float | None
    loo_r2: float | None
    level: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n, "rss": _f(self.rss), "r2": _f(self.r2), "loo_r2": _f(self.loo_r2),
            "level": self.level,
            "coefficients": [
                {"name": nm, "estimate": _f(c), "se": _f(s), "low": _f(lo), "high": _f(hi)}
                for nm, c, s, lo, hi in zip(self.names, self.coef, self.se, self.ci_low,
                                            self.ci_high)],
        }

    def get(self, name: str) -> tuple[float, float | None, float | None]:
        i = self.names.index(name)
        return self.coef[i], self.ci_low[i], self.ci_high[i]


def ols(X: np.ndarray, y: np.ndarray, names: Sequence[str], level: float = 0.95) -> LinearFit:
    """OLS of ``y`` on the columns of ``X`` (include the intercept column yourself).

    Standard errors from ``σ̂²(XᵀX)⁻¹`` with ``σ̂² = RSS/(n−p)``; CIs from Student's t with
    ``n − p`` degrees of freedom (None when ``n ≤ p``). LOO R² is ``1 − PRESS/SST`` with
    ``PRESS = Σ (eᵢ/(1 − hᵢᵢ))²``.
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    n, p = X.shape
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ coef
    rss = float(resid @ resid)
    sst = float(((y - y.mean()) ** 2).sum()) if n else 0.0
    r2 = 1 - rss / sst if sst > 0 else None
    se: list[float | None] = [None] * p
    lo: list[float | None] = [None] * p
    hi: list[float | None] = [None] * p
    loo = None
    if n > p:
        xtx_inv = np.linalg.pinv(X.T @ X)
        s2 = rss / (n - p)
        t = float(stats.t.ppf(0.5 + level / 2, n - p))
        for i in range(p):
            s = math.sqrt(max(s2 * xtx_inv[i, i], 0.0))
            se[i] = s
            lo[i] = float(coef[i] - t * s)
            hi[i] = float(coef[i] + t * s)
        h = np.einsum("ij,jk,ik->i", X, xtx_inv, X)
        if np.all(h < 1 - 1e-10) and sst > 0:
            press = float(np.sum((resid / (1 - h)) ** 2))
            loo = 1 - press / sst
    return LinearFit(tuple(names), tuple(float(c) for c in coef), tuple(se), tuple(lo),
                     tuple(hi), int(n), rss, r2, loo, level)
