"""Every named case passes on the default profile, with its codes and numbers; the reference
profile fails the documented ones; and the cases follow a user's thresholds."""

import warnings

import grokaudit
import pytest
from grokaudit import Reason
from grokaudit.adversarial_suite import cases as C
from grokaudit.adversarial_suite import catalog
from grokaudit.adversarial_suite.generators import (
    acc_levels,
    band_margin,
    settle_step,
    with_levels,
)
from grokaudit.adversarial_suite.runner import audit_case, run_case, run_cases

pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.mark.parametrize("case", catalog.CASES, ids=lambda c: c.name)
def test_named_case_passes_on_the_default_profile(case):
    out = run_case(case)
    assert out.passed, "\n".join(out.mismatches)
    assert not out.notes  # the default config: every case follows every threshold
    label = case.expected().label
    assert out.got == label or label == "any-clock-verdict"


def test_at_least_the_issue_cases_are_named():
    required = {"clean_one_clock", "all_censored", "high_floor_boundary", "true_two_clocks",
                "single_cell", "non_monotone_rebound", "compression_before_grok", "ties",
                "noisy", "late_second_collapse", "slow_drift", "different_cadences",
                "coarse_cadence_tie", "half_seeds_censored", "snapshot_hides_boundary",
                "snapshot_reverses_ordering", "duplicate_axis_values", "grok_not_sustained",
                "accuracy_in_percent"}
    assert required <= set(catalog.CASES_BY_NAME)
    for case in catalog.CASES:
        assert case.title and case.why
        exp = case.expected()
        assert exp.error or exp.studies, case.name


DEFAULT = grokaudit.make_config()
HAND_WORKED = [
    (C._clean_specs, [(2800, 2700)] * 3 + [(3800, 3700)] * 3 + [(4800, 4700)] * 3),
    (C._two_clock_specs, [(7100, 7000)] * 3 + [(6100, 6000)] * 3 + [(5100, 5000)] * 3
     + [(4200, 4100)] * 3),
    (C._rebound_specs, [(4500, 4400)] * 3 + [(5500, 5400)] * 3 + [(6500, 6400)] * 3),
    (C._cadence_specs, [(4400, 4000)] * 2 + [(5600, 5200)] * 2 + [(6400, 6000)] * 2),
    (C._before_grok_specs, [(1600, 1500)] * 9),
]


@pytest.mark.parametrize("build, settles", HAND_WORKED, ids=lambda x: getattr(x, "__name__", ""))
def test_the_hand_worked_settling_steps_agree_with_the_plain_loop(build, settles):
    """The cases' pre-registered t_compress numbers, recomputed by the plain-loop oracle on
    the noise-free construction; and no logged value sits on a band edge."""
    specs = build(C.K(DEFAULT))
    assert [settle_step(s) for s in specs] == settles
    assert min(band_margin(s) for s in specs) > 0.01


@pytest.mark.parametrize("overrides", [{"rel_tol": 0.1}, {"rel_tol": 0.02, "smooth": 5},
                                       {"smooth": 1, "abs_tol": 0.8}, {"smooth": 4}])
@pytest.mark.parametrize("build, settles", HAND_WORKED, ids=lambda x: getattr(x, "__name__", ""))
def test_the_falls_are_placed_to_settle_at_the_pre_registered_steps(build, settles, overrides):
    """Under another band or smoothing the same pre-registered steps hold: each fall (or
    return) is placed so that the oracle settles there under the user's thresholds."""
    cfg = grokaudit.make_config(**overrides)
    specs = build(C.K(cfg))
    got = [settle_step(s, cfg.rel_tol, cfg.smooth, abs_tol=cfg.abs_tol) for s in specs]
    assert got == settles


def test_accuracy_levels_sit_on_the_right_side_of_the_thresholds():
    assert acc_levels() == {"acc_low": 0.05, "acc_never": 0.30, "acc_fall": 0.5,
                            "acc_partial": 0.93, "train_low": 0.5}
    for g, f, m in [(0.95, 0.98, 0.99), (0.99, 0.995, 0.5), (0.5, 0.6, 0.4), (0.2, 0.1, 1.0),
                    (1.0, 1.0, 1.0), (0.93, 0.93, 0.93)]:
        lv = acc_levels(grokaudit.make_config(grok_threshold=g, full_threshold=f,
                                              mem_threshold=m))
        assert lv["acc_low"] < g and lv["acc_fall"] < g and lv["train_low"] < m
        assert lv["acc_never"] < min(g, f)
        assert lv["acc_partial"] >= g and (lv["acc_partial"] < f or f <= g)


def test_a_partial_plateau_groks_under_a_grok_threshold_above_093():
    """The reported bug: with grok_threshold 0.95 the generators' 'partial' plateau (0.93)
    never grokked, yet its truth said it did, so `grokaudit suite --config` failed."""
    from grokaudit.adversarial_suite import properties as P
    from grokaudit.adversarial_suite.generators import RunSpec
    from grokaudit.adversarial_suite.strategies import Study

    cfg = grokaudit.make_config(grok_threshold=0.95)
    specs = tuple(RunSpec(f"rho={r}/s0", conditions={"rho": r, "seed": 0}, acc_shape="partial",
                          t_grok=1000.5 * r, t_floor=1000.5 * r + 1500)
                  for r in (1.0, 2.0, 3.0))
    study = Study(specs)
    assert all(s.truth(cfg).grokked for s in study.for_config(cfg).specs)
    assert with_levels(specs[0], cfg).acc_partial >= 0.95
    P.check_one_result(study, cfg)  # raised "grokked at … but t_grok censored" before


THRESHOLDS = [
    {"grok_threshold": 0.5, "full_threshold": 0.6, "mem_threshold": 0.6},
    {"grok_threshold": 0.99, "full_threshold": 0.995},
    {"rel_tol": 0.1, "transient_threshold": 2.0, "smooth": 5},
    {"rel_tol": 0.02, "abs_tol": 0.3, "sustain": 7, "min_rel_drop": 0.5},
    {"floor_frac": 0.2, "max_floor_frac": 0.3, "min_floor_points": 8, "large_lag": 0.2,
     "mono_threshold": 0.9, "high_floor_factor": 1.8, "censor_warn": 0.1},
]


@pytest.mark.parametrize("overrides", THRESHOLDS, ids=lambda o: ",".join(o))
def test_every_case_passes_under_other_thresholds(overrides):
    """The cases' logs and answers follow the thresholds: none fails under a valid config of
    the default profile (an audit that follows the spec)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outs = run_cases(grokaudit.make_config(**overrides))
    bad = {o.name: o.mismatches for o in outs if not o.passed}
    assert not bad


def test_the_expected_verdict_follows_large_lag():
    """Derived, not fixed: with large_lag 0.2 the clean study (median rel_lag 0.23) has a large
    lag, and both orderings are monotone and the same way."""
    cfg = grokaudit.make_config(large_lag=0.2)
    assert C.CLEAN_ONE_CLOCK.expected(cfg).label == "ONE_CLOCK_LARGE_LAG"
    assert C.TRUE_TWO_CLOCKS.expected(grokaudit.make_config(large_lag=5.0)).label == \
        "SINGLE_CLOCK_SMALL_LAG"
    assert C.TRUE_TWO_CLOCKS.expected(grokaudit.make_config(mono_threshold=1.0)).label == \
        "PARTIALLY_SEPARATED"
    assert run_case(C.CLEAN_ONE_CLOCK, cfg).passed


def test_thresholds_the_construction_follows():
    """Floors, peaks, noise and lengths move with the thresholds they are compared to."""
    t = C.HIGH_FLOOR_BOUNDARY.table(grokaudit.make_config(high_floor_factor=5.0))
    assert t.loc[t["rho"] == 4.0, "emb_erank"].iloc[-1] == 60.0  # (5 + 1) × 10
    t = C.CLEAN_ONE_CLOCK.table(grokaudit.make_config(floor_frac=0.3, max_floor_frac=0.3))
    assert t["step"].max() > 10000  # stretched until W1 and W2 lie on the flat tail
    t = C.ALL_CENSORED.table(grokaudit.make_config(grok_threshold=0.2, full_threshold=0.2))
    assert t["test_acc"].max() < 0.2
    inst = C.ALL_CENSORED.instance(grokaudit.make_config(floor_frac=0.3, max_floor_frac=0.3))
    assert inst.expect.studies[0].runs["rho=1.0/s0"]["t_grok.lower"] == inst.table["step"].max()


def test_a_threshold_a_case_cannot_show_is_kept_and_said():
    """censor_warn ≥ 0.5: no passing cell can be censored enough for INCONCLUSIVE_CENSORING, so
    half_seeds_censored keeps its own 0.25 and says so; every other case follows 0.6."""
    cfg = grokaudit.make_config(censor_warn=0.6)
    inst = C.HALF_SEEDS_CENSORED.instance(cfg)
    assert inst.cfg.censor_warn == 0.25 and "censor_warn" in inst.notes[0]
    out = run_case(C.HALF_SEEDS_CENSORED, cfg)
    assert out.passed and out.notes
    assert C.CLEAN_ONE_CLOCK.instance(cfg).cfg.censor_warn == 0.6


def test_rebound_reports_the_final_settling_not_the_first_dip():
    result, _ = audit_case(C.NON_MONOTONE_REBOUND)
    run = next(r for r in result.studies[0].runs if r.run == "rho=1.0/s0")
    # the raw metric first enters the band at ~3040; the final settling is 4500
    assert run.t_compress.value == 4500
    assert Reason.REBOUND in run.reasons
    assert 2.5 <= run.undershoot <= 3.0


def test_negative_lag_is_reported_not_clipped():
    result, _ = audit_case(C.COMPRESSION_BEFORE_GROK)
    s = result.studies[0]
    lags = sorted(r.lag.value for r in s.runs)
    assert lags == [-3500] * 3 + [-2500] * 3 + [-1500] * 3
    assert all(Reason.COMPRESSION_BEFORE_GROK in r.reasons for r in s.runs)


def test_half_censored_cell_shows_only_a_bound():
    result, _ = audit_case(C.HALF_SEEDS_CENSORED)
    s = result.studies[0]
    assert s.verdict is Reason.INCONCLUSIVE_CENSORING
    for c in s.cells:
        assert c.t_compress.censored and c.t_compress.value is None
        assert Reason.MEDIAN_CENSORED in c.notes
    assert result.exit_code == 1


def test_duplicate_axis_values_is_refused_with_its_code():
    with pytest.raises(grokaudit.LogFormatError) as info:
        grokaudit.audit_table(C.DUPLICATE_AXIS_VALUES.table(), by="rho")
    assert info.value.code == "DUPLICATE_AXIS_VALUES"


def test_percent_accuracy_reads_as_percent_and_equals_fractions():
    """Percent is read by the per-column rule (and said), or by --acc-scale 100: either way
    the study equals the fraction log's; --acc-scale 1 refuses it, naming test_acc."""
    b = grokaudit.audit_table(C.CLEAN_ONE_CLOCK.table(), by="rho")
    for opts in ({}, {"acc_scale": 100.0}):
        a = grokaudit.audit_table(C.ACCURACY_IN_PERCENT.table(), by="rho", **opts)
        assert a.studies[0].to_dict() == b.studies[0].to_dict()
        assert grokaudit.Reason.ACCURACY_IN_PERCENT in a.codes
    with pytest.raises(grokaudit.LogFormatError) as info:
        grokaudit.audit_table(C.ACCURACY_IN_PERCENT.table(), by="rho", acc_scale=1.0)
    assert info.value.column in ("test_acc", "train_acc")


def test_reference_profile_fails_the_documented_cases():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outs = run_cases(grokaudit.make_config(profile="reference"))
    failed = {o.name for o in outs if not o.passed}
    documented = {c.name for c in catalog.CASES if c.reference_fails}
    assert documented <= failed
    assert len(failed) >= 5
    # the input checks are the same in both profiles
    assert {"duplicate_axis_values"}.isdisjoint(failed)


# -- issue 19: severity follows evidence, over every case and every bundled log ---------------

def test_no_critical_finding_where_the_cells_gates_say_the_quantity_is_undefined():
    from grokaudit.adversarial_suite.properties import undefined_critical_findings

    checked = 0
    for case in catalog.CASES:
        inst = case.instance()
        if inst.expect.error:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = grokaudit.audit_table(inst.table, inst.cfg)
        assert not undefined_critical_findings(res.to_dict()), case.name
        checked += 1
    assert checked >= len(catalog.CASES) - 3


def test_the_invariant_checker_sees_a_critical_finding_on_a_gated_cell():
    """The checker itself can fail: the gated cell's transient, made critical, is caught."""
    import dataclasses

    from grokaudit.adversarial_suite.properties import undefined_critical_findings
    from grokaudit.reasons import Severity

    inst = catalog.CASES_BY_NAME["gated_cell_transient"].instance()
    res = grokaudit.audit_table(inst.table, inst.cfg)
    assert not undefined_critical_findings(res.to_dict())
    s = res.studies[0]
    worse = [dataclasses.replace(f, severity=Severity.CRITICAL)
             if f.code is Reason.SNAPSHOT_TRANSIENT else f for f in s.findings]
    doc = dataclasses.replace(res, studies=(dataclasses.replace(s, findings=tuple(worse)),))
    bad = undefined_critical_findings(doc.to_dict())
    assert len(bad) == 1 and "did not generalize" in bad[0]


@pytest.mark.parametrize("log, args", [
    ("mlp_wd_sweep_p59.parquet", {"by": "wd", "metrics": ["emb_erank"], "cell": ["arch"]}),
    ("transformer_ln_p23.parquet", {"by": "layernorm", "metrics": ["emb_erank"]}),
    ("external_alpha_sweep.parquet", {"by": "alpha"}),
])
def test_the_bundled_logs_keep_the_invariant(log, args):
    from pathlib import Path

    from grokaudit.adversarial_suite.properties import undefined_critical_findings

    root = Path(__file__).resolve().parents[2] / "reference_runs" / "data"
    res = grokaudit.audit_path(root / log, **args)
    assert not undefined_critical_findings(res.to_dict())
