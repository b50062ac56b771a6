"""A clean-room re-implementation of the public "v1.5 analyzer" rules, one run at a time.

Written from ``benchmarks/v15_spec.md`` (the specification of
``ClevixLab/grokking-compression-clock``, ``audit/analyze_compression_clock_v1_5.py``); no code
of that file is reproduced here. The spec's item numbers (``§S3`` …) are quoted in comments.

It is deliberately plain: a Python loop over the seeds of a cell and over the logged points of
a seed, numpy only for medians. It stands for "the rules grokaudit replaces" in a speed
benchmark and is the oracle that ``--profile reference`` is compared with.

Layout of the computation (as in v1.5):

* a *cell* is one axis value (v1.5: one ``longtrain_*rho*.npz`` file); its runs share one step
  grid (v1.5 stores a single ``steps`` vector and ``(seeds, T)`` matrices). :func:`cell_grid`
  puts the runs of a canonical table on the union of their steps, NaN where a run has no row;
* :func:`seed_clock` is the per-seed rule set (§S1–§S9);
* :func:`cell_row` the per-cell medians and counts (§C1–§C6);
* :func:`study` the boundary gate, the censoring fraction, the lag class, the Spearman
  orderings, the endpoint CV and the verdict (§B, §Q, §V).

Usage::

    python benchmarks/v15_loop.py reference_runs/data/external_alpha_sweep.parquet \
        --by alpha --metric eff_rank_E [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

NAN = float("nan")

# the verdicts, in the order v1.5 tests them (§V)
LOW_POWER = "LOW-POWER / DESCRIPTIVE ONLY"
INCONCLUSIVE = "INCONCLUSIVE due to censoring"
LARGE_LAG_UNDETERMINED = "LARGE LAG, ORDERING UNDETERMINED"
TWO_CLOCKS = "TWO CLOCKS"
PARTIALLY_SEPARATED = "PARTIALLY SEPARATED CLOCKS"
ONE_CLOCK_LARGE_LAG = "ONE CLOCK + LARGE LAG"
SINGLE_CLOCK_SMALL_LAG = "SINGLE CLOCK / SMALL LAG"


@dataclass(frozen=True)
class Params:
    """v1.5's command-line parameters and their defaults, plus its two hard-coded gate
    constants (§P)."""

    eps: float = 0.10
    floor_frac: float = 0.10
    min_drop: float = 1.0
    grok_thr: float = 0.90
    censor_warn: float = 0.25
    big_gap_rel: float = 0.50
    floor_cv_shared: float = 0.15
    high_floor_factor: float = 3.0  # not an option in v1.5: a literal in the boundary gate
    tiny_drop_ratio: float = 0.25  # idem


@dataclass
class SeedClock:
    """One seed's clocks (§S): NaN where v1.5 writes NaN."""

    seed: int
    run: str
    t_grok: float
    m_grok: float
    floor: float
    drop: float
    t_compress: float
    m_compress: float
    gap: float
    rel_gap: float
    rate: float
    censored: bool
    valid_comp: bool


@dataclass
class CellRow:
    """One cell's counts and medians (§C) and its boundary flag (§B)."""

    axis_value: float
    n: int
    n_valid: int
    n_censored: int
    censor_frac: float
    amp_invalid_frac: float
    t_grok: float
    m_grok: float
    floor: float
    drop: float
    t_compress: float
    gap: float
    rel_gap: float
    rate: float
    no_grok: bool
    boundary: bool = False
    comp_ratio: float = NAN
    high_floor: bool = False
    tiny_drop: bool = False
    n_runs_in: int = 0  # runs of the cell in the input (v1.5's S), for the report only
    seeds: list[SeedClock] = field(default_factory=list)


# ------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------

def finite(x: float) -> bool:
    return isinstance(x, (int, float, np.floating, np.integer)) and math.isfinite(float(x))


def floor_count(n_grid: int, floor_frac: float) -> int:
    """§S4: how many trailing grid positions make the floor window (truncating, at least 1)."""
    return max(1, int(floor_frac * n_grid))


def median_of_finite(values: Sequence[float]) -> float:
    """§C2: the median of the finite values, NaN when there is none."""
    keep = [float(v) for v in values if finite(v)]
    return float(np.median(keep)) if keep else NAN


def average_ranks(values: Sequence[float]) -> list[float]:
    """Ranks 1..n, tied values sharing the mean of their ranks (§Q3)."""
    n = len(values)
    order = sorted(range(n), key=lambda i: values[i])
    ranks = [0.0] * n
    i = 0
    while i < n:
        j = i
        while j + 1 < n and values[order[j + 1]] == values[order[i]]:
            j += 1
        mean_rank = (i + j) / 2.0 + 1.0
        for k in range(i, j + 1):
            ranks[order[k]] = mean_rank
        i = j + 1
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """§Q3: Spearman's rho on the pairs where both are finite; NaN with fewer than 3 such pairs
    or when either side has no spread."""
    pairs = [(float(a), float(b)) for a, b in zip(x, y) if finite(a) and finite(b)]
    if len(pairs) < 3:
        return NAN
    rx = np.asarray(average_ranks([a for a, _ in pairs]), dtype=float)
    ry = np.asarray(average_ranks([b for _, b in pairs]), dtype=float)
    rx = rx - rx.mean()
    ry = ry - ry.mean()
    den = math.sqrt(float((rx ** 2).sum()) * float((ry ** 2).sum()))
    if not den > 0:
        return NAN
    return float((rx * ry).sum()) / den


# ------------------------------------------------------------------------------------------
# per seed (§S)
# ------------------------------------------------------------------------------------------

def seed_clock(steps: Sequence[float], test_acc: Sequence[float], metric: Sequence[float],
               n_floor: int, p: Params, seed: int = 0, run: str = "") -> SeedClock | None:
    """The clocks of one seed from its row of the cell's grid (equal lengths; NaN = not logged).

    Returns None where v1.5 drops the seed without a trace (§S2, §S5): no point with both
    values finite, no grok, or no finite metric value in the floor window.
    """
    st = [float(v) for v in steps]
    a = [float(v) for v in test_acc]
    m = [float(v) for v in metric]
    if not (len(st) == len(a) == len(m)):
        raise ValueError("steps, test_acc and metric must have one length (the cell's grid)")
    both = [math.isfinite(m[i]) and math.isfinite(a[i]) for i in range(len(st))]
    if not any(both):
        return None
    # §S2: the grok point is the first grid index with both values finite and acc >= threshold
    gi = -1
    for i in range(len(st)):
        if both[i] and a[i] >= p.grok_thr:
            gi = i
            break
    if gi < 0:
        return None
    t_grok = st[gi]
    m_grok = m[gi]  # §S3: the metric at that very index (finite by construction)
    # §S4: floor = median of the finite metric values among the last n_floor grid positions
    window = [v for v in m[max(0, len(m) - n_floor):] if math.isfinite(v)]
    if not window or not math.isfinite(m_grok):
        return None
    floor = float(np.median(window))
    drop = m_grok - floor  # §S5
    if not (math.isfinite(drop) and drop >= p.min_drop):  # §S6: the absolute amplitude rule
        return SeedClock(seed, run, t_grok, m_grok, floor, drop, NAN, NAN, NAN, NAN, NAN,
                         False, False)
    # §S7: the first grid index at or after the grok step (by step value, in array order)
    # whose raw metric value is at or below floor + eps * drop
    threshold = floor + p.eps * drop
    candidates = [i for i in range(len(st)) if st[i] >= t_grok and math.isfinite(m[i])]
    if not candidates:  # only reachable with a NaN grok step; v1.5 fails here (IndexError)
        raise ValueError(f"run {run!r}: no finite metric point at or after the grok step")
    hit = -1
    for i in candidates:
        if m[i] <= threshold:
            hit = i
            break
    censored = hit < 0
    if censored:  # §S8: censored seeds keep the last candidate point as their t_compress
        hit = candidates[-1]
    t_compress = st[hit]
    gap = t_compress - t_grok  # §S9
    rel_gap = gap / t_grok if (t_grok > 0 and math.isfinite(gap)) else NAN
    rate = drop / gap if (gap > 0 and math.isfinite(drop)) else NAN
    return SeedClock(seed, run, t_grok, m_grok, floor, drop, t_compress, m[hit], gap, rel_gap,
                     rate, censored, True)


def seed_clock_np(steps: np.ndarray, test_acc: np.ndarray, metric: np.ndarray, n_floor: int,
                  p: Params, seed: int = 0, run: str = "") -> SeedClock | None:
    """:func:`seed_clock` with v1.5's own cost model: the seed's row as numpy arrays, numpy for
    the masks, the grok index and the floor median, and a Python scan of the post-grok points
    that stops at the first hit (as v1.5 does). Same values as :func:`seed_clock` (tested);
    used by the speed benchmark so that "the rules it replaces" are timed as v1.5 runs them."""
    e = metric
    a = test_acc
    fin = np.isfinite(e) & np.isfinite(a)
    if not fin.any():
        return None
    good = np.flatnonzero((a >= p.grok_thr) & fin)
    if good.size == 0:
        return None
    gi = int(good[0])
    t_grok = float(steps[gi])
    m_grok = float(e[gi])
    tail = e[-n_floor:]
    tail = tail[np.isfinite(tail)]
    if tail.size == 0 or not math.isfinite(m_grok):
        return None
    floor = float(np.median(tail))
    drop = m_grok - floor
    if not (math.isfinite(drop) and drop >= p.min_drop):
        return SeedClock(seed, run, t_grok, m_grok, floor, drop, NAN, NAN, NAN, NAN, NAN,
                         False, False)
    threshold = floor + p.eps * drop
    post = np.flatnonzero((steps >= t_grok) & np.isfinite(e))
    if post.size == 0:
        raise ValueError(f"run {run!r}: no finite metric point at or after the grok step")
    hit = -1
    for i in post:  # v1.5 scans the candidates one by one
        if e[i] <= threshold:
            hit = int(i)
            break
    censored = hit < 0
    if censored:
        hit = int(post[-1])
    t_compress = float(steps[hit])
    gap = t_compress - t_grok
    rel_gap = gap / t_grok if (t_grok > 0 and math.isfinite(gap)) else NAN
    rate = drop / gap if (gap > 0 and math.isfinite(drop)) else NAN
    return SeedClock(seed, run, t_grok, m_grok, floor, drop, t_compress, float(e[hit]), gap,
                     rel_gap, rate, censored, True)


def cell_row_np(axis_value: float, steps: np.ndarray, acc_rows: np.ndarray,
                metric_rows: np.ndarray, p: Params,
                run_names: Sequence[str] | None = None) -> CellRow:
    """:func:`cell_row` over :func:`seed_clock_np` (float64 ``(seeds, T)`` matrices)."""
    steps = np.asarray(steps, dtype=float)
    acc_rows = np.asarray(acc_rows, dtype=float)
    metric_rows = np.asarray(metric_rows, dtype=float)
    n_floor = floor_count(steps.size, p.floor_frac)
    names = list(run_names) if run_names is not None else [str(i) for i in range(len(acc_rows))]
    seeds: list[SeedClock] = []
    for s in range(acc_rows.shape[0]):
        c = seed_clock_np(steps, acc_rows[s], metric_rows[s], n_floor, p, seed=s, run=names[s])
        if c is not None:
            seeds.append(c)
    return summarize(axis_value, seeds, n_runs_in=acc_rows.shape[0])


# ------------------------------------------------------------------------------------------
# per cell (§C)
# ------------------------------------------------------------------------------------------

def cell_row(axis_value: float, steps: Sequence[float], acc_rows: Sequence[Sequence[float]],
             metric_rows: Sequence[Sequence[float]], p: Params,
             run_names: Sequence[str] | None = None) -> CellRow:
    """The cell's row from its grid (``steps``) and one acc row and metric row per seed."""
    n_floor = floor_count(len(steps), p.floor_frac)  # §S4: from the grid length, not per seed
    names = list(run_names) if run_names is not None else [str(i) for i in range(len(acc_rows))]
    seeds: list[SeedClock] = []
    for s in range(len(acc_rows)):
        c = seed_clock(steps, acc_rows[s], metric_rows[s], n_floor, p, seed=s, run=names[s])
        if c is not None:
            seeds.append(c)
    return summarize(axis_value, seeds, n_runs_in=len(acc_rows))


def summarize(axis_value: float, seeds: list[SeedClock], n_runs_in: int = 0) -> CellRow:
    """§C1–§C6: counts over the kept seeds, medians over kept (or valid) seeds."""
    if not seeds:  # §C1: an explicit no-grok row
        return CellRow(axis_value, 0, 0, 0, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN,
                       no_grok=True, boundary=True, n_runs_in=n_runs_in, seeds=[])
    valid = [c for c in seeds if c.valid_comp]
    n_cens = sum(1 for c in valid if c.censored)
    return CellRow(
        axis_value=axis_value,
        n=len(seeds),
        n_valid=len(valid),
        n_censored=n_cens,
        censor_frac=(n_cens / len(valid)) if valid else NAN,
        amp_invalid_frac=sum(1 for c in seeds if not c.valid_comp) / len(seeds),
        t_grok=median_of_finite([c.t_grok for c in seeds]),
        m_grok=median_of_finite([c.m_grok for c in seeds]),
        floor=median_of_finite([c.floor for c in seeds]),
        drop=median_of_finite([c.drop for c in seeds]),
        t_compress=median_of_finite([c.t_compress for c in valid]),
        gap=median_of_finite([c.gap for c in valid]),
        rel_gap=median_of_finite([c.rel_gap for c in valid]),
        rate=median_of_finite([c.rate for c in valid]),
        no_grok=False,
        n_runs_in=n_runs_in,
        seeds=seeds,
    )


# ------------------------------------------------------------------------------------------
# per study (§B, §Q, §V)
# ------------------------------------------------------------------------------------------

def _nanmedian(values: Sequence[float]) -> float:
    keep = [v for v in values if not math.isnan(v)]
    return float(np.median(keep)) if keep else NAN


def _first_argmin(values: Sequence[float]) -> int:
    best = -1
    for i, v in enumerate(values):
        if not math.isnan(v) and (best < 0 or v < values[best]):
            best = i
    return best


def _first_argmax(values: Sequence[float]) -> int:
    best = -1
    for i, v in enumerate(values):
        if not math.isnan(v) and (best < 0 or v > values[best]):
            best = i
    return best


def study(cells: list[CellRow], p: Params) -> dict[str, Any]:
    """Boundary gate, data quality, lag, orderings, endpoint and verdict over the cells."""
    rows = sorted(cells, key=lambda r: r.axis_value)  # §C7: stable sort by axis value
    # §B1: the compression ratio of each cell's medians, looked up by axis value
    ratio_by_axis: dict[float, float] = {}
    for r in rows:
        ok = (r.m_grok != 0) and finite(r.drop)  # NaN m_grok counts as "truthy" in v1.5
        ratio_by_axis[r.axis_value] = r.drop / r.m_grok if ok else NAN
    cell_floors = [r.floor for r in rows if finite(r.floor)]
    floor_ref = float(np.median(cell_floors)) if cell_floors else NAN  # §B2
    for r in rows:  # §B3: recomputed for every row, no-grok rows included
        r.comp_ratio = ratio_by_axis.get(r.axis_value, NAN)
        r.high_floor = bool(finite(r.floor) and finite(floor_ref)
                            and r.floor > p.high_floor_factor * floor_ref)
        r.tiny_drop = bool(finite(r.comp_ratio) and r.comp_ratio < p.tiny_drop_ratio)
        r.boundary = r.high_floor or r.tiny_drop
    # §B4: the cells the clock verdict uses
    used = [r for r in rows if r.n_valid > 0 and finite(r.t_compress) and finite(r.gap)
            and not r.boundary]
    # §Q0: the censoring fraction over every row, gated or not
    total_valid = sum(r.n_valid for r in rows)
    total_cens = sum(r.n_censored for r in rows)
    overall_censor = total_cens / total_valid if total_valid else NAN
    axis = [float(r.axis_value) for r in used]
    gaps = [r.gap for r in used]
    rel_gaps = [r.rel_gap for r in used]
    tg = [r.t_grok for r in used]
    tc = [r.t_compress for r in used]
    rates = [r.rate for r in used]
    floors = [r.floor for r in used]
    out: dict[str, Any] = {
        "floor_median_all": floor_ref, "boundary": [r.axis_value for r in rows if r.boundary],
        "used_cells": axis, "total_valid": total_valid, "total_censored": total_cens,
        "overall_censor_frac": overall_censor,
    }
    # §Q1, §Q2
    gap_med = gap_span = rel_med = NAN
    axis_fast_grok = axis_early_comp = axis_fast_rate = NAN
    sp_g = sp_c = sp_gap = NAN
    if len(used) >= 2:
        gap_med = _nanmedian(gaps)
        fin_gaps = [g for g in gaps if not math.isnan(g)]
        gap_span = max(fin_gaps) - min(fin_gaps)
        rel_med = _nanmedian(rel_gaps)
        axis_fast_grok = axis[_first_argmin(tg)]
        axis_early_comp = axis[_first_argmin(tc)]
        k = _first_argmax(rates)
        axis_fast_rate = axis[k] if k >= 0 else NAN
        sp_g = spearman(axis, tg)
        sp_c = spearman(axis, tc)
        sp_gap = spearman(axis, gaps)
    # §Q4: endpoint
    floor_span = floor_cv = NAN
    if len(floors) >= 2 and all(finite(f) for f in floors):
        floor_span = max(floors) - min(floors)
        floor_cv = float(np.std(floors)) / max(1e-12, float(np.mean(floors)))
    out.update({
        "gap_median": gap_med, "gap_span": gap_span, "rel_gap_median": rel_med,
        "axis_fastest_grok": axis_fast_grok, "axis_earliest_compress": axis_early_comp,
        "axis_fastest_rate": axis_fast_rate, "spearman_t_grok": sp_g,
        "spearman_t_compress": sp_c, "spearman_gap": sp_gap, "floor_span": floor_span,
        "floor_cv": floor_cv,
        "shared_endpoint": (bool(floor_cv < p.floor_cv_shared) if finite(floor_cv) else None),
    })
    # §V: the verdict
    big_gap = (len(used) >= 2 and any(finite(v) for v in rel_gaps)
               and _nanmedian(rel_gaps) > p.big_gap_rel)
    high_censor = finite(overall_censor) and overall_censor > p.censor_warn
    ordering_known = finite(sp_g) and finite(sp_c)
    opposite = ordering_known and sp_g * sp_c < 0
    shifted = finite(axis_fast_grok) and finite(axis_early_comp) \
        and axis_fast_grok != axis_early_comp
    if len(used) < 2:
        verdict = LOW_POWER
    elif high_censor:
        verdict = INCONCLUSIVE
    elif big_gap and not ordering_known:
        verdict = LARGE_LAG_UNDETERMINED
    elif big_gap and opposite:
        verdict = TWO_CLOCKS
    elif big_gap and shifted:
        verdict = PARTIALLY_SEPARATED
    elif big_gap:
        verdict = ONE_CLOCK_LARGE_LAG
    else:
        verdict = SINGLE_CLOCK_SMALL_LAG
    out.update({"big_gap": bool(big_gap), "high_censor": bool(high_censor),
                "ordering_known": bool(ordering_known), "opposite_order": bool(opposite),
                "shifted_argmin": bool(shifted), "verdict": verdict})
    return out


# ------------------------------------------------------------------------------------------
# a grokaudit canonical table
# ------------------------------------------------------------------------------------------

def cell_grid(frame: Any, metric: str, acc_col: str = "test_acc"
              ) -> tuple[list[float], list[str], list[list[float]], list[list[float]]]:
    """The runs of one cell on the union of their steps (v1.5's common ``steps`` vector), in
    run-id order: ``(steps, run_ids, acc_rows, metric_rows)``, NaN where a run has no row."""
    runs = sorted(frame["run"].astype(str).unique())
    steps = sorted(float(s) for s in frame["step"].unique())
    pos = {s: i for i, s in enumerate(steps)}
    acc_rows = [[NAN] * len(steps) for _ in runs]
    met_rows = [[NAN] * len(steps) for _ in runs]
    ridx = {r: i for i, r in enumerate(runs)}
    seen: set[tuple[str, float]] = set()
    for run, step, a, m in zip(frame["run"].astype(str), frame["step"], frame[acc_col],
                               frame[metric]):
        key = (run, float(step))
        if key in seen:
            raise ValueError(f"run {run!r} logs step {step} twice")
        seen.add(key)
        j = pos[float(step)]
        acc_rows[ridx[run]][j] = float(a)
        met_rows[ridx[run]][j] = float(m)
    return steps, runs, acc_rows, met_rows


def audit_frame(df: Any, axis: str, metric: str, p: Params = Params()
                ) -> tuple[list[CellRow], dict[str, Any]]:
    """Every cell of ``df`` (one per distinct ``axis`` value) and the study over them."""
    cells: list[CellRow] = []
    for value in sorted(df[axis].unique()):
        sub = df[df[axis] == value]
        steps, runs, acc_rows, met_rows = cell_grid(sub, metric)
        cells.append(cell_row(float(value), steps, acc_rows, met_rows, p, runs))
    summary = study(cells, p)
    return cells, summary


def _num(x: Any) -> Any:
    if isinstance(x, float) and math.isnan(x):
        return None
    return x


def to_json(cells: list[CellRow], summary: dict[str, Any]) -> dict[str, Any]:
    out_cells = []
    for c in cells:
        d = {k: _num(v) for k, v in asdict(c).items() if k != "seeds"}
        d["seeds"] = [{k: _num(v) for k, v in asdict(s).items()} for s in c.seeds]
        out_cells.append(d)
    return {"cells": out_cells, "study": {k: _num(v) for k, v in summary.items()}}


def _f(x: float, nd: int = 2) -> str:
    if x is None or not finite(x):
        return "nan"
    return f"{x:.{nd}f}"


def print_report(cells: list[CellRow], summary: dict[str, Any], axis: str,
                 out: Any = sys.stdout) -> None:
    w = out.write
    w(f"per seed\n{axis:>6} {'seed':>4} {'run':<16}{'T_grok':>9}{'m_grok':>10}{'floor':>9}"
      f"{'drop':>9}{'T_comp':>9}{'gap':>9}{'rel_gap':>9}  cens valid\n")
    for c in cells:
        for s in c.seeds:
            w(f"{c.axis_value:>6.2f} {s.seed:>4} {s.run:<16}{_f(s.t_grok, 0):>9}"
              f"{_f(s.m_grok, 3):>10}{_f(s.floor, 3):>9}{_f(s.drop, 3):>9}"
              f"{_f(s.t_compress, 0):>9}{_f(s.gap, 0):>9}{_f(s.rel_gap, 3):>9}"
              f"  {int(s.censored):>4} {int(s.valid_comp):>5}\n")
    w(f"\nper cell\n{axis:>6}{'runs':>5}{'n':>3}{'valid':>6}{'cens':>5}{'T_grok':>9}"
      f"{'m_grok':>9}{'floor':>9}{'drop':>9}{'T_comp':>9}{'gap':>9}{'rel_gap':>9}"
      f"{'ratio':>7}  boundary\n")
    for c in cells:
        why = ", ".join(t for t, on in (("high floor", c.high_floor),
                                           ("tiny drop", c.tiny_drop)) if on)
        w(f"{c.axis_value:>6.2f}{c.n_runs_in:>5}{c.n:>3}{c.n_valid:>6}{c.n_censored:>5}"
          f"{_f(c.t_grok, 1):>9}{_f(c.m_grok, 3):>9}{_f(c.floor, 3):>9}{_f(c.drop, 3):>9}"
          f"{_f(c.t_compress, 1):>9}{_f(c.gap, 1):>9}{_f(c.rel_gap, 3):>9}"
          f"{_f(c.comp_ratio, 3):>7}  {'yes' if c.boundary else 'no'}"
          f"{' (' + why + ')' if why else ''}{' [no grok]' if c.no_grok else ''}\n")
    st = summary
    w(f"\nstudy\n  floor median of all cells = {_f(st['floor_median_all'], 3)}; "
      f"boundary cells = {st['boundary']}; cells used = {st['used_cells']}\n")
    w(f"  valid seeds = {st['total_valid']}, censored = {st['total_censored']} "
      f"(fraction {_f(st['overall_censor_frac'], 3)})\n")
    w(f"  median gap = {_f(st['gap_median'], 1)}, gap span = {_f(st['gap_span'], 1)}, "
      f"median of cell rel_gap = {_f(st['rel_gap_median'], 4)}\n")
    w(f"  Spearman(axis, T_grok) = {_f(st['spearman_t_grok'], 4)}, "
      f"(axis, T_compress) = {_f(st['spearman_t_compress'], 4)}, "
      f"(axis, gap) = {_f(st['spearman_gap'], 4)}\n")
    w(f"  argmin T_grok at {st['axis_fastest_grok']}, argmin T_compress at "
      f"{st['axis_earliest_compress']}, argmax rate at {st['axis_fastest_rate']}\n")
    w(f"  floor span = {_f(st['floor_span'], 3)}, floor CV = {_f(st['floor_cv'], 4)} "
      f"(shared endpoint: {st['shared_endpoint']})\n")
    w(f"VERDICT: {st['verdict']}\n")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("table", help="a grokaudit canonical table (.parquet or .csv)")
    ap.add_argument("--by", required=True, help="the axis column (one cell per value)")
    ap.add_argument("--metric", required=True)
    ap.add_argument("--json", help="also write the numbers as JSON to this path ('-' = stdout)")
    for name, default in asdict(Params()).items():
        ap.add_argument(f"--{name.replace('_', '-')}", type=float, default=default)
    args = ap.parse_args(argv)
    import pandas as pd

    path = args.table
    df = pd.read_parquet(path) if path.endswith((".parquet", ".pq")) else pd.read_csv(path)
    p = Params(**{k: getattr(args, k) for k in asdict(Params())})
    cells, summary = audit_frame(df, args.by, args.metric, p)
    if args.json == "-":
        json.dump(to_json(cells, summary), sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    print_report(cells, summary, args.by)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(to_json(cells, summary), fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
