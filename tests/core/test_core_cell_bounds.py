"""Cell medians of quantities the log knows only within bounds, what a cell counts as
censored, and the sub-reason of an ordering with no sign (found by a sceptical review)."""

from __future__ import annotations

import math

import grokaudit
import numpy as np
import pandas as pd
from grokaudit import Reason
from helpers.core_builders import cells_from, compressing_run, grid, run_frame, step_acc


def audit(df: pd.DataFrame, **cfg: object) -> grokaudit.AuditResult:
    cfg.setdefault("by", "rho")
    return grokaudit.audit_table(df, **cfg)


def _verdict_evidence(res: grokaudit.AuditResult) -> dict[str, object]:
    st = res.studies[0]
    return next(f.evidence for f in res.findings if f.code == st.verdict)


def test_a_grok_at_step_zero_is_not_left_out_of_rel_lag():
    # per cell: two runs generalize at step 0 itself and compress 8 000+ steps later; one
    # groks at 10 000 and compresses 1 000 steps later (rel_lag 0.1). lag / 0 is infinite:
    # the pooled median rel_lag is large, never the small lag of the one run per cell
    frames = []
    for rho, ts in ((1.0, 8000), (2.0, 9000), (3.0, 10_000)):
        frames += [compressing_run(f"{rho}z{s}", 0, ts + 100 * s, rho=rho, seed=s)
                   for s in range(2)]
        frames.append(compressing_run(f"{rho}l", 10_000, 11_000, rho=rho, seed=2))
    res = audit(pd.concat(frames, ignore_index=True))
    st = res.studies[0]
    assert st.verdict is not None and st.verdict != Reason.SINGLE_CLOCK_SMALL_LAG
    ev = _verdict_evidence(res)
    assert ev["eligible_runs"] == 9
    assert ev["median_rel_lag_low"] > 0.5
    # each cell's median over (inf, inf, 0.1) is infinite: no number is printed for it
    assert [c.rel_lag for c in st.cells] == [None, None, None]
    # nor for the runs themselves (lag / 0), through the API as in the JSON
    zero = [r for r in st.runs if r.t_grok is not None and r.t_grok.value == 0]
    assert len(zero) == 6 and all(r.rel_lag is None for r in zero)


def _censored_pair(rho: float, seed0: int) -> list[pd.DataFrame]:
    """Two runs whose metric falls a second time 36 000 steps in: their floor is not reached
    until the final window, so t_compress is censored."""
    s = grid()
    late = np.where(s < 3000, 40.0, np.where(s < 37_000, 20.0, 10.0))
    return [run_frame(f"{rho}c{k}", s, step_acc(s, 2000), late, rho=rho, seed=seed0 + k)
            for k in range(2)]


def test_a_cell_rel_lag_is_not_the_median_of_its_uncensored_runs():
    # cell 1.0: two runs with rel_lag 3.5 and 4.0 and two censored runs: the median is at
    # least their lower bounds' median; it is not 3.75, the median of the two known
    frames = [compressing_run("1.0a", 2000, 9000, rho=1.0, seed=0),
              compressing_run("1.0b", 2000, 10_000, rho=1.0, seed=1),
              *_censored_pair(1.0, 2),
              *(compressing_run(f"{rho}{k}", 2000, 9000, rho=rho, seed=k)
                for rho in (2.0, 3.0) for k in range(3))]
    res = audit(pd.concat(frames, ignore_index=True))
    c = res.studies[0].cell(1.0)
    assert c.n_tc_censored == 2 and c.lag is not None and c.lag.censored
    assert c.rel_lag is None
    assert res.studies[0].cell(2.0).rel_lag is not None  # a cell of known lags keeps its number


def test_one_censored_run_that_cannot_move_the_median_keeps_it():
    # rel_lag 3.55 and 4.05 known, a third censored beyond both: the median is 4.05 wherever
    # the censored value lies
    frames = [compressing_run("a", 2000, 9000, rho=1.0, seed=0),
              compressing_run("b", 2000, 10_000, rho=1.0, seed=1),
              _censored_pair(1.0, 2)[0]]
    res = audit(pd.concat(frames, ignore_index=True))
    c = res.studies[0].cells[0]
    rels = sorted(r.rel_lag for r in res.studies[0].runs if r.rel_lag is not None)
    assert len(rels) == 2
    assert c.rel_lag == rels[1]


def test_the_reference_profile_keeps_its_point_medians():
    # v1.5 reads a censored run at its last step: a point; its cell median is a number
    frames = [compressing_run("a", 2000, 9000, rho=1.0, seed=0),
              compressing_run("b", 2000, 10_000, rho=1.0, seed=1), *_censored_pair(1.0, 2)]
    c = audit(pd.concat(frames, ignore_index=True), profile="reference").studies[0].cells[0]
    assert c.rel_lag is not None and math.isfinite(c.rel_lag)


def test_left_censored_t_compress_counts_as_censored_in_the_cell():
    # per cell one run's log starts at 1 000 with its metric already on the floor: its
    # t_compress is before logging began, which the clock verdict counts as censored
    frames = []
    for rho, tg in ((1.0, 2000), (2.0, 3000), (3.0, 4000)):
        frames += [compressing_run(f"{rho}{k}", tg, tg + 3000, rho=rho, seed=k) for k in (1, 2)]
        s = grid()[10:]
        frames.append(run_frame(f"{rho}late", s, step_acc(s, tg), np.full(s.shape, 10.0),
                                rho=rho, seed=0))
    res = audit(pd.concat(frames, ignore_index=True))
    st = res.studies[0]
    left = [r for r in st.runs if r.t_compress is not None and r.t_compress.left_censored]
    assert len(left) == 3
    assert [c.n_tc_censored for c in st.cells] == [1, 1, 1]
    assert _verdict_evidence(res)["censored_t_compress"] == sum(c.n_tc_censored
                                                                for c in st.cells)


def test_frac_pre_needs_a_stable_floor():
    # the metric still falls at the end of the log: the floor is unstable, the total
    # compression unknown, and so is the share of it done by grok; inflation is a bound
    s = grid()
    frames = []
    for rho, tg in ((1.0, 2000), (2.0, 3000), (3.0, 4000)):
        m = 40.0 * np.exp(-s / 20_000.0)
        frames += [run_frame(f"{rho}{k}", s, step_acc(s, tg), m, rho=rho, seed=k)
                   for k in range(3)]
    res = audit(pd.concat(frames, ignore_index=True))
    runs = res.studies[0].runs
    assert {r.floor_stability for r in runs} == {"unstable"}
    assert all(r.frac_pre is None for r in runs)
    assert all(c.frac_pre is None for c in res.studies[0].cells)
    # without the stability test every floor is taken as it is (the reference analyzer)
    ref = audit(pd.concat(frames, ignore_index=True), profile="reference")
    assert all(r.frac_pre is not None for r in ref.studies[0].runs)


def test_an_ordering_with_no_sign_and_no_tie_says_so():
    # t_grok 2000, 4000, 1000, 3000 along the axis: every pair ordered, 3 rise and 3 fall
    o = audit(cells_from([(1.0, 2000, 9000), (2.0, 4000, 11_000), (3.0, 1000, 8000),
                          (4.0, 3000, 10_000)])).studies[0].ordering("t_grok")
    assert (o.concordant, o.discordant, o.unidentified) == (3, 3, 0)
    assert not o.identified and o.sub_reason == Reason.NO_NET_DIRECTION


def test_a_cell_lag_is_only_bounds_when_a_censored_run_could_move_it():
    # two runs with lags 10 100 and 12 100; a third groks at 30 000 and has not settled
    # by the end: its lag is only known to exceed 7 000, so the median lies anywhere in
    # [10 100, 12 100] -- a number there (12 100: censored ranked last) overstates the log
    s = grid()
    late = np.where(s < 30_000, 40.0, np.where(s < 37_000, 20.0, 10.0))
    frames = []
    for rho in (1.0, 2.0, 3.0):
        frames += [compressing_run(f"{rho}a", 2000, 12_000, rho=rho, seed=0),
                   compressing_run(f"{rho}b", 2000, 14_000, rho=rho, seed=1),
                   run_frame(f"{rho}c", s, step_acc(s, 30_000), late, rho=rho, seed=2)]
    res = audit(pd.concat(frames, ignore_index=True))
    c = res.studies[0].cells[0]
    assert c.lag is not None and c.lag.value is None and not c.lag.censored
    assert c.lag.lower <= 10_100 and c.lag.upper >= 12_100
    # its t_compress is censored after both others' values: that median is still a number
    assert c.t_compress is not None and c.t_compress.value == 14_100
