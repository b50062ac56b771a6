"""Small-sample statistics of the claim audits, with scipy and numpy only.

Every function here is pure and deterministic: a bootstrap or permutation test takes a ``seed``
and gives the same answer for the same input. Each estimator's formula is in ``docs/claims.md``.

- :func:`aicc` — Akaike's criterion with the small-sample correction (Gaussian residuals).
- :func:`wilson` — the Wilson score interval of a binomial proportion.
- :func:`bootstrap` — the one seeded bootstrap (percentile or BCa, strata, one draw rule).
- :func:`range_bootstrap` — its percentile interval of a statistic of values known as ranges.
- :func:`wilcoxon_exact` — the exact signed-rank test (mid-ranks for ties, zeros dropped).
- :func:`sign_test` — the exact sign test (the test of pairs whose sign alone is known).
- :func:`mcnemar_exact` — the exact one-sided test of paired successes.
- :func:`sign_flip_test` — the paired sign-flip permutation test of the mean difference.
- :func:`min_wilcoxon_p` — the smallest two-sided p-value n pairs can reach.
- :func:`min_detectable_dz` — the paired effect a paired t-test detects with a given power.
- :func:`min_detectable_dz_sign` — the same for the exact sign test (normal differences).
- :func:`pearson` — Pearson's r with its Fisher-z interval.
- :func:`poisson_binomial_tail` — ``P(K ≥ k)`` for a sum of independent Bernoullis.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize, stats

from .results import Record

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
    low = 0.0 if k == 0 else max(0.0, centre - half)  # exact ends: no rounding residue
    high = 1.0 if k == n else min(1.0, centre + half)
    return Proportion(int(k), int(n), p, low, high, level)


# ------------------------------------------------------------------------------------------
# bootstrap: the one resampling routine of the claim audits
# ------------------------------------------------------------------------------------------

#: An interval needs at least this many resamples that gave a value, and at least half of
#: those asked for (a resample can fail: a refit that does not converge, a censored median).
MIN_VALID = 20


@dataclass(frozen=True)
class BootstrapCI(Record):
    """A seeded bootstrap interval of one statistic.

    ``low``/``high`` are ``None`` when there is no interval; ``note`` then says why (too few
    resamples gave a value, or the resamples have no spread: a zero-width interval is never
    reported). An end is *unbounded* (``low_unbounded``/``high_unbounded``, the value
    ``None``) when the resamples reach a censored value there. ``distribution`` is kept as
    evidence (not serialized)."""

    estimate: float | None
    low: float | None
    high: float | None
    level: float
    method: str
    n_resamples: int
    n_valid: int
    seed: int
    note: str | None = None
    low_unbounded: bool = False
    high_unbounded: bool = False
    distribution: np.ndarray | None = field(default=None, repr=False, compare=False,
                                            metadata={"json": False})

    @property
    def identified(self) -> bool:
        """Whether there is an interval (each end a number or unbounded)."""
        return ((self.low is not None or self.low_unbounded)
                and (self.high is not None or self.high_unbounded))

    def excludes(self, x: float) -> bool:
        """Whether the interval lies entirely on one side of ``x``."""
        if not self.identified:
            return False
        return bool((self.low is not None and self.low > x)
                    or (self.high is not None and self.high < x))


@dataclass(frozen=True)
class Split:
    """A resample's statistic whose value is not known but whose reach is: ``low`` is what
    it contributes to the lower end of each interval, ``high`` to the upper end (a value
    whose direction is unknown counts at both ends: ``low = −inf``, ``high = +inf``). Where
    the two agree it is an ordinary value. Returned by a :func:`bootstrap` statistic."""

    low: Sequence[float] | np.ndarray
    high: Sequence[float] | np.ndarray


def _f(x: float | None) -> float | None:
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


def _quantile(v: np.ndarray, q: float) -> float:
    """The linear-interpolation quantile of sorted ``v``, with ±inf kept (no ``inf − inf``)."""
    pos = q * (v.size - 1)
    i = int(math.floor(pos))
    frac = pos - i
    if frac == 0 or i + 1 >= v.size or v[i] == v[i + 1]:
        return float(v[min(i, v.size - 1)])
    a, b = float(v[i]), float(v[i + 1])
    if math.isinf(a) or math.isinf(b):
        return b if math.isinf(b) else a
    return a + frac * (b - a)


def bootstrap(strata: int | Sequence[np.ndarray],
              statistic: Callable[[np.ndarray], Any], *, seed: int = 0,
              level: float = 0.95, n_resamples: int = 999, method: str = "percentile",
              label: str = "") -> tuple[BootstrapCI, ...]:
    """Seeded bootstrap intervals of ``statistic`` — the one resampling routine of the claims.

    ``strata``: a number of units ``n`` (one stratum ``0..n−1``) or a sequence of index
    arrays, each resampled with replacement within itself (runs within cells, seeds within
    an arm: the design is kept). ``statistic(idx)`` receives the unit indices of one resample
    (strata concatenated in order) and returns a number, a sequence of numbers (one interval
    each), or ``None``/NaN when the resample gives no value; ``±inf`` is a censored value;
    a :class:`Split` gives each end its own value (a value known only by where it reaches:
    ``−inf`` for the lower end and ``+inf`` for the upper when its direction is unknown).
    The estimate is ``statistic`` of every unit.

    ``method``: ``percentile``, or ``bca`` (bias-corrected and accelerated, the acceleration
    from the jackknife over units; it falls back to percentile, and says so, when undefined).
    Rule for every interval: at least :data:`MIN_VALID` resamples, and half of those asked
    for, must give a value; the interval is refused (``note``) when its ends coincide, and
    for one stratum of ``n`` units when a resample of one unit repeated is as likely as the
    tail it would cut (``n^−n ≥ (1 − level)/2``: two or three units at 95 %): its ends would
    be the sample's extremes, a range, not an interval at that level.
    Returns one :class:`BootstrapCI` per component of the statistic.
    """
    groups = [np.arange(int(strata))] if isinstance(strata, (int, np.integer)) else \
        [np.asarray(s, dtype=np.int64) for s in strata]
    groups = [g for g in groups if g.size]
    every = np.concatenate(groups) if groups else np.zeros(0, dtype=np.int64)
    est = _vector(statistic(every))
    k = est.size
    if method not in ("percentile", "bca"):
        raise ValueError(f"bootstrap: method {method!r} is not percentile or bca")
    name = f"{'BCa' if method == 'bca' else method}{' over ' + label if label else ''}"
    if every.size == 0 or all(g.size < 2 for g in groups):
        return tuple(BootstrapCI(_f(e), None, None, level, name, 0, 0, seed,
                                 "fewer than 2 units to resample") for e in est)
    if len(groups) == 1 and float(every.size) ** -every.size >= (1.0 - level) / 2:
        return tuple(BootstrapCI(_f(e), None, None, level, name, 0, 0, seed,
                                 f"{every.size} units: a {100 * level:g}% interval would "
                                 "be the sample's range") for e in est)
    rng = np.random.default_rng(seed)
    draws = np.full((n_resamples, k), np.nan)
    draws_hi = np.full((n_resamples, k), np.nan)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for b in range(n_resamples):
            pick = np.concatenate([g[rng.integers(0, g.size, g.size)] for g in groups])
            out = statistic(pick)
            lo_v, hi_v = ((_vector(out.low), _vector(out.high)) if isinstance(out, Split)
                          else (_vector(out),) * 2)
            if lo_v.size == k and hi_v.size == k:
                draws[b] = lo_v
                draws_hi[b] = hi_v
        jack = _jackknife(every, statistic, k) if method == "bca" else None
    need = max(MIN_VALID, math.ceil(n_resamples / 2))
    return tuple(_interval(float(est[j]), draws[:, j], None if jack is None else jack[:, j],
                           need=need, level=level, method=method, name=name, label=label,
                           n_resamples=n_resamples, seed=seed, col_hi=draws_hi[:, j])
                 for j in range(k))


def _interval(e: float, col: np.ndarray, jack: np.ndarray | None, *, need: int, level: float,
              method: str, name: str, label: str, n_resamples: int, seed: int,
              col_hi: np.ndarray | None = None) -> BootstrapCI:
    """One component's interval from its draws, under the one rule of :func:`bootstrap`.
    ``col`` serves the lower end and ``col_hi`` (default ``col``) the upper end: they differ
    where a resample's value is known only by its reach (:class:`Split`)."""
    hi_col = col if col_hi is None else col_hi
    ok = ~np.isnan(col) & ~np.isnan(hi_col)
    v = np.sort(col[ok])
    v_hi = np.sort(hi_col[ok])

    def refuse(note: str, used: str = name) -> BootstrapCI:
        return BootstrapCI(_f(e), None, None, level, used, n_resamples, int(v.size), seed,
                           note, distribution=col)

    if math.isnan(e):
        return refuse("no estimate")
    if n_resamples < need and n_resamples < MIN_VALID:
        return refuse(f"too few resamples were requested ({n_resamples}; an interval needs at "
                      f"least {MIN_VALID} that give a value): raise --n-resamples")
    if v.size < need:
        return refuse(f"only {v.size} of {n_resamples} resamples gave a value (need {need})")
    a = (1 - level) / 2
    qs, used = (a, 1 - a), name
    if method == "bca":
        split = bool(np.any(col[ok] != hi_col[ok]))
        qs_bca = None if split else _bca_levels(v, e, jack, a)
        if qs_bca is None:
            used = f"percentile{' over ' + label if label else ''} (BCa undefined)"
        else:
            qs = qs_bca
    lo, hi = _quantile(v, qs[0]), _quantile(v_hi, qs[1])
    if lo == hi:
        return refuse("the resamples have no spread at this level: no interval", used)
    return BootstrapCI(_f(e), None if math.isinf(lo) else lo, None if math.isinf(hi) else hi,
                       level, used, n_resamples, int(v.size), seed, None, bool(math.isinf(lo)),
                       bool(math.isinf(hi)), col)

#: How a :func:`range_bootstrap` interval is made (its ``method``, after the label).
RANGE_METHOD = "(of a range: its lower ends' low, its upper ends' high)"


def range_bootstrap(lows: np.ndarray, highs: np.ndarray,
                    statistic: Callable[[np.ndarray], float], *, seed: int = 0,
                    level: float = 0.95, n_resamples: int = 999, label: str = ""
                    ) -> BootstrapCI:
    """A seeded percentile interval of ``statistic`` over units whose values are known only
    as ranges: unit ``i`` lies in ``[lows[i], highs[i]]`` (``−inf``/``+inf`` for an end a
    censored unit leaves open). Units are resampled as by :func:`bootstrap` (the same draws
    for both ends); each resample's statistic is itself a range, ``statistic(lows[ix])`` to
    ``statistic(highs[ix])``, and the interval runs from the lower percentile of the lower
    ends to the upper percentile of the upper ends. For a statistic that never falls when a
    value rises (a mean, a median) every resample's true value lies in its range, so the
    interval holds the percentile interval of the true values wherever in its range each
    lies: it carries both the sampling and the ranges.

    ``estimate`` is None (the point is the range ``statistic(lows)`` to
    ``statistic(highs)``, not a value). An end reached by a censored value is unbounded
    (``low_unbounded``/``high_unbounded``). The rule of :func:`bootstrap` holds for the pair of
    ends: too few units or resamples, or ends that coincide, give no interval (``note``); an
    end whose own resamples do not spread (every one the same bound) is still an end."""
    lo_v = np.asarray(lows, dtype=float)
    hi_v = np.asarray(highs, dtype=float)
    c_lo, c_hi = bootstrap(lo_v.size, lambda ix: np.array([statistic(lo_v[ix]),
                                                           statistic(hi_v[ix])]),
                           seed=seed, level=level, n_resamples=n_resamples, label=label)
    name = f"percentile{' over ' + label if label else ''} {RANGE_METHOD}"

    def refuse(note: str | None, n_valid: int = 0) -> BootstrapCI:
        return BootstrapCI(None, None, None, level, name, c_lo.n_resamples, n_valid, seed,
                           note)

    d_lo, d_hi = c_lo.distribution, c_hi.distribution
    if d_lo is None or d_hi is None:  # refused before any draw (too few units)
        return refuse(c_lo.note or c_hi.note)
    ok = ~np.isnan(d_lo) & ~np.isnan(d_hi)
    n_valid = int(ok.sum())
    need = max(MIN_VALID, math.ceil(n_resamples / 2))
    if n_valid < need:
        return refuse(c_lo.note or c_hi.note
                      or f"only {n_valid} of {n_resamples} resamples gave a value (need {need})",
                      n_valid)
    a = (1 - level) / 2
    lo, hi = _quantile(np.sort(d_lo[ok]), a), _quantile(np.sort(d_hi[ok]), 1 - a)
    if lo == hi:
        return refuse("the resamples have no spread at this level: no interval", n_valid)
    return BootstrapCI(None, None if math.isinf(lo) else lo, None if math.isinf(hi) else hi,
                       level, name, n_resamples, n_valid, seed, None, bool(math.isinf(lo)),
                       bool(math.isinf(hi)))


def _vector(x: Any) -> np.ndarray:
    """A statistic's value as a vector; a :class:`Split` is a value only where its two ends
    agree (NaN elsewhere)."""
    if x is None:
        return np.array([np.nan])
    if isinstance(x, Split):
        lo, hi = _vector(x.low), _vector(x.high)
        if lo.size != hi.size:
            return np.array([np.nan])
        return np.where(lo == hi, lo, np.nan)
    v = np.atleast_1d(np.asarray(x, dtype=float)).ravel()
    return v


def _jackknife(units: np.ndarray, statistic: Callable[[np.ndarray], Any], k: int
               ) -> np.ndarray | None:
    """Leave-one-unit-out values of the statistic, ``(n, k)``."""
    n = units.size
    if n < 3:
        return None
    out = np.full((n, k), np.nan)
    for i in range(n):
        v = _vector(statistic(np.delete(units, i)))
        if v.size == k:
            out[i] = v
    return out


def _bca_levels(v: np.ndarray, est: float, jack: np.ndarray | None, a: float
                ) -> tuple[float, float] | None:
    """The BCa quantile levels ``Φ(z₀ + (z₀ + z)/(1 − â(z₀ + z)))`` for ``z = z_a, z_{1−a}``;
    None when z₀ or â is undefined (a constant sample, infinite values)."""
    if jack is None or not np.all(np.isfinite(jack)) or not np.all(np.isfinite(v)):
        return None
    frac = float(np.mean(v < est))
    if not 0 < frac < 1:
        return None
    z0 = float(stats.norm.ppf(frac))
    d = jack.mean() - jack
    den = 6.0 * float(np.sum(d ** 2)) ** 1.5
    if den == 0:
        return None
    acc = float(np.sum(d ** 3)) / den
    out = []
    for z in (stats.norm.ppf(a), stats.norm.ppf(1 - a)):
        t = z0 + z
        out.append(float(stats.norm.cdf(z0 + t / (1 - acc * t))))
    return out[0], out[1]


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


def poisson_binomial_tail(ps: np.ndarray, k: int) -> float:
    """``P(K ≥ k)`` for ``K`` a sum of independent Bernoulli(``ps``) (the exact distribution
    by convolution; a binomial tail when every ``p`` is the same)."""
    pmf = np.zeros(ps.size + 1)
    pmf[0] = 1.0
    for p in ps.tolist():
        nxt = pmf * (1.0 - p)
        nxt[1:] += pmf[:-1] * p
        pmf = nxt
    return float(min(1.0, max(0.0, pmf[k:].sum())))


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


# ------------------------------------------------------------------------------------------
# tests of signs and paired successes, power, correlation
# ------------------------------------------------------------------------------------------

def sign_test(signs: Sequence[int] | np.ndarray) -> TestResult:
    """The exact two-sided sign test: under the null each nonzero sign is +1 or −1 with
    probability ½. ``statistic`` is the number of positive signs; zeros are dropped (counted).
    It needs only the sign of each difference, so a censored pair whose bound excludes 0
    enters it exactly."""
    s = np.asarray(signs, dtype=float)
    nz = int(np.sum(s == 0))
    s = s[s != 0]
    n = int(s.size)
    if n == 0:
        return TestResult("sign_exact", None, None, 0, True, nz)
    k = int(np.sum(s > 0))
    p = float(stats.binomtest(k, n, 0.5, alternative="two-sided").pvalue)
    return TestResult("sign_exact", float(k), min(1.0, p), n, True, nz)


def mcnemar_exact(a: Sequence[bool] | np.ndarray, b: Sequence[bool] | np.ndarray
                  ) -> TestResult:
    """The exact one-sided McNemar test that ``a`` succeeds more often than ``b`` on the same
    units: among the discordant units (``a`` xor ``b``), ``P(X ≥ n_a | n_a + n_b, ½)``.
    ``statistic`` is ``n_a`` (units where only ``a`` succeeds); ``n`` the discordant units."""
    x = np.asarray(a, dtype=bool)
    y = np.asarray(b, dtype=bool)
    only_a = int(np.sum(x & ~y))
    only_b = int(np.sum(~x & y))
    n = only_a + only_b
    if n == 0:
        return TestResult("mcnemar_exact", 0.0, 1.0, 0, True)
    p = float(stats.binomtest(only_a, n, 0.5, alternative="greater").pvalue)
    return TestResult("mcnemar_exact", float(only_a), min(1.0, p), n, True)


def min_detectable_dz(n: int, alpha: float = 0.05, power: float = 0.8) -> float | None:
    """The smallest paired effect ``d_z = mean(d)/sd(d)`` that a two-sided paired t-test at
    ``alpha`` detects with probability ``power`` with ``n`` pairs (noncentral t with
    ``n − 1`` degrees of freedom, noncentrality ``d_z·√n``). None for ``n < 2``. The rank tests
    have nearly the same power for normal differences (efficiency 3/π ≈ 0.955)."""
    if n < 2:
        return None
    df = n - 1
    tc = float(stats.t.ppf(1 - alpha / 2, df))

    def gap(d: float) -> float:
        nc = d * math.sqrt(n)
        return float(stats.nct.sf(tc, df, nc) + stats.nct.cdf(-tc, df, nc)) - power

    hi = 1.0
    g = gap(hi)
    while g < 0:
        hi *= 2
        g = gap(hi)
        if hi > 1e6:
            return None
    if math.isnan(g) or math.isnan(gap(0.0)):
        return None  # the noncentral t is not computable there (one degree of freedom)
    try:
        return float(optimize.brentq(gap, 0.0, hi, xtol=1e-6))
    except ValueError:  # NaN inside the bracket: no detectable effect can be stated
        return None


def sign_test_power(n: int, q: float, alpha: float = 0.05) -> float:
    """The probability that the exact two-sided sign test (:func:`sign_test`) on ``n`` nonzero
    differences gives ``p < alpha`` when each difference is positive with probability ``q``:
    ``Σ_{k ∈ R} C(n, k) qᵏ (1 − q)ⁿ⁻ᵏ`` over the rejection set ``R`` of the test."""
    if n < 1:
        return 0.0
    ks = [k for k in range(n + 1)
          if float(stats.binomtest(k, n, 0.5, alternative="two-sided").pvalue) < alpha]
    return float(sum(stats.binom.pmf(k, n, q) for k in ks))


def min_detectable_dz_sign(n: int, alpha: float = 0.05, power: float = 0.8) -> float | None:
    """The smallest paired effect ``d_z`` that the exact two-sided sign test at ``alpha``
    detects with probability ``power`` from ``n`` nonzero differences, for normal differences
    (a difference is positive with probability ``Φ(d_z)``). None when no effect reaches that
    power (too few pairs: the test can never reject, or only with less than ``power``)."""
    if n < 1 or sign_test_power(n, 1.0, alpha) < power:
        return None

    def gap(d: float) -> float:
        return sign_test_power(n, float(stats.norm.cdf(d)), alpha) - power

    hi = 1.0
    while gap(hi) < 0:
        hi *= 2
        if hi > 64:
            return None
    return float(optimize.brentq(gap, 0.0, hi, xtol=1e-6))


@dataclass(frozen=True)
class Correlation(Record):
    """Pearson's ``r`` over ``n`` pairs with its Fisher-z interval (None when ``n < 4`` or
    a side is constant)."""

    r: float | None
    low: float | None
    high: float | None
    n: int
    level: float


def pearson(x: np.ndarray, y: np.ndarray, level: float = 0.95) -> Correlation:
    """Pearson's ``r`` and the interval ``tanh(atanh r ± z/√(n − 3))``."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    n = int(x.size)
    if n < 3 or float(np.std(x)) == 0 or float(np.std(y)) == 0:
        return Correlation(None, None, None, n, level)
    r = float(np.corrcoef(x, y)[0, 1])
    if n < 4 or abs(r) >= 1:
        return Correlation(r, None, None, n, level)
    z = float(stats.norm.ppf(0.5 + level / 2))
    zr = math.atanh(r)
    h = z / math.sqrt(n - 3)
    return Correlation(r, math.tanh(zr - h), math.tanh(zr + h), n, level)
