"""Plain tabular files (Parquet, CSV, TSV, JSONL/JSON): finding them, reading them, melting them.

Shared by the readers of wide tables (generic tables, W&B history exports). A wide table has a
step column and one column per metric; a NaN cell means "not logged at this step", so wide
tables are melted without their NaN cells (sparse rows stay sparse).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq
from grokaudit.errors import LogFormatError
from grokaudit.schema import ACCURACY_COLUMNS, KNOWN_SERIES, is_known_metric

from .points import Points

TABLE_SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "tsv",
                  ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json"}
#: Step columns, in order of preference; ``epoch`` only when no step column exists.
STEP_COLUMNS = ("step", "_step", "global_step", "Step", "epoch")
WALL_COLUMNS = ("_timestamp", "wall_time", "timestamp")
#: Bookkeeping columns that are neither metrics nor conditions.
IGNORED_COLUMNS = frozenset({"_runtime", "_timestamp", "_wandb", "wall_time", "timestamp",
                             "Unnamed: 0"})


def table_files(path: Path) -> list[Path]:
    """``path`` itself, or the tabular files under the directory ``path`` (sorted, recursive)."""
    if path.is_file():
        return [path]
    return sorted(q for q in path.rglob("*")
                  if q.is_file() and q.suffix.lower() in TABLE_SUFFIXES
                  and not any(part.startswith(".") for part in q.relative_to(path).parts))


def read_file(path: Path) -> pa.Table:
    """Read one tabular file; raises :class:`LogFormatError` naming the file."""
    kind = TABLE_SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise LogFormatError(f"unknown table file type {path.suffix!r}; expected one of "
                             f"{', '.join(sorted(TABLE_SUFFIXES))}", path=str(path))
    if path.stat().st_size == 0:
        raise LogFormatError("file is empty; there is nothing to read", path=str(path))
    try:
        if kind == "parquet":
            return pq.read_table(path)
        if kind in ("csv", "tsv"):
            opts = pacsv.ParseOptions(delimiter="\t" if kind == "tsv" else ",")
            conv = pacsv.ConvertOptions(column_types={"run": pa.string()},
                                        null_values=["", "NaN", "nan", "null", "None"],
                                        strings_can_be_null=True)
            return pacsv.read_csv(path, parse_options=opts, convert_options=conv)
        if kind == "jsonl":
            return pajson.read_json(path)
        df = pd.read_json(path)
        return pa.Table.from_pandas(df, preserve_index=False)
    except (pa.ArrowInvalid, ValueError, OSError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise LogFormatError(f"cannot read as {kind}: {msg}", path=str(path)) from None


def check_tail(path: Path, points: Points) -> None:
    """Report a text table whose last line lacks its newline: it may have been cut short.

    Every CSV/JSONL writer in common use ends each row with a newline, so a missing one at the
    end of the file is the mark of an interrupted write (a last value ``0.25`` cut to ``0.2``
    would otherwise be read as a plausible number).
    """
    if TABLE_SUFFIXES.get(path.suffix.lower()) not in ("csv", "tsv", "jsonl"):
        return
    size = path.stat().st_size
    with path.open("rb") as fh:
        fh.seek(max(0, size - 65536))
        tail = fh.read()
    if tail and not tail.endswith(b"\n"):
        start = size - (len(tail) - tail.rfind(b"\n") - 1)
        points.finding("SOURCE_TRUNCATED", "the last line has no newline: the file may have "
                       "been cut short while it was written; check that line", file=str(path),
                       offset=start, count=size - start)


def header_of(path: Path) -> list[str]:
    """Column names of a CSV/TSV file from its first line (cheap, for detection)."""
    with path.open("r", encoding="utf-8", errors="replace") as fh:
        first = fh.readline()
    delim = "\t" if path.suffix.lower() == ".tsv" else ","
    return [c.strip().strip('"') for c in first.rstrip("\r\n").split(delim)]


def find_step_column(names: list[str]) -> str | None:
    return next((c for c in STEP_COLUMNS if c in names), None)


def _numeric(t: pa.DataType) -> bool:
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_null(t)
                or pa.types.is_decimal(t))


def _floats(col: pa.ChunkedArray) -> np.ndarray:
    if pa.types.is_null(col.type):
        return np.full(len(col), np.nan)
    return np.asarray(col.cast(pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)


def melt_wide(points: Points, table: pa.Table, *, path: Path, origin: str,
              run: str | None, run_column: str | None, numeric_conditions: bool = True) -> None:
    """Add the points of one wide table to ``points``.

    The run id is ``run`` (one run per file) or the values of ``run_column``. Numeric columns
    that are constant within every run (and not accuracies or known series) and non-numeric
    columns become conditions (numeric ones only when ``numeric_conditions``); other numeric
    columns become metrics, without their NaN cells.
    """
    names = list(table.column_names)
    step_col = find_step_column(names)
    if step_col is None:
        raise LogFormatError(f"no step column (one of {', '.join(STEP_COLUMNS)}); rename the "
                             "step column with --map NAME=step", path=str(path), column="step")
    if step_col == "epoch":
        points.extra["step_unit"] = "epoch"
    sc = table.column(step_col)
    if not _numeric(sc.type):
        raise LogFormatError(f"column {step_col!r} has type {sc.type}; it must hold integer "
                             "steps", path=str(path), column=step_col)
    sf = _floats(sc)
    if np.isnan(sf).any():
        raise LogFormatError(f"column {step_col!r} has {int(np.isnan(sf).sum())} missing "
                             "value(s); every row needs a step", path=str(path), column=step_col)
    if np.any(sf != np.round(sf)):
        raise LogFormatError(f"column {step_col!r} holds non-integer values; steps are integer "
                             "optimizer steps", path=str(path), column=step_col)
    step = sf.astype(np.int64)
    wall_col = next((c for c in WALL_COLUMNS if c in names and _numeric(table.column(c).type)),
                    None)
    wall = _floats(table.column(wall_col)) if wall_col else None

    if run_column is not None:
        if run_column not in names:
            raise LogFormatError(f"no column {run_column!r} to take run ids from; use "
                                 "--run-from path or name the column", path=str(path),
                                 column=run_column)
        rcol = table.column(run_column)
        if rcol.null_count:
            raise LogFormatError(f"column {run_column!r} has {rcol.null_count} missing run ids",
                                 path=str(path), column=run_column)
        codes, uniques = pd.factorize(pd.Series(rcol.to_numpy(zero_copy_only=False)).astype(str))
        run_names = [str(u) for u in uniques]
    else:
        codes = np.zeros(table.num_rows, dtype=np.int64)
        run_names = [str(run)]
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(run_names) + 1))
    groups = [order[bounds[i]:bounds[i + 1]] for i in range(len(run_names))]
    for r in run_names:
        points.origins.setdefault(r, origin)

    skip = {step_col, run_column, "run", wall_col} | IGNORED_COLUMNS
    logged_any = np.zeros(table.num_rows, dtype=bool)
    metric_names: list[str] = []
    for name in names:
        if name in skip or name.startswith("__index_level_"):
            continue
        col = table.column(name)
        if _numeric(col.type):
            a = _floats(col)
            if numeric_conditions and _is_condition(name, a, groups):
                for r, g in zip(run_names, groups):
                    v = a[g[0]]
                    points.add_condition(r, name, int(v) if v.is_integer() and
                                         pa.types.is_integer(col.type) else float(v))
                continue
            logged_any |= ~np.isnan(a)
            metric_names.append(name)
            for r, g in zip(run_names, groups):
                v = a[g]
                ok = ~np.isnan(v)
                if ok.any():
                    points.add(r, name, step[g][ok], v[ok],
                               None if wall is None else wall[g][ok])
        elif pa.types.is_boolean(col.type):
            points.warnings.append(f"{path.name}: boolean column {name!r} ignored")
        else:
            vals = np.asarray(col.to_numpy(zero_copy_only=False), dtype=object)
            constant = all(len({_key(x) for x in vals[g]}) == 1 for g in groups)
            if constant:
                for r, g in zip(run_names, groups):
                    points.add_condition(r, name, vals[g[0]])
            else:
                points.warnings.append(f"{path.name}: text column {name!r} varies within a run; "
                                       "ignored (it is neither a metric nor a condition)")
    # a row whose every value is NaN was still logged: keep it (as a NaN test accuracy)
    if metric_names and not logged_any.all():
        keep_in = "test_acc" if "test_acc" in metric_names else metric_names[0]
        for r, g in zip(run_names, groups):
            empty = g[~logged_any[g]]
            if empty.size:
                points.add(r, keep_in, step[empty],
                           np.full(empty.size, np.nan), None if wall is None else wall[empty])


def _key(x: Any) -> Any:
    return None if x is None or (isinstance(x, float) and np.isnan(x)) else x


def _is_condition(name: str, a: np.ndarray, groups: list[np.ndarray]) -> bool:
    if name in ACCURACY_COLUMNS or name in KNOWN_SERIES or is_known_metric(name):
        return False
    low = name.lower()
    if "acc" in low or "loss" in low or "/" in name:  # accuracies and namespaced metric keys
        return False
    if np.isnan(a).any():
        return False
    return all(g.size > 1 and np.all(a[g] == a[g[0]]) for g in groups)
