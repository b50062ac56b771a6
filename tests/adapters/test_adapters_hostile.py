"""Hostile inputs for the adapters and `grokaudit convert`: every one is refused with ONE line,
exit 2 and a specific ErrorCode (tests assert ``exc.code``, never the text), and no file is
changed — or, where the input is valid, it is read correctly.

Layouts built here, by hand (no writer library needed unless said):

* MLflow SQLite with MLflow's table names (``runs``, ``metrics``, ``params``, ``tags``) but no
  constraints, so that rows MLflow never writes (text values, NULL steps) can be stored;
* MLflow file store ``mlruns/0/<run id>/{meta.yaml, metrics/test_acc, tags/mlflow.runName}``;
* NPZ sweeps ``cell.npz`` (``steps`` plus ``(seeds, T)`` arrays).
"""

from __future__ import annotations

import ast
import os
import re
import sqlite3
import stat
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from grokaudit.adapters import detect_format, get_reader, read_log
from grokaudit.adapters import mlflow as mlflow_adapter
from grokaudit.cli import cli
from grokaudit.errors import ConfigError, ErrorCode, GrokauditError, LogFormatError
from grokaudit.schema import build_log_table

ADAPTERS = Path(__file__).resolve().parents[2] / "adapters"
ERROR_LINE = re.compile(r"^error: .* \[(?P<code>[A-Z_]+)\]$")
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def run_cli(*args: object) -> tuple[int, str, str]:
    res = CliRunner().invoke(cli, [str(a) for a in args], env={"GROKAUDIT_TRACEBACK": None})
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exc_info
    return res.exit_code, res.stdout, res.stderr


def expect_exit_2(code: ErrorCode, *args: object) -> None:
    """``grokaudit ARGS`` exits 2 with one ``error: … [CODE]`` line and nothing on stdout."""
    exit_code, out, err = run_cli(*args)
    assert exit_code == 2, (args, out, err)
    lines = err.rstrip("\n").split("\n")
    assert len(lines) == 1, err
    m = ERROR_LINE.match(lines[0])
    assert m and m.group("code") == code.value, err
    assert not CONTROL.search(err) and "Traceback" not in err
    assert out == ""


def snapshot(root: Path) -> dict[str, bytes | str]:
    """Every file under ``root`` (or ``root`` itself) with its bytes: proof nothing changed."""
    files = [root] if not root.is_dir() else sorted(root.rglob("*"))
    out: dict[str, bytes | str] = {}
    for f in files:
        if f.is_symlink():
            out[str(f)] = "-> " + os.readlink(f)
        elif stat.S_ISFIFO(f.lstat().st_mode):
            out[str(f)] = "fifo"
        elif f.is_file():
            out[str(f)] = f.read_bytes()
        else:
            out[str(f)] = "dir"
    return out


def small_csv(p: Path) -> Path:
    pd.DataFrame({"run": "r", "step": np.arange(10), "test_acc": np.linspace(0, 1, 10)}).to_csv(
        p, index=False)
    return p


# -- every raise has its code ----------------------------------------------------------------

def test_every_raise_in_adapters_passes_a_specific_code() -> None:
    missing = []
    for f in sorted(ADAPTERS.glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("LogFormatError", "ConfigError", "GrokauditError",
                                         "OutputError", "MissingExtraError")):
                kw = {k.arg: k.value for k in node.keywords}
                if "code" not in kw or (isinstance(kw["code"], ast.Attribute)
                                        and kw["code"].attr == "UNSPECIFIED"):
                    missing.append(f"{f.name}:{node.lineno}")
    assert missing == []


# -- detection and paths -----------------------------------------------------------------------

@pytest.mark.parametrize("layout,code", [
    ("missing", ErrorCode.FILE_NOT_FOUND),
    ("empty_file", ErrorCode.FILE_EMPTY),
    ("png", ErrorCode.UNKNOWN_FORMAT),
    ("empty_folder", ErrorCode.FILE_EMPTY),
    ("empty_tree", ErrorCode.FILE_EMPTY),
    ("unknown_files", ErrorCode.UNKNOWN_FORMAT),
])
def test_paths_no_reader_can_read(tmp_path: Path, layout: str, code: ErrorCode) -> None:
    p = tmp_path / "in"
    if layout == "empty_file":
        p.write_bytes(b"")
    elif layout == "png":
        p.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 32)
    elif layout == "empty_folder":
        p.mkdir()
    elif layout == "empty_tree":
        (p / "a" / "b").mkdir(parents=True)
    elif layout == "unknown_files":
        (p / "sub").mkdir(parents=True)
        (p / "notes.txt").write_text("hello\n")
        (p / "model.pt").write_bytes(b"\x80\x04junk")
        (p / "sub" / "events.log").write_text("step 1 acc 0.5\n")
    before = snapshot(tmp_path)
    with pytest.raises(LogFormatError) as exc:
        detect_format(p)
    assert exc.value.code is code and exc.value.path == str(p)
    with pytest.raises(LogFormatError) as exc:
        read_log(p)
    assert exc.value.code is code
    expect_exit_2(code, "convert", p, "-o", tmp_path / "out.parquet")
    expect_exit_2(code, "check", p)
    assert snapshot(tmp_path) == before


def test_unknown_format_name() -> None:
    with pytest.raises(LogFormatError) as exc:
        get_reader("no-such-format")
    assert exc.value.code is ErrorCode.UNKNOWN_FORMAT


def test_invalid_cond_regex_is_an_option_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as exc:
        read_log(small_csv(tmp_path / "r.csv"), cond={"wd": "wd(["})
    assert exc.value.code is ErrorCode.INVALID_OPTION and exc.value.option == "--cond"


# -- MLflow SQLite ------------------------------------------------------------------------------

def mlflow_like_db(p: Path, rows: list[tuple]) -> Path:
    """MLflow's tables without MLflow's constraints; ``rows`` are (key, value, step) of run 'r1'
    (run name 'wd1_s0'), logged at increasing timestamps."""
    con = sqlite3.connect(p)
    con.executescript("""
        create table runs (run_uuid text, name text, lifecycle_stage text, start_time integer);
        create table metrics (key, value, timestamp, run_uuid, step, is_nan);
        create table params (key text, value text, run_uuid text);
        create table tags (key text, value text, run_uuid text);
        insert into runs values ('r1', 'wd1_s0', 'active', 0);
    """)
    con.executemany("insert into metrics values (?, ?, ?, 'r1', ?, 0)",
                    [(k, v, 1000 + i, s) for i, (k, v, s) in enumerate(rows)])
    con.commit()
    con.close()
    return p


GOOD = [("test_acc", 0.1 * i, i) for i in range(5)]


@pytest.mark.parametrize("bad,code,column", [
    (("test_acc", "abc", 5), ErrorCode.CORRUPT_RECORD, "test_acc"),
    (("test_acc", b"\x00\x01", 5), ErrorCode.CORRUPT_RECORD, "test_acc"),
    (("test_acc", None, 5), ErrorCode.CORRUPT_RECORD, "test_acc"),
    (("emb\x1b[31m", "0.5 mm", 5), ErrorCode.CORRUPT_RECORD, "emb\x1b[31m"),
    (("test_acc", 0.5, None), ErrorCode.MISSING_VALUES, "step"),
    (("test_acc", 0.5, 2.5), ErrorCode.NON_INTEGER_STEP, "step"),
    (("test_acc", 0.5, 1e20), ErrorCode.STEP_OUT_OF_RANGE, "step"),
    (("test_acc", 0.5, "five"), ErrorCode.CORRUPT_RECORD, "step"),
    (("test_acc", 0.5, 2**62), ErrorCode.STEP_OUT_OF_RANGE, "step"),
    (("test_acc", 0.5, -3), ErrorCode.NEGATIVE_STEP, "step"),
])
def test_sqlite_rows_mlflow_never_writes(tmp_path: Path, bad: tuple, code: ErrorCode,
                                         column: str) -> None:
    db = mlflow_like_db(tmp_path / "mlflow.db", [*GOOD, bad])
    before = db.read_bytes()
    assert detect_format(db) == "mlflow-sqlite"
    with pytest.raises(LogFormatError) as exc:
        read_log(db)
    assert exc.value.code is code and exc.value.path == str(db)
    assert exc.value.column == column
    expect_exit_2(code, "convert", db, "-o", tmp_path / "out.parquet")
    expect_exit_2(code, "check", db)
    assert db.read_bytes() == before and not (tmp_path / "out.parquet").exists()


def test_sqlite_numbers_mlflow_writes_are_read(tmp_path: Path) -> None:
    # MLflow stores +-inf as +-DBL_MAX and NaN as value 0 with is_nan 1
    db = mlflow_like_db(tmp_path / "mlflow.db",
                        [*GOOD, ("test_acc", 1.7976931348623157e308, 5), ("test_acc", 1, 6)])
    con = sqlite3.connect(db)
    con.execute("insert into metrics values ('test_acc', 0, 2000, 'r1', 7, 1)")
    con.commit()
    con.close()
    # an accuracy is in [0, 1]: an infinite one is refused, as the canonical table refuses it
    with pytest.raises(LogFormatError) as ei:
        read_log(db)
    assert ei.value.code is ErrorCode.INFINITE_VALUE and ei.value.column == "test_acc"
    db2 = mlflow_like_db(tmp_path / "mlflow2.db",
                         [*GOOD, ("emb_erank", 1.7976931348623157e308, 5), ("test_acc", 1, 6)])
    con = sqlite3.connect(db2)
    con.execute("insert into metrics values ('test_acc', 0, 2000, 'r1', 7, 1)")
    con.commit()
    con.close()
    df = read_log(db2).to_pandas().set_index("step")
    assert df.loc[6, "test_acc"] == 1.0 and df.loc[3, "test_acc"] == pytest.approx(0.3)
    assert np.isnan(df.loc[5, "emb_erank"]) and np.isnan(df.loc[7, "test_acc"])


def test_sqlite_corrupt_row_of_a_deleted_run_is_not_read(tmp_path: Path) -> None:
    db = mlflow_like_db(tmp_path / "mlflow.db", GOOD)
    con = sqlite3.connect(db)
    con.execute("insert into runs values ('r2', 'old', 'deleted', 1)")
    con.execute("insert into metrics values ('test_acc', 'abc', 1, 'r2', 0, 0)")
    con.commit()
    con.close()
    assert read_log(db).num_rows == 5


_LOCKER = """
import sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.read()
con.execute("ROLLBACK")
"""


@pytest.fixture(params=["this process", "another process"])
def locked_db(request: pytest.FixtureRequest, tmp_path: Path,
              monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """(db, its bytes) of an MLflow-like SQLite store while a connection holds ``BEGIN
    EXCLUSIVE`` — in this process, or in another one. The bytes are taken before the lock:
    opening the file here afterwards would drop a POSIX lock this process holds."""
    import subprocess
    import sys

    monkeypatch.setattr(mlflow_adapter, "LOCK_TIMEOUT_S", 0.1)
    db = mlflow_like_db(tmp_path / "mlflow.db", GOOD)
    before = db.read_bytes()
    if request.param == "this process":
        holder = sqlite3.connect(db)
        holder.execute("BEGIN EXCLUSIVE")
        yield db, before
        holder.rollback()
        holder.close()
    else:
        locker = subprocess.Popen([sys.executable, "-c", _LOCKER, str(db)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert locker.stdout is not None and locker.stdout.readline().strip() == "locked"
            yield db, before
        finally:
            locker.communicate("", timeout=30)
    assert db.read_bytes() == before


def test_locked_sqlite_is_database_locked_not_unknown(locked_db: tuple[Path, bytes]) -> None:
    db, _ = locked_db  # the fixture checks, once unlocked, that the file is unchanged
    with pytest.raises(LogFormatError) as exc:
        detect_format(db)
    assert exc.value.code is ErrorCode.DATABASE_LOCKED and exc.value.path == str(db)
    for fmt in (None, "mlflow-sqlite"):
        with pytest.raises(LogFormatError) as exc:
            read_log(db, fmt)
        assert exc.value.code is ErrorCode.DATABASE_LOCKED
    out = db.parent / "out.parquet"
    expect_exit_2(ErrorCode.DATABASE_LOCKED, "convert", db, "-o", out)
    expect_exit_2(ErrorCode.DATABASE_LOCKED, "check", db)
    assert not out.exists() and sorted(q.name for q in db.parent.iterdir()) == ["mlflow.db"]


def test_locked_sqlite_copy_is_read_and_file_unchanged(locked_db: tuple[Path, bytes],
                                                       tmp_path: Path) -> None:
    db, before = locked_db
    copy = tmp_path / "copy.db"
    copy.write_bytes(before)  # the fix the message offers: read a copy
    assert read_log(copy).num_rows == 5
    with pytest.raises(LogFormatError):
        read_log(db)


@pytest.mark.parametrize("content", [b"SQLite format 3\x00" + b"\x00" * 84,
                                     b"SQLite format 3\x00" + b"\xff" * 5000])
@pytest.mark.parametrize("fmt", [None, "mlflow-sqlite"])
def test_damaged_sqlite_is_unreadable_not_unknown(tmp_path: Path, content: bytes,
                                                   fmt: str | None) -> None:
    db = tmp_path / "mlflow.db"
    db.write_bytes(content)
    with pytest.raises(LogFormatError) as exc:
        read_log(db, fmt)
    assert exc.value.code is ErrorCode.FILE_UNREADABLE and exc.value.path == str(db)


def test_truncated_mlflow_sqlite(tmp_path: Path) -> None:
    db = mlflow_like_db(tmp_path / "mlflow.db", [("test_acc", i / 3000, i) for i in range(3000)])
    db.write_bytes(db.read_bytes()[:5000])
    with pytest.raises(LogFormatError) as exc:
        read_log(db, "mlflow-sqlite")
    assert exc.value.code is ErrorCode.FILE_UNREADABLE


def test_sqlite_without_mlflow_tables(tmp_path: Path) -> None:
    db = tmp_path / "other.db"
    con = sqlite3.connect(db)
    con.execute("create table foo (x)")
    con.commit()
    con.close()
    with pytest.raises(LogFormatError) as exc:
        detect_format(db)
    assert exc.value.code is ErrorCode.UNKNOWN_FORMAT
    with pytest.raises(LogFormatError) as exc:
        read_log(db, "mlflow-sqlite")
    assert exc.value.code is ErrorCode.FORMAT_MISMATCH


# -- MLflow file store ---------------------------------------------------------------------------

def file_store(root: Path, lines: bytes) -> Path:
    run = root / "0" / "abc123"
    (run / "metrics").mkdir(parents=True)
    (run / "tags").mkdir()
    (run / "meta.yaml").write_text("run_name: r\nlifecycle_stage: active\n")
    (run / "tags" / "mlflow.runName").write_text("wd1_s0")
    (run / "metrics" / "test_acc").write_bytes(lines)
    return run / "metrics" / "test_acc"


@pytest.mark.parametrize("line,code", [
    (b"1700000000000 abc 5\n", ErrorCode.CORRUPT_RECORD),
    (b"1700000000000 0.5\n", ErrorCode.CORRUPT_RECORD),
    (b"1700000000000 0.5 5.5\n", ErrorCode.CORRUPT_RECORD),
    (b"1700000000000 0.5 \x1b[2Jx\n", ErrorCode.CORRUPT_RECORD),
    (b"1700000000000 0.5 99999999999999999999\n", ErrorCode.STEP_OUT_OF_RANGE),
    (b"1700000000000 0.5 -4\n", ErrorCode.NEGATIVE_STEP),
])
def test_file_store_bad_line(tmp_path: Path, line: bytes, code: ErrorCode) -> None:
    good = b"".join(b"17000000000%02d 0.%d %d\n" % (i, i, i) for i in range(5))
    f = file_store(tmp_path / "mlruns", good + line)
    before = snapshot(tmp_path)
    with pytest.raises(LogFormatError) as exc:
        read_log(tmp_path / "mlruns")
    assert exc.value.code is code
    expect_exit_2(code, "convert", tmp_path / "mlruns", "-o", tmp_path / "out.parquet")
    assert snapshot(tmp_path) == before
    assert f.read_bytes() == good + line


def test_file_store_valid_lines_are_read(tmp_path: Path) -> None:
    file_store(tmp_path / "mlruns", b"1700000000000 0.25 0\n1700000000001 nan 1\n"
                                    b"1700000000002 1.0 2\n")
    df = read_log(tmp_path / "mlruns").to_pandas()
    assert df["run"].tolist() == ["wd1_s0"] * 3 and np.isnan(df["test_acc"].iloc[1])


# -- steps: uint64, NULL, out of range, in every adapter ----------------------------------------

@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
@pytest.mark.parametrize("steps,code", [
    (pa.array([0, 1, 2**64 - 1], pa.uint64()), ErrorCode.STEP_OUT_OF_RANGE),
    (pa.array([0, 1, 2**63], pa.uint64()), ErrorCode.STEP_OUT_OF_RANGE),
    (pa.array([0, 1, 2**60], pa.int64()), ErrorCode.STEP_OUT_OF_RANGE),
    (pa.array([0, None, 2], pa.int64()), ErrorCode.MISSING_VALUES),
    (pa.array([0.0, float("nan"), 2.0]), ErrorCode.MISSING_VALUES),
    (pa.array([0.0, 1.5, 2.0]), ErrorCode.NON_INTEGER_STEP),
    (pa.array([0.0, float("inf"), 2.0]), ErrorCode.NON_INTEGER_STEP),
    (pa.array([0, -1, 2], pa.int64()), ErrorCode.NEGATIVE_STEP),
    (pa.array(["0", "1", "x"]), ErrorCode.BAD_COLUMN_TYPE),
])
def test_table_step_column(tmp_path: Path, suffix: str, steps: pa.Array,
                           code: ErrorCode) -> None:
    t = pa.table({"step": steps, "test_acc": [0.1, 0.5, 0.9]})
    p = tmp_path / f"log{suffix}"
    if suffix == ".parquet":
        pq.write_table(t, p)
    else:
        if pa.types.is_floating(steps.type) and not np.isfinite(
                steps.to_numpy(zero_copy_only=False)).all():
            pytest.skip("JSON has no NaN/inf literal")
        t.to_pandas().to_json(p, orient="records", lines=True)
    history = p.with_name(f"r-history{suffix}")
    if suffix == ".parquet":
        pq.write_table(t.rename_columns(["_step", "test_acc"]), history)
    else:
        t.rename_columns(["_step", "test_acc"]).to_pandas().to_json(history, orient="records",
                                                                    lines=True)
    for fmt, q in (("table", p), ("wandb-history", history)):
        with pytest.raises(LogFormatError) as exc:
            read_log(q, fmt)
        assert exc.value.code is code, (fmt, exc.value)
        assert exc.value.path == str(q)


def test_uint64_steps_in_range_are_read(tmp_path: Path) -> None:
    p = tmp_path / "log.parquet"
    pq.write_table(pa.table({"step": pa.array([0, 10, 2**53], pa.uint64()),
                             "test_acc": [0.1, 0.5, 0.9]}), p)
    t = read_log(p)
    assert t.schema.field("step").type == pa.int64()
    assert t.column("step").to_pylist() == [0, 10, 2**53]


@pytest.mark.parametrize("steps,code", [
    (np.array([0, 1, 2**64 - 1], dtype=np.uint64), ErrorCode.STEP_OUT_OF_RANGE),
    (np.array([0.0, np.nan, 2.0]), ErrorCode.MISSING_VALUES),
    (np.array([0, -5, 2]), ErrorCode.NEGATIVE_STEP),
    (np.array(["0", "1", "2"]), ErrorCode.BAD_COLUMN_TYPE),
])
def test_npz_steps(tmp_path: Path, steps: np.ndarray, code: ErrorCode) -> None:
    p = tmp_path / "cell.npz"
    np.savez(p, steps=steps, acc=np.zeros((2, 3)))
    with pytest.raises(LogFormatError) as exc:
        read_log(p)
    assert exc.value.code is code and exc.value.path == str(p)


def test_csv_null_step_cell(tmp_path: Path) -> None:
    p = tmp_path / "r.csv"
    p.write_text("step,test_acc\n0,0.1\n,0.5\n2,0.9\n")
    with pytest.raises(LogFormatError) as exc:
        read_log(p)
    assert exc.value.code is ErrorCode.MISSING_VALUES and exc.value.column == "step"
    expect_exit_2(ErrorCode.MISSING_VALUES, "convert", p, "-o", tmp_path / "o.parquet")


def test_panel_csv_values_without_step(tmp_path: Path) -> None:
    p = tmp_path / "panel.csv"
    p.write_text("Step,r - test/acc\n0,0.1\n,0.5\n2,0.9\n")
    with pytest.raises(LogFormatError) as exc:
        read_log(p)
    assert exc.value.code is ErrorCode.MISSING_VALUES


def test_panel_csv_foreign_column_is_refused_not_dropped(tmp_path: Path) -> None:
    p = tmp_path / "panel.csv"
    p.write_text("Step,r - test/acc,lr\n0,0.1,1\n1,0.5,1\n")
    with pytest.raises(LogFormatError) as exc:
        read_log(p, "wandb-csv")
    assert exc.value.code is ErrorCode.FORMAT_MISMATCH and exc.value.column == "lr"


# -- damaged TensorBoard and W&B files (findings with offsets stay findings) --------------------

@pytest.mark.parametrize("content,code", [
    (b"", ErrorCode.FILE_EMPTY),
    (b"garbage garbage garbage", ErrorCode.FILE_UNREADABLE),
    (b"\x05\x00\x00\x00\x00\x00\x00\x00" + b"\x00" * 4 + b"hello" + b"\x00" * 4,
     ErrorCode.FILE_UNREADABLE),
])
def test_tensorboard_unreadable_file(tmp_path: Path, content: bytes, code: ErrorCode) -> None:
    pytest.importorskip("tensorboard", reason="the [tensorboard] extra is not installed")
    f = tmp_path / "run" / "events.out.tfevents.1.host"
    f.parent.mkdir()
    f.write_bytes(content)
    with pytest.raises(LogFormatError) as exc:
        read_log(f.parent, "tensorboard")
    assert exc.value.code is code and exc.value.path == str(f)
    expect_exit_2(code, "convert", f.parent, "-o", tmp_path / "o.parquet")


def test_tensorboard_negative_step(tmp_path: Path) -> None:
    pytest.importorskip("tensorboard", reason="the [tensorboard] extra is not installed")
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    w = EventFileWriter(str(tmp_path / "run"))
    for s in (0, 10, -20):
        w.add_event(Event(wall_time=1.0, step=s, summary=Summary(
            value=[Summary.Value(tag="test_acc", simple_value=0.5)])))
    w.close()
    with pytest.raises(LogFormatError) as exc:
        read_log(tmp_path / "run")
    assert exc.value.code is ErrorCode.NEGATIVE_STEP and exc.value.path == str(tmp_path / "run")


@pytest.mark.parametrize("content,code", [
    (b"", ErrorCode.FILE_EMPTY),
    (b":W&B", ErrorCode.FILE_UNREADABLE),
    (b"PK\x03\x04 not a wandb file", ErrorCode.FILE_UNREADABLE),
])
def test_wandb_unreadable_file(tmp_path: Path, content: bytes, code: ErrorCode) -> None:
    pytest.importorskip("wandb", reason="the [wandb] extra is not installed")
    f = tmp_path / "offline-run-x-abc" / "run-abc.wandb"
    f.parent.mkdir()
    f.write_bytes(content)
    with pytest.raises(LogFormatError) as exc:
        read_log(f.parent, "wandb-offline")
    assert exc.value.code is code and exc.value.path == str(f)


# -- NPZ: a pickled object is refused unexecuted -------------------------------------------------

class Boom:
    """Unpickling it would create the file ``marker``: proof of code execution."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (Path.touch, (Path(self.marker),))


def test_npz_pickled_object_refused_unexecuted(tmp_path: Path) -> None:
    marker = tmp_path / "EXECUTED"
    p = tmp_path / "cell.npz"
    evil = np.empty(1, dtype=object)
    evil[0] = Boom(str(marker))
    np.savez(p, steps=np.arange(3), acc=np.zeros((2, 3)), evil=evil)
    before = p.read_bytes()
    with pytest.raises(LogFormatError) as exc:
        read_log(p)
    assert exc.value.code is ErrorCode.FILE_UNREADABLE and exc.value.column == "evil"
    expect_exit_2(ErrorCode.FILE_UNREADABLE, "convert", p, "-o", tmp_path / "o.parquet")
    expect_exit_2(ErrorCode.FILE_UNREADABLE, "check", p)
    assert not marker.exists() and p.read_bytes() == before


@pytest.mark.parametrize("how,code", [
    ("npy", ErrorCode.FILE_UNREADABLE),
    ("text_metric", ErrorCode.BAD_COLUMN_TYPE),
    ("complex_metric", ErrorCode.BAD_COLUMN_TYPE),
    ("seeds_disagree", ErrorCode.BAD_COLUMN_TYPE),
    ("no_metric", ErrorCode.NO_METRIC),
])
def test_npz_other_bad_files(tmp_path: Path, how: str, code: ErrorCode) -> None:
    p = tmp_path / "cell.npz"
    if how == "npy":
        with p.open("wb") as fh:
            np.save(fh, np.arange(3))
    elif how == "text_metric":
        np.savez(p, steps=np.arange(3), acc=np.full((2, 3), "x"))
    elif how == "complex_metric":
        np.savez(p, steps=np.arange(3), acc=np.zeros((2, 3), dtype=complex))
    elif how == "seeds_disagree":
        np.savez(p, steps=np.arange(3), acc=np.zeros((2, 3)), eff=np.zeros((3, 3)))
    else:
        np.savez(p, steps=np.arange(3), alpha=np.float32(0.3))
    with pytest.raises(LogFormatError) as exc:
        read_log(p)
    assert exc.value.code is code and exc.value.path == str(p)


def test_npz_per_step_vector_is_a_series_for_every_seed(tmp_path: Path) -> None:
    p = tmp_path / "cell.npz"
    np.savez(p, steps=np.arange(4), acc=np.zeros((2, 4)), lr=np.linspace(1, 0, 4))
    df = read_log(p).to_pandas()
    assert df.groupby("run")["lr"].apply(list).tolist() == [list(np.linspace(1, 0, 4))] * 2


# -- columns: nothing dropped silently ---------------------------------------------------------

def test_boolean_and_text_columns_are_kept(tmp_path: Path) -> None:
    p = tmp_path / "log.parquet"
    n = 6
    pq.write_table(pa.table({
        "run": ["a"] * n + ["b"] * n, "step": list(range(n)) * 2,
        "test_acc": np.linspace(0, 1, 2 * n),
        "clipped": [i % 2 == 0 for i in range(2 * n)],  # varies: a 0/1 series
        "use_ln": [True] * n + [False] * n,  # constant in each run: a condition
        "optim": ["adamw"] * n + [None] + ["sgd"] * (n - 1),  # text, logged once or always
    }), p)
    t = read_log(p)
    log = build_log_table(t)  # the canonical table holds them: nothing to drop later either
    assert set(log.conditions.columns) >= {"use_ln", "optim"} and "clipped" in log.series
    df = t.to_pandas()
    assert df["clipped"].tolist() == [1.0, 0.0] * n
    assert df.groupby("run")["use_ln"].first().tolist() == [True, False]
    assert df.groupby("run")["optim"].first().tolist() == ["adamw", "sgd"]


def test_text_column_that_varies_in_a_run_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "log.csv"
    p.write_text("step,test_acc,phase\n0,0.1,warmup\n1,0.5,train\n2,0.9,train\n")
    before = p.read_bytes()
    with pytest.raises(LogFormatError) as exc:
        read_log(p)
    assert exc.value.code is ErrorCode.NOT_CONSTANT_IN_RUN and exc.value.column == "phase"
    expect_exit_2(ErrorCode.NOT_CONSTANT_IN_RUN, "convert", p, "-o", tmp_path / "o.parquet")
    assert p.read_bytes() == before and not (tmp_path / "o.parquet").exists()


def test_media_columns_of_a_history_are_reported_not_read(tmp_path: Path, prov) -> None:
    p = tmp_path / "r-history.jsonl"
    rows = [{"_step": s, "test/acc": s / 4, "samples": {"_type": "image-file", "path": f"{s}.png"}}
            for s in range(5)]
    pd.DataFrame(rows).to_json(p, orient="records", lines=True)
    t = read_log(p)
    assert "samples" not in t.column_names
    assert any("samples" in w for w in prov(t)["warnings"])


def test_serialized_media_in_a_csv_history(tmp_path: Path, prov) -> None:
    # W&B CSV export: media cells are JSON text; a JSON text constant in the run is a condition
    p = tmp_path / "r-history.csv"
    pd.DataFrame({"_step": range(4), "test/acc": [0.1, 0.2, 0.3, 0.4],
                  "img": [f'{{"_type": "image-file", "path": "{s}.png"}}' for s in range(4)],
                  "cfg": ['{"opt": "adamw"}'] * 4}).to_csv(p, index=False)
    t = read_log(p)
    assert "img" not in t.column_names and any("img" in w for w in prov(t)["warnings"])
    assert t.column("cfg").to_pylist() == ['{"opt": "adamw"}'] * 4


def test_condition_with_a_metric_name_is_renamed_not_dropped(tmp_path: Path, prov) -> None:
    run = tmp_path / "mlruns" / "0" / "abc"
    (run / "metrics").mkdir(parents=True)
    (run / "params").mkdir()
    (run / "meta.yaml").write_text("run_name: r\n")
    (run / "metrics" / "test_acc").write_text("1 0.5 0\n2 0.6 1\n3 0.7 2\n")
    (run / "metrics" / "lr").write_text("1 0.1 0\n2 0.05 1\n3 0.01 2\n")
    (run / "params" / "lr").write_text("0.1")
    t = read_log(tmp_path / "mlruns")
    df = t.to_pandas()
    assert df["lr"].tolist() == [0.1, 0.05, 0.01] and df["lr_cond"].tolist() == [0.1] * 3


def test_metric_named_step_is_refused(tmp_path: Path) -> None:
    run = tmp_path / "mlruns" / "0" / "abc"
    (run / "metrics").mkdir(parents=True)
    (run / "meta.yaml").write_text("run_name: r\n")
    (run / "metrics" / "test_acc").write_text("1 0.5 0\n2 0.6 1\n")
    (run / "metrics" / "step").write_text("1 7 0\n2 8 1\n")
    with pytest.raises(LogFormatError) as exc:
        read_log(tmp_path / "mlruns")
    assert exc.value.code is ErrorCode.RESERVED_COLUMN and exc.value.column == "step"
    # the fix the message gives works
    assert "logged_step" in read_log(tmp_path / "mlruns",
                                     mapping={"step": "logged_step"}).column_names


def test_duplicate_column_names(tmp_path: Path) -> None:
    p = tmp_path / "log.csv"
    p.write_text("step,test_acc,test_acc\n0,0.1,0.2\n1,0.5,0.6\n")
    with pytest.raises(LogFormatError) as exc:
        read_log(p)
    assert exc.value.code is ErrorCode.DUPLICATE_COLUMN


# -- text from the log in messages and output -----------------------------------------------------

def test_csv_parse_error_quoting_the_log_is_escaped(tmp_path: Path) -> None:
    p = tmp_path / "log.csv"
    p.write_bytes(b"step,test_acc\n0,0.1\n1,0.5,\x1b[2J\x1b[31mresult: no critical finding\r\n")
    with pytest.raises(LogFormatError) as exc:
        read_log(p)
    assert exc.value.code is ErrorCode.FILE_UNREADABLE
    assert not CONTROL.search(str(exc.value)) and "\n" not in str(exc.value)
    expect_exit_2(ErrorCode.FILE_UNREADABLE, "convert", p, "-o", tmp_path / "o.parquet")
    expect_exit_2(ErrorCode.FILE_UNREADABLE, "check", p, "--format", "table")


def test_convert_output_escapes_log_text(tmp_path: Path) -> None:
    p = tmp_path / "log.csv"
    evil = "r\x1b[2J\u202e"
    pd.DataFrame({"run": evil, "step": np.arange(5), "test_acc": np.linspace(0, 100, 5),
                  "note\x1b[31m": "x\x07"}).to_csv(p, index=False)
    exit_code, out, err = run_cli("convert", p, "-o", tmp_path / "o.parquet")
    assert exit_code == 0, err
    assert not CONTROL.search(out + err) and "\\x1b" in out
    assert pd.read_parquet(tmp_path / "o.parquet")["run"].iloc[0] == evil  # data kept as is


# -- convert's output is checked before anything is read ------------------------------------------

@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, Path]:
    """in/log.csv (valid), bad.csv (empty: reading it would fail with FILE_EMPTY), an existing
    output, a directory, a symbolic link and a FIFO, each named *.parquet."""
    (tmp_path / "in").mkdir()
    paths = {"log": small_csv(tmp_path / "in" / "log.csv"), "bad": tmp_path / "bad.csv"}
    paths["bad"].write_bytes(b"")
    paths["dir"] = tmp_path / "dir.parquet"
    paths["dir"].mkdir()
    paths["target"] = tmp_path / "precious.txt"
    paths["target"].write_text("keep me")
    paths["link"] = tmp_path / "link.parquet"
    paths["link"].symlink_to(paths["target"])
    paths["fifo"] = tmp_path / "fifo.parquet"
    os.mkfifo(paths["fifo"])
    return paths


@pytest.mark.parametrize("src,out,code", [
    ("log", "{log}", ErrorCode.OUTPUT_IS_INPUT),  # convert a.csv -o a.csv
    ("in", "{tmp}/in/out.parquet", ErrorCode.OUTPUT_IN_INPUT_DIR),
    ("in", "{tmp}/in/sub/out.parquet", ErrorCode.OUTPUT_IN_INPUT_DIR),
    ("bad", "{dir}", ErrorCode.OUTPUT_IS_DIRECTORY),
    ("bad", "{link}", ErrorCode.OUTPUT_NOT_REGULAR),
    ("bad", "{fifo}", ErrorCode.OUTPUT_NOT_REGULAR),
    ("bad", "/dev/null", ErrorCode.OUTPUT_NOT_REGULAR),  # a device, whatever its name
    ("bad", "{tmp}/x.txt", ErrorCode.OUTPUT_EXTENSION),
    ("bad", "-", ErrorCode.OUTPUT_NOT_REGULAR),
    ("bad", "{bad}", ErrorCode.OUTPUT_IS_INPUT),
])
def test_convert_refuses_output_before_reading(tmp_path: Path, inputs: dict[str, Path],
                                               src: str, out: str, code: ErrorCode) -> None:
    source = tmp_path / "in" if src == "in" else inputs[src]
    target = out.format(tmp=tmp_path, **{k: str(v) for k, v in inputs.items()})
    before = snapshot(tmp_path)
    expect_exit_2(code, "convert", source, "-o", target)
    assert snapshot(tmp_path) == before


def test_convert_into_input_folder_via_symlinked_parent(tmp_path: Path,
                                                        inputs: dict[str, Path]) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(tmp_path / "in")
    before = snapshot(tmp_path / "in")
    expect_exit_2(ErrorCode.OUTPUT_IN_INPUT_DIR, "convert", tmp_path / "in", "-o",
                  alias / "out.parquet")
    assert snapshot(tmp_path / "in") == before


def test_convert_csv_output_refused_when_findings_would_be_lost(tmp_path: Path) -> None:
    p = tmp_path / "panel.csv"
    p.write_text("Step,r - test/acc\n0,0.1\n1,0.5\n2,0.9\n")
    before = p.read_bytes()
    expect_exit_2(ErrorCode.OUTPUT_EXTENSION, "convert", p, "-o", tmp_path / "o.csv")
    assert not (tmp_path / "o.csv").exists() and p.read_bytes() == before
    exit_code, out, err = run_cli("convert", p, "-o", tmp_path / "o.parquet")
    assert exit_code == 0, err


def test_convert_csv_output_when_nothing_is_lost(tmp_path: Path) -> None:
    src = small_csv(tmp_path / "log.csv")
    exit_code, out, err = run_cli("convert", src, "-o", tmp_path / "o.csv")
    assert exit_code == 0, err
    assert pd.read_csv(tmp_path / "o.csv")["test_acc"].tolist() == list(np.linspace(0, 1, 10))


def test_convert_bad_option_is_an_option_error(tmp_path: Path) -> None:
    expect_exit_2(ErrorCode.INVALID_OPTION, "convert", small_csv(tmp_path / "log.csv"), "-o",
                  tmp_path / "o.parquet", "--map", "nonsense")
    assert not (tmp_path / "o.parquet").exists()


def test_grokaudit_errors_are_value_errors() -> None:
    # library users may catch ValueError; the CLI catches GrokauditError once
    assert issubclass(LogFormatError, ValueError) and issubclass(LogFormatError, GrokauditError)


# -- W&B offline records written by hand (wandb's protobuf, LevelDB framing) --------------------

def wandb_file(path: Path, steps: list[str | None], *, extra: bytes | None = None) -> Path:
    """run-abc.wandb holding one history record per ``_step`` value_json (None: no _step),
    each with test_acc 0.5; ``extra`` appends a record payload that is not a protobuf."""
    import struct
    import zlib

    pb = pytest.importorskip("wandb.proto.wandb_internal_pb2",
                             reason="the [wandb] extra is not installed")
    payloads = [pb.Record(run=pb.RunRecord(run_id="abc")).SerializeToString()]
    for s in steps:
        items = [pb.HistoryItem(key="test_acc", value_json="0.5")]
        if s is not None:
            items.append(pb.HistoryItem(key="_step", value_json=s))
        payloads.append(pb.Record(history=pb.HistoryRecord(item=items)).SerializeToString())
    if extra is not None:
        payloads.append(extra)
    out = bytearray(struct.pack("<4sHB", b":W&B", 0xBEE1, 0))
    for body in payloads:
        assert len(out) + 7 + len(body) < 32768  # every record FULL in block 0
        crc = zlib.crc32(body, zlib.crc32(bytes((1,))))
        out += struct.pack("<IHB", crc, len(body), 1) + body
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(out))
    return path


def test_handmade_wandb_file_is_read(tmp_path: Path) -> None:
    f = wandb_file(tmp_path / "offline-run-1-abc" / "run-abc.wandb", ["0", "1", "2.0"])
    assert read_log(f.parent).column("step").to_pylist() == [0, 1, 2]


@pytest.mark.parametrize("step,code", [
    ("18446744073709551615", ErrorCode.STEP_OUT_OF_RANGE),
    ("9007199254740993", ErrorCode.STEP_OUT_OF_RANGE),
    ("-1", ErrorCode.NEGATIVE_STEP),
    ("NaN", ErrorCode.NON_INTEGER_STEP),
    ("Infinity", ErrorCode.NON_INTEGER_STEP),
    ("1.5", ErrorCode.NON_INTEGER_STEP),
    ('"7"', ErrorCode.NON_INTEGER_STEP),
    ("null", ErrorCode.MISSING_VALUES),
    (None, ErrorCode.MISSING_VALUES),
])
def test_wandb_history_step(tmp_path: Path, step: str | None, code: ErrorCode) -> None:
    f = wandb_file(tmp_path / "offline-run-1-abc" / "run-abc.wandb", ["0", "1", step])
    before = f.read_bytes()
    with pytest.raises(LogFormatError) as exc:
        read_log(f.parent)
    assert exc.value.code is code and exc.value.path == str(f)
    expect_exit_2(code, "convert", f.parent, "-o", tmp_path / "o.parquet")
    assert f.read_bytes() == before


def test_wandb_record_that_is_not_a_protobuf(tmp_path: Path) -> None:
    f = wandb_file(tmp_path / "offline-run-1-abc" / "run-abc.wandb", ["0", "1"],
                   extra=b"\xff\xff\xff\xff\x0f not a protobuf")
    with pytest.raises(LogFormatError) as exc:
        read_log(f.parent)
    assert exc.value.code is ErrorCode.CORRUPT_RECORD and exc.value.path == str(f)


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl", "jsonl_runs"])
def test_integers_beyond_2_53_are_read_and_a_seed_of_them_kept_exactly(tmp_path, fmt):
    """A 64-bit seed and a ``time.time_ns()`` column, in a log the adapters read (no run
    column, or JSON lines): audited, each seed exact and its own (found in round 6: the cast
    to float64 refused them, an "internal error"; the seed would have been rounded)."""
    seeds = [2**53 + 1, 2**53 + 2, 2**62 + 1] if fmt == "jsonl_runs" else [2**53 + 1]
    rows = [{**({"run": f"r{r}"} if fmt == "jsonl_runs" else {}), "step": t * 10,
             "test_acc": 0.1 if t < 20 else 0.99, "seed": seed,
             "wall_ns": 1_700_000_000_000_000_001 + t * 10**9}
            for r, seed in enumerate(seeds) for t in range(40)]
    df = pd.DataFrame(rows)
    path = tmp_path / f"run0.{'jsonl' if fmt.startswith('jsonl') else fmt}"
    if fmt == "csv":
        df.to_csv(path, index=False)
    elif fmt == "parquet":
        df.to_parquet(path, index=False)
    else:
        df.to_json(path, orient="records", lines=True)
    log = build_log_table(read_log(path))
    assert log.conditions["seed"].tolist() == seeds
    code, out, err = run_cli("check", path)
    assert code in (0, 1) and "internal error" not in err + out
