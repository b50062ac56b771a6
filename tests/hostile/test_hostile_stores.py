"""Stores that could make a read run without end: an MLflow SQLite file whose 'tags' is a
recursive view (24 GB, SIGTERM ignored), an NPZ archive that declares more values than the cap
(a decompression bomb). Each is refused before it is read (issue 38's review)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
from helpers.hostile import cli, expect_error


def test_an_mlflow_store_whose_table_is_a_view_is_refused_unread(tmp_path: Path) -> None:
    db = tmp_path / "mlflow.db"
    con = sqlite3.connect(db)
    con.executescript("""
        create table runs (run_uuid, name, lifecycle_stage, start_time);
        create table metrics (key, value float, timestamp, run_uuid, step, is_nan);
        create table params (key, value, run_uuid);
        create view tags as with recursive c(x) as (select 1 union all select x + 1 from c)
          select 'r1' as run_uuid, 'mlflow.runName' as key, 'v' as value from c;
        insert into runs values ('r1', 'run1', 'active', 0);""")
    for s in range(0, 100, 10):
        con.execute("insert into metrics values ('test_acc', 0.5, 0, 'r1', ?, 0)", (s,))
    con.commit()
    con.close()
    for cmd in ("inspect", "check"):
        expect_error(cli([cmd, db]), "FORMAT_MISMATCH")


def test_an_npz_array_declaring_more_values_than_the_cap_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "sweep.npz"
    np.savez_compressed(path, steps=np.arange(5000), test_acc=np.zeros((2, 5000)))
    expect_error(cli(["inspect", path, "--max-rows", "1000"]), "TOO_LARGE")
    out = cli(["inspect", path, "--max-rows", "100000"])  # within the cap: read as before
    assert "[TOO_LARGE]" not in out.stderr
