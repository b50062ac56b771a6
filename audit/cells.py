"""Per-run results and per-cell summaries with their gates (AUDIT_SPEC §2).

A cell's medians respect censoring: with each run's interval ``(L, U]`` (``U = inf`` when
censored) the cell median is ``[median(L), median(U)]``; when half or more of the runs are
censored the median is censored too (``MEDIAN_CENSORED``) and only its lower bound is known.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .clocks import (
    STAB_INDETERMINATE,
    STAB_NONE,
    STAB_STABLE,
    STAB_TAKEN_STABLE,
    STAB_UNCHECKED,
    STAB_UNSTABLE,
    STABILITY_NAMES,
    TC_FLOOR_INDETERMINATE,
    TC_FLOOR_UNSTABLE,
    TC_IN_FINAL_WINDOW,
    TC_LEFT_CENSORED,
    TC_NEVER_CROSSED,
    TC_NEVER_SETTLED,
    TC_NO_COMPRESSION,
    TC_NO_FLOOR,
    TC_NO_GROK,
    TC_OK,
    TC_UNREADABLE,
    AccuracyClocks,
    Event,
    MetricClocks,
    mean2,
)
from .config import AuditConfig
from .reasons import Reason
from .results import CellSummary, Interval, ReferenceCell, RunResult
from .runtable import FLOAT_FIELDS, WORD_FIELDS, Intervals, RunTable, Words

_TC_REASON = {
    TC_NO_GROK: Reason.NO_GROK,
    TC_NO_FLOOR: Reason.FLOOR_TOO_FEW_POINTS,
    TC_NEVER_SETTLED: Reason.COMPRESSION_NEVER_SETTLED,
    TC_IN_FINAL_WINDOW: Reason.COMPRESSION_SETTLED_IN_FINAL_WINDOW,
    TC_FLOOR_UNSTABLE: Reason.FLOOR_UNSTABLE,
    TC_FLOOR_INDETERMINATE: Reason.FLOOR_INDETERMINATE,
    TC_NEVER_CROSSED: Reason.COMPRESSION_NEVER_SETTLED,
    TC_NO_COMPRESSION: Reason.NO_COMPRESSION,
    TC_LEFT_CENSORED: Reason.LEFT_CENSORED,
    TC_UNREADABLE: Reason.COMPRESSION_UNKNOWN,
}


_STAB_REASON: dict[int, Reason | None] = {STAB_NONE: Reason.FLOOR_TOO_FEW_POINTS, STAB_STABLE: Reason.FLOOR_STABLE,
                STAB_UNSTABLE: Reason.FLOOR_UNSTABLE,
                STAB_INDETERMINATE: Reason.FLOOR_INDETERMINATE,
                STAB_UNCHECKED: None}  # not tested: nothing to say about it


def _accuracy_reasons(grokked: bool, left_grok: bool, not_memorized: bool, sustained: bool,
                      fully: bool) -> list[Reason]:
    """The codes of a run that its accuracy alone decides, in their fixed order: the first
    codes of :func:`_reasons`, and every code of an accuracy-only audit."""
    out: list[Reason] = []
    if not grokked:
        out.append(Reason.NO_GROK)
    if left_grok:
        out.append(Reason.LEFT_CENSORED)
    if not_memorized:
        out.append(Reason.NO_MEMORIZATION)
    if grokked and not sustained:
        out.append(Reason.GROK_NOT_SUSTAINED)
    if not fully:
        out.append(Reason.NOT_FULLY_GENERALIZED)
    return out


def _reasons(flags: Sequence[bool], stability: int, tc_status: int) -> tuple[Reason, ...]:
    """The reason codes of a run from its facts (in a fixed order): the one definition behind
    :func:`run_reasons` and :func:`run_reasons_many`. ``flags`` are in the order of
    :func:`_reason_flags`."""
    (grokked, not_memorized, sustained, fully, no_points, noisy, not_at_grok, no_compression,
     compression_unknown, rebound, before, concurrent, nonpositive_floor, transient,
     converged, left_grok) = flags
    out = _accuracy_reasons(grokked, left_grok, not_memorized, sustained, fully)
    if no_points:
        out.append(Reason.NO_METRIC_POINTS)
    stab_reason = _STAB_REASON[stability]
    # a metric that never turned down has a plateau, no floor (its stability is "none"): it
    # is NO_COMPRESSION, not a floor with too few points
    if stab_reason is not None and not (no_compression and stability == STAB_NONE):
        out.append(stab_reason)
    if noisy:
        out.append(Reason.FLOOR_NOISY)
    if not_at_grok:
        out.append(Reason.METRIC_NOT_AT_GROK)
    if no_compression:
        out.append(Reason.NO_COMPRESSION)
    if compression_unknown:
        out.append(Reason.COMPRESSION_UNKNOWN)
    if tc_status != TC_OK and tc_status != TC_NO_GROK:
        r = _TC_REASON[tc_status]
        if r not in out:
            out.append(r)
    if rebound:
        out.append(Reason.REBOUND)
    if before:
        out.append(Reason.COMPRESSION_BEFORE_GROK)
    if concurrent:
        out.append(Reason.COMPRESSION_CONCURRENT)
    if grokked and nonpositive_floor:
        out.append(Reason.NONPOSITIVE_FLOOR)
    if transient:
        out.append(Reason.SNAPSHOT_TRANSIENT)
    elif converged:
        out.append(Reason.SNAPSHOT_CONVERGED)
    return tuple(out)


def _distinct(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(key, return_inverse=True)`` of integer keys, by hashing (one pass) instead
    of a sort of every run's key: the same sorted distinct keys and the same inverse."""
    inv, uniq = pd.factorize(key, sort=True)
    return np.asarray(uniq, dtype=key.dtype), np.asarray(inv, dtype=np.int64)


def _reason_flags(acc: AccuracyClocks, mc: MetricClocks, idx: np.ndarray
                  ) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """The facts of runs ``idx`` as boolean arrays (grokked, not memorized, sustained, fully
    generalized, no metric points, noisy, metric not at grok, no compression, compression
    unknown, rebound, before grok, concurrent, nonpositive floor, transient, converged,
    grokked before logging began), their stability codes and their t_compress status codes."""
    floor = mc.floor[idx]
    with np.errstate(invalid="ignore"):
        nonpos = ~np.isnan(floor) & (floor <= 0)
    not_mem = (acc.t_mem.censored[idx] if acc.t_mem is not None
               else np.zeros(idx.size, dtype=bool))
    flags = [~mc.grok.censored[idx], not_mem, acc.sustained[idx],
             acc.fully_generalized[idx], mc.n_points[idx] == 0, mc.noisy[idx],
             mc.metric_not_at_grok[idx], mc.no_compression[idx], mc.compression_unknown[idx],
             mc.rebound[idx], mc.before_grok[idx], mc.concurrent[idx], nonpos,
             mc.transient[idx], mc.converged[idx], mc.grok.left_censored[idx]]
    return ([np.asarray(f, dtype=bool) for f in flags],
            np.asarray(mc.stability[idx], dtype=np.int64),
            np.asarray(mc.tc_status[idx], dtype=np.int64))


def run_reasons(acc: AccuracyClocks, mc: MetricClocks, i: int) -> tuple[Reason, ...]:
    """The reason codes that describe run ``i`` (in a fixed order)."""
    sets, which = reason_codes(acc, mc, np.array([i], dtype=np.int64))
    return sets[int(which[0])]


def reason_codes(acc: AccuracyClocks, mc: MetricClocks, idx: np.ndarray
                 ) -> tuple[tuple[tuple[Reason, ...], ...], np.ndarray]:
    """:func:`run_reasons` of each run in ``idx`` as ``(sets, which)``: run ``idx[k]`` has the
    codes ``sets[which[k]]``. No Python pass per run over the clock arrays: the runs' facts are
    packed into one integer key per run, and the codes are built once per distinct key (a
    handful)."""
    idx = np.asarray(idx, dtype=np.int64)
    flags, stab, tcs = _reason_flags(acc, mc, idx)
    key = np.zeros(idx.size, dtype=np.int64)
    for b, f in enumerate(flags):
        key |= f.astype(np.int64) << b
    nb = len(flags)
    key |= stab << nb
    key |= tcs << (nb + 8)
    uniq, inv = _distinct(key)
    table = []
    for k in uniq.tolist():
        bits = [bool((k >> b) & 1) for b in range(nb)]
        table.append(_reasons(bits, (k >> nb) & 0xFF, k >> (nb + 8)))
    return tuple(table), np.asarray(inv.ravel(), dtype=np.int64)


def _f64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


def _intervals(ev: Event, idx: np.ndarray, keep: np.ndarray | None = None) -> Intervals:
    """The intervals ``(value, lower, upper]`` of runs ``idx`` (None where ``keep`` is
    False)."""
    return Intervals(_f64(ev.value[idx]), _f64(ev.lower[idx]), _f64(ev.upper[idx]), keep)


def build_run(run_id: str, cell: Any, acc: AccuracyClocks, mc: MetricClocks, i: int,
              reference: bool = False) -> RunResult:
    """The :class:`RunResult` of run ``i``."""
    return build_runs([run_id], (cell,), np.zeros(1, dtype=np.int64), acc, mc,
                      np.array([i], dtype=np.int64), reference=reference)[0]


def seed_values(mc: MetricClocks, idx: np.ndarray) -> dict[str, np.ndarray]:
    """The v1.5 analyzer's per-seed quantities of runs ``idx`` (spec §S), as arrays:

    ``kept`` (v1.5 keeps the seed: it grokked and has a floor and an at-grok value), ``valid``
    (kept with a compression, i.e. a t_compress, exact or censored), ``censored``, and the
    numbers ``drop``, ``t_compress`` and ``gap`` (the lower bounds, which are the times
    themselves without interval censoring, and the last step for a censored seed when
    ``censored_time = last_step``), ``rel_gap``, ``m_compress`` and ``rate``; NaN where v1.5
    writes NaN."""
    grokked = ~mc.grok.censored[idx]
    kept = grokked & ~np.isnan(mc.floor[idx]) & ~np.isnan(mc.m_grok[idx])
    tcs = mc.tc_status[idx]
    cens = kept & mc.tc_censored[idx]
    valid = kept & ((tcs == TC_OK) | cens)
    gap = np.where(valid, mc.lag.lower[idx], np.nan)
    drop = np.where(kept, mc.drop[idx], np.nan)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        rate = np.where(valid & (gap > 0) & np.isfinite(drop), drop / gap, np.nan)
    return {"kept": kept, "valid": valid, "censored": cens & valid, "drop": drop,
            "t_compress": np.where(valid, mc.t_compress.lower[idx], np.nan), "gap": gap,
            "rel_gap": np.where(valid, mc.rel_lag_low[idx], np.nan),
            "m_compress": np.where(valid, mc.m_compress[idx], np.nan), "rate": rate}


def _reference_columns(mc: MetricClocks, idx: np.ndarray) -> dict[str, np.ndarray]:
    v = seed_values(mc, idx)
    out = {k: np.asarray(v[src], dtype=bool) for k, src in
           (("kept", "kept"), ("valid_comp", "valid"), ("censored", "censored"))}
    out.update({k: _f64(v[k]) for k in ("drop", "t_compress", "m_compress", "gap",
                                         "rel_gap", "rate")})
    return out


def _id_array(run_ids: Sequence[str]) -> np.ndarray:
    """The run ids as an object array: an object array passed in is taken as it is."""
    if isinstance(run_ids, np.ndarray) and run_ids.dtype == object:
        return run_ids
    return np.array(list(run_ids), dtype=object)


def build_runs(run_ids: Sequence[str], cell_values: Sequence[Any], cell_index: np.ndarray,
               acc: AccuracyClocks, mc: MetricClocks, idx: np.ndarray,
               reference: bool = False) -> RunTable:
    """The :class:`RunTable` of runs ``idx[k]`` (rows of the clock arrays), named
    ``run_ids[k]``, of cell ``cell_values[cell_index[k]]``. ``reference`` adds each run's v1.5
    numbers (:class:`ReferenceRun`; ``--profile reference``).

    Every quantity is a slice of the clock arrays: no Python work per run (issue 22)."""
    parts, assemble = run_table_parts(run_ids, cell_values, cell_index, acc, mc, idx,
                                      reference=reference)
    return assemble([part() for part in parts])


def run_table_parts(run_ids: Sequence[str], cell_values: Sequence[Any], cell_index: np.ndarray,
                    acc: AccuracyClocks, mc: MetricClocks, idx: np.ndarray,
                    reference: bool = False
                    ) -> tuple[list[Callable[[], dict[str, Any]]],
                               Callable[[Sequence[dict[str, Any]]], RunTable]]:
    """:func:`build_runs` as independent parts and their assembly:
    ``assemble([part() for part in parts])`` is its :class:`RunTable`. The parts read the
    clocks and write nothing shared, so they may run side by side (a million runs: each part
    gathers a dozen columns of a million values into the study's order); the costliest come
    first."""
    idx = np.asarray(idx, dtype=np.int64)
    grokked = ~mc.grok.censored[idx]  # read by two parts: gathered once, here

    def reasons() -> dict[str, Any]:
        sets, which = reason_codes(acc, mc, idx)
        return {"reason_sets": sets, "reasons": which}

    def intervals(names: tuple[str, ...]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in names:
            if name == "t_mem":
                out[name] = (_intervals(acc.t_mem, idx) if acc.t_mem is not None
                             else Intervals(None, None, None))
            elif name == "t_grok":
                out[name] = _intervals(mc.grok, idx)
            else:  # t_compress, lag: kept where the run grokked
                out[name] = _intervals(getattr(mc, name), idx, grokked)
        return out

    def floats() -> dict[str, Any]:
        lo, hi = mc.rel_lag_low[idx], mc.rel_lag_high[idx]
        with np.errstate(invalid="ignore"):
            # a point: known, and finite (lag / 0 for a grok at step 0 itself is no number)
            rel = np.where((lo == hi) & np.isfinite(lo), lo, np.nan)
        values = {"grok_fell_at": acc.fell_at[idx], "final_test_acc": acc.final_test_acc[idx],
                  "m_start": mc.m_start[idx], "m_grok": mc.m_grok[idx],
                  "m_peak": mc.m_peak[idx], "floor": mc.floor[idx], "delta": mc.delta[idx],
                  "w1_median": mc.w1_median[idx], "drift": mc.drift[idx], "mad": mc.mad[idx],
                  "undershoot": mc.undershoot[idx], "rel_lag": rel,
                  "frac_pre": mc.frac_pre[idx], "inflation": mc.inflation[idx]}
        return {"floats": {k: _f64(v) for k, v in values.items()}}

    def words() -> dict[str, Any]:
        floor, drop = mc.floor[idx], mc.drop[idx]
        transient, converged = mc.transient[idx], mc.converged[idx]
        # a metric that never turned down did not compress (its plateau is no floor: NaN)
        compression = np.select(
            [~grokked, mc.no_compression[idx], np.isnan(floor) | np.isnan(drop),
             mc.compression_unknown[idx]], [np.int8(3), np.int8(1), np.int8(3), np.int8(2)],
            np.int8(0))
        snap = np.select([transient, converged, np.isnan(mc.inflation[idx])],
                         [np.int8(0), np.int8(1), np.int8(3)], np.int8(2))
        stab_codes = sorted(STABILITY_NAMES)
        stab_pos = np.zeros(max(stab_codes) + 1, dtype=np.int8)  # a word's code: one byte
        stab_pos[stab_codes] = np.arange(len(stab_codes))
        return {
            "flags": {"grok_sustained": np.asarray(acc.sustained[idx], dtype=bool),
                      "fully_generalized": np.asarray(acc.fully_generalized[idx], dtype=bool),
                      "inflation_is_lower_bound": np.asarray(mc.inflation_lower_bound[idx],
                                                             dtype=bool)},
            "words": {"floor_stability": Words(tuple(STABILITY_NAMES[c] for c in stab_codes),
                                               stab_pos[mc.stability[idx]]),
                      "compression": Words(("compressed", "none", "unknown", "n/a"),
                                           compression),
                      "snapshot": Words(("transient", "converged", "between", "n/a"), snap)},
            "drift_interval": (_f64(mc.drift_low[idx]), _f64(mc.drift_high[idx]))}

    parts: list[Callable[[], dict[str, Any]]] = [
        reasons, floats, functools.partial(intervals, ("t_mem", "t_grok")),
        functools.partial(intervals, ("t_compress", "lag")), words]
    if reference:
        parts.append(lambda: {"reference": _reference_columns(mc, idx)})

    def assemble(done: Sequence[dict[str, Any]]) -> RunTable:
        got: dict[str, Any] = {"reference": None}
        for d in done:
            for k, v in d.items():
                if isinstance(v, dict) and isinstance(got.get(k), dict):
                    got[k].update(v)
                else:
                    got[k] = v
        iv = got.pop("t_mem"), got.pop("t_grok"), got.pop("t_compress"), got.pop("lag")
        return RunTable(run=_id_array(run_ids), cell_values=tuple(cell_values),
                        cell=np.asarray(cell_index, dtype=np.int64),
                        intervals=dict(zip(("t_mem", "t_grok", "t_compress", "lag"), iv)),
                        **got)

    return parts, assemble


# ------------------------------------------------------------------------------------------
# accuracy only: no metric audited (COMPRESSION_NOT_ASSESSED)
# ------------------------------------------------------------------------------------------

#: The word of each of an accuracy-only run's metric words (floor stability, compression,
#: snapshot): no metric was audited, so none of them was assessed.
NOT_ASSESSED = "not_assessed"


def accuracy_reason_codes(acc: AccuracyClocks, idx: np.ndarray
                          ) -> tuple[tuple[tuple[Reason, ...], ...], np.ndarray]:
    """:func:`reason_codes` of an accuracy-only audit: each run's codes that its accuracy
    alone decides (no grok, a grok before logging began, no memorization, a grok not
    sustained, not fully generalized), as ``(sets, which)``."""
    idx = np.asarray(idx, dtype=np.int64)
    tg = acc.t_grok
    not_mem = (acc.t_mem.censored[idx] if acc.t_mem is not None
               else np.zeros(idx.size, dtype=bool))
    flags = [~tg.censored[idx], tg.left_censored[idx], not_mem, acc.sustained[idx],
             acc.fully_generalized[idx]]
    key = np.zeros(idx.size, dtype=np.int64)
    for b, f in enumerate(flags):
        key |= np.asarray(f, dtype=bool).astype(np.int64) << b
    uniq, inv = _distinct(key)
    table = tuple(tuple(_accuracy_reasons(*(bool((k >> b) & 1) for b in range(len(flags)))))
                  for k in uniq.tolist())
    return table, np.asarray(inv.ravel(), dtype=np.int64)


def build_accuracy_runs(run_ids: Sequence[str], cell_values: Sequence[Any],
                        cell_index: np.ndarray, acc: AccuracyClocks, idx: np.ndarray
                        ) -> RunTable:
    """:func:`build_runs` of an accuracy-only audit: ``t_mem``, ``t_grok`` (intervals, censoring
    kept), whether the grok was sustained, the final test accuracy, full generalization and
    the accuracy codes; every quantity of a metric is missing (NaN, no interval) and each of
    its words is :data:`NOT_ASSESSED`."""
    idx = np.asarray(idx, dtype=np.int64)
    n = int(idx.size)
    floats = {k: np.full(n, np.nan) for k in FLOAT_FIELDS}
    floats["grok_fell_at"] = _f64(acc.fell_at[idx])
    floats["final_test_acc"] = _f64(acc.final_test_acc[idx])
    sets, which = accuracy_reason_codes(acc, idx)
    no_clock = Intervals(None, None, None)
    words = {k: Words((NOT_ASSESSED,), np.zeros(n, dtype=np.int8)) for k in WORD_FIELDS}
    return RunTable(
        run=_id_array(run_ids), cell_values=tuple(cell_values),
        cell=np.asarray(cell_index, dtype=np.int64), floats=floats,
        flags={"grok_sustained": np.asarray(acc.sustained[idx], dtype=bool),
               "fully_generalized": np.asarray(acc.fully_generalized[idx], dtype=bool),
               "inflation_is_lower_bound": np.zeros(n, dtype=bool)},
        intervals={"t_mem": _intervals(acc.t_mem, idx) if acc.t_mem is not None else no_clock,
                   "t_grok": _intervals(acc.t_grok, idx), "t_compress": no_clock,
                   "lag": no_clock},
        words=words, drift_interval=(np.full(n, np.nan), np.full(n, np.nan)),
        reason_sets=sets, reasons=which)


def accuracy_gates(n: int, n_grokked: int, n_full: int, cfg: AuditConfig) -> tuple[Reason, ...]:
    """The gates of a cell of an accuracy-only audit: ``NO_GROK`` (no run grokked) and, under
    the default gates, ``BOUNDARY_PARTIAL_GENERALIZATION`` (fewer than half its runs fully
    generalized). The other gates judge the compression, which was not assessed."""
    if n and n_grokked == 0:
        return (Reason.NO_GROK,)
    if cfg.gates == "default" and 2 * n_full < n:
        return (Reason.BOUNDARY_PARTIAL_GENERALIZATION,)
    return ()


def summarize_accuracy_cell(axis_value: Any, run_ids: Sequence[str], idx: np.ndarray,
                            acc: AccuracyClocks, cfg: AuditConfig) -> CellSummary:
    """:func:`summarize_cell` of an accuracy-only audit: the cell's runs, grokked and fully
    generalized counts, its censoring-aware median ``t_grok`` over every run (steps), its
    accuracy gates (:func:`accuracy_gates`) and ``MEDIAN_CENSORED``; every median of a metric
    is None and the cell says its compression was not assessed."""
    count = np.count_nonzero
    tg = acc.t_grok
    n = int(idx.size)
    n_g = int(count(~tg.censored[idx]))
    n_full = int(count(acc.fully_generalized[idx]))
    t_grok, tg_cens = interval_median(tg, idx, cfg.interval_censoring)
    return CellSummary(
        axis_value=axis_value, runs=tuple(run_ids), n_runs=n, n_grokked=n_g,
        n_fully_generalized=n_full, n_no_compression=0, n_established=0, n_tc_censored=0,
        t_grok=t_grok, t_compress=None, lag=None, floor=None, delta=None, m_grok=None,
        rel_lag=None, frac_pre=None, inflation=None, floor_stability={}, n_transient=0,
        gates=accuracy_gates(n, n_g, n_full, cfg),
        notes=(Reason.MEDIAN_CENSORED,) if tg_cens else (),
        n_left_censored=int(count(tg.left_censored[idx])), compression_assessed=False)


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
    # the value is the median of the runs' values; for a lag the value is not its interval's
    # upper end, so median(U) would be off by up to a cadence. A censored run's value lies
    # somewhere above its lower bound, which may be below the others' values (a lag from a
    # late grok): like a left-censored one, it is known only within (lower, upper]
    vals = ev.value[idx][keep]
    unknown = np.isnan(vals) | np.isinf(up)
    if not unknown.any():
        med_val = float(np.median(vals))
    else:
        known = _median_of_bounds(np.where(unknown, lo, vals), np.where(unknown, up, vals))
        if known is None:
            return Interval(None, med_lo, med_up, False), False
        med_val = known
    return Interval(med_val, med_lo, med_up, False), False


def _median(a: np.ndarray) -> float | None:
    """The median of the non-NaN values (None if none); two middle values near ±1.8e308 are
    averaged without overflow."""
    a = a[~np.isnan(a)]
    if not a.size:
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        m = float(np.median(a))
    if math.isinf(m) and bool(np.isfinite(a).all()):
        s = np.sort(a)
        k = (s.size - 1) // 2
        m = float(mean2(s[k:k + 1], s[s.size // 2:s.size // 2 + 1])[0])
    return m


def _median_unless_moved(a: np.ndarray, unknown: np.ndarray) -> float | None:
    """The median of the values of ``a`` (NaN left out), unless runs whose value is not known
    (``unknown``: the value at grok of a grok before logging began) could move it: then None.
    Those runs could hold any value, so the median is known only when it is the same with all
    of them below and all of them above the others."""
    if not unknown.any():
        return _median(a)
    unset = np.where(unknown, np.nan, a)  # whatever a holds there, it is not known
    return _median_of_bounds(unset, unset, unknown)


def _median_of_bounds(low: np.ndarray, high: np.ndarray, unknown: np.ndarray | None = None
                      ) -> float | None:
    """The median of values known only within ``[low, high]`` per run (equal for a point; a
    censored ``t_compress`` has ``high = ∞``; runs with no value, both NaN, are left out), or
    None unless it is the same, and finite, wherever in their bounds the values lie (the
    median is monotone in each value: all at their low ends and all at their high ends
    decide). ``unknown`` runs (a grok before logging began) without bounds could hold any
    value: below and above every other."""
    lo, hi = low, high
    if unknown is not None:
        lo = np.where(unknown & np.isnan(low), -np.inf, low)
        hi = np.where(unknown & np.isnan(high), np.inf, high)
    has = ~np.isnan(lo) & ~np.isnan(hi)
    if not has.any():
        return None
    a, b = _median(lo[has]), _median(hi[has])
    return a if a == b and a is not None and math.isfinite(a) else None


def _point_median(a: np.ndarray) -> Interval | None:
    """The median of the non-NaN values of ``a`` as a point :class:`Interval` (None if none)."""
    v = _median(a)
    return None if v is None else Interval(v, v, v, False)


def summarize_cell(axis_value: Any, run_ids: Sequence[str], idx: np.ndarray,
                   acc: AccuracyClocks, mc: MetricClocks, cfg: AuditConfig,
                   short: np.ndarray | None = None) -> CellSummary:
    """The cell's counts, censoring-aware medians and its per-cell gates.

    ``short`` (one bool per run of ``idx``) marks runs whose log ends before the floor window
    of the cell's longest run (:func:`.horizons.horizon_check`): the cell names them, and says
    whether its median floor rests on them.

    ``HIGH_FLOOR_OUTLIER`` needs every cell of the study and is added by
    :func:`apply_high_floor_gate`. With ``cell_runs = kept`` the medians are v1.5's (spec
    §C4–§C5): t_grok, m_grok and floor over the kept seeds, the times over the valid ones.
    """
    count = np.count_nonzero
    grokked = ~mc.grok.censored[idx]
    n = int(idx.size)
    n_g = int(count(grokked))
    n_full = int(count(acc.fully_generalized[idx]))
    n_nocomp = int(count(mc.no_compression[idx] & grokked))
    tc_ok = mc.tc_status[idx] == TC_OK
    stab = mc.stability[idx]
    n_est = int(count(grokked & np.isin(stab, STAB_TAKEN_STABLE) & tc_ok))
    # a compression before logging began counts as a censored t_compress (as in the verdict)
    n_tc_cens = int(count(grokked & (mc.tc_censored[idx]
                                     | (mc.tc_status[idx] == TC_LEFT_CENSORED))))
    seeds = seed_values(mc, idx) if cfg.cell_runs == "kept" else None
    gi = idx[seeds["kept"]] if seeds is not None else idx[grokked]
    tg_idx = gi if seeds is not None else idx
    t_grok, tg_cens = interval_median(mc.grok, tg_idx, cfg.interval_censoring)
    rel_all = np.where(mc.rel_lag_low[gi] == mc.rel_lag_high[gi], mc.rel_lag_low[gi], np.nan)
    if cfg.censored_time == "last_step":
        # a censored run counts at its last step (v1.5): every time is a point, its lower bound
        vi = idx[seeds["valid"]] if seeds is not None else gi
        t_comp, tc_cens = _point_median(mc.t_compress.lower[vi]), False
        lag, lag_cens = _point_median(mc.lag.lower[vi]), False
    else:
        t_comp, tc_cens = interval_median(mc.t_compress, gi, cfg.interval_censoring)
        lag, lag_cens = interval_median(mc.lag, gi, cfg.interval_censoring)
    floor = _median(mc.floor[gi if seeds is not None else idx])
    # a grok before logging began has a value at grok the log does not hold: where it could
    # move the cell's median, the median is not known
    unknown_g = mc.grok.left_censored[gi]
    m_grok = _median_unless_moved(mc.m_grok[gi], unknown_g)
    delta = None if floor is None else max(cfg.abs_tol, cfg.rel_tol * abs(floor))
    stab_counts: dict[str, int] = {}
    for code, name in STABILITY_NAMES.items():
        c = int(count(stab == code))
        if c and code != STAB_UNCHECKED:  # an untested floor has no stability label
            stab_counts[name] = c
    ref = _reference_cell(seeds, m_grok, cfg) if seeds is not None else None
    short_ids: tuple[str, ...] = ()
    rests = False
    if short is not None and short.any():
        short_ids = tuple(r for r, s_ in zip(run_ids, short.tolist()) if s_)
        longer = _median(mc.floor[idx[~short]])
        rests = (floor is not None and delta is not None
                 and (longer is None or abs(floor - longer) > delta))
    n_left = int(count(mc.grok.left_censored[idx] | (mc.tc_status[idx] == TC_LEFT_CENSORED)))
    gates: list[Reason] = []
    if cfg.gates == "default":
        if n and n_g == 0:
            # no run reached the grok threshold (runs stuck at chance): not a boundary case
            # between generalizing and not, a cell that did not grok
            gates.append(Reason.NO_GROK)
        elif 2 * n_full < n:
            gates.append(Reason.BOUNDARY_PARTIAL_GENERALIZATION)
        if 2 * n_nocomp > n_g:
            gates.append(Reason.BOUNDARY_NO_COMPRESSION)
        if 2 * n_est < n_g:
            gates.append(Reason.COMPRESSION_NOT_ESTABLISHED)
    elif cfg.rel_drop == "cell":
        # v1.5's boundary gate on the cell's medians (spec §B1, §B3); a cell without a valid
        # seed never reaches its verdict (§B4), which grokaudit names with the same code
        n_valid = int(count(seeds["valid"])) if seeds is not None \
            else int(count(grokked & (tc_ok | mc.tc_censored[idx])))
        tiny = ref.tiny_drop if ref is not None else _tiny_drop(
            _median(mc.drop[gi]), m_grok, cfg)
        if tiny or n_valid == 0:
            gates.append(Reason.BOUNDARY_NO_COMPRESSION)
    else:
        if 2 * n_nocomp > n_g or n_g == 0:
            gates.append(Reason.BOUNDARY_NO_COMPRESSION)
    notes = [Reason.MEDIAN_CENSORED] if (tg_cens or tc_cens or lag_cens) else []
    return CellSummary(
        axis_value=axis_value, runs=tuple(run_ids), n_runs=n, n_grokked=n_g,
        n_fully_generalized=n_full, n_no_compression=n_nocomp, n_established=n_est,
        n_tc_censored=n_tc_cens, t_grok=t_grok, t_compress=t_comp, lag=lag, floor=floor,
        delta=delta, m_grok=m_grok,
        rel_lag=(_median_of_bounds(mc.rel_lag_low[gi], mc.rel_lag_high[gi], unknown_g)
                 if cfg.interval_censoring else _median_unless_moved(rel_all, unknown_g)),
        frac_pre=_median_unless_moved(mc.frac_pre[gi], unknown_g),
        inflation=_median_unless_moved(mc.inflation[gi], unknown_g),
        floor_stability=stab_counts, n_transient=int(count(mc.transient[gi])),
        gates=tuple(gates), notes=tuple(notes), reference=ref,
        n_judged=int(count(~np.isnan(mc.inflation[gi]))),
        n_transient_sustained=int(count(mc.transient[gi] & acc.sustained[gi])),
        inflation_is_lower_bound=bool(np.any(mc.inflation_lower_bound[gi]
                                             & ~np.isnan(mc.inflation[gi]))),
        n_left_censored=n_left, short_horizon_runs=short_ids, floor_rests_on_short_runs=rests,
    )


def _comp_ratio(drop: float | None, m_grok: float | None) -> float | None:
    """v1.5's compression ratio of a cell (spec §B1): median drop / median m_grok, None when
    either is missing or m_grok is 0."""
    if drop is None or m_grok is None or m_grok == 0:
        return None
    r = drop / m_grok
    return r if np.isfinite(r) else None


def _tiny_drop(drop: float | None, m_grok: float | None, cfg: AuditConfig) -> bool:
    r = _comp_ratio(drop, m_grok)
    return r is not None and r < cfg.min_rel_drop


def _reference_cell(seeds: dict[str, np.ndarray], m_grok: float | None, cfg: AuditConfig
                    ) -> ReferenceCell:
    """The cell's v1.5 counts and medians without a field of their own (spec §C3–§C5, §B1)."""
    n_kept = int(np.count_nonzero(seeds["kept"]))
    n_valid = int(np.count_nonzero(seeds["valid"]))
    n_cens = int(np.count_nonzero(seeds["censored"]))
    drop = _median(seeds["drop"])
    return ReferenceCell(
        n=n_kept, n_valid=n_valid, n_censored=n_cens,
        censor_frac=n_cens / n_valid if n_valid else None,
        amp_invalid_frac=(n_kept - n_valid) / n_kept if n_kept else None,
        drop=drop, rate=_median(seeds["rate"]), comp_ratio=_comp_ratio(drop, m_grok),
        tiny_drop=_tiny_drop(drop, m_grok, cfg))


def reference_floor(cells: Sequence[CellSummary]) -> float | None:
    """The median of the cells' median floors (cells without a floor left out): the
    reference of ``HIGH_FLOOR_OUTLIER``."""
    floors = np.sort(np.asarray([c.floor for c in cells if c.floor is not None], dtype=float))
    n = floors.size
    # np.median's two middle values, averaged without overflow near ±1.8e308 (mean2)
    return float(mean2(floors[(n - 1) // 2], floors[n // 2])) if n else None


def apply_high_floor_gate(cells: Sequence[CellSummary], cfg: AuditConfig
                          ) -> tuple[CellSummary, ...]:
    """Add ``HIGH_FLOOR_OUTLIER`` to cells whose median floor exceeds ``high_floor_factor`` ×
    the median floor of all cells of the study (:func:`reference_floor`). The default gates
    apply it only when that median is positive; ``gates = reference`` applies it whatever its
    sign, as v1.5 does (spec §B2–§B3), and sets v1.5's ``high_floor`` and ``boundary`` flags
    of cells that carry a :class:`ReferenceCell`."""
    from dataclasses import replace

    ref = reference_floor(cells)
    v15 = cfg.gates == "reference"
    out = []
    for c in cells:
        high = (ref is not None and c.floor is not None and (v15 or ref > 0)
                and c.floor > cfg.high_floor_factor * ref)
        if high:
            c = replace(c, gates=(*c.gates, Reason.HIGH_FLOOR_OUTLIER))
        if c.reference is not None:
            c = replace(c, reference=replace(c.reference, high_floor=high,
                                             boundary=high or c.reference.tiny_drop))
        out.append(c)
    return tuple(out)
