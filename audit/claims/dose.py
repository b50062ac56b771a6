"""``grokaudit dose``: dose–response laws and mediation (CLAIMS_SPEC, seed 000).

Per cell along the dose axis ``x`` (``--by rho``): the censoring-aware median ``t_grok`` (the
median of the runs' upper bounds — the logged steps of grokking, ``inf`` for a run that never
grokked — with the interval ``[median(L), median(U)]``) and a seeded bootstrap CI over seeds.
Cells whose median is censored cannot enter a fit (``MEDIAN_CENSORED``), nor can cells outside
``--fit-range`` (``OUTSIDE_FIT_RANGE``).

On the same response ``ln T`` and the same cells, three laws are fitted by least squares:

- exponential ``ln T = c + α·x``;
- power law ``ln T = c + β·ln x``;
- saddle-node ``T = A·|x₀ − x|^(−1/2)``, i.e. ``ln T = ln A − ½·ln|x₀ − x|`` with ``x₀`` beyond
  the fitted cells (on the side where ``T`` grows);

and compared by AICc (each has ``k = 3`` parameters, counting the residual variance). ΔAIC is
reported for every pair; ``MODELS_INDISTINGUISHABLE`` when the best beats the runner-up by less
than 2 — never call that a law. The winning law's key parameter (``α``, ``β`` or ``x₀``) gets a
seeded stratified bootstrap CI (seeds resampled within each cell).

Mediation (``--mediator``, ``--baseline``, ``--raised``, ``--sweep``): the recovery fraction
``(T₁ − T₂)/(T₁ − T₀)``, ``T₂`` read where the mediator equals its baseline value along the sweep
(linear interpolation; refused with ``MEDIATOR_OUT_OF_RANGE`` outside the swept range), with a
paired bootstrap over seeds; and the data-collapse check: ``R²`` of ``ln T`` on the mediator
alone, then with the dose added, and the increment.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from scipy import optimize

from ..config import AuditConfig
from ..errors import ErrorCode, LogFormatError
from ..reasons import Reason
from ..results import Finding
from ..schema import LogTable
from .results import ClaimResult, finding, make_result
from .runs import RunClocks, median_interval, py, require_columns, run_clocks
from .stats import BootstrapCI, aicc, bootstrap_ci, ols

MODELS = ("exponential", "power", "saddle_node")
KEY_PARAM = {"exponential": "alpha", "power": "beta", "saddle_node": "x0"}
K_PARAMS = 3


# ------------------------------------------------------------------------------------------
# the three laws
# ------------------------------------------------------------------------------------------

def _linear(u: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    A = np.column_stack((np.ones_like(u), u))
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    r = y - A @ coef
    return float(coef[0]), float(coef[1]), float(r @ r)


def _saddle(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float] | None:
    """Best ``(ln A, x₀, RSS)`` of ``y = ln A − ½ ln|x₀ − x|`` over both sides of the data."""
    span = float(x.max() - x.min()) or 1.0
    best = None
    for side in (1, -1):
        edge = x.max() if side > 0 else x.min()

        def rss(log_gap: float, side: int = side, edge: float = edge) -> float:
            x0 = edge + side * math.exp(log_gap)
            u = -0.5 * np.log(np.abs(x0 - x))
            a = float(np.mean(y - u))
            r = y - a - u
            return float(r @ r)

        res = optimize.minimize_scalar(rss, bounds=(math.log(1e-6 * span),
                                                    math.log(1e3 * span)), method="bounded",
                                       options={"xatol": 1e-10})
        x0 = edge + side * math.exp(res.x)
        u = -0.5 * np.log(np.abs(x0 - x))
        a = float(np.mean(y - u))
        cand = (a, float(x0), float(res.fun))
        if best is None or cand[2] < best[2]:
            best = cand
    return best


def fit_laws(x: np.ndarray, lnT: np.ndarray) -> dict[str, dict[str, Any]]:
    """Fit the three laws to ``(x, ln T)``; each entry has its parameters, RSS and AICc."""
    n = int(x.size)
    out: dict[str, dict[str, Any]] = {}
    c, a, r = _linear(x, lnT)
    out["exponential"] = {"params": {"c": c, "alpha": a}, "rss": r}
    if np.all(x > 0):
        c, b, r = _linear(np.log(x), lnT)
        out["power"] = {"params": {"c": c, "beta": b}, "rss": r}
    else:
        out["power"] = {"params": None, "rss": None, "refused": "x ≤ 0: ln x undefined"}
    s = _saddle(x, lnT) if n >= 3 else None
    out["saddle_node"] = ({"params": {"lnA": s[0], "x0": s[1]}, "rss": s[2]} if s else
                          {"params": None, "rss": None, "refused": "fewer than 3 cells"})
    for m in out.values():
        m["aicc"] = aicc(m["rss"], n, K_PARAMS) if m["rss"] is not None else None
    return out


def _key(fits: Mapping[str, Mapping[str, Any]], model: str) -> float:
    p = fits[model]["params"]
    return math.nan if p is None else float(p[KEY_PARAM[model]])


# ------------------------------------------------------------------------------------------
# cells
# ------------------------------------------------------------------------------------------

def _cell_table(rc: RunClocks, by: str, level: float, seed: int) -> list[dict[str, Any]]:
    out = []
    for xv, g in rc.frame.groupby(by, sort=True):
        ml, mu, cens = median_interval(g["tg_lower"].to_numpy(), g["tg_upper"].to_numpy())
        ups = g["tg_upper"].to_numpy(dtype=float)
        ci = bootstrap_ci(ups, np.median, seed=seed, level=level) if len(g) >= 2 else None
        out.append({"x": py(xv), "runs": sorted(g["run"].tolist()), "n_runs": len(g),
                    "n_grokked": int(g["grokked"].sum()),
                    "median_t_grok": None if cens else mu,
                    "median_interval": {"lower": ml, "upper": mu, "censored": cens},
                    "median_ci": ci, "uppers": ups})
    return out


def _boot_key(cells: list[dict[str, Any]], model: str, B: int, seed: int, level: float
              ) -> BootstrapCI:
    """Stratified percentile bootstrap of the winning law's key parameter (seeds resampled
    within each cell; a resample whose median is censored drops that cell)."""
    rng = np.random.default_rng(seed)
    x = np.array([c["x"] for c in cells], dtype=float)
    est = _key(fit_laws(x, np.log([c["median_t_grok"] for c in cells])), model)
    vals = np.full(B, np.nan)
    for b in range(B):
        med = np.array([np.median(rng.choice(c["uppers"], size=c["uppers"].size))
                        for c in cells])
        ok = np.isfinite(med)
        if ok.sum() < 3:
            continue
        vals[b] = _key(fit_laws(x[ok], np.log(med[ok])), model)
    good = vals[np.isfinite(vals)]
    a = (1 - level) / 2
    if good.size < 10:
        return BootstrapCI(est, None, None, level, "percentile (stratified)", B, seed, vals)
    return BootstrapCI(est, float(np.quantile(good, a)), float(np.quantile(good, 1 - a)), level,
                       "percentile (stratified)", B, seed, vals)


# ------------------------------------------------------------------------------------------
# mediation
# ------------------------------------------------------------------------------------------

def _match(f: pd.DataFrame, spec: Mapping[str, Any]) -> np.ndarray:
    m = np.ones(len(f), dtype=bool)
    for k, v in spec.items():
        col = f[k]
        if pd.api.types.is_numeric_dtype(col):
            m &= np.isclose(col.to_numpy(dtype=float), float(v))
        else:
            m &= (col.astype(str) == str(v)).to_numpy()
    return m


def _mediator_values(rc: RunClocks, mediator: str, source: str | None) -> np.ndarray:
    """Per run: the mediator condition, or the median of the mediator series up to t_grok
    (up to the log's end for a run that never grokked)."""
    if mediator in rc.log.conditions.columns:
        return rc.log.conditions[mediator].to_numpy(dtype=float)
    if mediator not in rc.log.series:
        raise LogFormatError(f"--mediator column {mediator!r} is neither a condition nor a "
                             "per-step column", path=source, column=mediator, code=ErrorCode.NOT_A_SERIES)
    from ..clocks import pack

    P = pack(rc.log.series[mediator], rc.log)
    tg = rc.frame["tg_upper"].to_numpy(dtype=float)
    use = P.valid & (P.steps <= tg[:, None])
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.nanmedian(np.where(use, P.values, np.nan), axis=1)


def _recovery(f: pd.DataFrame, med: np.ndarray, base: np.ndarray, raised: np.ndarray,
              sweep_rows: np.ndarray, sweep: str, w: np.ndarray) -> dict[str, Any]:
    """Recovery fraction from runs weighted by ``w`` (bootstrap multiplicities)."""
    up = f["tg_upper"].to_numpy(dtype=float)

    def wmed(mask: np.ndarray, v: np.ndarray) -> float:
        vals = np.repeat(v[mask], w[mask])
        return float(np.median(vals)) if vals.size else math.nan

    T0, T1, M0 = wmed(base, up), wmed(raised, up), wmed(base, med)
    pts = []
    for sv in sorted(f.loc[sweep_rows, sweep].unique()):
        m = sweep_rows & (f[sweep] == sv).to_numpy()
        pts.append((float(sv), wmed(m, med), wmed(m, up)))
    out: dict[str, Any] = {"T0": T0, "T1": T1, "M0": M0, "T2": None, "sweep_at": None,
                           "recovery": None, "sweep": pts}
    for (s1, m1, t1), (s2, m2, t2) in zip(pts, pts[1:]):
        if not (math.isfinite(m1) and math.isfinite(m2)):
            continue
        if (m1 - M0) * (m2 - M0) <= 0 and m1 != m2:
            if not (math.isfinite(t1) and math.isfinite(t2)):
                return out
            fr = (M0 - m1) / (m2 - m1)
            out["sweep_at"] = s1 + fr * (s2 - s1)
            out["T2"] = math.exp(math.log(t1) + fr * (math.log(t2) - math.log(t1)))
            break
    if out["T2"] is not None and math.isfinite(T0) and math.isfinite(T1) and T1 != T0:
        out["recovery"] = (T1 - out["T2"]) / (T1 - T0)
    return out


def _mediation(rc: RunClocks, mediator: str, baseline: Mapping[str, Any],
               raised: Mapping[str, Any], sweep: str, dose: str, level: float, seed: int,
               B: int, source: str | None) -> tuple[dict[str, Any], list[Finding]]:
    f = rc.frame
    require_columns(rc, list(baseline) + list(raised), "--baseline/--raised", numeric=False)
    require_columns(rc, [sweep], "--sweep")
    med = _mediator_values(rc, mediator, source)
    base = _match(f, baseline)
    rai = _match(f, raised)
    sweep_spec = {k: v for k, v in raised.items() if k != sweep}
    sweep_rows = _match(f, sweep_spec)
    if not base.any() or not rai.any():
        raise LogFormatError(f"--baseline {dict(baseline)} or --raised {dict(raised)} matches no "
                             "run", path=source, column="--baseline", code=ErrorCode.UNKNOWN_VALUE)
    findings: list[Finding] = []
    w = np.ones(len(f), dtype=np.int64)
    est = _recovery(f, med, base, rai, sweep_rows, sweep, w)
    ci = None
    if est["recovery"] is None:
        findings.append(finding(
            Reason.MEDIATOR_OUT_OF_RANGE, "study",
            f"the mediator's baseline value is not reached along the {sweep} sweep (or T is "
            "censored there): T₂ cannot be read",
            evidence={"M0": est["M0"], "sweep": est["sweep"]}))
    elif "seed" in f.columns:
        rng = np.random.default_rng(seed)
        seeds = np.array(sorted(f["seed"].unique(), key=str), dtype=object)
        sidx = pd.Index(seeds).get_indexer(f["seed"])
        vals = np.full(B, np.nan)
        for b in range(B):
            draw = rng.integers(0, seeds.size, seeds.size)
            cnt = np.bincount(draw, minlength=seeds.size)
            r = _recovery(f, med, base, rai, sweep_rows, sweep, cnt[sidx])["recovery"]
            vals[b] = np.nan if r is None else r
        good = vals[np.isfinite(vals)]
        a = (1 - level) / 2
        ci = BootstrapCI(est["recovery"], float(np.quantile(good, a)) if good.size >= 10 else None,
                         float(np.quantile(good, 1 - a)) if good.size >= 10 else None, level,
                         "percentile (paired over seeds)", B, seed, vals)
    # data collapse: ln T on the mediator, then with the dose
    used = (base | rai | sweep_rows) & f["grokked"].to_numpy() & np.isfinite(med)
    y = np.log(f.loc[used, "tg_value"].to_numpy(dtype=float))
    collapse: dict[str, Any] = {"n_runs": int(used.sum()), "r2_mediator": None,
                                "r2_mediator_dose": None, "increment": None}
    if used.sum() >= 4 and dose in f.columns:
        m = med[used]
        d = f.loc[used, dose].to_numpy(dtype=float)
        f1 = ols(np.column_stack((np.ones_like(m), m)), y, ["intercept", mediator])
        f2 = ols(np.column_stack((np.ones_like(m), m, d)), y, ["intercept", mediator, dose])
        collapse.update(r2_mediator=f1.r2, r2_mediator_dose=f2.r2,
                        increment=(None if f1.r2 is None or f2.r2 is None else f2.r2 - f1.r2))
    return {"mediator": mediator, "baseline": dict(baseline), "raised": dict(raised),
            "sweep": sweep, **{k: v for k, v in est.items() if k != "sweep"},
            "sweep_points": [{"value": s, "mediator_median": m, "t_grok_median": t}
                             for s, m, t in est["sweep"]],
            "recovery_ci": ci, "collapse": collapse}, findings


# ------------------------------------------------------------------------------------------
# the command
# ------------------------------------------------------------------------------------------

def run_dose(table: pa.Table | pd.DataFrame | LogTable, config: AuditConfig, *, by: str,
             fit_range: tuple[float, float] | None = None, level: float = 0.95, seed: int = 0,
             n_resamples: int = 999, mediator: str | None = None,
             baseline: Mapping[str, Any] | None = None,
             raised: Mapping[str, Any] | None = None, sweep: str | None = None,
             step_unit: str | None = None, source: str | None = None) -> ClaimResult:
    """Audit a dose–response law along ``by`` (and, optionally, a mediation claim)."""
    rc = run_clocks(table, config, source, step_unit)
    require_columns(rc, [by], "--by")
    f = rc.frame
    findings: list[Finding] = []
    mediation = None
    if mediator is not None:
        if not (baseline and raised and sweep):
            raise LogFormatError("mediation needs --baseline, --raised and --sweep with "
                                 "--mediator", path=source, column="--mediator", code=ErrorCode.INVALID_OPTION)
        mediation, mf = _mediation(rc, mediator, baseline, raised, sweep, by, level, seed,
                                   min(n_resamples, 499), source)
        findings.extend(mf)
        # the dose-response law is read on the dose axis with the other conditions at baseline
        others = {k: v for k, v in baseline.items() if k != by}
        keep = _match(f, others)
        rc = RunClocks(rc.log, rc.acc, f[keep].reset_index(drop=True), rc.step_unit)
    cells = _cell_table(rc, by, level, seed)
    censored = [c for c in cells if c["median_t_grok"] is None]
    if censored:
        findings.append(finding(
            Reason.MEDIAN_CENSORED, "cell",
            f"{len(censored)} cells have a censored median t_grok: left out of every fit",
            runs=[r for c in censored for r in c["runs"]],
            evidence={"cells": [c["x"] for c in censored]}))
    outside = []
    if fit_range is not None:
        lo, hi = fit_range
        outside = [c for c in cells if not (lo <= c["x"] <= hi)]
        if outside:
            findings.append(finding(
                Reason.OUTSIDE_FIT_RANGE, "cell",
                f"{len(outside)} cells lie outside the fit range [{lo:g}, {hi:g}]",
                evidence={"cells": [c["x"] for c in outside], "fit_range": [lo, hi]}))
    fit_cells = [c for c in cells if c["median_t_grok"] is not None and c not in outside]
    x = np.array([c["x"] for c in fit_cells], dtype=float)
    lnT = np.log([max(c["median_t_grok"], 1.0) for c in fit_cells]) if fit_cells else \
        np.array([])
    fits: dict[str, dict[str, Any]] = {}
    delta: list[dict[str, Any]] = []
    best = runner = None
    slope_ci = None
    if len(fit_cells) >= 3:
        fits = fit_laws(x, lnT)
    scored = sorted((m for m in MODELS if fits.get(m, {}).get("aicc") is not None),
                    key=lambda m: fits[m]["aicc"])
    if len(scored) < 2:
        findings.append(finding(
            Reason.TOO_FEW_CELLS, "study",
            f"{len(fit_cells)} cells in the fit: AICc needs at least {K_PARAMS + 2} to compare "
            "three-parameter laws",
            evidence={"n_cells": len(fit_cells), "needed": K_PARAMS + 2}))
    else:
        for a, b in itertools.combinations(MODELS, 2):
            if fits[a].get("aicc") is not None and fits[b].get("aicc") is not None:
                delta.append({"models": [a, b], "delta_aicc": fits[a]["aicc"] - fits[b]["aicc"]})
        best, runner = scored[0], scored[1]
        gap = fits[runner]["aicc"] - fits[best]["aicc"]
        if gap < 2:
            findings.append(finding(
                Reason.MODELS_INDISTINGUISHABLE, "study",
                f"{best} beats {runner} by ΔAICc = {gap:.2f} < 2: no law is identified",
                evidence={"best": best, "runner_up": runner, "delta_aicc": gap,
                          "n_cells": len(fit_cells)}))
        slope_ci = _boot_key(fit_cells, best, n_resamples, seed, level)
    body = {
        "step_unit": rc.step_unit,
        "by": by,
        "cells": [{k: v for k, v in c.items() if k != "uppers"} for c in cells],
        "fit_range": list(fit_range) if fit_range else None,
        "fit_cells": [c["x"] for c in fit_cells],
        "fits": {m: {k: v for k, v in fits[m].items()} for m in MODELS if m in fits},
        "delta_aicc": delta,
        "best": best, "runner_up": runner,
        "identified": bool(best and not any(fd.code is Reason.MODELS_INDISTINGUISHABLE
                                            for fd in findings)),
        "key_parameter": {"name": KEY_PARAM[best], "ci": slope_ci} if best else None,
        "mediation": mediation,
    }
    params = {"by": by, "fit_range": list(fit_range) if fit_range else None, "level": level,
              "seed": seed, "n_resamples": n_resamples, "mediator": mediator,
              "baseline": dict(baseline or {}), "raised": dict(raised or {}), "sweep": sweep,
              "step_unit": rc.step_unit}
    return make_result("dose", params=params, config=config.to_dict(),
                       input=rc.log.summary.to_dict(), body=body, findings=findings,
                       fail_on=config.fail_on)
