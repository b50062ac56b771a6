"""Per-run clocks (AUDIT_SPEC §1), vectorized over runs.

Every run's logged points are packed left-aligned into an ``(R, K)`` matrix (NaN padding), so
each definition is a handful of numpy operations over all runs at once: there is no Python loop
per row or per run. Times are logged steps and are *interval-censored*: an event first seen at
logged step ``s_k`` happened in ``(s_{k-1}, s_k]``; ``upper = inf`` means right-censored.

The results are plain arrays in :class:`AccuracyClocks` and :class:`MetricClocks`; the
``results`` module turns them into per-run dataclasses.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from statistics import NormalDist
from typing import Any, NamedTuple

import numpy as np

from .blocks import map_rows, row_blocks
from .clockloops import GE, LE, LT
from .clockloops import count as nb_count
from .clockloops import drift as nb_drift
from .clockloops import first_ge as nb_first_ge
from .clockloops import last_outside as nb_last_outside
from .clockloops import median3 as nb_median3
from .clockloops import peak as nb_peak
from .clockloops import prefix_fmax as nb_prefix_fmax
from .clockloops import sustain_end as nb_sustain_end
from .clockloops import window_mad as nb_window_mad
from .clockloops import window_median as nb_window_median
from .config import RELATIVE_MIN_CEILING, AuditConfig, grok_levels
from .engine import THREADS, Engine, ThreadEngine
from .kernels import NUMPY, Kernel
from .schema import LogTable

INF = np.inf

# Floor stability codes stored in MetricClocks.stability.
STAB_NONE = 0  # no floor (too few points)
STAB_STABLE = 1
STAB_INDETERMINATE = 2
STAB_UNSTABLE = 3
STAB_UNCHECKED = 4  # a floor taken as converged without a test (stability_check = False)
STABILITY_NAMES = {STAB_NONE: "none", STAB_STABLE: "stable",
                   STAB_INDETERMINATE: "indeterminate", STAB_UNSTABLE: "unstable",
                   STAB_UNCHECKED: "unchecked"}
#: The codes of a floor that the clocks take as converged.
STAB_TAKEN_STABLE = (STAB_STABLE, STAB_UNCHECKED)

# Why t_compress is missing or censored (MetricClocks.tc_status).
TC_OK = 0
TC_NO_GROK = 1
TC_NO_FLOOR = 2
TC_NEVER_SETTLED = 3
TC_IN_FINAL_WINDOW = 4
TC_FLOOR_UNSTABLE = 5
TC_FLOOR_INDETERMINATE = 6
TC_NEVER_CROSSED = 7
TC_NO_COMPRESSION = 8  # the metric never compressed: there is no compression time
#: the metric was already settled on its floor at the first logged point, after step 0: it
#: compressed before logging began (or never: the log cannot tell) -- left-censored
TC_LEFT_CENSORED = 9
#: no t_compress can be read: what the rule needs about grok is not in the log -- a grok before
#: logging began whose logged fall is too small to be a compression (it compressed before
#: logging began and settled later, or never compressed: the log cannot tell), or rule
#: ``crossing``'s threshold without a value at grok. Not "after the end of the log" either
TC_UNREADABLE = 10
#: The statuses of a censored t_compress (only a lower bound is known).
TC_CENSORED = (TC_NEVER_SETTLED, TC_IN_FINAL_WINDOW, TC_FLOOR_UNSTABLE, TC_FLOOR_INDETERMINATE,
               TC_NEVER_CROSSED)


def _f64(a: np.ndarray) -> np.ndarray:
    out: np.ndarray = a if a.dtype == np.float64 else a.astype(np.float64)
    return out


def _same_array(a: np.ndarray, b: np.ndarray) -> bool:
    """``a`` and ``b`` are views of the same memory with the same layout (two reshapes of
    one column): the same values, without comparing them."""
    return bool(a.dtype == b.dtype and a.shape == b.shape and a.strides == b.strides
                and a.__array_interface__["data"][0] == b.__array_interface__["data"][0])


@dataclass(frozen=True)
class Packed:
    """The non-missing points of one column, per run, left-aligned: ``(R, K)`` matrices.

    ``raw_values``/``raw_steps`` may be the log's own storage reshaped without a copy
    (float32 values, int64 steps);
    :attr:`values` and :attr:`steps` are their float64 forms, made on first use. :meth:`rows`
    widens one block of runs only: the blocked clocks never make a float64 copy of a whole
    value column."""

    raw_values: np.ndarray  #: (R, K) float32 or float64, NaN beyond ``counts``
    raw_steps: np.ndarray  #: (R, K) int64 or float64 logged steps (NaN beyond ``counts``)
    counts: np.ndarray  #: (R,) int64 points per run
    #: the whole column's ``raw_steps`` when this is a block of it (:meth:`rows`)
    source_steps: np.ndarray | None = None

    @functools.cached_property
    def values(self) -> np.ndarray:
        """(R, K) float64 values."""
        return _f64(self.raw_values)

    @functools.cached_property
    def steps(self) -> np.ndarray:
        """(R, K) float64 steps."""
        return _f64(self.raw_steps)

    @property
    def shape(self) -> tuple[int, int]:
        r, k = self.raw_values.shape
        return int(r), int(k)

    @functools.cached_property
    def grid(self) -> np.ndarray | None:
        """The one row of float64 steps every run here is logged at, when the runs share it
        (each with a point at each of its steps, ascending); None otherwise. A count of a
        run's steps past a threshold is then a binary search in it (:func:`_count`)."""
        R, K = self.shape
        if R == 0 or K == 0 or not bool((self.counts == K).all()):
            return None
        S = self.steps
        first: np.ndarray = S[0]
        # equal float64 rows: the counts compare these very values, whatever was stored
        if not bool((S == first).all()) or not bool((first[1:] >= first[:-1]).all()):
            return None
        return first

    @property
    def valid(self) -> np.ndarray:
        return np.arange(self.shape[1])[None, :] < self.counts[:, None]

    def rows(self, sl: slice, like: Packed | None = None) -> Packed:
        """Runs ``sl``, as float64. ``like``: another column's block of the same runs; its
        float64 steps are taken when this column's steps are the same array (both columns
        logged at every row), not widened again."""
        steps = (like.steps if like is not None and like.source_steps is not None
                 and _same_array(like.source_steps, self.raw_steps)
                 else _f64(self.raw_steps[sl]))
        return Packed(_f64(self.raw_values[sl]), steps, self.counts[sl],
                      source_steps=self.raw_steps)


def pack(values: np.ndarray, table: LogTable, run_index: np.ndarray | None = None,
         name: str | None = None) -> Packed:
    """Pack the non-NaN entries of a per-row column into per-run rows (order kept). Where
    every run logs the column at each of its rows and the runs have one length, the packed
    matrices are the column and the steps reshaped, in their stored types (no copy).
    ``name``: the table's column ``values`` is, when it is one (the validation may know it
    holds no NaN: :meth:`LogTable.holds_no_nan`, and it is not scanned again)."""
    R = table.n_runs
    if table.equal_lengths and ((name is not None and table.holds_no_nan(name, values))
                                or not np.isnan(values).any()):
        # the common case: every run logs the column at every row -- a reshape, no scatter
        # the steps as stored (int64 or float64): each block of runs widens its own rows
        # (:meth:`Packed.rows`), in cache, instead of a float64 copy of the whole column
        T = values.size // max(R, 1)
        return Packed(values.reshape(R, T), table.step.reshape(R, T),
                      np.full(R, T, dtype=np.int64))
    ok = ~np.isnan(values)
    ri = table.run_index if run_index is None else run_index
    r_ok = ri[ok]
    counts = np.bincount(r_ok, minlength=R).astype(np.int64)
    K = int(counts.max()) if R else 0
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    pos = np.arange(r_ok.size) - starts[r_ok]
    V = np.full((R, max(K, 1)), np.nan)
    S = np.full((R, max(K, 1)), np.nan)
    V[r_ok, pos] = values[ok]  # float32 values widen exactly on assignment
    S[r_ok, pos] = table.step[ok]
    return Packed(V, S, counts)


def _take(M: np.ndarray, idx: np.ndarray, fill: float = np.nan) -> np.ndarray:
    """``M[r, idx[r]]`` as float64, with ``fill`` where ``idx`` is out of range (−1 or ≥ K).
    One gather by flat position in a C-ordered ``M`` (half the time of a two-axis gather of
    the rows in range: numpy's fancy indexing on two axes broadcasts both index arrays)."""
    R, K = M.shape
    ok = (idx >= 0) & (idx < K)
    if K == 0 or idx.shape != (R,) or idx.dtype.kind not in "iu" or np.ndim(fill) \
            or not M.flags.c_contiguous:
        out = np.full(idx.shape, fill, dtype=float)
        rows = np.nonzero(ok)[0]
        out[ok] = M[rows, idx[ok]]
        return out
    every = bool(ok.all())
    flat = np.arange(0, R * K, K, dtype=np.intp)
    flat += (idx if every else np.where(ok, idx, 0)).astype(np.intp, copy=False)
    got: np.ndarray = M.ravel()[flat].astype(float, copy=False)
    if not every:
        got[~ok] = fill
    return got


def _window(M: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The columns ``lo[r] <= k < hi[r]`` of each row, right-padded with NaN: ``(R, W)``.
    Where every row's window is the same columns (runs of one length on one grid, the usual
    block), a read-only view of them: the same values, without the gather."""
    width = int(np.max(hi - lo, initial=0))
    if width <= 0:
        return np.full((M.shape[0], 1), np.nan)
    if lo.size and M.dtype == np.float64:
        l0, h0 = int(lo[0]), int(hi[0])
        if 0 <= l0 and h0 <= M.shape[1] and (lo == l0).all() and (hi == h0).all():
            view = M[:, l0:h0]
            view.flags.writeable = False
            return view
    idx = lo[:, None] + np.arange(width)[None, :]
    ok = idx < hi[:, None]
    idx = np.clip(idx, 0, M.shape[1] - 1)
    out = np.take_along_axis(M, idx, axis=1)
    return np.where(ok, out, np.nan)


def _nanmedian(W: np.ndarray) -> np.ndarray:
    """Row medians ignoring NaN (NaN for an all-NaN row); two middle values near ±1.8e308
    are averaged without overflow."""
    with np.errstate(over="ignore", invalid="ignore"):
        med = _nanmedian_raw(W)
    over = np.flatnonzero(np.isinf(med))
    if over.size:  # an even count whose two middle values sum beyond the float range
        rows = np.sort(W[over], axis=1)  # NaN last
        c = row_count(~np.isnan(rows))
        lo = np.take_along_axis(rows, ((c - 1) // 2)[:, None], axis=1)[:, 0]
        hi = np.take_along_axis(rows, (c // 2)[:, None], axis=1)[:, 0]
        med[over] = np.where(np.isfinite(lo) & np.isfinite(hi), mean2(lo, hi), med[over])
    return med


def _sorted_median(srt: np.ndarray, count: np.ndarray | None = None) -> np.ndarray:
    """Medians along the last axis of rows sorted ascending (NaN last), over each row's first
    ``count`` values (all of them when None): the mean of the two middle values, as
    ``np.median`` and ``np.nanmedian`` compute it; NaN for an empty row."""
    n = srt.shape[-1]
    if count is None:
        lo, hi = srt[..., (n - 1) // 2], srt[..., n // 2]
        return mean2(lo, hi) if n else np.full(srt.shape[:-1], np.nan)
    c = np.asarray(count)
    lo = np.take_along_axis(srt, np.maximum((c - 1) // 2, 0)[..., None], axis=-1)[..., 0]
    hi = np.take_along_axis(srt, np.minimum(c // 2, max(n - 1, 0))[..., None], axis=-1)[..., 0]
    out: np.ndarray = np.where(c > 0, mean2(lo, hi), np.nan)
    return out


def _nanmedian_raw(W: np.ndarray) -> np.ndarray:
    # one sort per row (NaN last), then the middle of the finite values: numpy's vectorized
    # sort is several times faster than np.median's partition or np.nanmedian on rows of
    # hundreds of points, and gives the same values
    if W.shape[1] == 0:
        return np.full(W.shape[0], np.nan)
    return _median_of_sorted(np.sort(W, axis=1))


def _median_of_sorted(srt: np.ndarray) -> np.ndarray:
    """Row medians of rows sorted ascending, NaN last (``np.sort``'s order), over each row's
    values that are not NaN (NaN for a row of none)."""
    nan = np.isnan(srt[:, -1])  # NaN sorts last: a row with any NaN ends with one
    if not nan.any():
        return _sorted_median(srt)
    return _sorted_median(srt, row_count(~np.isnan(srt)))


def row_count(mask: np.ndarray) -> np.ndarray:
    """The number of True per row of a 2-D boolean matrix (``mask.sum(axis=1)``, as
    ``np.intp``), counted in the narrowest unsigned type that holds a whole row's count: numpy
    sums booleans into int64 one element cast at a time, a row of 50 in 2× the time of
    summing them as bytes into bytes, a row of 5 000 in 5×."""
    K = mask.shape[1]
    dt = np.uint8 if K < 1 << 8 else np.uint16 if K < 1 << 16 else np.uint32 if K < 1 << 32 \
        else np.uint64
    out: np.ndarray = mask.view(np.uint8).sum(axis=1, dtype=dt).astype(np.intp)
    return out


def row_any(mask: np.ndarray) -> np.ndarray:
    """Whether each row of a 2-D boolean matrix holds a True (``mask.any(axis=1)``). Rows
    shorter than 256 are summed as bytes (:func:`row_count`), 2.4× faster than numpy's
    logical reduction of short rows; longer rows are left to it (vectorised along the row)."""
    if mask.shape[1] >= 1 << 8:
        return np.asarray(mask.any(axis=1))
    return np.asarray(row_count(mask) != 0)


def _first_true(mask: np.ndarray) -> np.ndarray:
    """Index of the first True per row, −1 when none (one pass: argmax stops at the first
    True, and a row without one is read where argmax points, at its column 0)."""
    if not mask.shape[1]:
        return np.full(mask.shape[0], -1)
    k = mask.argmax(axis=1)
    out: np.ndarray = np.where(mask[np.arange(mask.shape[0]), k], k, -1)
    return out


def _last_true(mask: np.ndarray) -> np.ndarray:
    """Index of the last True per row, −1 when none (one pass, as :func:`_first_true`)."""
    K = mask.shape[1]
    if not K:
        return np.full(mask.shape[0], -1)
    k = K - 1 - mask[:, ::-1].argmax(axis=1)
    out: np.ndarray = np.where(mask[np.arange(mask.shape[0]), k], k, -1)
    return out


def _first_after(P: Packed, first: np.ndarray) -> np.ndarray:
    """Per run: its first point in ``P`` comes after ``first`` (the run's first logged step,
    any column); False for a run without a point."""
    with np.errstate(invalid="ignore"):
        out: np.ndarray = _take(P.steps, np.zeros(P.counts.shape, dtype=np.intp)) > first
    return out


def _count(S: np.ndarray, t: np.ndarray, op: int, kernel: Kernel = NUMPY,
           grid: np.ndarray | None = None) -> np.ndarray:
    """``row_count(S >= t[:, None])`` (``op`` :data:`.clockloops.GE`; ``LT``: ``<``, ``LE``:
    ``<=``), by one compiled pass with ``kernel`` numba. ``grid``: the one ascending row every
    row of ``S`` is (:attr:`Packed.grid`): the counts by binary search in it, the same."""
    if grid is not None:
        return _count_on_grid(grid, t, op)
    if kernel.numba:
        got = nb_count(S, t, op)
        if got is not None:
            return got
    with np.errstate(invalid="ignore"):
        mask = S >= t[:, None] if op == GE else S < t[:, None] if op == LT \
            else S <= t[:, None]
    return row_count(mask)


def _count_on_grid(grid: np.ndarray, t: np.ndarray, op: int) -> np.ndarray:
    """:func:`_count` of a matrix whose every row is ``grid`` (ascending): the values ``>= t``
    are those past the first ``searchsorted(grid, t)``, the values ``<= t`` those before
    ``searchsorted(.., side="right")``. A NaN threshold compares False with every value:
    none."""
    t = np.asarray(t, dtype=np.float64)
    pos = np.searchsorted(grid, t, side="right" if op == LE else "left")
    out: np.ndarray = (grid.shape[0] - pos) if op == GE else pos
    out = out.astype(np.intp, copy=False)
    nan = np.isnan(t)
    if nan.any():
        out[nan] = 0
    return out


def _window_median(V: np.ndarray, lo: np.ndarray, hi: np.ndarray, kernel: Kernel = NUMPY
                   ) -> np.ndarray:
    """``_nanmedian(_window(V, lo, hi))``: each row's median over its columns ``lo ≤ k < hi``
    (by selection in one compiled pass with ``kernel`` numba)."""
    if kernel.numba:
        got = nb_window_median(V, lo, hi)
        if got is not None:
            return got
    return _nanmedian(_window(V, lo, hi))


def mean2(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``0.5·(a + b)`` without overflow: where the sum of two finite values overflows (values
    near ±1.8e308), ``a/2 + b/2`` instead. Elsewhere the result is ``0.5·(a + b)`` bit for bit
    (``a/2 + b/2`` would lose the last bit of subnormal values)."""
    with np.errstate(over="ignore", invalid="ignore"):
        total = a + b
        out: np.ndarray = 0.5 * total
    big = np.isinf(total) & np.isfinite(a) & np.isfinite(b)
    if big.any():
        out = np.where(big, a / 2 + b / 2, out)
    return out


def trailing_median(P: Packed, width: int, kernel: Kernel = NUMPY) -> np.ndarray:
    """Trailing rolling median of ``width`` points (fewer at the start of a run); of three
    points in one compiled pass with ``kernel`` numba."""
    V = P.values
    if width == 3 and kernel.numba:
        got = nb_median3(V, P.counts)
        if got is not None:
            return got
    if width <= 1:
        copy: np.ndarray = V.copy()
        return copy
    if width == 3:
        # median of three on shifted views, without sorting; the first two points use what
        # is available (the point itself, then the mean of two)
        out = np.empty_like(V)
        if V.shape[1] >= 3:
            a, b, c = V[:, 2:], V[:, 1:-1], V[:, :-2]
            # max(min(a, b), min(max(a, b), c)), with two temporaries instead of four
            lo, hi = np.minimum(a, b), np.maximum(a, b)
            np.minimum(hi, c, out=hi)
            np.maximum(lo, hi, out=out[:, 2:])
        if V.shape[1] >= 1:
            out[:, 0] = V[:, 0]
        if V.shape[1] >= 2:
            out[:, 1] = mean2(V[:, 0], V[:, 1])
        if (P.counts == V.shape[1]).all():
            return out
        smoothed: np.ndarray = np.where(P.valid, out, np.nan)
        return smoothed
    # each point's median of itself and the width − 1 points before it: the windows of the
    # NaN-padded rows sorted (NaN last), then the middle of each window's values
    # (_median_of_sorted, as the final window's median takes it: two middle values near
    # ±1.8e308 averaged without overflow). A window wider than the runs
    # holds every point before each one, as a window of the runs' width does: the same
    # medians, without an (R, K, width) stack of padding (--smooth 1000000 on 400-point
    # runs: minutes before). The windows are taken a few rows, or a few points of one long
    # row, at a time: at most _SMOOTH_ELEMENTS window values per stack
    R, K = V.shape
    width = min(width, max(K, 1))
    med = np.empty((R, K))
    pad = np.concatenate((np.full((R, width - 1), np.nan), V), axis=1)
    rows_at = max(1, _SMOOTH_ELEMENTS // max(K * width, 1))
    cols_at = max(K, 1) if K * width <= _SMOOTH_ELEMENTS else max(1, _SMOOTH_ELEMENTS // width)
    for r0 in range(0, R, rows_at):
        for k0 in range(0, K, cols_at):
            k1 = min(K, k0 + cols_at)
            win = np.lib.stride_tricks.sliding_window_view(
                pad[r0:r0 + rows_at, k0:k1 + width - 1], width, axis=1)
            srt = np.sort(win, axis=2)  # a copy in C order: its windows as rows, no copy
            med[r0:r0 + rows_at, k0:k1] = _median_of_sorted(
                srt.reshape(-1, width)).reshape(srt.shape[:2])
    res: np.ndarray = np.where(P.valid, med, np.nan)
    return res


#: Window values :func:`trailing_median` sorts at once for a width other than 3 (64 MiB of
#: float64; the sort's copy and the windows' counts beside them), whatever ``--smooth`` asks.
_SMOOTH_ELEMENTS = 1 << 23


# ------------------------------------------------------------------------------------------
# accuracy clocks
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Event:
    """A first-passage time per run: ``value`` (NaN when censored), ``(lower, upper]``."""

    value: np.ndarray
    lower: np.ndarray
    upper: np.ndarray  #: inf when right-censored
    index: np.ndarray  #: column of the event in the packed matrix, −1 when censored

    def rows(self, sl: slice) -> Event:
        """Runs ``sl`` (views, no copy)."""
        return Event(self.value[sl], self.lower[sl], self.upper[sl], self.index[sl])

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(value, lower, upper, index)``: what :class:`Event` is made of, in its order."""
        return self.value, self.lower, self.upper, self.index

    @staticmethod
    def concat(parts: Sequence[Event]) -> Event:
        """The runs of ``parts``, in order."""
        if len(parts) == 1:
            return parts[0]
        return Event(*(np.concatenate(a) for a in zip(*(e.arrays() for e in parts))))

    @functools.cached_property
    def censored(self) -> np.ndarray:
        """Right-censored runs (``upper = inf``), computed once per Event: callers index it per
        run, and recomputing it over every run at each index made the audit quadratic in runs
        (issue 10). ``cached_property`` writes the instance ``__dict__`` directly, which a
        frozen dataclass allows; the array is read-only so no caller can alter the cache."""
        out: np.ndarray = np.isinf(self.upper)
        out.flags.writeable = False
        return out

    @functools.cached_property
    def left_censored(self) -> np.ndarray:
        """Left-censored runs: the event was already there at the run's first logged point,
        after step 0 -- it happened in ``(lower, upper]`` before logging began, at a step the
        log cannot tell (``value`` NaN, ``upper`` finite). Read-only, computed once."""
        with np.errstate(invalid="ignore"):
            out: np.ndarray = np.isnan(self.value) & np.isfinite(self.upper) \
                & ~np.isnan(self.lower)
        out.flags.writeable = False
        return out


def first_passage(P: Packed, threshold: float | np.ndarray, interval: bool = True,
                  widen: np.ndarray | None = None, empty_missing: bool = False,
                  kernel: Kernel = NUMPY) -> Event:
    """First logged step with value ≥ threshold, interval-censored by the cadence.

    ``widen`` marks downsampled runs (a bucketed export): their intervals grow by one logged
    point on each side, since a bucket's value says little about where inside it the event fell.
    With ``interval``, an event seen at the run's first logged point after step 0 is
    left-censored: it happened in ``(0, first step]``, before logging began, and has no value
    (:attr:`Event.left_censored`). With ``empty_missing``, a run without a point of the column
    (never logged) has no event at all rather than one censored at step 0. ``kernel``: numba
    finds the first point in one compiled pass.
    """
    got = nb_first_ge(P.values, np.ravel(threshold)) if kernel.numba else None
    # NaN beyond a run's points compares False: no validity mask
    k = got if got is not None else _first_true(P.values >= threshold)
    has = k >= 0
    value = np.where(has, _take(P.steps, k), np.nan)
    prev = np.where(k > 0, _take(P.steps, k - 1), 0.0)
    last = _take(P.steps, P.counts - 1, fill=0.0)
    lower = np.where(has, prev, np.nan_to_num(last))
    upper = np.where(has, value, INF)
    empty = P.counts == 0  # never logged (a train_acc column of NaN): no event, not censored
    if empty_missing and empty.any():
        lower = np.where(empty, np.nan, lower)
        upper = np.where(empty, np.nan, upper)
    if widen is not None:
        lower, upper = _widen(P.steps, P.counts, widen & has, k - 1, k, lower, upper)
    if not interval:
        lower = np.where(has, value, lower)
    else:
        with np.errstate(invalid="ignore"):
            left = has & (k == 0) & (P.steps[:, 0] > 0) if P.steps.shape[1] else has & False
        value = np.where(left, np.nan, value)
    return Event(value, lower, upper, k)


def _widen(S: np.ndarray, n: np.ndarray, mask: np.ndarray, low_idx: np.ndarray,
           up_idx: np.ndarray, lower: np.ndarray, upper: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray]:
    """Move ``(lower, upper]`` one logged point outwards where ``mask`` (downsampled runs)."""
    lower = np.where(mask, np.where(low_idx >= 1, _take(S, low_idx - 1), 0.0), lower)
    upper = np.where(mask & (up_idx + 1 < n) & np.isfinite(upper), _take(S, up_idx + 1), upper)
    return lower, upper


def downsampled_runs(table: LogTable) -> np.ndarray | None:
    """Boolean mask of the runs the source marked as downsampled (provenance), or None."""
    ids = table.summary.provenance.get("downsampled_runs") or []
    if not ids:
        return None
    wanted = {str(i) for i in ids}  # Python strings: a numpy str array drops trailing NULs
    mask: np.ndarray = np.fromiter((str(r) in wanted for r in table.run_ids), dtype=bool,
                                   count=table.n_runs)
    return mask


@dataclass(frozen=True)
class AccuracyClocks:
    """``t_mem``, ``t_grok`` and the grok's quality, per run (arrays of length R)."""

    t_mem: Event | None  #: None when train_acc is not logged
    t_grok: Event
    sustained: np.ndarray  #: bool; False when test_acc fell below threshold for `sustain` points
    fell_at: np.ndarray  #: step it fell (NaN when sustained)
    final_test_acc: np.ndarray  #: median test_acc (or grok loss) over the final window (NaN when none)
    fully_generalized: np.ndarray  #: bool
    span_first: np.ndarray  #: first logged step of the run (any column)
    span_last: np.ndarray  #: last logged step of the run
    #: the highest test accuracy each run held for ``sustain`` consecutive logged points (NaN
    #: for a run with fewer points); computed for ``grok_relative = study`` only
    best_sustained: np.ndarray | None = None
    #: the (grok, full) levels each run was judged at, when they differ from the config's
    #: thresholds (``grok_relative = study``); None otherwise
    levels: tuple[np.ndarray, np.ndarray] | None = None
    #: per run, its study's best accuracy is still rising at the end of the log (no ceiling to
    #: read thresholds against: only a lower bound of where it settles); ``grok_relative`` only
    ceiling_unsettled: np.ndarray | None = None
    #: per run, its grok criterion's column was first logged after the run's first logged
    #: step (a test set evaluated only at the end of training): a t_grok left-censored there
    #: happened before that point, not before logging began
    grok_late: np.ndarray | None = None


def study_ceilings(best: np.ndarray, studies: np.ndarray | None) -> np.ndarray:
    """Per run, the best sustained test accuracy of its study (the max over the study's runs;
    NaN when none of them holds one). ``studies`` numbers each run's study (None: one)."""
    groups = np.zeros(best.size, dtype=np.int64) if studies is None else studies
    out = np.full(best.size, np.nan)
    if best.size == 0:
        return out
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        n = int(groups.max()) + 1
        top = np.full(n, -np.inf)
        np.fmax.at(top, groups, np.where(np.isnan(best), -np.inf, best))
    top = np.where(np.isinf(top), np.nan, top)
    out[:] = top[groups]
    return out


@dataclass(frozen=True)
class Ceilings:
    """What ``grok_relative = study`` reads of a run's study, per run: the run's own best
    sustained accuracy, its study's ceiling (:func:`study_ceilings`), whether that ceiling is
    unsettled, and whether any run of the whole log is judged relative to its ceiling. Made
    by :func:`accuracy_clocks`, or over the whole log for a log read in parts."""

    best: np.ndarray
    ceiling: np.ndarray
    unsettled: np.ndarray
    any_used: bool

    def rows(self, sl: slice) -> Ceilings:
        return Ceilings(self.best[sl], self.ceiling[sl], self.unsettled[sl], self.any_used)


def relative_use(c: Ceilings) -> np.ndarray:
    """The runs judged relative to their study's ceiling."""
    with np.errstate(invalid="ignore"):
        out: np.ndarray = ~np.isnan(c.ceiling) & (c.ceiling < 1.0) & (
            c.ceiling >= RELATIVE_MIN_CEILING) & ~c.unsettled
    return out


def accuracy_clocks(table: LogTable, cfg: AuditConfig,
                    studies: np.ndarray | None = None, *,
                    ceilings: Ceilings | None = None, engine: Engine = THREADS,
                    kernel: Kernel = NUMPY) -> AccuracyClocks:
    """Compute ``t_mem``, ``t_grok``, sustain and full generalization for every run.

    With ``grok_relative = study`` the thresholds of a run are read relative to its study's
    ceiling (:func:`study_ceilings`; ``studies`` numbers each run's study, None: one study;
    ``ceilings``: taken over a whole log of which ``table`` is a part). ``engine`` cuts the
    runs into blocks and computes them (:mod:`grokaudit.engine`: threads of this process, or
    Ray tasks); the result is the same on any. ``kernel``: what makes each block's passes
    over the points (:mod:`.clockloops` with numba); the result is the same on either."""
    ri = None if table.equal_lengths else table.run_index
    span_first = table.step[table.offsets[:-1]].astype(float)
    span_last = table.step[table.offsets[1:] - 1].astype(float)
    column, sign, grok_level, full_level = grok_levels(cfg)
    signal = table.test_acc if column == "test_acc" else sign * table.series[column]
    A = pack(signal, table, ri, name="test_acc" if column == "test_acc" else None)
    M = pack(table.train_acc, table, ri, name="train_acc") if table.train_acc is not None \
        else None
    widen = downsampled_runs(table)
    best: np.ndarray | None = None
    levels: tuple[np.ndarray, np.ndarray] | None = None
    g_level: float | np.ndarray = grok_level
    f_level: float | np.ndarray = full_level
    unsettled: np.ndarray | None = None
    if cfg.grok_relative == "study" and column == "test_acc":
        if ceilings is None:
            best = best_sustained(A, cfg.sustain)  # one more pass: only when asked for
            c0 = study_ceilings(best, studies)
            u0 = _ceiling_unsettled(A, best, studies, cfg.floor_frac)
            ceilings = Ceilings(best, c0, u0, False)
            ceilings = dataclasses.replace(ceilings, any_used=bool(relative_use(ceilings).any()))
        best, c, unsettled = ceilings.best, ceilings.ceiling, ceilings.unsettled
        use = relative_use(ceilings)
        if ceilings.any_used:
            g = np.where(use, grok_level * np.where(use, c, 1.0), grok_level)
            f = np.where(use, full_level * np.where(use, c, 1.0), full_level)
            levels, g_level, f_level = (g, f), g, f

    def block(sl: slice) -> tuple[Event, Event | None, np.ndarray, np.ndarray, np.ndarray,
                                  np.ndarray]:
        lvl = g_level if isinstance(g_level, float) else g_level[sl][:, None]
        a = A.rows(sl)
        return _accuracy_block(a, None if M is None else M.rows(sl, like=a),
                               None if widen is None else widen[sl], span_first[sl],
                               span_last[sl], lvl, cfg, kernel)

    def flat(sl: slice) -> list[np.ndarray]:
        tg, tm, *rest = block(sl)
        return [*tg.arrays(), *(() if tm is None else tm.arrays()), *rest]

    joined = _map_runs(engine, flat, A.shape)
    tg = Event(*joined[:4])
    tm = None if M is None else Event(*joined[4:8])
    sustained, fell_at, final, late = joined[-4:]
    with np.errstate(invalid="ignore"):
        fully = ~np.isnan(final) & (final >= f_level)
    # reported in the criterion's own units: the final median accuracy, or loss
    return AccuracyClocks(tm, tg, sustained, fell_at, sign * final, fully, span_first,
                          span_last, best, levels, unsettled, late)


def _ceiling_unsettled(A: Packed, best: np.ndarray, studies: np.ndarray | None,
                       floor_frac: float) -> np.ndarray:
    """Per run: its study's best run has not settled at the end of the log — its accuracy in
    the last ``floor_frac`` of its span is more than 0.02 below its best, or more than 0.01
    above the window before (still rising). A ceiling is read only from a settled curve."""
    groups = np.zeros(best.size, dtype=np.int64) if studies is None else studies
    out = np.zeros(best.size, dtype=bool)
    for g in np.unique(groups):
        rows = np.flatnonzero(groups == g)
        b = best[rows]
        if np.isnan(b).all():
            continue
        k = int(rows[int(np.nanargmax(b))])
        n = int(A.counts[k])
        out[rows] = ceiling_unsettled(A.raw_values[k, :n], A.raw_steps[k, :n], float(best[k]),
                                      floor_frac)
    return out


def ceiling_unsettled(values: np.ndarray, steps: np.ndarray, best: float, floor_frac: float
                      ) -> bool:
    """One study's best run (its logged accuracies and steps, its best sustained value) has
    not settled at the end of its log (:func:`_ceiling_unsettled`)."""
    n = int(values.size)
    v = np.asarray(values, dtype=float)
    s = np.asarray(steps, dtype=float)
    span = s[-1] - s[0] if n else 0.0
    last = v[s >= s[-1] - floor_frac * span] if n else v
    prev = v[(s >= s[-1] - 2 * floor_frac * span) & (s < s[-1] - floor_frac * span)] \
        if n else v
    if last.size == 0:
        return False
    f = float(np.median(last))
    rising = prev.size > 0 and f > float(np.median(prev)) + 0.01
    return bool(rising or f < best - 0.02)


def best_sustained(A: Packed, w: int) -> np.ndarray:
    """Per run, the highest value held for ``w`` consecutive logged points (the max over the
    run of the min of each window of ``w`` points); NaN for a run with fewer points."""
    R, K = A.shape
    if K < w:
        return np.full(R, np.nan)
    out = np.full(R, np.nan)
    for sl in row_blocks(R, K):
        V = A.rows(sl).values
        m = V[:, : K - w + 1].copy()
        for j in range(1, w):
            np.minimum(m, V[:, j: K - w + 1 + j], out=m)  # NaN (beyond a run) propagates
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            out[sl] = np.nanmax(np.where(np.isnan(m), -np.inf, m), axis=1)
    out[np.isinf(out)] = np.nan
    return out


def _accuracy_block(A: Packed, M: Packed | None, widen: np.ndarray | None,
                    span_first: np.ndarray, span_last: np.ndarray,
                    grok_level: float | np.ndarray,
                    cfg: AuditConfig, kernel: Kernel = NUMPY
                    ) -> tuple[Event, Event | None, np.ndarray, np.ndarray, np.ndarray,
                               np.ndarray]:
    """:func:`accuracy_clocks` for one block of runs (row-wise): t_grok, t_mem, sustained,
    the step it fell, the final median, and whether the criterion was first logged after the
    run's first step (:attr:`AccuracyClocks.grok_late`). ``kernel``: what makes the passes
    over the points (numba: one compiled pass each, :mod:`.clockloops`)."""
    tg = first_passage(A, grok_level, cfg.interval_censoring, widen, kernel=kernel)
    tm = None
    if M is not None:
        tm = first_passage(M, cfg.mem_threshold, cfg.interval_censoring, widen,
                           empty_missing=True, kernel=kernel)

    # sustained: no run of `sustain` consecutive points below threshold after t_grok
    # (NaN padding compares False: no validity mask needed)
    K = A.values.shape[1]
    cols = np.arange(K)[None, :]
    # the columns after the grok (none for a run that never grokked)
    after = np.where(tg.index >= 0, tg.index, K)[:, None]
    w = cfg.sustain
    got = nb_sustain_end(A.values, np.ravel(grok_level), after[:, 0], w) if kernel.numba \
        else None
    if got is not None:
        end = got
    else:
        below = (A.values < grok_level) & (cols > after)
        end = np.full(A.values.shape[0], -1)
        rows = np.flatnonzero(row_any(below))  # only runs that ever dip after grok
        if rows.size:
            c: np.ndarray = np.cumsum(below[rows], axis=1)
            c0 = np.concatenate((np.zeros((c.shape[0], w)), c[:, :-w]), axis=1)[
                :, : c.shape[1]] if c.shape[1] > w else np.zeros_like(c)
            end[rows] = _first_true((c - c0) >= w)  # first window of w points all below
    sustained = end < 0
    fell_at = np.where(sustained, np.nan, _take(A.steps, end - w + 1))

    # final window of accuracy: last floor_frac of the run's span, at least min_floor_points
    span = span_last - span_first
    lo_step = span_last - cfg.floor_frac * span
    # NaN steps beyond a run's points: no. One count here: finding the grid repays it on
    # numpy's count only (numba's is one pass)
    n_in = _count(A.steps, lo_step, GE, kernel, None if kernel.numba else A.grid)
    start = np.where(n_in >= cfg.min_floor_points, A.counts - n_in,
                     np.maximum(A.counts - cfg.min_floor_points, 0))
    final = _window_median(A.values, start, A.counts, kernel)
    return tg, tm, sustained, fell_at, final, _first_after(A, span_first)


# ------------------------------------------------------------------------------------------
# metric clocks
# ------------------------------------------------------------------------------------------

def _pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The index pairs ``(i, j)``, ``i < j < n``, of :func:`theil_sen`, grouped by lag
    ``j − i`` (the order the slopes have always been sorted from; read-only). Kept for the
    bin counts a block usually has (up to 512 bins: 2 MiB each, 16 of them)."""
    return _pairs_kept(n) if n <= 512 else _pairs_made(n)


@functools.lru_cache(maxsize=16)
def _pairs_kept(n: int) -> tuple[np.ndarray, np.ndarray]:
    return _pairs_made(n)


def _pairs_made(n: int) -> tuple[np.ndarray, np.ndarray]:
    i = np.concatenate([np.arange(n - k) for k in range(1, n)]) if n > 1 \
        else np.zeros(0, dtype=np.intp)
    j = i + np.concatenate([np.full(n - k, k) for k in range(1, n)]) if n > 1 else i.copy()
    i.flags.writeable = j.flags.writeable = False
    return i, j


def _sen_ranks(nt: Any, ny: Any, z: float) -> tuple[int, int, int, int]:
    """The ranks, among a row's ``nt`` sorted slopes (``ny`` values), of the two middle
    slopes and of Sen's lower and upper bounds at the normal quantile ``z`` (negative)."""
    sigma = float(np.sqrt(ny * (ny - 1) * (2 * ny + 5) / 18.0))
    ru = min(int(np.round((nt - z * sigma) / 2.0)), nt - 1)
    rl = max(int(np.round((nt + z * sigma) / 2.0)) - 1, 0)
    return (nt - 1) // 2, nt // 2, rl, ru


#: Pairs' slopes held at once by :func:`theil_sen` (64 MiB per float64 matrix): a block of
#: runs whose windows are binned into thousands of bins is taken a few rows at a time.
_PAIR_ELEMENTS = 1 << 23


def theil_sen(x: np.ndarray, y: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray,
                                                                     np.ndarray]:
    """Row-wise Theil–Sen slope with Sen's (1968) confidence interval, like scipy's
    ``theilslopes`` (no tie correction; steps never tie). ``x``/``y`` are ``(R, n)`` with NaN
    padding. Returns ``(slope, low, high)``; NaN where a row has fewer than 2 points. Rows
    are taken :data:`_PAIR_ELEMENTS` pairs at a time (each row's answer is its own)."""
    R, n = x.shape
    per = max(1, _PAIR_ELEMENTS // max(n * (n - 1) // 2, 1))
    if R > per:
        parts = [theil_sen(x[a:a + per], y[a:a + per], level) for a in range(0, R, per)]
        slope_, lo_, hi_ = (np.concatenate(c) for c in zip(*parts))
        return slope_, lo_, hi_
    # every pair i < j, grouped by lag, in one gather per matrix (a block holds few runs: one
    # call beats a call per lag)
    i, j = _pairs(n)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        dx = x[:, j]
        np.subtract(dx, x[:, i], out=dx)
        dy = y[:, j]
        np.subtract(dy, y[:, i], out=dy)  # ±inf beyond the float range: not a finite slope
        # dy / dx where dx > 0, NaN elsewhere: computed in dy's memory (no more (R, pairs))
        s = np.divide(dy, dx, out=dy)
        s[~(dx > 0)] = np.nan
        del dx
    valid = ~np.isnan(s)
    nt = row_count(valid)
    ny = row_count(~np.isnan(y))
    slope = np.full(R, np.nan)
    lo = np.full(R, np.nan)
    hi = np.full(R, np.nan)
    z = NormalDist().inv_cdf((1.0 - level) / 2.0)  # negative
    # Rows share (nt, ny) in the common case: one partial sort (np.partition, NaN last) per
    # distinct pair picks the four order statistics, instead of a full sort of every row.
    if R and nt[0] > 0 and (nt == nt[0]).all() and (ny == ny[0]).all():
        groups: Any = [(nt[0], ny[0])]  # one group (the usual block): no np.unique of pairs
    else:
        groups = np.unique(np.stack([nt, ny], axis=1)[nt > 0], axis=0)
    for ntv, nyv in groups:
        rows = np.flatnonzero((nt == ntv) & (ny == nyv))
        m_lo, m_hi, rl, ru = _sen_ranks(ntv, nyv, z)
        # a full sort (NaN last) is faster than a partition at four ranks (vectorized sort);
        # in place when every row is in this group (the common case: no copy of the slopes)
        if rows.size == R:
            s.sort(axis=1)
            part = s
        else:
            part = np.sort(s[rows], axis=1)
        slope[rows] = mean2(part[:, m_lo], part[:, m_hi])
        lo[rows] = part[:, rl]
        hi[rows] = part[:, ru]
    return slope, lo, hi


def _bin_medians(X: np.ndarray, Y: np.ndarray, n: np.ndarray, nbins: int) -> tuple[np.ndarray,
                                                                                 np.ndarray]:
    """Medians of ``nbins`` equal-count bins of each row's first ``n[r]`` points: ``X`` the
    steps (ascending along each row), ``Y`` the values.

    Rows with ``n <= nbins`` are returned unbinned. Vectorized: one lexsort over all points.
    """
    R, K = X.shape
    if R and (n == n[0]).all() and n[0] > nbins:
        # every row has the same count: the bins share their boundaries, one median per bin
        n0 = int(n[0])
        edges = np.searchsorted((np.arange(n0) * nbins) // n0, np.arange(nbins + 1))
        bx = np.empty((R, nbins))
        by = np.empty((R, nbins))
        sizes = np.diff(edges)
        for size in np.unique(sizes):  # the bins hold one of two sizes: one sort each
            ks = np.flatnonzero(sizes == size)
            idx = edges[ks][:, None] + np.arange(size)[None, :]
            # np.median of a bin holding NaN is NaN: kept so (a NaN-free bin sorts as is);
            # the steps X ascend along a run, so a bin of them is sorted as it is
            for src, dst, ascending in ((X, bx, True), (Y, by, False)):
                vals = src[:, idx]
                med = _sorted_median(vals if ascending else np.sort(vals, axis=2))
                dst[:, ks] = np.where(np.isnan(vals).any(axis=2), np.nan, med)
        return bx, by
    valid = np.arange(K)[None, :] < n[:, None]
    nb = np.minimum(n, nbins)
    pos = np.broadcast_to(np.arange(K)[None, :], (R, K))
    with np.errstate(divide="ignore", invalid="ignore"):
        b = np.where(valid, (pos * nb[:, None]) // np.maximum(n[:, None], 1), -1)
    rr = np.broadcast_to(np.arange(R)[:, None], (R, K))[valid]
    bb = b[valid]
    key = rr * nbins + bb
    out_x = np.full((R, nbins), np.nan)
    out_y = np.full((R, nbins), np.nan)
    for src, dst in ((X[valid], out_x), (Y[valid], out_y)):
        order = np.lexsort((src, key))
        ks = key[order]
        vs = src[order]
        starts = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]])
        ends = np.r_[starts[1:], ks.size]
        cnt = ends - starts
        med = mean2(vs[starts + (cnt - 1) // 2], vs[starts + cnt // 2])
        g = ks[starts]
        dst[g // nbins, g % nbins] = med
    return out_x, out_y


@dataclass(frozen=True)
class MetricClocks:
    """Floor, stability, at-grok value, ``t_compress`` and derived quantities for one metric."""

    metric: str
    grok: Event  #: the t_grok these clocks use (``acc.t_grok`` unless grok_point = usable)
    n_points: np.ndarray  #: metric points per run
    last_step: np.ndarray  #: the metric's last logged step per run (NaN when none): its horizon
    m_start: np.ndarray
    floor: np.ndarray  #: F (NaN when no floor)
    delta: np.ndarray  #: band half-width δ
    w2_lower: np.ndarray  #: first step of the final window W2
    w2_points: np.ndarray
    w1_median: np.ndarray
    w1_points: np.ndarray
    drift: np.ndarray  #: Theil–Sen slope × W2 step span
    drift_low: np.ndarray
    drift_high: np.ndarray
    mad: np.ndarray  #: MAD of W2 around F
    noisy: np.ndarray
    stability: np.ndarray  #: STAB_* codes
    m_grok: np.ndarray  #: NaN when no grok or METRIC_NOT_AT_GROK
    m_grok_step: np.ndarray
    metric_not_at_grok: np.ndarray  #: bool (grokked, but no metric point near t_grok)
    m_peak: np.ndarray
    drop: np.ndarray
    no_compression: np.ndarray  #: bool
    compression_unknown: np.ndarray  #: bool
    t_compress: Event  #: NaN value with tc_status when missing
    tc_status: np.ndarray  #: TC_* codes
    m_compress: np.ndarray  #: the metric at t_compress (at the last step when censored_time
    #: = last_step and censored); NaN otherwise
    rebound: np.ndarray  #: bool
    undershoot: np.ndarray  #: F − min(smoothed m) when rebound, else NaN
    lag: Event
    rel_lag_low: np.ndarray  #: rel_lag bounds used by the clock verdict (censoring only)
    rel_lag_high: np.ndarray
    before_grok: np.ndarray  #: bool: COMPRESSION_BEFORE_GROK
    concurrent: np.ndarray  #: bool: COMPRESSION_CONCURRENT
    frac_pre: np.ndarray
    inflation: np.ndarray
    inflation_lower_bound: np.ndarray  #: bool: floor not stable, inflation is only a bound
    transient: np.ndarray  #: bool
    converged: np.ndarray  #: bool
    #: the logged step after the smoothed metric's last exit from the floor band ``F ± δ``
    #: (the ``settle`` rule's step), for every run with a floor, whatever its compression
    #: status, rule or stability: the step since which the metric has sat on its floor in
    #: this log (NaN: no floor, or it ends outside the band). The live audit's stop rule
    #: reads it; no verdict does
    settled_at: np.ndarray
    #: per run, the metric was first logged after the run's first logged step (any column):
    #: a compression left-censored there happened before that point, not before logging began
    late: np.ndarray

    @functools.cached_property
    def tc_censored(self) -> np.ndarray:
        """Runs whose t_compress is censored (a status in ``TC_CENSORED``), computed once per
        MetricClocks for every cell and study that reads it (read-only)."""
        out: np.ndarray = np.isin(self.tc_status, TC_CENSORED)
        out.flags.writeable = False
        return out


def usable_grok(table: LogTable, metric: str, cfg: AuditConfig,
                run_index: np.ndarray | None = None) -> Event:
    """t_grok as the v1.5 analyzer reads it (``grok_point = usable``): the first logged point
    where test_acc ≥ threshold *and* metric ``metric`` is logged. A point where only the
    accuracy is logged does not count: the grok moves on to the next point with both."""
    column, sign, grok_level, _ = grok_levels(cfg)
    signal = table.test_acc if column == "test_acc" else sign * table.series[column]
    acc_where_metric = np.where(np.isnan(table.series[metric]), np.nan, signal)
    A = pack(acc_where_metric, table, run_index)
    widen = downsampled_runs(table) if cfg.interval_censoring else None
    return first_passage(A, grok_level, cfg.interval_censoring, widen)


def grid_window_start(table: LogTable, groups: np.ndarray | None, floor_frac: float
                      ) -> np.ndarray:
    """Per run, the first step of the floor window of its cell's step grid (``floor_window =
    grid``, v1.5): the grid is the sorted union of the logged steps of the runs sharing the
    run's ``groups`` id (each run alone when ``groups`` is None), ``T`` its length, and the
    window its last ``max(1, int(floor_frac·T))`` positions."""
    R = table.n_runs
    g = np.arange(R) if groups is None else np.asarray(groups, dtype=np.int64)
    if R == 0:
        return np.zeros(0)
    ug, us = grid_steps(g[table.run_index], table.step)
    return grid_starts(ug, us.astype(np.float64), g, floor_frac)


def grid_steps(row_groups: np.ndarray, step: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``(group, step)`` pairs of rows, sorted: each group's step grid."""
    order = np.lexsort((step, row_groups))
    gs, ss = row_groups[order], step[order]
    first = np.r_[True, (gs[1:] != gs[:-1]) | (ss[1:] != ss[:-1])]
    return gs[first], ss[first]


def grid_starts(ug: np.ndarray, us: np.ndarray, g: np.ndarray, floor_frac: float
                ) -> np.ndarray:
    """Per run (group ``g``), the first step of its group's floor window, from the grids of
    :func:`grid_steps` (``us`` as float64)."""
    T = np.bincount(ug, minlength=int(g.max()) + 1)
    start = np.r_[0, np.cumsum(T)[:-1]]
    n_floor = np.maximum(1, (floor_frac * T).astype(np.int64))
    at = np.clip(start + T - n_floor, 0, max(us.size - 1, 0))
    out: np.ndarray = us[at][g]
    return out


class _Span(NamedTuple):
    """Each run's first and last logged step (any column)."""

    first: np.ndarray
    last: np.ndarray


class _Window(NamedTuple):
    """The final window W2 of each run and its floor."""

    i0: np.ndarray  #: first column of W2 (``n`` when there is no floor)
    has_floor: np.ndarray
    w2_lo: np.ndarray  #: first step of W2 (NaN when no floor)
    #: W2's values, (R, W) NaN-padded; None when the compiled passes read the points in place
    W2v: np.ndarray | None
    W2s: np.ndarray | None  #: W2's steps (None with W2v)
    floor: np.ndarray
    delta: np.ndarray
    w2_points: np.ndarray


class _Stability(NamedTuple):
    w1_median: np.ndarray
    w1_points: np.ndarray
    drift: np.ndarray
    drift_lo: np.ndarray
    drift_hi: np.ndarray
    mad: np.ndarray
    noisy: np.ndarray
    stability: np.ndarray  #: STAB_* codes
    stable_mask: np.ndarray  #: floors taken as converged (STAB_TAKEN_STABLE)


class _AtGrok(NamedTuple):
    tg: Event  #: the t_grok the metric's clocks use
    grokked: np.ndarray
    left: np.ndarray  #: grokked before logging began (t_grok left-censored): no value at grok
    #: the metric was highest at its first logged point, after step 0: its peak may lie before
    #: logging began, so the drop from it is only a lower bound
    peak_left: np.ndarray
    tgv: np.ndarray  #: t_grok, −inf when not grokked
    m_grok: np.ndarray
    m_grok_step: np.ndarray
    metric_not_at_grok: np.ndarray
    m_peak: np.ndarray


class _Peak(NamedTuple):
    """Where each run's smoothed metric is highest, and whether it never turned down."""

    at: np.ndarray  #: column of the first highest smoothed value (0 when none)
    #: the metric rose (its first value below the top by more than δ) and never fell more
    #: than δ after its top: a norm that only grows, or grows to a plateau. Its end is no
    #: floor: it did not compress (NO_COMPRESSION), whatever the plateau's stability
    rising: np.ndarray
    #: the smallest smoothed value of each run (NaN ignored), when the compiled pass that
    #: found the top read it too (the rebound's test reads it; None: the rebound takes it)
    low: np.ndarray | None = None


def _peak(P: Packed, sm: np.ndarray, w: _Window, kernel: Kernel = NUMPY) -> _Peak:
    """The smoothed metric's peak (:class:`_Peak`). Undershoot and rebound are measured after
    it: values logged before a metric rose are not below its floor in any sense that matters.
    ``kernel`` numba: the top, its column, the fall after it and the lowest value in one
    compiled pass over each run's points."""
    R, K = sm.shape
    if not K:
        return _Peak(np.zeros(R, dtype=np.int64), np.zeros(R, dtype=bool))
    if kernel.numba:
        got = nb_peak(sm, w.delta)
        if got is not None:
            top, at, fell_any, low = got
            with np.errstate(invalid="ignore"):
                first = np.where(P.counts > 0, P.values[:, 0], np.nan)
                rising = w.has_floor & ~np.isnan(top) & (first < top - w.delta) & ~fell_any
            return _Peak(at, rising, low)
    # the first point at the row's largest value (NaN only beyond a run's points: a row's
    # first NaN-free maximum is its first point equal to the NaN-ignoring maximum; a row of
    # NaN has none, peaks at 0, as an argmax over -inf for NaN reads it, and tops at NaN)
    with np.errstate(invalid="ignore"):
        top = np.fmax.reduce(sm, axis=1)  # fmax: NaN ignored, never warned about
        at = (sm == top[:, None]).argmax(axis=1)
    some = ~np.isnan(top)  # a row with a point
    with np.errstate(invalid="ignore"):
        # a run's first point (its points are packed from column 0, NaN-free)
        first = np.where(P.counts > 0, P.values[:, 0], np.nan)
        thr = top - w.delta
        # fell more than δ after its top: a point at or after the top below top − δ (NaN
        # points never compare below). The lowest point after the top is at or above top − δ
        # exactly when none is below it (where top − δ is NaN, first < top − δ is false),
        # without an (R, K) matrix of NaN-masked values and its NaN-skipping minimum
        fell = sm < thr[:, None]
        fell &= np.arange(K)[None, :] >= at[:, None]
        rising = w.has_floor & some & (first < thr) & ~row_any(fell)
    return _Peak(at, rising)


class _Amount(NamedTuple):
    drop: np.ndarray
    no_compression: np.ndarray
    compression_unknown: np.ndarray
    #: grokked before logging began and compressed too little while logged: the compression
    #: (if any) began before logging, so whether and when it ended cannot be read
    left_small: np.ndarray


class _Rule(NamedTuple):
    """A t_compress rule's raw result, before the statuses of the other stages."""

    k: np.ndarray  #: column of t_compress
    tc_val: np.ndarray  #: NaN when never reached
    tc_lower: np.ndarray  #: the step before it (the last step when never crossed)
    low_idx: np.ndarray  #: column of tc_lower
    tc_status: np.ndarray


class _Compress(NamedTuple):
    settled_at: np.ndarray  #: the settle rule's step (NaN: never in the band to stay)
    t_compress: Event
    tc_status: np.ndarray
    ok: np.ndarray
    censored: np.ndarray
    m_compress: np.ndarray
    left: np.ndarray  #: compressed before logging began (TC_LEFT_CENSORED)


class _Lag(NamedTuple):
    lag: Event
    rel_low: np.ndarray
    rel_high: np.ndarray
    before: np.ndarray
    concurrent: np.ndarray


class _Snapshot(NamedTuple):
    frac_pre: np.ndarray
    inflation: np.ndarray
    inflation_lb: np.ndarray
    transient: np.ndarray
    converged: np.ndarray


def _final_window(P: Packed, span: _Span, cfg: AuditConfig, g0: np.ndarray | None,
                  kernel: Kernel = NUMPY) -> _Window:
    """W2 (``floor_window``: the step span's last ``floor_frac``, the run's last points, or
    the cell grid's last positions ``g0``), the floor F (median of W2) and its band
    half-width δ. With ``kernel`` numba W2's matrices are not made: the stages after read
    the runs' points between ``i0`` and their counts."""
    V, S, n = P.values, P.steps, P.counts
    if cfg.floor_window == "grid":
        assert g0 is not None
        n_in = _count(S, g0, GE, kernel, P.grid)
        i0 = n - n_in
        has_floor = n_in > 0
        w2_lo = np.where(has_floor, g0, np.nan)
    elif cfg.floor_window == "index":
        n2 = np.where(n > 0, np.maximum(1, (cfg.floor_frac * n).astype(np.int64)), 0)
        i0 = n - n2
        has_floor = n2 > 0
        w2_lo = np.where(has_floor, _take(S, i0), np.nan)
    else:
        width = span.last - span.first
        target = span.last - cfg.floor_frac * width
        n_in = _count(S, target, GE, kernel, P.grid)
        i0 = n - n_in
        few = n_in < cfg.min_floor_points
        i0_fb = n - cfg.min_floor_points
        fb_ok = (i0_fb >= 0) & (_take(S, np.maximum(i0_fb, 0)) >=
                                span.last - cfg.max_floor_frac * width)
        i0 = np.where(few, np.maximum(i0_fb, 0), i0)
        has_floor = ~few | fb_ok
        has_floor &= n >= cfg.min_floor_points
        w2_lo = np.where(few, _take(S, np.maximum(i0_fb, 0)), target)
        w2_lo = np.where(has_floor, w2_lo, np.nan)
    i0 = np.where(has_floor, i0, n)
    W2v: np.ndarray | None = None
    W2s: np.ndarray | None = None
    med = nb_window_median(V, i0, n) if kernel.numba else None
    if med is None:
        W2v, W2s = _window(V, i0, n), _window(S, i0, n)
        med = _nanmedian(W2v)
    floor = np.where(has_floor, med, np.nan)
    delta = np.maximum(cfg.abs_tol, cfg.rel_tol * np.abs(floor))
    w2_points = np.where(has_floor, n - i0, 0)
    return _Window(i0, has_floor, w2_lo, W2v, W2s, floor, delta, w2_points)


def _stability(P: Packed, span: _Span, w: _Window, cfg: AuditConfig,
               not_converged: np.ndarray | None = None, kernel: Kernel = NUMPY
               ) -> _Stability:
    """The floor's stability: the window W1 before W2, the Theil–Sen drift over W2 and the
    noise around F; every floor is taken as converged (``unchecked``) without the check.
    ``not_converged`` marks runs whose siblings show the metric still moving after their
    horizon (:mod:`.horizons`): a floor stable over their own window is indeterminate.
    ``kernel`` numba: W1's median, the binned drift and the noise by one compiled pass each
    over the runs' points (:mod:`.clockloops`)."""
    V, S, n = P.values, P.steps, P.counts
    # W2's own step length: to the metric's last logged point (a metric that stops before
    # the run's last step, NaN in its last rows, has a shorter W2: W1 and the drift follow it)
    last_v = np.where(n > 0, _take(S, np.maximum(n - 1, 0)), span.last)
    L = np.minimum(span.last, last_v) - w.w2_lo
    w1_from = w.w2_lo - L
    i1 = _count(S, w1_from, LT, kernel, P.grid)
    i1 = np.minimum(i1, w.i0)
    w1_points = np.where(w.has_floor, w.i0 - i1, 0)
    w1_median = np.where(w1_points > 0, _window_median(V, i1, w.i0, kernel), np.nan)
    sen = mad = None
    if kernel.numba:
        z = NormalDist().inv_cdf((1.0 - cfg.drift_level) / 2.0)
        sen = nb_drift(S, V, w.i0, n, cfg.max_slope_bins, z)
        mad = nb_window_mad(V, w.i0, n, w.floor)
    if sen is not None and mad is not None:
        slope, s_lo, s_hi = sen
    else:
        W2v, W2s = (w.W2v, w.W2s) if w.W2v is not None and w.W2s is not None \
            else (_window(V, w.i0, n), _window(S, w.i0, n))
        if W2v.shape[1] > cfg.max_slope_bins:
            bx, by = _bin_medians(W2s, W2v, w.w2_points, cfg.max_slope_bins)
        else:
            bx, by = W2s, W2v
        slope, s_lo, s_hi = theil_sen(bx, by, cfg.drift_level)
        mad = _nanmedian(np.abs(W2v - w.floor[:, None]))
    drift, drift_lo, drift_hi = slope * L, s_lo * L, s_hi * L
    noisy = w.has_floor & (mad > w.delta / 2)
    if cfg.stability_check:
        delta, has_floor = w.delta, w.has_floor
        step_change = np.abs(w1_median - w.floor) > delta
        drift_out = (drift_lo > delta) | (drift_hi < -delta)
        unstable = has_floor & (np.nan_to_num(step_change, nan=0) | drift_out)
        stable = has_floor & ~unstable & (np.abs(drift) <= delta) & ~noisy & (w1_points > 0)
        stability = np.where(~has_floor, STAB_NONE,
                             np.where(unstable, STAB_UNSTABLE,
                                      np.where(stable, STAB_STABLE, STAB_INDETERMINATE)))
    else:
        stability = np.where(w.has_floor, STAB_UNCHECKED, STAB_NONE)
    if not_converged is not None:
        stability = np.where(not_converged & (stability == STAB_STABLE), STAB_INDETERMINATE,
                             stability)
    stable_mask = np.isin(stability, STAB_TAKEN_STABLE)
    return _Stability(w1_median, w1_points, drift, drift_lo, drift_hi, mad, noisy, stability,
                      stable_mask)


def _at_grok(P: Packed, sm: np.ndarray, tg: Event, left_censoring: bool = True,
             kernel: Kernel = NUMPY) -> _AtGrok:
    """The metric at t_grok (the last point at or before it, within one local cadence) and the
    peak of the smoothed metric up to it (``kernel`` numba: each run's points read once, up to
    that point)."""
    V, S = P.values, P.steps
    grokked = ~tg.censored
    # a grok before logging began has no step to read the metric at: no value at grok
    left = grokked & tg.left_censored
    tgv = np.where(grokked & ~left, tg.value, -INF)
    j = _count(S, tgv, LE, kernel, P.grid) - 1
    sj = _take(S, j)
    nxt = _take(S, j + 1)
    prv = _take(S, j - 1)
    # the local metric cadence: the gap that led to the point (the next gap for the first point)
    interval = np.where(j >= 1, sj - prv, nxt - sj)
    near = (j >= 0) & (tgv - sj <= np.nan_to_num(interval, nan=0.0))
    at_grok = grokked & near
    m_grok = np.where(at_grok, _take(V, j), np.nan)
    m_grok_step = np.where(at_grok, sj, np.nan)
    metric_not_at_grok = grokked & ~near & ~left
    # the running maximum read at column j: the largest smoothed value up to t_grok (only the
    # columns up to the last j are read: the accumulation's prefix is the same)
    top = nb_prefix_fmax(sm, j) if kernel.numba else None
    if top is None:
        jmax = int(j.max(initial=-1))
        with np.errstate(invalid="ignore"):
            running_max = np.fmax.accumulate(sm[:, :max(jmax + 1, 1)], axis=1)
        top = _take(running_max, j)
    m_peak = np.where(grokked & (j >= 0), top, np.nan)
    peak_left = np.zeros(grokked.shape, dtype=bool)
    if left_censoring and S.shape[1]:
        with np.errstate(invalid="ignore"):
            peak_left = grokked & ~left & (S[:, 0] > 0) & (m_peak == sm[:, 0])
    return _AtGrok(tg, grokked, left, peak_left, tgv, m_grok, m_grok_step, metric_not_at_grok,
                   m_peak)


def _amount(g: _AtGrok, w: _Window, st: _Stability, cfg: AuditConfig,
            sm: np.ndarray, pk: _Peak) -> _Amount:
    """The compression amount (from the peak or the at-grok value down to F) and whether it
    is too small: ``min_rel_drop`` and ``min_abs_drop`` per run, or only ``min_abs_drop`` when
    the relative rule is the cell's (``rel_drop = cell``).

    A grok before logging began has no value at grok or peak: the amount is the compression the
    log saw, from the highest smoothed value logged; too small, whether the run compressed
    cannot be read (``left_small``). A peak at the first logged point after step 0 may
    lie before logging: a small drop from it is unknown, never NO_COMPRESSION."""
    base = g.m_peak if cfg.drop_from == "peak" else g.m_grok
    if g.left.any():
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            seen = np.fmax.reduce(sm, axis=1) if sm.shape[1] else np.full(base.shape, np.nan)
        base = np.where(g.left, seen, base)
    drop = base - w.floor
    if cfg.rel_drop == "run":
        # relative to the metric's magnitude: a metric below 0 (a log-determinant) falls by
        # a share of |base| too (``drop < rel · base`` is never true for base < 0)
        # (and no drop at all is no compression, whatever the thresholds: a metric constant
        # at 0 has base 0, where ``rel · |base|`` is 0 too)
        small = (drop < cfg.min_rel_drop * np.abs(base)) | (drop < cfg.min_abs_drop) \
            | ~(drop > 0)
    else:  # the relative rule is the cell's (a gate on its medians): runs need the absolute
        small = ~(np.isfinite(drop) & (drop >= cfg.min_abs_drop))
    judged = g.grokked & w.has_floor & ~np.isnan(base)
    unknown_peak = g.left | (g.peak_left if cfg.drop_from == "peak" else False)
    # a metric that never turned down did not compress, whether its plateau is still moving
    # or not (a still-rising norm is no floor whose stability could leave it open)
    rose = g.grokked & pk.rising
    return _Amount(drop, (judged & st.stable_mask & small & ~unknown_peak) | rose,
                   judged & (~st.stable_mask | (small & unknown_peak)) & ~rose,
                   judged & small & g.left & ~rose)


def _settle_rule(P: Packed, sm: np.ndarray, w: _Window, kernel: Kernel = NUMPY) -> _Rule:
    """Rule ``settle``: the logged point after the smoothed metric's last exit from the band
    ``F ± δ``; never settled when it ends outside, flagged when it settles inside W2
    (``kernel`` numba: each run read backwards from its end to that exit)."""
    S, n = P.steps, P.counts
    lo_band, hi_band = w.floor - w.delta, w.floor + w.delta
    got = nb_last_outside(sm, lo_band, hi_band) if kernel.numba else None
    last_out = got if got is not None else _last_true((sm < lo_band[:, None])
                                                      | (sm > hi_band[:, None]))
    k = last_out + 1
    never = w.has_floor & (last_out == n - 1) & (n > 0)
    tc_val = np.where(never, np.nan, _take(S, k))
    tc_lower = np.where(last_out >= 0, _take(S, last_out), 0.0)
    in_final = ~never & (tc_val >= w.w2_lo)
    status = np.where(never, TC_NEVER_SETTLED, np.where(in_final, TC_IN_FINAL_WINDOW, TC_OK))
    return _Rule(k, tc_val, tc_lower, last_out, status)


def _crossing_rule(P: Packed, g: _AtGrok, w: _Window, cfg: AuditConfig) -> _Rule:
    """Rule ``crossing``: the first logged step at or after t_grok with the raw metric at or
    below ``F + eps·(m_grok − F)``; never crossed: the last step is the lower bound."""
    V, S, n = P.values, P.steps, P.counts
    thr = w.floor + cfg.eps * (g.m_grok - w.floor)
    cross = (S >= g.tgv[:, None]) & (V <= thr[:, None])
    k = _first_true(cross)
    never = k < 0
    tc_val = np.where(never, np.nan, _take(S, k))
    last_step = _take(S, n - 1, fill=0.0)
    tc_lower = np.where(never, last_step, np.where(k > 0, _take(S, k - 1), 0.0))
    low_idx = np.where(never, n - 1, k - 1)
    status = np.where(never, TC_NEVER_CROSSED, TC_OK)
    return _Rule(k, tc_val, tc_lower, low_idx, status)


def _t_compress(P: Packed, widen: np.ndarray | None, sm: np.ndarray, g: _AtGrok, w: _Window,
                st: _Stability, a: _Amount, cfg: AuditConfig, kernel: Kernel = NUMPY
                ) -> _Compress:
    """t_compress by the configured rule, its status (a missing floor, grok or compression,
    an unstable floor…) and its interval; the metric there."""
    V, S, n = P.values, P.steps, P.counts
    settle = _settle_rule(P, sm, w, kernel)
    rule = settle if cfg.rule == "settle" else _crossing_rule(P, g, w, cfg)
    k, tc_val, tc_lower = rule.k, rule.tc_val, rule.tc_lower
    tc_status = rule.tc_status
    if cfg.stability_check:
        tc_status = np.where((tc_status == TC_OK) | (tc_status == TC_IN_FINAL_WINDOW),
                             np.where(st.stability == STAB_UNSTABLE, TC_FLOOR_UNSTABLE,
                                      np.where(st.stability == STAB_INDETERMINATE,
                                               TC_FLOOR_INDETERMINATE, tc_status)),
                             tc_status)
    # settled on the floor from the first logged point, after step 0: the compression (if any)
    # happened before logging began -- left-censored, never "no compression"
    left = np.zeros(n.shape, dtype=bool)
    if cfg.interval_censoring and S.shape[1]:
        with np.errstate(invalid="ignore"):
            left = w.has_floor & (k == 0) & (S[:, 0] > 0)
        timed = (tc_status == TC_OK) | (tc_status == TC_IN_FINAL_WINDOW)
        tc_status = np.where(left & timed, TC_LEFT_CENSORED,
                             np.where(a.left_small & timed, TC_UNREADABLE, tc_status))
        left = tc_status == TC_LEFT_CENSORED
    tc_status = np.where(a.no_compression & ~left, TC_NO_COMPRESSION, tc_status)
    tc_status = np.where(~w.has_floor, TC_NO_FLOOR, tc_status)
    tc_status = np.where(~g.grokked, TC_NO_GROK, tc_status)
    if cfg.rule == "crossing":
        no_value = g.grokked & w.has_floor & np.isnan(g.m_grok)
        if cfg.interval_censoring:  # its threshold is unknown: no time, and not "after the end"
            tc_status = np.where(no_value & ((tc_status == TC_OK)
                                             | (tc_status == TC_NEVER_CROSSED)),
                                 TC_UNREADABLE, tc_status)
        else:
            tc_status = np.where(no_value & (tc_status == TC_OK), TC_NEVER_CROSSED, tc_status)
    ok = tc_status == TC_OK
    censored_tc = np.isin(tc_status, TC_CENSORED)
    left = tc_status == TC_LEFT_CENSORED
    first = S[:, 0] if S.shape[1] else np.full(n.shape, np.nan)
    t_val = np.where(ok, tc_val, np.nan)
    # before logging began: (0, first logged step], wherever the rule's last exit was
    t_low = np.where(left, 0.0, np.where(ok | censored_tc, tc_lower, np.nan))
    t_up = np.where(ok, tc_val, np.where(left, first, np.where(censored_tc, INF, np.nan)))
    last_step_time = cfg.censored_time == "last_step"
    if widen is not None:
        t_low, t_up = _widen(S, n, widen & (ok | censored_tc), rule.low_idx, k, t_low, t_up)
        t_up = np.where(widen & left & (n > 1), _take(S, np.ones(n.shape, dtype=np.int64)),
                        t_up)
    if not cfg.interval_censoring:
        t_low = np.where(ok, tc_val, t_low)
    t_compress = Event(t_val, t_low, t_up, np.where(ok, k, -1))
    m_compress = np.where(ok, _take(V, k), np.nan)
    if last_step_time:
        m_compress = np.where(censored_tc & (n > 0), _take(V, n - 1), m_compress)
    settled_at = np.where(w.has_floor, settle.tc_val, np.nan)
    return _Compress(settled_at, t_compress, tc_status, ok, censored_tc, m_compress, left)


def _rebound(sm: np.ndarray, w: _Window, pk: _Peak) -> tuple[np.ndarray, np.ndarray]:
    """Runs whose smoothed metric, after its peak, dips below the band and comes back into
    it, and by how much it undershot F. Before its peak a metric that rose first (a norm
    growing from a small initialization) lies below its floor without undershooting it."""
    R, K = sm.shape
    lo_band = w.floor - w.delta
    # only runs whose smoothed minimum dips below the band can rebound: test just those rows
    if pk.low is not None:
        sm_min = pk.low
    else:
        with np.errstate(invalid="ignore"):
            sm_min = np.fmin.reduce(sm, axis=1)
    cand = np.flatnonzero(w.has_floor & (sm_min < lo_band))
    rebound = np.zeros(R, dtype=bool)
    undershoot = np.full(R, np.nan)
    if cand.size:
        cols = np.arange(K)[None, :]
        smc = np.where(cols >= pk.at[cand, None], sm[cand], np.nan)
        loc, hic = lo_band[cand, None], (w.floor + w.delta)[cand, None]
        with np.errstate(invalid="ignore"):
            first_under = _first_true(smc < loc)
            inside = (smc >= loc) & (smc <= hic)
        back = inside & (cols > first_under[:, None]) & (first_under[:, None] >= 0)
        rebound[cand] = row_any(back)
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            low = np.fmin.reduce(smc, axis=1)
        undershoot[cand] = np.where(rebound[cand], w.floor[cand] - low, np.nan)
    return rebound, undershoot


def _lag(g: _AtGrok, c: _Compress, cfg: AuditConfig) -> _Lag:
    """The lag t_compress − t_grok with its interval, rel_lag's bounds (a censored run's
    upper bound is ∞, or its lower bound with ``censored_time = last_step``) and the order
    of the two events. A left-censored clock (before logging began) has no value: the lag
    and rel_lag are its interval's bounds (rel_lag unbounded above for a grok in
    ``(0, first step]``)."""
    tg, grokked, ok, cens, lc, lg = g.tg, g.grokked, c.ok, c.censored, c.left, g.left
    t = c.t_compress
    have_lag = grokked & (ok | cens | lc)
    lag_val = np.where(ok & grokked, t.value - tg.value, np.nan)  # NaN when a clock is left
    lag_low = np.where(have_lag, t.lower - tg.upper, np.nan)
    lag_up = np.where(have_lag, t.upper - tg.lower, np.nan)
    lag = Event(lag_val, lag_low, lag_up, np.where(ok, 0, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        tgpos = np.where(grokked & (tg.value > 0), tg.value, np.nan)
        rel_low = np.where(ok, lag_val / tgpos, (t.lower - tg.value) / tgpos)
        rel_high = np.where(ok, lag_val / tgpos, np.where(cens, INF, np.nan))
        if lc.any() or lg.any():
            # compressed before logging: t_compress in (lower, upper] against a logged grok
            rel_high = np.where(lc & ~lg, (t.upper - tg.value) / tgpos, rel_high)
            # grokked before logging: rel_lag = t_c / t_g − 1 over t_g in (lower, upper]
            up_pos = np.where(tg.upper > 0, tg.upper, np.nan)
            rel_low = np.where(lg & have_lag, t.lower / up_pos - 1.0, rel_low)
            rel_high = np.where(lg & have_lag,
                                np.where(tg.lower > 0, t.upper / tg.lower - 1.0, INF), rel_high)
        if cfg.interval_censoring:
            # a lag below the log's resolution (either clock's interval wider than the lag)
            # whose rel_lag range, t_c / t_g − 1 over t_c in (lower, upper] and t_g in
            # (lower, upper], is wider than large_lag itself (evaluations far apart around
            # grokking: a grok in (1000, 6000] and a compression first seen 50 steps after
            # it): the first-seen steps' ratio is not what the log measures; the run's
            # rel_lag is its range
            with np.errstate(divide="ignore", invalid="ignore"):
                r_lo = t.lower / np.where(tg.upper > 0, tg.upper, np.nan) - 1.0
                r_hi = np.where(tg.lower > 0, t.upper / tg.lower - 1.0, INF)
            below = np.maximum(tg.upper - tg.lower, t.upper - t.lower) > np.abs(lag_val)
            wide = ok & grokked & ~lg & ~lc & (tg.value > 0) & below & \
                (r_hi - r_lo > cfg.large_lag)
            if wide.any():
                rel_low = np.where(wide, r_lo, rel_low)
                rel_high = np.where(wide, r_hi, rel_high)
            # grokked at step 0, a logged point: rel_lag = lag / 0 is infinite for a positive
            # lag and unknown, in [0, ∞), for a lag that may be 0 -- never left out of a median
            zero = grokked & ~lg & (tg.value == 0) & have_lag
            if zero.any():
                num_low = np.where(ok, lag_val, t.lower - tg.value)
                rel_low = np.where(zero, np.where(num_low > 0, INF, 0.0), rel_low)
                rel_high = np.where(zero, INF, rel_high)
    if cfg.censored_time == "last_step":  # a censored run's time is its last step: a point
        rel_high = np.where(cens, rel_low, rel_high)
    # a compression before logging began may not have happened at all: never "before grok"
    before = ok & grokked & (t.upper <= tg.lower)
    concurrent = ok & grokked & (t.lower < tg.upper) & (tg.lower < t.upper)
    return _Lag(lag, rel_low, rel_high, before, concurrent)


def _snapshot(m_start: np.ndarray, g: _AtGrok, w: _Window, st: _Stability,
              cfg: AuditConfig, no_compression: np.ndarray) -> _Snapshot:
    """What a snapshot at grok reads: the share of the compression done before grok, the
    at-grok inflation over F, and whether the at-grok value is a transient or converged.
    A run that did not compress (``no_compression``: it fell by less than ``min_rel_drop``)
    is never a transient: one definition of compression, so no metric is both
    ``NO_COMPRESSION`` and a ``SNAPSHOT_TRANSIENT`` (1/(1 − 0.25) > 1.2 would allow both)."""
    m_grok, floor = g.m_grok, w.floor
    with np.errstate(divide="ignore", invalid="ignore"):
        denom = m_start - floor
        # the share of the compression done by grok needs the start of it: not when the metric
        # was already falling at its first logged point after step 0
        frac_pre = np.where(g.grokked & (denom != 0) & ~g.peak_left,
                            (m_start - m_grok) / denom, np.nan)
        # a noisy floor (its spread beyond half the band) is no level to divide by, nor is one
        # still rising at the end of the log (the converged value lies above it): no ratio
        # (the reference profile has no stability test, as v1.5: it divides by any floor)
        no_level = ((st.noisy | (~st.stable_mask & (st.drift > 0))) if cfg.stability_check
                    else np.zeros(floor.shape, dtype=bool))
        inflation = np.where(g.grokked & (floor > 0) & ~no_level, m_grok / floor, np.nan)
        if cfg.stability_check:
            # the share of a compression whose end the log has not shown (a floor not taken
            # as stable: unstable, indeterminate or noisy) is not known: no number
            frac_pre = np.where(st.stable_mask, frac_pre, np.nan)
    outside_band = (m_grok < floor - w.delta) | (m_grok > floor + w.delta)
    transient = (inflation > cfg.transient_threshold) & outside_band & ~no_compression
    converged = ~np.isnan(m_grok) & ~np.isnan(floor) & ~outside_band
    inflation_lb = ~np.isnan(inflation) & ~st.stable_mask
    return _Snapshot(frac_pre, inflation, inflation_lb, transient, converged)


def metric_clocks(table: LogTable, acc: AccuracyClocks, metric: str, cfg: AuditConfig,
                  run_index: np.ndarray | None = None, groups: np.ndarray | None = None,
                  not_converged: np.ndarray | None = None,
                  grid_start: np.ndarray | None = None, *, engine: Engine = THREADS,
                  kernel: Kernel = NUMPY) -> MetricClocks:
    """Compute every per-run quantity of AUDIT_SPEC §1 for metric column ``metric``.

    ``groups`` (one id per run) names the runs that share a step grid, a cell: only
    ``floor_window = grid`` reads it (each run is its own grid when it is None).
    ``not_converged`` (one bool per run) marks floors a longer sibling shows still moving
    (:func:`.horizons.horizon_check`): stable over their own window, indeterminate here.
    ``grid_start``: each run's :func:`grid_window_start`, taken over a whole log of which
    ``table`` is a part. ``engine`` cuts the runs into blocks and computes them, and
    ``kernel`` makes their passes over the points, as in :func:`accuracy_clocks`.

    The stages, each a function of the earlier ones: the final window and floor, its
    stability, the at-grok value, the compression amount, t_compress by its rule, the
    rebound, the lag and order of events, and the snapshot quantities. Beyond each run's
    points the packed matrices hold NaN, so every comparison there is False: no validity mask
    is needed on the comparisons."""
    P = pack(table.series[metric], table, run_index, name=metric)
    tg = usable_grok(table, metric, cfg, run_index) if cfg.grok_point == "usable" \
        else acc.t_grok
    span = _Span(acc.span_first, acc.span_last)
    g0 = None if cfg.floor_window != "grid" else grid_start if grid_start is not None \
        else grid_window_start(table, groups, cfg.floor_frac)
    widen = None if cfg.censored_time == "last_step" else downsampled_runs(table)

    def block(sl: slice) -> dict[str, Any]:
        return _metric_block(P.rows(sl), tg.rows(sl), _Span(span.first[sl], span.last[sl]),
                             None if g0 is None else g0[sl],
                             None if widen is None else widen[sl], cfg,
                             None if not_converged is None else not_converged[sl], kernel)

    def flat(sl: slice) -> list[np.ndarray]:
        d = block(sl)
        return [a for f in _BLOCK_FIELDS
                for a in (d[f].arrays() if f in _EVENT_FIELDS else (d[f],))]

    joined = iter(_map_runs(engine, flat, P.shape))
    out: dict[str, Any] = {f: Event(*(next(joined) for _ in range(4))) if f in _EVENT_FIELDS
                           else next(joined) for f in _BLOCK_FIELDS}
    return MetricClocks(metric=metric, grok=tg, **out)


def _metric_block(P: Packed, tg: Event, span: _Span, g0: np.ndarray | None,
                  widen: np.ndarray | None, cfg: AuditConfig,
                  not_converged: np.ndarray | None = None, kernel: Kernel = NUMPY
                  ) -> dict[str, Any]:
    """The stages of :func:`metric_clocks` for one block of runs (row-wise throughout);
    ``kernel`` makes their passes over the points."""
    sm = trailing_median(P, cfg.smooth, kernel)
    m_start = P.values[:, 0].copy()
    # metric values near ±1.8e308 make differences, bands and ratios leave the float range:
    # they become ±inf or NaN, which every stage already reads as "not finite", silently
    with np.errstate(over="ignore", invalid="ignore"):
        w = _final_window(P, span, cfg, g0, kernel)
        st = _stability(P, span, w, cfg, not_converged, kernel)
        g = _at_grok(P, sm, tg, cfg.interval_censoring, kernel)
        pk = _peak(P, sm, w, kernel)
        if cfg.rel_drop != "run":  # v1.5's rules (the reference profile) judge cells, not runs
            pk = pk._replace(rising=np.zeros_like(pk.rising))
        a = _amount(g, w, st, cfg, sm, pk)
        c = _t_compress(P, widen, sm, g, w, st, a, cfg, kernel)
        rebound, undershoot = _rebound(sm, w, pk)
        lg = _lag(g, c, cfg)
        # a grokked run whose metric never turned down ends on a plateau, not a floor: no F,
        # no stability, nothing at grok measured against it (NO_COMPRESSION says why; a run
        # that never grokked keeps its last values, which nothing is measured against)
        plateau = pk.rising & g.grokked
        if plateau.any():
            w = w._replace(floor=np.where(plateau, np.nan, w.floor))
            st = st._replace(stability=np.where(plateau, STAB_NONE, st.stability))
        per_run = a.no_compression & ~c.left if cfg.rel_drop == "run" else \
            np.zeros_like(a.no_compression)  # v1.5's rules: the transient is its own
        snap = _snapshot(m_start, g, w, st, cfg, per_run)
    return dict(
        n_points=P.counts, last_step=_take(P.steps, P.counts - 1), m_start=m_start,
        floor=w.floor,
        delta=w.delta, w2_lower=w.w2_lo, w2_points=w.w2_points, w1_median=st.w1_median,
        w1_points=st.w1_points, drift=st.drift, drift_low=st.drift_lo, drift_high=st.drift_hi,
        mad=st.mad, noisy=st.noisy, stability=st.stability, m_grok=g.m_grok,
        m_grok_step=g.m_grok_step, metric_not_at_grok=g.metric_not_at_grok, m_peak=g.m_peak,
        drop=a.drop, no_compression=a.no_compression & ~c.left,
        # compressed before logging began, or never: the amount is unknown
        compression_unknown=a.compression_unknown | (c.left & g.grokked & w.has_floor),
        t_compress=c.t_compress,
        tc_status=c.tc_status, m_compress=c.m_compress, rebound=rebound, undershoot=undershoot,
        lag=lg.lag, rel_lag_low=lg.rel_low, rel_lag_high=lg.rel_high, before_grok=lg.before,
        concurrent=lg.concurrent, frac_pre=snap.frac_pre, inflation=snap.inflation,
        inflation_lower_bound=snap.inflation_lb, transient=snap.transient,
        converged=snap.converged, settled_at=c.settled_at, late=_first_after(P, span.first),
    )


#: The MetricClocks fields a block computes (all but the metric's name and its t_grok).
_BLOCK_FIELDS = tuple(f.name for f in fields(MetricClocks) if f.name not in ("metric", "grok"))
#: Those of them that are :class:`Event` (four arrays each).
_EVENT_FIELDS = frozenset(f.name for f in fields(MetricClocks)
                          if f.name in _BLOCK_FIELDS and f.type == "Event")


def _map_runs(engine: Engine, fn: Callable[[slice], list[np.ndarray]],
              shape: tuple[int, int]) -> list[np.ndarray]:
    """``fn`` (per-run arrays of one block of runs) over the blocks ``engine`` cuts an
    ``shape`` matrix into, each position's arrays joined in run order. On the thread engine
    each block's arrays are copied into the whole arrays as the block ends
    (:func:`.blocks.map_rows`); other engines' blocks come back and are joined."""
    blocks = engine.blocks(*shape)
    if isinstance(engine, ThreadEngine):
        return map_rows(fn, blocks, shape[0], engine.map)
    parts = engine.map(fn, blocks)
    if len(parts) == 1:
        return list(parts[0])
    return [np.concatenate([p[i] for p in parts]) for i in range(len(parts[0]))]
