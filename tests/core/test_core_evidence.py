"""Verdicts that never overstate (issue 19): left-censoring, horizons, failed replications,
missing evidence, nothing auditable, one identity per run and per value.

Logs are hand-built (``core_builders``): metric ``peak`` until t_grok, ``mid`` until t_settle,
``floor`` after; the settling step is t_settle + 100 (one point of smoothing delay). Every
expected number follows from that construction."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import grokaudit
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from grokaudit import Reason
from grokaudit.cli import cli
from grokaudit.errors import ErrorCode
from grokaudit.identity import canonical_values, duplicate_runs
from helpers.core_builders import cells_from, compressing_run, grid, run_frame, step_acc

R = Reason


def _cli(*args: object) -> tuple[int, str, str]:
    r = CliRunner().invoke(cli, [str(a) for a in args])
    return r.exit_code, r.stdout, r.stderr


def _codes(res: grokaudit.AuditResult) -> set[Reason]:
    return set(res.codes)


def _run(res: grokaudit.AuditResult, rid: str) -> grokaudit.RunResult:
    return next(r for r in res.studies[0].runs if r.run == rid)


# ------------------------------------------------------------------------------------------
# left-censoring: a log that starts after runs grokked
# ------------------------------------------------------------------------------------------

TRIM = 2500
#: (rho, t_grok, t_settle): cells 1 and 2 grok before 2500; every run settles after it
LEFT = [(1.0, 1000, 5000), (2.0, 2000, 6000), (3.0, 3000, 7000), (4.0, 6000, 10000)]


def _trimmed(spec=LEFT, at: int = TRIM) -> pd.DataFrame:
    df = cells_from(spec)
    return df[df["step"] >= at].reset_index(drop=True)


def test_a_grok_before_logging_began_has_no_value_only_its_interval() -> None:
    res = grokaudit.audit_table(_trimmed(), by="rho", metrics=["emb_erank"])
    r = _run(res, "rho1.0_s0")
    assert r.t_grok.value is None and r.t_grok.lower == 0 and r.t_grok.upper == TRIM
    assert r.t_grok.left_censored and not r.t_grok.censored
    assert r.t_grok.to_dict()["left_censored"] is True
    # the metric at grok was not logged: no value at grok, no ratio, no share before grok
    assert r.m_grok is None and r.inflation is None and r.frac_pre is None
    assert R.LEFT_CENSORED in r.reasons and R.METRIC_NOT_AT_GROK not in r.reasons
    # t_compress 5100 in (5000, 5100]; the lag is only its interval (5000 − 2500, 5100 − 0]
    assert r.t_compress.value == 5100
    assert r.lag.value is None and (r.lag.lower, r.lag.upper) == (5000 - TRIM, 5100)
    assert r.rel_lag is None
    # a run that grokked after logging began keeps its point
    r3 = _run(res, "rho3.0_s0")
    assert r3.t_grok.value == 3000 and not r3.t_grok.left_censored and r3.m_grok == 25.0


def test_a_left_censored_cell_is_ordered_only_where_its_bound_decides() -> None:
    res = grokaudit.audit_table(_trimmed(), by="rho", metrics=["emb_erank"])
    s = res.studies[0]
    c1 = s.cell(1.0)
    assert c1.t_grok.value is None and c1.t_grok.upper == TRIM and c1.n_left_censored == 3
    # cells 1 and 2 both lie in (0, 2500]: unordered; each is before cells 3 and 4
    o = s.ordering("t_grok")
    assert (o.concordant, o.discordant, o.unidentified) == (5, 0, 1)
    assert o.identified and o.direction == 1
    # every rel_lag lower bound is above large_lag: the bounds decide a large lag
    assert s.verdict is R.ONE_CLOCK_LARGE_LAG
    assert any(f.code is R.LEFT_CENSORED and f.cell == 1.0 for f in s.findings)


def test_an_ordering_that_depends_on_left_censored_cells_is_undefined_not_flipped() -> None:
    spec = [(1.0, 1000, 5000), (2.0, 1500, 6000), (3.0, 2000, 7000), (4.0, 6000, 10000)]
    res = grokaudit.audit_table(_trimmed(spec), by="rho", metrics=["emb_erank"])
    o = res.studies[0].ordering("t_grok")
    assert not o.identified and o.sub_reason is R.CENSORED_INTERVALS_OVERLAP
    assert (o.concordant, o.unidentified) == (3, 3)
    assert res.studies[0].verdict is not R.SINGLE_CLOCK_SMALL_LAG


def test_a_compression_before_logging_began_is_not_no_compression() -> None:
    # rho 1: grok at 1000, settled by 1600, logging from 2500: already on the floor
    spec = [(1.0, 1000, 1500), (2.0, 3000, 7000), (3.0, 4000, 8000)]
    res = grokaudit.audit_table(_trimmed(spec), by="rho", metrics=["emb_erank"])
    r = _run(res, "rho1.0_s0")
    assert r.t_compress is not None and r.t_compress.value is None
    assert r.t_compress.left_censored and r.t_compress.upper == TRIM
    assert R.NO_COMPRESSION not in r.reasons and R.LEFT_CENSORED in r.reasons
    assert r.compression != "none"
    c1 = res.studies[0].cell(1.0)
    assert R.BOUNDARY_NO_COMPRESSION not in c1.gates
    assert R.COMPRESSION_NOT_ESTABLISHED in c1.gates  # not established in this log


def test_a_log_from_step_0_has_no_left_censoring() -> None:
    res = grokaudit.audit_table(cells_from(LEFT), by="rho", metrics=["emb_erank"])
    assert R.LEFT_CENSORED not in _codes(res)
    assert _run(res, "rho1.0_s0").t_grok.value == 1000


def _tested_at_the_end(df: pd.DataFrame, runs: tuple[str, ...]) -> pd.DataFrame:
    """``runs`` with test accuracy logged only at their last step (a test set evaluated once,
    after training: Lightning's ``trainer.test``); every other column from step 0."""
    df = df.copy()
    last = df.groupby("run")["step"].transform("max")
    df.loc[df["run"].isin(runs) & (df["step"] < last), "test_acc"] = np.nan
    return df


def test_a_test_accuracy_logged_only_at_the_end_is_not_said_to_be_before_logging() -> None:
    # the runs' log (train accuracy, the metric) starts at step 0: the grok happened before
    # the test accuracy's one point, not before logging began
    res = grokaudit.audit_table(_tested_at_the_end(cells_from(LEFT), ("rho1.0_s0",)),
                                by="rho", metrics=["emb_erank"])
    r = _run(res, "rho1.0_s0")
    last = float(cells_from(LEFT).query("run == 'rho1.0_s0'")["step"].max())
    assert r.t_grok.left_censored and (r.t_grok.lower, r.t_grok.upper) == (0, last)
    f = next(f for f in res.findings if f.code is R.LEFT_CENSORED and f.cell == 1.0)
    assert f.evidence["logged_late"] == ["rho1.0_s0"]
    # a log trimmed at its start: every column starts late, none was logged late
    trimmed = grokaudit.audit_table(_trimmed(), by="rho", metrics=["emb_erank"])
    g = next(f for f in trimmed.findings if f.code is R.LEFT_CENSORED and f.cell == 1.0)
    assert "logged_late" not in g.evidence and g.evidence["t_grok_runs"]


def test_an_accuracy_only_audit_names_a_test_accuracy_logged_late() -> None:
    df = _tested_at_the_end(cells_from(LEFT).drop(columns=["emb_erank"]), ("rho2.0_s0",))
    res = grokaudit.audit_table(df, by="rho")
    f = next(f for f in res.findings if f.code is R.LEFT_CENSORED and f.cell == 2.0)
    assert f.evidence["logged_late"] == ["rho2.0_s0"] and f.runs == ("rho2.0_s0",)


def test_a_metric_first_logged_after_the_run_began_is_named() -> None:
    # rho 1's metric only from step 2500 (computed from some step on): settled before its
    # first point, while test accuracy was logged from step 0
    df = cells_from([(1.0, 1000, 1500), (2.0, 3000, 7000), (3.0, 4000, 8000)])
    late = (df["run"] == "rho1.0_s0") & (df["step"] < TRIM)
    df.loc[late, "emb_erank"] = np.nan
    res = grokaudit.audit_table(df, by="rho", metrics=["emb_erank"])
    r = _run(res, "rho1.0_s0")
    assert r.t_compress is not None and r.t_compress.left_censored
    assert r.t_grok.value == 1000 and not r.t_grok.left_censored
    f = next(f for f in res.findings if f.code is R.LEFT_CENSORED and f.cell == 1.0)
    assert f.evidence["logged_late"] == ["rho1.0_s0"]
    assert f.evidence["t_compress_runs"] == ["rho1.0_s0"] and f.evidence["t_grok_runs"] == []


def test_the_reference_profile_reads_the_first_logged_step_as_v15_does() -> None:
    res = grokaudit.audit_table(_trimmed(), by="rho", metrics=["emb_erank"],
                                profile="reference")
    assert _run(res, "rho1.0_s0").t_grok.value == TRIM
    assert R.LEFT_CENSORED not in _codes(res)


def test_the_text_report_prints_the_bound_never_a_value() -> None:
    from grokaudit.report import render_text

    txt = render_text(grokaudit.audit_table(_trimmed(), by="rho", metrics=["emb_erank"]))
    row = next(line for line in txt.splitlines() if line.startswith("rho=1.0 "))
    assert f"≤{TRIM}" in row and f" {TRIM} " not in row


# ------------------------------------------------------------------------------------------
# horizons
# ------------------------------------------------------------------------------------------

def _horizon_log(second_floor: float | None) -> pd.DataFrame:
    """Three cells settling on 10; seeds 0 and 1 of cell 2 stop at 12 000; seed 2 runs to
    40 000 and, when ``second_floor`` is given, drops to it at 20 000."""
    frames = []
    for rho, tg in ((1.0, 1000), (2.0, 2000), (3.0, 3000)):
        for s in range(3):
            df = compressing_run(f"rho{rho}_s{s}", tg, tg + 4000, rho=rho, seed=s)
            df["emb_erank"] += 1e-3 * s  # seeds differ (not copies of one another)
            if rho == 2.0 and s < 2:
                df = df[df["step"] <= 12000]
            if rho == 2.0 and s == 2 and second_floor is not None:
                df.loc[df["step"] >= 20000, "emb_erank"] = second_floor
            frames.append(df)
    return pd.concat(frames, ignore_index=True)


def test_runs_stopped_short_are_named_and_lose_their_stable_floor() -> None:
    res = grokaudit.audit_table(_horizon_log(6.0), by="rho", metrics=["emb_erank"])
    s = res.studies[0]
    c2 = s.cell(2.0)
    assert c2.short_horizon_runs == ("rho2.0_s0", "rho2.0_s1")
    assert c2.floor_rests_on_short_runs  # median floor ≈ 10, the long run's 6
    for rid in ("rho2.0_s0", "rho2.0_s1"):
        assert _run(res, rid).floor_stability == "indeterminate"
    assert _run(res, "rho2.0_s2").floor_stability == "stable"
    f = next(f for f in s.findings if f.code is R.HORIZON_MISMATCH)
    assert f.severity.value == "warning" and f.cell == 2.0
    assert f.evidence["longest_run"] == "rho2.0_s2"
    assert f.evidence["last_steps"] == {"rho2.0_s0": 12000.0, "rho2.0_s1": 12000.0}
    assert sorted(f.evidence["not_converged"]) == ["rho2.0_s0", "rho2.0_s1"]
    assert R.COMPRESSION_NOT_ESTABLISHED in c2.gates
    assert s.cell(1.0).short_horizon_runs == ()


def test_short_runs_whose_sibling_did_not_move_keep_their_floors() -> None:
    res = grokaudit.audit_table(_horizon_log(None), by="rho", metrics=["emb_erank"])
    s = res.studies[0]
    assert _run(res, "rho2.0_s0").floor_stability == "stable"
    assert not s.cell(2.0).floor_rests_on_short_runs
    f = next(f for f in s.findings if f.code is R.HORIZON_MISMATCH)
    assert f.severity.value == "info" and f.evidence["not_converged"] == []


def test_equal_horizons_and_the_reference_profile_have_no_horizon_finding() -> None:
    full = cells_from([(1.0, 1000, 5000), (2.0, 2000, 6000), (3.0, 3000, 7000)])
    assert R.HORIZON_MISMATCH not in _codes(grokaudit.audit_table(full, by="rho"))
    ref = grokaudit.audit_table(_horizon_log(6.0), by="rho", profile="reference")
    assert R.HORIZON_MISMATCH not in _codes(ref)


# ------------------------------------------------------------------------------------------
# failed replications, missing evidence, nothing auditable
# ------------------------------------------------------------------------------------------

def _with_failed_cell() -> pd.DataFrame:
    df = cells_from([(1.0, 1000, 5000), (2.0, 2000, 6000), (3.0, 3000, 7000), (4.0, 4000, 8000)])
    bad = df["rho"] == 4.0
    df.loc[bad, "train_acc"] = 0.014
    df.loc[bad, "test_acc"] = 0.01
    return df


def test_a_replication_that_never_memorized_is_a_finding_in_json_text_and_html(
        tmp_path: Path) -> None:
    p = tmp_path / "log.parquet"
    _with_failed_cell().to_parquet(p)
    code, out, _ = _cli("check", p, "--by", "rho", "--json", tmp_path / "r.json")
    doc = json.loads((tmp_path / "r.json").read_text())
    f = [f for f in doc["findings"] if f["code"] == "NO_MEMORIZATION"]
    assert len(f) == 1 and f[0]["cell"] == 4 and len(f[0]["runs"]) == 3
    assert "NO_MEMORIZATION" in out
    pytest.importorskip("matplotlib", reason="the HTML report needs the [report] extra")
    _cli("report", p, "--by", "rho", "-o", tmp_path / "r.html")
    assert "NO_MEMORIZATION" in (tmp_path / "r.html").read_text()


def test_runs_without_the_metric_are_named() -> None:
    df = cells_from([(1.0, 1000, 5000), (2.0, 2000, 6000), (3.0, 3000, 7000)])
    df.loc[df["run"] == "rho1.0_s1", "emb_erank"] = np.nan
    sparse = (df["run"] == "rho2.0_s2") & (df["step"] % 1000 != 0)
    df.loc[sparse, "emb_erank"] = np.nan  # a tenth of its cell's points
    res = grokaudit.audit_table(df, by="rho", metrics=["emb_erank"])
    f = next(f for f in res.studies[0].findings if f.code is R.METRIC_MISSING)
    assert f.evidence["no_points"] == ["rho1.0_s1"]
    assert f.evidence["few_points"] == {"rho2.0_s2": 41}
    assert f.severity.value == "warning" and f.evidence["of"] == 9


def test_nothing_grokked_is_nothing_auditable_and_never_a_pass(tmp_path: Path) -> None:
    df = cells_from([(1.0, None, 5000), (2.0, None, 6000), (3.0, None, 7000)])
    p = tmp_path / "log.parquet"
    df.to_parquet(p)
    code, out, _ = _cli("check", p, "--by", "rho")
    assert code == 1 and "NOTHING_AUDITABLE" in out
    code, out, _ = _cli("check", p, "--by", "rho", "--fail-on", "none")
    last = out.strip().splitlines()[-1]
    assert code == 0 and "NOTHING_AUDITABLE" in last and "no failing finding" not in last
    pytest.importorskip("matplotlib", reason="the HTML report needs the [report] extra")
    _cli("report", p, "--by", "rho", "--fail-on", "none", "-o", tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    assert "NOTHING AUDITABLE" in page and "PASS" not in page


def test_nothing_auditable_is_per_study() -> None:
    a = cells_from([(1.0, 1000, 5000), (2.0, 2000, 6000), (3.0, 3000, 7000)], arch="mlp")
    b = cells_from([(1.0, None, 5000), (2.0, None, 6000), (3.0, None, 7000)], arch="tf")
    b["run"] = "tf_" + b["run"]
    res = grokaudit.audit_table(pd.concat([a, b]), by="rho", cell=["arch"])
    hits = [f for f in res.findings if f.code is R.NOTHING_AUDITABLE]
    assert [f.study for f in hits] == [{"arch": "tf"}]
    assert hits[0].severity.value == "critical"


# ------------------------------------------------------------------------------------------
# identity
# ------------------------------------------------------------------------------------------

def test_run_ids_equal_once_normalized_are_refused(tmp_path: Path) -> None:
    df = cells_from([(1.0, 1000, 5000), (2.0, 2000, 6000), (3.0, 3000, 7000)])
    composed = unicodedata.normalize("NFC", "rho1.0_s0_é")
    copy = df[df["run"] == "rho1.0_s0"].assign(run=unicodedata.normalize("NFD", composed),
                                                  seed=7)
    both = pd.concat([df.assign(run=df["run"].where(df["run"] != "rho1.0_s0", composed)), copy])
    p = tmp_path / "log.parquet"
    both.to_parquet(p)
    code, out, err = _cli("check", p, "--by", "rho")
    assert code == 2 and "[RUN_ID_AMBIGUOUS]" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("ids", [[1.0, 2.0, 3.5], np.array([1.1, 2.0, 3.5], np.float32),
                                 [True, False]])
def test_a_run_id_of_numbers_is_one_id_in_every_reader(tmp_path: Path, ids: list[object]
                                                     ) -> None:
    """Float (or boolean) run ids were ``1.0`` read from a DataFrame or a CSV file and ``1``
    read from Parquet (Arrow's cast spells numbers otherwise than Python), so one log's runs
    had two names; and a NaN id was a run named ``nan`` in Parquet, a missing id in a
    DataFrame."""
    df = pd.concat([compressing_run("x", 1000, 2500).assign(run=r) for r in ids],
                   ignore_index=True)
    df["run"] = df["run"].astype(np.asarray(ids).dtype)
    df.to_parquet(tmp_path / "log.parquet", index=False)
    df.to_csv(tmp_path / "log.csv", index=False)
    names = {}
    for how, audit in (("frame", lambda: grokaudit.audit_table(df)),
                       ("parquet", lambda: grokaudit.audit_path(tmp_path / "log.parquet")),
                       ("csv", lambda: grokaudit.audit_path(tmp_path / "log.csv"))):
        names[how] = sorted(r["run"] for r in audit().to_dict()["studies"][0]["runs"])
    assert names["frame"] == names["parquet"] == names["csv"], names
    assert names["frame"] == sorted(pd.Series(df["run"].unique()).astype(str))
    if isinstance(ids[0], float):
        nan = df.assign(run=df["run"].where(df["run"] != ids[0], np.nan))
        nan.to_parquet(tmp_path / "nan.parquet", index=False)
        codes = set()
        for audit in (lambda: grokaudit.audit_table(nan),
                      lambda: grokaudit.audit_path(tmp_path / "nan.parquet")):
            with pytest.raises(grokaudit.LogFormatError) as exc:
                audit()
            codes.add(exc.value.code)
        assert codes == {ErrorCode.MISSING_VALUES}


def test_watch_names_float_runs_as_check_does(tmp_path: Path) -> None:
    """``watch`` grouped the rows by pandas and spelled a float32 id as Python's float
    (1.100000023841858) where check spells 1.1; -0.0 and 0.0 were one run to it."""
    ids = np.array([1.1, -0.0, 0.0, 16777216.0], np.float32)
    df = pd.concat([compressing_run("x", 1000, 2500).assign(run=r) for r in ids],
                   ignore_index=True)
    df["run"] = df["run"].astype(np.float32)
    p = tmp_path / "log.parquet"
    df.to_parquet(p, index=False)
    checked = sorted(r["run"] for r in grokaudit.audit_path(p).to_dict()["studies"][0]["runs"])
    out = CliRunner().invoke(cli, ["watch", "--once", str(p), "--jsonl"])
    watched = sorted({json.loads(line)["run"] for line in out.stdout.splitlines()
                      if json.loads(line).get("event") == "run"})
    assert out.exit_code == 0, out.output
    assert watched == checked and len(checked) == 4 and "1.1" in checked


def test_identical_runs_under_two_ids_are_flagged() -> None:
    df = _horizon_log(None)
    copy = df[df["run"] == "rho1.0_s0"].assign(run="rho1.0_s9", seed=9)
    res = grokaudit.audit_table(pd.concat([df, copy]), by="rho")
    assert res.input["duplicate_runs"] == [["rho1.0_s0", "rho1.0_s9"]]
    assert R.DUPLICATE_RUN in _codes(res)
    # one value apart in the last row: not a copy
    near = copy.copy()
    near.iloc[-1, near.columns.get_loc("emb_erank")] += 1e-9
    res2 = grokaudit.audit_table(pd.concat([df, near]), by="rho")
    assert R.DUPLICATE_RUN not in _codes(res2) and "duplicate_runs" not in res2.input


def test_accuracy_twins_need_a_curve_and_are_not_duplicates() -> None:
    """Runs identical in their accuracies at every step, not in every column: one run read
    twice (a TransGrokking run's ``accuracy_curve.csv`` beside its ``scalars.jsonl`` was two
    replicates, exit 0). A flat or two-valued curve may repeat in two trainings: no twin."""
    from grokaudit.identity import accuracy_twins, logged_points

    def twins(ids, off, st, v, dups):
        return accuracy_twins(ids, logged_points(off, st, v), None, dups)

    steps = np.arange(6, dtype=np.int64)
    offsets = np.array([0, 6, 12, 18, 24])
    step = np.tile(steps, 4)
    curve = [0.1, 0.2, 0.4, 0.7, 0.9, 0.95]
    acc = np.array(curve * 3 + [0.1, 0.2, 0.4, 0.7, 0.9, 0.96])
    metric = np.array([5.0] * 6 + [6.0] * 6 + [6.0] * 6 + [5.0] * 6)
    ids = np.array(["a", "b", "c", "d"], dtype=object)
    dups = duplicate_runs(ids, offsets, step, [acc, metric])
    assert dups == [("b", "c")]
    # a, b and c share the curve; b = c already in every column, so the group a, b, c stands
    assert twins(ids, offsets, step, acc, dups) == [("a", "b", "c")]
    # b and c alone are no twins beside their duplicate; a flat curve makes no twins
    assert twins(ids[1:3], np.array([0, 6, 12]), step[:12], acc[6:18], [("b", "c")]) == []
    flat = np.array([0.1, 0.1, 0.1, 0.9, 0.9, 0.9] * 4)
    assert twins(ids, offsets, step, flat, []) == []
    # the curve exported at the evaluations beside the log of every step (NaN between them):
    # compared at the points the accuracy was logged
    dense_steps = np.arange(0, 12)
    dense = np.full(12, np.nan)
    dense[::2] = curve
    two = np.array(["curve", "log"], dtype=object)
    assert twins(two, np.array([0, 6, 18]), np.r_[dense_steps[::2], dense_steps],
                 np.r_[curve, dense], []) == [("curve", "log")]


def test_duplicate_runs_compares_nan_as_equal_and_every_column() -> None:
    steps = np.arange(5, dtype=np.int64)
    offsets = np.array([0, 5, 10, 15])
    step = np.tile(steps, 3)
    a = np.array([0.1, np.nan, 0.3, 0.4, 0.5] * 3)
    b = np.array([1.0] * 5 + [1.0] * 5 + [1.0] * 4 + [2.0])
    ids = np.array(["x", "y", "z"], dtype=object)
    assert duplicate_runs(ids, offsets, step, [a, b]) == [("x", "y")]
    assert duplicate_runs(ids, offsets, step, [a]) == [("x", "y", "z")]


def test_condition_values_have_one_identity() -> None:
    f32 = np.array([np.float32(0.1), np.float32(0.85)], dtype=np.float32)
    assert canonical_values(f32).tolist() == [0.1, 0.85]
    as64 = np.array([float(np.float32(0.1)), 0.1, 0.30000000000000004, 1.0, np.nan])
    out = canonical_values(as64)
    assert out[:4].tolist() == [0.1, 0.1, 0.3, 1.0] and np.isnan(out[4])
    # two values that differ beyond 15 digits stay two values
    close = np.array([0.1, 0.1 + 2 ** -55])
    assert close[0] != close[1] and len(set(canonical_values(close).tolist())) == 2
    # numbers beside plain decimal text (two files): numbers
    assert canonical_values(np.array([0.1, "0.10"], dtype=object)).tolist() == [0.1, 0.1]
    # text alone stays text ("1.1" and "1.10" may be two versions); so do texts Python's
    # float() would read but that are no plain decimal ("1_0", "inf", "0x10")
    for a in (np.array(["1.1", "1.10"], dtype=object), np.array(["001", "002"], dtype=object),
              np.array(["mlp", "0.1"], dtype=object), np.array([10.0, "1_0"], dtype=object),
              np.array([1.0, "inf"], dtype=object), np.array([True, False]), np.array([1, 2])):
        assert canonical_values(a).tolist() == a.tolist()


def _two_arms(rho_store) -> pd.DataFrame:
    frames = []
    for rho, tg in ((0.15, 1000), (0.3, 2000)):
        for s in range(8):
            df = compressing_run(f"r{rho}_s{s}", tg + 100 * s, tg + 4000, seed=s)
            df["rho"] = rho_store(rho)
            frames.append(df)
    return pd.concat(frames, ignore_index=True)


def test_a_float64_column_holding_float32_values_prints_and_matches_as_written(
        tmp_path: Path) -> None:
    df = _two_arms(lambda v: float(np.float32(v)))  # 0.15000000596046448 as float64
    p = tmp_path / "arms.parquet"
    df.to_parquet(p)
    code, out, err = _cli("check", p, "--by", "rho", "-v")
    assert code in (0, 1), err
    assert "rho=0.15" in out and "0.15000000596046448" not in out
    code, out, err = _cli("compare", p, "--by", "rho", "--pair", "seed", "--arms", "0.15,0.3")
    assert code in (0, 1), err


def test_float32_and_float64_spellings_of_a_sweep_are_one_cell(tmp_path: Path) -> None:
    a = _two_arms(float)
    b = _two_arms(lambda v: np.float32(v))
    b["run"] = "b_" + b["run"]
    a.to_parquet(tmp_path / "a.parquet")
    b.assign(rho=b["rho"].astype(np.float32)).to_parquet(tmp_path / "b.parquet")
    # a folder of shards, and the two files named on the command line
    res = grokaudit.audit_path(tmp_path, by="rho", metrics=["emb_erank"])
    assert [c.axis_value for c in res.studies[0].cells] == [0.15, 0.3]
    assert [c.n_runs for c in res.studies[0].cells] == [16, 16]
    code, out, err = _cli("check", tmp_path / "a.parquet", tmp_path / "b.parquet", "--by",
                          "rho", "--json", "-")
    assert code in (0, 1), err
    cells = json.loads(out)["studies"][0]["cells"]
    assert [(c["axis_value"], c["n_runs"]) for c in cells] == [(0.15, 16), (0.3, 16)]


# ------------------------------------------------------------------------------------------
# found by a hostile review of the above
# ------------------------------------------------------------------------------------------

BUNDLED = Path(__file__).resolve().parents[2] / "reference_runs" / "data" / \
    "mlp_wd_sweep_p59.parquet"


def _bundled() -> pd.DataFrame:
    return pd.read_parquet(BUNDLED)


def test_a_cell_that_never_compresses_does_not_pass_when_its_grok_is_before_the_log() -> None:
    # the whole log gates wd = 0.3 (NO_COMPRESSION in 3/3); from step 4000 its grok (3090)
    # is before logging began: whether it compressed cannot be read, and it does not pass
    log = _bundled()
    res = grokaudit.audit_table(log[log["step"] >= 4000], by="wd", metrics=["emb_erank"],
                                cell=["arch"])
    c = res.studies[0].cell(0.3)
    assert c.gates and R.COMPRESSION_NOT_ESTABLISHED in c.gates
    for r in res.studies[0].runs:
        if r.cell == 0.3:  # on its floor from the first logged point: before logging, or never
            assert r.t_compress is None or r.t_compress.left_censored
            assert r.compression == "unknown"
            assert R.NO_COMPRESSION not in r.reasons and R.COMPRESSION_UNKNOWN in r.reasons


def _flat_late(first: int = 1000) -> pd.DataFrame:
    frames = []
    for rho, tg in ((1.0, 4200), (2.0, 5200), (3.0, 6200)):
        for s in range(3):
            st = grid(20000, 100)
            flat = 50.0 + s + 1e-4 * st / 20000  # flat within any band
            df = run_frame(f"rho{rho}_s{s}", st, step_acc(st, tg), flat, rho=rho, seed=s)
            frames.append(df[df["step"] >= first])
    return pd.concat(frames, ignore_index=True)


def test_a_flat_metric_logged_from_a_late_step_is_no_compression_before_grok() -> None:
    res = grokaudit.audit_table(_flat_late(), by="rho", metrics=["emb_erank"])
    r = _run(res, "rho1.0_s0")
    assert r.t_compress.left_censored and r.compression == "unknown"
    assert R.COMPRESSION_BEFORE_GROK not in r.reasons and R.NO_COMPRESSION not in r.reasons
    # logged from step 0, the same runs never compressed
    full = grokaudit.audit_table(_flat_late(0), by="rho", metrics=["emb_erank"])
    assert R.NO_COMPRESSION in _run(full, "rho1.0_s0").reasons


def test_rule_crossing_without_a_value_at_grok_invents_no_censoring() -> None:
    res = grokaudit.audit_table(_trimmed(), by="rho", metrics=["emb_erank"], rule="crossing")
    r = _run(res, "rho1.0_s0")
    assert r.t_compress is None and R.COMPRESSION_NEVER_SETTLED not in r.reasons
    assert R.COMPRESSION_UNKNOWN in r.reasons
    # a run that grokked in the log keeps its crossing time: the first step at or below
    # F + 0.1·(m_grok − F) = 11.5, where the metric steps from 25 to 10 (10 000)
    assert _run(res, "rho4.0_s0").t_compress.value == 10000


def test_nothing_auditable_in_one_study_names_it(tmp_path: Path) -> None:
    a = cells_from([(1.0, 1000, 5000), (2.0, 2000, 6000), (3.0, 3000, 7000)], arch="mlp")
    b = cells_from([(1.0, None, 5000), (2.0, None, 6000), (3.0, None, 7000)], arch="tf")
    b["run"] = "tf_" + b["run"]
    p = tmp_path / "two.parquet"
    pd.concat([a, b]).to_parquet(p)
    code, out, _ = _cli("check", p, "--by", "rho", "--cell", "arch", "--fail-on", "none")
    last = out.strip().splitlines()[-1]
    assert code == 0 and "NOTHING_AUDITABLE in the study arch=tf" in last
    rows = [line.split() for line in out.splitlines() if "· emb_erank" in line]
    assert [r[3] for r in rows[:2]] == ["ONE_CLOCK_LARGE_LAG", "NOTHING_AUDITABLE"]
    pytest.importorskip("matplotlib", reason="the HTML report needs the [report] extra")
    _cli("report", p, "--by", "rho", "--cell", "arch", "--fail-on", "none", "-o",
         tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    assert "NOTHING AUDITABLE in the study arch=tf" in page and "PASS" not in page


def test_64_bit_seeds_are_conditions_compared_as_integers(tmp_path: Path) -> None:
    log = _bundled()
    log["seed"] = log["seed"] + 2 ** 53 + 1
    p = tmp_path / "big.parquet"
    log.to_parquet(p)
    code, out, err = _cli("check", p, "--by", "wd", "--metric", "emb_erank", "--cell", "arch")
    assert code == 1 and not err, err  # the same findings as the bundled log: exit 1
    # a seed that changes within a run by one unit beyond 2**53 is still refused
    bad = log.copy()
    first = bad.index[bad["run"] == bad["run"].iloc[0]][-1]
    bad.loc[first, "seed"] = bad.loc[first, "seed"] + 1
    bad.to_parquet(p)
    code, _, err = _cli("check", p, "--by", "wd", "--metric", "emb_erank", "--cell", "arch")
    assert code == 2 and "[NOT_CONSTANT_IN_RUN]" in err


def _stray_and_short() -> pd.DataFrame:
    log = _bundled()
    short = (log["run"] == "mlp_wd/wd=1.0,seed=0") & (log["step"] > 4000)
    log = log[~short]
    stray = log[log["run"] == "mlp_wd/wd=1.0,seed=1"].iloc[[-1]].assign(step=20000)
    return pd.concat([log, stray], ignore_index=True)


def test_a_stray_late_point_does_not_hide_a_short_run() -> None:
    res = grokaudit.audit_table(_stray_and_short(), by="wd", metrics=["emb_erank"],
                                cell=["arch"])
    c = res.studies[0].cell(1.0)
    assert c.short_horizon_runs == ("mlp_wd/wd=1.0,seed=0",)
    f = next(f for f in res.studies[0].findings if f.code is R.HORIZON_MISMATCH)
    assert f.evidence["longest_run"] == "mlp_wd/wd=1.0,seed=2"


def test_a_short_run_without_a_floor_is_named_not_compared() -> None:
    log = _bundled()
    gone = (log["run"] == "mlp_wd/wd=1.0,seed=0") & (log["step"] > 4000)
    log.loc[gone, "emb_erank"] = np.nan  # its metric stops at 4000: no floor window
    res = grokaudit.audit_table(log, by="wd", metrics=["emb_erank"], cell=["arch"])
    f = next(f for f in res.studies[0].findings if f.code is R.HORIZON_MISMATCH)
    assert f.evidence["not_compared"] == ["mlp_wd/wd=1.0,seed=0"]
    assert f.evidence["not_converged"] == [] and f.severity.value == "warning"


def test_a_short_run_already_on_its_siblings_floor_keeps_it() -> None:
    # cell 2's seeds 0 and 1 converge on 10 and stop at 12 000; seed 2 groks later, is still
    # falling at 12 000 and ends on the same floor 10
    frames = []
    for rho, tg in ((1.0, 1000), (2.0, 2000), (3.0, 3000)):
        for s in range(3):
            late = rho == 2.0 and s == 2
            df = compressing_run(f"rho{rho}_s{s}", tg + (9000 if late else 0),
                                 tg + (20000 if late else 4000), rho=rho, seed=s)
            df["emb_erank"] += 1e-3 * s
            if rho == 2.0 and not late:
                df = df[df["step"] <= 12000]
            frames.append(df)
    res = grokaudit.audit_table(pd.concat(frames), by="rho", metrics=["emb_erank"])
    assert _run(res, "rho2.0_s0").floor_stability == "stable"
    f = next(f for f in res.studies[0].findings if f.code is R.HORIZON_MISMATCH)
    assert f.evidence["not_converged"] == [] and f.severity.value == "info"


def test_an_unlogged_train_accuracy_is_not_a_failed_replication() -> None:
    df = cells_from([(1.0, 1000, 5000), (2.0, 2000, 6000), (3.0, 3000, 7000)])
    df.loc[df["rho"] == 1.0, "train_acc"] = np.nan
    res = grokaudit.audit_table(df, by="rho", metrics=["emb_erank"])
    assert R.NO_MEMORIZATION not in _codes(res)
    assert _run(res, "rho1.0_s0").t_mem is None


def test_a_metric_falling_when_logging_began_is_not_no_compression() -> None:
    # the metric falls from 100 to 60 before grok (logging begins near the end of that fall)
    # and to 50 after it: from the log alone the drop from the peak is only a lower bound
    frames = []
    for rho, tg in ((1.0, 3000), (2.0, 4000), (3.0, 5000)):
        for s in range(3):
            st = grid(40000, 100)
            m = np.interp(st, [0, tg, tg + 2000], [100.0, 60.0, 50.0]) + 1e-3 * s
            df = run_frame(f"rho{rho}_s{s}", st, step_acc(st, tg), m, rho=rho, seed=s)
            frames.append(df[df["step"] >= int(0.9 * tg)])
    res = grokaudit.audit_table(pd.concat(frames), by="rho", metrics=["emb_erank"])
    r = _run(res, "rho1.0_s0")
    assert R.NO_COMPRESSION not in r.reasons and r.compression == "unknown"
    assert r.frac_pre is None
    assert R.NOTHING_AUDITABLE not in _codes(res)


def test_a_parquet_written_with_its_pandas_index_is_read_without_it(tmp_path: Path) -> None:
    df = cells_from([(1.0, 1000, 5000), (2.0, 2000, 6000), (3.0, 3000, 7000)])
    df["emb_erank"] += df["seed"] * 1e-3
    copy = df[df["run"] == "rho1.0_s0"].assign(run="rho1.0_s9", seed=9)
    both = pd.concat([df, copy]).sample(frac=1.0, random_state=0)  # a shuffled index
    p = tmp_path / "idx.parquet"
    both.to_parquet(p)
    res = grokaudit.audit_path(p, by="rho", metrics=["emb_erank"])
    assert res.input["duplicate_runs"] == [["rho1.0_s0", "rho1.0_s9"]]
    assert "__index_level_0__" not in res.input["missing_values"]
    notes = next(f for f in res.findings if f.code is R.READER_NOTES).evidence["notes"]
    assert any("__index_level_0__" in n for n in notes)


def test_a_runs_changes_are_counted_alike_by_gather_and_by_one_pass() -> None:
    """The twin search counts each candidate's changes by gathering its points (few runs) or
    in one pass over every point (many): both give the count a loop over the points gives."""
    from grokaudit.identity import _changes

    rng = np.random.default_rng(1)
    for _ in range(300):
        lens = rng.integers(0, 12, int(rng.integers(1, 30)))
        off = np.r_[0, np.cumsum(lens)]
        v = rng.integers(0, 3, int(off[-1])).astype(float)
        runs = np.sort(rng.choice(lens.size, int(rng.integers(1, lens.size + 1)),
                                  replace=False))
        want = [sum(v[k] != v[k + 1] for k in range(off[r], off[r + 1] - 1)) for r in runs]
        assert _changes(off, v, runs).tolist() == want
