"""Bad input (AUDIT_SPEC §6): exit code 2, a one-line message naming the problem, no
traceback; and nothing is silently dropped."""

import json

import grokaudit
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from grokaudit import LogFormatError, Reason
from grokaudit.cli import cli
from helpers.core_builders import cells_from


def run_cli(*args):
    r = CliRunner().invoke(cli, list(args), catch_exceptions=True)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r


def good():
    return cells_from([(1.1, 2000, 9000), (1.2, 3000, 11000), (1.3, 4000, 13000)])


def write(df, path, fmt="parquet"):
    if fmt == "parquet":
        grokaudit.write_table(df, path)
    elif fmt == "csv":
        df.to_csv(path, index=False)
    else:
        df.to_json(path, orient="records", lines=True)
    return str(path)


def assert_input_error(res, *names):
    assert res.exit_code == 2, res.output
    err = res.stderr
    assert "Traceback" not in res.output and err.startswith("error:")
    assert len(err.strip().splitlines()) == 1
    for n in names:
        assert n in err


@pytest.mark.parametrize("col", ["run", "step", "test_acc"])
def test_missing_required_column(tmp_path, col):
    p = str(tmp_path / "x.parquet")
    good().drop(columns=[col]).to_parquet(p)  # grokaudit's own writer refuses such a table
    assert_input_error(run_cli("check", p, "--by", "rho"), p, repr(col))


def test_accuracy_under_another_name_is_read_and_named(tmp_path):
    """A table whose test accuracy is called val_acc is audited as if it were test_acc, and
    the audit says which column it read (ACCURACY_COLUMN_CHOSEN), as every command does."""
    p = write(good().rename(columns={"test_acc": "val_acc"}), tmp_path / "x.csv", "csv")
    ref = run_cli("check", write(good(), tmp_path / "y.csv", "csv"), "--by", "rho",
                  "--json", "-")
    res = run_cli("check", p, "--by", "rho", "--json", "-")
    doc, doc_ref = json.loads(res.output), json.loads(ref.output)
    assert res.exit_code == ref.exit_code
    assert doc["studies"] == doc_ref["studies"]
    chosen = [f for f in doc["findings"] if f["code"] == "ACCURACY_COLUMN_CHOSEN"]
    assert [f["evidence"]["column"] for f in chosen] == ["val_acc"]
    assert chosen[0]["evidence"]["target"] == "test_acc"
    assert chosen[0]["severity"] == "info" and chosen[0]["evidence"]["no_split_word"] is False


@pytest.mark.parametrize("name", ["accuracy", "mask_rcnn/accuracy", "acc_pose"])
def test_a_bare_accuracy_read_as_the_test_accuracy_is_a_warning(tmp_path, name):
    """A log whose only accuracy names no split (detectron2's metrics.json, MMPose's acc_pose,
    Keras without validation) has it read as the test accuracy, as a last resort: often the
    training batches' accuracy, whose t_grok is no generalization time. That was an info line;
    it is a warning, its evidence saying why."""
    p = write(good().rename(columns={"test_acc": name}).drop(columns=["train_acc"]),
              tmp_path / "x.csv", "csv")
    doc = json.loads(run_cli("check", p, "--by", "rho", "--json", "-").output)
    chosen = [f for f in doc["findings"] if f["code"] == "ACCURACY_COLUMN_CHOSEN"
              and f["evidence"]["target"] == "test_acc"]
    assert [f["evidence"]["column"] for f in chosen] == [name]
    assert chosen[0]["severity"] == "warning" and chosen[0]["evidence"]["no_split_word"] is True


def test_unknown_metric(tmp_path):
    p = write(good(), tmp_path / "x.parquet")
    assert_input_error(run_cli("check", p, "--by", "rho", "--metric", "nope"), "'nope'")


def test_axis_cannot_be_inferred_when_several_conditions_vary(tmp_path):
    df = good()
    df["lr"] = df["rho"] * 1e-3
    p = write(df, tmp_path / "x.parquet")
    assert_input_error(run_cli("check", p), "lr", "rho", "--by")


def test_axis_inferred_when_one_condition_varies(tmp_path):
    p = write(good(), tmp_path / "x.parquet")
    res = run_cli("check", p, "--json", "-")
    assert json.loads(res.output)["config"]["axis"] == "rho"


def test_duplicate_axis_values_across_arms(tmp_path):
    a, b = good(), good()
    b["run"] = b["run"] + "_ln"
    b["arch"] = "ln"
    a["arch"] = "mlp"
    p = write(pd.concat([a, b]), tmp_path / "x.parquet")
    res = run_cli("check", p, "--by", "rho")
    assert_input_error(res, "DUPLICATE_AXIS_VALUES", "--cell arch")
    assert run_cli("check", p, "--by", "rho", "--cell", "arch").exit_code in (0, 1)
    with pytest.raises(LogFormatError) as ei:
        grokaudit.audit_table(pd.concat([a, b]), by="rho")
    assert ei.value.code == Reason.DUPLICATE_AXIS_VALUES.value and ei.value.column == "arch"


def test_percent_accuracy_is_read_as_percent_and_said(tmp_path):
    """Percent accuracy is decided per column (a value above 1 cannot be a fraction), read
    as its fractions, and reported (ACCURACY_IN_PERCENT); --acc-scale 100 gives the same
    audit, --acc-scale 1 refuses values above 1."""
    df = good()
    df["test_acc"] *= 100
    df["train_acc"] *= 100
    p = write(df, tmp_path / "x.parquet")
    auto = run_cli("check", p, "--by", "rho", "--json", "-")
    ok = run_cli("check", p, "--by", "rho", "--acc-scale", "100", "--json", "-")
    ref = run_cli("check", write(good(), tmp_path / "y.parquet"), "--by", "rho", "--json", "-")
    assert json.loads(ok.output)["studies"] == json.loads(ref.output)["studies"]
    assert json.loads(auto.output)["studies"] == json.loads(ref.output)["studies"]
    pct = [f for f in json.loads(auto.output)["findings"] if f["code"] == "ACCURACY_IN_PERCENT"]
    assert sorted(f["evidence"]["column"] for f in pct) == ["test_acc", "train_acc"]
    assert all(f["evidence"]["why"] == "percent" for f in pct)
    res = run_cli("check", p, "--by", "rho", "--acc-scale", "1")
    assert_input_error(res, "test_acc", "ACCURACY_OUT_OF_RANGE")


def test_percent_column_that_stays_below_one_follows_its_sibling(tmp_path):
    """A test accuracy that never exceeds 1 % logged beside a train accuracy in percent is
    percent too (like_sibling, a warning), never silently a fraction."""
    df = good()
    df["train_acc"] *= 100
    df["test_acc"] = df["test_acc"] * 0.9  # at most 0.9 %: it never learned
    p = write(df, tmp_path / "x.parquet")
    doc = json.loads(run_cli("check", p, "--by", "rho", "--json", "-").output)
    pct = {f["evidence"]["column"]: f for f in doc["findings"]
           if f["code"] == "ACCURACY_IN_PERCENT"}
    assert pct["test_acc"]["evidence"]["why"] == "like_sibling"
    assert pct["test_acc"]["severity"] == "warning"
    assert {f["code"] for f in doc["findings"]} >= {"NO_GROK"}


def test_conflicting_duplicate_rows(tmp_path):
    df = good()
    dup = df.iloc[[10]].copy()
    dup["emb_erank"] += 1.0
    p = write(pd.concat([df, dup]), tmp_path / "x.parquet")
    assert_input_error(run_cli("check", p, "--by", "rho"), "duplicate", "--on-duplicate")
    res = run_cli("check", p, "--by", "rho", "--on-duplicate", "last", "--json", "-")
    inp = json.loads(res.output)["input"]
    assert inp["set_aside"] == {"duplicate_last_wins": 1}
    assert inp["rows_read"] == len(df) + 1 and inp["rows_kept"] == len(df)


@pytest.mark.parametrize("mode", ["first", "last"])
@pytest.mark.parametrize("values", [(0.5, 0.6, 0.6), (0.5, 0.5, 0.6), (0.6, 0.5, 0.5),
                                    (0.5, 0.6, 0.5), (0.5, 0.5, 0.5)])
def test_one_step_logged_three_times_keeps_one_row_whichever_repeat(mode, values):
    """Three rows of one (run, step), some repeating the row before them: the group keeps
    exactly its first or its last row, and every other row is counted once (found in round 6:
    with the last two identical, ``last`` kept no row of the step)."""
    from grokaudit.schema import build_log_table

    t = pd.DataFrame({"run": ["a"] * 7, "step": [0, 1, 2, 2, 2, 3, 4],
                      "test_acc": [0.1, 0.2, *values, 0.8, 0.9]})
    log = build_log_table(t, on_duplicate=mode)
    assert log.step.tolist() == [0, 1, 2, 3, 4]
    want = values[0] if mode == "first" else values[-1]
    assert log.test_acc.tolist() == [0.1, 0.2, want, 0.8, 0.9]
    s = log.summary
    assert s.rows_kept + sum(s.set_aside.values()) == s.rows_read == 7


def test_identical_duplicate_rows_are_counted(tmp_path):
    df = good()
    res = grokaudit.audit_table(pd.concat([df, df.iloc[:4]]), by="rho")
    assert res.input["set_aside"] == {"duplicate_identical": 4}
    assert Reason.DUPLICATE_ROWS in res.codes


def test_unsorted_steps_are_sorted():
    df = good()
    shuffled = df.sample(frac=1.0, random_state=0)
    a = grokaudit.audit_table(df, by="rho").to_dict()
    b = grokaudit.audit_table(shuffled, by="rho").to_dict()
    assert a["studies"] == b["studies"]
    assert b["input"]["sorted_input"] is False


def test_nan_metric_values_are_missing_and_counted():
    df = good()
    df.loc[df.index[5:15], "emb_erank"] = np.nan
    res = grokaudit.audit_table(df, by="rho")
    assert res.input["missing_values"]["emb_erank"] == 10
    assert res.input["rows_kept"] == len(df)


def test_infinite_metric_is_an_error(tmp_path):
    df = good()
    df.loc[df.index[7], "emb_erank"] = np.inf
    p = write(df, tmp_path / "x.parquet")
    assert_input_error(run_cli("check", p, "--by", "rho"), "emb_erank", "inf")


def test_condition_not_constant_within_a_run(tmp_path):
    df = good()
    df["arch"] = "mlp"
    df.loc[df.index[3], "arch"] = "tf"
    p = write(df, tmp_path / "x.jsonl", "jsonl")
    assert_input_error(run_cli("check", p, "--by", "rho"), "arch", df.loc[df.index[3], "run"])


def test_empty_file_and_empty_table(tmp_path):
    p = tmp_path / "empty.csv"
    p.write_text("")
    assert_input_error(run_cli("check", str(p)), str(p))
    q = write(good().iloc[:0], tmp_path / "none.parquet")
    assert_input_error(run_cli("check", q, "--by", "rho"), q)


def test_run_with_fewer_than_three_points_is_set_aside_and_reported():
    df = good()
    short = df[df["run"] == df["run"].iloc[0]].iloc[:2].assign(run="tiny")
    res = grokaudit.audit_table(pd.concat([df, short]), by="rho")
    assert res.input["runs_too_short"] == ["tiny"]
    assert res.input["set_aside"] == {"run_too_short": 2}
    f = next(f for f in res.findings if f.code == Reason.TOO_SHORT)
    assert f.runs == ("tiny",)


def test_rows_with_nothing_are_set_aside_and_counted():
    df = good()
    extra = df.iloc[:3].copy()
    extra["step"] += 1
    extra[["test_acc", "train_acc", "emb_erank"]] = np.nan
    res = grokaudit.audit_table(pd.concat([df, extra]), by="rho")
    assert res.input["set_aside"] == {"empty_row": 3}
    assert res.input["rows_read"] == res.input["rows_kept"] + 3


def test_unknown_file_type_and_missing_file(tmp_path):
    p = tmp_path / "x.xlsx"
    p.write_text("nope")
    assert_input_error(run_cli("check", str(p)), str(p))
    assert_input_error(run_cli("check", str(tmp_path / "missing.parquet")), "missing.parquet")


def test_bad_config_value_is_a_usage_error(tmp_path):
    p = write(good(), tmp_path / "x.parquet")
    cfgf = tmp_path / "grokaudit.toml"
    cfgf.write_text("grok_threshold = 1.5\n")
    assert_input_error(run_cli("check", p, "--config", str(cfgf)), "grok_threshold")
    cfgf.write_text("no_such_option = 1\n")
    assert_input_error(run_cli("check", p, "--config", str(cfgf)), "no_such_option")


def test_an_empty_run_id_in_a_csv_is_a_missing_value_as_in_parquet(tmp_path):
    """pandas writes a None run id as an empty CSV cell, read as "": the row became a run of
    its own, set aside as too short without its name (Parquet: MISSING_VALUES)."""
    rows = [{"run": r, "step": s, "test_acc": 0.1 + s / 1000, "train_acc": 1.0}
            for r in ("a", "b") for s in range(0, 600, 100)]
    rows[3]["run"] = None
    df = pd.DataFrame(rows)
    df.to_csv(tmp_path / "log.csv", index=False)
    df.to_parquet(tmp_path / "log.parquet", index=False)
    for name in ("log.csv", "log.parquet"):
        r = CliRunner().invoke(cli, ["check", str(tmp_path / name), "-q"])
        assert r.exit_code == 2, r.output
        assert r.stderr.rstrip().endswith("[MISSING_VALUES]"), r.stderr


def test_an_accuracy_constant_in_every_run_is_a_series_not_a_condition(tmp_path):
    """Ultralytics writes ``metrics/accuracy_top5``, which sits at 1.0 through a short run: it
    was read as a condition (listed among the settings, and a candidate axis where runs held
    two values) while inspect offered it as the test accuracy. An accuracy is a per-step
    value; a per-run result (``final_test_acc``) stays an outcome."""
    from grokaudit.schema import build_log_table

    df = good()
    df["metrics/accuracy_top5"] = np.where(df["rho"] == df["rho"].min(), 0.99, 1.0)
    df["final_test_acc"] = df.groupby("run")["test_acc"].transform("last")
    df["acc_grok"] = 0.9  # a threshold a config names: a setting
    log = build_log_table(df)
    assert "metrics/accuracy_top5" in log.series
    assert "metrics/accuracy_top5" not in log.conditions.columns
    assert "final_test_acc" in log.summary.outcomes
    assert "acc_grok" in log.conditions.columns
    p = write(df, tmp_path / "x.csv", "csv")
    res = run_cli("check", p, "--json", "-")  # one condition varies: rho, not the accuracy
    assert json.loads(res.output)["config"]["axis"] == "rho"


@pytest.mark.parametrize("name", ["val_acc_patience", "test_acc_cutoff", "train_acc_stop"])
def test_a_setting_named_after_an_accuracy_stays_the_axis(tmp_path, name):
    from grokaudit.schema import build_log_table

    df = good().rename(columns={"rho": name})
    log = build_log_table(df)
    assert name in log.conditions.columns and name not in log.series


@pytest.mark.parametrize(("dtype", "bad"), [
    (np.float32, 1.0000001), (np.float32, 1.1), (np.float32, -0.01), (np.float32, 150.0),
    (np.float64, 1.0000001), (np.float64, -0.01)])
def test_a_refused_accuracy_prints_its_extremes_as_stored(dtype, bad):
    """An ``ACCURACY_OUT_OF_RANGE`` refusal's max and min read back, in the column's own type,
    as the values it holds: a float32 1.0000001 is not printed as "1" (beside "value(s) above
    1"), nor a float32 1.1 as its float64 widening (1.100000024)."""
    import re

    from grokaudit.schema import build_log_table

    df = good()
    acc = df["test_acc"].to_numpy(dtype=dtype).copy()
    acc[3] = bad
    df["test_acc"] = acc
    with pytest.raises(LogFormatError) as err:
        build_log_table(df)
    assert err.value.code == "ACCURACY_OUT_OF_RANGE"
    printed = re.findall(r"\b(min|max) (-?[0-9][0-9.e+-]*)", str(err.value))
    assert printed
    for which, text in printed:
        assert dtype(float(text)) == (np.nanmax(acc) if which == "max" else np.nanmin(acc))
        assert len(text) <= len(repr(bad)) + 2
