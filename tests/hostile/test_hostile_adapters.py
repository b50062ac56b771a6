"""Malformed logs of the external formats, written by their real writers and then damaged:
TensorBoard event files (truncated, corrupt CRC, not an Event), W&B offline ``.wandb`` files
(truncated, garbage), MLflow file stores (garbage lines) and SQLite stores (a text metric
value, a locked database), NPZ with a pickled object (refused without running it).

Each gives exit 2 with its ErrorCode, or — where the damage is a truncated tail the readers
report — a conversion that says so (``SOURCE_TRUNCATED``); nothing but the one output asked
for is written, and never anything on an error."""

from __future__ import annotations

import os
import shutil
import sqlite3
import struct
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from grokaudit.errors import ErrorCode, LogFormatError
from helpers.hostile import (
    Outcome,
    assert_unchanged,
    cli,
    expect_error,
    snapshot,
    sub,
    sweep_df,
)

E = ErrorCode
DAMAGED = (E.CORRUPT_RECORD, E.FILE_UNREADABLE)


def convert(src: Path, work: Path, *args: object, real: bool = False
            ) -> tuple[Outcome, Path]:
    """``grokaudit convert SRC -o work/out/c.parquet``; checks that nothing changes in the
    source and that only that output may appear."""
    out_path = work / "out" / "c.parquet"
    out_path.parent.mkdir(exist_ok=True)
    before = snapshot(src, out_path.parent)
    out = (sub if real else cli)(["convert", src, "-o", out_path, *args], cwd=work)
    allow = [str(out_path)] if out.exit_code == 0 else []
    assert_unchanged(before, src, out_path.parent, allow=allow)
    return out, out_path


def expect_truncation_reported(out: Outcome, out_path: Path) -> None:
    """A damaged tail: either refused with its code, or converted with SOURCE_TRUNCATED
    reported (never silently)."""
    if out.exit_code == 2:
        expect_error(out, *DAMAGED)
        assert not out_path.exists()
        return
    assert out.exit_code == 0 and out.exception is None, str(out)
    assert "SOURCE_TRUNCATED" in out.stdout, f"damage not reported:\n{out}"
    import pyarrow.parquet as pq

    assert pq.read_table(out_path).num_rows > 0


# -- TensorBoard --------------------------------------------------------------------------------

@pytest.fixture
def tb_logdir(tmp_path: Path) -> Path:
    """tmp/tb/<run>/events.out.tfevents.*: the sweep's runs (2 seeds), written by
    TensorBoard's own EventFileWriter (simple_value scalars)."""
    pytest.importorskip("tensorboard", reason="the [tensorboard] extra is not installed")
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    root = tmp_path / "tb"
    df = sweep_df(seeds=(0, 1))
    for run, g in df.groupby("run"):
        w = EventFileWriter(str(root / str(run)))
        for row in g.itertuples():
            vals = [Summary.Value(tag=t, simple_value=float(getattr(row, t)))
                    for t in ("test_acc", "train_acc", "emb_erank")]
            w.add_event(Event(wall_time=1.0 + row.step, step=int(row.step),
                              summary=Summary(value=vals)))
        w.close()
    return root


def _event_file(d: Path) -> Path:
    return sorted(d.rglob("events.out.tfevents.*"))[0]


def test_tb_valid_converts(tb_logdir: Path, tmp_path: Path) -> None:
    out, p = convert(tb_logdir, tmp_path)
    assert out.exit_code == 0 and out.exception is None, str(out)
    assert p.exists()


@pytest.mark.parametrize("cut", [1, 7, 100])
def test_tb_truncated(tb_logdir: Path, tmp_path: Path, cut: int) -> None:
    f = _event_file(tb_logdir)
    f.write_bytes(f.read_bytes()[:-cut])
    expect_truncation_reported(*convert(tb_logdir, tmp_path))


def test_tb_payload_crc(tb_logdir: Path, tmp_path: Path) -> None:
    f = _event_file(tb_logdir)
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0xFF
    f.write_bytes(bytes(data))
    expect_truncation_reported(*convert(tb_logdir, tmp_path))


def test_tb_truncated_through_check(tb_logdir: Path, tmp_path: Path) -> None:
    f = _event_file(tb_logdir)
    f.write_bytes(f.read_bytes()[:-9])
    out = cli(["check", tb_logdir, "--cond", r"wd=wd([0-9.]+)_", "--cond", r"seed=_s(\d+)",
               "--json", "-"], cwd=tmp_path)
    if out.exit_code == 2:
        expect_error(out, *DAMAGED)
        return
    assert out.exit_code in (0, 1) and out.exception is None, str(out)
    assert "SOURCE_TRUNCATED" in out.stdout, "the truncation is not in the audit's JSON"


@pytest.mark.parametrize("content", [b"\x00" * 5, b"garbage that is not an event file",
                                     struct.pack("<Q", 2**60) + b"\x00" * 8])
def test_tb_garbage_only(tmp_path: Path, content: bytes) -> None:
    pytest.importorskip("tensorboard", reason="the [tensorboard] extra is not installed")
    d = tmp_path / "tb" / "run"
    d.mkdir(parents=True)
    (d / "events.out.tfevents.1.host").write_bytes(content)
    out, p = convert(tmp_path / "tb", tmp_path)
    expect_error(out, *DAMAGED, E.NO_ROWS)
    assert not p.exists()


def test_tb_empty_event_file(tmp_path: Path) -> None:
    pytest.importorskip("tensorboard", reason="the [tensorboard] extra is not installed")
    d = tmp_path / "tb" / "run"
    d.mkdir(parents=True)
    (d / "events.out.tfevents.1.host").write_bytes(b"")
    out, _ = convert(tmp_path / "tb", tmp_path, "--format", "tensorboard")
    expect_error(out, E.FILE_EMPTY, E.NO_ROWS)


def test_tb_record_that_is_not_an_event(tmp_path: Path) -> None:
    pytest.importorskip("tensorboard", reason="the [tensorboard] extra is not installed")
    from tensorboard.summary.writer.record_writer import RecordWriter

    d = tmp_path / "tb" / "run"
    d.mkdir(parents=True)
    with open(d / "events.out.tfevents.1.host", "wb") as fh:
        w = RecordWriter(fh)
        w.write(b"\xff\xff\xff\xff not a protobuf \x00\x01")
        w.write(b"\x0a\xff\xff\xff\xff\x0f")
    out, _ = convert(tmp_path / "tb", tmp_path)
    expect_error(out, *DAMAGED, E.NO_ROWS)
    out = cli(["check", tmp_path / "tb"], cwd=tmp_path)
    expect_error(out, *DAMAGED, E.NO_ROWS)


# -- W&B offline ---------------------------------------------------------------------------------

@pytest.fixture
def wandb_file(tmp_path: Path) -> Iterator[Path]:
    wandb = pytest.importorskip("wandb", reason="the [wandb] extra is not installed")
    env = {"WANDB_MODE": "offline", "WANDB_DIR": str(tmp_path), "WANDB_SILENT": "true",
           "WANDB_CONSOLE": "off", "WANDB_DISABLE_GIT": "true",
           "WANDB_CACHE_DIR": str(tmp_path / ".cache"),
           "WANDB_CONFIG_DIR": str(tmp_path / ".config")}
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        run = wandb.init(project="hostile", id="hostile1", dir=str(tmp_path), mode="offline",
                         settings=wandb.Settings(console="off", x_disable_stats=True,
                                                 x_disable_meta=True, disable_git=True))
        for s in range(200):
            run.log({"test_acc": s / 200, "emb_erank": 10 - s / 40}, step=s * 10)
        run.finish()
        (f,) = tmp_path.glob("wandb/offline-run-*/run-hostile1.wandb")
        # a copy away from W&B's own folders: its service may still write its debug logs
        dst = tmp_path / "src" / "offline-run-20260101_000000-hostile1" / f.name
        dst.parent.mkdir(parents=True)
        shutil.copy(f, dst)
        yield dst


def _wandb_record_ends(data: bytes) -> set[int]:
    """Byte offsets where a record of a ``.wandb`` file ends (LevelDB log framing: 32 KiB
    blocks, each record a 7-byte header — CRC, length, type — and its payload)."""
    ends, pos, block = set(), 7, 32768  # after the 7-byte W&B header
    while pos + 7 <= len(data):
        left = block - pos % block
        if left < 7:  # a block's tail too short for a header is padding
            pos += left
            continue
        (length,) = struct.unpack_from("<H", data, pos + 4)
        pos += 7 + length
        ends.add(pos)
    return ends


@pytest.mark.parametrize("frac", [0.3, 0.66, 0.99])
def test_wandb_truncated(wandb_file: Path, tmp_path: Path, frac: float) -> None:
    data = wandb_file.read_bytes()
    cut = int(len(data) * frac)
    ends = _wandb_record_ends(data)
    while cut in ends:  # a cut between two records is a shorter run, not a torn record
        cut -= 1
    wandb_file.write_bytes(data[:cut])
    expect_truncation_reported(*convert(wandb_file.parent, tmp_path))


@pytest.mark.parametrize("content", [b"", b":W&B", b":W&B\x00\x01\x00" + b"\xff" * 64,
                                     b"PK\x03\x04 a zip, not a wandb file"])
def test_wandb_garbage(wandb_file: Path, tmp_path: Path, content: bytes) -> None:
    wandb_file.write_bytes(content)
    out, p = convert(wandb_file.parent, tmp_path, "--format", "wandb-offline")
    expect_error(out, *DAMAGED, E.FILE_EMPTY, E.NO_ROWS)
    assert not p.exists()
    with pytest.raises(LogFormatError) as exc:
        from grokaudit.adapters import read_log

        read_log(wandb_file.parent, "wandb-offline")
    assert isinstance(exc.value.code, E), exc.value


# -- MLflow file store --------------------------------------------------------------------------

@pytest.fixture
def mlruns(tmp_path: Path) -> Iterator[Path]:
    pytest.importorskip("mlflow", reason="mlflow(-skinny) is not installed (test fixtures)")
    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
        mp.delenv("MLFLOW_TRACKING_URI", raising=False)
        path = tmp_path / "mlruns"
        client = MlflowClient(tracking_uri=path.as_uri())
        exp = client.create_experiment("hostile")
        for wd in (1.0, 2.0):
            rid = client.create_run(exp, run_name=f"wd{wd}").info.run_id
            client.log_batch(rid, params=[Param("wd", str(wd))], metrics=[
                Metric(k, float(v), 1000 + s, s) for s in range(0, 2000, 50)
                for k, v in (("test_acc", s / 2000), ("emb_erank", 10 - s / 400))])
        yield path


@pytest.mark.parametrize("line", [b"abc def ghi\n", b"1 2\n", b"1 2 3 4\n", b"1 2 3 4 5 6\n",
                                  b"\xff\xfe\x00\x01 garbage\n", b"1000 nan 5\n",
                                  b"1000 0.5 1e999999\n", b"1000 0.5 -7\n",
                                  b"1000 0.5 7.5\n"])
def test_mlflow_file_store_garbage_line(mlruns: Path, tmp_path: Path, line: bytes) -> None:
    (f,) = [p for p in mlruns.rglob("metrics/test_acc")][:1]
    lines = f.read_bytes().splitlines(keepends=True)
    f.write_bytes(b"".join(lines[:5] + [line] + lines[5:]))
    out, p = convert(mlruns, tmp_path)
    if out.exit_code == 0:  # a value the store can hold (NaN): converted, nothing crashed
        assert line.startswith(b"1000 nan"), f"garbage accepted:\n{out}"
        return
    expect_error(out, *DAMAGED, E.NON_INTEGER_STEP, E.INFINITE_VALUE, E.NEGATIVE_STEP,
                 E.STEP_OUT_OF_RANGE)
    assert not p.exists()


def test_mlflow_one_stray_accuracy_does_not_rescale_a_run(mlruns: Path, tmp_path: Path) -> None:
    """One value of 2.0 in a run of fractions is not a percent run: dividing the whole run by
    100 would read it as never grokking. Refuse it (or keep the fractions), never rescale."""
    (f,) = [p for p in mlruns.rglob("metrics/test_acc")][:1]
    lines = f.read_bytes().splitlines(keepends=True)
    f.write_bytes(b"".join(lines[:5] + [b"1000 2.0 75\n"] + lines[5:]))
    out, p = convert(mlruns, tmp_path)
    if out.exit_code == 2:
        expect_error(out, E.ACCURACY_OUT_OF_RANGE)
        return
    import pyarrow.parquet as pq

    df = pq.read_table(p).to_pandas()
    assert df["test_acc"].max() > 0.5, f"a fraction run was divided by 100:\n{out}"


def test_mlflow_file_store_garbage_meta(mlruns: Path, tmp_path: Path) -> None:
    for meta in mlruns.rglob("meta.yaml"):
        meta.write_bytes(b"\x00\xff: [unclosed\n\t- {")
    out, _ = convert(mlruns, tmp_path)
    if out.exit_code != 0:
        expect_error(out, *DAMAGED, E.UNKNOWN_FORMAT, E.NO_ROWS)


def test_mlflow_file_store_binary_metric_file(mlruns: Path, tmp_path: Path) -> None:
    for f in mlruns.rglob("metrics/emb_erank"):
        f.write_bytes(os.urandom(512))
    out, _ = convert(mlruns, tmp_path)
    expect_error(out, *DAMAGED)


# -- MLflow SQLite ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("sqlalchemy", reason="MLflow's SQLite backend needs sqlalchemy")
    pytest.importorskip("alembic", reason="MLflow's SQLite backend needs alembic")
    pytest.importorskip("mlflow", reason="mlflow(-skinny) is not installed (test fixtures)")
    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient

    db = tmp_path_factory.mktemp("mlflow-sqlite") / "template.db"
    client = MlflowClient(tracking_uri=f"sqlite:///{db}")
    exp = client.create_experiment("hostile")
    for wd in (1.0, 2.0):
        rid = client.create_run(exp, run_name=f"wd{wd}").info.run_id
        client.log_batch(rid, params=[Param("wd", str(wd))], metrics=[
            Metric(k, float(v), 1000 + s, s) for s in range(0, 2000, 50)
            for k, v in (("test_acc", s / 2000), ("emb_erank", 10 - s / 400))])
    return db


@pytest.fixture
def mlflow_db(sqlite_template: Path, tmp_path: Path) -> Path:
    d = tmp_path / "db"
    d.mkdir()
    return Path(shutil.copy(sqlite_template, d / "mlflow.db"))


def test_sqlite_valid_converts(mlflow_db: Path, tmp_path: Path) -> None:
    out, p = convert(mlflow_db, tmp_path)
    assert out.exit_code == 0 and out.exception is None, str(out)


@pytest.mark.parametrize("value", ["'abc'", "X'00FF'", "'0.5; DROP TABLE metrics'"])
def test_sqlite_text_metric_value(mlflow_db: Path, tmp_path: Path, value: str) -> None:
    con = sqlite3.connect(mlflow_db)
    con.execute(f"UPDATE metrics SET value = {value} WHERE step = 100 AND key = 'test_acc'")
    con.commit()
    con.close()
    out, p = convert(mlflow_db, tmp_path)
    expect_error(out, *DAMAGED, E.BAD_COLUMN_TYPE)
    assert not p.exists()
    out = cli(["check", mlflow_db], cwd=tmp_path)
    expect_error(out, *DAMAGED, E.BAD_COLUMN_TYPE)


_LOCKER = """
import sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=0.1)
con.execute("PRAGMA journal_mode=DELETE")
con.execute("BEGIN EXCLUSIVE")
con.execute("UPDATE metrics SET value = value")
print("locked", flush=True)
sys.stdin.read()
con.execute("ROLLBACK")
"""


def test_sqlite_locked(mlflow_db: Path, tmp_path: Path) -> None:
    """A writer holds the database (another process: POSIX locks are per process, and the
    snapshot taken by this test would release a lock held here)."""
    import subprocess
    import sys

    locker = subprocess.Popen([sys.executable, "-c", _LOCKER, str(mlflow_db)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert locker.stdout is not None and locker.stdout.readline().strip() == "locked"
        out, p = convert(mlflow_db, tmp_path, "--format", "mlflow-sqlite", real=True)
        expect_error(out, E.DATABASE_LOCKED)
        assert not p.exists()
        out = cli(["check", mlflow_db], cwd=tmp_path)
        expect_error(out, E.DATABASE_LOCKED)
    finally:
        locker.communicate("", timeout=30)


@pytest.mark.parametrize("how", ["truncated", "not_mlflow", "garbage"])
def test_sqlite_damaged(mlflow_db: Path, tmp_path: Path, how: str) -> None:
    if how == "truncated":
        mlflow_db.write_bytes(mlflow_db.read_bytes()[:5000])
    elif how == "not_mlflow":
        mlflow_db.unlink()
        con = sqlite3.connect(mlflow_db)
        con.execute("CREATE TABLE foo (x)")
        con.commit()
        con.close()
    else:
        mlflow_db.write_bytes(b"SQLite format 3\x00" + os.urandom(4000))
    out, p = convert(mlflow_db, tmp_path, "--format", "mlflow-sqlite")
    expect_error(out, *DAMAGED, E.FORMAT_MISMATCH)
    assert not p.exists()


# -- NPZ ----------------------------------------------------------------------------------------

class _Evil:
    """Unpickling this creates ``marker`` (what a malicious NPZ would do with a shell)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (open, (self.marker, "w"))


@pytest.mark.parametrize("where", ["metric", "steps", "condition"])
def test_npz_pickle_is_refused_not_run(tmp_path: Path, where: str) -> None:
    marker = tmp_path / "PWNED"
    evil = np.array([_Evil(str(marker))], dtype=object)
    arrays = {"steps": np.arange(10), "acc": np.linspace(0, 1, 10)[None, :].repeat(2, 0),
              "eff": np.ones((2, 10))}
    arrays[{"metric": "eff", "steps": "steps", "condition": "rho"}[where]] = evil
    d = tmp_path / "npz"
    d.mkdir()
    np.savez(d / "cell.npz", **arrays)
    assert not marker.exists()
    out, p = convert(d / "cell.npz", tmp_path)
    expect_error(out, *DAMAGED, E.BAD_COLUMN_TYPE)
    assert not marker.exists(), "the pickle in the NPZ was executed"
    out = sub(["check", d / "cell.npz"], cwd=tmp_path)
    expect_error(out, *DAMAGED, E.BAD_COLUMN_TYPE)
    assert not marker.exists(), "the pickle in the NPZ was executed"


@pytest.mark.parametrize("how", ["empty", "truncated", "zip_of_garbage", "not_zip"])
def test_npz_damaged(tmp_path: Path, how: str) -> None:
    p = tmp_path / "npz" / "cell.npz"
    p.parent.mkdir()
    if how == "empty":
        p.write_bytes(b"")
    elif how == "truncated":
        np.savez(p, steps=np.arange(100), acc=np.zeros((2, 100)))
        p.write_bytes(p.read_bytes()[:400])
    elif how == "zip_of_garbage":
        import zipfile

        with zipfile.ZipFile(p, "w") as z:
            z.writestr("steps.npy", b"\x93NUMPY garbage")
            z.writestr("acc.npy", os.urandom(100))
    else:
        p.write_bytes(os.urandom(1000))
    out, _ = convert(p, tmp_path)
    expect_error(out, *DAMAGED, E.FILE_EMPTY)
