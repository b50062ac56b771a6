"""``grokaudit precursor``: does a signal announce grokking? (CLAIMS_SPEC, seed 004 §6.1)

For a per-step signal (``--signal attn_cv``), per run: the peak step of the signal after the
memorization gate (first logged ``train_acc ≥ mem_threshold``), the lead ``t_grok − t_peak``, and
whether the peak precedes grokking (``t_peak < t_grok``, the step grokking was first seen). Runs
that never grok, or never memorize, are counted apart, never dropped silently.

Validity checks:

- ``PEAK_AT_WINDOW_EDGE``: the peak is the first point after the gate or the last logged point
  (a monotone signal "peaks" there trivially).
- The statistic: the fraction of grokked runs whose peak is *interior* (not on the window's
  edge) and precedes grokking. (The raw fraction, edge peaks included, is reported too: it is what
  papers quote, and a signal that simply falls after the gate scores 1 on it.)
- The null: the same statistic with the signal's time axis permuted within each run. Permuting the values moves the maximum to a
  uniformly random logged point of the window, so each null draw places each run's peak
  uniformly over its window points (vectorized, seeded); ``p = (1 + #{null ≥ observed}) /
  (1 + B)``. And a placebo smooth signal (default ``weight_norm``), scored the same way.
  ``PRECURSOR_NOT_SPECIFIC`` when ``p ≥ α`` or the placebo does at least as well.
- The lead's CI: a seeded percentile bootstrap of the median lead over grokked runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..clocks import pack
from ..config import AuditConfig
from ..errors import ErrorCode, LogFormatError
from ..reasons import Reason
from ..results import Finding
from ..schema import LogTable
from .results import ClaimResult, finding, make_result
from .runs import RunClocks, require_series, run_clocks
from .stats import bootstrap_ci

DEFAULT_PLACEBO = "weight_norm"


def _peaks(rc: RunClocks, values: np.ndarray) -> dict[str, np.ndarray]:
    """Per run: the post-gate window of the signal, its peak step, and whether it is an edge."""
    P = pack(values, rc.log)
    gate = rc.frame["tm_value"].to_numpy(dtype=float)
    inwin = P.valid & (P.steps >= gate[:, None])  # NaN gate (no memorization): empty window
    n_win = inwin.sum(axis=1)
    masked = np.where(inwin, P.values, -np.inf)
    k = np.argmax(masked, axis=1)
    has = n_win > 0
    peak_step = np.where(has, P.steps[np.arange(len(k)), k], np.nan)
    first = np.argmax(inwin, axis=1)
    last = P.values.shape[1] - 1 - np.argmax(inwin[:, ::-1], axis=1)
    edge = has & ((k == first) | (k == last))
    # step of every window point, for the permutation null
    return {"n_window": n_win, "peak_step": peak_step, "edge": edge, "steps": P.steps,
            "in_window": inwin}


def _fraction(peak_step: np.ndarray, tg: np.ndarray, use: np.ndarray,
              interior: np.ndarray | None = None) -> float | None:
    """Share of the ``use`` runs whose peak precedes grokking (and, given ``interior``, is not
    on the window's edge)."""
    if not use.any():
        return None
    ok = peak_step[use] < tg[use]
    if interior is not None:
        ok &= interior[use]
    return float(np.mean(ok))


def _null(pk: dict[str, np.ndarray], tg: np.ndarray, use: np.ndarray, n_perm: int,
          seed: int) -> np.ndarray:
    """Null fractions: each run's peak at a uniformly random point of its window."""
    rng = np.random.default_rng(seed)
    rows = np.flatnonzero(use)
    if rows.size == 0:
        return np.array([])
    inwin = pk["in_window"][rows]
    steps = pk["steps"][rows]
    # the window's points are contiguous: offset of the first + a uniform index
    first = np.argmax(inwin, axis=1)
    nw = inwin.sum(axis=1)
    u = rng.random((n_perm, rows.size))
    k = np.floor(u * nw[None, :]).astype(np.int64)
    idx = first[None, :] + k
    st = steps[np.arange(rows.size)[None, :], idx]
    interior = (k > 0) & (k < nw[None, :] - 1)
    out: np.ndarray = np.mean((st < tg[rows][None, :]) & interior, axis=1)
    return out


def _score(rc: RunClocks, col: str, flag: str, n_perm: int, seed: int) -> dict[str, Any]:
    vals = require_series(rc, col, flag)
    pk = _peaks(rc, vals)
    f = rc.frame
    tg = f["tg_value"].to_numpy(dtype=float)
    grokked = f["grokked"].to_numpy(dtype=bool)
    use = grokked & (pk["n_window"] > 0)
    obs = _fraction(pk["peak_step"], tg, use, ~pk["edge"])
    null = _null(pk, tg, use, n_perm, seed)
    p = None
    if obs is not None and null.size:
        p = (1.0 + float(np.sum(null >= obs - 1e-12))) / (1.0 + null.size)
    return {"pk": pk, "use": use, "fraction": obs, "null": null, "p_perm": p,
            "fraction_raw": _fraction(pk["peak_step"], tg, use),
            "null_mean": float(null.mean()) if null.size else None}


def run_precursor(table: pa.Table | pd.DataFrame | LogTable, config: AuditConfig, *,
                  signal: str, placebo: str | None = None, n_perm: int = 999,
                  alpha: float = 0.05, level: float = 0.95, seed: int = 0,
                  step_unit: str | None = None, source: str | None = None) -> ClaimResult:
    """Audit the claim that ``signal`` announces grokking; see the module docstring."""
    rc = run_clocks(table, config, source, step_unit)
    if rc.log.train_acc is None:
        raise LogFormatError("precursor needs train_acc (the memorization gate); the log has "
                             "none", path=source, column="train_acc", code=ErrorCode.MISSING_COLUMN)
    require_series(rc, signal, "--signal")
    if placebo is None and DEFAULT_PLACEBO in rc.log.series and signal != DEFAULT_PLACEBO:
        placebo = DEFAULT_PLACEBO
    f = rc.frame
    findings: list[Finding] = []
    s = _score(rc, signal, "--signal", n_perm, seed)
    pk = s["pk"]
    tg = f["tg_value"].to_numpy(dtype=float)
    grokked = f["grokked"].to_numpy(dtype=bool)
    memorized = f["memorized"].to_numpy(dtype=bool)
    lead = np.where(s["use"], tg - pk["peak_step"], np.nan)
    runs = []
    for i, r in enumerate(f.itertuples(index=False)):
        runs.append({
            "run": r.run, "gate_step": r.tm_value if memorized[i] else None,
            "t_grok": r.tg_value if grokked[i] else None, "grokked": bool(grokked[i]),
            "peak_step": pk["peak_step"][i], "window_points": int(pk["n_window"][i]),
            "peak_at_edge": bool(pk["edge"][i]), "lead": lead[i],
            "precedes": bool(pk["peak_step"][i] < tg[i]) if s["use"][i] else None,
        })
    runs.sort(key=lambda d: d["run"])
    no_mem = f.loc[~memorized, "run"].tolist()
    if no_mem:
        findings.append(finding(Reason.NO_MEMORIZATION, "run",
                                f"{len(no_mem)} runs never reach the memorization gate: no "
                                "window", runs=sorted(no_mem),
                                evidence={"n_runs": len(no_mem), "of": len(f)}))
    no_grok = f.loc[memorized & ~grokked, "run"].tolist()
    if no_grok:
        findings.append(finding(Reason.NO_GROK, "run",
                                f"{len(no_grok)} memorized runs never grok: counted apart",
                                runs=sorted(no_grok),
                                evidence={"n_runs": len(no_grok), "of": len(f)}))
    edge_runs = f.loc[pk["edge"], "run"].tolist()
    n_with = int((pk["n_window"] > 0).sum())
    if edge_runs:
        findings.append(finding(
            Reason.PEAK_AT_WINDOW_EDGE, "study",
            f"{len(edge_runs)}/{n_with} runs peak on the gate or at the log end",
            runs=sorted(edge_runs),
            evidence={"n_runs": len(edge_runs), "of": n_with,
                      "majority": len(edge_runs) * 2 >= max(n_with, 1)}))
    plc = _score(rc, placebo, "--placebo", n_perm, seed) if placebo else None
    obs = s["fraction"]
    not_specific = []
    if obs is not None:
        if s["p_perm"] is not None and s["p_perm"] >= alpha:
            not_specific.append("permutation")
        if plc is not None and plc["fraction"] is not None and plc["fraction"] >= obs:
            not_specific.append("placebo")
        if not_specific:
            findings.append(finding(
                Reason.PRECURSOR_NOT_SPECIFIC, "study",
                f"{signal} does no better than the null ({', '.join(not_specific)})",
                evidence={"fraction": obs, "p_perm": s["p_perm"], "alpha": alpha,
                          "placebo": placebo,
                          "placebo_fraction": plc["fraction"] if plc else None,
                          "failed": not_specific}))
    leads = lead[s["use"]]
    body = {
        "step_unit": rc.step_unit,
        "signal": signal,
        "n_runs": len(f), "n_memorized": int(memorized.sum()),
        "n_grokked": int(grokked.sum()), "n_scored": int(s["use"].sum()),
        "n_no_grok": len(no_grok), "n_no_memorization": len(no_mem),
        "fraction_preceding": s["fraction_raw"],
        "fraction_preceding_interior": obs,
        "lead_median": float(np.median(leads)) if leads.size else None,
        "lead_ci": bootstrap_ci(leads, np.median, seed=seed, level=level) if leads.size else None,
        "null_permuted": {"n_perm": n_perm, "seed": seed, "mean_fraction": s["null_mean"],
                          "p_value": s["p_perm"]},
        "null_placebo": None if plc is None else {
            "signal": placebo, "fraction_preceding": plc["fraction_raw"],
            "fraction_preceding_interior": plc["fraction"],
            "p_value": plc["p_perm"], "n_peak_at_edge": int(plc["pk"]["edge"].sum())},
        "runs": runs,
    }
    params = {"signal": signal, "placebo": placebo, "n_perm": n_perm, "alpha": alpha,
              "level": level, "seed": seed, "step_unit": rc.step_unit}
    return make_result("precursor", params=params, config=config.to_dict(),
                       input=rc.log.summary.to_dict(), body=body, findings=findings,
                       fail_on=config.fail_on)
