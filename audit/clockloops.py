"""The per-run clocks' passes over the packed matrices, compiled by numba (the ``fast`` extra).

The clocks (:mod:`grokaudit.clocks`) compute every per-run quantity as vectorised numpy stages
over ``(runs, points)`` matrices: each stage makes one or more matrices of the block's size
(a comparison, a cumulative sum, a sort) and reduces them. With ``--kernel numba`` the stages'
passes over the points run here instead, one compiled loop per stage that walks each run's
points once and writes one value per run; what a stage makes of those values (the statuses,
the censoring, the intervals) stays the numpy code of :mod:`grokaudit.clocks`, the same for
both kernels.

Each function below is the twin of one numpy expression of the clocks and returns exactly
its answer (the same float64 bits, the same first index), or ``None`` where it cannot
promise that; the caller then runs the numpy expression. What a loop cannot promise:

- **Which zero.** A sort or a ``minimum`` puts ``-0.0`` or ``+0.0`` first as its algorithm
  happens to, and the two compare equal: a median, a bound or a running maximum taken among
  both signs of zero is returned as ``None``, never guessed.
- **A point that should not be there.** A NaN inside a run's points (packing leaves none),
  a window starting before column 0, a dtype other than float64: ``None``.

Everything else is order-free: comparisons, counts, first and last indices, and the order
statistics of a run's values (a median is the value at a rank, whichever algorithm finds it;
the loops find it by selection where numpy sorts). No reduction that adds is compiled (a sum
over many values depends on its order); the loops' arithmetic is element by element, the
operations numpy does in the same order: a difference, a quotient (the slopes), an absolute
value, ``0.5·(a + b)`` of two values (:func:`_mean2_py`, as ``clocks.mean2``).

The loops are plain Python compiled on first use with ``numba.njit(cache=True, nogil=True)``
(:func:`_compiled`; numba is imported only there); the blocks of runs run them on the
thread pool, the GIL released. ``tests/core/test_clockloops.py`` holds each twin against its
numpy expression on matrices built for the edge cases, and ``benchmarks/identity.py --kernel
numba`` every audit of the identity benchmark against the numpy audit, byte for byte.
"""

from __future__ import annotations

import functools
import math
import threading
from types import SimpleNamespace
from typing import Any

import numpy as np

from .kernels import with_numba

#: Comparisons :func:`count` takes: ``S >= t``, ``S < t``, ``S <= t``.
GE, LT, LE = 0, 1, 2
#: Up to this many values, a run's values are put in order by insertion; beyond, the ranks
#: asked for are selected (:func:`_kth_py`).
_SMALL = 32


# ------------------------------------------------------------------------------------------
# helpers the loops call (compiled with them: see _compiled)
# ------------------------------------------------------------------------------------------

def _mean2_py(a: float, b: float) -> float:
    """``clocks.mean2`` of two values: ``0.5·(a + b)``, ``a/2 + b/2`` where the sum of two
    finite values overflows."""
    t = a + b
    if math.isinf(t) and math.isfinite(a) and math.isfinite(b):
        return a / 2 + b / 2
    return 0.5 * t


def _mixed_zeros_py(buf: np.ndarray, m: int) -> bool:
    """``buf[:m]`` holds both ``+0.0`` and ``-0.0``."""
    pos = False
    neg = False
    for i in range(m):
        if buf[i] == 0:
            if math.copysign(1.0, buf[i]) < 0:
                neg = True
            else:
                pos = True
    return pos and neg


def _small_sort_py(a: np.ndarray, m: int, tmp: np.ndarray) -> None:
    """Sort ``a[:m]`` (no NaN, at most :data:`_SMALL` values) ascending through ``tmp``: each
    value goes to its rank, the count of the values below it and of the equal ones before it,
    ``m²`` comparisons none of which is branched on (an insertion sort's comparisons of
    random values are mispredicted about half the time: 2× slower from 8 values up). Equal
    values keep their order; they are the same bits (both signs of zero are never sorted:
    the callers hand them to numpy)."""
    for i in range(m):
        v = a[i]
        r = 0
        for j in range(m):
            w = a[j]
            r += (w < v) | ((w == v) & (j < i))
        tmp[r] = v
    for i in range(m):
        a[i] = tmp[i]


def _kth_py(a: np.ndarray, lo: int, hi: int, k: int, budget: int = -1) -> None:
    """Move the ``k``-th smallest of ``a[lo:hi + 1]`` (no NaN) to ``a[k]``, the values before
    it not larger, those after it not smaller (a quickselect, the pivot the median of three).
    Its partitions swap at every value and count with the comparison's result instead of
    branching on it (``j += v < x``): a branch on random comparisons is mispredicted half the
    time, which cost a branching partition 2–3× the time on a run's slopes. Values equal to
    the pivot are set apart in a second pass (many ties: a metric on a grid of values). Read
    ``a[k]`` before the next selection: it may move values at the range's ends.

    The pivot is the median of three values at pseudo-random positions (a fixed sequence: the
    answer is a value, the same whichever pivots lead to it): the first, middle and last
    values are poor pivots on a run's slopes, which lie in order of lag (a smooth curve's
    slopes: 10 passes and more). A quickselect is linear on average but quadratic on inputs
    made to defeat its pivots: once its passes have read ``budget`` values (8× the range when
    negative), what is left of the range is sorted (a merge sort, ``n log n`` whatever the
    input) instead."""
    if budget < 0:
        budget = 8 * (hi - lo + 1)
    seed = 12345  # a linear congruential sequence below 2**31: no product overflows int64
    while hi - lo > 16:
        n = hi - lo + 1
        budget -= n
        if budget < 0:
            seg = a[lo:hi + 1].copy()
            a[lo:hi + 1] = seg[seg.argsort(kind="mergesort")]
            return
        seed = (seed * 1103515245 + 12345) & 0x7FFFFFFF
        p = a[lo + (seed >> 4) % n]
        seed = (seed * 1103515245 + 12345) & 0x7FFFFFFF
        q = a[lo + (seed >> 4) % n]
        seed = (seed * 1103515245 + 12345) & 0x7FFFFFFF
        u = a[lo + (seed >> 4) % n]
        lo_pq = p if p < q else q
        hi_pq = q if p < q else p
        top = hi_pq if hi_pq < u else u
        x = top if lo_pq < top else lo_pq
        j = lo  # a[lo:j] < x, a[j:i] >= x
        for i in range(lo, hi + 1):
            v = a[i]
            a[i] = a[j]
            a[j] = v
            j += v < x
        if k < j:
            hi = j - 1
            continue
        e = j  # a[j:e] == x, a[e:i] > x
        for i in range(j, hi + 1):
            v = a[i]
            a[i] = a[e]
            a[e] = v
            e += v <= x
        if k < e:
            return
        lo = e
    for i in range(lo + 1, hi + 1):  # a few values left: in order by insertion
        v = a[i]
        h = i - 1
        while h >= lo and a[h] > v:
            a[h + 1] = a[h]
            h -= 1
        a[h + 1] = v


def _median_py(a: np.ndarray, m: int, tmp: np.ndarray) -> float:
    """The median of ``a[:m]`` (no NaN; NaN when empty) as ``clocks._sorted_median`` takes
    it: the mean (``mean2``) of the two middle values. Reorders ``a``; ``tmp`` holds
    :data:`_SMALL` values."""
    if m == 0:
        return np.nan
    lo = (m - 1) // 2
    hi = m // 2
    if m <= _SMALL:
        _small_sort(a, m, tmp)
        return float(_mean2(a[lo], a[hi]))
    _kth(a, 0, m - 1, lo)
    v = a[lo]
    if hi == lo:
        return float(_mean2(v, v))
    w = a[hi]
    for i in range(hi, m):  # the next rank: the smallest of the values after it
        w = a[i] if a[i] < w else w
    return float(_mean2(v, w))


def _round_even_py(v: float) -> float:
    """``np.round(v)`` of a float: to the nearest integer, halves to the even one."""
    f = math.floor(v)
    d = v - f
    if d > 0.5:
        return f + 1.0
    if d < 0.5:
        return f
    return f + 1.0 if f % 2 != 0 else f


def _sen_ranks_py(nt: int, ny: int, z: float) -> tuple[int, int, int, int]:
    """``clocks._sen_ranks``: the two middle ranks and Sen's lower and upper ranks."""
    sigma = np.sqrt(ny * (ny - 1) * (2 * ny + 5) / 18.0)
    ru = min(int(_round_even((nt - z * sigma) / 2.0)), nt - 1)
    rl = max(int(_round_even((nt + z * sigma) / 2.0)) - 1, 0)
    return (nt - 1) // 2, nt // 2, rl, ru


#: The helpers by the names the loops call them: the Python functions here (the loops run as
#: plain Python too), their compiled forms once :func:`_compiled` has run.
_mean2: Any = _mean2_py
_mixed_zeros: Any = _mixed_zeros_py
_small_sort: Any = _small_sort_py
_kth: Any = _kth_py
_median: Any = _median_py
_round_even: Any = _round_even_py
_sen_ranks: Any = _sen_ranks_py

_HELPERS = {"_mean2": _mean2_py, "_mixed_zeros": _mixed_zeros_py, "_small_sort": _small_sort_py,
            "_kth": _kth_py, "_median": _median_py,
            "_round_even": _round_even_py, "_sen_ranks": _sen_ranks_py}


# ------------------------------------------------------------------------------------------
# the loops, one per stage: each writes one value per run
# ------------------------------------------------------------------------------------------

def _median3_loop(V: np.ndarray, n: np.ndarray, out: np.ndarray) -> bool:
    """``clocks.trailing_median(P, 3)``: each point the median of itself and the two before
    (the first point itself, the second the mean of two), NaN beyond a run's points. False
    (``out`` unfinished) at a NaN among a run's points or both signs of zero."""
    R, K = V.shape
    for r in range(R):
        m = n[r]
        if _mixed_zeros(V[r], m):
            return False
        for k in range(m):
            a = V[r, k]
            if a != a:
                return False
            if k == 0:
                out[r, k] = a
            elif k == 1:
                out[r, k] = _mean2(V[r, 0], a)
            else:
                b = V[r, k - 1]
                c = V[r, k - 2]
                lo = a if a < b else b
                hi = b if a < b else a
                hi = hi if hi < c else c
                out[r, k] = hi if lo < hi else lo
        for k in range(m, K):
            out[r, k] = np.nan
    return True


def _count_loop(S: np.ndarray, t: np.ndarray, op: int, out: np.ndarray) -> None:
    """Per row, how many of its values compare to ``t[r]`` by ``op`` (NaN never does)."""
    R, K = S.shape
    for r in range(R):
        tr = t[r]
        c = 0
        if op == 0:
            for k in range(K):
                c += S[r, k] >= tr
        elif op == 1:
            for k in range(K):
                c += S[r, k] < tr
        else:
            for k in range(K):
                c += S[r, k] <= tr
        out[r] = c


def _window_median_loop(V: np.ndarray, lo: np.ndarray, hi: np.ndarray, f: np.ndarray,
                        around: bool, out: np.ndarray) -> bool:
    """``clocks._nanmedian(clocks._window(V, lo, hi))``: per row the median of its columns
    ``lo ≤ k < hi`` that are not NaN (NaN when none); with ``around``, of their absolute
    deviations from ``f[r]`` (``_nanmedian(np.abs(_window(V, lo, hi) − f[:, None]))``, the
    noise around the floor: absolute values hold no sign of zero). False at both signs of
    zero or a window ``_window`` would read differently (starting before column 0, ending
    beyond the last)."""
    R, K = V.shape
    buf = np.empty(K)
    tmp = np.empty(_SMALL)
    for r in range(R):
        a = lo[r]
        b = hi[r]
        if a < 0 or b > K:
            return False
        m = 0
        fr = f[r]
        for k in range(a, b):
            x = abs(V[r, k] - fr) if around else V[r, k]
            if x == x:
                buf[m] = x
                m += 1
        if _mixed_zeros(buf, m):
            return False
        out[r] = _median(buf, m, tmp)
    return True


def _drift_loop(S: np.ndarray, V: np.ndarray, lo: np.ndarray, hi: np.ndarray, nbins: int,
                z: float, out: np.ndarray) -> bool:
    """The floor's drift of ``clocks._stability``: per row, its window ``lo ≤ k < hi`` cut
    into ``nbins`` bins of equal count when it holds more points (each bin its steps' and
    values' medians, ``clocks._bin_medians``), then the Theil–Sen slope of those points and
    Sen's bounds (``clocks.theil_sen``): ``out[r] = (slope, low, high)``. False at both signs
    of zero among a bin's values or the slopes, or a window out of the matrix."""
    R, K = S.shape
    bx = np.empty(max(min(K, nbins), 1))
    by = np.empty(max(min(K, nbins), 1))
    cell = np.empty(K)
    tmp = np.empty(_SMALL)
    q_max = max(min(K, nbins), 1)
    slopes = np.empty(max(q_max * (q_max - 1) // 2, 1))
    ranks = np.empty(4, dtype=np.intp)
    order = np.empty(4, dtype=np.intp)
    vals = np.empty(4)
    last_nt = -1
    last_ny = -1
    for r in range(R):
        a = lo[r]
        b = hi[r]
        if a < 0 or b > K:
            return False
        m = b - a
        if m > nbins:
            q = nbins
            for g in range(nbins):
                s0 = (g * m + nbins - 1) // nbins
                s1 = ((g + 1) * m + nbins - 1) // nbins
                c = s1 - s0
                bx[g] = _mean2(S[r, a + s0 + (c - 1) // 2], S[r, a + s0 + c // 2])
                for i in range(c):
                    cell[i] = V[r, a + s0 + i]
                if _mixed_zeros(cell, c):
                    return False
                by[g] = _median(cell, c, tmp)
        else:
            q = m
            for i in range(m):
                bx[i] = S[r, a + i]
                by[i] = V[r, a + i]
        ny = 0
        for i in range(q):
            ny += by[i] == by[i]
        nt = 0
        for lag in range(1, q):
            for i in range(q - lag):
                dx = bx[i + lag] - bx[i]
                if dx > 0:
                    s = (by[i + lag] - by[i]) / dx
                    if s == s:
                        slopes[nt] = s
                        nt += 1
        if nt == 0:
            out[r, 0] = np.nan
            out[r, 1] = np.nan
            out[r, 2] = np.nan
            continue
        if _mixed_zeros(slopes, nt):
            return False
        if nt != last_nt or ny != last_ny:  # a block's runs usually share their counts
            ranks[0], ranks[1], ranks[2], ranks[3] = _sen_ranks(nt, ny, z)
            last_nt = nt
            last_ny = ny
            # the four ranks in ascending order
            for i in range(4):
                order[i] = i
            for i in range(1, 4):
                o = order[i]
                h = i - 1
                while h >= 0 and ranks[order[h]] > ranks[o]:
                    order[h + 1] = order[h]
                    h -= 1
                order[h + 1] = o
        k0 = ranks[order[0]]
        k1 = ranks[order[1]]
        k2 = ranks[order[2]]
        k3 = ranks[order[3]]
        if nt <= _SMALL:
            _small_sort(slopes, nt, tmp)
            v0 = slopes[k0]
            v1 = slopes[k1]
            v2 = slopes[k2]
            v3 = slopes[k3]
        else:
            # the outer ranks first, then the inner ones among the values between them (Sen's
            # bounds hold a sixth of the slopes between them): each selection reads fewer.
            # Each value is read as soon as it is in place
            _kth(slopes, 0, nt - 1, k0)
            v0 = slopes[k0]
            _kth(slopes, k0, nt - 1, k3)
            v3 = slopes[k3]
            _kth(slopes, k0, k3, k1)
            v1 = slopes[k1]
            if k2 == k1:
                v2 = v1
            elif k2 == k1 + 1:  # the next rank: the smallest of those above k1, up to k3
                v2 = slopes[k2]
                for i in range(k2 + 1, k3 + 1):
                    v2 = slopes[i] if slopes[i] < v2 else v2
            else:
                _kth(slopes, k1, k3, k2)
                v2 = slopes[k2]
        vals[order[0]] = v0
        vals[order[1]] = v1
        vals[order[2]] = v2
        vals[order[3]] = v3
        out[r, 0] = _mean2(vals[0], vals[1])
        out[r, 1] = vals[2]
        out[r, 2] = vals[3]
    return True


def _prefix_fmax_loop(sm: np.ndarray, j: np.ndarray, out: np.ndarray) -> bool:
    """``np.fmax.accumulate(sm, axis=1)[r, j[r]]``: the largest value of each row up to column
    ``j[r]``, NaN ignored (NaN when all are; NaN for ``j < 0``). False at both signs of zero
    in a prefix (which one ``fmax`` keeps is its choice)."""
    R, K = sm.shape
    for r in range(R):
        jr = j[r]
        if jr < 0:
            out[r] = np.nan
            continue
        if jr >= K:
            return False
        top = -np.inf
        c = 0
        for k in range(jr + 1):  # NaN compares False: ignored, and counted out
            x = sm[r, k]
            top = x if x > top else top
            c += x == x
        if c == 0:
            top = np.nan
        elif top == 0 and _mixed_zeros(sm[r], jr + 1):
            return False  # only a tie at the top can differ, and only a zero's sign
        out[r] = top
    return True


def _peak_loop(sm: np.ndarray, delta: np.ndarray, top: np.ndarray, at: np.ndarray,
               fell: np.ndarray, low: np.ndarray) -> None:
    """``clocks._peak``'s passes: per row the largest value (NaN ignored; NaN when none), the
    first column holding it (0 when none), whether a value at or after it lies below
    ``top − delta[r]``, and the smallest value (NaN ignored). A zero's sign at the top or the
    bottom is never read: each is only compared."""
    R, K = sm.shape
    for r in range(R):
        t = -np.inf
        u = np.inf
        c = 0
        for k in range(K):  # NaN compares False: ignored, and counted out
            x = sm[r, k]
            t = x if x > t else t
            u = x if x < u else u
            c += x == x
        if c == 0:
            t = np.nan
            u = np.nan
        a = 0
        for k in range(K):
            if sm[r, k] == t:
                a = k
                break
        thr = t - delta[r]
        f = False
        for k in range(a, K):
            if sm[r, k] < thr:
                f = True
                break
        top[r] = t
        at[r] = a
        fell[r] = f
        low[r] = u


def _last_outside_loop(sm: np.ndarray, lo: np.ndarray, hi: np.ndarray, out: np.ndarray
                       ) -> None:
    """Per row the last column with ``sm < lo[r]`` or ``sm > hi[r]`` (−1 when none)."""
    R, K = sm.shape
    for r in range(R):
        k = K - 1
        while k >= 0 and not (sm[r, k] < lo[r] or sm[r, k] > hi[r]):
            k -= 1
        out[r] = k


def _first_ge_loop(V: np.ndarray, t: np.ndarray, out: np.ndarray) -> None:
    """Per row the first column with ``V >= t[r]`` (−1 when none)."""
    R, K = V.shape
    for r in range(R):
        k = 0
        while k < K and not V[r, k] >= t[r]:
            k += 1
        out[r] = k if k < K else -1


def _sustain_end_loop(V: np.ndarray, level: np.ndarray, after: np.ndarray, w: int,
                      out: np.ndarray) -> None:
    """Per row the first column ending ``w`` consecutive columns after ``after[r]`` whose
    values are below ``level[r]`` (−1 when none): ``clocks._accuracy_block``'s fall."""
    R, K = V.shape
    for r in range(R):
        run = 0
        e = -1
        for k in range(K):
            if k > after[r] and V[r, k] < level[r]:
                run += 1
                if run >= w:
                    e = k
                    break
            else:
                run = 0
        out[r] = e


_LOOPS = {"median3": _median3_loop, "count": _count_loop,
          "window_median": _window_median_loop,
          "drift": _drift_loop, "prefix_fmax": _prefix_fmax_loop, "peak": _peak_loop,
          "last_outside": _last_outside_loop, "first_ge": _first_ge_loop,
          "sustain_end": _sustain_end_loop}


_COMPILE_LOCK = threading.Lock()


def _compiled() -> SimpleNamespace:
    """:func:`_compile_once` under a lock: the clocks' blocks call their loops from the
    thread pool at once, and the first calls of a process must bind the helpers once."""
    with _COMPILE_LOCK:
        return _compile_once()


@functools.cache
def _compile_once() -> SimpleNamespace:
    """The loops compiled by numba (:func:`grokaudit.kernels.with_numba`, cached as the
    validation's loops are). A loop calls its helpers by their names among this module's
    globals, bound here to their compiled forms before any loop is compiled (on its first
    call)."""
    return with_numba(_jitted)


def _jitted(jit: Any) -> SimpleNamespace:
    for name, fn in _HELPERS.items():
        globals()[name] = jit(fn)
    return SimpleNamespace(**{name: jit(fn) for name, fn in _LOOPS.items()})


# ------------------------------------------------------------------------------------------
# the twins: each returns its numpy expression's answer, or None where numpy must run
# ------------------------------------------------------------------------------------------

def _f64(*arrays: np.ndarray) -> bool:
    return all(a.dtype == np.float64 and a.ndim == 2 for a in arrays)


def _runs(a: np.ndarray | float, like: np.ndarray, dtype: Any) -> np.ndarray:
    """A per-run argument as a contiguous array of ``dtype`` (a scalar broadcast)."""
    return np.ascontiguousarray(np.broadcast_to(np.asarray(a, dtype=dtype), like.shape[:1]))


def median3(V: np.ndarray, n: np.ndarray) -> np.ndarray | None:
    """``clocks.trailing_median`` of width 3 (see :func:`_median3_loop`)."""
    if not _f64(V):
        return None
    out = np.empty(V.shape)
    ok = _compiled().median3(V, _runs(n, V, np.intp), out)
    return out if ok else None


def count(S: np.ndarray, t: np.ndarray | float, op: int) -> np.ndarray | None:
    """``row_count(S >= t[:, None])`` (``op`` :data:`GE`; :data:`LT` ``<``, :data:`LE`
    ``<=``) as ``np.intp``."""
    if not _f64(S):
        return None
    out = np.empty(S.shape[0], dtype=np.intp)
    _compiled().count(S, _runs(t, S, np.float64), op, out)
    return out


def window_median(V: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray | None:
    """``clocks._nanmedian(clocks._window(V, lo, hi))`` (see :func:`_window_median_loop`)."""
    return _window_median(V, lo, hi, 0.0, False)


def window_mad(V: np.ndarray, lo: np.ndarray, hi: np.ndarray, f: np.ndarray
               ) -> np.ndarray | None:
    """``_nanmedian(np.abs(_window(V, lo, hi) − f[:, None]))``."""
    return _window_median(V, lo, hi, f, True)


def _window_median(V: np.ndarray, lo: np.ndarray, hi: np.ndarray, f: np.ndarray | float,
                   around: bool) -> np.ndarray | None:
    if not _f64(V):
        return None
    out = np.empty(V.shape[0])
    ok = _compiled().window_median(V, _runs(lo, V, np.intp), _runs(hi, V, np.intp),
                                   _runs(f, V, np.float64), around, out)
    return out if ok else None


def drift(S: np.ndarray, V: np.ndarray, lo: np.ndarray, hi: np.ndarray, nbins: int,
          z: float) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The Theil–Sen slope and Sen's bounds of each row's window, binned as
    ``clocks._stability`` bins it (see :func:`_drift_loop`)."""
    if not _f64(S, V) or S.shape != V.shape:
        return None
    out = np.empty((S.shape[0], 3))
    ok = _compiled().drift(S, V, _runs(lo, S, np.intp), _runs(hi, S, np.intp), int(nbins),
                           float(z), out)
    return (out[:, 0].copy(), out[:, 1].copy(), out[:, 2].copy()) if ok else None


def prefix_fmax(sm: np.ndarray, j: np.ndarray) -> np.ndarray | None:
    """``np.fmax.accumulate(sm, axis=1)[r, j[r]]`` (NaN for ``j < 0``)."""
    if not _f64(sm):
        return None
    out = np.empty(sm.shape[0])
    ok = _compiled().prefix_fmax(sm, _runs(j, sm, np.intp), out)
    return out if ok else None


def peak(sm: np.ndarray, delta: np.ndarray
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """``(top, at, fell, low)`` of :func:`_peak_loop`."""
    if not _f64(sm):
        return None
    R = sm.shape[0]
    top, low = np.empty(R), np.empty(R)
    at = np.empty(R, dtype=np.intp)
    fell = np.empty(R, dtype=bool)
    _compiled().peak(sm, _runs(delta, sm, np.float64), top, at, fell, low)
    return top, at, fell, low


def last_outside(sm: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray | None:
    """``_last_true((sm < lo[:, None]) | (sm > hi[:, None]))``."""
    if not _f64(sm):
        return None
    out = np.empty(sm.shape[0], dtype=np.intp)
    _compiled().last_outside(sm, _runs(lo, sm, np.float64), _runs(hi, sm, np.float64), out)
    return out


def first_ge(V: np.ndarray, t: np.ndarray | float) -> np.ndarray | None:
    """``_first_true(V >= t)`` for a threshold per run or one for all."""
    if not _f64(V):
        return None
    out = np.empty(V.shape[0], dtype=np.intp)
    _compiled().first_ge(V, _runs(t, V, np.float64), out)
    return out


def sustain_end(V: np.ndarray, level: np.ndarray | float, after: np.ndarray, w: int
                ) -> np.ndarray | None:
    """The first column closing ``w`` consecutive columns after ``after`` below ``level``
    (−1 when none), per row."""
    if not _f64(V):
        return None
    out = np.empty(V.shape[0], dtype=np.intp)
    _compiled().sustain_end(V, _runs(level, V, np.float64), _runs(after, V, np.intp), int(w),
                            out)
    return out


__all__ = ["GE", "LE", "LT", "count", "drift", "first_ge", "last_outside", "median3", "peak",
           "prefix_fmax", "sustain_end", "window_mad", "window_median"]
