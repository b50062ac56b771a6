"""Accelerated-failure-time models with exact, right- and interval-censored times, fitted by
maximum likelihood (scipy.optimize), with three error families, and Harrell's concordance.

Model: ``log T = xᵀβ + σ·W`` with ``W`` a standard error of the family:

- ``weibull``: minimum-extreme-value, ``S_W(z) = exp(−eᶻ)`` — a Weibull with scale ``exp(xᵀβ)``
  and shape ``k = 1/σ`` (lifelines' ``WeibullAFTFitter``: ``λ = exp(xᵀβ)``, ``ρ = 1/σ``);
- ``lognormal``: standard normal, ``S_W(z) = 1 − Φ(z)``;
- ``loglogistic``: standard logistic, ``S_W(z) = 1/(1 + eᶻ)`` (shape ``1/σ``).

A run contributes, with ``z = (log t − xᵀβ)/σ`` and ``f_W`` the density of ``W``,

- an exact time ``t`` (``lower == upper``): ``log f_W(z) − log σ − log t``;
- a right-censored time (``upper = inf``): ``log S_W(z_L)``;
- an interval ``(L, U]``: ``log(S_W(z_L) − S_W(z_U))`` (``S(0) = 1``: a left-censored time).

The optimizer works on ``θ = (β, log σ)`` with the analytic gradient; the covariance is the
inverse of the observed information (the Hessian of the negative log-likelihood, by central
differences of the gradient); CIs are Wald intervals. The likelihoods of the three families are
on the same scale, so their AICs compare (:func:`fit_families`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize, special, stats

from .results import Record

FAMILIES = ("weibull", "lognormal", "loglogistic")
#: The standard deviation of each family's W (for the starting value of σ).
_SD_W = {"weibull": math.pi / math.sqrt(6), "lognormal": 1.0, "loglogistic": math.pi / math.sqrt(3)}


@dataclass(frozen=True)
class AFTFit(Record):
    """A fitted AFT model. Coefficients are on ``log T`` (``T`` in the log's step unit)."""

    family: str
    names: tuple[str, ...]
    coef: tuple[float, ...]
    se: tuple[float | None, ...]
    ci_low: tuple[float | None, ...]
    ci_high: tuple[float | None, ...]
    sigma: float  #: scale of log T; the Weibull and log-logistic shape is ``1/sigma``
    sigma_ci: tuple[float | None, float | None]
    loglik: float
    aic: float
    n: int
    n_exact: int
    n_interval: int
    n_right: int
    concordance: float | None
    converged: bool
    level: float
    #: the families within :data:`NEAR_AIC` of this one's AIC whose profile sets its
    #: coefficient intervals also span (``fit_families``)
    near_families: tuple[str, ...] = ()

    @property
    def shape(self) -> float:
        """``1/σ``: the Weibull (or log-logistic) shape."""
        return 1.0 / self.sigma

    def get(self, name: str) -> tuple[float, float | None, float | None]:
        i = self.names.index(name)
        return self.coef[i], self.ci_low[i], self.ci_high[i]

    def to_dict(self) -> dict[str, Any]:
        def f(x: float | None) -> float | None:
            return None if x is None or not math.isfinite(x) else float(x)

        return {
            "family": self.family, "n": self.n, "n_exact": self.n_exact,
            "n_interval": self.n_interval, "n_right_censored": self.n_right,
            "level": self.level,
            "coefficients": [
                {"name": nm, "estimate": f(c), "se": f(s), "low": f(lo), "high": f(hi)}
                for nm, c, s, lo, hi in zip(self.names, self.coef, self.se, self.ci_low,
                                            self.ci_high)],
            "sigma": f(self.sigma), "sigma_ci": [f(v) for v in self.sigma_ci],
            "shape": f(self.shape) if self.family != "lognormal" else None,
            "loglik": f(self.loglik), "aic": f(self.aic),
            "concordance": f(self.concordance), "converged": self.converged,
            "near_families": list(self.near_families),
        }


def _arr(x: Any) -> np.ndarray:
    out: np.ndarray = np.asarray(x, dtype=float)
    return out


def _log_f(fam: str, z: np.ndarray) -> np.ndarray:
    """log density of W."""
    if fam == "weibull":
        return _arr(z - np.exp(np.minimum(z, 700)))
    if fam == "lognormal":
        return _arr(-0.5 * z * z - 0.5 * math.log(2 * math.pi))
    return _arr(z - 2 * np.logaddexp(0, z))


def _dlog_f(fam: str, z: np.ndarray) -> np.ndarray:
    """d/dz of the log density of W."""
    if fam == "weibull":
        return _arr(1 - np.exp(np.minimum(z, 700)))
    if fam == "lognormal":
        return _arr(-z)
    return _arr(-np.tanh(z / 2))


def _log_s(fam: str, z: np.ndarray) -> np.ndarray:
    """log survival of W."""
    if fam == "weibull":
        return _arr(-np.exp(np.minimum(z, 700)))
    if fam == "lognormal":
        return _arr(special.log_ndtr(-z))
    return _arr(-np.logaddexp(0, z))


def _log_cdf(fam: str, z: np.ndarray) -> np.ndarray:
    """log distribution function of W."""
    if fam == "weibull":
        return _arr(np.log(-np.expm1(-np.exp(np.minimum(z, 700)))))
    if fam == "lognormal":
        return _arr(special.log_ndtr(z))
    return _arr(-np.logaddexp(0, -z))


def _check(X: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> None:
    n = X.shape[0]
    if lower.shape != (n,) or upper.shape != (n,):
        raise ValueError("aft: X, lower and upper must have the same number of rows")
    if np.any(~np.isfinite(X)):
        raise ValueError("aft: X holds NaN or inf")
    if np.any(np.isnan(lower)) or np.any(np.isnan(upper)):
        raise ValueError("aft: lower/upper hold NaN; every row needs an interval")
    if np.any(lower < 0) or np.any(upper < lower):
        raise ValueError("aft: need 0 ≤ lower ≤ upper")
    if np.any(upper <= 0):
        raise ValueError("aft: upper must be > 0 (a time of 0 has no log)")


def _negll(theta: np.ndarray, X: np.ndarray, kinds: dict[str, Any], fam: str
           ) -> tuple[float, np.ndarray]:
    """Negative log-likelihood and its gradient in ``θ = (β, log σ)``.

    A line search may probe absurd ``θ`` where a term underflows; the value is then ``inf``
    (the search backs off), so floating-point warnings are silenced here."""
    with np.errstate(all="ignore"):
        nll, grad = _negll_raw(theta, X, kinds, fam)
    if not np.isfinite(nll) or not np.all(np.isfinite(grad)):
        return math.inf, np.zeros_like(theta)
    return nll, grad


def _negll_raw(theta: np.ndarray, X: np.ndarray, kinds: dict[str, Any], fam: str
               ) -> tuple[float, np.ndarray]:
    p = X.shape[1]
    beta, s = theta[:p], theta[p]
    sigma = math.exp(s)
    mu = X @ beta
    ll = 0.0
    g_mu = np.zeros_like(mu)  # dℓ/dμ per row
    g_s = 0.0

    ex = kinds["exact"]
    if ex.any():
        z = (kinds["logt"][ex] - mu[ex]) / sigma
        ll += float(np.sum(_log_f(fam, z) - s - kinds["logt"][ex]))
        dz = _dlog_f(fam, z)
        g_mu[ex] = -dz / sigma
        g_s += float(np.sum(-dz * z - 1))
    rc = kinds["right"]
    if rc.any():
        z = (kinds["logL"][rc] - mu[rc]) / sigma
        ls = _log_s(fam, z)
        ll += float(np.sum(ls))
        dz = -np.exp(_log_f(fam, z) - ls)  # d/dz log S = −hazard
        g_mu[rc] = -dz / sigma
        g_s += float(np.sum(-dz * z))
    lc = kinds["left"]  # (0, U]
    if lc.any():
        zu = (kinds["logU"][lc] - mu[lc]) / sigma
        lf = _log_cdf(fam, zu)
        ll += float(np.sum(lf))
        dz = np.exp(_log_f(fam, zu) - lf)
        g_mu[lc] = -dz / sigma
        g_s += float(np.sum(-dz * zu))
    ic = kinds["interval"]
    if ic.any():
        zl = (kinds["logL"][ic] - mu[ic]) / sigma
        zu = (kinds["logU"][ic] - mu[ic]) / sigma
        # log(S(zL) − S(zU)) = log(F(zU) − F(zL)), from the side with the smaller mass
        lsl, lsu = _log_s(fam, zl), _log_s(fam, zu)
        lfl, lfu = _log_cdf(fam, zl), _log_cdf(fam, zu)
        via_s = lsl + np.log(-np.expm1(lsu - lsl))
        via_f = lfu + np.log(-np.expm1(lfl - lfu))
        ld = np.where(lsl <= lfu, via_s, via_f)
        ll += float(np.sum(ld))
        dzl = -np.exp(_log_f(fam, zl) - ld)
        dzu = np.exp(_log_f(fam, zu) - ld)
        g_mu[ic] = -(dzl + dzu) / sigma
        g_s += float(np.sum(-dzl * zl - dzu * zu))
    grad = np.concatenate((X.T @ g_mu, [g_s]))
    return -ll, -grad


def _kinds(lower: np.ndarray, upper: np.ndarray) -> dict[str, Any]:
    exact = lower == upper
    right = np.isinf(upper)
    left = ~exact & ~right & (lower <= 0)
    interval = ~exact & ~right & ~left
    with np.errstate(divide="ignore"):
        return {
            "exact": exact, "right": right, "left": left, "interval": interval,
            "logt": np.where(exact, np.log(np.where(exact, upper, 1.0)), 0.0),
            "logL": np.where(lower > 0, np.log(np.where(lower > 0, lower, 1.0)), -np.inf),
            "logU": np.where(np.isfinite(upper), np.log(np.where(np.isfinite(upper), upper, 1.0)),
                             np.inf),
        }


def _hessian(theta: np.ndarray, X: np.ndarray, kinds: dict[str, Any], fam: str) -> np.ndarray:
    k = theta.size
    H = np.zeros((k, k))
    for i in range(k):
        h = 1e-5 * max(1.0, abs(theta[i]))
        e = np.zeros(k)
        e[i] = h
        gp = _negll(theta + e, X, kinds, fam)[1]
        gm = _negll(theta - e, X, kinds, fam)[1]
        H[:, i] = (gp - gm) / (2 * h)
    out: np.ndarray = 0.5 * (H + H.T)
    return out


def aft(X: np.ndarray, lower: np.ndarray, upper: np.ndarray, names: Sequence[str],
        level: float = 0.95, *, family: str = "weibull", inference: bool = True,
        profile: bool = True) -> AFTFit:
    """Fit an AFT model of ``family`` (:data:`FAMILIES`) by maximum likelihood.

    ``X``: ``(n, p)`` design matrix (include an intercept column yourself). ``lower``/``upper``:
    each run's time interval ``(lower, upper]`` — ``lower == upper`` for an exact time,
    ``upper = inf`` for a right-censored one, ``lower = 0`` for a left-censored one.
    ``inference=False`` (inside a bootstrap) skips the Newton polish, the covariance and the
    concordance: only the point estimates are computed (to the optimizer's tolerance).
    ``profile``: the coefficients' intervals by the profile likelihood (else Wald's, for a
    fit whose intervals are not printed).
    Returns an :class:`AFTFit`; raises ``ValueError`` on malformed input.
    """
    if family not in FAMILIES:
        raise ValueError(f"aft: unknown family {family!r}; one of {FAMILIES}")
    X = np.asarray(X, dtype=float)
    lower = np.asarray(lower, dtype=float)
    upper = np.asarray(upper, dtype=float)
    _check(X, lower, upper)
    n, p = X.shape
    kinds = _kinds(lower, upper)
    # Start from OLS on log of a representative time (the upper bound, or the censoring time).
    rep = np.where(np.isinf(upper), lower, upper)
    rep = np.where(rep > 0, rep, 1.0)
    b0, *_ = np.linalg.lstsq(X, np.log(rep), rcond=None)
    resid = np.log(rep) - X @ b0
    s0 = math.log(max(float(np.std(resid)) / _SD_W[family], 0.05))
    theta0 = np.concatenate((b0, [s0]))
    res = optimize.minimize(_negll, theta0, args=(X, kinds, family), jac=True, method="BFGS",
                            options={"gtol": 1e-9, "maxiter": 2000})
    theta = res.x
    counts: dict[str, Any] = {"n": int(n), "n_exact": int(kinds["exact"].sum()),
              "n_interval": int(kinds["interval"].sum() + kinds["left"].sum()),
              "n_right": int(kinds["right"].sum())}
    if not inference:
        nll, g = _negll(theta, X, kinds, family)
        return AFTFit(
            family=family, names=tuple(names), coef=tuple(float(b) for b in theta[:p]),
            se=(None,) * p, ci_low=(None,) * p, ci_high=(None,) * p,
            sigma=math.exp(float(theta[p])), sigma_ci=(None, None), loglik=-float(nll),
            aic=2 * (p + 1) + 2 * float(nll), concordance=None,
            converged=bool(np.all(np.isfinite(theta)) and math.isfinite(nll)
                           and float(np.max(np.abs(g))) < 1e-3),
            level=level, **counts)
    # A few Newton steps polish the optimum so coefficients agree with other solvers to 1e-6.
    H = _hessian(theta, X, kinds, family)
    for _ in range(20):
        g = _negll(theta, X, kinds, family)[1]
        if float(np.max(np.abs(g))) < 1e-10:
            break
        try:
            step = np.linalg.solve(H, g)
        except np.linalg.LinAlgError:
            break
        t_new = theta - step
        if _negll(t_new, X, kinds, family)[0] > _negll(theta, X, kinds, family)[0] + 1e-12:
            break
        theta = t_new
        H = _hessian(theta, X, kinds, family)
    nll, g = _negll(theta, X, kinds, family)
    converged = bool(np.all(np.isfinite(theta)) and math.isfinite(nll)
                     and float(np.max(np.abs(g))) < 1e-4)
    z = float(stats.norm.ppf(0.5 + level / 2))
    try:
        cov = np.linalg.inv(H)
        var = np.diag(cov)
        ok = bool(np.all(np.isfinite(var)) and np.all(var > 0))
    except np.linalg.LinAlgError:
        ok = False
    beta, s = theta[:p], float(theta[p])
    se: list[float | None] = [None] * p
    lo: list[float | None] = [None] * p
    hi: list[float | None] = [None] * p
    sig_ci: tuple[float | None, float | None] = (None, None)
    if ok:
        sd = np.sqrt(var)
        for i in range(p):
            se[i] = float(sd[i])
        lo_s, hi_s = s - z * sd[p], s + z * sd[p]
        if abs(lo_s) < 700 and abs(hi_s) < 700:
            sig_ci = (math.exp(lo_s), math.exp(hi_s))
    if ok and not profile:
        for i in range(p):
            lo[i], hi[i] = float(beta[i] - z * sd[i]), float(beta[i] + z * sd[i])
    if converged and profile:
        # each coefficient's interval by the profile likelihood, not Wald's ±z·se: on a few
        # runs, with censoring, the likelihood is far from quadratic and Wald's interval
        # covers less than it says (88 % for a nominal 95 %, benchmarks/claims_coverage.py)
        for i in range(p):
            se_i = se[i]
            lo[i], hi[i] = profile_interval(theta, float(nll), i, X, kinds, family, level,
                                            None if se_i is None else float(se_i))
    # Harrell's C on a point time per run: the logged step for events, the censoring step else.
    event = ~np.isinf(upper)
    t_point = np.where(event, upper, lower)
    c = harrell_c(t_point, X @ beta, event)
    return AFTFit(
        family=family, names=tuple(names), coef=tuple(float(b) for b in beta), se=tuple(se),
        ci_low=tuple(lo), ci_high=tuple(hi), sigma=math.exp(s), sigma_ci=sig_ci,
        loglik=-float(nll), aic=2 * (p + 1) + 2 * float(nll), concordance=c,
        converged=converged, level=level, **counts)


#: the AIC difference within which another family's intervals are joined to the chosen one's
NEAR_AIC = 2.0

#: how far from the estimate, in multiples of its scale, a profile end is looked for before
#: it is called unbounded
_PROFILE_REACH = 2.0 ** 20


def profile_cut(level: float, n: int, k: int) -> float:
    """The drop in log-likelihood that bounds a profile set of one coefficient: half of
    ``F(1, n − k)``'s ``level`` quantile (``k`` parameters, σ included), χ²₁'s when
    ``n − k < 1``. On a few runs χ²₁'s cut (3.84) covered 91.5 % at a nominal 95 % (4 levels
    × 4 seeds); F's, like Student's t in place of z, widens it by what the runs do not tell
    (5.0 on 16 runs, 3 parameters), and tends to χ²₁'s as runs are added."""
    df = n - k
    q = stats.f.ppf(level, 1, df) if df >= 1 else stats.chi2.ppf(level, 1)
    return float(q) / 2.0


def profile_interval(theta: np.ndarray, nll_hat: float, j: int, X: np.ndarray,
                     kinds: dict[str, Any], fam: str, level: float, se: float | None
                     ) -> tuple[float | None, float | None]:
    """The profile-likelihood interval of coefficient ``j``: the values ``b`` where
    ``ℓ̂ − max ℓ(θ | θ_j = b) ≤`` :func:`profile_cut` (χ²₁(level)/2, F-calibrated on few runs), the other coefficients and log σ refitted at
    each ``b`` (σ may shrink towards 0: the profile then takes the likelihood's limit). An end
    the likelihood never drops below the cut within a wide reach is None (unbounded)."""
    from scipy.optimize import brentq, minimize

    crit = profile_cut(level, X.shape[0], theta.size)
    others = [k for k in range(theta.size) if k != j]
    warm = {1.0: theta[others].copy(), -1.0: theta[others].copy()}
    # the estimate's other coefficients with σ as fitted and wider: from a wider σ the
    # likelihood descends smoothly; near σ → 0 a gradient method can stall in a corner
    starts = []
    for widen in (0.0, 1.0, 3.0):
        st = theta[others].copy()
        st[-1] = theta[-1] + widen
        starts.append(st)

    def excess(b: float, side: float) -> float:
        def f(rest: np.ndarray) -> tuple[float, np.ndarray]:
            full = np.insert(rest, j, b)
            if not -30.0 <= full[-1] <= 30.0:  # log σ: a line search's absurd probe
                return math.inf, np.zeros_like(rest)
            v, g = _negll(full, X, kinds, fam)
            return v, np.delete(g, j)

        best: tuple[float, np.ndarray] | None = None
        # from the last point of this side and from the estimate (σ near 0, a warm start
        # alone can stall in a corner of the likelihood); the better of the two
        for start in (warm[side], *starts):
            r = minimize(f, start, jac=True, method="BFGS",
                         options={"maxiter": 500, "gtol": 1e-9})
            if np.all(np.isfinite(r.x)) and math.isfinite(float(r.fun)) and (
                    best is None or float(r.fun) < best[0]):
                best = (float(r.fun), r.x)
        if best is None:
            return 1e6  # no finite likelihood there: far outside the set
        warm[side] = best[1]
        return min(best[0] - nll_hat - crit, 1e6)

    b0 = float(theta[j])
    step0 = se if se is not None and math.isfinite(se) and se > 0 else \
        max(1e-3 * abs(b0), 1e-3)
    ends: list[float | None] = []
    for side in (-1.0, 1.0):
        warm[side] = theta[others].copy()
        inner, step = b0, step0
        end: float | None = None
        while step <= _PROFILE_REACH * step0:
            outer = b0 + side * step
            if excess(outer, side) > 0:
                try:
                    end = float(brentq(excess, min(inner, outer),
                                       max(inner, outer), args=(side,),
                                       xtol=1e-10 * max(1.0, abs(b0)), rtol=1e-10))
                except ValueError:  # no sign change after all (a flat stretch): not found
                    end = None
                break
            inner, step = outer, step * 2.0
        ends.append(end)
    return ends[0], ends[1]


def weibull_aft(X: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                names: Sequence[str], level: float = 0.95, *, inference: bool = True) -> AFTFit:
    """The Weibull AFT (:func:`aft` with ``family="weibull"``)."""
    return aft(X, lower, upper, names, level, family="weibull", inference=inference)


def fit_families(X: np.ndarray, lower: np.ndarray, upper: np.ndarray, names: Sequence[str],
                 level: float = 0.95) -> tuple[dict[str, AFTFit], str | None]:
    """Every family fitted to the same data, and the one with the smallest AIC among those
    that converged (None when none did). The chosen family's coefficient intervals are its
    profile-likelihood sets; the others' (not printed) Wald's."""
    fits = {fam: aft(X, lower, upper, names, level, family=fam, profile=False)
            for fam in FAMILIES}
    ok = [f for f in FAMILIES if fits[f].converged and math.isfinite(fits[f].aic)]
    best = min(ok, key=lambda f: fits[f].aic) if ok else None
    if best is not None:
        # the intervals printed are the chosen family's profile sets, joined with those of
        # every family within 2 of its AIC: the data do not tell those families apart, and the
        # choice is part of the estimate (the chosen family's set alone covered 92.8 % at a
        # nominal 95 % on 16 levels × 4 seeds, benchmarks/claims_coverage.py)
        fits[best] = aft(X, lower, upper, names, level, family=best)
        near = [f for f in ok if f != best and fits[f].aic - fits[best].aic <= NEAR_AIC]
        if near:
            lo, hi = list(fits[best].ci_low), list(fits[best].ci_high)
            for f in near:
                other = aft(X, lower, upper, names, level, family=f)
                for i in range(len(lo)):
                    lo[i] = _joined(lo[i], other.ci_low[i], min)
                    hi[i] = _joined(hi[i], other.ci_high[i], max)
            fits[best] = dataclasses.replace(fits[best], ci_low=tuple(lo), ci_high=tuple(hi),
                                             near_families=tuple(near))
    return fits, best


def _joined(a: float | None, b: float | None, pick: Any) -> float | None:
    """Two interval ends joined (``min`` for lower ends, ``max`` for upper): an unbounded
    end (None) stays unbounded."""
    return None if a is None or b is None else float(pick(a, b))


def harrell_c(times: np.ndarray, predicted: np.ndarray, event: np.ndarray) -> float | None:
    """Harrell's concordance index of ``predicted`` (larger = longer survival) with ``times``.

    A pair is comparable when the shorter time is an event (for equal times: exactly one of
    the two is an event, and the event counts as the shorter). It is concordant when the
    shorter time has the smaller prediction; tied predictions count ½. This is the convention of
    ``lifelines.utils.concordance_index``. Returns None when no pair is comparable.
    """
    t = np.asarray(times, dtype=float)
    pr = np.asarray(predicted, dtype=float)
    e = np.asarray(event, dtype=bool)
    ti, tj = t[:, None], t[None, :]
    ei, ej = e[:, None], e[None, :]
    # i is the "shorter" member of a comparable pair (i, j)
    shorter = ((ti < tj) & ei) | ((ti == tj) & ei & ~ej)
    if not shorter.any():
        return None
    pi, pj = pr[:, None], pr[None, :]
    conc = (pi < pj) & shorter
    tie = (pi == pj) & shorter
    return float((conc.sum() + 0.5 * tie.sum()) / shorter.sum())


def survival(fit: AFTFit, X: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``P(T > t | x)`` under a fitted AFT model, per row of ``X`` (``t`` in the log's unit;
    ``t ≤ 0`` has survival 1)."""
    eta = np.asarray(X, dtype=float) @ np.asarray(fit.coef, dtype=float)
    t = np.asarray(t, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (np.log(np.where(t > 0, t, np.nan)) - eta) / fit.sigma
    out: np.ndarray = np.where(t > 0, np.exp(_log_s(fit.family, z)), 1.0)
    return out


#: The median of each family's standard error W: ``S_W(m) = ½``.
_MEDIAN_W = {"weibull": math.log(math.log(2.0)), "lognormal": 0.0, "loglogistic": 0.0}


def median_time(fit: AFTFit, X: np.ndarray) -> np.ndarray:
    """The model's median ``T`` per row of ``X``: ``exp(xᵀβ + σ·median(W))``."""
    eta = np.asarray(X, dtype=float) @ np.asarray(fit.coef, dtype=float)
    with np.errstate(over="ignore"):
        out: np.ndarray = np.exp(eta + fit.sigma * _MEDIAN_W[fit.family])
    return out
