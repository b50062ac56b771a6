"""MLflow tracking stores: the file store (``mlruns/``) and the SQLite backend, read directly.

Neither needs MLflow installed: the file store is plain text and the SQLite backend a plain
SQLite schema (read with the standard library). File store layout::

    mlruns/<experiment id>/<run id>/
        meta.yaml                  run_name, lifecycle_stage, …
        metrics/test/acc           lines "timestamp value step" (a "/" in a key is a folder;
                                   re-logging a step appends a line)
        params/wd                  the whole file is the value  -> condition column "wd"
        tags/mlflow.runName        the run name                 -> the run id in the table

SQLite (MLflow >= 3.7's default ``mlflow.db``): ``metrics(key, value, timestamp, run_uuid, step,
is_nan)`` — NaN is stored as ``value = 0, is_nan = 1`` — plus ``runs``, ``params``, ``tags``.
Deleted runs are skipped (and counted in the warnings).
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from grokaudit.errors import ErrorCode, LogFormatError
from grokaudit.schema import STEP_MAX
from grokaudit.text import safe

from .merge import ReadOptions, parse_scalar
from .points import Points
from .registry import Reader

SQLITE_MAGIC = b"SQLite format 3\x00"
#: Seconds to wait for another process's write lock before reporting DATABASE_LOCKED (a
#: writer's commit holds it for milliseconds; a long-held lock is a transaction left open).
LOCK_TIMEOUT_S = 2.0
#: MLflow's SQL store writes +-inf as +-DBL_MAX (``sqlalchemy_store``); read back as +-inf.
_DBL_MAX = 1.7976931348623157e308


def _meta(path: Path) -> dict[str, str]:
    """The flat ``key: value`` lines of an MLflow ``meta.yaml`` (no YAML library needed)."""
    out: dict[str, str] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            key, sep, val = line.partition(":")
            if sep and not line.startswith((" ", "-")):
                out[key.strip()] = val.strip().strip("'\"")
    return out


def _name_runs(ids: list[str], names: dict[str, str], points: Points) -> dict[str, str]:
    """Run id in the table: the run name, or ``name/<run id>`` where names collide."""
    seen: dict[str, int] = {}
    for rid in ids:
        seen[names.get(rid) or rid] = seen.get(names.get(rid) or rid, 0) + 1
    out = {}
    clashes = 0
    for rid in ids:
        name = names.get(rid) or rid
        if seen[name] > 1:
            clashes += 1
            name = f"{name}/{rid}"
        out[rid] = name
    if clashes:
        points.warnings.append(f"{clashes} run(s) share a run name; their ids are "
                               "'<name>/<run id>'")
    return out


# ------------------------------------------------------------------------------------------
# file store
# ------------------------------------------------------------------------------------------

def run_dirs(path: Path) -> list[Path]:
    """Run folders (holding ``meta.yaml`` and ``metrics/``) at or under ``path``."""
    if (path / "meta.yaml").is_file() and (path / "metrics").is_dir():
        return [path]
    return sorted(q.parent for q in path.rglob("meta.yaml")
                  if (q.parent / "metrics").is_dir() and ".trash" not in q.parts)


def _detect_file_store(path: Path) -> bool:
    return path.is_dir() and bool(run_dirs(path))


def _metric_file(f: Path, run: str, metric: str,
                 points: Points) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(step, value, wall seconds) of one metric file; a cut last line is reported, a line that
    is not ``timestamp value step`` is a :class:`LogFormatError` with its byte offset."""
    data = f.read_bytes()
    lines = data.split(b"\n")
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    if data.endswith(b"\n") or not data:
        lines.pop()
        starts.pop()
    elif len(lines[-1].split()) < 3:
        offset = starts[-1]
        lines.pop()
        starts.pop()
        points.finding("SOURCE_TRUNCATED", "metric file ends inside a line (truncated "
                       "write); the partial line was not read", file=str(f),
                       offset=offset, count=len(data) - offset)
    where = f"metric {safe(metric)!r} of run {safe(run)!r}"
    ts, vals, steps, at = [], [], [], []
    for line, pos in zip(lines, starts):
        parts = line.split()
        if not parts:
            continue
        if len(parts) not in (3, 5):
            raise LogFormatError(
                f"line at byte {pos} of {where} has {len(parts)} fields; MLflow metric lines "
                "are 'timestamp value step': fix or delete that line", path=str(f),
                code=ErrorCode.CORRUPT_RECORD)
        ts.append(parts[0])
        vals.append(parts[1])
        steps.append(parts[2])
        at.append(pos)
    try:
        return (np.array(steps).astype(np.int64) if steps else np.zeros(0, dtype=np.int64),
                np.array(vals).astype(np.float64) if vals else np.zeros(0),
                np.array(ts).astype(np.float64) / 1000.0 if ts else np.zeros(0))
    except (ValueError, OverflowError):
        pass
    for col, kind, conv in ((vals, "value", float), (steps, "step", int),
                            (ts, "timestamp", float)):
        for tok, pos in zip(col, at):
            try:
                x = conv(tok)
            except ValueError:
                raise LogFormatError(
                    f"line at byte {pos} of {where} has the {kind} "
                    f"{safe(tok.decode('utf-8', 'replace'))[:40]!r}, which is not "
                    f"{'an integer' if kind == 'step' else 'a number'}; MLflow metric lines are "
                    "'timestamp value step': fix or delete that line", path=str(f),
                    code=ErrorCode.CORRUPT_RECORD) from None
            if kind == "step" and abs(x) > STEP_MAX:
                raise LogFormatError(
                    f"line at byte {pos} of {where} has the step {x}, beyond the largest "
                    f"supported step {STEP_MAX} (2**53); a corrupted line?", path=str(f),
                    column="step", code=ErrorCode.STEP_OUT_OF_RANGE)
    raise LogFormatError(f"unreadable metric lines in {where}", path=str(f),
                         code=ErrorCode.CORRUPT_RECORD)


def read_file_store(path: Path, options: ReadOptions) -> Points:
    """Read every run of an MLflow file store (or one experiment, or one run folder)."""
    dirs = run_dirs(path)
    if not dirs:
        raise LogFormatError("no MLflow run folders (meta.yaml + metrics/) here; check the "
                             "path or the --format", path=str(path),
                             code=ErrorCode.FORMAT_MISMATCH)
    points = Points()
    names: dict[str, str] = {}
    live: list[Path] = []
    deleted = 0
    for d in dirs:
        meta = _meta(d / "meta.yaml")
        if meta.get("lifecycle_stage") == "deleted":
            deleted += 1
            continue
        live.append(d)
        tag = d / "tags" / "mlflow.runName"
        names[d.name] = tag.read_text(encoding="utf-8", errors="replace").strip() \
            if tag.is_file() else meta.get("run_name", "")
    run_of = _name_runs([d.name for d in live], names, points)
    for d in live:
        run = run_of[d.name]
        mdir = d / "metrics"
        for f in sorted(q for q in mdir.rglob("*") if q.is_file()):
            points.files.append(str(f))
            metric = f.relative_to(mdir).as_posix()
            step, val, wall = _metric_file(f, run, metric, points)
            points.add(run, metric, step, val, wall)
        pdir = d / "params"
        if pdir.is_dir():
            for f in sorted(q for q in pdir.rglob("*") if q.is_file()):
                points.add_condition(run, f.relative_to(pdir).as_posix(), parse_scalar(
                    f.read_text(encoding="utf-8", errors="replace").strip()))
        points.origins[run] = f"{d.parent.name}/{d.name}"
    if deleted:
        points.warnings.append(f"{deleted} deleted run(s) skipped")
    if not points.files:
        raise LogFormatError("the MLflow runs here logged no metrics; there is nothing to "
                             "read", path=str(path), code=ErrorCode.NO_ROWS)
    return points


# ------------------------------------------------------------------------------------------
# SQLite store
# ------------------------------------------------------------------------------------------

def _detect_sqlite(path: Path) -> bool:
    """An SQLite file holding MLflow's tables. An SQLite file that cannot be opened (locked by
    another process, damaged) raises its :class:`LogFormatError`: it is not "unknown"."""
    if not path.is_file():
        return False
    with path.open("rb") as fh:
        if fh.read(16) != SQLITE_MAGIC:
            return False
    try:
        with closing(_connect(path)) as con:
            names = {r[0] for r in con.execute("select name from sqlite_master where type='table'")}
    except sqlite3.Error as exc:
        raise _sqlite_error(exc, path) from None
    return {"metrics", "runs", "params"} <= names


def _connect(path: Path) -> sqlite3.Connection:
    con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True,
                          timeout=LOCK_TIMEOUT_S)
    # hand control back to Python every so many SQLite steps: a Ctrl-C or SIGTERM is acted on
    # during a long query (SQLite's C loop never checks for signals itself)
    con.set_progress_handler(_go_on, 200_000)
    return con


def _go_on() -> int:
    return 0  # 0: go on (a pending signal's handler runs here, between the steps)


def _sqlite_error(exc: BaseException, path: Path) -> LogFormatError:
    """The one-line error for an SQLite failure: a lock held by another process, a journal
    left by a crashed writer, or a damaged file."""
    err = exc.__cause__ if isinstance(exc, pd.errors.DatabaseError) and exc.__cause__ else exc
    name = str(getattr(err, "sqlite_errorname", "") or "")
    text = str(err)
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "database is locked" in text:
        return LogFormatError(
            "the SQLite database is locked by another process (an MLflow server or a training "
            "run is writing to it); retry when the run finishes, or copy the file and read the "
            "copy", path=str(path), code=ErrorCode.DATABASE_LOCKED)
    if name == "SQLITE_READONLY_ROLLBACK":
        return LogFormatError(
            "a writer stopped inside a transaction and left its journal beside the database; "
            "open the database once with MLflow (or sqlite3) to roll it back, then retry",
            path=str(path), code=ErrorCode.FILE_UNREADABLE)
    return LogFormatError(f"cannot read the SQLite database ({safe(text)[:200]}); the file is "
                          "truncated, corrupt, or not an MLflow database", path=str(path),
                          code=ErrorCode.FILE_UNREADABLE)


#: The first metric row of a live run that MLflow cannot have written: a value that is not a
#: number (text, a blob, NULL) or a step that is not an integer.
_BAD_ROW = """
select m.run_uuid, m.key, m.step, typeof(m.step), m.value, typeof(m.value)
from metrics m join runs r on r.run_uuid = m.run_uuid
where coalesce(r.lifecycle_stage, '') != 'deleted'
  and (typeof(m.value) not in ('real', 'integer') or typeof(m.step) != 'integer')
order by m.rowid limit 1
"""


def _bad_row(row: tuple[Any, ...], names: dict[str, str], path: Path) -> LogFormatError:
    rid, key, step, step_type, value, value_type = row
    where = f"metric {safe(key)!r} of run {safe(names.get(rid) or rid)!r} (run id {safe(rid)})"
    if value_type not in ("real", "integer"):
        shown = "NULL" if value is None else safe(repr(value))[:60]
        return LogFormatError(
            f"{where} has the value {shown} (stored as {value_type}) at step {safe(step)}, which "
            "is not a number; MLflow stores metric values as numbers, so this row was written by "
            "something else or is damaged: fix or delete it", path=str(path), column=str(key),
            code=ErrorCode.CORRUPT_RECORD)
    if step is None:
        return LogFormatError(f"{where} has a row without a step (NULL); every logged value "
                              "needs its step: fix or delete it", path=str(path), column="step",
                              code=ErrorCode.MISSING_VALUES)
    if step_type == "real":
        big = abs(float(step)) > STEP_MAX
        return LogFormatError(
            f"{where} has the step {float(step):g}, "
            + ("beyond the largest supported step 2**53" if big else "which is not an integer")
            + "; MLflow steps are integers: fix or delete that row", path=str(path),
            column="step",
            code=ErrorCode.STEP_OUT_OF_RANGE if big else ErrorCode.NON_INTEGER_STEP)
    return LogFormatError(f"{where} has the step {safe(repr(step))[:60]} (stored as "
                          f"{step_type}), which is not a number; fix or delete that row",
                          path=str(path), column="step", code=ErrorCode.CORRUPT_RECORD)


def read_sqlite(path: Path, options: ReadOptions) -> Points:
    """Read every live run of an MLflow SQLite store, in one read transaction (a consistent
    snapshot even while a run is still logging)."""
    points = Points(files=[str(path)])
    try:
        with closing(_connect(path)) as con:
            con.execute("begin")
            tables = {r[0] for r in con.execute("select name from sqlite_master "
                                                "where type = 'table'")}
            # MLflow writes tables: a view under one of their names can compute rows without
            # end (a recursive query in a 12 KB file used 24 GB); never read it
            views = {"runs", "metrics", "params", "tags"} - tables
            if views and {"metrics", "runs", "params"} <= tables:
                raise LogFormatError(
                    f"{', '.join(sorted(views))}: not a table of MLflow's but something else "
                    "under its name (a view computes its rows when read, possibly without end); "
                    "export the runs from the MLflow server that owns the store",
                    path=str(path), code=ErrorCode.FORMAT_MISMATCH)
            if not {"runs", "metrics", "params", "tags"} <= tables:
                raise LogFormatError(
                    "an SQLite database without MLflow's tables (runs, metrics, params, tags); "
                    "check the path or the --format", path=str(path),
                    code=ErrorCode.FORMAT_MISMATCH)
            runs = con.execute("select run_uuid, name, lifecycle_stage from runs "
                               "order by start_time, run_uuid").fetchall()
            tags = dict(con.execute("select run_uuid, value from tags "
                                    "where key = 'mlflow.runName'").fetchall())
            names = {rid: tags.get(rid) or name or rid for rid, name, _ in runs}
            # the column path reads only tables whose every row has an integer step and a
            # numeric value, where _BAD_ROW finds nothing: it is looked for otherwise
            fast = _metric_columns(con)
            bad = con.execute(_BAD_ROW).fetchone() if fast is None else None
            if bad is not None:
                raise _bad_row(bad, names, path)
            params = con.execute("select run_uuid, key, value from params").fetchall()
            metrics = None if fast is not None else pd.read_sql_query(
                "select run_uuid, key, step, value, timestamp, is_nan from metrics "
                "order by rowid", con)
            con.rollback()
    except (sqlite3.Error, pd.errors.DatabaseError) as exc:
        raise _sqlite_error(exc, path) from None
    live = [r[0] for r in runs if r[2] != "deleted"]
    if len(live) < len(runs):
        points.warnings.append(f"{len(runs) - len(live)} deleted run(s) skipped")
    run_of = _name_runs(live, names, points)
    if fast is not None:
        _add_columns(points, fast, run_of)
    else:
        assert metrics is not None
        _add_frame(points, metrics, run_of)
    for rid, key, val in params:
        if rid in run_of:
            points.add_condition(run_of[rid], key,
                                 parse_scalar(val) if isinstance(val, str) else val)
    for rid in live:
        points.origins[run_of[rid]] = rid
    return points


#: The (run_uuid, key) pairs, numbered in their sorted order (sorting the distinct pairs only).
_PAIRS = """
select run_uuid, key, row_number() over (order by run_uuid, key) - 1
from (select distinct run_uuid, key from metrics)
"""
#: One scan of the metrics in rowid order (a range of rowids): for each row, its pair's number
#: and its integer columns as comma-separated text (integers print exactly); plus the count of
#: rows whose types are not the ones MLflow writes (then the general path reads the table).
_INT_COLUMNS = f"""
with pairs(run_uuid, key, pair) as materialized ({_PAIRS})
select group_concat(pair), group_concat(step), group_concat(timestamp), count(*),
       sum(typeof(step) != 'integer' or typeof(timestamp) != 'integer'
           or typeof(is_nan) != 'integer' or typeof(value) not in ('real', 'integer'))
from (select p.pair, m.step, m.timestamp, m.is_nan, m.value
      from metrics m cross join pairs p on p.run_uuid = m.run_uuid and p.key = m.key
      where m.rowid >= ? and m.rowid < ? order by m.rowid)
"""
#: The values in rowid order, NULL where ``is_nan`` is set (read as NaN).
_VALUES = "select case when is_nan != 0 then null else value end from metrics order by rowid"
_ROWIDS = 1 << 22  # rowids per scan: keeps each text far below SQLite's 1e9-byte limit


def _metric_columns(con: sqlite3.Connection) -> dict[str, Any] | None:
    """The metrics table as numpy columns (rowid order), read without a Python object per
    value except the float ``value`` itself (NaN where ``is_nan`` is set); None when the table holds anything MLflow does not
    write (a NULL or non-text key or run id, a non-integer step, timestamp or is_nan, a text
    value, a collation), so that the general path reads it as before."""
    schema = con.execute("select sql from sqlite_master where type = 'table' "
                         "and name = 'metrics'").fetchone()
    if schema is None or "collate" in str(schema[0]).lower():
        return None
    numbered = con.execute(_PAIRS).fetchall()
    if not all(isinstance(r, str) and isinstance(k, str) for r, k, _ in numbered):
        return None
    pairs: list[tuple[str, str]] = [("", "")] * len(numbered)
    for rid, key, i in numbered:
        pairs[i] = (rid, key)
    lo, hi = con.execute("select min(rowid), max(rowid) from metrics").fetchone()
    if lo is None:
        lo = hi = 0
    elif (hi - lo) // _ROWIDS > 256:
        return None  # sparse rowids: too many scans
    cols: dict[str, list[np.ndarray]] = {"pair": [], "step": [], "timestamp": []}
    count = 0
    for start in range(lo, hi + 1, _ROWIDS):
        *texts, n, odd = con.execute(_INT_COLUMNS, (start, start + _ROWIDS)).fetchone()
        if odd:
            return None
        for name, text in zip(cols, texts):
            arr = (np.fromstring(text, sep=",", dtype=np.int64) if text  # noqa: NPY201
                   else np.zeros(0, dtype=np.int64))
            if arr.size != n:
                return None
            cols[name].append(arr)
        count += n
    value = np.array(con.execute(_VALUES).fetchall(), dtype=np.float64).reshape(-1)
    if value.size != count:
        return None
    out: dict[str, Any] = {k: np.concatenate(v) if v else np.zeros(0, dtype=np.int64)
                           for k, v in cols.items()}
    out["value"] = value
    out["pairs"] = pairs
    return out


def _add_columns(points: Points, cols: dict[str, Any], run_of: dict[str, str]) -> None:
    """Add the metric columns read by :func:`_metric_columns` (live runs only), one chunk per
    (run, key) in order of first appearance, as :func:`_add_frame` does."""
    pairs: list[tuple[str, str]] = cols["pairs"]
    live_pair = np.array([rid in run_of for rid, _ in pairs], dtype=bool)
    rows = np.flatnonzero(live_pair[cols["pair"]]) if pairs else np.zeros(0, dtype=np.int64)
    value = cols["value"][rows]
    value[value == _DBL_MAX] = np.inf
    value[value == -_DBL_MAX] = -np.inf
    step = cols["step"][rows]
    wall = cols["timestamp"][rows].astype(np.float64) / 1000.0
    codes, uniques = pd.factorize(cols["pair"][rows])
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(uniques) + 1))
    for i, pair in enumerate(uniques.tolist()):
        rid, key = pairs[pair]
        sel = order[bounds[i]:bounds[i + 1]]
        points.add(run_of[rid], key, step[sel], value[sel], wall[sel])


def _add_frame(points: Points, metrics: pd.DataFrame, run_of: dict[str, str]) -> None:
    """Add the metrics read with pandas (any column types), live runs only."""
    metrics = metrics[metrics["run_uuid"].isin(run_of)]
    value = pd.to_numeric(metrics["value"]).to_numpy(dtype=np.float64).copy()
    value[value == _DBL_MAX] = np.inf
    value[value == -_DBL_MAX] = -np.inf
    is_nan = pd.to_numeric(metrics["is_nan"], errors="coerce").fillna(0).to_numpy() != 0
    value[is_nan] = np.nan
    step = metrics["step"].to_numpy()
    wall = pd.to_numeric(metrics["timestamp"], errors="coerce").to_numpy(dtype=np.float64) / 1000.0
    codes, keys = pd.factorize(pd.MultiIndex.from_arrays([metrics["run_uuid"],
                                                          metrics["key"].astype(str)]))
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(keys) + 1))
    for i, (rid, key) in enumerate(keys):
        sel = order[bounds[i]:bounds[i + 1]]
        points.add(run_of[rid], key, step[sel], value[sel], wall[sel])


FILE_STORE_READER = Reader(
    name="mlflow",
    description="MLflow file store (mlruns/: metrics, params, run names), read as plain text",
    read=read_file_store, detect=_detect_file_store, version="1", priority=25,
)
SQLITE_READER = Reader(
    name="mlflow-sqlite",
    description="MLflow SQLite store (mlflow.db), read with the standard library",
    read=read_sqlite, detect=_detect_sqlite, version="1", priority=25,
)
