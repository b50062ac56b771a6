"""``--profile reference`` (AUDIT_SPEC §5): one test per difference from the default profile."""

import grokaudit
import numpy as np
import pandas as pd
import pytest
from core_builders import cells_from, compressing_run, grid, piecewise, run_frame, step_acc
from grokaudit import Reason


def both(df, **cfg):
    cfg.setdefault("by", "rho")
    return (grokaudit.audit_table(df, **cfg),
            grokaudit.audit_table(df, profile="reference", **cfg))


def only_run(res):
    (r,) = res.studies[0].runs
    return r


def test_floor_is_index_based():
    # dense early, sparse late: the last 10 % of points is not the last 10 % of steps
    s = np.concatenate([np.arange(0, 10_000, 100), np.arange(10_000, 20_001, 1000)])
    m = piecewise(s, [(0, 40), (1000, 20), (16_000, 10)])
    d, r = both(run_frame("a", s, step_acc(s, 1000), m, rho=1.0))
    # default: last 10 % of the span holds 3 points, so the last 5 (16k..20k): F = 10
    assert only_run(d).floor == 10
    # reference: the last int(0.1 * 111) = 11 points (10k..20k): median of 6x20 and 5x10
    assert only_run(r).floor == 20


def test_drop_must_be_one_unit_absolute():
    df = pd.concat([compressing_run(f"r{s}", 2000, 9000, peak=2.5, mid=2.5, floor=1.8,
                                    rho=1.0, seed=s) for s in range(3)])
    d, r = both(df)
    assert only_run_codes(d).isdisjoint({Reason.NO_COMPRESSION})
    assert Reason.NO_COMPRESSION in only_run_codes(r)
    assert Reason.BOUNDARY_NO_COMPRESSION in r.studies[0].cells[0].gates


def only_run_codes(res):
    return set().union(*(set(x.reasons) for x in res.studies[0].runs))


def test_rule_is_crossing():
    s = grid(20_000)
    m = piecewise(s, [(0, 40), (2000, 25), (3000, 10), (4000, 25), (6000, 10)])
    d, r = both(run_frame("a", s, step_acc(s, 2000), m, rho=1.0))
    assert only_run(d).t_compress.value == 6100
    assert only_run(r).t_compress.value == 3000
    assert r.config["rule"] == "crossing"


def test_no_partial_generalization_gate():
    bad = pd.concat([compressing_run(f"p{s}", 2000, 9000, acc_hi=0.93, rho=1.0, seed=s)
                     for s in range(3)])
    d, r = both(bad)
    assert Reason.BOUNDARY_PARTIAL_GENERALIZATION in d.studies[0].cells[0].gates
    assert r.studies[0].cells[0].passes


def test_orderings_are_spearman_on_point_medians():
    # floors 10.0, 10.2, 10.4 differ by less than delta (0.5): tied for the default
    frames = []
    for rho, fl in ((1, 10.0), (2, 10.2), (3, 10.4)):
        frames += [compressing_run(f"{rho}_{s}", 2000 * rho, 12000, floor=fl, rho=rho, seed=s)
                   for s in range(3)]
    d, r = both(pd.concat(frames))
    od, orf = d.studies[0].ordering("floor"), r.studies[0].ordering("floor")
    assert not od.identified and od.sub_reason == Reason.TIES_WITHIN_RESOLUTION
    assert orf.identified and orf.spearman == pytest.approx(1.0) and orf.tau_bounds is None


def test_no_floor_stability_check():
    s = grid()
    m = piecewise(s, [(0, 40), (3000, 20), (37_000, 10)])  # a late second collapse
    d, r = both(run_frame("a", s, step_acc(s, 3000), m, rho=1.0))
    assert only_run(d).floor_stability == "unstable" and only_run(d).t_compress.censored
    assert only_run(r).floor_stability == "stable"
    assert only_run(r).t_compress.value is not None


def test_no_interval_censoring():
    d, r = both(cells_from([(1.1, 2000, 9000)]))
    tg_d, tg_r = d.studies[0].runs[0].t_grok, r.studies[0].runs[0].t_grok
    assert (tg_d.lower, tg_d.upper) == (1900, 2000)
    assert tg_r.lower == tg_r.upper == 2000


def test_reference_thresholds_match_the_public_analyzer():
    _, r = both(cells_from([(1.1, 2000, 9000)]))
    c = r.config
    assert (c["eps"], c["large_lag"], c["censor_warn"], c["min_abs_drop"]) == (0.1, 0.5, 0.25, 1.0)
