"""The Weibull accelerated-failure-time model with exact, right- and interval-censored times,
fitted by maximum likelihood (scipy.optimize), and Harrell's concordance index.

Model: ``log T = xᵀβ + σ·W`` with ``W`` standard minimum-extreme-value, so
``S(t | x) = exp(−exp((log t − xᵀβ)/σ))``: a Weibull with scale ``exp(xᵀβ)`` and shape
``k = 1/σ`` (lifelines' ``WeibullAFTFitter`` uses the same parametrization: ``λ = exp(xᵀβ)``,
``ρ = 1/σ``). A run contributes

- an exact time ``t`` (``lower == upper``): ``log f(t) = z − eᶻ − log σ − log t``;
- a right-censored time (``upper = inf``): ``log S(L) = −e^{z_L}``;
- an interval ``(L, U]``: ``log(S(L) − S(U))`` (``S(0) = 1``: a left-censored time),

with ``z = (log t − xᵀβ)/σ``. The optimizer works on ``θ = (β, log σ)`` with the analytic
gradient; the covariance is the inverse of the observed information (the Hessian of the negative
log-likelihood, by central differences of the gradient); CIs are Wald intervals.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize, stats


@dataclass(frozen=True)
class AFTFit:
    """A fitted Weibull AFT model. Coefficients are on ``log T`` (``T`` in steps)."""

    names: tuple[str, ...]
    coef: tuple[float, ...]
    se: tuple[float | None, ...]
    ci_low: tuple[float | None, ...]
    ci_high: tuple[float | None, ...]
    sigma: float  #: scale of log T; the Weibull shape is ``1/sigma``
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

    @property
    def shape(self) -> float:
        """The Weibull shape ``k = 1/σ``."""
        return 1.0 / self.sigma

    def get(self, name: str) -> tuple[float, float | None, float | None]:
        i = self.names.index(name)
        return self.coef[i], self.ci_low[i], self.ci_high[i]

    def to_dict(self) -> dict[str, Any]:
        def f(x: float | None) -> float | None:
            return None if x is None or not math.isfinite(x) else float(x)

        return {
            "n": self.n, "n_exact": self.n_exact, "n_interval": self.n_interval,
            "n_right_censored": self.n_right, "level": self.level,
            "coefficients": [
                {"name": nm, "estimate": f(c), "se": f(s), "low": f(lo), "high": f(hi)}
                for nm, c, s, lo, hi in zip(self.names, self.coef, self.se, self.ci_low,
                                            self.ci_high)],
            "sigma": f(self.sigma), "sigma_ci": [f(v) for v in self.sigma_ci],
            "weibull_shape": f(self.shape), "loglik": f(self.loglik), "aic": f(self.aic),
            "concordance": f(self.concordance), "converged": self.converged,
        }


def _check(X: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> None:
    n = X.shape[0]
    if lower.shape != (n,) or upper.shape != (n,):
        raise ValueError("weibull_aft: X, lower and upper must have the same number of rows")
    if np.any(~np.isfinite(X)):
        raise ValueError("weibull_aft: X holds NaN or inf")
    if np.any(np.isnan(lower)) or np.any(np.isnan(upper)):
        raise ValueError("weibull_aft: lower/upper hold NaN; every row needs an interval")
    if np.any(lower < 0) or np.any(upper < lower):
        raise ValueError("weibull_aft: need 0 ≤ lower ≤ upper")
    if np.any(upper <= 0):
        raise ValueError("weibull_aft: upper must be > 0 (a time of 0 has no log)")


def _negll(theta: np.ndarray, X: np.ndarray, kinds: dict[str, Any]) -> tuple[float, np.ndarray]:
    """Negative log-likelihood and its gradient in ``θ = (β, log σ)``.

    A line search may probe absurd ``θ`` where a term underflows; the value is then ``inf``
    (the search backs off), so floating-point warnings are silenced here."""
    with np.errstate(all="ignore"):
        nll, grad = _negll_raw(theta, X, kinds)
    if not np.isfinite(nll) or not np.all(np.isfinite(grad)):
        return math.inf, np.zeros_like(theta)
    return nll, grad


def _negll_raw(theta: np.ndarray, X: np.ndarray, kinds: dict[str, Any]
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
        ez = np.exp(np.minimum(z, 700))
        ll += float(np.sum(z - ez - s - kinds["logt"][ex]))
        dz = 1 - ez
        g_mu[ex] = -dz / sigma
        g_s += float(np.sum(-dz * z - 1))
    rc = kinds["right"]
    if rc.any():
        z = (kinds["logL"][rc] - mu[rc]) / sigma
        ez = np.exp(np.minimum(z, 700))
        ll += float(np.sum(-ez))
        g_mu[rc] = ez / sigma
        g_s += float(np.sum(ez * z))
    lc = kinds["left"]  # (0, U]
    if lc.any():
        zu = (kinds["logU"][lc] - mu[lc]) / sigma
        ezu = np.exp(np.minimum(zu, 700))
        # log(1 − exp(−e^z)), stable for small and large e^z
        ll += float(np.sum(np.log(-np.expm1(-ezu))))
        dz = ezu * np.exp(-ezu) / -np.expm1(-ezu)  # d/dz log(1 − exp(−e^z))
        g_mu[lc] = -dz / sigma
        g_s += float(np.sum(-dz * zu))
    ic = kinds["interval"]
    if ic.any():
        zl = (kinds["logL"][ic] - mu[ic]) / sigma
        zu = (kinds["logU"][ic] - mu[ic]) / sigma
        el = np.exp(np.minimum(zl, 700))
        eu = np.exp(np.minimum(zu, 700))
        delta = el - eu  # < 0
        # log(S_L − S_U) = −e^{zL} + log(1 − e^{Δ})
        ll += float(np.sum(-el + np.log(-np.expm1(delta))))
        gp = np.exp(delta) / np.expm1(delta)  # d/dΔ log(1 − e^Δ)
        dzl = -el + gp * el
        dzu = -gp * eu
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


def _hessian(theta: np.ndarray, X: np.ndarray, kinds: dict[str, Any]) -> np.ndarray:
    k = theta.size
    H = np.zeros((k, k))
    for i in range(k):
        h = 1e-5 * max(1.0, abs(theta[i]))
        e = np.zeros(k)
        e[i] = h
        gp = _negll(theta + e, X, kinds)[1]
        gm = _negll(theta - e, X, kinds)[1]
        H[:, i] = (gp - gm) / (2 * h)
    out: np.ndarray = 0.5 * (H + H.T)
    return out


def weibull_aft(X: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                names: Sequence[str], level: float = 0.95, *, inference: bool = True) -> AFTFit:
    """Fit the Weibull AFT model by maximum likelihood.

    ``X``: ``(n, p)`` design matrix (include an intercept column yourself). ``lower``/``upper``:
    each run's time interval ``(lower, upper]`` in steps — ``lower == upper`` for an exact time,
    ``upper = inf`` for a right-censored one, ``lower = 0`` for a left-censored one.
    ``inference=False`` (inside a bootstrap) skips the Newton polish, the covariance and the
    concordance: only the point estimates are computed (to the optimizer's tolerance).
    Returns an :class:`AFTFit`; raises ``ValueError`` on malformed input.
    """
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
    s0 = math.log(max(float(np.std(resid)) * math.sqrt(6) / math.pi, 0.05))
    theta0 = np.concatenate((b0, [s0]))
    res = optimize.minimize(_negll, theta0, args=(X, kinds), jac=True, method="BFGS",
                            options={"gtol": 1e-9, "maxiter": 2000})
    theta = res.x
    if not inference:
        nll, g = _negll(theta, X, kinds)
        return AFTFit(
            names=tuple(names), coef=tuple(float(b) for b in theta[:p]), se=(None,) * p,
            ci_low=(None,) * p, ci_high=(None,) * p, sigma=math.exp(float(theta[p])),
            sigma_ci=(None, None), loglik=-float(nll), aic=2 * (p + 1) + 2 * float(nll),
            n=int(n), n_exact=int(kinds["exact"].sum()),
            n_interval=int(kinds["interval"].sum() + kinds["left"].sum()),
            n_right=int(kinds["right"].sum()), concordance=None,
            converged=bool(np.all(np.isfinite(theta)) and float(np.max(np.abs(g))) < 1e-3),
            level=level)
    # A few Newton steps polish the optimum so coefficients agree with other solvers to 1e-6.
    H = _hessian(theta, X, kinds)
    for _ in range(20):
        g = _negll(theta, X, kinds)[1]
        if float(np.max(np.abs(g))) < 1e-10:
            break
        try:
            step = np.linalg.solve(H, g)
        except np.linalg.LinAlgError:
            break
        t_new = theta - step
        if _negll(t_new, X, kinds)[0] > _negll(theta, X, kinds)[0] + 1e-12:
            break
        theta = t_new
        H = _hessian(theta, X, kinds)
    nll, g = _negll(theta, X, kinds)
    converged = bool(np.all(np.isfinite(theta)) and float(np.max(np.abs(g))) < 1e-4)
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
            lo[i] = float(beta[i] - z * sd[i])
            hi[i] = float(beta[i] + z * sd[i])
        sig_ci = (math.exp(s - z * sd[p]), math.exp(s + z * sd[p]))
    # Harrell's C on a point time per run: the logged step for events, the censoring step else.
    event = ~np.isinf(upper)
    t_point = np.where(event, upper, lower)
    c = harrell_c(t_point, X @ beta, event)
    return AFTFit(
        names=tuple(names), coef=tuple(float(b) for b in beta), se=tuple(se), ci_low=tuple(lo),
        ci_high=tuple(hi), sigma=math.exp(s), sigma_ci=sig_ci, loglik=-float(nll),
        aic=2 * (p + 1) + 2 * float(nll), n=int(n), n_exact=int(kinds["exact"].sum()),
        n_interval=int(kinds["interval"].sum() + kinds["left"].sum()),
        n_right=int(kinds["right"].sum()), concordance=c, converged=converged, level=level)


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
