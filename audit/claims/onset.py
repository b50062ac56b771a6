"""``grokaudit onset``: when does a run generalize, and what controls it (CLAIMS_SPEC, seed 003).

Per run ``t_mem``, ``t_grok`` and ``gap = t_grok − t_mem``, censored honestly; per cell the grok
rate with a Wilson interval; a phase map over two axes; and the scaling of ``log t_grok`` on the
log of the chosen hyperparameters fitted two ways, side by side:

1. as papers do — OLS on the runs that grokked (R², leave-one-out R²);
2. as the log supports — a Weibull AFT that keeps every run (interval- and right-censored).

``SURVIVORSHIP_BIAS`` when the seeded bootstrap CI of ``exponent_OLS − exponent_AFT`` (runs
resampled within cells, both fits redone) excludes 0;
``THRESHOLD_SENSITIVE`` when an exponent's sign or a cell ordering changes with the grok
threshold.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..config import AuditConfig, replace
from ..errors import ErrorCode, LogFormatError
from ..reasons import Reason
from ..results import Finding, Interval
from ..schema import LogTable
from .results import ClaimResult, finding, make_result
from .runs import RunClocks, median_interval, py, require_columns, run_clocks
from .stats import BootstrapCI, LinearFit, ols, wilson
from .survival import AFTFit, weibull_aft


def _design(frame: pd.DataFrame, by: Sequence[str], interactions: bool
            ) -> tuple[np.ndarray, list[str]]:
    """Intercept, ``log(col)`` for each column, and optionally every pairwise product."""
    cols = [np.ones(len(frame))]
    names = ["intercept"]
    logs = {c: np.log(frame[c].to_numpy(dtype=float)) for c in by}
    for c in by:
        cols.append(logs[c])
        names.append(f"log_{c}")
    if interactions:
        for a, b in itertools.combinations(by, 2):
            cols.append(logs[a] * logs[b])
            names.append(f"log_{a}:log_{b}")
    return np.column_stack(cols), names


def _aft_bounds(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each run's ``(lower, upper]`` for the AFT. A grok seen at step 0 is read as (0, 1]."""
    lo = frame["tg_lower"].to_numpy(dtype=float)
    up = frame["tg_upper"].to_numpy(dtype=float)
    up = np.where(up <= 0, 1.0, up)
    lo = np.minimum(np.maximum(lo, 0.0), up)
    return lo, up


def _fits(frame: pd.DataFrame, by: Sequence[str], interactions: bool, level: float
          ) -> tuple[LinearFit | None, AFTFit | None, list[str], Reason | None, Reason | None]:
    X, names = _design(frame, by, interactions)
    p = X.shape[1]
    g = frame["grokked"].to_numpy(dtype=bool)
    ols_fit: LinearFit | None = None
    ols_why: Reason | None = None
    if int(g.sum()) > p + 1 and np.linalg.matrix_rank(X[g]) == p:
        ols_fit = ols(X[g], np.log(np.maximum(frame["tg_value"].to_numpy(dtype=float)[g], 1.0)),
                      names, level)
    else:
        ols_why = Reason.TOO_FEW_RUNS
    aft_fit: AFTFit | None = None
    aft_why: Reason | None = None
    if len(frame) <= p + 1 or np.linalg.matrix_rank(X) < p:
        aft_why = Reason.TOO_FEW_RUNS
    elif not g.any():
        aft_why = Reason.FIT_FAILED  # every run censored: only a lower bound, no scaling
    else:
        lo, up = _aft_bounds(frame)
        aft_fit = weibull_aft(X, lo, up, names, level)
        if not aft_fit.converged:
            aft_why = Reason.FIT_FAILED
    return ols_fit, aft_fit, names, ols_why, aft_why


def _bootstrap_difference(frame: pd.DataFrame, by: Sequence[str], interactions: bool,
                          names: Sequence[str], level: float, seed: int, B: int
                          ) -> dict[str, BootstrapCI]:
    """Seeded percentile bootstrap of ``exponent_OLS − exponent_AFT`` per term: runs resampled
    within cells (the design is kept), both fits redone on each resample."""
    rng = np.random.default_rng(seed)
    X, _ = _design(frame, by, interactions)
    p = X.shape[1]
    g = frame["grokked"].to_numpy(dtype=bool)
    y = np.log(np.maximum(frame["tg_value"].to_numpy(dtype=float), 1.0))
    lo, up = _aft_bounds(frame)
    groups = [np.asarray(ix) for ix in frame.groupby(list(by), sort=True).indices.values()]
    est_o = ols(X[g], y[g], names, level).coef
    est_a = weibull_aft(X, lo, up, names, level).coef
    vals = np.full((B, p), np.nan)
    for b in range(B):
        pick = np.concatenate([rng.choice(ix, ix.size) for ix in groups])
        gp = pick[g[pick]]
        if gp.size <= p + 1 or np.linalg.matrix_rank(X[gp]) < p or gp.size == 0:
            continue
        try:
            fa = weibull_aft(X[pick], lo[pick], up[pick], names, level, inference=False)
        except ValueError:
            continue
        if not fa.converged:
            continue
        co, *_ = np.linalg.lstsq(X[gp], y[gp], rcond=None)
        vals[b] = co - np.asarray(fa.coef)
    a = (1 - level) / 2
    out = {}
    for i, nm in enumerate(names):
        v = vals[:, i][np.isfinite(vals[:, i])]
        est = float(est_o[i] - est_a[i])
        if v.size < 20:
            out[nm] = BootstrapCI(est, None, None, level, "percentile (stratified)", B, seed)
        else:
            out[nm] = BootstrapCI(est, float(np.quantile(v, a)), float(np.quantile(v, 1 - a)),
                                  level, "percentile (stratified)", B, seed)
    return out


def _cells(rc: RunClocks, by: Sequence[str], level: float) -> list[dict[str, Any]]:
    f = rc.frame
    out = []
    for key, g in f.groupby(list(by), sort=True):
        key_t = key if isinstance(key, tuple) else (key,)
        n = len(g)
        k = int(g["grokked"].sum())
        ml, mu, cens = median_interval(g["tg_lower"].to_numpy(), g["tg_upper"].to_numpy())
        gap_lo = (g["tg_lower"] - g["tm_upper"]).to_numpy(dtype=float)
        gap_up = (g["tg_upper"] - g["tm_lower"]).to_numpy(dtype=float)
        have_gap = ~np.isnan(gap_lo)
        gl, gu, gc = median_interval(gap_lo[have_gap], gap_up[have_gap]) if have_gap.any() \
            else (math.nan, math.nan, True)
        out.append({
            "cell": {c: py(v) for c, v in zip(by, key_t)},
            "runs": sorted(g["run"].tolist()),
            "n_runs": n, "n_grokked": k,
            "grok_rate": wilson(k, n, level),
            "t_grok_median": {"lower": ml, "upper": mu, "censored": cens},
            "gap_median": {"lower": gl, "upper": gu, "censored": gc,
                           "n_runs": int(have_gap.sum())},
        })
    return out


def _pair_orders(cells: list[dict[str, Any]]) -> dict[tuple[int, int], int]:
    """+1 / −1 when two cells' median t_grok intervals are ordered, 0 when they overlap."""
    out: dict[tuple[int, int], int] = {}
    for i, j in itertools.combinations(range(len(cells)), 2):
        a, b = cells[i]["t_grok_median"], cells[j]["t_grok_median"]
        if a["upper"] <= b["lower"] and a["upper"] < b["upper"]:
            out[(i, j)] = 1
        elif b["upper"] <= a["lower"] and b["upper"] < a["upper"]:
            out[(i, j)] = -1
        else:
            out[(i, j)] = 0
    return out


def _phase_map(cells: list[dict[str, Any]], axes: Sequence[str]) -> dict[str, Any] | None:
    if len(axes) != 2:
        return None
    a, b = axes
    rows = []
    for c in cells:
        pr = c["grok_rate"]
        rows.append({a: c["cell"].get(a), b: c["cell"].get(b), "k": pr.k, "n": pr.n})
    df = pd.DataFrame(rows).groupby([a, b], sort=True)[["k", "n"]].sum().reset_index()
    return {"rows": a, "columns": b,
            "cells": [{a: py(r[a]), b: py(r[b]), "grok_rate": wilson(int(r["k"]), int(r["n"]))}
                      for r in df.to_dict("records")]}


def run_onset(table: pa.Table | pd.DataFrame | LogTable, config: AuditConfig, *,
              by: Sequence[str], interactions: bool = False,
              thresholds: Sequence[float] = (), phase_map: Sequence[str] = (),
              level: float = 0.95, seed: int = 0, n_resamples: int = 199,
              step_unit: str | None = None, source: str | None = None) -> ClaimResult:
    """Audit onset-scaling claims; see the module docstring. Times are in the log's step unit."""
    if not by:
        raise LogFormatError("onset needs --by COL[,COL] (the hyperparameters of the scaling "
                             "fit)", path=source, column="--by", code=ErrorCode.INVALID_OPTION)
    rc = run_clocks(table, config, source, step_unit)
    require_columns(rc, by, "--by", positive=True)
    f = rc.frame
    for c in by:
        if f[c].nunique() < 2:
            raise LogFormatError(f"--by column {c!r} has a single value ({f[c].iloc[0]!r}); a "
                                 "scaling fit needs it to vary", path=source, column=c, code=ErrorCode.NO_AXIS)
    axes = list(phase_map) or (list(by[:2]) if len(by) >= 2 else [])
    require_columns(rc, axes, "--map", numeric=False)
    findings: list[Finding] = []
    cells = _cells(rc, by, level)
    ols_fit, aft_fit, names, ols_why, aft_why = _fits(f, by, interactions, level)
    n_left_out = int((~f["grokked"]).sum())
    for why, which in ((ols_why, "ols"), (aft_why, "aft")):
        if why is not None:
            findings.append(finding(why, "study", f"the {which} scaling fit was refused",
                                    evidence={"fit": which, "n_runs": len(f),
                                              "n_grokked": int(f["grokked"].sum()),
                                              "n_parameters": len(names)}))

    # -- the two fits, exponent by exponent -----------------------------------------------
    comparison = []
    for nm in names[1:]:
        row: dict[str, Any] = {"term": nm, "ols": None, "aft": None, "difference": None,
                               "survivorship_bias": None}
        if ols_fit is not None:
            e, lo, hi = ols_fit.get(nm)
            row["ols"] = {"estimate": e, "low": lo, "high": hi}
        if aft_fit is not None and aft_why is None:
            e, lo, hi = aft_fit.get(nm)
            row["aft"] = {"estimate": e, "low": lo, "high": hi}
        comparison.append(row)
    if ols_fit is not None and aft_fit is not None and aft_why is None:
        diffs = _bootstrap_difference(f, by, interactions, names, level, seed, n_resamples)
        for row in comparison:
            ci = diffs[row["term"]]
            row["difference"] = ci
            if ci.low is None or ci.high is None:
                continue
            biased = not (ci.low <= 0.0 <= ci.high)
            row["survivorship_bias"] = biased
            if biased:
                findings.append(finding(
                    Reason.SURVIVORSHIP_BIAS, "study",
                    f"the exponent of {row['term']} fitted by OLS on grokked runs only differs "
                    f"from the censored AFT's beyond the {level:.0%} CI of the difference "
                    f"({n_left_out} censored runs left out of OLS)",
                    runs=f.loc[~f["grokked"], "run"].tolist(),
                    evidence={"term": row["term"], "ols": row["ols"], "aft": row["aft"],
                              "difference": ci, "n_left_out": n_left_out,
                              "n_runs": len(f)}))

    # -- threshold sensitivity --------------------------------------------------------------
    sens: list[dict[str, Any]] = []
    if thresholds:
        base_orders = None
        signs: dict[str, set[int]] = {nm: set() for nm in names[1:]}
        flips: list[dict[str, Any]] = []
        orders_by_t = {}
        for t in thresholds:
            rct = run_clocks(rc.log, replace(config, grok_threshold=float(t)), source,
                             rc.step_unit)
            cells_t = _cells(rct, by, level)
            _, aft_t, _, _, why_t = _fits(rct.frame, by, interactions, level)
            ex = {}
            if aft_t is not None and why_t is None:
                for nm in names[1:]:
                    e = aft_t.get(nm)[0]
                    ex[nm] = e
                    if e != 0:
                        signs[nm].add(1 if e > 0 else -1)
            orders_by_t[float(t)] = _pair_orders(cells_t)
            if base_orders is None:
                base_orders = orders_by_t[float(t)]
            sens.append({"grok_threshold": float(t), "aft_exponents": ex,
                         "n_grokked": int(rct.frame["grokked"].sum()),
                         "cells": [{"cell": c["cell"], "grok_rate": c["grok_rate"],
                                    "t_grok_median": c["t_grok_median"]} for c in cells_t]})
        for (i, j) in (base_orders or {}):
            seen = {o[(i, j)] for o in orders_by_t.values()} - {0}
            if seen == {1, -1}:
                flips.append({"cells": [cells[i]["cell"], cells[j]["cell"]]})
        sign_flips = [nm for nm, s in signs.items() if len(s) > 1]
        if sign_flips or flips:
            findings.append(finding(
                Reason.THRESHOLD_SENSITIVE, "study",
                "an exponent's sign or a cell ordering changes with the grok threshold",
                evidence={"thresholds": [float(t) for t in thresholds],
                          "exponent_sign_changes": sign_flips, "ordering_flips": flips}))

    runs = []
    for r in f.sort_values("run").itertuples(index=False):
        tg = Interval.make(r.tg_value, r.tg_lower, r.tg_upper)
        tm = Interval.make(r.tm_value, r.tm_lower, r.tm_upper)
        gap = None
        if tm is not None and not math.isnan(r.tm_lower):
            gap = {"lower": r.tg_lower - r.tm_upper, "upper": r.tg_upper - r.tm_lower,
                   "censored": bool(math.isinf(r.tg_upper))}
        runs.append({"run": r.run, **{c: py(getattr(r, c)) for c in by},
                     "t_mem": tm, "t_grok": tg, "gap": gap})
    body = {
        "step_unit": rc.step_unit,
        "by": list(by),
        "cells": cells,
        "phase_map": _phase_map(cells, axes),
        "ols": {"fit": ols_fit, "refused": ols_why, "n_runs": int(f["grokked"].sum()),
                "n_left_out": n_left_out},
        "aft": {"fit": aft_fit, "refused": aft_why, "n_runs": len(f)},
        "comparison": comparison,
        "threshold_sensitivity": sens,
        "runs": runs,
    }
    params = {"by": list(by), "interactions": interactions,
              "thresholds": [float(t) for t in thresholds], "phase_map": axes, "level": level,
              "seed": seed, "n_resamples": n_resamples,
              "step_unit": rc.step_unit}
    return make_result("onset", params=params, config=config.to_dict(),
                       input=rc.log.summary.to_dict(), body=body, findings=findings,
                       fail_on=config.fail_on)
