"""Study verdicts (AUDIT_SPEC §3): orderings with Kendall bounds, the clock verdict, and the
snapshot hazards, over the cells that pass every gate."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .config import AuditConfig
from .reasons import DEFAULT_CRITICAL, INFO_CODES, Reason, Severity
from .results import CellSummary, Finding, Interval, Ordering
from .text import format_value

TIME_QUANTITIES = ("t_grok", "t_compress", "lag")
VALUE_QUANTITIES = ("floor", "m_grok")
QUANTITIES = TIME_QUANTITIES + VALUE_QUANTITIES


def severity_of(code: Reason) -> Severity:
    """The default severity of a code (AUDIT_SPEC §4)."""
    if code in DEFAULT_CRITICAL:
        return Severity.CRITICAL
    if code in INFO_CODES:
        return Severity.INFO
    return Severity.WARNING


def _cell_interval(c: CellSummary, q: str) -> tuple[float, float, float, bool] | None:
    """``(lower, upper, value, censored)`` of quantity ``q`` for cell ``c``; None if missing."""
    if q in TIME_QUANTITIES:
        iv: Interval | None = getattr(c, q)
        if iv is None or iv.lower is None:
            return None
        v = iv.value if iv.value is not None else math.nan
        # a left-censored median (before logging began) overlaps like a censored one
        return iv.lower, iv.upper_or_inf, v, iv.censored or iv.left_censored
    v2: float | None = getattr(c, q)
    if v2 is None or c.delta is None:
        return None
    return v2 - c.delta, v2 + c.delta, v2, False


def ordering(cells: Sequence[CellSummary], q: str, cfg: AuditConfig) -> Ordering:
    """The ordering of ``q`` against the axis over ``cells`` (already sorted by axis)."""
    pts = [(c.axis_value, _cell_interval(c, q)) for c in cells]
    pts = [(a, iv) for a, iv in pts if iv is not None]
    axis_vals = tuple(a for a, _ in pts)
    n = len(pts)
    if cfg.ordering == "spearman":
        return _spearman_ordering(q, pts, cfg)
    ivs = [iv for _, iv in pts if iv is not None]
    counts = _pair_counts(ivs, q in TIME_QUANTITIES)
    C, D, U, censored_overlap = counts if counts is not None else _pair_counts_loop(
        ivs, q in TIME_QUANTITIES)
    N = n * (n - 1) // 2
    identified = n >= 3 and abs(C - D) > U
    mids = [(iv[0] + iv[1]) / 2 for _, iv in pts]  # type: ignore[index]
    rho = None
    if n >= 3 and all(math.isfinite(m) for m in mids):
        r = _spearman([float(a) for a in axis_vals], mids)
        rho = None if not np.isfinite(r) else float(r)
    if not identified:
        sub = (Reason.TOO_FEW_CELLS if n < 3 else
               Reason.CENSORED_INTERVALS_OVERLAP if censored_overlap else
               # every pair ordered, as many falling as rising: tau is 0, there is no sign
               Reason.NO_NET_DIRECTION if U == 0 else
               Reason.TIES_WITHIN_RESOLUTION)
        bounds = ((C - D - U) / N, (C - D + U) / N) if N else None
        return Ordering(q, n, C, D, U, False, 0, None, bounds, rho, Reason.ORDERING_UNDEFINED,
                        sub, axis_vals)
    lo, hi = (C - D - U) / N, (C - D + U) / N
    if lo > cfg.mono_threshold or hi < -cfg.mono_threshold:
        shape = "monotone"
    elif -cfg.flat_threshold <= lo and hi <= cfg.flat_threshold:
        shape = "flat"
    else:
        shape = "weak"
    return Ordering(q, n, C, D, U, True, 1 if C > D else -1, shape, (lo, hi), rho,
                    Reason.ORDERING_IDENTIFIED, None, axis_vals)


Quad = tuple[float, float, float, bool]  #: ``(lower, upper, value, censored)`` of a cell


def _pair_counts_loop(ivs: Sequence[Quad], time: bool) -> tuple[int, int, int, bool]:
    """The definition of the pair counts over cells in axis order: ``(C, D, U, censored
    overlap)``. A pair ``i < j`` is concordant when ``i``'s interval lies wholly below
    ``j``'s, discordant when wholly above, unidentified otherwise; ``censored overlap`` says
    whether an unidentified pair involves a censored cell. Every pair is visited: O(n²), the
    reference for :func:`_pair_counts` and its fallback."""
    n = len(ivs)
    C = D = U = 0
    censored_overlap = False
    for i in range(n):
        li, ui, vi, ci = ivs[i]
        for j in range(i + 1, n):
            lj, uj, vj, cj = ivs[j]
            if time:
                # (l, u] half-open: events first seen at consecutive logged steps are ordered
                before = ui <= lj and not (vi == vj)
                after = uj <= li and not (vi == vj)
            else:
                before = ui < lj
                after = uj < li
            if before:
                C += 1
            elif after:
                D += 1
            else:
                U += 1
                if ci or cj:
                    censored_overlap = True
    return C, D, U, censored_overlap


def _pairs_below(key: np.ndarray, query: np.ndarray, group: np.ndarray | None = None) -> int:
    """``#{(i, j): i < j, key[i] <= query[j], group[i] == group[j]}`` (integer arrays in
    position order; ``group`` < 0 takes no part), without visiting the pairs: the positions are
    split in halves, quarters… and at each level every right half's queries are counted
    against its left half's sorted keys at once. O(n log² n)."""
    if group is not None:
        part = group >= 0
        pos = np.flatnonzero(part)
        key, query, group = key[part], query[part], group[part]
    else:
        pos = np.arange(key.size)
    n = pos.size
    if n < 2:
        return 0
    lo = min(int(key.min()), int(query.min()))
    key, query = key - lo, query - lo
    span = max(int(key.max()), int(query.max())) + 1
    total = 0
    h = 1
    top = int(pos[-1]) + 1
    while h < top:
        block = pos // (2 * h)
        left = (pos % (2 * h)) < h
        bid = block if group is None else np.unique(block * (int(group.max()) + 1) + group,
                                                    return_inverse=True)[1].ravel()
        keys = np.sort(bid[left] * span + key[left])
        qb = bid[~left] * span
        total += int((np.searchsorted(keys, qb + query[~left], side="right")
                      - np.searchsorted(keys, qb, side="left")).sum())
        h *= 2
    return total


def _pair_counts(ivs: Sequence[Quad], time: bool) -> tuple[int, int, int, bool] | None:
    """:func:`_pair_counts_loop` without the loop over pairs (issue 10: it was quadratic in
    cells, so in runs for a study of many small cells). Exact, with the same comparisons on
    ranks of the same floats. Returns None, for the loop to decide, outside the cases it is
    written for: a NaN or infinite lower bound, a lower bound above its upper bound, a censored
    cell with a finite upper bound or a value, or a censored cell of a value quantity."""
    n = len(ivs)
    if n < 2:
        return 0, 0, 0, False
    a = np.array([iv[:3] for iv in ivs], dtype=np.float64)
    lo, up, val = a[:, 0], a[:, 1], a[:, 2]
    cens = np.array([bool(iv[3]) for iv in ivs])
    with np.errstate(invalid="ignore"):
        if not (np.isfinite(lo).all() and not np.isnan(up).any() and (lo <= up).all()):
            return None
        if cens.any() and not (time and np.isinf(up[cens]).all()
                               and np.isnan(val[cens]).all()):
            return None
    # one rank space for lowers and uppers: comparisons of floats become comparisons of ranks
    _, inv = np.unique(np.concatenate([lo, up]), return_inverse=True)
    inv = inv.ravel().astype(np.int64)
    rl, ru = inv[:n], inv[n:]
    strict = 0 if time else 1  # u < l  <=>  rank(u) <= rank(l) - 1
    # below[i, j] = interval i wholly below interval j
    below_ij = _pairs_below(ru, rl - strict)  # i < j, i below j
    below_ji = _pairs_below(-rl, -ru - strict)  # i < j, j below i
    if time:
        # ties in value are never ordered: count them out (NaN values are never equal)
        _, vg = np.unique(val, return_inverse=True)
        vg = np.where(np.isnan(val), -1, vg.ravel()).astype(np.int64)
        C = below_ij - _pairs_below(ru, rl, vg)
        after = below_ji - _pairs_below(-rl, -ru, vg)
        # a pair below each other both ways (l = u, all four equal) is concordant: its
        # "after" is not counted twice
        both = 0
        point = lo == up
        if point.any():
            _, pg = np.unique(lo[point], return_inverse=True)
            pg = pg.ravel()
            g = np.bincount(pg)
            both = int((g * (g - 1) // 2).sum())
            pv = vg[point]
            ok = pv >= 0
            if ok.any():  # ... unless their values are equal (then neither way counts)
                _, sub = np.unique(pg[ok] * (int(pv.max()) + 1) + pv[ok], return_inverse=True)
                gv = np.bincount(sub.ravel())
                both -= int((gv * (gv - 1) // 2).sum())
        D = after - both
        # a censored cell (upper = inf, no value) is ordered only against the cells wholly
        # below it; it takes part in an unidentified pair unless every other cell is
        overlap = False
        if cens.any():
            below_k = np.searchsorted(np.sort(ru), rl[cens], side="right")
            overlap = bool((below_k < n - 1).any())
    else:
        C, D, overlap = below_ij, below_ji, False  # strict: both ways is impossible
    U = n * (n - 1) // 2 - C - D
    return int(C), int(D), int(U), overlap


def _ranks(a: np.ndarray) -> np.ndarray:
    """Average ranks (ties share the mean of their ranks), like ``scipy.stats.rankdata``."""
    order = np.argsort(a, kind="mergesort")
    sa = a[order]
    starts = np.r_[0, np.flatnonzero(sa[1:] != sa[:-1]) + 1]
    ends = np.r_[starts[1:], sa.size]
    avg = (starts + ends + 1) / 2.0  # 1-based mean rank of each tie group
    ranks = np.empty(a.size)
    ranks[order] = np.repeat(avg, ends - starts)
    return ranks


def _spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho (Pearson on average ranks); NaN when an input is constant.

    Computed with numpy so the core does not import ``scipy.stats`` (about a second of start-up).
    """
    rx, ry = _ranks(np.asarray(x, dtype=float)), _ranks(np.asarray(y, dtype=float))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dx, dy = rx - rx.mean(), ry - ry.mean()
        den = float(np.sqrt((dx * dx).sum() * (dy * dy).sum()))
        return float((dx * dy).sum() / den) if den > 0 else math.nan


def _spearman_ordering(q: str, pts: list[tuple[Any, Any]], cfg: AuditConfig) -> Ordering:
    """The reference analyzer's ordering: Spearman on point medians, ≥ 3 finite cells."""
    fin = [(a, iv[2]) for a, iv in pts if not iv[3] and math.isfinite(iv[2])]
    axis_vals = tuple(a for a, _ in fin)
    n = len(fin)
    if n < 3:
        return Ordering(q, n, 0, 0, 0, False, 0, None, None, None, Reason.ORDERING_UNDEFINED,
                        Reason.TOO_FEW_CELLS, axis_vals)
    r = _spearman([float(a) for a, _ in fin], [v for _, v in fin])
    if not np.isfinite(r):
        return Ordering(q, n, 0, 0, 0, False, 0, None, None, None, Reason.ORDERING_UNDEFINED,
                        Reason.TIES_WITHIN_RESOLUTION, axis_vals)
    rho = float(r)
    shape = ("monotone" if abs(rho) > cfg.mono_threshold else
             "flat" if abs(rho) <= cfg.flat_threshold else "weak")
    return Ordering(q, n, 0, 0, 0, True, 1 if rho > 0 else (-1 if rho < 0 else 0), shape, None,
                    rho, Reason.ORDERING_IDENTIFIED, None, axis_vals)


def clock_verdict(passing: Sequence[CellSummary], orderings: Mapping[str, Ordering],
                  rel_low: np.ndarray, rel_high: np.ndarray, n_eligible: int, n_censored: int,
                  cfg: AuditConfig) -> tuple[Reason, dict[str, Any]]:
    """The clock verdict from the eligible runs' lags and the two time orderings.

    ``rel_low``/``rel_high`` bound each eligible run's ``rel_lag`` (equal when uncensored,
    ``high = inf`` when ``t_compress`` is censored).
    """
    frac = n_censored / n_eligible if n_eligible else 1.0
    ev: dict[str, Any] = {"eligible_runs": n_eligible, "censored_t_compress": n_censored,
                          "censored_fraction": frac, "censor_warn": cfg.censor_warn}
    if n_eligible == 0 or frac > cfg.censor_warn:
        return Reason.INCONCLUSIVE_CENSORING, ev
    if cfg.lag_class == "cell_medians":
        large = _cell_median_lag(passing, cfg, ev)
    else:
        large_or_none = _pooled_lag(rel_low, rel_high, cfg, ev)
        if large_or_none is None:
            return Reason.INCONCLUSIVE_CENSORING, ev
        large = large_or_none
    ev["large"] = large
    if not large:
        return Reason.SINGLE_CLOCK_SMALL_LAG, ev
    og, oc = orderings["t_grok"], orderings["t_compress"]
    if cfg.clock_rule == "sign":
        return _sign_rule(passing, og, oc, ev), ev
    ev["t_grok_ordering"] = og.shape if og.identified else None
    ev["t_compress_ordering"] = oc.shape if oc.identified else None
    if not (og.identified and oc.identified):
        return Reason.LARGE_LAG_ORDERING_UNDETERMINED, ev
    if og.monotone and oc.monotone:
        return (Reason.TWO_CLOCKS if og.direction != oc.direction
                else Reason.ONE_CLOCK_LARGE_LAG), ev
    return Reason.PARTIALLY_SEPARATED, ev


def _pooled_lag(rel_low: np.ndarray, rel_high: np.ndarray, cfg: AuditConfig,
                ev: dict[str, Any]) -> bool | None:
    """Whether the lag is large from the pooled eligible runs' rel_lag bounds (the default
    ``lag_class = runs``); None when the log cannot say (no finite rel_lag, or the censored
    runs decide)."""
    ok = ~np.isnan(rel_low)
    lo_med = float(np.median(rel_low[ok])) if ok.any() else math.nan
    hi_med = float(np.median(rel_high[ok])) if ok.any() else math.nan
    ev.update({"median_rel_lag_low": lo_med, "median_rel_lag_high": hi_med,
               "large_lag": cfg.large_lag})
    if not ok.any():
        return None
    if lo_med > cfg.large_lag:
        return True
    if hi_med <= cfg.large_lag:
        return False
    # the censored runs decide whether the lag is large: the log cannot say
    ev["lag_straddles_threshold"] = True
    return None


def _cell_median_lag(passing: Sequence[CellSummary], cfg: AuditConfig,
                     ev: dict[str, Any]) -> bool:
    """v1.5's lag class (``lag_class = cell_medians``, spec §Q1): the median of the passing
    cells' median rel_lag, large when above ``large_lag``; small when no cell has one."""
    rels = [c.rel_lag for c in passing if c.rel_lag is not None and math.isfinite(c.rel_lag)]
    med = float(np.median(rels)) if rels else math.nan
    ev.update({"median_cell_rel_lag": med, "large_lag": cfg.large_lag})
    return bool(rels) and med > cfg.large_lag


def _first_min(values: Sequence[float]) -> int:
    """The index of the first smallest non-NaN value, −1 when there is none."""
    best = -1
    for i, v in enumerate(values):
        if not math.isnan(v) and (best < 0 or v < values[best]):
            best = i
    return best


def _value(iv: Interval | None) -> float:
    return math.nan if iv is None or iv.value is None else float(iv.value)


def _sign_rule(passing: Sequence[CellSummary], og: Ordering, oc: Ordering,
               ev: dict[str, Any]) -> Reason:
    """v1.5's clock type for a large lag (``clock_rule = sign``, spec §V): undetermined unless
    both Spearman coefficients are defined; two clocks when their signs are opposite (any
    magnitude); partially separated when the cell with the earliest t_grok is not the one with
    the earliest t_compress (first minimum in axis order); else one clock."""
    rg, rc = og.spearman, oc.spearman
    known = rg is not None and rc is not None
    opposite = rg is not None and rc is not None and rg * rc < 0
    kg = _first_min([_value(c.t_grok) for c in passing])
    kc = _first_min([_value(c.t_compress) for c in passing])
    shifted = kg >= 0 and kc >= 0 and kg != kc
    ev.update({"ordering_known": known, "opposite_order": opposite, "shifted_argmin": shifted})
    if not known:
        return Reason.LARGE_LAG_ORDERING_UNDETERMINED
    if opposite:
        return Reason.TWO_CLOCKS
    if shifted:
        return Reason.PARTIALLY_SEPARATED
    return Reason.ONE_CLOCK_LARGE_LAG


def reference_evidence(cells: Sequence[CellSummary], passing: Sequence[CellSummary],
                       orderings: Mapping[str, Ordering]) -> dict[str, Any]:
    """The v1.5 analyzer's study numbers (spec §B2, §Q0–§Q4) for the verdict's evidence under
    ``--profile reference``: the reference floor, the seed totals of every cell, the gap
    median and span, the three Spearman coefficients, the earliest and fastest cells and the
    endpoint's span and CV (``std / max(1e-12, mean)``, printed by v1.5, never a verdict)."""
    floors_all = [c.floor for c in cells if c.floor is not None]
    refs = [c.reference for c in cells if c.reference is not None]
    total_valid = sum(r.n_valid for r in refs)
    total_cens = sum(r.n_censored for r in refs)
    gaps = [_value(c.lag) for c in passing]
    fin_gaps = [g for g in gaps if not math.isnan(g)]
    rates = [math.nan if c.reference is None or c.reference.rate is None else c.reference.rate
             for c in passing]
    k_rate = _first_max(rates)
    kg = _first_min([_value(c.t_grok) for c in passing])
    kc = _first_min([_value(c.t_compress) for c in passing])
    floors = [c.floor for c in passing]
    span = cv = None
    if len(floors) >= 2 and all(f is not None and math.isfinite(f) for f in floors):
        fl = np.array(floors, dtype=float)
        with np.errstate(over="ignore"):
            span = float(fl.max() - fl.min())
        mean, std = mean_std(fl)
        cv = std / max(1e-12, mean)
    two = len(passing) >= 2
    return {
        "reference_floor": float(np.median(floors_all)) if floors_all else None,
        "boundary_cells": [c.axis_value for c in cells
                           if c.reference is not None and c.reference.boundary],
        "total_valid": total_valid, "total_censored": total_cens,
        "overall_censor_frac": total_cens / total_valid if total_valid else None,
        "gap_median": float(np.median(fin_gaps)) if two and fin_gaps else None,
        "gap_span": max(fin_gaps) - min(fin_gaps) if two and fin_gaps else None,
        # no axis (one run, or runs with no varying condition): no ordering, no spearman
        "spearman_t_grok": _ordering_spearman(orderings, "t_grok"),
        "spearman_t_compress": _ordering_spearman(orderings, "t_compress"),
        "spearman_lag": _ordering_spearman(orderings, "lag"),
        "axis_earliest_grok": passing[kg].axis_value if two and kg >= 0 else None,
        "axis_earliest_compress": passing[kc].axis_value if two and kc >= 0 else None,
        "axis_fastest_rate": passing[k_rate].axis_value if two and k_rate >= 0 else None,
        "floor_span": span, "floor_cv": cv,
    }


def mean_std(a: np.ndarray) -> tuple[float, float]:
    """``(mean, std)`` (population std) of finite values, also near ±1.8e308: where the
    plain computation leaves the float range, it is redone on the values scaled by their
    largest magnitude (elsewhere the plain values, bit for bit)."""
    with np.errstate(over="ignore", invalid="ignore"):
        mean, std = float(np.mean(a)), float(np.std(a))
    if not (math.isfinite(mean) and math.isfinite(std)) and a.size \
            and bool(np.isfinite(a).all()):
        scale = float(np.max(np.abs(a)))
        if scale > 0:
            b = a / scale
            mean, std = float(np.mean(b)) * scale, float(np.std(b)) * scale
    return mean, std


def _first_max(values: Sequence[float]) -> int:
    """The index of the first largest non-NaN value, −1 when there is none."""
    best = -1
    for i, v in enumerate(values):
        if not math.isnan(v) and (best < 0 or v > values[best]):
            best = i
    return best


def snapshot_findings(cells: Sequence[CellSummary], orderings: Mapping[str, Ordering],
                      base: Mapping[str, Any], cfg: AuditConfig | None = None) -> list[Finding]:
    """The snapshot hazards of §3: transient cells, reversed orderings, hidden boundaries.

    A gated cell hides a boundary when it reads like a passing neighbour at grok, judged on the
    scale of the at-grok values (``max(abs_tol, rel_tol·|neighbour's m_grok|)``), while their
    floors differ by more than the neighbour's floor band δ."""
    cfg = cfg or AuditConfig()
    out: list[Finding] = []
    for c in cells:
        judged = c.n_judged  # runs with a ratio: a finding resting on one run still counts
        if judged and 2 * c.n_transient > judged:
            why = _undefined_at_grok(c)
            ratio = (f"≥ ×{_sig3(c.inflation)}, floor not reached: {_stab_words(c)}"
                     if c.inflation_is_lower_bound else f"×{_sig3(c.inflation)}")
            message = (f"{c.n_transient}/{judged} runs read at grok are transients: median "
                       f"m_grok {_sig3(c.m_grok)} vs floor {_sig3(c.floor)} ({ratio})"
                       if c.m_grok is not None and c.inflation is not None else
                       f"{c.n_transient}/{judged} runs read at grok are transients (the cell's "
                       "median m_grok is not known: some runs grokked before logging began)")
            if why:
                message += f"; not critical: the value at grok is not defined here ({why})"
            out.append(_finding(
                Reason.SNAPSHOT_TRANSIENT, "cell", base, cell=c.axis_value, runs=c.runs,
                severity=Severity.WARNING if why else None,
                evidence={"n_transient": c.n_transient, "n_judged": judged,
                          "n_grokked": c.n_grokked,
                          "n_transient_sustained": c.n_transient_sustained,
                          "median_inflation": c.inflation,
                          "inflation_is_lower_bound": c.inflation_is_lower_bound,
                          "m_grok": c.m_grok, "floor": c.floor,
                          "value_at_grok_defined": not why},
                message=message))
    og, of = orderings.get("m_grok"), orderings.get("floor")
    if og and of and og.monotone and of.monotone and og.direction != of.direction:
        out.append(_finding(
            Reason.SNAPSHOT_REVERSES_ORDERING, "study", base,
            evidence={"m_grok_direction": og.direction, "floor_direction": of.direction,
                      "m_grok_tau": og.tau_bounds, "floor_tau": of.tau_bounds,
                      "m_grok_spearman": og.spearman, "floor_spearman": of.spearman},
            message=("the at-grok value and the converged floor are ordered in opposite "
                     "directions along the axis")))
    for k, c in enumerate(cells):
        if c.passes or c.m_grok is None or c.floor is None:
            continue
        why = _undefined_at_grok(c)
        for nb in (cells[k - 1] if k > 0 else None, cells[k + 1] if k + 1 < len(cells) else None):
            if nb is None or not nb.passes or nb.m_grok is None or nb.floor is None \
                    or nb.delta is None:
                continue
            at_grok_tol = max(cfg.abs_tol, cfg.rel_tol * abs(nb.m_grok))
            if abs(c.m_grok - nb.m_grok) <= at_grok_tol and abs(c.floor - nb.floor) > nb.delta:
                out.append(_finding(
                    Reason.SNAPSHOT_HIDES_BOUNDARY, "cell", base, cell=c.axis_value, runs=c.runs,
                    severity=Severity.WARNING if why else None,
                    evidence={"boundary_cell": c.axis_value, "neighbour": nb.axis_value,
                              "value_at_grok_defined": not why,
                              "gates": [g.value for g in c.gates],
                              "m_grok": c.m_grok, "neighbour_m_grok": nb.m_grok,
                              "floor": c.floor, "neighbour_floor": nb.floor,
                              "m_grok_tolerance": at_grok_tol, "delta": nb.delta},
                    message=(f"boundary cell {format_value(c.axis_value)} reads {_sig3(c.m_grok)} at "
                             f"grok, like its neighbour {format_value(nb.axis_value)} "
                             f"({_sig3(nb.m_grok)}), but their floors "
                             f"differ ({_sig3(c.floor)} vs {_sig3(nb.floor)})"
                             + (f"; not critical: the boundary cell's value at grok is not "
                                f"defined ({why})" if why else ""))))
    return out


def _undefined_at_grok(c: CellSummary) -> str:
    """Why "the value at grok" of cell ``c`` has no meaning (empty when it has one): the cell
    did not generalize, or most of its groks were not sustained (the first spike past the
    threshold is not a grok)."""
    for gate in (Reason.NO_GROK, Reason.BOUNDARY_PARTIAL_GENERALIZATION):
        if gate in c.gates:
            return f"the cell did not generalize: {gate.value}"
    if c.n_transient and 2 * c.n_transient_sustained <= c.n_transient:
        return (f"the grok was not sustained in {c.n_transient - c.n_transient_sustained}/"
                f"{c.n_transient} transient runs: GROK_NOT_SUSTAINED")
    return ""


def _stab_words(c: CellSummary) -> str:
    parts = [f"{v} {k}" for k, v in sorted(c.floor_stability.items()) if k != "stable"]
    return " / ".join(parts) or "floor not stable"


def endpoint_finding(passing: Sequence[CellSummary], base: Mapping[str, Any],
                     cfg: AuditConfig) -> Finding | None:
    """``SHARED_ENDPOINT`` when the passing cells' floors have a CV below ``endpoint_cv``."""
    floors = np.array([c.floor for c in passing if c.floor is not None], dtype=float)
    if floors.size < 2:
        return None
    mean, std = mean_std(floors)
    if mean <= 0:
        return None
    cv = std / mean
    if cv >= cfg.endpoint_cv:
        return None
    return _finding(Reason.SHARED_ENDPOINT, "study", base,
                    evidence={"floor_cv": cv, "floors": floors.tolist()},
                    message=f"passing cells share one converged floor (CV {cv:.3f})")


def _sig3(x: float | None) -> str:
    """Three significant digits (``1.23e+03``): the findings' messages quote values so, not as
    :func:`~grokaudit.results.format_number` does (its ``1235``)."""
    return "—" if x is None else f"{x:.3g}"


def _finding(code: Reason, scope: str, base: Mapping[str, Any], *, message: str,
             cell: Any = None, runs: Sequence[str] = (), evidence: Mapping[str, Any] | None = None,
             severity: Severity | None = None) -> Finding:
    return Finding(code=code, severity=severity or severity_of(code), scope=scope,
                   message=message, study=dict(base.get("study", {})),
                   metric=base.get("metric"), cell=cell, runs=tuple(runs),
                   evidence=dict(evidence or {}))


make_finding = _finding


def _ordering_spearman(orderings: Mapping[str, Any], name: str) -> float | None:
    o = orderings.get(name)
    return None if o is None else o.spearman
