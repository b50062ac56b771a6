"""Logs whose layout says more than their rows: a RunLogger folder that lost a segment (with
or without its claim files), and hive partition folders that repeat a key or contradict a
column. Each is one coded refusal (exit 2) in memory and with ``--stream`` alike, never rows
silently left out or an axis silently rewritten.

A RunLogger folder (``tmp/runs``) as the logger writes it, two runs of three segments::

    wd1_s0.<hash>.claim  wd1_s0.<hash>.000000.parquet  ….000001.parquet  ….000002.parquet
    wd1_s1.<hash>.claim  wd1_s1.<hash>.000000.parquet  ….000001.parquet  ….000002.parquet
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from grokaudit.errors import ErrorCode, LogFormatError
from grokaudit.loader import read_any
from grokaudit.logger import RunLogger, read_run_folder
from grokaudit.stream import audit_stream
from helpers.hostile import cli, expect_audit, expect_error, sweep_df
from helpers.tables import provenance_of

STEPS = 30  # rows per run: 3 segments of 10 rows


def _log_runs(folder: Path, runs: int = 2, *, close: bool = True) -> list[RunLogger]:
    """``runs`` runs written by RunLogger, ``STEPS`` rows each, a segment per 10 rows."""
    loggers = []
    for s in range(runs):
        log = RunLogger(folder, run=f"wd1_s{s}", conditions={"wd": 1.0, "seed": s},
                        flush_every=10, segment_rows=10, fsync=False)
        for step in range(STEPS):
            log.log(step * 10, test_acc=min(1.0, step / 15), emb_erank=10.0 - step / 5)
        if close:
            log.close()
        loggers.append(log)
    return loggers


@pytest.mark.parametrize("claims", ["kept", "removed"])
def test_a_segment_lost_below_the_last_is_refused(tmp_path: Path, claims: str) -> None:
    """Segment 0 of one run removed (a partial copy, a cleanup): its rows were left out in
    silence once the claim files were gone too (the folder read as plain shards)."""
    folder = tmp_path / "runs"
    log = _log_runs(folder)[0]
    log.segment_path(0).unlink()
    if claims == "removed":
        for c in folder.glob("*.claim"):
            c.unlink()
    with pytest.raises(LogFormatError) as e:
        read_any(folder)
    assert e.value.code is ErrorCode.SEGMENT_MISSING
    expect_error(cli(["check", folder, "--by", "seed", "--metric", "emb_erank"]),
                 "SEGMENT_MISSING")


def test_a_closed_run_missing_the_segments_its_close_record_counts_is_refused(
        tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    log = _log_runs(folder)[1]
    log.segment_path(2).unlink()  # the last one: only the close record says it existed
    with pytest.raises(LogFormatError) as e:
        read_run_folder(folder)
    assert e.value.code is ErrorCode.SEGMENT_MISSING


def test_a_run_still_being_written_is_read_as_such_without_its_claim(tmp_path: Path) -> None:
    """A run whose next segment is not written yet has no gap: every flushed row is read, and
    the run is reported as not closed — also once its claim file is gone (a copy of the
    segments only), where the folder was read as plain shards, with no word of it."""
    folder = tmp_path / "runs"
    live = _log_runs(folder, close=False)
    copy = tmp_path / "copy"
    copy.mkdir()
    for q in folder.glob("*.parquet"):
        shutil.copy(q, copy / q.name)
    for where in (folder, copy):
        t = read_any(where)
        assert t.num_rows == 2 * STEPS
        open_runs = {f["run"] for f in provenance_of(t)["findings"]
                     if f["code"] == "SOURCE_TRUNCATED"}
        assert open_runs == {"wd1_s0", "wd1_s1"}
    for log in live:
        log.close()


# ------------------------------------------------------------------------------------------
# hive partition folders
# ------------------------------------------------------------------------------------------

def _hive(root: Path, folders: dict[float, str], *, column: float | None = None,
          acc: str = "test_acc") -> Path:
    """The sweep as a hive dataset: each wd's runs in ``folders[wd]/part-0.parquet`` (its
    ``wd`` column dropped, or set to ``column``); ``acc`` names the accuracy column."""
    df = sweep_df(wds=(1.0, 2.0, 3.0), seeds=(0, 1))
    for wd, g in df.groupby("wd"):
        g = g.drop(columns=["wd"]).rename(columns={"test_acc": acc})
        if column is not None:
            g = g.assign(wd=column)
        d = root / folders[float(wd)]
        d.mkdir(parents=True)
        pq.write_table(pa.Table.from_pandas(g, preserve_index=False), d / "part-0.parquet")
    return root


def _check(root: Path, stream: bool) -> list[str]:
    return ["check", str(root), "--by", "wd", "--metric", "emb_erank",
            *(["--stream", "--part-rows", "200"] if stream else []), "-q"]


@pytest.mark.parametrize("stream", [False, True], ids=["in_memory", "stream"])
def test_a_key_repeated_in_the_path_with_two_values_is_refused(tmp_path: Path,
                                                                stream: bool) -> None:
    """``wd=1.0/wd=0/…``: the inner value silently won (a 3-value axis read as one value); the
    same key repeated with the same value (``wd=2.0/wd=2``) is one value, read."""
    same = _hive(tmp_path / "same", {w: f"wd={w}/wd={w:g}" for w in (1.0, 2.0, 3.0)})
    expect_audit(cli(_check(same, stream)))
    assert sorted(set(read_any(same).column("wd").to_pylist())) == [1.0, 2.0, 3.0]
    two = _hive(tmp_path / "two", {w: f"wd={w}/wd={k}" for k, w in enumerate((1.0, 2.0, 3.0))})
    expect_error(cli(_check(two, stream)), "HIVE_KEY_CONFLICT")


@pytest.mark.parametrize("acc", ["test_acc", "val_acc"], ids=["canonical", "adapters"])
def test_a_column_contradicting_its_partition_folder_is_refused(tmp_path: Path,
                                                                 acc: str) -> None:
    """Every file's ``wd`` column says 0.5 inside ``wd=1.0/``, ``wd=2.0/``…: the column won,
    with one info note per file; a column that agrees with its folder is read, noted never."""
    bad = _hive(tmp_path / "bad", {w: f"wd={w}" for w in (1.0, 2.0, 3.0)}, column=0.5, acc=acc)
    for stream in ([False, True] if acc == "test_acc" else [False]):
        expect_error(cli(_check(bad, stream)), "HIVE_KEY_CONFLICT")
    ok = _hive(tmp_path / "ok", {w: f"wd={w}" for w in (1.0, 2.0, 3.0)}, acc=acc)
    for g, w in zip(sorted(ok.rglob("*.parquet")), (1.0, 2.0, 3.0)):
        t = pq.read_table(g)
        pq.write_table(t.append_column("wd", pa.array(np.full(t.num_rows, w))), g)
    t = read_any(ok)
    assert sorted(set(t.column("wd").to_pylist())) == [1.0, 2.0, 3.0]
    assert not any("wd" in n for n in provenance_of(t).get("notes") or [])


def test_the_streamed_audit_refuses_a_repeated_key_as_the_library_does(tmp_path: Path) -> None:
    two = _hive(tmp_path / "two", {w: f"wd={w}/wd={k}" for k, w in enumerate((1.0, 2.0, 3.0))})
    with pytest.raises(LogFormatError) as e:
        audit_stream(two, by="wd", metrics=["emb_erank"], part_rows=200)
    assert e.value.code is ErrorCode.HIVE_KEY_CONFLICT


def test_a_closed_run_whose_segments_are_all_gone_is_refused(tmp_path: Path) -> None:
    """Every segment of a closed run removed, its claim kept (its close record counts three
    segments, 30 rows): it read as 'closed without logging a row', exit 0, the run gone."""
    folder = tmp_path / "runs"
    log = _log_runs(folder, runs=3)[0]
    for k in range(3):
        log.segment_path(k).unlink()
    with pytest.raises(LogFormatError) as e:
        read_any(folder)
    assert e.value.code is ErrorCode.SEGMENT_MISSING
    expect_error(cli(["check", folder, "--by", "seed", "--metric", "emb_erank"]),
                 "SEGMENT_MISSING")


def test_a_closed_run_that_logged_nothing_is_no_gap(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    _log_runs(folder, runs=3)
    RunLogger(folder, run="empty", conditions={"wd": 1.0, "seed": 9}, fsync=False).close()
    read_any(folder)  # read: nothing was lost
