"""The MLflow SQLite reader's column path gives exactly what the general (pandas) path gives.

The column path reads the integer columns as text in one scan per range of rowids and the
values with one ``fetchall``; it steps aside (returns None) for any column type MLflow does not
write, so that the general path reads those tables as before.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from grokaudit.adapters import mlflow
from grokaudit.adapters.merge import ReadOptions
from grokaudit.errors import LogFormatError

_SCHEMA = """
create table runs (run_uuid varchar(32) primary key, name varchar(250),
                   lifecycle_stage varchar(20), start_time bigint, experiment_id integer);
create table metrics (key varchar(250), value float, timestamp bigint, run_uuid varchar(32),
                      step bigint, is_nan boolean);
create table params (key varchar(250), value varchar(8000), run_uuid varchar(32));
create table tags (key varchar(250), value varchar(8000), run_uuid varchar(32));
insert into runs values ('a', 'ra', 'active', 0, 1), ('b', 'rb', 'active', 1, 1),
                        ('d', 'rd', 'deleted', 2, 1);
insert into params values ('wd', '1.5', 'a'), ('wd', '2', 'b');
insert into tags values ('mlflow.runName', 'ra', 'a');
"""


def _db(path: Path, extra: str = "") -> Path:
    con = sqlite3.connect(path)
    con.executescript(_SCHEMA)
    rng = np.random.default_rng(0)
    rows = []
    for i in range(200):
        for rid in "bad":  # interleaved runs and keys, as log_batch writes them
            for key in ("test/acc", "train_acc", "ü,ni\x00code"):
                rows.append((key, float(rng.random()), 1_700_000_000_000 + i, rid, i, 0))
    rows[5] = rows[5][:1] + (0.0,) + rows[5][2:5] + (1,)  # a logged NaN
    rows[9] = rows[9][:1] + (1.7976931348623157e308,) + rows[9][2:]  # +inf as MLflow writes it
    rows[10] = rows[10][:1] + (-1.7976931348623157e308,) + rows[10][2:]
    con.executemany("insert into metrics values (?, ?, ?, ?, ?, ?)", rows)
    con.executescript(extra)
    con.commit()
    con.close()
    return path


def _snapshot(points) -> list:  # type: ignore[no-untyped-def]
    return [[(c.run, c.metric, c.step.tolist(), c.value.tobytes(), c.wall_time.tobytes())
             for c in points.chunks], points.conditions, points.origins, points.warnings]


def _both(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list, list]:
    fast = _snapshot(mlflow.read_sqlite(path, ReadOptions()))
    with monkeypatch.context() as m:
        m.setattr(mlflow, "_metric_columns", lambda con: None)
        general = _snapshot(mlflow.read_sqlite(path, ReadOptions()))
    return fast, general


@pytest.mark.parametrize("extra", [
    "",
    "insert into metrics(rowid, key, value, timestamp, run_uuid, step, is_nan) "
    "values (-5, 'zz', 1.0, 5, 'b', 302, 0), (5000, 'zz', 2.0, 6, 'b', 303, 0)",
    "insert into metrics values ('test/acc', 3, 5, 'a', 9, 0)",  # an integer value
    "delete from metrics where rowid % 7 = 0",
    "insert into metrics values ('test/acc', 1.0, 5, 'nosuchrun', 9, 0)",
])
def test_column_path_equals_general_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         extra: str) -> None:
    path = _db(tmp_path / "m.db", extra)
    monkeypatch.setattr(mlflow, "_ROWIDS", 64)  # several scans, as for a large table
    with sqlite3.connect(path) as con:
        assert mlflow._metric_columns(con) is not None
    fast, general = _both(path, monkeypatch)
    assert fast == general
    assert sum(len(c[2]) for c in fast[0]) >= 1000


@pytest.mark.parametrize("extra", [
    "insert into metrics values ('test/acc', 'oops', 5, 'd', 9, 0)",  # text value, deleted run
    "insert into metrics values ('test/acc', 1.0, 'x', 'a', 9, 0)",  # text timestamp
    "insert into metrics values ('test/acc', 1.0, 5, 'a', 9, NULL)",  # NULL is_nan
    "insert into metrics values (NULL, 1.0, 5, 'd', 9, 0)",  # NULL key
])
def test_odd_types_are_left_to_the_general_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                extra: str) -> None:
    path = _db(tmp_path / "m.db", extra)
    with sqlite3.connect(path) as con:
        assert mlflow._metric_columns(con) is None
    fast, general = _both(path, monkeypatch)
    assert fast == general


def test_errors_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _db(tmp_path / "m.db", "insert into metrics values ('test/acc', 1.0, 5, 'a', -9, 0)")
    codes = []
    for general in (False, True):
        with monkeypatch.context() as m:
            if general:
                m.setattr(mlflow, "_metric_columns", lambda con: None)
            with pytest.raises(LogFormatError) as err:
                mlflow.read_sqlite(path, ReadOptions())
            codes.append(err.value.code)
    assert codes[0] == codes[1]
