"""``grokaudit transition``: phase boundaries (CLAIMS_SPEC, seed 001).

Per run a grok indicator. A run that never grokked is a non-grok only up to its budget: a run
whose last logged step falls before the median ``t_grok`` of its neighbours (the grokked runs of
its own and the adjacent levels) is ``INSUFFICIENT_BUDGET`` — left out of the fit, not counted as
a failure.

- Logistic fit ``P(grok) = 1/(1 + exp(−(a + b·ln λ)))`` by maximum likelihood (IRLS, with a
  tiny ridge ``10⁻⁶·b²`` so that perfectly separated levels still give a finite boundary) →
  transition point ``λ_c = exp(−a/b)``, with a seeded stratified bootstrap CI (runs resampled
  within levels).
- Above the transition (on the side where grokking happens), the time to grok
  ``T ∝ |λ − λ_c|^(−ν)``: OLS of ``ln T`` (cell medians) on ``ln|λ − λ_c|``, with ``ν``'s CI
  from the same bootstrap (``λ_c`` re-estimated in each resample).
- Phase labels per level: ``memorization`` (no run grokked), ``collapse`` (most grokked runs
  regress after grokking, or their attention heads end up identical), ``grokking`` otherwise.

``TOO_FEW_LEVELS`` when fewer than 4 levels in all, or fewer than 2 on either side of ``λ_c``,
bracket the transition (or fewer than 3 grokking levels carry the power law). Exponents are
empirical numbers with CIs; they are never matched to a universality class.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..clocks import pack
from ..config import AuditConfig
from ..reasons import Reason
from ..results import Finding
from ..schema import LogTable
from .results import ClaimResult, finding, make_result
from .runs import median_interval, py, require_columns, run_clocks
from .stats import BootstrapCI, wilson

RIDGE = 1e-6
MIN_LEVELS = 4
MIN_SIDE = 2
MIN_POWER_CELLS = 3
HEADS_IDENTICAL = 0.99


def logistic_fit(u: np.ndarray, y: np.ndarray, iters: int = 100) -> tuple[float, float] | None:
    """``(a, b)`` of the logistic regression of ``y`` on ``u`` (IRLS, ridge on ``b``).
    None when every ``y`` is the same (no transition in the data)."""
    if y.size == 0 or y.min() == y.max():
        return None
    X = np.column_stack((np.ones_like(u), u))
    beta = np.zeros(2)
    pen = np.diag([0.0, RIDGE])
    for _ in range(iters):
        eta = np.clip(X @ beta, -35, 35)
        p = 1 / (1 + np.exp(-eta))
        W = p * (1 - p)
        g = X.T @ (y - p) - pen @ beta
        H = (X * W[:, None]).T @ X + pen
        try:
            step = np.linalg.solve(H, g)
        except np.linalg.LinAlgError:
            return None
        beta = beta + step
        if np.max(np.abs(step)) < 1e-10:
            break
    return float(beta[0]), float(beta[1])


def _boundary(ab: tuple[float, float] | None) -> float | None:
    if ab is None or ab[1] == 0:
        return None
    return -ab[0] / ab[1]


def _power(levels: np.ndarray, medT: np.ndarray, u_c: float, b: float
           ) -> tuple[float, float, int] | None:
    """``(ν, c, n_cells)`` of ``ln T = c − ν ln|λ − λ_c|`` over the grokking side."""
    lam_c = math.exp(u_c)
    side = (levels > lam_c) if b > 0 else (levels < lam_c)
    ok = side & np.isfinite(medT)
    if ok.sum() < MIN_POWER_CELLS:
        return None
    d = np.log(np.abs(levels[ok] - lam_c))
    A = np.column_stack((np.ones_like(d), d))
    coef, *_ = np.linalg.lstsq(A, np.log(medT[ok]), rcond=None)
    return -float(coef[1]), float(coef[0]), int(ok.sum())


def _budget(f: pd.DataFrame, by: str, levels: np.ndarray) -> np.ndarray:
    """True for censored runs cut short before their neighbours' median time to grok."""
    lvl_idx = np.searchsorted(levels, f[by].to_numpy(dtype=float))
    grok = f["grokked"].to_numpy(dtype=bool)
    tg = f["tg_value"].to_numpy(dtype=float)
    last = f["last_step"].to_numpy(dtype=float)
    # per level: the median t_grok of the grokked runs of that level and its two neighbours
    near = np.abs(lvl_idx[None, :] - np.arange(levels.size)[:, None]) <= 1  # (levels, runs)
    pool = np.where(near & grok[None, :], tg[None, :], np.nan)
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            need = np.nanmedian(pool, axis=1)  # NaN when no neighbour grokked
    short: np.ndarray = ~grok & (last < np.nan_to_num(need[lvl_idx], nan=-np.inf))
    return short


def run_transition(table: pa.Table | pd.DataFrame | LogTable, config: AuditConfig, *, by: str,
                   level: float = 0.95, seed: int = 0, n_resamples: int = 499,
                   step_unit: str | None = None, source: str | None = None) -> ClaimResult:
    """Audit a phase-boundary claim along ``by`` (λ, positive); see the module docstring."""
    rc = run_clocks(table, config, source, step_unit)
    require_columns(rc, [by], "--by", positive=True)
    f = rc.frame
    levels = np.sort(f[by].unique().astype(float))
    short = _budget(f, by, levels)
    use = ~short
    lam = f[by].to_numpy(dtype=float)
    y = f["grokked"].to_numpy(dtype=float)
    u = np.log(lam)
    findings: list[Finding] = []
    if short.any():
        findings.append(finding(
            Reason.INSUFFICIENT_BUDGET, "run",
            f"{int(short.sum())} runs stopped before their neighbours' median time to grok: "
            "left out of the fit, not counted as failures",
            runs=sorted(f.loc[short, "run"]), evidence={"n_runs": int(short.sum())}))

    # -- per-level table and phase labels -----------------------------------------------------
    heads = None
    if "attn_head_cos" in rc.log.series:
        P = pack(rc.log.series["attn_head_cos"], rc.log)
        heads = P.values[np.arange(len(f)), np.maximum(P.counts - 1, 0)]
    cells = []
    medT = np.full(levels.size, np.nan)
    for j, lv in enumerate(levels):
        m = lam == lv
        mu_ = m & use
        k, n = int(y[mu_].sum()), int(mu_.sum())
        ml, mu, cens = median_interval(f.loc[m, "tg_lower"].to_numpy(),
                                       f.loc[m, "tg_upper"].to_numpy())
        medT[j] = math.inf if cens else mu
        g = m & (y == 1)
        regress = int((g & ~f["sustained"].to_numpy(dtype=bool)).sum())
        same_heads = int((g & (heads >= HEADS_IDENTICAL)).sum()) if heads is not None else 0
        if n == 0:
            phase = "undetermined"
        elif k == 0:
            phase = "memorization"
        elif 2 * regress > g.sum() or 2 * same_heads > g.sum():
            phase = "collapse"
        else:
            phase = "grokking"
        cells.append({"level": py(lv), "n_runs": int(m.sum()), "n_scored": n,
                      "n_insufficient_budget": int((m & short).sum()),
                      "grok_rate": wilson(k, n, level),
                      "median_t_grok": {"lower": ml, "upper": mu, "censored": cens},
                      "n_regressed": regress, "n_heads_identical": same_heads, "phase": phase})

    ab = logistic_fit(u[use], y[use])
    u_c = _boundary(ab)
    lam_c = math.exp(u_c) if u_c is not None and abs(u_c) < 700 else None
    boot_c = boot_nu = None
    power = None
    side_counts = None
    if lam_c is None:
        findings.append(finding(
            Reason.NO_TRANSITION, "study",
            "every scored run is on the same side (all grok or none): no transition point",
            evidence={"n_scored": int(use.sum()), "n_grokked": int(y[use].sum())}))
    else:
        assert ab is not None and u_c is not None
        below = int(np.sum(levels < lam_c))
        above = int(np.sum(levels > lam_c))
        side_counts = {"below": below, "above": above}
        if levels.size < MIN_LEVELS or min(below, above) < MIN_SIDE:
            findings.append(finding(
                Reason.TOO_FEW_LEVELS, "study",
                f"{levels.size} levels, {below} below and {above} above λ_c: the transition is "
                f"not bracketed (need ≥ {MIN_LEVELS}, ≥ {MIN_SIDE} per side)",
                evidence={"n_levels": int(levels.size), "below": below, "above": above,
                          "what": "transition"}))
        power = _power(levels, medT, u_c, ab[1])
        if power is None:
            findings.append(finding(
                Reason.TOO_FEW_LEVELS, "study",
                f"fewer than {MIN_POWER_CELLS} grokking levels with an uncensored median: no "
                "power law", evidence={"what": "power_law", "needed": MIN_POWER_CELLS}))
        # stratified bootstrap of λ_c and ν
        rng = np.random.default_rng(seed)
        idx_by_level = [np.flatnonzero((lam == lv) & use) for lv in levels]
        all_by_level = [np.flatnonzero(lam == lv) for lv in levels]
        up = f["tg_upper"].to_numpy(dtype=float)
        cs = np.full(n_resamples, np.nan)
        nus = np.full(n_resamples, np.nan)
        for b in range(n_resamples):
            pick = np.concatenate([rng.choice(ix, ix.size) for ix in idx_by_level if ix.size])
            abb = logistic_fit(u[pick], y[pick])
            ucb = _boundary(abb)
            if ucb is None or abs(ucb) > 700:
                continue
            cs[b] = math.exp(ucb)
            if power is not None and abb is not None:
                med_b = np.array([np.median(up[rng.choice(ix, ix.size)]) if ix.size else np.nan
                                  for ix in all_by_level])
                pw = _power(levels, med_b, ucb, abb[1])
                if pw is not None:
                    nus[b] = pw[0]
        a = (1 - level) / 2

        def ci(est: float | None, vals: np.ndarray) -> BootstrapCI:
            good = vals[np.isfinite(vals)]
            if good.size < 10:
                return BootstrapCI(est, None, None, level, "percentile (stratified)",
                                   n_resamples, seed, vals)
            return BootstrapCI(est, float(np.quantile(good, a)), float(np.quantile(good, 1 - a)),
                               level, "percentile (stratified)", n_resamples, seed, vals)

        boot_c = ci(lam_c, cs)
        boot_nu = ci(power[0] if power else None, nus) if power else None
    body: dict[str, Any] = {
        "step_unit": rc.step_unit,
        "by": by,
        "levels": cells,
        "logistic": None if ab is None else {"intercept": ab[0], "slope_log_lambda": ab[1]},
        "lambda_c": lam_c,
        "lambda_c_ci": boot_c,
        "levels_each_side": side_counts,
        "power_law": None if power is None else {
            "nu": power[0], "log_prefactor": power[1], "n_cells": power[2], "nu_ci": boot_nu},
        "note": "exponents are empirical, with CIs; no universality class is implied",
    }
    params = {"by": by, "level": level, "seed": seed, "n_resamples": n_resamples,
              "step_unit": rc.step_unit}
    return make_result("transition", params=params, config=config.to_dict(),
                       input=rc.log.summary.to_dict(), body=body, findings=findings,
                       fail_on=config.fail_on)
