"""Per-run results and per-cell summaries with their gates (AUDIT_SPEC §2).

A cell's medians respect censoring: with each run's interval ``(L, U]`` (``U = inf`` when
censored) the cell median is ``[median(L), median(U)]``; when half or more of the runs are
censored the median is censored too (``MEDIAN_CENSORED``) and only its lower bound is known.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .clocks import (
    STAB_INDETERMINATE,
    STAB_NONE,
    STAB_STABLE,
    STAB_UNSTABLE,
    STABILITY_NAMES,
    TC_FLOOR_INDETERMINATE,
    TC_FLOOR_UNSTABLE,
    TC_IN_FINAL_WINDOW,
    TC_NEVER_CROSSED,
    TC_NEVER_SETTLED,
    TC_NO_COMPRESSION,
    TC_NO_FLOOR,
    TC_NO_GROK,
    TC_OK,
    AccuracyClocks,
    Event,
    MetricClocks,
)
from .config import AuditConfig
from .reasons import Reason
from .results import CellSummary, Interval, RunResult

_TC_REASON = {
    TC_NO_GROK: Reason.NO_GROK,
    TC_NO_FLOOR: Reason.FLOOR_TOO_FEW_POINTS,
    TC_NEVER_SETTLED: Reason.COMPRESSION_NEVER_SETTLED,
    TC_IN_FINAL_WINDOW: Reason.COMPRESSION_SETTLED_IN_FINAL_WINDOW,
    TC_FLOOR_UNSTABLE: Reason.FLOOR_UNSTABLE,
    TC_FLOOR_INDETERMINATE: Reason.FLOOR_INDETERMINATE,
    TC_NEVER_CROSSED: Reason.COMPRESSION_NEVER_SETTLED,
    TC_NO_COMPRESSION: Reason.NO_COMPRESSION,
}


def _f(x: Any) -> float | None:
    v = float(x)
    return None if math.isnan(v) else v


def _interval(ev: Event, i: int) -> Interval | None:
    return Interval.make(float(ev.value[i]), float(ev.lower[i]), float(ev.upper[i]))


def run_reasons(acc: AccuracyClocks, mc: MetricClocks, i: int) -> tuple[Reason, ...]:
    """The reason codes that describe run ``i`` (in a fixed order)."""
    out: list[Reason] = []
    grokked = not bool(acc.t_grok.censored[i])
    if not grokked:
        out.append(Reason.NO_GROK)
    if acc.t_mem is not None and bool(acc.t_mem.censored[i]):
        out.append(Reason.NO_MEMORIZATION)
    if grokked and not bool(acc.sustained[i]):
        out.append(Reason.GROK_NOT_SUSTAINED)
    if not bool(acc.fully_generalized[i]):
        out.append(Reason.NOT_FULLY_GENERALIZED)
    if mc.n_points[i] == 0:
        out.append(Reason.NO_METRIC_POINTS)
    st = int(mc.stability[i])
    out.append({STAB_NONE: Reason.FLOOR_TOO_FEW_POINTS, STAB_STABLE: Reason.FLOOR_STABLE,
                STAB_UNSTABLE: Reason.FLOOR_UNSTABLE,
                STAB_INDETERMINATE: Reason.FLOOR_INDETERMINATE}[st])
    if bool(mc.noisy[i]):
        out.append(Reason.FLOOR_NOISY)
    if bool(mc.metric_not_at_grok[i]):
        out.append(Reason.METRIC_NOT_AT_GROK)
    if bool(mc.no_compression[i]):
        out.append(Reason.NO_COMPRESSION)
    if bool(mc.compression_unknown[i]):
        out.append(Reason.COMPRESSION_UNKNOWN)
    tcs = int(mc.tc_status[i])
    if tcs != TC_OK and tcs != TC_NO_GROK:
        r = _TC_REASON[tcs]
        if r not in out:
            out.append(r)
    if bool(mc.rebound[i]):
        out.append(Reason.REBOUND)
    if bool(mc.before_grok[i]):
        out.append(Reason.COMPRESSION_BEFORE_GROK)
    if bool(mc.concurrent[i]):
        out.append(Reason.COMPRESSION_CONCURRENT)
    if grokked and not math.isnan(mc.floor[i]) and mc.floor[i] <= 0:
        out.append(Reason.NONPOSITIVE_FLOOR)
    if bool(mc.transient[i]):
        out.append(Reason.SNAPSHOT_TRANSIENT)
    elif bool(mc.converged[i]):
        out.append(Reason.SNAPSHOT_CONVERGED)
    return tuple(out)


def build_run(run_id: str, cell: Any, acc: AccuracyClocks, mc: MetricClocks, i: int
              ) -> RunResult:
    """The :class:`RunResult` of run ``i``."""
    grokked = not bool(acc.t_grok.censored[i])
    tg = _interval(acc.t_grok, i)
    assert tg is not None
    if not grokked or np.isnan(mc.floor[i]) or np.isnan(mc.drop[i]):
        compression = "n/a"
    elif bool(mc.no_compression[i]):
        compression = "none"
    elif bool(mc.compression_unknown[i]):
        compression = "unknown"
    else:
        compression = "compressed"
    if bool(mc.transient[i]):
        snap = "transient"
    elif bool(mc.converged[i]):
        snap = "converged"
    elif np.isnan(mc.inflation[i]):
        snap = "n/a"
    else:
        snap = "between"
    rel = mc.rel_lag_low[i] if mc.rel_lag_low[i] == mc.rel_lag_high[i] else np.nan
    return RunResult(
        run=run_id, cell=cell,
        t_mem=_interval(acc.t_mem, i) if acc.t_mem is not None else None,
        t_grok=tg, grok_sustained=bool(acc.sustained[i]),
        grok_fell_at=_f(acc.fell_at[i]), final_test_acc=_f(acc.final_test_acc[i]),
        fully_generalized=bool(acc.fully_generalized[i]),
        m_start=_f(mc.m_start[i]), m_grok=_f(mc.m_grok[i]), m_peak=_f(mc.m_peak[i]),
        floor=_f(mc.floor[i]), delta=_f(mc.delta[i]),
        floor_stability=STABILITY_NAMES[int(mc.stability[i])],
        w1_median=_f(mc.w1_median[i]), drift=_f(mc.drift[i]),
        drift_interval=(_f(mc.drift_low[i]), _f(mc.drift_high[i])), mad=_f(mc.mad[i]),
        compression=compression,
        t_compress=_interval(mc.t_compress, i) if grokked else None,
        undershoot=_f(mc.undershoot[i]),
        lag=_interval(mc.lag, i) if grokked else None,
        rel_lag=_f(rel), frac_pre=_f(mc.frac_pre[i]), inflation=_f(mc.inflation[i]),
        inflation_is_lower_bound=bool(mc.inflation_lower_bound[i]), snapshot=snap,
        reasons=run_reasons(acc, mc, i),
    )


def interval_median(ev: Event, idx: np.ndarray, interval_censoring: bool = True
                    ) -> tuple[Interval | None, bool]:
    """Censoring-aware median of the events of runs ``idx``.

    Returns the median interval and whether it is censored (half or more runs censored).
    Without interval censoring (the reference profile) it is the median of the uncensored
    point values, censored runs left out (as the reference analyzer does).
    """
    lo = ev.lower[idx]
    up = ev.upper[idx]
    keep = ~np.isnan(lo)
    lo, up = lo[keep], up[keep]
    n = lo.size
    if n == 0:
        return None, False
    if not interval_censoring:
        pts = up[np.isfinite(up)]
        if pts.size == 0:
            return Interval(None, float(np.median(lo)), None, True), True
        v = float(np.median(pts))
        return Interval(v, v, v, False), False
    n_cens = int(np.isinf(up).sum())
    med_lo = float(np.median(lo))
    if 2 * n_cens >= n:
        return Interval(None, med_lo, None, True), True
    med_up = float(np.median(up))
    # the value is the median of the runs' values (censored ones rank last); for a lag the
    # value is not its interval's upper end, so median(U) would be off by up to a cadence
    vals = np.where(np.isinf(up), np.inf, ev.value[idx][keep])
    med_val = float(np.median(vals))
    return Interval(med_val, med_lo, med_up, False), False


def _median(a: np.ndarray) -> float | None:
    a = a[~np.isnan(a)]
    return float(np.median(a)) if a.size else None


def summarize_cell(axis_value: Any, run_ids: Sequence[str], idx: np.ndarray,
                   acc: AccuracyClocks, mc: MetricClocks, cfg: AuditConfig) -> CellSummary:
    """The cell's counts, censoring-aware medians and its per-cell gates.

    ``HIGH_FLOOR_OUTLIER`` needs every cell of the study and is added by
    :func:`apply_high_floor_gate`.
    """
    grokked = ~acc.t_grok.censored[idx]
    n = int(idx.size)
    n_g = int(grokked.sum())
    n_full = int(acc.fully_generalized[idx].sum())
    n_nocomp = int((mc.no_compression[idx] & grokked).sum())
    tc_ok = mc.tc_status[idx] == TC_OK
    stable = mc.stability[idx] == STAB_STABLE
    n_est = int((grokked & stable & tc_ok).sum())
    n_tc_cens = int((grokked & ~tc_ok & np.isin(mc.tc_status[idx], (
        TC_NEVER_SETTLED, TC_IN_FINAL_WINDOW, TC_FLOOR_UNSTABLE, TC_FLOOR_INDETERMINATE,
        TC_NEVER_CROSSED))).sum())
    gi = idx[grokked]
    t_grok, tg_cens = interval_median(acc.t_grok, idx, cfg.interval_censoring)
    t_comp, tc_cens = interval_median(mc.t_compress, gi, cfg.interval_censoring)
    lag, lag_cens = interval_median(mc.lag, gi, cfg.interval_censoring)
    floor = _median(mc.floor[idx])
    delta = None if floor is None else max(cfg.abs_tol, cfg.rel_tol * abs(floor))
    rel = np.where(mc.rel_lag_low[gi] == mc.rel_lag_high[gi], mc.rel_lag_low[gi], np.nan)
    stab_counts: dict[str, int] = {}
    for code, name in STABILITY_NAMES.items():
        c = int((mc.stability[idx] == code).sum())
        if c:
            stab_counts[name] = c
    gates: list[Reason] = []
    if cfg.gates == "default":
        if 2 * n_full < n:
            gates.append(Reason.BOUNDARY_PARTIAL_GENERALIZATION)
        if 2 * n_nocomp > n_g:
            gates.append(Reason.BOUNDARY_NO_COMPRESSION)
        if 2 * n_est < n_g:
            gates.append(Reason.COMPRESSION_NOT_ESTABLISHED)
    else:
        if 2 * n_nocomp > n_g or n_g == 0:
            gates.append(Reason.BOUNDARY_NO_COMPRESSION)
    notes = [Reason.MEDIAN_CENSORED] if (tg_cens or tc_cens or lag_cens) else []
    return CellSummary(
        axis_value=axis_value, runs=tuple(run_ids), n_runs=n, n_grokked=n_g,
        n_fully_generalized=n_full, n_no_compression=n_nocomp, n_established=n_est,
        n_tc_censored=n_tc_cens, t_grok=t_grok, t_compress=t_comp, lag=lag, floor=floor,
        delta=delta, m_grok=_median(mc.m_grok[gi]), rel_lag=_median(rel),
        frac_pre=_median(mc.frac_pre[gi]), inflation=_median(mc.inflation[gi]),
        floor_stability=stab_counts, n_transient=int(mc.transient[gi].sum()),
        gates=tuple(gates), notes=tuple(notes),
    )


def apply_high_floor_gate(cells: Sequence[CellSummary], cfg: AuditConfig
                          ) -> tuple[CellSummary, ...]:
    """Add ``HIGH_FLOOR_OUTLIER`` to cells whose median floor exceeds ``high_floor_factor`` ×
    the median floor of all cells of the study."""
    from dataclasses import replace

    floors = [c.floor for c in cells if c.floor is not None]
    if not floors:
        return tuple(cells)
    ref = float(np.median(floors))
    out = []
    for c in cells:
        if c.floor is not None and ref > 0 and c.floor > cfg.high_floor_factor * ref:
            c = replace(c, gates=(*c.gates, Reason.HIGH_FLOOR_OUTLIER))
        out.append(c)
    return tuple(out)
