"""The clocks computed in blocks of runs on a thread pool equal the clocks computed at once."""

from __future__ import annotations

import threading
import warnings

import grokaudit
import numpy as np
import pandas as pd
import pytest
from grokaudit import blocks


def _log(rng: np.random.Generator, n_runs: int) -> pd.DataFrame:
    frames = []
    for r in range(n_runs):
        n = int(rng.integers(40, 400))
        i = np.arange(n)
        tg = int(rng.uniform(0.05, 0.6) * n) if rng.random() < 0.85 else n + 1
        tc = min(n - 1, tg + int(rng.uniform(0, 0.7) * n))
        peak, floor = rng.uniform(20, 60), rng.uniform(2, 19)
        m = np.where(i < tc, peak, floor) + rng.normal(0, rng.choice([0.0, 0.5, 3.0]), n)
        if rng.random() < 0.2:  # a late rise: an unstable floor or a rebound
            m[int(0.85 * n):] += 0.4 * (peak - floor)
        m[rng.random(n) < 0.05] = np.nan
        acc = np.where(i >= tg, rng.uniform(0.9, 1.0, n), rng.uniform(0.0, 0.5, n))
        frames.append(pd.DataFrame({
            "run": f"r{r}", "step": i * int(rng.choice([1, 10, 25])), "test_acc": acc,
            "train_acc": 1.0, "emb_erank": m.astype(np.float32), "rho": float(r % 5)}))
    return pd.concat(frames, ignore_index=True)


@pytest.mark.parametrize("profile", ["default", "reference"])
@pytest.mark.parametrize("threads", ["1", "3"])
def test_blocks_and_threads_do_not_change_the_audit(monkeypatch, profile: str, threads: str):
    df = _log(np.random.default_rng(7), 60)
    whole = grokaudit.audit_table(df, by="rho", profile=profile).to_json()
    monkeypatch.setattr(blocks, "MIN_BLOCKED", 0)
    monkeypatch.setattr(blocks, "BLOCK_ELEMENTS", 700)  # blocks of 1-17 runs
    monkeypatch.setenv("GROKAUDIT_THREADS", threads)
    calls: list[int] = []
    real = blocks.row_blocks

    def spy(n_rows: int, n_cols: int) -> list[slice]:
        out = real(n_rows, n_cols)
        calls.append(len(out))
        return out

    monkeypatch.setattr(grokaudit.engine, "row_blocks", spy)  # where the thread engine cuts blocks
    blocked = grokaudit.audit_table(df, by="rho", profile=profile).to_json()
    assert calls and min(calls) > 3  # the runs were really split
    assert blocked == whole


def test_row_blocks_cover_every_row_once():
    for n_rows, n_cols in ((0, 5), (1, 10**7), (5, 3), (10_000, 5_000), (1_000_003, 7)):
        bl = blocks.row_blocks(n_rows, n_cols)
        covered = np.concatenate([np.arange(n_rows)[b] for b in bl]) if bl else np.array([])
        assert np.array_equal(covered, np.arange(n_rows))


@pytest.mark.parametrize("threads", ["1", "2", "4"])
def test_a_matrix_too_small_for_full_blocks_gives_every_thread_two(monkeypatch, threads: str):
    """Blocks of :data:`BLOCK_ELEMENTS` where there are at least two per thread; fewer, and the
    rows are cut into two blocks per thread (of equal size but the last), none smaller than
    :data:`MIN_BLOCK_ELEMENTS` elements: no thread waits on another's one large block. One
    thread: the full blocks, never cut."""
    monkeypatch.setenv("GROKAUDIT_THREADS", threads)
    want = 2 * int(threads) if threads != "1" else 1
    for n_rows, n_cols in ((200_000, 3), (1_000_000, 50), (2_000, 5_000), (30_000, 10),
                           (90_000, 3), (100, 5_000)):
        bl = blocks.row_blocks(n_rows, n_cols)
        sizes = [b.stop - b.start for b in bl]
        assert sum(sizes) == n_rows
        full = max(1, blocks.BLOCK_ELEMENTS // n_cols)
        if -(-n_rows // full) >= want:  # enough full blocks: they are kept
            assert sizes[:-1] == [full] * (len(sizes) - 1)
        else:
            floor_rows = max(1, blocks.MIN_BLOCK_ELEMENTS // n_cols)
            assert all(s >= floor_rows for s in sizes[:-1])
            assert len(bl) >= want or sizes[0] == floor_rows
            assert max(sizes) <= max(floor_rows, -(-n_rows // want))


@pytest.mark.parametrize(("value", "expected"), [("1", 1), ("4", 4), ("0", None), ("x", None),
                                                 ("", None), ("-2", None)])
def test_threads_from_the_environment(monkeypatch, value: str, expected: int | None):
    monkeypatch.setenv("GROKAUDIT_THREADS", value)
    monkeypatch.setattr(blocks.os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert blocks.threads() == (3 if expected is None else expected)


def test_quiet_blocks_on_threads_leave_the_filters_as_they_were():
    before = list(warnings.filters)
    barrier = threading.Barrier(4)

    def work() -> None:
        barrier.wait()
        for _ in range(200):
            with blocks.quiet_runtime_warnings():
                np.nanmedian(np.full((2, 3), np.nan), axis=1)

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert warnings.filters == before


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_a_forked_child_makes_its_own_pool(monkeypatch):
    import multiprocessing as mp

    monkeypatch.setenv("GROKAUDIT_THREADS", "2")
    assert blocks.map_blocks(lambda b: b.start, [slice(0, 1), slice(1, 2)]) == [0, 1]
    ctx = mp.get_context("fork")
    with ctx.Pool(1) as pool:  # the parent's pool threads do not exist in the child
        got = pool.apply_async(_map_in_child).get(timeout=60)
    assert got == [0, 1, 2]


def _map_in_child() -> list[int]:
    return blocks.map_blocks(lambda b: b.start, [slice(0, 1), slice(1, 2), slice(2, 3)])


def _block_arrays(b: slice) -> list[np.ndarray]:
    """Per-row arrays of a block, each position with values np.concatenate must keep bit for
    bit (-0.0, NaN payloads, int64 extremes) and, at two positions, a dtype or a width that
    differs between blocks (so the join must promote as np.concatenate does)."""
    rows = np.arange(b.start, b.stop)
    f = rows * 0.5 - 3.0
    f[rows % 7 == 0] = -0.0
    payload = np.full(rows.size, 0x7FF8_0000_0000_1234, dtype=np.uint64).view(np.float64)
    f = np.where(rows % 11 == 0, payload, f)
    ints = rows.astype(np.int64) * (2**40 + 1) - 2**62
    mixed = rows.astype(np.int32) if b.start % 2 == 0 else rows * 1.25  # int32 or float64
    wide = np.stack([rows, -rows], axis=1) if b.start < 20 else np.stack([rows] * 2, axis=1)
    odd_width = rows[:, None] * np.ones((1, 2 if b.start < 30 else 3))
    return [f, ints, rows % 3 == 0, mixed, wide, odd_width[:, :2] if b.start < 30 else
            odd_width]


@pytest.mark.parametrize("threads", ["1", "2", "4"])
@pytest.mark.parametrize("per", [1, 7, 64, 100])
def test_map_rows_joins_as_concatenate_does(monkeypatch, threads: str, per: int):
    monkeypatch.setenv("GROKAUDIT_THREADS", threads)
    n = 100
    bl = blocks.slices(n, per)

    def fn(b: slice) -> list[np.ndarray]:
        return _block_arrays(b)[:5]

    expected = [np.concatenate([fn(b)[i] for b in bl]) for i in range(5)]
    got = blocks.map_rows(fn, bl, n)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape
        assert g.tobytes() == e.tobytes()  # bit for bit: -0.0 and NaN payloads kept


@pytest.mark.parametrize("threads", ["1", "2"])
def test_map_rows_refuses_rows_of_two_widths_as_concatenate_does(monkeypatch, threads: str):
    monkeypatch.setenv("GROKAUDIT_THREADS", threads)
    bl = blocks.slices(100, 10)
    with pytest.raises(ValueError):  # np.concatenate refuses it too
        np.concatenate([_block_arrays(b)[5] for b in bl])
    with pytest.raises(ValueError):
        blocks.map_rows(lambda b: _block_arrays(b)[5:], bl, 100)


def test_map_rows_of_one_block_returns_its_arrays():
    arrays = [np.arange(5.0), np.ones(5, dtype=bool)]
    got = blocks.map_rows(lambda b: arrays, [slice(0, 5)], 5)
    assert all(g is a for g, a in zip(got, arrays))


def test_map_rows_raises_a_block_s_error(monkeypatch):
    monkeypatch.setenv("GROKAUDIT_THREADS", "2")

    def fn(b: slice) -> list[np.ndarray]:
        if b.start == 30:
            raise ZeroDivisionError("block 30")
        return [np.arange(b.start, b.stop, dtype=float)]

    with pytest.raises(ZeroDivisionError):
        blocks.map_rows(fn, blocks.slices(60, 10), 60)


def test_run_each_runs_the_calls_side_by_side_and_keeps_their_order(monkeypatch):
    monkeypatch.setenv("GROKAUDIT_THREADS", "2")
    meet = threading.Barrier(2, timeout=10)  # broken unless two calls run at once

    def call(k: int):
        def run() -> tuple[int, str]:
            if k < 2:
                meet.wait()
            return k, threading.current_thread().name

        return run

    got = blocks.run_each([call(k) for k in range(5)])
    assert [k for k, _ in got] == list(range(5))
    assert not meet.broken
    assert len({name for _, name in got[:2]}) == 2


def test_run_each_on_one_thread_runs_in_order_on_the_pool_s_one_thread(monkeypatch):
    """One thread: the calls run one after the other, in order, on the pool's one thread --
    not the caller's, whose allocator would hand each call's freed memory back to the OS
    for the next call to fault in again (docs/performance.md, round 13)."""
    monkeypatch.setenv("GROKAUDIT_THREADS", "1")
    seen: list[tuple[int, str]] = []
    calls = [lambda k=k: seen.append((k, threading.current_thread().name)) or k for k in range(4)]
    assert blocks.run_each(calls) == [0, 1, 2, 3]
    assert [k for k, _ in seen] == [0, 1, 2, 3]
    names = {name for _, name in seen}
    assert len(names) == 1 and names.pop().startswith("grokaudit-blocks")


def test_one_block_runs_on_the_caller(monkeypatch):
    """A single block (a small log) is computed where it is asked for: no hand-over."""
    monkeypatch.setenv("GROKAUDIT_THREADS", "1")
    assert blocks.map_blocks(lambda b: threading.current_thread().name, [slice(0, 5)]) == [
        threading.current_thread().name]


def test_run_each_raises_a_call_s_error(monkeypatch):
    monkeypatch.setenv("GROKAUDIT_THREADS", "2")

    def bad() -> int:
        raise ZeroDivisionError("call 1")

    with pytest.raises(ZeroDivisionError):
        blocks.run_each([lambda: 0, bad, lambda: 2])


@pytest.mark.parametrize("profile", ["default", "reference", "accuracy only"])
def test_cells_computed_side_by_side_give_the_audit_computed_in_order(monkeypatch, profile):
    """Large cells are summarised beside the run table's parts on the thread pool; the audit
    is the one computed in order, byte for byte (the threshold lowered so that a small log
    takes the pool, and the pool proven used)."""
    from grokaudit import api

    df = _log(np.random.default_rng(11), 60)
    if profile == "accuracy only":  # no metric: the accuracy run table, one part
        df, profile = df.drop(columns=["emb_erank"]), "default"
    in_order = grokaudit.audit_table(df, by="rho", profile=profile).to_json()
    monkeypatch.setattr(api, "CELLS_SIDE_BY_SIDE_RUNS", 1)
    monkeypatch.setenv("GROKAUDIT_THREADS", "2")
    names: set[str] = set()
    real = api.run_each

    n_calls: list[int] = []

    def spy(calls):
        n_calls.append(len(calls))

        def named(call):
            def run():
                names.add(threading.current_thread().name)
                return call()
            return run
        return real([named(c) for c in calls])

    monkeypatch.setattr(api, "run_each", spy)
    side_by_side = grokaudit.audit_table(df, by="rho", profile=profile).to_json()
    assert any(n.startswith("grokaudit-blocks") for n in names)
    # the 5 cells beside the run table, which is several parts where a metric was audited
    assert len(n_calls) == 1
    assert n_calls[0] > 5 + 1 if "emb_erank" in df else n_calls[0] == 5 + 1
    assert side_by_side == in_order
