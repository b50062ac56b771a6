"""The clocks' compiled passes (issue 44, item 2: "numba kernels for ... the per-run clocks"):
each loop of ``grokaudit.clockloops`` returns exactly what the numpy expression of
``grokaudit.clocks`` it replaces returns — the same float64 bits, the same index — or None where
it cannot promise that (both signs of zero where a sort or a minimum would pick one, a NaN
among a run's points, a window outside the matrix), and then the clocks run numpy. The
matrices here are built for the edge cases: ragged runs (NaN beyond their points), ties,
±inf, values whose sum overflows, windows empty or reversed, windows above the selection's
size. Whole clocks on random logs and every configuration that changes a stage are compared
array by array."""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("numba", reason="the compiled clocks are the extra `fast` (numba)")

from grokaudit import clockloops as cl  # noqa: E402
from grokaudit import clocks as C  # noqa: E402
from grokaudit.config import make_config  # noqa: E402
from grokaudit.kernels import NUMBA  # noqa: E402
from grokaudit.refusals import validated_log  # noqa: E402
from identity import random_log  # noqa: E402

BIG = 1.7e308  # two of them sum beyond the float range: mean2's other branch


def _same(a: np.ndarray, b: np.ndarray) -> None:
    """The same values bit for bit (NaN as NaN, -0.0 apart from 0.0), as ``np.intp`` or
    float64 alike."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        assert a.dtype == b.dtype == np.float64
    else:
        assert a.dtype.kind == b.dtype.kind and np.array_equal(a, b)
    assert a.tobytes() == b.tobytes(), (a, b)


def _packed(rng: np.random.Generator, R: int, K: int, kind: str) -> tuple[np.ndarray,
                                                                         np.ndarray,
                                                                         np.ndarray]:
    """Values, steps and counts as ``clocks.pack`` leaves them: each run's points from column
    0, NaN beyond. ``kind`` picks the values: floats, few distinct (ties), with ±inf, near the
    float range's end."""
    n = rng.integers(0, K + 1, R)
    if R:
        n[0] = K  # one full run
    if kind == "ties":
        V = rng.integers(0, 4, (R, K)).astype(float) / 2
    elif kind == "inf":
        V = rng.normal(size=(R, K))
        V[rng.random((R, K)) < 0.1] = np.inf
        V[rng.random((R, K)) < 0.1] = -np.inf
    elif kind == "big":
        V = rng.choice([BIG, -BIG, 1.0, BIG / 3], size=(R, K))
    else:
        V = rng.normal(size=(R, K))
    S = np.cumsum(rng.integers(1, 9, (R, K)), axis=1).astype(float)
    pad = np.arange(K)[None, :] >= n[:, None]
    V[pad] = np.nan
    S[pad] = np.nan
    return V, S, n.astype(np.int64)


KINDS = ["floats", "ties", "inf", "big"]
SHAPES = [(1, 0), (1, 1), (3, 2), (7, 5), (12, 40), (5, 130)]


def _cases() -> list[tuple[int, int, str, int]]:
    return [(R, K, kind, seed) for seed, (R, K) in enumerate(SHAPES) for kind in KINDS]


@pytest.mark.parametrize(("R", "K", "kind", "seed"), _cases())
def test_trailing_median_of_three(R: int, K: int, kind: str, seed: int) -> None:
    V, S, n = _packed(np.random.default_rng(seed), R, K, kind)
    P = C.Packed(V, S, n)
    got = cl.median3(V, n)
    assert got is not None
    _same(got, C.trailing_median(P, 3))
    _same(C.trailing_median(P, 3, NUMBA), C.trailing_median(P, 3))


def test_trailing_median_leaves_both_zeros_and_nan_to_numpy() -> None:
    V = np.array([[0.0, -0.0, 1.0, 2.0]])
    n = np.array([4])
    assert cl.median3(V, n) is None  # which zero minimum() keeps is numpy's choice
    _same(C.trailing_median(C.Packed(V, V * 0 + 1, n), 3, NUMBA),
          C.trailing_median(C.Packed(V, V * 0 + 1, n), 3))
    assert cl.median3(np.array([[1.0, np.nan, 2.0]]), np.array([3])) is None
    assert cl.median3(np.array([[-0.0, -0.0, 1.0]]), np.array([3])) is not None  # one sign


@pytest.mark.parametrize(("R", "K", "kind", "seed"), _cases())
def test_counts(R: int, K: int, kind: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    _, S, _ = _packed(rng, R, K, kind)
    t = rng.choice([np.nan, -np.inf, 0.0, 5.0, 17.0, 1e9], size=R)
    for op, mask in ((cl.GE, S >= t[:, None]), (cl.LT, S < t[:, None]),
                     (cl.LE, S <= t[:, None])):
        got = cl.count(S, t, op)
        assert got is not None
        _same(got, C.row_count(mask))
        _same(C._count(S, t, op, NUMBA), C._count(S, t, op))


def _windows(rng: np.random.Generator, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Windows ``[lo, hi)`` inside each run: some empty, some reversed, most of them real."""
    lo = np.array([rng.integers(0, m + 1) for m in n], dtype=np.int64)
    hi = np.array([rng.integers(a, m + 1) if rng.random() < 0.85 else max(a - 1, 0)
                   for a, m in zip(lo, n)], dtype=np.int64)
    return lo, hi


@pytest.mark.parametrize(("R", "K", "kind", "seed"), _cases())
def test_window_median_and_mad(R: int, K: int, kind: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    V, _, n = _packed(rng, R, K, kind)
    for lo, hi in (_windows(rng, n), (np.zeros_like(n), n)):
        med = cl.window_median(V, lo, hi)
        assert med is not None
        _same(med, C._nanmedian(C._window(V, lo, hi)))
        f = np.where(rng.random(R) < 0.2, np.nan, med)
        mad = cl.window_mad(V, lo, hi, f)
        assert mad is not None
        with np.errstate(invalid="ignore", over="ignore"):
            _same(mad, C._nanmedian(np.abs(C._window(V, lo, hi) - f[:, None])))


def test_window_median_selects_above_the_sort_size() -> None:
    """Windows of 33–300 values take the selection (not the insertion sort): every rank
    comes out as numpy's sort puts it, ties and an even count included."""
    rng = np.random.default_rng(3)
    for m in (33, 34, 64, 65, 299, 300):
        for vals in (rng.normal(size=(6, m)), rng.integers(0, 3, (6, m)).astype(float),
                     np.sort(rng.normal(size=(6, m)), axis=1),
                     -np.sort(rng.normal(size=(6, m)), axis=1)):
            lo, hi = np.zeros(6, dtype=np.int64), np.full(6, m)
            got = cl.window_median(vals, lo, hi)
            assert got is not None
            _same(got, np.median(vals, axis=1))


@pytest.mark.parametrize("budget", [0, 40, -1])
def test_selection_places_every_rank(budget: int) -> None:
    """The selection puts the value of rank k at k, the smaller before and the larger after,
    on inputs that defeat pivots (sorted, reversed, organ pipe, all equal, two values); with
    its budget spent at once (0) or early (40) it sorts what is left, with the same answer.
    Compiled and as plain Python."""
    cl._compiled()
    rng = np.random.default_rng(4)
    n = 301
    inputs = [np.arange(n, dtype=float), np.arange(n, 0, -1, dtype=float),
              np.r_[np.arange(150), np.arange(151, 0, -1)].astype(float), np.ones(n),
              rng.integers(0, 2, n).astype(float), rng.standard_cauchy(n)]
    for vals in inputs:
        want = np.sort(vals)
        for k in (0, 1, 17, 150, 299, 300):
            for kth in (cl._kth, cl._kth_py):
                a = vals.copy()
                kth(a, 0, n - 1, k, budget)
                assert a[k] == want[k]
                assert (a[:k] <= a[k]).all() and (a[k + 1:] >= a[k]).all()
                assert np.array_equal(np.sort(a), want)


def test_window_median_leaves_what_it_cannot_promise_to_numpy() -> None:
    V = np.array([[0.0, -0.0, 1.0, 2.0]])
    lo, hi = np.array([0]), np.array([2])
    assert cl.window_median(V, lo, hi) is None  # which zero is the median: the sort's choice
    _same(C._window_median(V, lo, hi, NUMBA), C._window_median(V, lo, hi))
    assert cl.window_median(V, np.array([-1]), hi) is None  # _window would read column 0 twice
    assert cl.window_median(V, lo, np.array([5])) is None  # beyond the matrix
    assert cl.window_median(V.astype(np.float32), lo, hi) is None  # not float64


def _numpy_drift(S: np.ndarray, V: np.ndarray, lo: np.ndarray, hi: np.ndarray, nbins: int,
                 level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What ``clocks._stability`` computes for the drift, on numpy."""
    W2v, W2s = C._window(V, lo, hi), C._window(S, lo, hi)
    points = hi - lo
    if W2v.shape[1] > nbins:
        bx, by = C._bin_medians(W2s, W2v, points, nbins)
    else:
        bx, by = W2s, W2v
    return C.theil_sen(bx, by, level)


@pytest.mark.parametrize("nbins", [3, 4, 7, 64])
@pytest.mark.parametrize("level", [0.5, 0.8, 0.95, 0.999])
@pytest.mark.parametrize("kind", KINDS)
def test_drift(nbins: int, level: float, kind: str) -> None:
    rng = np.random.default_rng(nbins * 100 + int(level * 10))
    z = NormalDist().inv_cdf((1.0 - level) / 2.0)
    for R, K in ((1, 0), (4, 2), (9, 12), (6, 80)):
        V, S, n = _packed(rng, R, K, kind)
        for lo in (np.minimum(n, rng.integers(0, 6, R)), np.zeros_like(n), n):
            got = cl.drift(S, V, lo, n, nbins, z)
            want = _numpy_drift(S, V, lo, n, nbins, level)
            if got is None:  # only where the slopes or a bin hold both signs of zero
                continue
            for a, b in zip(got, want):
                _same(a, b)


def test_drift_selects_among_many_slopes_as_the_sort_does() -> None:
    """64 bins give 2 016 slopes: the four ranks are selected, not sorted; equal slopes (a
    metric on a grid of values) and a steady trend included."""
    rng = np.random.default_rng(11)
    R, K = 5, 700
    S = np.cumsum(rng.integers(1, 4, (R, K)), axis=1).astype(float)
    for V in (rng.normal(size=(R, K)), np.round(rng.random((R, K)), 1),
              np.linspace(1.0, 0.5, K)[None, :] + rng.normal(0, 1e-3, (R, K))):
        lo, hi = np.full(R, 100), np.full(R, K)
        z = NormalDist().inv_cdf(0.025)
        got = cl.drift(S, V, lo, hi, 64, z)
        assert got is not None
        for a, b in zip(got, _numpy_drift(S, V, lo, hi, 64, 0.95)):
            _same(a, b)


def test_drift_leaves_both_signs_of_zero_to_numpy() -> None:
    S = np.array([[1.0, 2.0, 3.0, 4.0]])
    V = np.array([[0.0, -0.0, 0.0, 1.0]])  # slopes +0 and -0
    assert cl.drift(S, V, np.array([0]), np.array([4]), 64, -1.96) is None


def test_sen_ranks_are_the_clocks_ranks() -> None:
    """The compiled ranks (np.round's halves to even, Sen's σ) are ``clocks._sen_ranks``'s for
    every count of points up to 90 and every count of slopes they give, at several levels."""
    cl._compiled()
    compiled = cl._sen_ranks  # bound to the compiled helper by _compiled
    for level in (0.5, 0.9, 0.95, 0.99):
        z = NormalDist().inv_cdf((1.0 - level) / 2.0)
        for ny in range(1, 91):
            for nt in range(1, ny * (ny - 1) // 2 + 1, max(1, ny // 7)):
                want = C._sen_ranks(np.intp(nt), np.intp(ny), z)
                assert tuple(compiled(nt, ny, z)) == tuple(int(x) for x in want), (nt, ny)


@pytest.mark.parametrize(("R", "K", "kind", "seed"), _cases())
def test_peak_prefix_and_exits(R: int, K: int, kind: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    V, S, n = _packed(rng, R, K, kind)
    sm = C.trailing_median(C.Packed(V, S, n), 3)
    delta = rng.choice([0.0, 0.1, 1.0, np.nan], size=R)
    got = cl.peak(sm, delta)
    assert got is not None
    top, at, fell, low = got
    with np.errstate(invalid="ignore"):
        want_top = np.fmax.reduce(sm, axis=1) if K else np.full(R, np.nan)
        want_at = (sm == want_top[:, None]).argmax(axis=1) if K else np.zeros(R, np.intp)
        below = (sm < (want_top - delta)[:, None]) & (np.arange(K)[None, :] >= want_at[:, None])
        want_low = np.fmin.reduce(sm, axis=1) if K else np.full(R, np.nan)
    assert np.array_equal(top, want_top, equal_nan=True)  # a zero's sign is never read
    _same(at, want_at)
    _same(fell, C.row_any(below) if K else np.zeros(R, dtype=bool))
    assert np.array_equal(low, want_low, equal_nan=True)
    j = np.array([rng.integers(-1, m) if m else -1 for m in n])
    pf = cl.prefix_fmax(sm, j)
    if K:
        with np.errstate(invalid="ignore"):
            want = C._take(np.fmax.accumulate(sm, axis=1), j)
        assert pf is not None
        _same(pf, want)
    lo_b, hi_b = want_low + 0.3, want_top - 0.3
    last = cl.last_outside(sm, lo_b, hi_b)
    assert last is not None
    with np.errstate(invalid="ignore"):
        _same(last, C._last_true((sm < lo_b[:, None]) | (sm > hi_b[:, None])))


def test_running_peak_leaves_a_zero_top_of_both_signs_to_numpy() -> None:
    """A prefix whose largest value is zero, held as +0.0 and -0.0: which one ``fmax`` keeps
    is its choice, and the loop hands it back; a nonzero top among zeros of both signs, or a
    zero top of one sign, is answered."""
    sm = np.array([[-0.0, 0.0, -1.0], [0.0, -0.0, 1.0], [-0.0, -0.0, -2.0]])
    assert cl.prefix_fmax(sm[:1], np.array([2])) is None
    got = cl.prefix_fmax(sm[1:], np.array([2, 2]))
    assert got is not None
    _same(got, np.fmax.accumulate(sm[1:], axis=1)[:, 2])  # 1.0, and -0.0 bit for bit


@pytest.mark.parametrize(("R", "K", "kind", "seed"), _cases())
def test_first_passage_and_sustain(R: int, K: int, kind: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    V, S, n = _packed(rng, R, K, kind)
    for t in (0.5, rng.normal(size=(R, 1)), np.inf, -np.inf):
        got = cl.first_ge(V, np.ravel(t))
        assert got is not None
        with np.errstate(invalid="ignore"):
            _same(got, C._first_true(V >= t))
    P = C.Packed(V, S, n)
    first = np.nan_to_num(S[:, 0]) if K else np.zeros(R)
    last = np.nanmax(S, axis=1, initial=0.0) if K else np.zeros(R)
    for w in (1, 2, 3, 5):
        cfg = make_config(sustain=w)
        for level in (0.0, 0.5, rng.normal(size=(R, 1))):
            a = C._accuracy_block(P, None, None, first, last, level, cfg)
            b = C._accuracy_block(P, None, None, first, last, level, cfg, NUMBA)
            for x, y in zip(a[0].arrays() + tuple(a[2:]), b[0].arrays() + tuple(b[2:])):
                _same(x, y)


def _arrays(obj: Any) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        if isinstance(v, C.Event):
            for i, a in enumerate(v.arrays()):
                out[f"{f.name}.{i}"] = a
        elif isinstance(v, np.ndarray):
            out[f.name] = v
    return out


CONFIGS: list[dict[str, Any]] = [
    {}, {"profile": "reference"}, {"rule": "crossing"}, {"floor_window": "index"},
    {"smooth": 1}, {"smooth": 5}, {"max_slope_bins": 3}, {"drift_level": 0.5},
    {"grok_relative": "study", "cell": ["arch"]}, {"censored_time": "last_step"},
]


@pytest.mark.parametrize("options", CONFIGS, ids=lambda o: ",".join(f"{k}={v}" for k, v in
                                                                     o.items()) or "default")
def test_whole_clocks_are_the_same_on_both_kernels(options: dict[str, Any]) -> None:
    rng = np.random.default_rng(5)
    for trial in range(3):
        df: pd.DataFrame = random_log(rng, 3, 3, 120 + 40 * trial)
        if trial == 2:  # ragged runs and gaps in the metric
            df = df.iloc[: len(df) - 77]
            df.loc[df.sample(frac=0.2, random_state=1).index, "emb_erank"] = np.nan
        cfg = make_config(by="rho", **options)
        log = validated_log(df, cfg)
        a0 = C.accuracy_clocks(log, cfg)
        a1 = C.accuracy_clocks(log, cfg, kernel=NUMBA)
        pairs: list[tuple[dict[str, np.ndarray], dict[str, np.ndarray]]] = [
            (_arrays(a0), _arrays(a1))]
        for metric in log.summary.metrics:
            groups = np.zeros(log.n_runs, dtype=np.int64)
            pairs.append((_arrays(C.metric_clocks(log, a0, metric, cfg, groups=groups)),
                          _arrays(C.metric_clocks(log, a1, metric, cfg, groups=groups,
                                                  kernel=NUMBA))))
        for x, y in pairs:
            assert x.keys() == y.keys()
            for k in x:
                _same(x[k], y[k])


def _as_python(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (a loop or a helper of ``clockloops``) as plain Python calling the helpers'
    plain Python forms: a copy of the function over its own globals, the module untouched."""
    scope = dict(vars(cl))
    scope.update({name: types.FunctionType(h.__code__, scope, h.__name__, h.__defaults__)
                  for name, h in cl._HELPERS.items()})
    return types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__)


def test_the_loops_run_uncompiled_as_they_run_compiled() -> None:
    """The loops are plain Python that numba compiles: run as Python, they give the compiled
    answers -- what the loops say is what they mean, not what a compiler made of them."""
    rng = np.random.default_rng(2)
    V, S, n = _packed(rng, 4, 90, "ties")
    lo, hi = np.zeros(4, dtype=np.int64), n
    compiled = [cl.median3(V, n), cl.window_median(V, lo, hi),
                cl.drift(S, V, lo, hi, 3, -1.96), cl.drift(S, V, lo, hi, 64, -1.96)]
    out3 = np.empty(V.shape)
    assert _as_python(cl._median3_loop)(V, n, out3)
    out1 = np.empty(4)
    assert _as_python(cl._window_median_loop)(V, lo, hi, np.zeros(4), False, out1)
    drifts = []
    for nbins in (3, 64):
        outd = np.empty((4, 3))
        assert _as_python(cl._drift_loop)(S, V, lo, hi, nbins, -1.96, outd)
        drifts.append(outd)
    assert all(c is not None for c in compiled)
    _same(out3, compiled[0])
    _same(out1, compiled[1])
    for outd, got in zip(drifts, compiled[2:]):
        for i in range(3):
            _same(outd[:, i], got[i])
