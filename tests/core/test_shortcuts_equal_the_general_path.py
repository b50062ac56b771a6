"""Each shortcut the default path took for speed (issue 44, round 3) gives what the general
computation it skips gives, on inputs built to reach both: a window that is the same columns
in every row, steps' bins read as sorted, the peak's index, first and last True per row, the
reasons' distinct keys, the duplicate fingerprint's integer step sums, the validation's NaN
knowledge, a float32 column read without a copy, integer steps whose range and sign are
read from the runs' ends, True counted per row as bytes, and integer steps widened block by
block."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from grokaudit.cells import _distinct
from grokaudit.clocks import (
    Packed,
    _bin_medians,
    _first_true,
    _last_true,
    _peak,
    _sorted_median,
    _Window,
    _window,
    pack,
    row_any,
    row_count,
)
from grokaudit.errors import ErrorCode, LogFormatError
from grokaudit.identity import duplicate_runs, run_fingerprints
from grokaudit.kernels import NUMBA, NUMPY, numba_importable
from grokaudit.schema import STEP_MAX, _float_array, build_log_table


def _gathered(M: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The window by its definition: row r's columns lo[r] <= k < hi[r], NaN after."""
    width = int(max(1, (hi - lo).max(initial=0)))
    out = np.full((M.shape[0], width), np.nan)
    for r in range(M.shape[0]):
        seg = M[r, lo[r]:hi[r]]
        out[r, :seg.size] = seg
    return out


def test_a_window_of_the_same_columns_in_every_row_is_a_read_only_view_of_them() -> None:
    rng = np.random.default_rng(0)
    M = rng.standard_normal((7, 40))
    lo, hi = np.full(7, 12), np.full(7, 31)
    got = _window(M, lo, hi)
    assert np.shares_memory(got, M)  # no gather
    assert not got.flags.writeable  # no caller can write through it into the packed matrix
    assert np.array_equal(got, _gathered(M, lo, hi))


def test_windows_that_differ_between_rows_are_gathered_and_padded_as_before() -> None:
    rng = np.random.default_rng(1)
    for _ in range(50):
        R, K = int(rng.integers(1, 9)), int(rng.integers(1, 30))
        M = rng.standard_normal((R, K))
        lo = rng.integers(0, K, R)
        hi = np.minimum(K, lo + rng.integers(0, K, R))
        got = _window(M, lo, hi)
        assert np.array_equal(got, _gathered(M, lo, hi), equal_nan=True)
        if (lo != lo[0]).any() or (hi != hi[0]).any():
            assert not np.shares_memory(got, M)


def test_the_steps_bin_medians_are_those_of_sorting_each_bin() -> None:
    rng = np.random.default_rng(2)
    for _ in range(40):
        R, n, nbins = int(rng.integers(1, 6)), int(rng.integers(10, 120)), int(rng.integers(3, 9))
        X = np.sort(rng.choice(10**6, size=(R, n)), axis=1).astype(float)  # steps ascend
        Y = np.round(rng.standard_normal((R, n)), 1)
        bx, by = _bin_medians(X, Y, np.full(R, n), nbins)
        bins = (np.arange(n) * nbins) // n
        for b in range(nbins):
            cols = bins == b
            assert np.array_equal(bx[:, b], np.median(X[:, cols], axis=1))
            assert np.array_equal(by[:, b], _sorted_median(np.sort(Y[:, cols], axis=1)))


def test_the_peak_is_the_first_point_at_the_largest_value_as_an_argmax_reads_it() -> None:
    rng = np.random.default_rng(3)
    for _ in range(200):
        R, K = int(rng.integers(1, 8)), int(rng.integers(1, 25))
        sm = rng.choice([-np.inf, -1.0, 0.0, 0.5, 2.0, np.inf], size=(R, K))
        counts = rng.integers(0, K + 1, R)
        sm[np.arange(K)[None, :] >= counts[:, None]] = np.nan  # NaN only after a run's points
        w = _Window(np.zeros(R, dtype=np.int64), np.ones(R, dtype=bool), np.zeros(R),
                    sm, sm, np.zeros(R), np.ones(R), np.zeros(R, dtype=np.int64))
        P = Packed(np.nan_to_num(sm, nan=0.0), np.zeros((R, K)), counts)
        got = _peak(P, sm, w).at
        want = np.where(np.isnan(sm), -np.inf, sm).argmax(axis=1)
        assert np.array_equal(got, want)


def test_the_reason_keys_distinct_values_and_inverse_are_np_uniques() -> None:
    rng = np.random.default_rng(4)
    for size in (0, 1, 17, 5000):
        key = rng.integers(0, 50, size).astype(np.int64) << int(rng.integers(0, 30))
        uniq, inv = _distinct(key)
        u, i = np.unique(key, return_inverse=True)
        assert np.array_equal(uniq, u) and np.array_equal(inv, i.ravel())
        assert inv.dtype == np.int64


def _log(n_runs: int = 4, T: int = 12, nan_in: str | None = None) -> pd.DataFrame:
    rows = []
    for r in range(n_runs):
        for t in range(T):
            rows.append({"run": f"r{r}", "step": 10 * t, "test_acc": min(1.0, t / 6),
                         "train_acc": min(1.0, t / 3), "emb_erank": 30.0 - t + r})
    df = pd.DataFrame(rows)
    if nan_in is not None:
        df.loc[5, nan_in] = np.nan
    return df


@pytest.mark.parametrize("nan_in", [None, "test_acc", "train_acc", "emb_erank"])
def test_the_validation_says_which_columns_hold_no_nan_and_packing_reads_the_same(
        nan_in: str | None) -> None:
    log = build_log_table(_log(nan_in=nan_in), metrics=["emb_erank"])
    names = {"test_acc", "train_acc", "emb_erank"}
    assert set(log.nan_free) == names - {nan_in}
    for name in names:
        values = log.test_acc if name == "test_acc" else log.train_acc \
            if name == "train_acc" else log.series[name]
        assert log.holds_no_nan(name, values) == (name != nan_in)
        assert not log.holds_no_nan(name, values.copy())  # another array: no knowledge
        a, b = pack(values, log, name=name), pack(values, log)
        assert np.array_equal(a.raw_values, b.raw_values, equal_nan=True)
        assert np.array_equal(a.counts, b.counts)


def test_a_float32_column_of_one_chunk_is_read_without_a_copy_and_read_only() -> None:
    rng = np.random.default_rng(5)
    v = rng.standard_normal(1000).astype(np.float32)
    one = pa.chunked_array([pa.array(v)])
    got = _float_array(one)
    assert got.dtype == np.float32 and np.array_equal(got, v)
    assert not got.flags.writeable
    with_null = pa.chunked_array([pa.array([1.5, None, 2.5], type=pa.float32())])
    assert np.array_equal(_float_array(with_null), np.array([1.5, np.nan, 2.5], np.float32),
                          equal_nan=True)
    two = pa.chunked_array([pa.array(v[:300]), pa.array(v[300:])])
    assert np.array_equal(_float_array(two), v)


def _steps_log(steps: dict[str, list[int]], dtype: pa.DataType) -> pa.Table:
    runs, step = [], []
    for r, ss in steps.items():
        runs += [r] * len(ss)
        step += ss
    n = len(step)
    return pa.table({"run": pa.array(runs), "step": pa.array(step, type=dtype),
                     "test_acc": pa.array(np.linspace(0, 1, n))})


_KERNELS = [NUMPY] + ([NUMBA] if numba_importable() else [])


@pytest.mark.parametrize("kernel", _KERNELS, ids=lambda k: k.name)
@pytest.mark.parametrize("order", ["sorted", "unsorted"])
def test_negative_steps_are_refused_naming_the_first_run_that_has_one(kernel, order) -> None:
    steps = {"a": [0, 10, 20, 30], "b": [0, 10, 20, 30], "c": [-5, 10, 20, 30],
             "d": [-7, 0, 10, 20]}
    if order == "unsorted":
        steps["c"] = [10, -5, 30, 20]
    with pytest.raises(LogFormatError) as exc:
        build_log_table(_steps_log(steps, pa.int64()), kernel=kernel)
    assert exc.value.code == ErrorCode.NEGATIVE_STEP and exc.value.column == "step"
    assert "'c'" in str(exc.value)  # the first run with a negative step, in input order


@pytest.mark.parametrize("kernel", _KERNELS, ids=lambda k: k.name)
@pytest.mark.parametrize("order", ["sorted", "unsorted"])
@pytest.mark.parametrize("where", ["first", "last", "middle"])
def test_steps_beyond_the_largest_are_refused_wherever_they_sit(kernel, order, where) -> None:
    big = STEP_MAX + 2
    ss = [0, 10, 20, 30]
    ss[{"first": 0, "last": 3, "middle": 1}[where]] = big
    if order == "unsorted":
        ss = ss[::-1]
    steps = {"a": [0, 10, 20, 30], "b": ss}
    with pytest.raises(LogFormatError) as exc:
        build_log_table(_steps_log(steps, pa.int64()), kernel=kernel)
    assert exc.value.code == ErrorCode.STEP_OUT_OF_RANGE and exc.value.column == "step"


def test_a_log_refused_for_its_steps_says_the_same_on_both_kernels() -> None:
    if not numba_importable():
        pytest.skip("needs the fast extra (numba) to compare the kernels")
    cases = [{"a": [0, 1, 2, 3], "b": [3, -1, 2, 9]}, {"a": [0, STEP_MAX + 1, 2, 5]},
             {"a": [-(2**62), 0, 1, 2]}, {"a": [5, 4, 3, 2], "b": [-1, 0, 1, 2]}]
    for steps in cases:
        said = []
        for kernel in (NUMPY, NUMBA):
            with pytest.raises(LogFormatError) as exc:
                build_log_table(_steps_log(steps, pa.int64()), kernel=kernel)
            said.append((exc.value.code, str(exc.value)))
        assert said[0] == said[1]


def test_steps_in_range_keep_their_values_and_runs() -> None:
    steps = {"b": [0, 10, 20, STEP_MAX], "a": [5, 6, 7, 8]}
    for dtype in (pa.int64(), pa.uint32(), pa.int16()):
        if dtype != pa.int64():
            steps = {"b": [0, 10, 20, 30], "a": [5, 6, 7, 8]}
        log = build_log_table(_steps_log(steps, dtype))
        assert list(log.run_ids) == ["b", "a"]
        assert log.step.tolist() == steps["b"] + steps["a"]


def test_first_and_last_true_in_one_pass_are_the_any_and_argmax_answer() -> None:
    rng = np.random.default_rng(6)
    for _ in range(500):
        R, K = int(rng.integers(0, 7)), int(rng.integers(1, 12))
        m = rng.random((R, K)) < rng.random()
        has = m.any(axis=1)
        assert np.array_equal(_first_true(m), np.where(has, m.argmax(axis=1), -1))
        assert np.array_equal(_last_true(m), np.where(has, K - 1 - m[:, ::-1].argmax(axis=1),
                                                      -1))
    assert _first_true(np.zeros((3, 0), dtype=bool)).tolist() == [-1, -1, -1]


def test_runs_that_differ_only_in_their_steps_are_not_duplicates() -> None:
    offsets = np.array([0, 4, 8, 12])
    step = np.array([0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 2**62], dtype=np.int64)
    acc = np.tile(np.array([0.1, 0.5, 0.9, 1.0]), 3)
    ids = np.array(["a", "b", "c"], dtype=object)
    assert duplicate_runs(ids, offsets, step, [acc]) == [("a", "b")]
    h = run_fingerprints(offsets, step, [acc])
    assert h[0] == h[1] != h[2]


def test_a_changed_log_knows_nothing_of_its_nan_and_packs_what_it_holds() -> None:
    """A table changed after validation (a column swapped in, ``dataclasses.replace``) is
    scanned: the NaN it now holds are never reshaped into the runs' points (review finding:
    the knowledge once followed the column's name)."""
    import dataclasses

    import grokaudit

    log = build_log_table(_log(n_runs=6, T=20), metrics=["emb_erank"])
    m = np.asarray(log.series["emb_erank"], dtype=float).copy()
    m[::5] = np.nan
    changed = [dataclasses.replace(log, series={**log.series, "emb_erank": m})]
    swapped = dataclasses.replace(log, series=dict(log.series))
    swapped.series["emb_erank"] = m
    changed.append(swapped)
    fresh = build_log_table(pd.DataFrame({
        "run": np.repeat(log.run_ids, 20), "step": log.step, "test_acc": log.test_acc,
        "train_acc": log.train_acc, "emb_erank": m}), metrics=["emb_erank"])
    want = grokaudit.audit_table(fresh, metrics=["emb_erank"]).to_dict()["studies"]
    for t in changed:
        assert not t.holds_no_nan("emb_erank", t.series["emb_erank"])
        assert pack(t.series["emb_erank"], t, name="emb_erank").counts.min() < 20
        assert grokaudit.audit_table(t, metrics=["emb_erank"]).to_dict()["studies"] == want


def test_the_validated_columns_are_read_only() -> None:
    log = build_log_table(_log().sample(frac=1.0, random_state=1), metrics=["emb_erank"])
    for a in (log.test_acc, log.train_acc, log.series["emb_erank"]):
        with pytest.raises(ValueError):
            a[0] = np.nan


def test_true_counted_and_found_per_row_as_bytes_is_numpys_sum_and_any() -> None:
    rng = np.random.default_rng(44)
    for K in (0, 1, 50, 255, 256, 257, 5000, 65535, 65536):
        R = 3 if K >= 65535 else int(rng.integers(1, 40))
        for p in (0.0, 0.5, 1.0):  # all True: a row's count at the type's limit
            m = rng.random((R, K)) < p
            got = row_count(m)
            assert got.dtype == np.intp
            assert np.array_equal(got, m.sum(axis=1))
            assert np.array_equal(row_count(m[:, ::-1]), m.sum(axis=1))  # strided rows
            assert np.array_equal(row_any(m), m.any(axis=1))
            assert np.array_equal(row_any(m[:, ::-1]), m.any(axis=1))


def test_integer_steps_packed_as_stored_widen_per_block_to_the_float64_copy() -> None:
    rng = np.random.default_rng(45)
    R, T = 9, 6
    steps = np.sort(rng.choice(2**40, size=(R, T), replace=False), axis=1).ravel()
    log = build_log_table(pd.DataFrame({"run": np.repeat([f"r{i}" for i in range(R)], T),
                                        "step": steps, "test_acc": rng.random(R * T)}))
    P = pack(log.test_acc, log, name="test_acc")
    assert P.raw_steps.dtype == np.int64 and np.shares_memory(P.raw_steps, log.step)
    for sl in (slice(0, 4), slice(4, 9)):
        block = P.rows(sl)
        assert block.steps.dtype == np.float64
        assert np.array_equal(block.steps.ravel(), log.step_f64.reshape(R, T)[sl].ravel())


@pytest.mark.parametrize("shape", ["in order", "interleaved", "a run set aside", "unicode",
                                   "categorical"])
def test_the_conditions_index_made_from_arrow_is_pandas_own_index_of_the_ids(
        shape: str, tmp_path: pytest.TempPathFactory) -> None:
    """The runs' conditions are indexed by their ids as ``pd.Index(run_ids)`` would index them
    (pandas' own dtype for text, the same values in the same order), whether the index was
    made from the Arrow ids (runs in the file's order, reordered, some set aside) or not."""
    import pyarrow.parquet as pq

    ids = ["b", "a", "c", "d"] if shape != "unicode" else ["é", "a b", "ü", "日本"]
    rows = []
    for k, r in enumerate(ids):
        n = 2 if shape == "a run set aside" and k == 2 else 8  # too short: set aside
        rows += [{"run": r, "step": s, "test_acc": 0.5, "emb_erank": 1.0 + s % 3, "wd": k}
                 for s in range(n)]
    df = pd.DataFrame(rows)
    if shape == "interleaved":  # rows not grouped by run: sorted by the general path
        df = df.sort_values(["step", "run"], kind="stable")
    if shape == "categorical":  # stored as a dictionary in sorted order, not the rows' order
        df["run"] = df["run"].astype(pd.CategoricalDtype(sorted(ids)))
    path = tmp_path / "log.parquet"  # type: ignore[operator]
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path)
    log = build_log_table(pq.read_table(path), path=str(path))
    want = pd.Index(np.asarray(log.run_ids, dtype=object), name="run")
    got = log.conditions.index
    assert got.dtype == want.dtype
    assert got.equals(want) and list(got) == [str(r) for r in log.run_ids]
    if shape == "a run set aside":
        assert ids[2] not in list(got) and len(got) == 3
    pd.testing.assert_frame_equal(log.conditions, pd.DataFrame(
        {c: log.conditions[c].to_numpy() for c in log.conditions}, index=want))


def test_a_log_keeping_no_run_has_pandas_own_empty_index() -> None:
    """A log still growing whose runs are all too short keeps none: its conditions' index is
    pandas' index of no id (``object``), not an empty Arrow text index."""
    df = pd.DataFrame({"run": ["a", "a", "b"], "step": [0, 1, 0], "test_acc": [.1, .2, .3]})
    log = build_log_table(df, growing=True)
    want = pd.Index(np.asarray(log.run_ids, dtype=object), name="run")
    assert log.run_ids.size == 0
    assert log.conditions.index.dtype == want.dtype and log.conditions.index.equals(want)


def test_the_conditions_index_follows_pandas_string_storage_set_between_two_audits() -> None:
    """pandas' string storage set by the user after a first audit: the next log's index is
    what ``pd.Index`` gives under the new setting, not the first one's dtype."""
    df = pd.DataFrame({"run": ["a"] * 8 + ["b"] * 8, "step": list(range(8)) * 2,
                       "test_acc": np.linspace(0, 1, 16)})
    build_log_table(df)
    with pd.option_context("mode.string_storage", "python"):
        log = build_log_table(df)
        want = pd.Index(np.asarray(log.run_ids, dtype=object), name="run")
        assert log.conditions.index.dtype == want.dtype
        assert log.conditions.index.equals(want)
