"""Plain tabular files (Parquet, CSV, TSV, JSONL/JSON): finding them, reading them, melting them.

Shared by the readers of wide tables (generic tables, W&B history exports). A wide table has a
step column and one column per metric; a NaN cell means "not logged at this step", so wide
tables are melted without their NaN cells (sparse rows stay sparse).
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from grokaudit.errors import ErrorCode, LogFormatError
from grokaudit.roles import (
    STEP_NAMES,
    accuracy_rank,
    is_config_parent,
    is_epoch_name,
    is_outcome_name,
)
from grokaudit.schema import ACCURACY_COLUMNS, KNOWN_SERIES, is_known_metric
from grokaudit.text import safe

from .points import Points, as_steps
from .records import TABLE_SUFFIXES, Loaded, flatten, read_arrow_file

#: Step columns, in order of preference; ``epoch`` only when no step column exists.
STEP_COLUMNS = STEP_NAMES
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
    """Read one tabular file as Arrow (nested objects flattened to dotted names); raises
    :class:`LogFormatError` naming the file. :func:`load` also sets aside the records without
    a step and keeps the file's other contents."""
    return flatten(read_arrow_file(path))


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


def _no_step(table: pa.Table, path: Path) -> LogFormatError:
    """No step column: the error names the columns that could be one (non-negative integers
    that never decrease) and the flag that makes one the step."""
    likely = []
    for name in table.column_names:
        col = table.column(name)
        if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)) \
                or col.null_count or table.num_rows < 2:
            continue
        a = _floats(col)
        if np.all(a >= 0) and np.all(a == np.round(a)) and np.all(np.diff(a) >= 0) \
                and np.any(np.diff(a) > 0):
            likely.append(name)
    shown = ", ".join(repr(safe(n)) for n in table.column_names[:10])
    more = ", …" if table.num_columns > 10 else ""
    hint = (f"; {safe(likely[0])!r} looks like one: --map {safe(likely[0])}=step" if likely
            else "; name it with --map COLUMN=step")
    return LogFormatError(
        f"no step column (looked for {', '.join(map(repr, STEP_COLUMNS[:8]))}, …, 'epoch'); columns "
        f"present: {shown}{more}{hint}", path=str(path), column="step",
        code=ErrorCode.MISSING_COLUMN)


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


def melt_wide(points: Points, loaded: Loaded | pa.Table, *, path: Path, origin: str,
              run: str | None, run_column: str | None, numeric_conditions: bool = True,
              strict_duplicates: bool = False) -> None:
    """Add the points of one wide table (a :class:`~.records.Loaded` file) to ``points``.

    The run id is ``run`` (one run per file) or the values of ``run_column``. Numeric columns
    that are constant within every run (and not accuracies or known series) and non-numeric
    columns become conditions (numeric ones only when ``numeric_conditions``); other numeric
    columns become metrics, without their NaN cells. The file's run values (config records,
    top-level scalars) become conditions of each of its runs; its records without a step are
    counted as set aside. A (step, value) a file repeats for one metric (train and validation
    rows of one step both carrying the epoch) is read once.
    """
    if isinstance(loaded, pa.Table):
        loaded = Loaded(table=loaded, step=find_step_column(list(loaded.column_names)))
    table = loaded.table
    names = list(table.column_names)
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise LogFormatError(f"column {safe(twice[0])!r} appears more than once; rename one of "
                             "them", path=str(path), column=twice[0],
                             code=ErrorCode.DUPLICATE_COLUMN)
    step_col = loaded.step
    if step_col is None:
        raise _no_step(table, path)
    if is_epoch_name(step_col):
        points.extra["step_unit"] = "epoch"
    known = points.extra.get("step_column")
    points.extra["step_column"] = (step_col if known in (None, step_col)
                                   else ", ".join(sorted({*str(known).split(", "), step_col})))
    step = _step_column(table.column(step_col), step_col, path)
    if loaded.aside:
        points.set_aside["record_without_step"] = (
            points.set_aside.get("record_without_step", 0) + loaded.aside)
        shown = ", ".join(loaded.aside_where[:4]) + (", …" if len(loaded.aside_where) > 4
                                                     else "")
        held = sorted(loaded.run_values)
        what = (f"; their fields became run values: {', '.join(held[:6])}"
                f"{', …' if len(held) > 6 else ''}" if held else "")
        note = (f"{safe(path.name)}: {loaded.aside} record(s) without a step set aside "
                f"({shown}){what}")
        points.warnings.append(note)
        points.shown.add(note)
    points.warnings.extend(loaded.notes)
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
        for k, v in {**loaded.run_values, **loaded.by_run.get(r, {})}.items():
            if k in names:
                continue  # a column of the same name wins (load noted it)
            points.add_condition(r, k, v)
    strays = sorted(set(loaded.by_run) - set(run_names))
    if strays:
        points.warnings.append(f"{safe(path.name)}: records without a step name run(s) with no "
                               f"step rows, not read: {', '.join(map(safe, strays[:3]))}"
                               f"{', …' if len(strays) > 3 else ''}")
    points.outcomes.update(k for k in loaded.outcomes if k not in names)

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
            kind = _per_run_value(name, a, groups)
            if kind is not None:  # a config logged at one step, a final summary record
                for r, g in zip(run_names, groups):
                    logged = a[g][~np.isnan(a[g])]
                    if logged.size:
                        points.add_condition(r, name, float(logged[0]))
                if kind == "outcome":
                    points.outcomes.add(name)
                continue
            if run_column is None and _RUN_ID.match(name) and np.unique(
                    a[~np.isnan(a)]).size > 1:
                raise LogFormatError(
                    f"the column {safe(name)!r} names runs and takes several values: this file "
                    f"holds several runs; read them with --run-from {safe(name)}",
                    path=str(path), column=name, code=ErrorCode.MISSING_COLUMN)
            logged_any |= ~np.isnan(a)
            metric_names.append(name)
            for r, g in zip(run_names, groups):
                v = a[g]
                ok = ~np.isnan(v)
                if ok.any():
                    sel = _once(step[g], v, ok)
                    if run_column is None:
                        _one_run_or_refuse(step[g][sel], name, path)
                    elif strict_duplicates:
                        _once_per_step_or_refuse(step[g][sel], name, r, path)
                    points.add(r, name, step[g][sel], v[sel],
                               None if wall is None else wall[g][sel])
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
                if len(seen) > 1 and _looks_numeric(name, seen):
                    two = sorted(map(str, seen))[:2]
                    raise LogFormatError(
                        f"column {safe(name)!r} holds text in some rows of run {safe(r)!r} "
                        f"({safe(two[0])[:40]!r}, {safe(two[1])[:40]!r}, …): a per-step value is "
                        "a number; fix the logger (or quote nothing)", path=str(path),
                        column=name, code=ErrorCode.BAD_COLUMN_TYPE)
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


def _once(step: np.ndarray, value: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """The rows of ``ok`` without the repeats of an identical (step, value) — the train and
    validation rows of one step that both carry the epoch, or the same point written twice —
    so that only a step logged with two different values counts as a resumed run."""
    idx = np.flatnonzero(ok)
    st = step[idx]
    if idx.size < 2 or bool(np.all(st[1:] > st[:-1])):
        return idx
    order = np.lexsort((value[idx], st))
    s_o, v_o = st[order], value[idx][order]
    repeat = np.zeros(idx.size, dtype=bool)
    repeat[order[1:]] = (s_o[1:] == s_o[:-1]) & (v_o[1:] == v_o[:-1])
    return idx[~repeat]


#: In a file read as one run, the share of a column's points that may repeat a step with
#: another value (a resumed run re-logs the steps since its checkpoint) before the file is
#: taken to hold several runs.
SEVERAL_RUNS_SHARE = 0.25


def _one_run_or_refuse(steps: np.ndarray, name: str, path: Path) -> None:
    """A file without a run column is one run; refuse one whose steps repeat with other values
    so often that it must hold several runs (a table that lost its run column): last writer
    wins would keep one run's values at each step and mix the runs."""
    if steps.size < 4 or bool(np.all(steps[1:] > steps[:-1])):
        return
    repeats = steps.size - np.unique(steps).size
    if repeats > SEVERAL_RUNS_SHARE * steps.size:
        raise LogFormatError(
            f"{repeats} of the {steps.size} points of {safe(name)!r} repeat a step with another "
            "value: this file seems to hold several runs but has no 'run' column; name the "
            "column that tells them apart with --run-from NAME (or --map NAME=run), or give "
            "one file per run", path=str(path), column="run", code=ErrorCode.MISSING_COLUMN)


def _once_per_step_or_refuse(steps: np.ndarray, name: str, run: str, path: Path) -> None:
    """A table with a run column holds each (run, step) once: a step it repeats with another
    value is refused, as the canonical table refuses it (a log without a run column is a run
    that may have been resumed: last writer wins there)."""
    if steps.size < 2 or bool(np.all(steps[1:] > steps[:-1])):
        return
    u, counts = np.unique(steps, return_counts=True)
    if (counts > 1).any():
        at = int(u[np.argmax(counts > 1)])
        raise LogFormatError(
            f"{int((counts > 1).sum())} (run, step) rows hold different values of {safe(name)!r} "
            f"(first: {safe(run)}@{at}); a table with a run column logs each step of a run once: "
            "fix the file", path=str(path), column=name, code=ErrorCode.DUPLICATE_ROWS)


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


#: Columns that name runs: never a per-step value.
_RUN_ID = re.compile(r"^(run|trial|experiment|job)[_ ]?(id|idx|index|name|no|num|number)?$",
                     re.IGNORECASE)


def _per_run_value(name: str, a: np.ndarray, groups: list[np.ndarray]) -> str | None:
    """``"condition"`` for a column of a config object (``config.wd``) logged at a few rows
    with one value per run; ``"outcome"`` for a result logged once per run (the final record
    of a Hugging Face ``log_history``: ``train_runtime``); None for a per-step series."""
    counts = [int(np.count_nonzero(~np.isnan(a[g]))) for g in groups]
    if not any(counts):
        return None
    one_value = all(np.unique(a[g][~np.isnan(a[g])]).size <= 1 for g in groups)
    parents = name.split(".")[:-1]
    if one_value and any(is_config_parent(p) for p in parents):
        return "condition"
    if max(counts) == 1 and is_outcome_name(name, in_log=True) and not (
            accuracy_rank(name, "test_acc") is not None
            or accuracy_rank(name, "train_acc") is not None):
        return "outcome"
    return None


def _looks_numeric(name: str, seen: set[Any]) -> bool:
    """A text column that should hold numbers: an accuracy's name, or mostly numbers as text."""
    if accuracy_rank(name, "test_acc") is not None or accuracy_rank(name, "train_acc") \
            is not None or is_known_metric(name):
        return True
    numeric = 0
    for x in seen:
        try:
            float(str(x))
            numeric += 1
        except ValueError:
            pass
    return numeric * 2 > len(seen)


def _is_condition(name: str, a: np.ndarray, groups: list[np.ndarray]) -> bool:
    if name in ACCURACY_COLUMNS or name in KNOWN_SERIES or is_known_metric(name):
        return False
    low = name.lower()
    if "acc" in low or "loss" in low or "/" in name:  # accuracies and namespaced metric keys
        return False
    if np.isnan(a).any():
        return False
    return all(g.size > 1 and np.all(a[g] == a[g[0]]) for g in groups)
