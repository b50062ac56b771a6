"""Runs logged twice (``DUPLICATE_RUN``): :func:`grokaudit.identity.duplicate_runs` finds
exactly the groups of runs equal at every step in every column — checked against the
definition itself (every pair compared with ``np.array_equal(..., equal_nan=True)``) on random
logs built to hold duplicates, near-duplicates (one value, one step, one NaN, the sign of a
zero), float32 and float64 columns, unequal lengths, batches cut small, and both ways of
comparing (short runs' key rows sorted together, long runs against their group's first: every
group's round in one comparison, or cut into pieces of one run)."""

from __future__ import annotations

import numpy as np
import pytest
from grokaudit import identity
from grokaudit.identity import duplicate_runs


def _by_definition(run_ids: np.ndarray, offsets: np.ndarray, step: np.ndarray,
                   columns: list[np.ndarray]) -> list[tuple[str, ...]]:
    R = run_ids.size
    seen: set[int] = set()
    out = []
    for a in range(R):
        if a in seen:
            continue
        sa = slice(offsets[a], offsets[a + 1])
        same = [a]
        for b in range(a + 1, R):
            sb = slice(offsets[b], offsets[b + 1])
            if np.array_equal(step[sa], step[sb]) and all(
                    np.array_equal(c[sa], c[sb], equal_nan=True) for c in columns):
                same.append(b)
        seen.update(same)
        if len(same) > 1:
            out.append(tuple(sorted(str(run_ids[i]) for i in same)))
    return sorted(out)


def _log(rng: np.random.Generator, dtype: type) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                         list[np.ndarray]]:
    """Runs drawn from a few templates (so many are equal), each then perhaps nudged."""
    templates = []
    for _ in range(4):
        n = int(rng.integers(1, 6))
        cols = [rng.choice([0.0, -0.0, 0.5, 1.0, np.nan], size=n).astype(dtype)
                for _ in range(3)]
        templates.append((np.arange(n, dtype=np.int64) * 10, cols))
    steps, cols, lens = [], [[], [], []], []
    for _ in range(int(rng.integers(2, 40))):
        st, cs = templates[int(rng.integers(len(templates)))]
        st, cs = st.copy(), [c.copy() for c in cs]
        change = int(rng.integers(6))
        if change == 1:
            cs[int(rng.integers(3))][int(rng.integers(st.size))] = dtype(0.25)
        elif change == 2:
            st[-1] += 1
        elif change == 3:
            cs[0][0] = -cs[0][0]  # -0.0 for 0.0: equal; -0.5 for 0.5: not
        elif change == 4:
            cs[2][int(rng.integers(st.size))] = np.nan
        steps.append(st)
        lens.append(st.size)
        for k in range(3):
            cols[k].append(cs[k])
    offsets = np.r_[0, np.cumsum(lens)].astype(np.int64)
    run_ids = np.array([f"r{i}" for i in range(len(lens))], dtype=object)
    return run_ids, offsets, np.concatenate(steps), [np.concatenate(c) for c in cols]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("way", ["sorted rows", "small batches", "against the first",
                                 "against the first, one run at a time",
                                 "colliding fingerprints"])
def test_duplicate_runs_are_the_groups_of_the_definition(dtype: type, way: str,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    if way == "small batches":  # a batch of at most two runs' keys: groups never split
        monkeypatch.setattr(identity, "_KEY_ELEMENTS", 1)
    if way.startswith("against the first"):  # long runs' way: each group against its first
        monkeypatch.setattr(identity, "_SHORT_WIDTH", 0)
    if way == "against the first, one run at a time":  # every group's round in pieces
        monkeypatch.setattr(identity, "_KEY_ELEMENTS", 1)
    rng = np.random.default_rng(7)
    found_any = 0
    for _ in range(150):
        run_ids, offsets, step, columns = _log(rng, dtype)
        want = _by_definition(run_ids, offsets, step, columns)
        # fingerprints that agree by chance (two values for all runs): every candidate must
        # be compared exactly, and runs not sharing one never are
        prints = (np.arange(run_ids.size) % 2).astype(np.uint64) \
            if way == "colliding fingerprints" else None
        if prints is not None:  # equal runs whose prints differ are never compared
            want = sorted(sub for g in want for par in (0, 1)
                          if len(sub := tuple(r for r in g if int(r[1:]) % 2 == par)) > 1)
        assert duplicate_runs(run_ids, offsets, step, columns, prints) == want
        found_any += bool(want)
    assert found_any > 50  # the logs really held duplicates
