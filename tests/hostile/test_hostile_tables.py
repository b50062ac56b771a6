"""Malformed canonical tables (Parquet, CSV, TSV, JSONL): each is exit 2 with the ErrorCode of
what is wrong — or, where the input is valid, the correct audit — and the input is never
changed."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

# hypothesis (the `test` extra) drives some tests here and its profiles are imported: without it
# the whole module skips, with this reason (issue 23: a venv with no extra skips, never fails)
pytest.importorskip("hypothesis", reason="hypothesis is not installed (the `test` extra)")

from grokaudit.adversarial_suite import profiles
from grokaudit.errors import ErrorCode, LogFormatError
from helpers.hostile import (
    assert_unchanged,
    cli,
    expect_audit_verdict,
    expect_error,
    finding_codes,
    snapshot,
    sub,
    sweep_df,
    write_parquet,
)
from hypothesis import example, given
from hypothesis import strategies as st

E = ErrorCode
FORMATS = ("parquet", "csv", "tsv", "jsonl")
#: the audit of the canonical sweep (``sweep_df``): what a valid log of it must give
SWEEP = {"exit_code": 1, "verdicts": ["ONE_CLOCK_LARGE_LAG"], "failing": {"SNAPSHOT_TRANSIENT"}}


def write(df: pd.DataFrame, p: Path) -> Path:
    fmt = p.suffix[1:]
    if fmt == "parquet":
        return write_parquet(df, p)
    if fmt == "jsonl":
        df.to_json(p, orient="records", lines=True)
    else:
        df.to_csv(p, index=False, sep="\t" if fmt == "tsv" else ",")
    return p


def check(p: Path, *args: object, real: bool = False):  # type: ignore[no-untyped-def]
    before = snapshot(p.parent)
    out = (sub if real else cli)(["check", p, *args], cwd=p.parent)
    assert_unchanged(before, p.parent)
    return out


# -- broken bytes -------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
def test_empty_file(tmp_path: Path, fmt: str) -> None:
    p = tmp_path / f"e.{fmt}"
    p.write_bytes(b"")
    expect_error(check(p), E.FILE_EMPTY)


@pytest.mark.parametrize("fmt", FORMATS)
def test_truncated_file(tmp_path: Path, fmt: str) -> None:
    p = write(sweep_df(), tmp_path / f"t.{fmt}")
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])
    # a text table cut in a line: its last row is incomplete (a CSV/TSV row of 3 of its 7
    # fields, a JSONL record cut in a string) -- refused, never read as a shorter log
    expect_error(check(p), E.FILE_UNREADABLE)


def test_truncated_parquet_real_process(tmp_path: Path) -> None:
    p = write(sweep_df(), tmp_path / "t.parquet")
    p.write_bytes(p.read_bytes()[:-100])
    expect_error(check(p, real=True), E.FILE_UNREADABLE)


def test_parquet_magic_with_garbage(tmp_path: Path) -> None:
    p = tmp_path / "g.parquet"
    p.write_bytes(b"PAR1" + bytes(range(256)) * 4 + b"PAR1")
    expect_error(check(p), E.FILE_UNREADABLE)


@profiles.scaled(0.3)
@given(data=st.binary(min_size=1, max_size=300), fmt=st.sampled_from(FORMATS))
@example(data=b"\x00" * 64, fmt="csv")
@example(data=b"\xff\xfe\x00r\x00u\x00n", fmt="csv")
@example(data=b"run,step,test_acc\n\"unterminated", fmt="csv")
@example(data=b"{\"run\": ", fmt="jsonl")
@example(data=b"[1, 2, 3]\n", fmt="jsonl")
@example(data=b"\"just a string\"\n", fmt="jsonl")
@example(data=b"null\n", fmt="jsonl")
def test_garbage_bytes(tmp_path_factory: pytest.TempPathFactory, data: bytes, fmt: str) -> None:
    p = tmp_path_factory.mktemp("garbage") / f"g.{fmt}"
    p.write_bytes(data)
    out = check(p)
    expect_error(out)


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_header_only(tmp_path: Path, fmt: str) -> None:
    p = tmp_path / f"h.{fmt}"
    sep = "\t" if fmt == "tsv" else ","
    p.write_text(sep.join(["run", "step", "test_acc", "emb_erank", "wd"]) + "\n")
    expect_error(check(p), E.NO_ROWS)


def test_header_only_parquet(tmp_path: Path) -> None:
    p = write_parquet(sweep_df().iloc[:0], tmp_path / "h.parquet")
    expect_error(check(p), E.NO_ROWS)


def test_jsonl_empty_objects(tmp_path: Path) -> None:
    p = tmp_path / "e.jsonl"
    p.write_text("{}\n{}\n")
    expect_error(check(p), E.MISSING_COLUMN, E.NO_ROWS)


def test_directory_of_shards(tmp_path: Path) -> None:
    d = tmp_path / "shards"
    d.mkdir()
    expect_error(cli(["check", d], cwd=tmp_path), E.NO_SHARDS, E.UNKNOWN_FORMAT, E.FILE_EMPTY)
    df = sweep_df()
    write_parquet(df, d / "a.parquet")
    write_parquet(df.assign(step=df["step"].astype(str)), d / "b.parquet")
    expect_error(cli(["check", d], cwd=tmp_path), E.SHARDS_INCOMPATIBLE, E.BAD_COLUMN_TYPE)
    (d / "b.parquet").write_bytes(b"not parquet")
    expect_error(cli(["check", d], cwd=tmp_path), E.FILE_UNREADABLE)


@pytest.mark.parametrize("name, code", [("log.txt", (E.UNKNOWN_FILE_TYPE, E.UNKNOWN_FORMAT)),
                                        ("log", (E.UNKNOWN_FILE_TYPE, E.UNKNOWN_FORMAT)),
                                        ("log.parquet.gz", (E.UNKNOWN_FILE_TYPE,
                                                            E.UNKNOWN_FORMAT))])
def test_unknown_file_types(tmp_path: Path, name: str, code: tuple) -> None:
    (tmp_path / name).write_bytes(b"run,step,test_acc\nr,0,0.5\n")
    expect_error(check(tmp_path / name), *code)


def test_missing_file(tmp_path: Path) -> None:
    expect_error(cli(["check", tmp_path / "nope.parquet"], cwd=tmp_path), E.FILE_NOT_FOUND)
    expect_error(sub(["check", tmp_path / "nope.csv"], cwd=tmp_path), E.FILE_NOT_FOUND)


def test_input_is_a_fifo(tmp_path: Path) -> None:
    """A FIFO as the log: refused, not read (a reader would block forever)."""
    import os

    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    os.mkfifo(tmp_path / "log.parquet")
    out = sub(["check", tmp_path / "log.parquet"], cwd=tmp_path, timeout=30)
    expect_error(out)


@pytest.mark.parametrize("fmt, codes", [
    # without the reader's extra, MISSING_EXTRA is the answer (and as good a refusal)
    ("tensorboard", (E.FORMAT_MISMATCH, E.FILE_UNREADABLE, E.CORRUPT_RECORD)
     if importlib.util.find_spec("tensorboard") else (E.MISSING_EXTRA,)),
    ("no-such-format", (E.UNKNOWN_FORMAT,)),
    ("npz", (E.FORMAT_MISMATCH, E.FILE_UNREADABLE)),
    ("mlflow-sqlite", (E.FORMAT_MISMATCH, E.FILE_UNREADABLE)),
    ("wandb-offline", (E.FORMAT_MISMATCH, E.FILE_UNREADABLE)
     if importlib.util.find_spec("wandb") else (E.MISSING_EXTRA,)),
])
def test_wrong_format_named(tmp_path: Path, fmt: str, codes: tuple) -> None:
    p = write_parquet(sweep_df(), tmp_path / "l.parquet")
    expect_error(check(p, "--format", fmt), *codes)


# -- wrong values -------------------------------------------------------------------------------

def _mutate(how: str) -> tuple[pd.DataFrame | pa.Table, tuple[ErrorCode, ...]]:
    df = sweep_df()
    n = len(df)
    if how == "null_run":
        return df.assign(run=df["run"].where(df.index != 7, None)), (E.MISSING_VALUES,)
    if how == "null_step":
        t = pa.Table.from_pandas(df, preserve_index=False)
        steps = pa.array([None if i == 7 else int(v) for i, v in enumerate(df["step"])],
                         pa.int64())
        return t.set_column(t.schema.get_field_index("step"), "step", steps), (
            E.MISSING_VALUES,)
    if how == "negative_step":
        return df.assign(step=df["step"] - 200), (E.NEGATIVE_STEP,)
    if how == "float_step":
        return df.assign(step=df["step"] + 0.5), (E.NON_INTEGER_STEP,)
    if how == "nan_step":
        return df.assign(step=np.where(df.index == 7, np.nan, df["step"])), (
            E.NON_INTEGER_STEP, E.MISSING_VALUES)
    if how == "inf_step":
        return df.assign(step=np.where(df.index == 7, np.inf, df["step"])), (
            E.NON_INTEGER_STEP, E.STEP_OUT_OF_RANGE)
    if how == "huge_step":
        return df.assign(step=df["step"] + 2**53 + 2), (E.STEP_OUT_OF_RANGE,)
    if how == "huge_float_step":
        return df.assign(step=df["step"].astype(float) * 1e300), (E.STEP_OUT_OF_RANGE,)
    if how == "uint64_max_step":
        steps = df["step"].to_numpy().astype(np.uint64)
        steps[7] = np.iinfo(np.uint64).max
        return df.assign(step=steps), (E.STEP_OUT_OF_RANGE,)
    if how == "int64_min_step":
        steps = df["step"].to_numpy().copy()
        steps[7] = np.iinfo(np.int64).min
        return df.assign(step=steps), (E.NEGATIVE_STEP, E.STEP_OUT_OF_RANGE)
    if how == "string_step":
        return df.assign(step=df["step"].astype(str) + "s"), (E.BAD_COLUMN_TYPE,)
    if how == "bool_step":
        return df.assign(step=df["step"] > 100), (E.BAD_COLUMN_TYPE,)
    if how == "string_acc":
        return df.assign(test_acc=df["test_acc"].astype(str) + "%"), (E.BAD_COLUMN_TYPE,)
    if how == "inf_metric":
        return df.assign(emb_erank=np.where(df.index == 7, np.inf, df["emb_erank"])), (
            E.INFINITE_VALUE,)
    if how == "neg_inf_metric":
        return df.assign(emb_erank=np.where(df.index == 7, -np.inf, df["emb_erank"])), (
            E.INFINITE_VALUE,)
    if how == "inf_acc":
        return df.assign(test_acc=np.where(df.index == 7, np.inf, df["test_acc"])), (
            E.INFINITE_VALUE, E.ACCURACY_OUT_OF_RANGE)
    if how == "negative_acc":
        return df.assign(test_acc=df["test_acc"] - 0.5), (E.ACCURACY_OUT_OF_RANGE,)
    if how == "acc_1_2":
        return df.assign(test_acc=df["test_acc"] * 1.2), (E.ACCURACY_OUT_OF_RANGE,)
    if how == "missing_test_acc":
        return df.drop(columns=["test_acc"]), (E.MISSING_COLUMN,)
    if how == "missing_run":
        return df.drop(columns=["run"]), (E.MISSING_COLUMN,)
    if how == "duplicate_rows":
        return pd.concat([df, df.iloc[[3]].assign(test_acc=0.01)]), (E.DUPLICATE_ROWS,)
    if how == "duplicate_columns":
        t = pa.Table.from_pandas(df, preserve_index=False)
        return t.append_column("test_acc", pa.array(np.zeros(n))), (E.DUPLICATE_COLUMN,)
    if how == "text_condition_changes":
        return df.assign(arch=np.where(df.index == 7, "b", "a")), (E.NOT_CONSTANT_IN_RUN,)
    raise AssertionError(how)


CASES = ["null_run", "null_step", "negative_step", "float_step", "nan_step", "inf_step",
         "huge_step", "huge_float_step", "uint64_max_step", "int64_min_step", "string_step",
         "bool_step", "string_acc", "inf_metric", "neg_inf_metric", "inf_acc",
         "negative_acc", "acc_1_2", "missing_test_acc", "missing_run",
         "duplicate_rows", "duplicate_columns", "text_condition_changes"]


@pytest.mark.parametrize("how", CASES)
def test_bad_values_parquet(tmp_path: Path, how: str) -> None:
    table, codes = _mutate(how)
    p = tmp_path / "b.parquet"
    if isinstance(table, pa.Table):
        pq.write_table(table, p)
    else:
        write_parquet(table, p)
    expect_error(check(p), *codes)


TEXT_CASES = ["null_run", "negative_step", "float_step", "nan_step", "inf_step", "huge_step",
              "uint64_max_step", "string_step", "string_acc", "inf_metric",
              "missing_test_acc", "duplicate_rows", "text_condition_changes"]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
@pytest.mark.parametrize("how", TEXT_CASES)
def test_bad_values_text(tmp_path: Path, how: str, fmt: str) -> None:
    table, codes = _mutate(how)
    assert isinstance(table, pd.DataFrame)
    p = write(table, tmp_path / f"b.{fmt}")
    out = check(p, *(["--json", "-"] if (how, fmt) == ("inf_metric", "jsonl") else []))
    # JSON has no inf: pandas writes null, so the JSONL file holds a missing value instead
    if (how, fmt) == ("inf_step", "jsonl"):  # a record without its step
        expect_error(out, E.MISSING_VALUES)
        return
    if (how, fmt) == ("inf_metric", "jsonl"):  # a metric point not logged: allowed, counted
        doc = expect_audit_verdict(out, **SWEEP, findings={"MISSING_VALUES"})
        assert doc["input"]["missing_values"]["emb_erank"] == 1
        return
    # text tables may read a mistyped column as text: its type is then what is wrong
    extra = (E.BAD_COLUMN_TYPE, E.FILE_UNREADABLE) if how.endswith("_step") else ()
    expect_error(out, *codes, *extra)


def test_csv_step_beyond_uint64(tmp_path: Path) -> None:
    df = sweep_df()
    p = tmp_path / "s.csv"
    df.to_csv(p, index=False)
    text = p.read_text().split("\n")
    head = text[0].split(",")
    i = head.index("step")
    row = text[5].split(",")
    row[i] = "99999999999999999999999999"
    text[5] = ",".join(row)
    p.write_text("\n".join(text))
    expect_error(check(p), E.STEP_OUT_OF_RANGE, E.BAD_COLUMN_TYPE, E.FILE_UNREADABLE)


def test_jsonl_step_beyond_uint64(tmp_path: Path) -> None:
    df = sweep_df()
    rows = df.to_dict(orient="records")
    rows[5]["step"] = 2**70
    p = tmp_path / "s.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    expect_error(check(p), E.STEP_OUT_OF_RANGE, E.BAD_COLUMN_TYPE, E.FILE_UNREADABLE)


def test_jsonl_mixed_types_in_a_column(tmp_path: Path) -> None:
    rows = sweep_df().to_dict(orient="records")
    rows[5]["test_acc"] = "high"
    rows[6]["step"] = [1, 2]
    rows[7]["run"] = {"nested": True}
    p = tmp_path / "m.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    expect_error(check(p), E.BAD_COLUMN_TYPE, E.FILE_UNREADABLE)


# -- percent accuracy and --acc-scale -------------------------------------------------------------

def test_percent_with_acc_scale_is_the_correct_audit(tmp_path: Path) -> None:
    df = sweep_df()
    pct = write_parquet(df.assign(test_acc=df["test_acc"] * 100,
                                  train_acc=df["train_acc"] * 100), tmp_path / "pct.parquet")
    frac = write_parquet(df, tmp_path / "frac.parquet")
    a = cli(["check", pct, "--acc-scale", "100", "--json", "-"], cwd=tmp_path)
    b = cli(["check", frac, "--json", "-"], cwd=tmp_path)
    assert a.exit_code == b.exit_code and a.exit_code in (0, 1), f"{a}\n{b}"
    ja, jb = json.loads(a.stdout), json.loads(b.stdout)
    # the same audit; the percent log also says how its accuracies were read
    assert [f for f in ja["findings"] if f["code"] != "ACCURACY_IN_PERCENT"] == jb["findings"]
    assert sorted(f["evidence"]["why"] for f in ja["findings"]
                  if f["code"] == "ACCURACY_IN_PERCENT") == ["option", "option"]

    def clocks(doc: dict) -> list:
        return [(s["verdict"], [(c["axis_value"], c["n_grokked"], c["t_grok"], c["t_compress"])
                                for c in s["cells"]]) for s in doc["studies"]]

    assert clocks(ja) == clocks(jb)


def _mixed_percent() -> pd.DataFrame:
    df = sweep_df()
    return df.assign(test_acc=np.where(df["wd"] == 1.0, df["test_acc"] * 100, df["test_acc"]))


@pytest.mark.parametrize("fmt", ["parquet", "csv", "jsonl"])
def test_percent_accuracy_reads_as_its_fractions(tmp_path: Path, fmt: str) -> None:
    """Percent accuracy (both columns) is read by the one per-column rule: the audit equals
    the fraction log's, and says so (ACCURACY_IN_PERCENT, info)."""
    df = sweep_df()
    pct = df.assign(test_acc=df["test_acc"] * 100, train_acc=df["train_acc"] * 100)
    a = cli(["check", write(pct, tmp_path / f"p.{fmt}"), "--json", "-"], cwd=tmp_path)
    b = cli(["check", write(df, tmp_path / f"f.{fmt}"), "--json", "-"], cwd=tmp_path)
    da, db = json.loads(a.stdout), json.loads(b.stdout)

    def clocks(doc: dict) -> list:  # x*100/100 may differ from x in the last bit
        return [(s["verdict"], [(c["axis_value"], c["n_grokked"], c["t_grok"], c["t_compress"],
                                 c["gates"]) for c in s["cells"]]) for s in doc["studies"]]

    assert clocks(da) == clocks(db)
    assert da["summary"]["failing_codes"] == db["summary"]["failing_codes"]
    found = {f["evidence"]["column"]: f["severity"] for f in da["findings"]
             if f["code"] == "ACCURACY_IN_PERCENT"}
    assert found == {"test_acc": "info", "train_acc": "info"}


@pytest.mark.parametrize("scale", [None, "100"])
def test_mixed_percent_fraction_never_silently_never_grok(tmp_path: Path,
                                                          scale: str | None) -> None:
    """One column, percent in some runs and fractions in others: read as percent (the
    column's values above 1.5 say so), the runs that stay within [0, 1] named in a warning
    — never silently read as runs that never grokked."""
    df = _mixed_percent()
    p = write_parquet(df, tmp_path / "mixed.parquet")
    out = check(p, "--json", "-", *(("--acc-scale", scale) if scale else ()))
    doc = json.loads(out.stdout)
    (f,) = [f for f in doc["findings"] if f["code"] == "ACCURACY_IN_PERCENT"
            and f["evidence"]["column"] == "test_acc"]
    assert f["severity"] == "warning"
    low = sorted(df.loc[df["wd"] != 1.0, "run"].unique())
    assert f["evidence"]["n_runs_at_most_1"] == len(low)
    assert sorted(f["evidence"]["runs_at_most_1"]) == low


def test_mixed_percent_with_fraction_scale_refused(tmp_path: Path) -> None:
    p = write_parquet(_mixed_percent(), tmp_path / "mixed.parquet")
    expect_error(check(p, "--acc-scale", "1"), E.ACCURACY_OUT_OF_RANGE)


def test_one_stray_value_above_one_is_refused_not_percent(tmp_path: Path) -> None:
    """Two values of 2.0 in a column of fractions do not make it percent (fewer than three
    values above 1.5): refused as out of range, never divided by 100."""
    df = sweep_df()
    df.loc[df.index[[5, 40]], "test_acc"] = 2.0
    expect_error(check(write_parquet(df, tmp_path / "s.parquet")), E.ACCURACY_OUT_OF_RANGE)


def test_acc_scale_on_fractions_refused(tmp_path: Path) -> None:
    p = write_parquet(sweep_df(), tmp_path / "f.parquet")
    expect_error(check(p, "--acc-scale", "100"), E.ACCURACY_OUT_OF_RANGE)


# -- provenance metadata --------------------------------------------------------------------------

@pytest.mark.parametrize("meta", [
    b"{not json", b"\xff\xfe\x00", b"[1, 2]", b'"a string"', b"null", b"42",
    b'{"downsampled_runs": "wd1.0_s0"}', b'{"downsampled_runs": [null]}',
    b'{"downsampled_runs": [[1]]}', b'{"findings": [1, 2]}', b'{"findings": {"a": 1}}',
    b'{"step_unit": 5}', b'{"step_unit": ["steps"]}', b'{"findings": "SOURCE_TRUNCATED"}',
])
def test_malformed_provenance(tmp_path: Path, meta: bytes) -> None:
    p = write_parquet(sweep_df(), tmp_path / "p.parquet", metadata={b"grokaudit": meta})
    expect_error(check(p), E.PROVENANCE_MALFORMED)
    out = cli(["transition", p, "--by", "wd"], cwd=tmp_path)
    expect_error(out, E.PROVENANCE_MALFORMED)


@pytest.mark.parametrize("meta", [
    b'{"findings": [{}]}', b'{"findings": [{"code": 5}]}',
    b'{"findings": [{"code": "NOT_A_REASON", "run": 3}]}',
    b'{"findings": [{"code": "SOURCE_TRUNCATED", "run": "nope", "detail": null}]}',
    b'{"downsampled_runs": ["no-such-run", 7]}', b'{"step_unit": "fortnights"}',
    b'{"schema_version": 999}', b'{"schema_version": "x"}', b"{}",
])
def test_odd_provenance_never_crashes(tmp_path: Path, meta: bytes) -> None:
    """Provenance that is well formed but odd (an entry without a known code, a run the log
    lacks, a future schema version) is tolerated: the log's audit, unchanged, and a finding
    that names a known code (SOURCE_TRUNCATED) is reported as the provenance gives it."""
    plain = write_parquet(sweep_df(), tmp_path / "plain.parquet")
    base = finding_codes(json.loads(cli(["check", plain, "--json", "-"]).stdout))
    p = write_parquet(sweep_df(), tmp_path / "p.parquet", metadata={b"grokaudit": meta})
    assert check(p).exit_code == SWEEP["exit_code"]
    extra = {"SOURCE_TRUNCATED"} if b"SOURCE_TRUNCATED" in meta else set()
    doc = expect_audit_verdict(cli(["check", p, "--json", "-"], cwd=tmp_path), **SWEEP,
                               findings=extra)
    assert finding_codes(doc) == base | extra


def test_malformed_provenance_api(tmp_path: Path) -> None:
    import grokaudit

    p = write_parquet(sweep_df(), tmp_path / "p.parquet", metadata={b"grokaudit": b"{oops"})
    with pytest.raises(LogFormatError) as exc:
        grokaudit.audit_path(p)
    assert exc.value.code == E.PROVENANCE_MALFORMED
    with pytest.raises(LogFormatError) as exc:
        grokaudit.read_table(p)
    assert exc.value.code == E.PROVENANCE_MALFORMED


# -- what to audit -----------------------------------------------------------------------------

@pytest.mark.parametrize("metric", ["test_acc", "step", "run", "train_acc"])
def test_reserved_metric(tmp_path: Path, metric: str) -> None:
    p = write_parquet(sweep_df(), tmp_path / "l.parquet")
    expect_error(check(p, "--metric", metric), E.RESERVED_COLUMN)


@pytest.mark.parametrize("args, codes", [
    (["--metric", "nope"], (E.METRIC_NOT_FOUND,)),
    (["--metric", "wd"], (E.NOT_A_SERIES, E.RESERVED_COLUMN, E.NO_AXIS)),
    (["--metric", "arch"], (E.NOT_A_SERIES, E.BAD_COLUMN_TYPE, E.NOT_NUMERIC)),
    (["--by", "nope"], (E.MISSING_COLUMN, E.NOT_A_CONDITION, E.NO_AXIS)),
    (["--by", "test_acc"], (E.NOT_A_CONDITION, E.RESERVED_COLUMN)),
    (["--by", "run"], (E.NOT_A_CONDITION, E.RESERVED_COLUMN)),
    (["--by", "emb_erank"], (E.NOT_A_CONDITION,)),
    (["--by", "arch"], (E.NOT_NUMERIC, E.NO_AXIS, E.NOT_A_CONDITION)),
    (["--cell", "step"], (E.NOT_A_CONDITION, E.RESERVED_COLUMN)),
    (["--cell", "nope"], (E.MISSING_COLUMN, E.NOT_A_CONDITION)),
    (["--map", "nonsense"], (E.INVALID_OPTION,)),
    (["--cond", "wd=(("], (E.INVALID_OPTION,)),
    (["--run-from", "nowhere"], (E.INVALID_OPTION, E.MISSING_COLUMN)),
])
def test_bad_column_choices(tmp_path: Path, args: list, codes: tuple) -> None:
    df = sweep_df(arch="mlp")
    p = write_parquet(df, tmp_path / "l.parquet")
    expect_error(check(p, *args), *codes)


def test_same_column_as_axis_and_cell(tmp_path: Path) -> None:
    """--by wd --cell wd: a column cannot both vary within a study and split studies; a
    contradictory command line, refused (INVALID_OPTION)."""
    p = write_parquet(sweep_df(), tmp_path / "l.parquet")
    expect_error(check(p, "--by", "wd", "--cell", "wd"), E.INVALID_OPTION)


@pytest.mark.parametrize("command, args, codes", [
    ("transition", ["--by", "nope"], (E.MISSING_COLUMN, E.NOT_A_CONDITION)),
    ("transition", ["--by", "arch"], (E.NOT_NUMERIC,)),
    ("onset", ["--by", "wd,nope"], (E.MISSING_COLUMN, E.NOT_A_CONDITION)),
    ("onset", ["--by", "step"], (E.NOT_A_CONDITION, E.RESERVED_COLUMN)),
    ("dose", ["--by", "wd", "--fit-range", "3,1"], (E.INVALID_OPTION,)),
    ("dose", ["--by", "wd", "--fit-range", "nan,1"], (E.OPTION_OUT_OF_RANGE,)),
    ("dose", ["--by", "wd", "--baseline", "wd"], (E.INVALID_OPTION,)),
    ("dose", ["--by", "wd", "--mediator", "emb_erank", "--baseline", "wd=99", "--raised",
              "wd=3", "--sweep", "seed"], (E.UNKNOWN_VALUE,)),
    ("dose", ["--by", "wd", "--mediator", "nope", "--baseline", "wd=1", "--raised", "wd=3",
              "--sweep", "seed"], (E.METRIC_NOT_FOUND,)),
    # mediation options without --mediator are not silently ignored
    ("dose", ["--by", "wd", "--baseline", "wd=99", "--raised", "wd=3"], (E.INVALID_OPTION,
                                                                         E.UNKNOWN_VALUE)),
    ("dose", ["--by", "wd", "--sweep", "nope"], (E.INVALID_OPTION, E.NOT_A_CONDITION)),
    # the accuracy is the clock a precursor is timed against, not a signal (it said "not a
    # per-step column"); a misspelt signal is named as check names a misspelt --metric
    ("precursor", ["--signal", "test_acc"], (E.RESERVED_COLUMN,)),
    ("precursor", ["--signal", "train_acc"], (E.RESERVED_COLUMN,)),
    ("precursor", ["--signal", "nope"], (E.METRIC_NOT_FOUND,)),
    ("precursor", ["--signal", "wd"], (E.NOT_A_SERIES,)),
    ("compare", ["--by", "arch", "--pair", "seed"], (E.UNKNOWN_VALUE, E.NOT_A_CONDITION,
                                                      E.TOO_FEW_POINTS, E.NO_AXIS,
                                                      E.DUPLICATE_AXIS_VALUES)),
    ("compare", ["--by", "wd", "--pair", "seed", "--arms", "1.0,9.0"], (E.UNKNOWN_VALUE,)),
    ("compare", ["--by", "wd", "--pair", "emb_erank"], (E.NOT_A_CONDITION,)),
    # one column as both arms and pairs (it said "several runs with the same conditions")
    ("compare", ["--by", "wd", "--pair", "wd"], (E.INVALID_OPTION,)),
])
def test_bad_claim_columns(tmp_path: Path, command: str, args: list, codes: tuple) -> None:
    p = write_parquet(sweep_df(arch="mlp"), tmp_path / "l.parquet")
    before = snapshot(tmp_path)
    out = cli([command, p, *args], cwd=tmp_path)
    expect_error(out, *codes)
    assert_unchanged(before, tmp_path)
