"""The default path's shortcuts of issue 44 (steps' range and sign read from the runs' ends,
columns read ahead within a budget, float32 columns read without a copy) against hostile
Parquet logs through ``grokaudit check``: a step past 2**53 or below 0 anywhere in a run,
sorted or not, is one coded line and exit 2 naming the right run; a log whose columns are
mostly text, or a float32 metric that is all null, audits (exit 0 or 1) or is refused with a
code, never a traceback; and the input file is never changed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers.hostile import assert_unchanged, cli, expect_audit, expect_error, snapshot

RUNS, T = 4, 10


def _write(path: Path, step: np.ndarray | pa.Array, **extra: pa.Array) -> Path:
    n = RUNS * T
    cols = {"run": pa.array([f"r{i // T}" for i in range(n)]), "step": step,
            "test_acc": pa.array(np.linspace(0, 1, n).astype(np.float32)),
            "emb_erank": pa.array(np.linspace(30, 5, n).astype(np.float32)),
            "wd": pa.array(np.repeat([0.1, 0.1, 0.3, 0.3], T))}
    cols.update(extra)
    pq.write_table(pa.table(cols), path, row_group_size=13)
    return path


def _steps(dtype: type = np.int64) -> np.ndarray:
    return np.tile(np.arange(T, dtype=dtype) * 10, RUNS)


@pytest.mark.parametrize("where", [0, 5, T - 1])
@pytest.mark.parametrize("order", ["sorted", "reversed"])
def test_a_step_past_the_largest_is_refused_wherever_it_sits(tmp_path, where, order) -> None:
    s = _steps(np.uint64)
    s[2 * T + where] = 2**53 + 7
    if order == "reversed":
        s = s[::-1].copy()
    log = _write(tmp_path / "big.parquet", pa.array(s))
    before = snapshot(tmp_path)
    expect_error(cli(["check", log, "--by", "wd", "--metric", "emb_erank"]),
                 "STEP_OUT_OF_RANGE")
    assert_unchanged(before, tmp_path)


@pytest.mark.parametrize("order", ["sorted", "reversed"])
def test_a_negative_step_names_the_first_run_holding_one(tmp_path, order) -> None:
    s = _steps()
    s[2 * T + 4] = -3  # run r2
    s[3 * T] = -9  # run r3, after r2 in the file
    if order == "reversed":  # the steps reversed within the file: runs unsorted, and the
        s = s[::-1].copy()  # first negative step in another run
    log = _write(tmp_path / "neg.parquet", pa.array(s))
    _, msg = expect_error(cli(["check", log, "--by", "wd", "--metric", "emb_erank"]),
                          "NEGATIVE_STEP")
    first = f"r{int(np.argmax(s < 0)) // T}"  # the run of the first negative row in the file
    assert first == ("r2" if order == "sorted" else "r0")
    assert f"'{first}'" in msg


def test_a_log_of_many_text_columns_audits(tmp_path) -> None:
    n = RUNS * T
    # text conditions, constant within each cell of wd (per run they would be the axis)
    texts = {f"note{k}": pa.array([("x" * 300) + str(i // (2 * T)) for i in range(n)])
             for k in range(6)}
    log = _write(tmp_path / "text.parquet", pa.array(_steps()), **texts)
    before = snapshot(tmp_path)
    expect_audit(cli(["check", log, "--by", "wd", "--metric", "emb_erank", "-q"]))
    assert_unchanged(before, tmp_path)


def test_an_all_null_float32_metric_is_an_audit_or_a_coded_refusal(tmp_path) -> None:
    n = RUNS * T
    log = _write(tmp_path / "null.parquet", pa.array(_steps()),
                 emb_erank=pa.array([None] * n, type=pa.float32()))
    out = cli(["check", log, "--by", "wd", "--metric", "emb_erank", "-q"])
    if out.exit_code == 2:
        expect_error(out)
    else:
        expect_audit(out)


@pytest.mark.parametrize(("column", "group"), [("step", 0), ("test_acc", 0), ("emb_erank", 0),
                                               ("wd", 0), ("run", 0), ("run", 2)])
def test_a_column_corrupt_on_disk_is_one_coded_line_and_reading_stops(tmp_path, column,
                                                                      group) -> None:
    """A column whose page is corrupt on disk (in the first row group, or for the run ids,
    read one row group at a time, in a later one), read ahead of validation or awaited: one
    ``FILE_UNREADABLE`` line naming it, exit 2, no reading thread left behind, the file as
    it was."""
    import threading

    log = _write(tmp_path / "corrupt.parquet", pa.array(_steps()))
    meta = pq.ParquetFile(log).metadata
    assert meta.num_row_groups > group
    i = meta.schema.names.index(column)
    chunk = meta.row_group(group).column(i)
    start = chunk.data_page_offset
    raw = bytearray(log.read_bytes())
    for k in range(start + 8, start + min(40, chunk.total_compressed_size)):
        raw[k] ^= 0xA5  # the page's bytes past its header start
    log.write_bytes(bytes(raw))
    before = snapshot(tmp_path)
    _, msg = expect_error(cli(["check", log, "--by", "wd", "--metric", "emb_erank", "-q"]),
                          "FILE_UNREADABLE")
    assert f"'{column}'" in msg
    for th in threading.enumerate():
        if th.name.startswith("grokaudit-read"):
            th.join(5)
    assert not [th for th in threading.enumerate() if th.name.startswith("grokaudit-read")]
    assert_unchanged(before, tmp_path)
