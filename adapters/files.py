"""Plain tabular files (Parquet, CSV, TSV, JSONL/JSON): finding them, reading them, melting them.

Shared by the readers of wide tables (generic tables, W&B history exports). A wide table has a
step column and one column per metric; a NaN cell means "not logged at this step", so wide
tables are melted without their NaN cells (sparse rows stay sparse).
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from grokaudit.errors import ErrorCode, LogFormatError
from grokaudit.results import format_number
from grokaudit.roles import (
    STEP_NAMES,
    accuracy_rank,
    is_config_parent,
    is_epoch_name,
    is_outcome_name,
    is_split_word,
)
from grokaudit.schema import (
    ACCURACY_COLUMNS,
    KNOWN_SERIES,
    is_known_metric,
    mostly_numbers,
    parses_as_number,
)
from grokaudit.text import safe

from .points import Points, as_steps
from .records import (
    TABLE_SUFFIXES,
    TEXT_TABLE_SUFFIXES,
    Loaded,
    delimited_text,
    flatten,
    read_arrow_file,
    row_naming_column,
)

#: Step columns, in order of preference; ``epoch`` only when no step column exists.
STEP_COLUMNS = STEP_NAMES
WALL_COLUMNS = ("_timestamp", "wall_time", "timestamp")
#: Bookkeeping columns that are neither metrics nor conditions.
IGNORED_COLUMNS = frozenset({"_runtime", "_timestamp", "_wandb", "wall_time", "timestamp",
                             "Unnamed: 0"})


def files_under(path: Path, suffixes: Collection[str]) -> list[Path]:
    """The files under the folder ``path`` whose suffix (lower-cased) is one of ``suffixes``,
    sorted, recursive; hidden files, and files in hidden folders, left out."""
    return sorted(q for q in path.rglob("*")
                  if q.is_file() and q.suffix.lower() in suffixes
                  and not any(part.startswith(".") for part in q.relative_to(path).parts))


def table_files(path: Path) -> list[Path]:
    """``path`` itself, or the tabular files under the directory ``path`` (sorted, recursive)."""
    if path.is_file():
        return [path]
    return files_under(path, TABLE_SUFFIXES)


def text_log_tables(path: Path) -> list[Path]:
    """The ``.log``, ``.txt`` and ``.dat`` files under the folder ``path`` that are tables with
    a header line (:func:`grokaudit.adapters.records.delimited_text`: Keras's ``training.log``),
    sorted, hidden folders skipped: the tables of a folder that holds no file with a table's
    suffix (a folder of one Keras run per subfolder)."""
    if not path.is_dir():
        return []
    return [q for q in files_under(path, TEXT_TABLE_SUFFIXES) if delimited_text(q) is not None]


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
    kind = TABLE_SUFFIXES.get(path.suffix.lower()) or delimited_text(path)
    if kind not in ("csv", "tsv", "jsonl"):  # a Keras training.log too
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


def no_step(table: pa.Table, path: Path) -> LogFormatError:
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
    names_rows = row_naming_column(table) if table.num_rows >= 2 else None
    hint = (f"; {safe(likely[0])!r} looks like one: --map {safe(likely[0])}=step" if likely
            else f"; its column {safe(names_rows)!r} names every row: a table of one row "
                 "per run (a summary or a sweep's results), not one run's log points: give "
                 "the runs' own logs" if names_rows is not None
            else "; name it with --map COLUMN=step, or, if each row is one log point in order "
                 "(Keras's history.history saved as a table: one row per epoch), number the "
                 "rows with --step-from row")
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


def _refuse_two_step_units(table: pa.Table, step: np.ndarray, step_col: str,
                           run_names: list[str], groups: list[np.ndarray], path: Path) -> None:
    """``STEP_UNITS_MIXED``: one step column counting iterations in some rows and epochs in
    others. MMEngine's epoch-based loops write a training row's ``step`` as its iteration
    (beside ``epoch`` and ``iter``) and a validation row's as the epoch it ends, without an
    ``epoch`` key: validation at epoch 25 lands on step 25, among iterations, and t_grok
    would be read in epochs against clocks in iterations. Told from the rows without an
    epoch: at least two distinct steps, every one an integer within the epochs the other
    rows count (≤ their last epoch + 1), while those rows' steps run past twice that, and
    each one sits, in the file, between training rows of epochs at most and at least its step
    (the validation of epoch e comes after epoch e's training rows and before epoch e + 1's).
    A test loop stepped by batch index after training (Lightning's ``test_acc_step``: 0, 1,
    … after the last epoch) is no epoch: it is left to the readers' other rules."""
    epoch_col = next((n for n in table.column_names if n.lower() == "epoch" and n != step_col
                      and _numeric(table.column(n).type)), None)
    if epoch_col is None:
        return
    epoch = _floats(table.column(epoch_col))
    missing = np.isnan(epoch)
    if not missing.any() or missing.all():  # every row has an epoch, or none: one unit
        return
    for name, rows in zip(run_names, groups):
        e, st = epoch[rows], step[rows].astype(np.float64)
        has = ~np.isnan(e)
        if has.sum() < 2 or (~has).sum() < 2:
            continue
        last_epoch = float(np.max(e[has]))
        other = st[~has]
        if not (np.unique(other).size >= 2 and np.all(other >= 0)
                and np.all(other <= last_epoch + 1)
                and float(np.max(st[has])) > 2 * (last_epoch + 1)):
            continue
        # the epochs of the training rows before and after each such row, in file order
        before = pd.Series(e).ffill().to_numpy()[~has]
        after = pd.Series(e).bfill().to_numpy()[~has]
        with np.errstate(invalid="ignore"):
            placed = (before <= other) & ~(after < other)  # none after (NaN): placed
        if not placed.all():
            continue
        held = [n for n in table.column_names if n not in (step_col, epoch_col, "run")
                and table.column(n).take(pa.array(rows[~has])).null_count < int((~has).sum())]
        shown = ", ".join(repr(safe(n)) for n in held[:3]) + (", …" if len(held) > 3 else "")
        raise LogFormatError(
            f"column {safe(step_col)!r} counts two units in run {safe(name)!r}: the "
            f"{int((~has).sum())} rows without {safe(epoch_col)!r} (they hold {shown}) are "
            f"stepped {format_number(other.min())} … {format_number(other.max())}, within "
            f"the epochs the other rows count (to {format_number(last_epoch)}), while those "
            f"rows are stepped to {format_number(float(np.max(st[has])))}: epochs and "
            "iterations on one axis (MMEngine writes a validation row's step as its epoch); "
            "give those rows the iteration that ends their epoch (epoch × iterations per "
            f"epoch), or audit on epochs: step every row by its epoch and drop "
            f"{safe(step_col)!r}", path=str(path), column=step_col,
            code=ErrorCode.STEP_UNITS_MIXED)


def _refuse_unread_run_names(table: pa.Table, names: list[str], skip: set[Any],
                             path: Path) -> None:
    """``MISSING_COLUMN``: a column whose name says it names runs (``run_id``, ``trial``),
    numbers or text, takes several values in a file read as one run. Said before any other
    column is looked at: a status column that changes (``'verified'``, ``'not_applicable'``)
    was refused first, offering itself as ``--run-from`` (TransGrokking)."""
    for name in names:
        col = table.column(name)
        if name in skip or not _RUN_ID.match(name):
            continue
        if _numeric(col.type):
            a = _floats(col)
            several = np.unique(a[~np.isnan(a)]).size > 1
        elif (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)
              or pa.types.is_dictionary(col.type)):
            if pa.types.is_dictionary(col.type):  # a pandas category: its values, not codes
                col = col.cast(col.type.value_type)
            values = {v for v in pc.unique(col).to_pylist() if v is not None}
            # train/eval rows of one run: the split column's own refusal says so
            several = len(values) > 1 and not all(
                isinstance(v, str) and is_split_word(v) for v in values)
        else:
            continue
        if several:
            raise LogFormatError(
                f"the column {safe(name)!r} names runs and takes several values: this file "
                f"holds several runs; read them with --run-from {safe(name)}",
                path=str(path), column=name, code=ErrorCode.MISSING_COLUMN)


def _numeric(t: pa.DataType) -> bool:
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_null(t)
                or pa.types.is_decimal(t))


def _floats(col: pa.ChunkedArray) -> np.ndarray:
    """The column as float64 (nulls NaN). Integers beyond 2**53 (a 64-bit seed, a
    ``time.time_ns()`` clock) are rounded to the nearest float64, never refused here: a
    condition of them takes its exact values from the column (:func:`_exact_ints`)."""
    if pa.types.is_null(col.type):
        return np.full(len(col), np.nan)
    exact = not (pa.types.is_integer(col.type) or pa.types.is_decimal(col.type))
    return np.asarray(col.cast(pa.float64(), safe=exact).to_numpy(zero_copy_only=False),
                      dtype=np.float64)


def _exact_ints(col: pa.ChunkedArray) -> np.ndarray | None:
    """An integer column without nulls as int64 or uint64 (exact beyond 2**53); None for any
    other column."""
    if not pa.types.is_integer(col.type) or col.null_count:
        return None
    return np.asarray(col.to_numpy())


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
    _refuse_repeated_columns(names, path)
    step_col = loaded.step
    if step_col is None:
        raise no_step(table, path)
    _note_step_column(points, step_col)
    step = _step_column(table.column(step_col), step_col, path)
    _note_set_aside(points, loaded, path)
    points.warnings.extend(loaded.notes)
    wall_col = next((c for c in WALL_COLUMNS if c in names and _numeric(table.column(c).type)),
                    None)
    run_names, groups = _run_groups(table, run, run_column, path)
    _refuse_two_step_units(table, step, step_col, run_names, groups, path)
    m = _Melt(points=points, path=path, run_names=run_names, groups=groups,
              step=step,
              wall=_floats(table.column(wall_col)) if wall_col else None,
              run_column=run_column, numeric_conditions=numeric_conditions,
              strict_duplicates=strict_duplicates, labels=loaded.labels)
    _add_run_values(m, loaded, names, origin)
    skip = {step_col, run_column, "run", wall_col} | IGNORED_COLUMNS
    if run_column is None:  # a column naming runs is named first, before any other refusal
        _refuse_unread_run_names(table, names, skip, path)
    logged_any = np.zeros(table.num_rows, dtype=bool)
    metric_names: list[str] = []
    non_scalar: list[str] = []
    for name in names:
        if name in skip or name.startswith("__index_level_"):
            continue
        col = table.column(name)
        if table.num_rows and col.null_count == len(col) or (
                _numeric(col.type) and not np.any(~np.isnan(_floats(col)))):
            # every cell empty: nothing to read, but never dropped without a word (a
            # --metric naming it was "not found")
            empty = points.extra.setdefault("empty_columns", [])
            if name not in empty:
                empty.append(name)
                points.warnings.append(f"column {safe(name)!r} holds no value (every cell is "
                                       f"empty in {safe(path.name)}): nothing of it is read")
            continue
        if _numeric(col.type) or pa.types.is_boolean(col.type):  # booleans read as 0/1
            a = _melt_numeric(m, name, col)
            if a is not None:
                logged_any |= ~np.isnan(a)
                metric_names.append(name)
        elif _nested(col) or not _melt_text(m, name, col):
            non_scalar.append(name)
    _note_non_scalar(points, path, non_scalar)
    _keep_empty_rows(m, metric_names, logged_any)


@dataclass(frozen=True)
class _Melt:
    """One wide table being melted: where its points go, its runs (names and the row indices
    of each), its steps and wall times per row, and how its columns are read."""

    points: Points
    path: Path
    run_names: list[str]
    groups: list[np.ndarray]
    step: np.ndarray
    wall: np.ndarray | None
    run_column: str | None
    numeric_conditions: bool
    strict_duplicates: bool
    labels: dict[str, str] = field(default_factory=dict)  #: Loaded.labels


def _refuse_repeated_columns(names: list[str], path: Path) -> None:
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise LogFormatError(f"column {safe(twice[0])!r} appears more than once; rename one of "
                             "them", path=str(path), column=twice[0],
                             code=ErrorCode.DUPLICATE_COLUMN)


def _note_step_column(points: Points, step_col: str) -> None:
    """The step's unit (epochs when the column says so) and the step column(s) read."""
    if is_epoch_name(step_col):
        points.extra["step_unit"] = "epoch"
    known = points.extra.get("step_column")
    points.extra["step_column"] = (step_col if known in (None, step_col)
                                   else ", ".join(sorted({*str(known).split(", "), step_col})))


def _note_set_aside(points: Points, loaded: Loaded, path: Path) -> None:
    """The file's records without a step: counted as set aside, and said where they were."""
    if not loaded.aside:
        return
    points.set_aside["record_without_step"] = (
        points.set_aside.get("record_without_step", 0) + loaded.aside)
    shown = ", ".join(loaded.aside_where[:4]) + (", …" if len(loaded.aside_where) > 4 else "")
    held = sorted(loaded.run_values)
    what = (f"; their fields became run values: {', '.join(held[:6])}"
            f"{', …' if len(held) > 6 else ''}" if held else "")
    note = (f"{safe(path.name)}: {loaded.aside} record(s) without a step set aside "
            f"({shown}){what}")
    points.warnings.append(note)
    points.shown.add(note)


def _run_groups(table: pa.Table, run: str | None, run_column: str | None,
                path: Path) -> tuple[list[str], list[np.ndarray]]:
    """The run ids (``run``, or the values of ``run_column`` in order of appearance) and the
    row indices of each run, in row order."""
    if run_column is not None:
        if run_column not in table.column_names:
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
    return run_names, [order[bounds[i]:bounds[i + 1]] for i in range(len(run_names))]


def _add_run_values(m: _Melt, loaded: Loaded, names: list[str], origin: str) -> None:
    """Each run's origin and the file's run values (config records, top-level scalars) as its
    conditions; run values naming runs without step rows are said to be unread."""
    points = m.points
    for r in m.run_names:
        points.origins.setdefault(r, origin)
        for k, v in {**loaded.run_values, **loaded.by_run.get(r, {})}.items():
            if k in names:
                continue  # a column of the same name wins (load noted it)
            points.add_condition(r, k, v)
    strays = sorted(set(loaded.by_run) - set(m.run_names))
    if strays:
        points.warnings.append(f"{safe(m.path.name)}: records without a step name run(s) with "
                               f"no step rows, not read: {', '.join(map(safe, strays[:3]))}"
                               f"{', …' if len(strays) > 3 else ''}")
    points.outcomes.update(k for k in loaded.outcomes if k not in names)


def _melt_numeric(m: _Melt, name: str, col: pa.ChunkedArray) -> np.ndarray | None:
    """A numeric (or boolean) column as a condition, a per-run value or a metric; returns its
    values when it was read as a metric, else None."""
    a = _floats(col)
    ints = _exact_ints(col)  # integers compared and kept exactly (beyond 2**53 too)
    if m.numeric_conditions and _is_condition(name, a if ints is None else ints, m.groups):
        boolean = pa.types.is_boolean(col.type)
        for r, g in zip(m.run_names, m.groups):
            v = a[g[0]]
            m.points.constant_columns.add((r, name))
            if name in m.labels:  # "007": compared with the other files' spellings
                m.points.extra.setdefault("csv_labels", {}).setdefault(name, {})[r] = \
                    m.labels[name]
            m.points.add_condition(r, name, bool(v) if boolean else
                                   int(ints[g[0]]) if ints is not None else
                                   int(v) if v.is_integer() and
                                   pa.types.is_integer(col.type) else float(v))
        return None
    kind = _per_run_value(name, a, m.groups)
    if kind is not None:  # a config logged at one step, a final summary record
        for r, g in zip(m.run_names, m.groups):
            logged = a[g][~np.isnan(a[g])]
            if logged.size:
                m.points.add_condition(r, name, float(logged[0]))
        if kind == "outcome":
            m.points.outcomes.add(name)
        return None
    for r, g in zip(m.run_names, m.groups):
        v = a[g]
        ok = ~np.isnan(v)
        if ok.any():
            sel = _once(m.step[g], v, ok)
            if m.run_column is None:
                _one_run_or_refuse(m.step[g][sel], name, m.path)
            elif m.strict_duplicates:
                _once_per_step_or_refuse(m.step[g][sel], name, r, m.path)
            m.points.add(r, name, m.step[g][sel], v[sel],
                         None if m.wall is None else m.wall[g][sel])
    return a


def _melt_text(m: _Melt, name: str, col: pa.ChunkedArray) -> bool:
    """A text column as a condition (its logged value constant within every run); returns
    False for serialized media or tables (W&B CSV exports), which are not read."""
    vals = np.asarray(col.to_numpy(zero_copy_only=False), dtype=object)
    varies = next((r for r, g in zip(m.run_names, m.groups)
                   if len({_key(x) for x in vals[g]} - {None}) > 1), None)
    if varies is not None and _json_cells(col):
        return False
    if varies is not None:
        _refuse_text_among_numbers(m, name, vals)
    for r, g in zip(m.run_names, m.groups):
        seen = {_key(x) for x in vals[g]} - {None}
        if len(seen) > 1:  # refused: the run's logged rows counted for the message
            _refuse_varying_text(name, r, seen, m.path,
                                 rows=sum(_key(x) is not None for x in vals[g]),
                                 runs_named=m.run_column is not None)
    for r, g in zip(m.run_names, m.groups):
        logged = [x for x in vals[g] if _key(x) is not None]
        m.points.add_condition(r, name, logged[0] if logged else None)
    return True


def _refuse_text_among_numbers(m: _Melt, name: str, vals: np.ndarray) -> None:
    """A column that changes within a run and holds numbers (most of its values, or a metric's
    name): a per-step series with text in some cells (``"oops"`` among numbers) or written
    wholly as text. ``BAD_COLUMN_TYPE`` naming the first such cell of the file (its run and
    step), not the first run whose numbers change."""
    logged = {_key(x) for x in vals} - {None}
    if not _looks_numeric(name, logged):
        return
    run_of = np.empty(vals.shape[0], dtype=np.int64)
    run_of.fill(-1)
    for i, g in enumerate(m.groups):
        run_of[g] = i
    is_text = np.array([x is not None and _key(x) is not None and isinstance(x, str)
                        and not parses_as_number(x) for x in vals], dtype=bool) & (run_of >= 0)
    if is_text.any():
        row = int(np.argmax(is_text))
        what = f"{safe(str(vals[row]))[:40]!r} in run {safe(m.run_names[run_of[row]])!r} at step "
        raise LogFormatError(
            f"column {safe(name)!r} holds numbers and text: {what}{int(m.step[row])} is the "
            "first text (in file order); a per-step value is a number: write it as a number, "
            "or leave it out (missing)", path=str(m.path), column=name,
            code=ErrorCode.BAD_COLUMN_TYPE)


def _refuse_varying_text(name: str, r: str, seen: set[Any], path: Path,
                         rows: int = 0, runs_named: bool = False) -> None:
    """Text that changes within a run is neither a metric nor a condition: refused, as a
    number written as text (``BAD_COLUMN_TYPE``) or as a changing text (``NOT_CONSTANT_IN_RUN``).
    ``--run-from`` is offered only for a column that could name runs: not one of split names
    (one run's loops), nor one different in nearly every one of the run's ``rows`` (a
    timestamp, a message: one run per row)."""
    if len(seen) <= 1:
        return
    two = sorted(map(str, seen))[:2]
    if _looks_numeric(name, seen):
        raise LogFormatError(
            f"column {safe(name)!r} holds text in some rows of run {safe(r)!r} "
            f"({safe(two[0])[:40]!r}, {safe(two[1])[:40]!r}, …): a per-step value is "
            "a number; fix the logger (or quote nothing)", path=str(path),
            column=name, code=ErrorCode.BAD_COLUMN_TYPE)
    if all(isinstance(v, str) and is_split_word(v) for v in seen):
        # mmcv's {"mode": "train"} / {"mode": "val"} rows: one run's two loops, not two runs
        raise LogFormatError(
            f"text column {safe(name)!r} names the split of each row of run {safe(r)!r} "
            f"({safe(two[0])[:40]!r}, {safe(two[1])[:40]!r}): the train and validation rows "
            "of one run, which --run-from would read as two runs; grokaudit tells the splits "
            "apart by column name, so write each split's values in columns of their own "
            "(val_accuracy beside accuracy), one row per step", path=str(path),
            column=name, code=ErrorCode.NOT_CONSTANT_IN_RUN)
    if runs_named:  # --run-from named the runs already: another column is no second try
        fix = " (the runs are named by --run-from already)"
    elif rows > 3 and len(seen) >= 0.9 * rows:
        fix = (f" (it differs in {len(seen)} of its {rows} rows: a time or a message, not a "
               "run's name)")
    else:
        fix = f", or name the runs by it with --run-from {safe(name)}"
    raise LogFormatError(
        f"text column {safe(name)!r} changes within run {safe(r)!r} "
        f"({safe(two[0])[:40]!r}, {safe(two[1])[:40]!r}, …): it is neither a "
        "metric (numbers) nor a condition (constant in a run), and grokaudit "
        "drops nothing silently; remove the column from the file" + fix, path=str(path),
        column=name, code=ErrorCode.NOT_CONSTANT_IN_RUN)


def _note_non_scalar(points: Points, path: Path, non_scalar: list[str]) -> None:
    if non_scalar:
        shown = ", ".join(repr(safe(n)) for n in non_scalar[:5])
        points.warnings.append(f"{safe(path.name)}: {len(non_scalar)} column(s) of non-scalar "
                               f"values (objects or lists: media, tables, histograms) not read: "
                               f"{shown}{', …' if len(non_scalar) > 5 else ''}")


def _keep_empty_rows(m: _Melt, metric_names: list[str], logged_any: np.ndarray) -> None:
    """A row whose every value is NaN was still logged: kept, as a NaN test accuracy (or a NaN
    of the first metric)."""
    if not metric_names or logged_any.all():
        return
    keep_in = "test_acc" if "test_acc" in metric_names else metric_names[0]
    for r, g in zip(m.run_names, m.groups):
        empty = g[~logged_any[g]]
        if empty.size:
            m.points.add(r, keep_in, m.step[empty], np.full(empty.size, np.nan),
                         None if m.wall is None else m.wall[empty])


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
            "fix the file, or pass --on-duplicate first|last to choose", path=str(path),
            column=name, code=ErrorCode.DUPLICATE_ROWS)


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
    # logged once in a run that logged other rows (a final test); a run of one row (cut
    # after its first evaluation) logged everything once: its values are no results
    once = max(counts) == 1 and all(g.size > 1 for g, k in zip(groups, counts) if k)
    if once and is_outcome_name(name, in_log=True) and not (
            accuracy_rank(name, "test_acc") is not None
            or accuracy_rank(name, "train_acc") is not None):
        return "outcome"
    return None


def _looks_numeric(name: str, seen: set[Any]) -> bool:
    """A text column that should hold numbers: an accuracy's name, or mostly numbers as text."""
    if accuracy_rank(name, "test_acc") is not None or accuracy_rank(name, "train_acc") \
            is not None or is_known_metric(name):
        return True
    return mostly_numbers(seen)


def _is_condition(name: str, a: np.ndarray, groups: list[np.ndarray]) -> bool:
    if name in ACCURACY_COLUMNS or name in KNOWN_SERIES or is_known_metric(name):
        return False
    low = name.lower()
    if "acc" in low or "loss" in low or "/" in name:  # accuracies and namespaced metric keys
        return False
    if a.dtype.kind == "f" and np.isnan(a).any():
        return False
    return all(g.size > 1 and np.all(a[g] == a[g[0]]) for g in groups)


def resolve_duplicate_rows(points: Points, loaded: Loaded, run_column: str,
                           on_duplicate: str) -> None:
    """Rows of one (run, step) of a table with a run column, joined by the loader's rule
    (:func:`grokaudit.loader.join_duplicate_rows`) when ``on_duplicate`` is ``first`` or
    ``last``: a CSV in a folder or a JSON-lines file resolves them as a canonical table
    does, the rows resolved counted in the provenance (in place)."""
    from grokaudit.loader import add_resolved, join_duplicate_rows

    table, step = loaded.table, loaded.step
    if on_duplicate == "error" or step is None or run_column not in table.column_names \
            or step == run_column:
        return
    keys = pd.DataFrame({"r": table.column(run_column).to_pandas(),
                         "s": table.column(step).to_pandas()})
    if not keys.duplicated().any():
        return
    df = table.to_pandas()
    cols = [c for c in df.columns if c not in (run_column, step)]
    j = join_duplicate_rows(df, [run_column, step], cols, on_duplicate)
    frame = j.frame[list(table.column_names)]
    try:
        loaded.table = pa.Table.from_pandas(frame, schema=table.schema, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        loaded.table = pa.Table.from_pandas(frame, preserve_index=False)
    if j.resolved:
        add_resolved(points.extra, on_duplicate, j.resolved)
