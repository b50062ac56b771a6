"""``--profile reference`` (AUDIT_SPEC §5): one test per difference from the default profile.

``test_core_reference_matches_oracle.py`` checks that the profile's numbers equal the v1.5 analyzer's
(``benchmarks/v15_loop.py``) exactly; here each switch is shown against the default.
"""

import grokaudit
import numpy as np
import pandas as pd
import pytest
from grokaudit import Reason
from helpers.core_builders import cells_from, compressing_run, grid, piecewise, run_frame, step_acc


def both(df, **cfg):
    cfg.setdefault("by", "rho")
    return (grokaudit.audit_table(df, **cfg),
            grokaudit.audit_table(df, profile="reference", **cfg))


def only_run(res):
    (r,) = res.studies[0].runs
    return r


def test_floor_is_index_based_on_the_grid():
    # dense early, sparse late: the last 10 % of points is not the last 10 % of steps
    s = np.concatenate([np.arange(0, 10_000, 100), np.arange(10_000, 20_001, 1000)])
    m = piecewise(s, [(0, 40), (1000, 20), (16_000, 10)])
    d, r = both(run_frame("a", s, step_acc(s, 1000), m, rho=1.0))
    # default: last 10 % of the span holds 3 points, so the last 5 (16k..20k): F = 10
    assert only_run(d).floor == 10
    # reference: the last int(0.1 * 111) = 11 points (10k..20k): median of 6x20 and 5x10
    assert only_run(r).floor == 20
    assert r.config["floor_window"] == "grid"


def test_floor_window_counts_the_cells_grid():
    # run b logs every other step: alone, its last 10 % is 10 of its 100 points; on the cell's
    # grid of 200 steps the window is the last 20 steps, which hold 10 of b's points
    s = np.arange(0, 20_000, 100)
    a = run_frame("a", s, step_acc(s, 1000), piecewise(s, [(0, 40), (2000, 10)]), rho=1.0)
    sb = s[::2]
    mb = piecewise(sb, [(0, 40), (2000, 20), (18_000, 10)])
    b = run_frame("b", sb, step_acc(sb, 1000), mb, rho=1.0)
    res = grokaudit.audit_table(pd.concat([a, b]), by="rho", profile="reference")
    (ra, rb) = res.studies[0].runs
    assert rb.floor == 10  # 18 000 .. 19 800
    alone = grokaudit.audit_table(b, by="rho", profile="reference", floor_window="index")
    assert only_run(alone).floor == 10  # its own last 10 points: 18 000 .. 19 800 too
    res2 = grokaudit.audit_table(pd.concat([a, b]).query("step < 19_000 or run == 'a'"),
                                 by="rho", profile="reference")
    # b stops at 18 800: the cell grid's window (18 000 ..) still holds 5 of its points
    assert res2.studies[0].runs[1].floor == 10


def test_relative_drop_rule_is_a_gate_on_the_cell_medians():
    # one run drops 40 -> 35 (12.5 % of its at-grok value, more than 1.0 absolute): the default
    # calls it no compression; v1.5 gives it a t_compress and judges 25 % on the cell medians
    frames = [compressing_run("r0", 2000, 4000, peak=40, mid=40, floor=35, rho=1.0)]
    frames += [compressing_run(f"r{s}", 2000, 4000, peak=40, mid=40, floor=10, rho=1.0)
               for s in (1, 2)]
    d, r = both(pd.concat(frames))
    rd, rr = d.studies[0].runs[0], r.studies[0].runs[0]
    assert Reason.NO_COMPRESSION in rd.reasons and rd.t_compress is None
    assert Reason.NO_COMPRESSION not in rr.reasons and rr.t_compress.value == 4000
    assert rr.reference.valid_comp and rr.reference.drop == 5
    c = r.studies[0].cells[0]
    assert c.reference.comp_ratio == 0.75 and not c.reference.tiny_drop


def test_censored_t_compress_counts_at_its_last_step():
    # two runs grok late (inside the floor window) and never cross: v1.5 keeps their last
    # step in the cell's t_compress median
    frames = [compressing_run(f"e{s}", 2000, 8000, rho=1.0) for s in range(2)]
    s = grid()
    # the window is the last 40 steps (36 100 .. 40 000): 20 at 20, 20 at 30, floor 25
    late = piecewise(s, [(0, 40), (35_000, 20), (38_100, 30)])
    frames += [run_frame(f"l{k}", s, step_acc(s, 38_100), late, rho=1.0) for k in range(2)]
    d, r = both(pd.concat(frames))
    late_r = {x.run: x for x in r.studies[0].runs}["l0"]
    assert late_r.t_compress.censored and late_r.t_compress.lower == 40_000
    assert late_r.reference.t_compress == 40_000 and late_r.reference.censored
    # median of 8000, 8000, 40 000, 40 000
    assert r.studies[0].cells[0].t_compress.value == 24_000
    assert d.studies[0].cells[0].t_compress.censored


def test_t_grok_needs_a_metric_point():
    s = grid(20_000)
    m = piecewise(s, [(0, 40), (2100, 45), (6000, 10)])
    m[s == 2000] = np.nan
    d, r = both(run_frame("a", s, step_acc(s, 2000), m, rho=1.0))
    assert only_run(d).t_grok.value == 2000 and only_run(d).m_grok == 40
    assert only_run(r).t_grok.value == 2100 and only_run(r).m_grok == 45


def test_switches_are_echoed_only_when_set():
    d, r = both(cells_from([(1.1, 2000, 9000)]))
    new = ("grok_point", "rel_drop", "censored_time", "cell_runs", "censor_scope", "lag_class",
           "clock_rule")
    assert not set(new) & set(d.config)
    assert [r.config[k] for k in new] == ["usable", "cell", "last_step", "kept", "all_cells",
                                          "cell_medians", "sign"]
    assert grokaudit.make_config(**{k: r.config[k] for k in new}).to_dict()["rel_drop"] == "cell"


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
    # no test: the floor is taken as converged, and labelled as untested
    assert only_run(r).floor_stability == "unchecked"
    assert Reason.FLOOR_STABLE not in only_run(r).reasons
    assert r.studies[0].cells[0].floor_stability == {}
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
