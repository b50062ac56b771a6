"""Plain tabular files (Parquet, CSV, TSV, JSONL/JSON): finding them, reading them, melting them.

Shared by the readers of wide tables (generic tables, W&B history exports). A wide table has a
step column and one column per metric; a NaN cell means "not logged at this step", so wide
tables are melted without their NaN cells (sparse rows stay sparse).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq
from grokaudit.errors import ErrorCode, LogFormatError
from grokaudit.schema import ACCURACY_COLUMNS, KNOWN_SERIES, is_known_metric
from grokaudit.text import safe

from .points import Points, as_steps

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
        raise LogFormatError(f"unknown table file type {safe(path.suffix)!r}; expected one of "
                             f"{', '.join(sorted(TABLE_SUFFIXES))}", path=str(path),
                             code=ErrorCode.UNKNOWN_FILE_TYPE)
    if path.stat().st_size == 0:
        raise LogFormatError("file is empty; there is nothing to read", path=str(path),
                             code=ErrorCode.FILE_EMPTY)
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
        # the parser's message may quote the offending line of the log: escape it, cut it short
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        msg = safe(msg if len(msg) <= 200 else msg[:200] + "…")
        raise LogFormatError(f"cannot read as {kind}: {msg}; fix that line or the file type",
                             path=str(path), code=ErrorCode.FILE_UNREADABLE) from None


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
    """Column names of a CSV/TSV file from its first line (cheap, for detection).

    Parsed as CSV, so that a quoted name holding the delimiter stays one name (a W&B chart
    export quotes every field: ``"Step","lr=1e-3,wd=0.1 - test/acc"``)."""
    with path.open("r", encoding="utf-8-sig", errors="replace") as fh:
        first = fh.readline(1 << 20)
    delim = "\t" if path.suffix.lower() == ".tsv" else ","
    try:
        cells = next(csv.reader([first.rstrip("\r\n")], delimiter=delim), [])
    except csv.Error:
        cells = first.rstrip("\r\n").split(delim)
    return [c.strip().strip('"') for c in cells]


def find_step_column(names: list[str]) -> str | None:
    return next((c for c in STEP_COLUMNS if c in names), None)


def _step_column(sc: pa.ChunkedArray, name: str, path: Path) -> np.ndarray:
    """The step column as int64: integer types read as integers (a uint64 above the int64
    range is refused, never wrapped), floats only when every value is an integer."""
    what = f"column {safe(name)!r}"
    if sc.null_count:
        raise LogFormatError(f"{what} has {sc.null_count} missing value(s); every row needs a "
                             "step", path=str(path), column=name, code=ErrorCode.MISSING_VALUES)
    if pa.types.is_integer(sc.type):
        raw = sc.to_numpy() if sc.num_chunks else np.zeros(0, dtype=np.int64)
        return as_steps(raw, what=what, path=str(path), column=name)
    if pa.types.is_floating(sc.type) or pa.types.is_decimal(sc.type):
        return as_steps(_floats(sc), what=what, path=str(path), column=name)
    raise LogFormatError(f"{what} has type {sc.type}; it must hold integer steps",
                         path=str(path), column=name, code=ErrorCode.BAD_COLUMN_TYPE)


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
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise LogFormatError(f"column {safe(twice[0])!r} appears more than once; rename one of "
                             "them", path=str(path), column=twice[0],
                             code=ErrorCode.DUPLICATE_COLUMN)
    step_col = find_step_column(names)
    if step_col is None:
        raise LogFormatError(f"no step column (one of {', '.join(STEP_COLUMNS)}); rename the "
                             "step column to 'step' in the file", path=str(path), column="step",
                             code=ErrorCode.MISSING_COLUMN)
    if step_col == "epoch":
        points.extra["step_unit"] = "epoch"
    step = _step_column(table.column(step_col), step_col, path)
    wall_col = next((c for c in WALL_COLUMNS if c in names and _numeric(table.column(c).type)),
                    None)
    wall = _floats(table.column(wall_col)) if wall_col else None

    if run_column is not None:
        if run_column not in names:
            raise LogFormatError(f"no column {safe(run_column)!r} to take run ids from; use "
                                 "--run-from path or name the column", path=str(path),
                                 column=run_column, code=ErrorCode.MISSING_COLUMN)
        rcol = table.column(run_column)
        if rcol.null_count:
            raise LogFormatError(f"column {safe(run_column)!r} has {rcol.null_count} missing run "
                                 "ids; every row needs one (or use --run-from path)",
                                 path=str(path), column=run_column,
                                 code=ErrorCode.MISSING_VALUES)
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
    non_scalar: list[str] = []
    for name in names:
        if name in skip or name.startswith("__index_level_"):
            continue
        col = table.column(name)
        boolean = pa.types.is_boolean(col.type)
        if _numeric(col.type) or boolean:  # booleans are read as 0/1 (as `check` reads them)
            a = _floats(col)
            if numeric_conditions and _is_condition(name, a, groups):
                for r, g in zip(run_names, groups):
                    v = a[g[0]]
                    points.add_condition(r, name, bool(v) if boolean else
                                         int(v) if v.is_integer() and
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
        elif _nested(col):
            non_scalar.append(name)
        else:
            # text: a condition when its logged (non-null) value is constant within every run
            vals = np.asarray(col.to_numpy(zero_copy_only=False), dtype=object)
            varies = next((r for r, g in zip(run_names, groups)
                           if len({_key(x) for x in vals[g]} - {None}) > 1), None)
            if varies is not None and _json_cells(col):
                non_scalar.append(name)  # serialized media/tables (W&B CSV exports)
                continue
            for r, g in zip(run_names, groups):
                seen = {_key(x) for x in vals[g]} - {None}
                if len(seen) > 1:
                    two = sorted(map(str, seen))[:2]
                    raise LogFormatError(
                        f"text column {safe(name)!r} changes within run {safe(r)!r} "
                        f"({safe(two[0])[:40]!r}, {safe(two[1])[:40]!r}, …): it is neither a "
                        "metric (numbers) nor a condition (constant in a run), and grokaudit "
                        "drops nothing silently; remove the column from the file, or name the "
                        f"runs by it with --run-from {safe(name)}", path=str(path),
                        column=name, code=ErrorCode.NOT_CONSTANT_IN_RUN)
            for r, g in zip(run_names, groups):
                logged = [x for x in vals[g] if _key(x) is not None]
                points.add_condition(r, name, logged[0] if logged else None)
    if non_scalar:
        shown = ", ".join(repr(safe(n)) for n in non_scalar[:5])
        points.warnings.append(f"{safe(path.name)}: {len(non_scalar)} column(s) of non-scalar "
                               f"values (objects or lists: media, tables, histograms) not read: "
                               f"{shown}{', …' if len(non_scalar) > 5 else ''}")
    # a row whose every value is NaN was still logged: keep it (as a NaN test accuracy)
    if metric_names and not logged_any.all():
        keep_in = "test_acc" if "test_acc" in metric_names else metric_names[0]
        for r, g in zip(run_names, groups):
            empty = g[~logged_any[g]]
            if empty.size:
                points.add(r, keep_in, step[empty],
                           np.full(empty.size, np.nan), None if wall is None else wall[empty])


def _nested(col: pa.ChunkedArray) -> bool:
    """True for a column of objects or lists (JSON objects read as structs: W&B media,
    tables, histograms): values that have no place in a table of scalars."""
    t = col.type
    return bool(pa.types.is_struct(t) or pa.types.is_list(t) or pa.types.is_large_list(t)
                or pa.types.is_map(t) or pa.types.is_fixed_size_list(t))


def _json_cells(col: pa.ChunkedArray) -> bool:
    """True for a text column whose every cell is a serialized JSON object or list (W&B media
    and tables in a CSV export)."""
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        return False
    cells = col.drop_null()
    if len(cells) == 0:
        return False
    shaped = pc.match_substring_regex(cells, r"(?s)^\s*(\{.*\}|\[.*\])\s*$")
    if not pc.all(shaped).as_py():
        return False
    return all(_is_json_container(x) for x in cells.slice(0, 20).to_pylist())


def _is_json_container(text: str) -> bool:
    try:
        return isinstance(json.loads(text), (dict, list))
    except ValueError:
        return False


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
