"""Huge and degenerate shapes: one run, one row, runs too short, identical runs, constant and
all-NaN columns, one cell, an axis with one value, extreme steps and values, 100 000 runs.
Each has one correct outcome, pinned (issue 43 item 7): the audit's exit code, verdicts and
reason codes (strict JSON), or a clean refusal with its ErrorCode — never a crash, never a false
critical alarm, never "either"."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from grokaudit.errors import ErrorCode
from helpers.hostile import (
    STEPS,
    Outcome,
    cli,
    expect_audit,
    expect_audit_verdict,
    expect_error,
    sub,
    sweep_df,
    trajectory,
    write_parquet,
)

E = ErrorCode
#: the audit of the canonical sweep (``sweep_df``): its metric settles after the grok, so the
#: value read at grok is a transient (a true critical reading, not an artefact of the shape)
SWEEP = {"exit_code": 1, "verdicts": ["ONE_CLOCK_LARGE_LAG"], "failing": {"SNAPSHOT_TRANSIENT"}}
#: a study in which no cell passes its gates (no run grokked, or no metric to read): the
#: documented critical NOTHING_AUDITABLE, no clock verdict
NOTHING = {"exit_code": 1, "verdicts": [None], "failing": {"NOTHING_AUDITABLE"}}


def _reject_constant(name: str) -> None:
    raise AssertionError(f"the JSON holds {name}: not valid JSON (RFC 8259)")


def strict_json(text: str) -> dict:
    """Parse JSON refusing NaN/Infinity tokens (Python's json accepts them, others do not)."""
    doc = json.loads(text, parse_constant=_reject_constant)
    assert isinstance(doc, dict)
    return doc


def audit(df: pd.DataFrame, tmp_path: Path, *args: object, real: bool = False
          ) -> tuple[Outcome, dict | None]:
    """``check`` the log with ``--json``; returns the outcome and the parsed JSON (None on
    exit 2)."""
    p = write_parquet(df, tmp_path / "log.parquet")
    j = tmp_path / "r.json"
    out = (sub if real else cli)(["check", p, "--json", j, *args], cwd=tmp_path)
    if out.exit_code in (0, 1) and out.exception is None:
        expect_audit(out)
        doc = strict_json(j.read_text(encoding="utf-8"))
        assert doc["summary"]["exit_code"] == out.exit_code
        return out, doc
    assert not j.exists(), "the JSON was written although the command failed"
    return out, None


def test_one_run(tmp_path: Path) -> None:
    """One run: audited (no axis: SINGLE_CONDITION; --by wd with one value:
    LOW_POWER_DESCRIPTIVE), no clock verdict; its transient snapshot is still read."""
    df = sweep_df(wds=(1.0,), seeds=(0,))
    out, doc = audit(df, tmp_path)
    expect_audit_verdict(out, doc, exit_code=1, verdicts=[None], failing={"SNAPSHOT_TRANSIENT"},
                         findings={"SINGLE_CONDITION"})
    out, doc = audit(df, tmp_path, "--by", "wd")
    expect_audit_verdict(out, doc, exit_code=1, verdicts=[None], failing={"SNAPSHOT_TRANSIENT"},
                         findings={"LOW_POWER_DESCRIPTIVE"})


def test_one_row(tmp_path: Path) -> None:
    out, _ = audit(sweep_df().iloc[:1], tmp_path)
    expect_error(out, E.TOO_FEW_POINTS)


def test_every_run_too_short(tmp_path: Path) -> None:
    df = sweep_df()
    out, _ = audit(df[df["step"] < 200], tmp_path)
    expect_error(out, E.TOO_FEW_POINTS)


def test_a_run_with_two_points_is_set_aside_and_counted(tmp_path: Path) -> None:
    df = sweep_df()
    two = df[df["run"] == df["run"].iloc[0]].head(2).assign(run="two-points")
    out, doc = audit(pd.concat([df, two], ignore_index=True), tmp_path)
    assert doc is not None, str(out)
    assert doc["input"]["runs_too_short"] == ["two-points"]
    assert doc["input"]["set_aside"].get("run_too_short") == 2
    assert doc["input"]["rows_kept"] == len(df)


def test_all_runs_identical(tmp_path: Path) -> None:
    frames = []
    for i, wd in enumerate((1.0, 1.0, 2.0, 2.0, 3.0, 3.0)):
        frames.append(pd.DataFrame({"run": f"r{i}", "step": STEPS, **trajectory(2000.0),
                                    "wd": wd}))
    out, doc = audit(pd.concat(frames, ignore_index=True), tmp_path)
    # one log under two ids is named (DUPLICATE_RUN); equal t_grok in every cell: no ordering
    expect_audit_verdict(out, doc, exit_code=1, verdicts=["LARGE_LAG_ORDERING_UNDETERMINED"],
                         failing={"SNAPSHOT_TRANSIENT"},
                         findings={"DUPLICATE_RUN", "ORDERING_UNDEFINED"})


@pytest.mark.parametrize("value, extra", [
    (0.0, set()), (7.5, set()), (-3.0, {"NONPOSITIVE_FLOOR"}), (1e-300, set())])
def test_constant_metric(tmp_path: Path, value: float, extra: set) -> None:
    """A metric that never moves never compressed (NO_COMPRESSION): no cell passes its gates,
    no clock verdict — whatever the constant, 0 included."""
    out, doc = audit(sweep_df().assign(emb_erank=value), tmp_path)
    expect_audit_verdict(out, doc, **NOTHING, findings={"NO_COMPRESSION", *extra},
                         absent={"COMPRESSION_BEFORE_GROK", "SNAPSHOT_TRANSIENT"})


@pytest.mark.parametrize("column", [
    "emb_erank", "test_acc", "train_acc"])
def test_all_nan_column(tmp_path: Path, column: str) -> None:
    """An all-NaN column: the metric -> METRIC_MISSING and NOTHING_AUDITABLE (nothing says
    the metric is sound); the grok criterion -> refused as a log without it (MISSING_COLUMN);
    train_acc (optional) -> the audit of a log without train_acc."""
    out, doc = audit(sweep_df().assign(**{column: np.nan}), tmp_path)
    if column == "test_acc":
        expect_error(out, E.MISSING_COLUMN)
    elif column == "emb_erank":
        expect_audit_verdict(out, doc, **NOTHING, findings={"METRIC_MISSING"})
    else:
        expect_audit_verdict(out, doc, **SWEEP, findings={"NOT_LOGGED_BY_EVERY_RUN"})


def test_all_nan_metric_named(tmp_path: Path) -> None:
    out, doc = audit(sweep_df().assign(emb_erank=np.nan), tmp_path, "--metric", "emb_erank")
    expect_audit_verdict(out, doc, **NOTHING, findings={"METRIC_MISSING"})


def test_constant_accuracy_at_zero_is_nothing_auditable(tmp_path: Path) -> None:
    out, doc = audit(sweep_df().assign(test_acc=0.0, train_acc=0.0), tmp_path)
    expect_audit_verdict(out, doc, **NOTHING, findings={"NO_GROK", "NO_MEMORIZATION"})


def test_constant_accuracy_at_one_groks_at_step_0(tmp_path: Path) -> None:
    """Accuracy 1 from step 0: t_grok = 0 exactly (not LEFT_CENSORED, which is a first point
    after step 0); rel_lag is undefined (null), the t_grok ordering ties."""
    out, doc = audit(sweep_df().assign(test_acc=1.0, train_acc=1.0), tmp_path)
    doc = expect_audit_verdict(out, doc, exit_code=1,
                               verdicts=["LARGE_LAG_ORDERING_UNDETERMINED"],
                               failing={"SNAPSHOT_TRANSIENT"}, absent={"LEFT_CENSORED"})
    for r in doc["studies"][0]["runs"]:
        assert r["t_grok"]["value"] == 0 and r["rel_lag"] is None, r


def test_single_cell(tmp_path: Path) -> None:
    """Replicates of one condition (no axis): each run is audited, the runs pooled as one
    cell, no orderings and no clock verdict (SINGLE_CONDITION) — never a refusal."""
    df = sweep_df(wds=(2.0,), seeds=(0, 1, 2, 3))
    out, doc = audit(df, tmp_path)
    expect_audit(out)
    (study,) = doc["studies"]
    assert study["axis"] is None and study["verdict"] is None and study["orderings"] == []
    assert [c["n_runs"] for c in study["cells"]] == [4]
    assert len(study["runs"]) == 4
    assert "SINGLE_CONDITION" in {f["code"] for f in doc["findings"]}
    out, doc = audit(df, tmp_path, "--by", "wd")
    expect_audit_verdict(out, doc, exit_code=1, verdicts=[None], failing={"SNAPSHOT_TRANSIENT"},
                         findings={"LOW_POWER_DESCRIPTIVE"})


def test_no_axis_with_a_varying_text_condition_is_refused(tmp_path: Path) -> None:
    """Runs that differ in a text condition are not replicates: no pooling, a refusal that
    names the --cell to split them by."""
    df = pd.concat([sweep_df(wds=(2.0,), arch="a"),
                    sweep_df(wds=(2.0,), arch="b").assign(run=lambda d: "b" + d["run"])])
    out, _ = audit(df, tmp_path)
    expect_error(out, E.NO_AXIS)
    assert "--cell arch" in out.stderr


def test_axis_with_one_value_per_study(tmp_path: Path) -> None:
    df = pd.concat([sweep_df(wds=(1.0,), arch="a"),
                    sweep_df(wds=(2.0,), arch="b").assign(run=lambda d: "b" + d["run"])])
    out, doc = audit(df, tmp_path, "--by", "wd", "--cell", "arch")
    doc = expect_audit_verdict(out, doc, exit_code=1, verdicts=[None, None],
                               failing={"SNAPSHOT_TRANSIENT"}, findings={"LOW_POWER_DESCRIPTIVE"})
    assert [s["study"] for s in doc["studies"]] == [{"arch": "a"}, {"arch": "b"}]


def test_one_seed_per_cell(tmp_path: Path) -> None:
    out, doc = audit(sweep_df(seeds=(0,)), tmp_path)
    doc = expect_audit_verdict(out, doc, **SWEEP)
    assert [c["n_runs"] for c in doc["studies"][0]["cells"]] == [1, 1, 1]


def test_shuffled_rows_same_audit(tmp_path: Path) -> None:
    df = sweep_df()
    _, a = audit(df, tmp_path)
    _, b = audit(df.sample(frac=1.0, random_state=3), tmp_path)
    assert a is not None and b is not None
    assert a["studies"] == b["studies"]
    assert a["summary"]["verdicts"] == b["summary"]["verdicts"]
    assert a["summary"]["failing_codes"] == b["summary"]["failing_codes"]
    assert [f for f in b["findings"] if f["code"] != "UNSORTED_STEPS"] == a["findings"]


def test_identical_duplicate_rows_set_aside(tmp_path: Path) -> None:
    df = sweep_df()
    out, doc = audit(pd.concat([df, df], ignore_index=True), tmp_path)
    assert doc is not None, str(out)
    assert doc["input"]["set_aside"].get("duplicate_identical") == len(df)


def test_run_that_repeats_one_step(tmp_path: Path) -> None:
    df = sweep_df()
    rep = pd.DataFrame({"run": "same-step", "step": [100] * 50, "test_acc": 0.5,
                        "train_acc": 1.0, "emb_erank": 9.0, "seed": 0, "wd": 1.0})
    out, doc = audit(pd.concat([df, rep], ignore_index=True), tmp_path)
    # 50 identical rows at one step: one point, set aside as too short; the sweep audited
    doc = expect_audit_verdict(out, doc, **SWEEP, findings={"DUPLICATE_ROWS", "TOO_SHORT"})
    assert "same-step" in doc["input"]["runs_too_short"]


def test_extreme_steps(tmp_path: Path) -> None:
    """Steps up to the largest allowed (2**53), far apart: no overflow, no crash."""
    steps = np.array([0, 1, 2**40, 2**50, 2**52, 2**53 - 1, 2**53], dtype=np.int64)
    frames = []
    for wd in (1.0, 2.0, 3.0):
        for seed in (0, 1):
            frames.append(pd.DataFrame({
                "run": f"w{wd}s{seed}", "step": steps, "wd": wd, "seed": seed,
                "test_acc": [0, 0.1, 0.5, 0.95, 0.99, 1, 1], "train_acc": 1.0,
                "emb_erank": [30, 30, 28, 20, 10, 9, 9]}))
    out, doc = audit(pd.concat(frames, ignore_index=True), tmp_path)
    # 7 points per run: 2 in the last 10 % of the span, too few for a floor, so no cell passes
    doc = expect_audit_verdict(out, doc, **NOTHING, findings={"FLOOR_TOO_FEW_POINTS"})
    for r in doc["studies"][0]["runs"]:  # the steps kept exactly
        assert (r["t_grok"]["lower"], r["t_grok"]["value"]) == (2**40, 2**50), r


@pytest.mark.parametrize("value, expected", [
    (1e308, SWEEP), (1e-308, SWEEP),  # a scale changes nothing
    # negated, the metric rises: it never compressed
    (-1e308, {**NOTHING, "findings": {"NO_COMPRESSION"}}),
    # subnormal: the values underflow to {0, 5e-324}; the drop to 0 is read as logged (a
    # compression 700 steps after the grok), the floor 0 leaves the snapshot unjudged
    (5e-324, {"exit_code": 0, "verdicts": ["SINGLE_CLOCK_SMALL_LAG"],
              "findings": {"NONPOSITIVE_FLOOR"}}),
])
def test_extreme_metric_values(tmp_path: Path, value: float, expected: dict) -> None:
    df = sweep_df()
    df["emb_erank"] = df["emb_erank"] / 26.0 * value
    out, doc = audit(df, tmp_path)
    expect_audit_verdict(out, doc, **expected)


def test_huge_run_id_and_many_columns(tmp_path: Path) -> None:
    df = sweep_df(run_name=lambda wd, s: f"{wd}-{s}-" + "x" * 100_000)
    for i in range(8):
        df[f"m{i}_erank"] = df["emb_erank"] * (1 + i / 100)
    for i in range(300):
        df[f"const{i}"] = "same"
    out, doc = audit(df, tmp_path)
    assert doc is not None, str(out)
    assert len(doc["input"]["metrics"]) == 9


def test_long_runs(tmp_path: Path) -> None:
    steps = np.arange(0, 40_000, dtype=np.int64)
    out, doc = audit(sweep_df(seeds=(0,), steps=steps), tmp_path)
    assert doc is not None, str(out)
    assert doc["input"]["rows_kept"] == 3 * steps.size


@pytest.mark.slow
def test_100k_runs_of_3_steps(tmp_path: Path) -> None:
    """100 000 runs × 3 steps: the command finishes (a real process, its memory its own) and
    the audit is correct: every run kept, 10 cells of 10 000 runs."""
    import grokaudit

    R = 100_000
    df = pd.DataFrame({
        "run": np.repeat(np.array([f"r{i}" for i in range(R)], dtype=object), 3),
        "step": np.tile(np.array([0, 100, 200], dtype=np.int64), R),
        "test_acc": np.tile([0.1, 0.95, 0.99], R),
        "train_acc": np.tile([0.5, 1.0, 1.0], R),
        "emb_erank": np.tile([10.0, 8.0, 5.0], R),
        "wd": np.repeat(np.arange(R) % 10 + 1.0, 3),
        "seed": np.repeat(np.arange(R) // 10, 3),
    })
    p = write_parquet(df, tmp_path / "big.parquet")
    out = sub(["check", p, "-q"], cwd=tmp_path)
    expect_audit(out)
    result = grokaudit.audit_path(p)
    assert result.exit_code == out.exit_code
    assert result.input["runs_kept"] == R and result.input["rows_kept"] == 3 * R
    (study,) = result.studies
    assert [c.n_runs for c in study.cells] == [R // 10] * 10


# -- claims on degenerate logs -------------------------------------------------------------------

@pytest.mark.parametrize("args, expected", [
    # both runs grok: no transition to locate (a warning, not a critical alarm)
    (["transition", "--by", "wd", "--n-resamples", "20"],
     {"exit_code": 0, "findings": {"NO_TRANSITION"}}),
    # one pair: the exact test cannot reach p < 0.05 (critical by default for a claim)
    (["compare", "--by", "wd", "--pair", "seed", "--arms", "1.0,2.0"],
     {"exit_code": 1, "failing": {"UNDERPOWERED"}}),
    # two runs, 10 draws: the nulls cannot reach p < 0.05, specificity not shown
    (["precursor", "--signal", "emb_erank", "--n-perm", "10"],
     {"exit_code": 1, "failing": {"PRECURSOR_NOT_SPECIFIC"}, "findings": {"PEAK_AT_WINDOW_EDGE"}}),
])
def test_claims_on_a_two_run_log(tmp_path: Path, args: list, expected: dict) -> None:
    df = sweep_df(wds=(1.0, 2.0), seeds=(0,))
    p = write_parquet(df, tmp_path / "l.parquet")
    name, *rest = args
    out = cli([name, p, *rest, "--json", tmp_path / "c.json"], cwd=tmp_path)
    expect_audit_verdict(out, strict_json((tmp_path / "c.json").read_text()), **expected)


def test_report_on_a_single_cell(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the report needs the [report] extra")
    p = write_parquet(sweep_df(wds=(2.0,)), tmp_path / "l.parquet")
    out = cli(["report", p, "-o", tmp_path / "r.html", "--by", "wd"], cwd=tmp_path)
    expect_audit(out, 1)  # the report exits as check does on the same log and options:
    assert (tmp_path / "r.html").stat().st_size > 0
    same = cli(["check", p, "--by", "wd", "--json", "-"], cwd=tmp_path)
    expect_audit_verdict(same, exit_code=1, verdicts=[None], failing={"SNAPSHOT_TRANSIENT"},
                         findings={"LOW_POWER_DESCRIPTIVE"})


def test_one_run_under_the_reference_profile_is_audited(tmp_path) -> None:
    """One run (no axis, no ordering) under --profile reference: an audit, never an internal
    error (the v1.5 study numbers read orderings that a study without an axis has none of)."""
    from helpers.hostile import cli, expect_audit, sweep_df, write_parquet

    df = sweep_df()
    p = write_parquet(df[df["run"] == df["run"].iloc[0]], tmp_path / "one.parquet")
    expect_audit(cli(["check", p, "--profile", "reference"]))
