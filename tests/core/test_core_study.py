"""Cells, gates, orderings, clock verdicts and snapshot hazards (AUDIT_SPEC §2–§4)."""

import grokaudit
import pandas as pd
import pytest
from grokaudit import Reason, Severity
from helpers.core_builders import cells_from, compressing_run, flat_run


def audit(df, **cfg):
    cfg.setdefault("by", "rho")
    return grokaudit.audit_table(df, **cfg)


def cell_codes(res, rho, scope=None):
    return {f.code for f in res.findings if f.cell == rho and (scope is None or f.scope == scope)}


# -- censoring-aware cell medians ----------------------------------------------------------

def test_cell_median_is_the_interval_of_medians():
    df = pd.concat([compressing_run(f"r{i}", tg, 20_000, rho=1.0, seed=i)
                    for i, tg in enumerate((1000, 2000, 3000))])
    c = audit(df).studies[0].cells[0]
    assert (c.t_grok.value, c.t_grok.lower, c.t_grok.upper) == (2000, 1900, 2000)


def test_half_censored_runs_make_a_censored_median():
    runs = [compressing_run("a", 2000, 9000, rho=1.0, seed=0),
            compressing_run("b", None, 9000, rho=1.0, seed=1)]
    res = audit(pd.concat(runs))
    c = res.studies[0].cells[0]
    assert c.t_grok.censored and c.t_grok.value is None
    assert Reason.MEDIAN_CENSORED in c.notes


# -- the four gates --------------------------------------------------------------------------

def base_cells(**kw):
    return cells_from([(1.1, 2000, 9000), (1.2, 3000, 11000), (1.3, 4000, 13000)], **kw)


def test_gate_partial_generalization():
    bad = pd.concat([compressing_run(f"p{s}", 2000, 9000, acc_hi=0.93, rho=1.0, seed=s)
                     for s in range(3)])
    res = audit(pd.concat([bad, base_cells()]))
    c = res.studies[0].cell(1.0)
    assert Reason.BOUNDARY_PARTIAL_GENERALIZATION in c.gates and not c.passes
    assert all(res.studies[0].cell(v).passes for v in (1.1, 1.2, 1.3))


def test_gate_no_compression():
    flat = pd.concat([flat_run(f"f{s}", 2000, rho=1.0, seed=s) for s in range(3)])
    c = audit(pd.concat([flat, base_cells()])).studies[0].cell(1.0)
    assert Reason.BOUNDARY_NO_COMPRESSION in c.gates


def test_gate_high_floor_outlier():
    high = pd.concat([compressing_run(f"h{s}", 2000, 9000, peak=200, floor=50, rho=1.4, seed=s)
                      for s in range(3)])
    c = audit(pd.concat([base_cells(), high])).studies[0].cell(1.4)
    assert c.gates == (Reason.HIGH_FLOOR_OUTLIER,)


def test_gate_compression_not_established():
    # t_compress settles inside the final window W2 (last 10 %): censored for every seed
    late = pd.concat([compressing_run(f"l{s}", 2000, 37_000, rho=1.4, seed=s) for s in range(3)])
    c = audit(pd.concat([base_cells(), late])).studies[0].cell(1.4)
    assert Reason.COMPRESSION_NOT_ESTABLISHED in c.gates
    assert c.n_tc_censored == 3


def test_gated_cell_is_left_out_of_orderings():
    flat = pd.concat([flat_run(f"f{s}", 9000, rho=1.0, seed=s) for s in range(3)])
    st = audit(pd.concat([flat, base_cells()])).studies[0]
    assert st.ordering("t_grok").axis_values == (1.1, 1.2, 1.3)


# -- orderings ------------------------------------------------------------------------------------

def test_identified_monotone_ordering_with_kendall_bounds():
    st = audit(base_cells()).studies[0]
    o = st.ordering("t_grok")
    assert o.identified and o.shape == "monotone" and o.direction == 1
    assert (o.concordant, o.discordant, o.unidentified) == (3, 0, 0)
    assert o.tau_bounds == (1.0, 1.0)


def test_events_at_consecutive_logged_steps_are_ordered():
    st = audit(cells_from([(1.1, 2000, 9000), (1.2, 2100, 9100), (1.3, 2200, 9200)])).studies[0]
    assert st.ordering("t_grok").identified


def test_ordering_refused_too_few_cells():
    res = audit(cells_from([(1.1, 2000, 9000), (1.2, 3000, 11000)]))
    o = res.studies[0].ordering("t_grok")
    assert not o.identified and o.sub_reason == Reason.TOO_FEW_CELLS
    assert o.shape is None and o.direction == 0


def test_ordering_refused_ties_within_resolution():
    o = audit(cells_from([(1.1, 2000, 9000), (1.2, 2000, 11000), (1.3, 2000, 13000)])
              ).studies[0].ordering("t_grok")
    assert not o.identified and o.sub_reason == Reason.TIES_WITHIN_RESOLUTION
    assert o.unidentified == 3


def test_ordering_refused_censored_intervals_overlap():
    # two seeds per cell, one settles inside W2 (censored): each cell's median is censored
    frames = []
    for rho, ts in ((1.1, 9000), (1.2, 11000), (1.3, 13000)):
        frames.append(compressing_run(f"{rho}a", 2000, ts, rho=rho, seed=0))
        frames.append(compressing_run(f"{rho}b", 2000, 37_000, rho=rho, seed=1))
    o = audit(pd.concat(frames)).studies[0].ordering("t_compress")
    assert not o.identified and o.sub_reason == Reason.CENSORED_INTERVALS_OVERLAP


def test_identified_requires_c_minus_d_beyond_u():
    # t_grok: 2000, 2000, 3000, 4000 -> C=5, D=0, U=1: identified (5 > 1)
    o = audit(cells_from([(1.1, 2000, 9000), (1.2, 2000, 10000), (1.3, 3000, 11000),
                          (1.4, 4000, 12000)])).studies[0].ordering("t_grok")
    assert (o.concordant, o.discordant, o.unidentified) == (5, 0, 1)
    assert o.identified and o.tau_bounds == pytest.approx((4 / 6, 1.0))


# -- clock verdicts -------------------------------------------------------------------------------

def verdict(spec, **kw):
    return audit(cells_from(spec, **kw)).studies[0].verdict


def test_two_clocks():
    assert verdict([(1, 1000, 16000), (2, 2000, 14000), (3, 3000, 12000), (4, 4000, 10000)]
                   ) == Reason.TWO_CLOCKS


def test_one_clock_large_lag():
    assert verdict([(1, 1000, 10000), (2, 2000, 12000), (3, 3000, 14000), (4, 4000, 16000)]
                   ) == Reason.ONE_CLOCK_LARGE_LAG


def test_partially_separated():
    # t_compress 10k, 13k, 11k, 14k, 12k: C=7, D=3 -> tau 0.4, identified but weak
    spec = [(1, 1000, 10000), (2, 2000, 13000), (3, 3000, 11000), (4, 4000, 14000),
            (5, 5000, 12000)]
    st = audit(cells_from(spec)).studies[0]
    o = st.ordering("t_compress")
    assert o.identified and o.shape == "weak"
    assert st.verdict == Reason.PARTIALLY_SEPARATED


def test_large_lag_ordering_undetermined():
    assert verdict([(1, 1000, 12000), (2, 2000, 12000), (3, 3000, 12000)]
                   ) == Reason.LARGE_LAG_ORDERING_UNDETERMINED


def test_single_clock_small_lag():
    # lag 1 000 + one cadence at t_grok >= 4 000: rel_lag <= 0.28
    assert verdict([(1, 4000, 5000), (2, 6000, 7000), (3, 8000, 9000)]
                   ) == Reason.SINGLE_CLOCK_SMALL_LAG


def test_inconclusive_censoring_is_critical():
    frames = []
    for rho in (1.1, 1.2, 1.3):
        for s, ts in enumerate((9000, 9000, 37_000, 37_000)):
            frames.append(compressing_run(f"{rho}_{s}", 2000, ts, rho=rho, seed=s))
    res = audit(pd.concat(frames))
    assert res.studies[0].verdict == Reason.INCONCLUSIVE_CENSORING
    f = next(f for f in res.findings if f.code == Reason.INCONCLUSIVE_CENSORING)
    assert f.severity == Severity.CRITICAL and res.exit_code == 1
    assert f.evidence["censored_fraction"] == pytest.approx(0.5)


def test_low_power_gives_no_clock_verdict():
    res = audit(cells_from([(1.1, 2000, 9000)]))
    assert res.studies[0].verdict is None
    assert Reason.LOW_POWER_DESCRIPTIVE in res.codes


# -- snapshot hazards ------------------------------------------------------------------------------

def test_snapshot_transient_is_critical_per_cell():
    res = audit(base_cells())
    tr = [f for f in res.findings if f.code == Reason.SNAPSHOT_TRANSIENT]
    assert sorted(f.cell for f in tr) == [1.1, 1.2, 1.3]
    assert all(f.severity == Severity.CRITICAL for f in tr)
    assert tr[0].evidence["median_inflation"] == pytest.approx(25 / 10)


def test_snapshot_converged_is_not_a_hazard():
    # compression finishes before grok: the at-grok value is the floor
    df = cells_from([(1.1, 12000, 2000), (1.2, 13000, 3000), (1.3, 14000, 4000)])
    res = audit(df)
    assert Reason.SNAPSHOT_TRANSIENT not in res.codes
    assert all(r.snapshot == "converged" for r in res.studies[0].runs)


def test_snapshot_reverses_ordering():
    frames = []
    for rho, peak, floor in ((1, 30, 16), (2, 35, 14), (3, 40, 12), (4, 45, 10)):
        for s in range(3):
            frames.append(compressing_run(f"{rho}_{s}", 2000 + 1000 * rho, 12000, peak=peak,
                                          mid=peak, floor=floor, rho=rho, seed=s))
    res = audit(pd.concat(frames))
    st = res.studies[0]
    assert st.ordering("m_grok").direction == 1 and st.ordering("floor").direction == -1
    assert Reason.SNAPSHOT_REVERSES_ORDERING in res.codes


def test_snapshot_hides_boundary():
    frames = [flat_run(f"b{s}", 2000, level=40.0, rho=1.0, seed=s) for s in range(3)]
    for rho, tg in ((1.1, 2000), (1.2, 3000), (1.3, 4000)):
        frames += [compressing_run(f"{rho}_{s}", tg, 12000, peak=40, mid=40, rho=rho, seed=s)
                   for s in range(3)]
    res = audit(pd.concat(frames))
    f = next(f for f in res.findings if f.code == Reason.SNAPSHOT_HIDES_BOUNDARY)
    assert f.cell == 1.0 and f.evidence["neighbour"] == 1.1
    assert f.severity == Severity.CRITICAL


def _hidden_boundary_study(boundary_level: float, neighbour_grok: float) -> pd.DataFrame:
    """A gated cell flat at ``boundary_level`` beside passing cells that read
    ``neighbour_grok`` at grok and compress to 12."""
    frames = [flat_run(f"b{s}", 2000, level=boundary_level, rho=1.0, seed=s) for s in range(3)]
    for rho, tg in ((1.1, 2000), (1.2, 3000), (1.3, 4000)):
        frames += [compressing_run(f"{rho}_{s}", tg, 12000, peak=neighbour_grok,
                                   mid=neighbour_grok, floor=12.0, rho=rho, seed=s)
                   for s in range(3)]
    return pd.concat(frames)


def test_snapshot_hides_boundary_judges_at_grok_values_on_their_own_scale():
    # issue 11: 46.1 and 46.7 at grok are 1.4 % apart; the neighbour's floor band (5 % of 12 =
    # 0.6) is not the scale to compare them on, 5 % of 46.7 = 2.335 is
    res = audit(_hidden_boundary_study(46.1, 46.7))
    f = next(f for f in res.findings if f.code == Reason.SNAPSHOT_HIDES_BOUNDARY)
    assert f.cell == 1.0 and f.evidence["neighbour"] == 1.1
    assert f.evidence["m_grok_tolerance"] == pytest.approx(0.05 * 46.7)
    assert f.evidence["delta"] == pytest.approx(0.6)
    # 10 % apart at grok: not alike
    res = audit(_hidden_boundary_study(42.0, 46.7))
    assert Reason.SNAPSHOT_HIDES_BOUNDARY not in res.codes


def test_snapshot_hides_boundary_compares_floors_on_the_floor_band():
    # a cell gated for partial generalization that reads like its neighbour at grok and ends
    # within the neighbour's floor band (|12.3 - 12| <= 0.6) hides nothing
    frames = [compressing_run(f"p{s}", 2000, 12000, peak=46.7, mid=46.7, floor=12.3,
                              acc_hi=0.93, rho=1.0, seed=s) for s in range(3)]
    for rho, tg in ((1.1, 2000), (1.2, 3000), (1.3, 4000)):
        frames += [compressing_run(f"{rho}_{s}", tg, 12000, peak=46.7, mid=46.7, floor=12.0,
                                   rho=rho, seed=s) for s in range(3)]
    res = audit(pd.concat(frames))
    assert not res.studies[0].cells[0].passes
    assert Reason.SNAPSHOT_HIDES_BOUNDARY not in res.codes


def test_shared_endpoint_is_informational():
    res = audit(base_cells())
    f = next(f for f in res.findings if f.code == Reason.SHARED_ENDPOINT)
    assert f.severity == Severity.INFO and f.evidence["floor_cv"] == pytest.approx(0.0)


def test_floor_unstable_on_a_passing_cell_is_critical():
    import numpy as np
    from helpers.core_builders import grid, piecewise, run_frame, step_acc

    s = grid()
    frames = [base_cells()]
    for k in range(3):  # two stable seeds and one with a late second collapse
        m = piecewise(s, [(0, 40), (2000, 25), (9000, 10)])
        if k == 2:
            m = piecewise(s, [(0, 40), (2000, 25), (9000, 12), (37_000, 10)])
        frames.append(run_frame(f"u{k}", s, step_acc(s, 2000), m, rho=1.4, seed=k))
    res = audit(pd.concat(frames))
    f = next(f for f in res.findings if f.code == Reason.FLOOR_UNSTABLE and f.cell == 1.4)
    assert f.severity == Severity.CRITICAL and f.runs == ("u2",)
    assert np.isfinite(f.evidence["n_runs"])


def test_fail_on_changes_the_exit_code():
    df = base_cells()
    assert audit(df).exit_code == 1
    assert audit(df, fail_on=("none",)).exit_code == 0
    assert audit(df, fail_on=("SHARED_ENDPOINT",)).exit_code == 1
    assert audit(df, fail_on=("REBOUND",)).exit_code == 0


def test_several_metrics_and_studies_at_once():
    a = cells_from([(1.1, 2000, 9000), (1.2, 3000, 11000), (1.3, 4000, 13000)], arch="mlp")
    b = cells_from([(1.1, 2000, 13000), (1.2, 3000, 11000), (1.3, 4000, 9000)], arch="tf")
    df = pd.concat([a, b.assign(run=b["run"] + "_tf")])
    df["emb_pr"] = df["emb_erank"] * 2
    res = audit(df, cell=("arch",), metrics=("emb_erank", "emb_pr"))
    assert len(res.studies) == 4
    assert res.study("emb_erank", arch="mlp").ordering("t_compress").direction == 1
    assert res.study("emb_pr", arch="tf").ordering("t_compress").direction == -1
