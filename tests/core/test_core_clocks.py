"""Per-run definitions of AUDIT_SPEC §1 on trajectories whose answer is known by construction."""

import grokaudit
import numpy as np
import pandas as pd
import pytest
import scipy.stats as st
from grokaudit import Reason
from grokaudit.clocks import theil_sen
from helpers.core_builders import CAD, compressing_run, grid, piecewise, run_frame, step_acc


def one_run(df: pd.DataFrame, **cfg):
    cfg.setdefault("by", "rho")
    df = df.assign(rho=1.0) if "rho" not in df else df
    res = grokaudit.audit_table(df, **cfg)
    (run,) = res.studies[0].runs
    return run, res


def test_t_grok_is_first_logged_step_with_its_cadence_interval():
    s = grid(10_000, 100)
    df = run_frame("a", s, step_acc(s, 2350), piecewise(s, [(0, 40), (2350, 20), (5000, 10)]))
    run, _ = one_run(df)
    assert run.t_grok.value == 2400
    assert (run.t_grok.lower, run.t_grok.upper, run.t_grok.censored) == (2300, 2400, False)


def test_t_grok_interval_follows_a_log_spaced_cadence():
    s = np.unique(np.round(np.geomspace(1, 50_000, 200)).astype(np.int64))
    true = 3000
    df = run_frame("a", s, step_acc(s, true), np.full(s.shape, 5.0))
    run, _ = one_run(df)
    k = int(np.argmax(s >= true))
    assert run.t_grok.value == s[k]
    assert run.t_grok.lower == s[k - 1]
    assert run.t_grok.lower < true <= run.t_grok.upper


def test_no_grok_is_right_censored_with_no_derived_quantities():
    s = grid(10_000)
    df = run_frame("a", s, step_acc(s, None), piecewise(s, [(0, 40), (3000, 10)]))
    run, _ = one_run(df)
    assert run.t_grok.censored and run.t_grok.value is None and run.t_grok.upper is None
    assert run.t_grok.lower == 10_000
    assert run.t_compress is None and run.lag is None
    assert run.frac_pre is None and run.inflation is None
    assert Reason.NO_GROK in run.reasons


def test_t_mem_from_train_acc():
    s = grid(10_000)
    df = run_frame("a", s, step_acc(s, 5000), np.full(s.shape, 5.0),
                   train_acc=step_acc(s, 700, lo=0.2))
    run, _ = one_run(df)
    assert run.t_mem.value == 700 and run.t_mem.lower == 600


def test_grok_not_sustained_reports_the_step_it_fell():
    s = grid(10_000)
    acc = step_acc(s, 2000)
    acc[(s >= 3000) & (s < 3300)] = 0.5  # three consecutive points below threshold
    df = run_frame("a", s, acc, np.full(s.shape, 5.0))
    run, _ = one_run(df)
    assert not run.grok_sustained and run.grok_fell_at == 3000
    assert Reason.GROK_NOT_SUSTAINED in run.reasons
    acc2 = step_acc(s, 2000)
    acc2[(s >= 3000) & (s < 3200)] = 0.5  # only two: still sustained
    run2, _ = one_run(run_frame("a", s, acc2, np.full(s.shape, 5.0)))
    assert run2.grok_sustained


def test_fully_generalized_uses_the_final_window_median():
    s = grid(10_000)
    run, _ = one_run(run_frame("a", s, step_acc(s, 2000, hi=0.95), np.full(s.shape, 5.0)))
    assert not run.fully_generalized and Reason.NOT_FULLY_GENERALIZED in run.reasons
    assert run.final_test_acc == pytest.approx(0.95)


def test_stable_floor_and_settle_time():
    df = compressing_run("a", 2000, 8000)
    run, _ = one_run(df)
    assert run.floor == 10 and run.delta == pytest.approx(0.5)
    assert run.floor_stability == "stable"
    assert run.t_compress.value == 8000 + CAD
    assert (run.t_compress.lower, run.t_compress.upper) == (8000, 8000 + CAD)
    assert run.m_grok == 25  # the metric point at t_grok is already the mid level
    assert run.inflation == pytest.approx(2.5) and run.snapshot == "transient"
    # lag by interval arithmetic on (1900, 2000] and (8000, 8100]
    assert run.lag.value == 8100 - 2000
    assert (run.lag.lower, run.lag.upper) == (8000 - 2000, 8100 - 1900)
    assert run.rel_lag == pytest.approx(6100 / 2000)
    # frac_pre = (m_start - m_grok) / (m_start - F)
    assert run.frac_pre == pytest.approx((40 - 25) / (40 - 10))


def test_slow_drift_is_unstable():
    s = grid(40_000)
    m = np.where(s < 4000, 40.0, 20.0 - 0.00025 * s)  # keeps falling: 0.5 per 2000 steps
    df = run_frame("a", s, step_acc(s, 3000), m)
    run, _ = one_run(df)
    assert run.floor_stability == "unstable"
    lo, hi = run.drift_interval
    assert hi < -run.delta  # the whole drift interval lies below -delta
    assert run.t_compress.censored
    assert Reason.FLOOR_UNSTABLE in run.reasons
    assert run.compression == "unknown" and run.inflation_is_lower_bound


def test_late_second_collapse_is_unstable_and_censors_t_compress():
    s = grid(40_000)
    m = piecewise(s, [(0, 40), (3000, 20), (37_000, 10)])  # second drop inside W2
    run, _ = one_run(run_frame("a", s, step_acc(s, 3000), m))
    assert run.floor == 10 and run.w1_median == 20
    assert run.floor_stability == "unstable"
    assert run.t_compress.censored and run.t_compress.value is None
    assert Reason.COMPRESSION_UNKNOWN in run.reasons


def test_noise_above_tolerance_is_indeterminate_and_noisy():
    s = grid(40_000)
    # 10, 10.6, 9.4 repeating: the MAD (0.6) exceeds delta/2 (0.25); every window's median is 10
    m = np.where(s < 5000, 40.0, 10.0 + np.tile([0.0, 0.6, -0.6], s.size)[: s.size])
    run, _ = one_run(run_frame("a", s, step_acc(s, 3000), m))
    assert run.floor_stability == "indeterminate"
    assert Reason.FLOOR_NOISY in run.reasons
    assert run.t_compress.censored


def test_too_few_points_in_the_final_windows_means_no_floor():
    s = np.array([0, 100, 200, 300, 400, 500, 20_000])
    run, _ = one_run(run_frame("a", s, step_acc(s, 200), np.full(s.shape, 5.0)))
    assert run.floor is None and run.floor_stability == "none"
    assert Reason.FLOOR_TOO_FEW_POINTS in run.reasons and run.t_compress is None


def test_final_window_falls_back_to_the_last_five_points():
    # log-spaced tail: fewer than 5 points in the last 10 % but 5 within the last 25 %
    s = np.concatenate([np.arange(0, 30_000, 100), [31_000, 33_000, 35_000, 37_000, 39_000,
                                                   40_000]])
    m = piecewise(s, [(0, 40), (2000, 20), (20_000, 10)])
    run, _ = one_run(run_frame("a", s, step_acc(s, 2000), m))
    assert run.floor == 10


def test_settle_versus_crossing():
    s = grid(20_000)
    m = piecewise(s, [(0, 40), (2000, 25), (3000, 10), (4000, 25), (6000, 10)])
    df = run_frame("a", s, step_acc(s, 2000), m)
    settle, _ = one_run(df)
    crossing, _ = one_run(df, rule="crossing")
    assert settle.t_compress.value == 6100  # after the last exit from the band
    # first logged step >= t_grok with m <= F + 0.1 (m_grok - F) = 11.5
    assert crossing.t_compress.value == 3000


def test_rebound_reports_undershoot_and_final_settling():
    s = grid(20_000)
    m = piecewise(s, [(0, 40), (2000, 25), (4000, 7), (5000, 10)])
    run, _ = one_run(run_frame("a", s, step_acc(s, 2000), m))
    assert Reason.REBOUND in run.reasons
    assert run.undershoot == pytest.approx(3.0)
    assert run.t_compress.value == 5100  # never the first dip at 4000


def test_compression_before_grok_keeps_the_negative_lag():
    s = grid(40_000)
    m = piecewise(s, [(0, 40), (1000, 10)])
    run, _ = one_run(run_frame("a", s, step_acc(s, 5000), m))
    assert run.t_compress.value == 1100
    assert Reason.COMPRESSION_BEFORE_GROK in run.reasons
    assert run.lag.value == 1100 - 5000  # negative, not clipped to 0
    assert run.snapshot == "converged"


def test_no_compression_needs_a_stable_floor():
    s = grid(40_000)
    run, _ = one_run(run_frame("a", s, step_acc(s, 3000), np.full(s.shape, 40.0)))
    assert Reason.NO_COMPRESSION in run.reasons and run.compression == "none"
    assert run.t_compress is None or run.t_compress.value is None


@pytest.mark.parametrize("shift", [0.0, -60.0, -1000.0])
def test_a_flat_metric_below_zero_never_compresses(shift):
    # a found defect: below 0 the relative rule (drop < min_rel_drop · peak) never fired, and
    # a flat run got t_compress = 0 and passed its cell's gates
    s = grid(40_000)
    flat, _ = one_run(run_frame("a", s, step_acc(s, 3000), np.full(s.shape, 40.0 + shift)))
    assert Reason.NO_COMPRESSION in flat.reasons and flat.compression == "none"
    assert flat.t_compress is None or flat.t_compress.value is None


@pytest.mark.parametrize("levels", [(40, 25, 10), (-20, -35, -50), (-40, -25, -10)])
def test_the_relative_drop_is_a_share_of_the_peaks_magnitude(levels):
    # from 40 to 10, or from −20 to −50: a fall of 0.75 and 1.5 times |peak|, compressed;
    # from −40 up to −10 is no fall at all
    s = grid(40_000)
    a, b, c = levels
    run, _ = one_run(run_frame("b", s, step_acc(s, 3000),
                               piecewise(s, [(0, a), (3000, b), (9000, c)])))
    if c < a:
        assert run.compression == "compressed" and run.t_compress.value == 9100
    else:
        assert run.compression == "none" and Reason.NO_COMPRESSION in run.reasons


def test_metric_not_at_grok_when_the_metric_stopped_before():
    s = grid(40_000)
    m = np.where(s <= 1000, 40.0, np.nan)
    m[-6:] = 10.0  # the metric comes back only at the end
    run, _ = one_run(run_frame("a", s, step_acc(s, 5000), m))
    assert run.m_grok is None and Reason.METRIC_NOT_AT_GROK in run.reasons


def test_theil_sen_matches_scipy():
    rng = np.random.default_rng(3)
    for n in (5, 12, 40):
        x = np.sort(rng.uniform(0, 100, n))
        y = 0.2 * x + rng.normal(size=n)
        slope, lo, hi = theil_sen(x[None], y[None], 0.90)
        ref = st.theilslopes(y, x, 0.90)
        assert slope[0] == pytest.approx(ref.slope)
        assert (lo[0], hi[0]) == pytest.approx((ref.low_slope, ref.high_slope))


@pytest.mark.parametrize("rows_at_once", [1, 2, 5])
def test_theil_sen_taken_a_few_rows_at_a_time_is_the_whole_block_s(monkeypatch, rows_at_once):
    # a block whose windows hold thousands of bins is cut into rows: the same answers, and the
    # pairs' matrices bounded (12 rows of 4 096 bins: 2.6 GiB at once)
    import grokaudit.clocks as clocks

    rng = np.random.default_rng(3)
    n = 30
    x = np.tile(np.arange(n, dtype=float), (7, 1))
    y = 0.3 * x + rng.normal(size=x.shape)
    for r, k in enumerate((30, 12, 2, 1, 30, 29, 30)):
        x[r, k:] = y[r, k:] = np.nan
    whole = theil_sen(x, y, 0.90)
    monkeypatch.setattr(clocks, "_PAIR_ELEMENTS", rows_at_once * n * (n - 1) // 2)
    calls: list[int] = []
    real = clocks.theil_sen

    def spy(a: np.ndarray, b: np.ndarray, level: float):  # type: ignore[no-untyped-def]
        calls.append(a.shape[0])
        return real(a, b, level)

    monkeypatch.setattr(clocks, "theil_sen", spy)
    cut = clocks.theil_sen(x, y, 0.90)
    assert max(calls[1:]) == rows_at_once  # the rows really were taken a few at a time
    assert all(np.array_equal(w, c, equal_nan=True) for w, c in zip(whole, cut))


def test_theil_sen_of_a_block_is_each_rows_own():
    # rows with different point counts (NaN padding) take the grouped path, equal rows the
    # one-group path; each row's slope and interval are its own, and match scipy
    rng = np.random.default_rng(7)
    n = 30
    x = np.tile(np.arange(n, dtype=float), (6, 1))
    y = 0.3 * x + rng.normal(size=x.shape)
    for r, k in enumerate((30, 30, 12, 2, 1, 30)):
        x[r, k:] = y[r, k:] = np.nan
    whole = theil_sen(x, y, 0.90)
    for r in range(6):
        alone = theil_sen(x[r:r + 1], y[r:r + 1], 0.90)
        assert all(np.array_equal(w[r:r + 1], a, equal_nan=True) for w, a in zip(whole, alone))
    ok = ~np.isnan(x[2])
    ref = st.theilslopes(y[2][ok], x[2][ok], 0.90)
    assert (whole[0][2], whole[1][2], whole[2][2]) == pytest.approx(
        (ref.slope, ref.low_slope, ref.high_slope))
    assert np.isnan(whole[0][4])  # one point: no slope
    same = theil_sen(x[[0, 1, 5]], y[[0, 1, 5]], 0.90)  # one (pairs, points) group
    assert all(np.array_equal(s_, w[[0, 1, 5]]) for s_, w in zip(same, whole))


def test_binned_slope_keeps_a_long_window_linear():
    # 2 000 points in W2: the slope uses at most 64 bin medians and still sees the drift
    s = np.arange(0, 200_001, 10)
    m = np.where(s < 1000, 40.0, 20.0 - 0.00005 * s)
    run, _ = one_run(run_frame("a", s, step_acc(s, 500), m))
    assert run.drift == pytest.approx(-0.00005 * 20_000, rel=0.05)


def test_equal_count_bin_medians_match_the_general_path():
    from grokaudit.clocks import _bin_medians

    rng = np.random.default_rng(1)
    X = np.sort(rng.uniform(0, 1e4, (4, 500)), axis=1)
    Y = rng.normal(size=(4, 500))
    fast = _bin_medians(X, Y, np.full(4, 500), 64)
    # a fifth, shorter row forces the general (lexsort) path for every row
    X2 = np.vstack([X, np.pad(X[:1, :300], ((0, 0), (0, 200)), constant_values=np.nan)])
    Y2 = np.vstack([Y, np.pad(Y[:1, :300], ((0, 0), (0, 200)), constant_values=np.nan)])
    general = _bin_medians(X2, Y2, np.array([500] * 4 + [300]), 64)
    np.testing.assert_allclose(fast[0], general[0][:4])
    np.testing.assert_allclose(fast[1], general[1][:4])


def test_packed_fast_path_equals_the_scatter_path():
    from grokaudit.clocks import pack
    from grokaudit.schema import build_log_table

    df = compressing_run("a", 2000, 8000, rho=1.0)
    df2 = pd.concat([df, compressing_run("b", 3000, 9000, rho=1.0)])
    t = build_log_table(df2)
    fast = pack(t.series["emb_erank"], t)
    holes = t.series["emb_erank"].copy()
    holes[-1] = np.nan  # one missing value forces the scatter path
    slow = pack(holes, t)
    np.testing.assert_array_equal(fast.values[0], slow.values[0])
    assert slow.counts.tolist() == [fast.counts[0], fast.counts[1] - 1]


def test_downsampled_runs_get_intervals_one_point_wider():
    import json

    import pyarrow as pa

    df = compressing_run("a", 2000, 8000, rho=1.0)
    plain, _ = one_run(df)
    t = pa.Table.from_pandas(df, preserve_index=False)
    prov = {"downsampled_runs": ["a"], "findings": [
        {"code": "SOURCE_DOWNSAMPLED", "run": "a", "detail": "bucketed panel export"}]}
    t = t.replace_schema_metadata({b"grokaudit": json.dumps(prov).encode()})
    res = grokaudit.audit_table(t, by="rho")
    wide = res.studies[0].runs[0]
    assert wide.t_grok.value == plain.t_grok.value == 2000
    assert (wide.t_grok.lower, wide.t_grok.upper) == (1800, 2100)
    assert (wide.t_compress.lower, wide.t_compress.upper) == (7900, 8200)
    assert Reason.SOURCE_DOWNSAMPLED in res.codes


# -- metric values near the float range (hostile logs) ---------------------------------------

def test_mean2_is_the_plain_midpoint_and_never_overflows():
    from grokaudit.clocks import mean2

    rng = np.random.default_rng(3)
    a, b = rng.normal(0, 1e3, 1000), rng.normal(0, 1e3, 1000)
    tiny = np.array([5e-324, 1e-310, -5e-324])
    for x, y in ((a, b), (tiny, tiny[::-1])):
        assert np.array_equal(mean2(x, y), 0.5 * (x + y))  # bit for bit
    big = np.array([1.7e308, -1.7e308, 1.7e308])
    with np.errstate(all="raise"):
        out = mean2(big, big[::-1] * np.array([1, -1, 1]))
    assert np.isfinite(out).all() and out[0] == 1.7e308


@pytest.mark.parametrize("scale", [1.7e308, -1.7e308])
def test_metric_near_the_float_range_gives_finite_numbers_and_no_warning(scale):
    import warnings

    s = grid(20_000)
    m = piecewise(s, [(0, 1.0), (2000, 0.9), (6000, 0.5)]) * scale
    m[1] = 0.95 * scale  # the second point's trailing median averages two huge values
    df = run_frame("a", s, step_acc(s, 2000), m)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run, res = one_run(df)
        res.to_json()
    assert run.m_grok == 0.9 * scale
    if scale > 0:
        assert run.floor == 0.5 * scale and np.isfinite(res.studies[0].cells[0].floor)
    else:  # from −1.7e308 up to −0.85e308: it only rose, its end is a plateau, not a floor
        assert run.floor is None and Reason.NO_COMPRESSION in run.reasons
        assert res.studies[0].cells[0].floor is None


def test_run_ids_differing_by_a_trailing_nul_stay_distinct():
    frames = [compressing_run(name, 2000, 9000, rho=rho, seed=k)
              for k, (name, rho) in enumerate([("w1.0", 1.0), ("w1.0\x00", 1.0),
                                               ("w2.0", 2.0), ("w2.0\x00\x00", 2.0)])]
    res = grokaudit.audit_table(pd.concat(frames), by="rho")
    runs = [r.run for r in res.studies[0].runs]
    assert runs == ["w1.0", "w1.0\x00", "w2.0", "w2.0\x00\x00"]
    assert res.studies[0].cells[0].runs == ("w1.0", "w1.0\x00")
    import json

    doc = json.loads(res.to_json())["studies"][0]
    assert [r["run"] for r in doc["runs"]] == runs


def _gapped_sweep(steps: np.ndarray | None = None) -> pd.DataFrame:
    """Evaluations every 10 steps up to 1000, then every 50 from 6000: each run groks near
    1600 and compresses near 3000, both inside the gap, first seen at 6000 and 6050."""
    if steps is None:
        steps = np.r_[np.arange(0, 1000, 10), np.arange(6000, 10001, 50)]
    s = steps.astype(float)
    frames = []
    for i, wd in enumerate((0.1, 0.3, 1.0)):
        for seed in range(3):
            tg, tc = 1500 + 100 * i + 20 * seed, 3000 + 200 * i
            frames.append(pd.DataFrame({
                "run": f"wd{wd}_s{seed}", "step": steps, "wd": wd, "seed": seed,
                "train_acc": np.clip(1 / (1 + np.exp(-(s - 200) / 30)), 0, 1),
                "test_acc": 1 / (1 + np.exp(-(s - tg) / 40)),
                "emb_erank": 20 + 30 / (1 + np.exp((s - tc) / 80))}))
    return pd.concat(frames, ignore_index=True)


def test_a_lag_inside_an_evaluation_gap_is_not_a_small_lag() -> None:
    """The first-seen steps (6000, 6050) gave lag 50, rel_lag 0.0083 and the verdict
    SINGLE_CLOCK_SMALL_LAG, where the log only says t_grok ∈ (990, 6000] and the lag
    anywhere in (0, 5060]: rel_lag from 0 to about 5."""
    r = grokaudit.audit_table(_gapped_sweep(), by="wd", metrics=["emb_erank"])
    verdicts = {f.code for f in r.findings if f.scope == "study"}
    assert Reason.SINGLE_CLOCK_SMALL_LAG not in verdicts
    assert Reason.INCONCLUSIVE_CENSORING in verdicts
    for c in r.studies[0].cells:
        assert c.rel_lag is None
    # the same sweep evaluated every 10 steps throughout: the lag is measured, a value
    dense = grokaudit.audit_table(_gapped_sweep(np.arange(0, 10001, 10)), by="wd",
                                  metrics=["emb_erank"])
    assert all(c.rel_lag is not None and c.rel_lag > 0.5 for c in dense.studies[0].cells)


def test_a_metric_that_stops_before_the_run_ends_has_the_floor_of_its_own_points() -> None:
    """One run's metric is NaN after step 4000 (its accuracy logged to 5000): W1 and the drift
    were measured from the run's last step, W1 stretched back over the compression and the
    floor read as unstable (a critical FLOOR_UNSTABLE on its cell): W1 now has W2's own step
    length, from the metric's last point."""
    steps = np.arange(0, 5001, 50)
    s = steps.astype(float)
    frames = []
    for i, wd in enumerate((0.1, 0.3)):
        for seed in range(3):
            rng = np.random.default_rng(10 * i + seed)
            frames.append(pd.DataFrame({
                "run": f"wd{wd}_s{seed}", "step": steps, "wd": wd, "seed": seed,
                "train_acc": np.clip(1 / (1 + np.exp(-(s - 200) / 30)), 0, 1),
                "test_acc": 1 / (1 + np.exp(-(s - 1500 - 200 * i) / 40)),
                "emb_erank": 20 + 30 / (1 + np.exp((s - 3000) / 80))
                + rng.normal(0, 0.05, s.size)}))
    df = pd.concat(frames, ignore_index=True)
    nan_tail = df.copy()
    nan_tail.loc[(nan_tail["run"] == "wd0.1_s0") & (nan_tail["step"] > 4000), "emb_erank"] = np.nan
    a = grokaudit.audit_table(nan_tail, by="wd", metrics=["emb_erank"])
    ra = next(r for r in a.studies[0].runs if r.run == "wd0.1_s0")
    assert ra.floor_stability == "stable"
    assert Reason.FLOOR_UNSTABLE not in a.codes


def test_a_run_that_did_not_compress_is_never_a_transient():
    # issue 41: 22.4 at grok falling to 17.1 (−24 %, under min_rel_drop 0.25) was both
    # NO_COMPRESSION and a critical SNAPSHOT_TRANSIENT ×1.31 (transient_threshold 1.2)
    s = grid(40_000)
    run, res = one_run(run_frame("a", s, step_acc(s, 3000),
                                 piecewise(s, [(0, 22.4), (3000, 22.4), (9000, 17.1)])))
    assert Reason.NO_COMPRESSION in run.reasons
    assert run.inflation is not None and run.inflation > 1.2  # the ratio is still reported
    assert Reason.SNAPSHOT_TRANSIENT not in run.reasons
    assert Reason.SNAPSHOT_TRANSIENT not in {f.code for f in res.findings}


@pytest.mark.parametrize("after_top", ["plateau", "dip_before", "falls"])
def test_a_metric_that_rose_compressed_only_if_it_fell_after_its_top(after_top):
    """A metric that rose from its first value (10 → 40) and stayed at its top did not
    compress (NO_COMPRESSION, and its plateau is no floor: no floor stability), even when it dipped (to 2) before it
    rose; one that rose and then fell well below its top (to 5) compressed. Only a fall after
    the top tells them apart."""
    s = grid(40_000)
    levels = [(0, 10.0)] + ([(500, 2.0), (1000, 10.0)] if after_top == "dip_before" else []) \
        + [(2000, 40.0)] + ([(9000, 5.0)] if after_top == "falls" else [])
    run, _ = one_run(run_frame("a", s, step_acc(s, 3000), piecewise(s, levels)))
    if after_top != "falls":
        assert Reason.NO_COMPRESSION in run.reasons and run.compression == "none"
        assert run.floor_stability == "none"  # a plateau it rose to is no floor
    else:
        assert Reason.NO_COMPRESSION not in run.reasons and run.compression == "compressed"
        assert run.t_compress.value is not None and run.t_compress.value > 9000 - 2 * CAD


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
@pytest.mark.parametrize("layout", ["c", "view", "empty"])
def test_take_by_flat_position_is_the_per_row_definition(dtype, layout):
    """``_take`` gathers by flat position in a C-ordered matrix: each row's entry
    ``M[r, idx[r]]`` as float64, ``fill`` where the index is −1 or past the row's end, for
    in-range and out-of-range indices, integer and float matrices, views and empty rows."""
    from grokaudit.clocks import _take

    rng = np.random.default_rng(7)
    for trial in range(30):
        R, K = int(rng.integers(1, 40)), int(rng.integers(1, 12))
        if layout == "empty":
            K = 0
        base = (rng.normal(size=(R, K + 3)) * 1e6).astype(dtype)
        M = base[:, 1:K + 1] if layout == "view" else np.ascontiguousarray(base[:, :K])
        # every third trial all in range (the one-gather path), else some out on both sides
        lo, hi = (0, K) if trial % 3 == 0 and K else (-1, K + 2)
        idx = rng.integers(lo, max(hi, lo + 1), size=R)
        fill = [np.nan, 0.0, -7.5][trial % 3]
        got = _take(M, idx, fill=fill)
        want = np.array([float(M[r, i]) if 0 <= i < K else fill for r, i in enumerate(idx)])
        assert got.dtype == np.float64 and got.shape == (R,)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op_name", ["GE", "LT", "LE"])
def test_counts_on_a_shared_grid_are_the_counts_of_every_row(op_name):
    """Where every run of a block is logged at one grid of steps, a count of the steps past a
    threshold is a binary search in the grid: the same counts as comparing every step, for
    thresholds on a step, between steps, outside the grid, infinite and NaN, on grids with
    repeated float64 values (integers beyond 2**53)."""
    from grokaudit import clockloops
    from grokaudit.clocks import Packed, _count

    op = getattr(clockloops, op_name)
    rng = np.random.default_rng(11)
    grids = [np.array([0.0, 10.0, 20.0, 35.0, 50.0]), np.array([3.0]),
             np.array([2.0**53, 2.0**53, 2.0**53 + 2, 2.0**60]),
             np.cumsum(rng.integers(1, 9, size=40)).astype(float)]
    for g in grids:
        R = int(rng.integers(1, 30))
        S = np.tile(g, (R, 1))
        P = Packed(rng.normal(size=S.shape), S, np.full(R, g.size, dtype=np.int64))
        assert P.grid is not None
        np.testing.assert_array_equal(P.grid, g)
        picks = np.concatenate([g, g + 0.5, g - 0.5, [-np.inf, np.inf, np.nan, g[0] - 1e9]])
        t = rng.choice(picks, size=R)
        with np.errstate(invalid="ignore"):
            want = {clockloops.GE: (S >= t[:, None]), clockloops.LT: (S < t[:, None]),
                    clockloops.LE: (S <= t[:, None])}[op].sum(axis=1)
        got = _count(S, t, op, grid=P.grid)
        assert got.dtype == np.intp
        np.testing.assert_array_equal(got, want)


def test_a_block_has_a_grid_only_when_every_run_is_logged_at_it():
    """No grid where one run's steps differ, where a run has fewer points (NaN past its
    count), or where the shared row is not ascending."""
    from grokaudit.clocks import Packed

    g = np.array([0.0, 5.0, 10.0])
    S = np.tile(g, (3, 1))
    full = np.full(3, 3, dtype=np.int64)
    assert Packed(np.zeros((3, 3)), S, full).grid is not None
    moved = S.copy()
    moved[2, 1] = 6.0
    assert Packed(np.zeros((3, 3)), moved, full).grid is None
    short = S.copy()
    short[1, 2] = np.nan
    assert Packed(np.zeros((3, 3)), short, np.array([3, 2, 3])).grid is None
    down = np.tile(g[::-1], (3, 1))
    assert Packed(np.zeros((3, 3)), down, full).grid is None


def test_take_keeps_the_index_rules_of_a_plain_gather():
    """Unsigned indices with some out of range are read like signed ones; float and boolean
    indices are refused as numpy refuses them (never truncated or read as 0/1); a per-row
    fill is a fill per row."""
    from grokaudit.clocks import _take

    M = np.arange(12, dtype=np.float64).reshape(3, 4)
    got = _take(M, np.array([1, 9, 3], dtype=np.uint64))
    np.testing.assert_array_equal(got, [1.0, np.nan, 11.0])
    for bad in (np.array([0.5, 1.0, 2.0]), np.array([True, False, True])):
        with pytest.raises(IndexError):
            _take(M, bad)
    np.testing.assert_array_equal(_take(M, np.array([-1, 0, 7]), fill=np.array([5.0, 6.0, 7.0])),
                                  [5.0, 4.0, 7.0])


def _median_of(vals: np.ndarray) -> float:
    """The median by its definition: the middle value, or the mean of the two middle ones
    (``0.5·(a + b)``, ``a/2 + b/2`` where that sum leaves the float range); NaN when empty."""
    s = np.sort(vals[~np.isnan(vals)])
    n = s.size
    if n == 0:
        return np.nan
    a, b = s[(n - 1) // 2], s[n // 2]
    with np.errstate(over="ignore"):
        total = a + b
    return 0.5 * total if np.isfinite(total) or not (np.isfinite(a) and np.isfinite(b)) \
        else a / 2 + b / 2


@pytest.mark.parametrize("width", [2, 5, 8, 9, 40, 600, 1_000_000])
@pytest.mark.parametrize("budget", ["rows", "points"])
@pytest.mark.parametrize("values", ["normal", "huge"])
def test_a_wide_smoothing_is_each_point_s_median_of_those_before_it(monkeypatch, width,
                                                                   budget, values):
    """``--smooth`` other than 3: each point the median of itself and the ``width − 1`` points
    before it (fewer at the start of a run; NaN among them skipped), NaN beyond a run's
    points; two middle values near ±1.8e308 averaged without overflow. A width beyond the
    runs' length is read as their length (the same points), and the windows are taken a few
    rows (or a few points of a row) at a time: no window stack wider than the runs, none over
    the element budget, every window taken once."""
    from grokaudit import clocks

    rng = np.random.default_rng(width)
    R, K = 7, 8
    counts = np.array([8, 8, 1, 5, 0, 8, 3])
    V = np.full((R, K), np.nan)
    S = np.full((R, K), np.nan)
    for r, n in enumerate(counts):
        V[r, :n] = rng.normal(size=n) if values == "normal" else rng.choice([1.5e308, 1.0], n)
        S[r, :n] = np.arange(n) * 10.0
    V[1, 3] = np.nan  # a gap inside a run's points
    shapes: list[tuple[int, ...]] = []
    real = np.lib.stride_tricks.sliding_window_view

    def spy(a, window_shape, axis):
        got = real(a, window_shape, axis=axis)
        shapes.append(got.shape)
        return got

    monkeypatch.setattr(np.lib.stride_tricks, "sliding_window_view", spy)
    w = min(width, K)
    monkeypatch.setattr(clocks, "_SMOOTH_ELEMENTS", 2 * K * w if budget == "rows" else 3 * w)
    got = clocks.trailing_median(clocks.Packed(V, S, counts), width)
    want = np.full((R, K), np.nan)
    for r, n in enumerate(counts):
        for k in range(n):
            want[r, k] = _median_of(V[r, max(0, k - width + 1):k + 1])
    np.testing.assert_array_equal(got, want)
    assert shapes and all(ww <= K and rows * k * ww <= clocks._SMOOTH_ELEMENTS
                          for rows, k, ww in shapes)
    assert sum(rows * k for rows, k, _ in shapes) == R * K
