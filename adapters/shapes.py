"""Shapes of tables that are read with a flag or by an unambiguous rule: long tables.

**A long ("tidy") table** holds one row per (step, metric): a step column, a name column
(``metric``, ``metric_name``, ``key``, ``tag``, ``name``) and a value column (``value``,
``val``), and maybe key columns that say which series a row belongs to (``split``,
``input_type``, ``layer``)::

    epoch,input_type,metric_name,layer,value
    0,test,accuracy,,0.0074            ->  column test/accuracy
    0,general,weights_l2,layers.0.weight,8.44  ->  column general/weights_l2/layers.0.weight

It is pivoted to one column per series, named by **the non-empty values of the key columns and
the name column, in the order the columns appear in the file, joined by** ``/``. It is detected
when the shape is unambiguous — exactly one name column (of two names at least) and one numeric
value column, and every other column the step, the run column, or text (a text column that
changes within the file, or a known key such as ``split``, is a key column; one that does not
stays a condition) — and forced or fixed by ``--long
name=COL,value=COL[,keys=COL,COL]``. MLflow and TensorBoard scalars are this shape underneath
(``step, tag, value``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from grokaudit.errors import ConfigError, ErrorCode, LogFormatError
from grokaudit.text import safe

from .cadence import parse_step_scale
from .records import Loaded

#: Names of a long table's name column and value column, in order of preference.
NAME_COLUMNS = ("metric", "metric_name", "key", "tag", "name")
VALUE_COLUMNS = ("value", "val", "metric_value")
#: Text columns that say which series a row belongs to: keys even where constant in a file
#: (a file of one split still names its series ``test/accuracy``).
KEY_COLUMNS = ("split", "input_type", "layer", "phase", "subset", "stage")
#: Wall-time columns a long table may carry beside its values (not pivoted: see _pivot).
_WALL = ("_timestamp", "wall_time", "timestamp")


def layout_options(layout: Mapping[str, Any] | None) -> dict[str, Any]:
    """The shape options (``--long``, ``--columns``, ``--conditions-from``, ``--on``,
    ``--step-scale``, ``--step-from``) as :class:`~.merge.ReadOptions` fields; ``--long`` parsed and checked
    (:func:`parse_long`), ``--step-scale`` too (:func:`.cadence.parse_step_scale`)."""
    if not layout:
        return {}
    out: dict[str, Any] = {}
    if layout.get("long"):
        raw = layout["long"]
        out["long"] = parse_long(raw) if isinstance(raw, str) else dict(raw)
    if layout.get("columns"):
        cols = layout["columns"]
        out["columns"] = tuple(split_names(cols) if isinstance(cols, str) else cols)
        twice = sorted({c for c in out["columns"] if out["columns"].count(c) > 1})
        if twice:
            raise ConfigError(f"--columns names {twice[0]!r} twice; name each column once",
                              option="--columns", code=ErrorCode.INVALID_OPTION)
    if layout.get("conditions_from"):
        out["conditions_from"] = str(layout["conditions_from"])
        out["on"] = str(layout["on"]) if layout.get("on") else None
    elif layout.get("on"):
        raise ConfigError("--on names the run-id column of --conditions-from: give "
                          "--conditions-from FILE too", option="--on",
                          code=ErrorCode.INVALID_OPTION)
    if layout.get("step_scale") is not None:
        out["step_scale"] = parse_step_scale(layout["step_scale"])
    if layout.get("step_from") is not None:
        value = str(layout["step_from"]).strip()
        if value != "row":
            raise ConfigError(f"--step-from {safe(value)!r}: the one value is row (each row of "
                              "a file with no step column is one step, numbered 0, 1, 2, …); "
                              "name a step column with --map COLUMN=step",
                              option="--step-from", code=ErrorCode.INVALID_OPTION)
        out["step_from"] = value
    return out


def split_names(raw: str) -> list[str]:
    return [x.strip() for x in raw.split(",") if x.strip()]


def parse_long(raw: str) -> dict[str, str]:
    """``name=COL,value=COL[,keys=COL,COL]`` as ``{"name", "value", "keys"}`` (keys a comma
    list, ``""`` for none); anything else is refused (``INVALID_OPTION``)."""
    out: dict[str, str] = {}
    last: str | None = None
    for item in (x.strip() for x in raw.split(",")):
        if not item:
            continue
        key, sep, val = item.partition("=")
        if sep:
            key = key.strip()
            if key not in ("name", "value", "keys") or key in out:
                raise ConfigError(
                    f"--long {raw!r}: {key!r} is {'given twice' if key in out else 'not a part'}"
                    "; write --long name=COL,value=COL[,keys=COL,COL]", option="--long",
                    code=ErrorCode.INVALID_OPTION)
            out[key], last = val.strip(), key
        elif last == "keys":
            out["keys"] = f"{out['keys']},{item}" if out["keys"] else item
        else:
            raise ConfigError(f"--long {raw!r}: {item!r} is not KEY=COL; write --long "
                              "name=COL,value=COL[,keys=COL,COL]", option="--long",
                              code=ErrorCode.INVALID_OPTION)
    if not out.get("name") or not out.get("value"):
        raise ConfigError(f"--long {raw!r} needs a name and a value column: --long "
                          "name=COL,value=COL[,keys=COL,COL]", option="--long",
                          code=ErrorCode.INVALID_OPTION)
    out.setdefault("keys", "")
    return out


def _is_text(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t)
                or pa.types.is_dictionary(t) or pa.types.is_null(t))


def _is_number(t: pa.DataType) -> bool:
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t))


def detect_long(table: pa.Table, step: str | None, run_column: str | None
                ) -> dict[str, str] | None:
    """The long-table shape of ``table`` when it is unambiguous (see the module docstring),
    else None."""
    names = list(table.column_names)
    if step is None:
        return None
    name_cols = [c for c in NAME_COLUMNS if c in names and _is_text(table.column(c).type)]
    value_cols = [c for c in VALUE_COLUMNS if c in names and _is_number(table.column(c).type)]
    if len(name_cols) != 1 or len(value_cols) != 1 \
            or not _varies_in_a_run(table, name_cols[0], run_column):
        return None  # (a name of one value per run is a condition beside a metric `value`)
    keys = []
    for c in names:
        if c in (step, run_column, name_cols[0], value_cols[0]) or c in _WALL:
            continue
        col = table.column(c)
        if not _is_text(col.type):
            return None  # a numeric column beside the values: not unambiguous
        # a text column that changes within a run is a key of the series; one constant in
        # every run (an optimizer named per run) is a condition of the run, never a key; one
        # that names each step (a checkpoint's file) is a label of the step, never a key
        if c in KEY_COLUMNS or (pc_distinct(col) > 1 and (
                run_column is None or _varies_in_a_run(table, c, run_column))
                and not labels_steps(table, c, step, run_column)):
            keys.append(c)
    return {"name": name_cols[0], "value": value_cols[0], "keys": ",".join(keys)}


def labels_steps(table: pa.Table, name: str, step: str, run_column: str | None) -> bool:
    """Whether text column ``name`` holds one value per step of a run and changes within a
    run (``checkpoint_path``: ``checkpoint_5000.pt`` on every row of step 5000): a label of
    the step, not the name of a series nor a setting."""
    index = [c for c in (run_column, step) if c and c in table.column_names]
    df = table.select([*index, name]).to_pandas()
    per_step = df.groupby(index, sort=False, dropna=False)[name].nunique(dropna=False)
    if not (per_step <= 1).all():
        return False
    # and each value at one step only: a split (train, val) logged on steps of its own
    # repeats its values over many steps -- a key, never a label
    runs = [run_column] if run_column and run_column in table.column_names else []
    per_value = df.groupby([*runs, name], sort=False, dropna=False)[step].nunique()
    return bool((per_value <= 1).all()) and _varies_in_a_run(table, name, run_column)


def _varies_in_a_run(table: pa.Table, name: str, run_column: str | None) -> bool:
    """``name`` takes two values at least within one run (a column constant in each run —
    a model's name per run — is a condition, not the name of a series)."""
    if run_column is None or run_column not in table.column_names:
        return pc_distinct(table.column(name)) >= 2
    df = table.select([run_column, name]).to_pandas()
    return bool((df.groupby(run_column, sort=False)[name].nunique(dropna=False) >= 2).any())


def long_hint(table: pa.Table) -> str | None:
    """``--long name=COL,value=COL`` for a table with a text name-like column and a numeric
    value-like column that was not detected as long (ambiguous), else None."""
    names = [c for c in NAME_COLUMNS if c in table.column_names
             and _is_text(table.column(c).type)]
    values = [c for c in VALUE_COLUMNS if c in table.column_names
              and _is_number(table.column(c).type)]
    if not names or not values:
        return None
    return f"--long name={names[0]},value={values[0]}"


def pc_distinct(col: pa.ChunkedArray) -> int:
    """How many distinct values ``col`` takes (a missing value counts as one)."""
    return int(pc.count_distinct(col, mode="all").as_py())


def pivot_long(loaded: Loaded, shape: Mapping[str, str], run_column: str | None,
               path: str, forced: bool) -> dict[str, Any]:
    """Replace ``loaded.table`` (a long table) by its wide form, one column per series, in
    place; return what was done (for the provenance and ``inspect``). Refused: a column named
    by ``--long`` that the file does not have (``MISSING_COLUMN``), values that are not
    numbers (``BAD_COLUMN_TYPE``), two series joined to one name (``DUPLICATE_COLUMN``), a
    series logged twice at one step with different values (``DUPLICATE_ROWS``)."""
    table, step = loaded.table, loaded.step
    name, value = shape["name"], shape["value"]
    keys = split_names(shape.get("keys", ""))
    for c in (name, value, *keys):
        if c not in table.column_names:
            raise LogFormatError(f"--long names column {safe(c)!r}, which this file does not "
                                 f"have (columns: {', '.join(map(repr, table.column_names[:8]))}"
                                 ")", path=path, column=c, code=ErrorCode.MISSING_COLUMN)
    if step is None:
        raise LogFormatError("a long table needs a step column; name it with --map COL=step",
                             path=path, column="step", code=ErrorCode.MISSING_COLUMN)
    if not _is_number(table.column(value).type) and not pa.types.is_null(
            table.column(value).type):
        raise LogFormatError(f"the value column {safe(value)!r} of the long table holds "
                             f"{table.column(value).type}, not numbers", path=path,
                             column=value, code=ErrorCode.BAD_COLUMN_TYPE)
    order = [c for c in table.column_names if c == name or c in keys]
    others = [c for c in table.column_names
              if c not in (step, run_column, name, value, *keys)]
    if forced:
        bad = [c for c in others if c not in _WALL and not _is_text(table.column(c).type)]
        if bad:
            raise LogFormatError(
                f"the long table has a numeric column {safe(bad[0])!r} that is neither its "
                "value nor a key; name it among the keys (--long ...,keys=COL,…) or remove it",
                path=path, column=bad[0], code=ErrorCode.MISSING_COLUMN)
    df = table.select([c for c in table.column_names if c not in _WALL]).to_pandas()
    series = _series_names(df, order, path)
    df = df.assign(__series=series)
    wide = _pivot(df, step, run_column, value, path)
    rest = [c for c in others if c not in _WALL]
    labels = [c for c in rest if labels_steps(table, c, step, run_column)]
    for c in labels:  # a step's own name: said, not read as a value or a condition
        shown = ", ".join(repr(safe(str(v))) for v in pd.unique(df[c].dropna())[:2])
        loaded.notes.append(f"column {safe(c)!r} names each step ({shown}, …): a label of "
                            "the step, not read")
    rest = [c for c in rest if c not in labels]
    if rest:  # text constant in the file: one value per (run, step), kept as a condition
        firsts = df.groupby([c for c in (run_column, step) if c], sort=False)[rest].first()
        wide = wide.join(firsts)
    out = pa.Table.from_pandas(wide.reset_index(), preserve_index=False)
    loaded.table = out
    made = sorted(set(series))
    return {"name": name, "value": value, "keys": keys, "series": made,
            "forced": forced, "wall": [c for c in others if c in _WALL]}


def _series_names(df: pd.DataFrame, order: Sequence[str], path: str) -> list[str]:
    """Each row's series: the non-empty values of ``order`` (the name and key columns in
    file order) joined by ``/``; two key combinations that join to one name are refused."""
    parts = [df[c].map(lambda x: "" if x is None or (isinstance(x, float) and np.isnan(x))
                       else str(x).strip()) for c in order]
    combos = pd.concat(parts, axis=1).drop_duplicates()
    seen: dict[str, tuple[str, ...]] = {}
    for row in combos.itertuples(index=False):
        joined = "/".join(x for x in row if x)
        tup = tuple(row)
        if joined in seen and seen[joined] != tup:
            raise LogFormatError(
                f"two series of the long table join to one name {safe(joined)!r} "
                f"({seen[joined]!r}, {tup!r}); fix the keys with --long ...,keys=COL,…",
                path=path, column=order[-1], code=ErrorCode.DUPLICATE_COLUMN)
        seen[joined] = tup
    joined_all = ["/".join(x for x in row if x) for row in zip(*parts)]
    if any(not j for j in joined_all):
        raise LogFormatError("a row of the long table has no metric name (the name and key "
                             "columns are empty)", path=path, column=order[0],
                             code=ErrorCode.MISSING_VALUES)
    return joined_all


def _pivot(df: pd.DataFrame, step: str, run_column: str | None, value: str,
           path: str) -> pd.DataFrame:
    """One column per series, indexed by (run, step): never aggregated — a series logged
    twice at one step with different values is refused, an identical repeat read once."""
    index = [c for c in (run_column, step) if c]
    sub = df[[*index, "__series", value]].astype({value: "float64"})
    sub = sub.drop_duplicates()
    dup = sub.duplicated([*index, "__series"], keep=False)
    if dup.any():
        first = sub[dup].iloc[0]
        raise LogFormatError(
            f"series {safe(str(first['__series']))!r} of the long table has two values at "
            f"{step} {first[step]}; a long table holds each (step, series) once",
            path=path, column=value, code=ErrorCode.DUPLICATE_ROWS)
    wide = sub.pivot(index=index, columns="__series", values=value)
    wide.columns = [str(c) for c in wide.columns]
    out: pd.DataFrame = wide.sort_index()
    return out
