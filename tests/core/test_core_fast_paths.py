"""The fast paths of issue 10 equal the definitions they replace.

* ``study._pair_counts`` (a dominance count in O(n log² n)) against ``study._pair_counts_loop``
  (every pair visited), on random interval sets with ties, censored cells, single points and
  NaN values; and ``study.ordering`` with and without the fast path.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import grokaudit
import grokaudit.study as study
import numpy as np
import pytest

# hypothesis (the `test` extra) drives some tests here and its profiles are imported: without it
# the whole module skips, with this reason (issue 23: a venv with no extra skips, never fails)
pytest.importorskip("hypothesis", reason="hypothesis is not installed (the `test` extra)")

from helpers.core_builders import censored_study
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FAST = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))

# ------------------------------------------------------------------------------------------
# study._pair_counts == study._pair_counts_loop
# ------------------------------------------------------------------------------------------

#: a small pool of steps, so that bounds and values tie often
STEP = st.sampled_from([0.0, 100.0, 200.0, 300.0, 400.0, 1000.0, 1e6])


@st.composite
def time_quad(draw: Any) -> tuple[float, float, float, bool]:
    """One cell's ``(lower, upper, value, censored)`` of a time quantity: an interval with its
    value inside, a single point, a censored cell (upper ∞, no value), a value that is NaN,
    or (rarely) a NaN lower bound, which the fast path leaves to the loop."""
    kind = draw(st.sampled_from(["interval", "interval", "point", "censored", "nan_value",
                                 "nan_lower"]))
    a, b = sorted((draw(STEP), draw(STEP)))
    if kind == "point":
        return a, a, a, False
    if kind == "censored":
        return a, math.inf, math.nan, True
    if kind == "nan_value":
        return a, b, math.nan, False
    if kind == "nan_lower":
        return math.nan, b, b, False
    v = draw(st.sampled_from([b, a, (a + b) / 2]))  # usually the upper end, sometimes not
    return a, b, v, False


@st.composite
def value_quad(draw: Any) -> tuple[float, float, float, bool]:
    """A value quantity's ``(v − δ, v + δ, v, False)``; δ = 0 gives single points."""
    v = draw(st.sampled_from([0.0, 1.0, 1.5, 2.0, 3.0, 10.0]))
    d = draw(st.sampled_from([0.0, 0.25, 0.5, 1.0]))
    return v - d, v + d, v, False


@FAST
@given(st.lists(time_quad(), min_size=0, max_size=12))
def test_fast_pair_counts_equal_the_pair_loop_for_times(ivs):
    fast = study._pair_counts(ivs, True)
    loop = study._pair_counts_loop(ivs, True)
    if fast is None:  # only outside the cases the fast path is written for
        assert any(math.isnan(lo) for lo, *_ in ivs)
        return
    assert fast == loop


@FAST
@given(st.lists(value_quad(), min_size=0, max_size=12))
def test_fast_pair_counts_equal_the_pair_loop_for_values(ivs):
    assert study._pair_counts(ivs, False) == study._pair_counts_loop(ivs, False)


def test_fast_pair_counts_on_many_random_sets():
    """Seeded random sets, larger than hypothesis draws (up to 60 cells)."""
    rng = np.random.default_rng(10)
    for _ in range(400):
        n = int(rng.integers(0, 61))
        pool = rng.choice([0.0, 50.0, 100.0, 150.0, 200.0, 1e9], size=6, replace=False)
        ivs = []
        for _ in range(n):
            a, b = sorted(rng.choice(pool, 2))
            r = rng.random()
            if r < 0.15:
                ivs.append((a, math.inf, math.nan, True))
            elif r < 0.3:
                ivs.append((a, a, a, False))
            elif r < 0.35:
                ivs.append((a, b, math.nan, False))
            else:
                ivs.append((a, b, b, False))
        assert study._pair_counts(ivs, True) == study._pair_counts_loop(ivs, True), ivs
        vals = [(v - d, v + d, v, False) for v, d in zip(rng.choice(pool, n),
                                                        rng.choice([0, 25, 60], n))]
        assert study._pair_counts(vals, False) == study._pair_counts_loop(vals, False), vals


def test_fast_pair_counts_decline_what_they_are_not_written_for():
    """A NaN lower bound or a censored value quantity: None, and the loop decides."""
    assert study._pair_counts([(math.nan, 1.0, 1.0, False), (0.0, 1.0, 1.0, False)], True) \
        is None
    assert study._pair_counts([(0.0, math.inf, math.nan, True), (0.0, 1.0, 1.0, False)],
                              False) is None


@FAST
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6), st.integers(-1, 2)),
                max_size=14))
def test_pairs_below_counts_every_pair(rows):
    """``_pairs_below`` equals its definition, group restriction included."""
    key = np.array([r[0] for r in rows], dtype=np.int64)
    query = np.array([r[1] for r in rows], dtype=np.int64)
    group = np.array([r[2] for r in rows], dtype=np.int64)
    n = len(rows)
    want = sum(1 for i, j in itertools.combinations(range(n), 2) if key[i] <= query[j])
    want_g = sum(1 for i, j in itertools.combinations(range(n), 2)
                 if key[i] <= query[j] and group[i] == group[j] and group[i] >= 0)
    assert study._pairs_below(key, query) == want
    assert study._pairs_below(key, query, group) == want_g


@pytest.mark.parametrize("q", study.QUANTITIES)
def test_ordering_is_the_same_with_the_pair_loop(monkeypatch, q):
    """``ordering`` on a real study with ties and censored cells, fast path against loop."""
    res = grokaudit.audit_table(censored_study(), by="rho", fail_on=("none",))
    cfg = grokaudit.make_config(by="rho")
    cells = res.studies[0].cells
    fast = study.ordering(cells, q, cfg)
    monkeypatch.setattr(study, "_pair_counts", lambda ivs, time: None)
    assert study.ordering(cells, q, cfg) == fast
