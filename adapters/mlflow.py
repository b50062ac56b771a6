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
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from grokaudit.errors import LogFormatError

from .merge import ReadOptions
from .points import Points
from .registry import Reader

SQLITE_MAGIC = b"SQLite format 3\x00"


def _scalar(raw: str) -> Any:
    for conv in (int, float):
        try:
            return conv(raw)
        except ValueError:
            pass
    return raw


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


def _metric_file(f: Path, points: Points) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(step, value, wall seconds) of one metric file; a cut last line is reported."""
    data = f.read_bytes()
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    complete = text.endswith("\n") or not text
    if not complete:
        tail = lines.pop()
        offset = len(data) - len(tail.encode())
        if len(tail.split()) >= 3:
            lines.append(tail)  # a full line that only lacks its newline
        else:
            points.finding("SOURCE_TRUNCATED", "metric file ends inside a line (truncated "
                           "write); the partial line was not read", file=str(f),
                           offset=offset, count=len(data) - offset)
    ts, vals, steps = [], [], []
    pos = 0
    for line in lines:
        parts = line.split()
        if not parts:
            pos += len(line) + 1
            continue
        if len(parts) not in (3, 5):
            raise LogFormatError(f"line at byte {pos} has {len(parts)} fields; MLflow metric "
                                 "lines are 'timestamp value step'", path=str(f))
        ts.append(parts[0])
        vals.append(parts[1])
        steps.append(parts[2])
        pos += len(line) + 1
    try:
        return (np.array(steps, dtype=np.int64), np.array(vals, dtype=np.float64),
                np.array(ts, dtype=np.float64) / 1000.0)
    except ValueError as exc:
        raise LogFormatError(f"unreadable metric line ({exc})", path=str(f)) from None


def read_file_store(path: Path, options: ReadOptions) -> Points:
    """Read every run of an MLflow file store (or one experiment, or one run folder)."""
    dirs = run_dirs(path)
    if not dirs:
        raise LogFormatError("no MLflow run folders (meta.yaml + metrics/) here", path=str(path))
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
        names[d.name] = tag.read_text(encoding="utf-8").strip() if tag.is_file() else \
            meta.get("run_name", "")
    run_of = _name_runs([d.name for d in live], names, points)
    for d in live:
        run = run_of[d.name]
        mdir = d / "metrics"
        for f in sorted(q for q in mdir.rglob("*") if q.is_file()):
            points.files.append(str(f))
            step, val, wall = _metric_file(f, points)
            points.add(run, f.relative_to(mdir).as_posix(), step, val, wall)
        pdir = d / "params"
        if pdir.is_dir():
            for f in sorted(q for q in pdir.rglob("*") if q.is_file()):
                points.add_condition(run, f.relative_to(pdir).as_posix(),
                                     _scalar(f.read_text(encoding="utf-8").strip()))
        points.origins[run] = f"{d.parent.name}/{d.name}"
    if deleted:
        points.warnings.append(f"{deleted} deleted run(s) skipped")
    if not points.files:
        raise LogFormatError("the MLflow runs here logged no metrics", path=str(path))
    return points


# ------------------------------------------------------------------------------------------
# SQLite store
# ------------------------------------------------------------------------------------------

def _detect_sqlite(path: Path) -> bool:
    if not path.is_file():
        return False
    with path.open("rb") as fh:
        if fh.read(16) != SQLITE_MAGIC:
            return False
    try:
        with _connect(path) as con:
            names = {r[0] for r in con.execute("select name from sqlite_master where type='table'")}
    except sqlite3.Error:
        return False
    return {"metrics", "runs", "params"} <= names


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)


def read_sqlite(path: Path, options: ReadOptions) -> Points:
    """Read every live run of an MLflow SQLite store."""
    points = Points(files=[str(path)])
    try:
        with _connect(path) as con:
            runs = con.execute("select run_uuid, name, lifecycle_stage from runs "
                               "order by start_time, run_uuid").fetchall()
            tags = dict(con.execute("select run_uuid, value from tags "
                                    "where key = 'mlflow.runName'").fetchall())
            params = con.execute("select run_uuid, key, value from params").fetchall()
            metrics = pd.read_sql_query(
                "select run_uuid, key, step, value, timestamp, is_nan from metrics "
                "order by rowid", con)
    except (sqlite3.Error, pd.errors.DatabaseError) as exc:
        raise LogFormatError(f"cannot read the MLflow SQLite store ({exc}); the file is "
                             "truncated, corrupt, or not an MLflow database", path=str(path)) from None
    live = [r[0] for r in runs if r[2] != "deleted"]
    if len(live) < len(runs):
        points.warnings.append(f"{len(runs) - len(live)} deleted run(s) skipped")
    names = {rid: tags.get(rid) or name or rid for rid, name, _ in runs}
    run_of = _name_runs(live, names, points)
    metrics = metrics[metrics["run_uuid"].isin(run_of)]
    value = metrics["value"].to_numpy(dtype=np.float64).copy()
    value[metrics["is_nan"].to_numpy(dtype=bool)] = np.nan
    step = metrics["step"].to_numpy(dtype=np.int64)
    wall = metrics["timestamp"].to_numpy(dtype=np.float64) / 1000.0
    codes, keys = pd.factorize(pd.MultiIndex.from_arrays([metrics["run_uuid"], metrics["key"]]))
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(keys) + 1))
    for i, (rid, key) in enumerate(keys):
        sel = order[bounds[i]:bounds[i + 1]]
        points.add(run_of[rid], key, step[sel], value[sel], wall[sel])
    for rid, key, val in params:
        if rid in run_of:
            points.add_condition(run_of[rid], key, _scalar(val))
    for rid in live:
        points.origins[run_of[rid]] = rid
    return points


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
