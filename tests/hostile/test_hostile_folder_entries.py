"""A folder of logs holding, under a log's name, an entry no reader can read: a link to a
missing file (a volume not mounted) or a FIFO. Found by a hostile hunt: the readers walked
regular files only, and the audit ran on the other runs without a word."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from grokaudit.errors import ErrorCode
from helpers.hostile import cli, expect_audit, expect_error, sub, sweep_df, write_parquet


def _csv_folder(root: Path) -> Path:
    df = sweep_df()
    root.mkdir()
    for k, (_wd, g) in enumerate(df.groupby("wd")):
        g.to_csv(root / f"part{k}.csv", index=False)
    return root


def _hive_folder(root: Path) -> Path:
    df = sweep_df()
    for wd, g in df.groupby("wd"):
        d = root / f"wd={wd}"
        d.mkdir(parents=True)
        write_parquet(g.drop(columns=["wd"]), d / "part-0.parquet")
    return root


def _bad_entry(folder: Path, kind: str, name: str) -> None:
    if kind == "dangling":
        (folder / name).symlink_to(folder / "no-such-volume" / name)
    else:
        os.mkfifo(folder / name)


@pytest.mark.parametrize("kind", ["dangling", "fifo"])
@pytest.mark.parametrize("layout,stream", [("csv", False), ("hive", False), ("hive", True)])
def test_an_unreadable_log_in_a_folder_is_refused(tmp_path: Path, kind: str, layout: str,
                                                  stream: bool) -> None:
    # (--stream reads canonical Parquet folders only: a CSV folder is read by the adapters)
    if layout == "csv":
        root = _csv_folder(tmp_path / "sweep")
        where, name = root, "part9.csv"
    else:
        root = _hive_folder(tmp_path / "ds")
        where, name = root / "wd=1.0", "part-1.parquet"
    args = ["check", str(root), *(["--stream"] if stream else [])]
    expect_audit(cli(args, cwd=tmp_path), 0, 1)  # the folder as it is: audited
    _bad_entry(where, kind, name)
    expect_error(cli(args, cwd=tmp_path), ErrorCode.FILE_UNREADABLE)


def test_entries_that_are_no_log_are_not_judged(tmp_path: Path) -> None:
    # a dangling link or FIFO under a name no reader reads (W&B's debug.log links, a socket
    # of a tool) is no part of the log, nor is a hidden one
    root = _csv_folder(tmp_path / "sweep")
    (root / "debug.log").symlink_to(root / "gone" / "debug.log")
    (root / ".cache").mkdir()
    os.mkfifo(root / ".cache" / "x.csv")
    expect_audit(cli(["check", str(root)], cwd=tmp_path), 0, 1)


@pytest.mark.parametrize("stream", [False, True])
def test_a_partition_folder_behind_a_missing_link_is_refused(tmp_path: Path, stream: bool
                                                              ) -> None:
    # found by a review: wd=2.0 linked from a volume not mounted was dropped with its runs
    root = _hive_folder(tmp_path / "ds")
    elsewhere = tmp_path / "other-disk"
    elsewhere.mkdir()
    (root / "wd=2.0").rename(elsewhere / "wd=2.0")
    (root / "wd=2.0").symlink_to(elsewhere / "wd=2.0")
    args = ["check", str(root), *(["--stream"] if stream else [])]
    expect_audit(cli(args, cwd=tmp_path), 0, 1)  # a linked partition is read
    os.mkfifo(elsewhere / "wd=2.0" / "part-1.parquet")  # a FIFO inside the linked partition
    expect_error(cli(args, cwd=tmp_path), ErrorCode.FILE_UNREADABLE)
    os.unlink(elsewhere / "wd=2.0" / "part-1.parquet")
    (elsewhere / "wd=2.0").rename(tmp_path / "unmounted")  # the link now points nowhere
    expect_error(cli(args, cwd=tmp_path), ErrorCode.FILE_UNREADABLE)


def test_a_folder_linked_to_itself_is_walked_once(tmp_path: Path) -> None:
    # the walk enters linked folders: a link back to the folder (or to its parent) must not
    # make it loop, and the logs under the link are the same logs, read once
    root = _csv_folder(tmp_path / "sweep")
    (root / "again").symlink_to(root)
    (root / "up").symlink_to(tmp_path)
    expect_audit(cli(["check", str(root)], cwd=tmp_path), 0, 1)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_special_file_under_a_log_name_is_refused_by_stream(tmp_path, kind: str) -> None:
    """``--stream`` opened a FIFO named ``log.parquet`` and waited for a writer forever (deaf
    to SIGTERM); a link to /dev/zero escaped as a traceback with exit 1."""
    path = tmp_path / "log.parquet"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        if not os.path.exists("/dev/zero"):
            pytest.skip("no /dev/zero here")
        path.symlink_to("/dev/zero")
    out = sub(["check", path, "--stream", "-q"], cwd=tmp_path, timeout=60)
    expect_error(out, ErrorCode.FILE_UNREADABLE)


def test_a_path_the_system_refuses_is_one_error_line_not_a_traceback(tmp_path) -> None:
    """An OSError no check named (a file name longer than the system allows) was re-raised:
    a traceback and exit 1, which reads as critical findings."""
    out = sub(["check", "a" * 300 + ".parquet", "-q"], cwd=tmp_path, timeout=60)
    expect_error(out, ErrorCode.FILE_UNREADABLE)
