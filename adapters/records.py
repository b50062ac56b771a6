"""One tabular file as its logger wrote it: the per-step rows, and what the file holds besides.

Loggers people write by hand put more than per-step rows in a file: a config record first and a
summary record last in a JSON-lines log (``{"_meta": {...}}`` … ``{"_summary": {...}}``), nested
objects, a JSON file of lists (``{"steps": [...], "test_acc": [...], "seed": 3}``), Hugging
Face's ``trainer_state.json`` (``{"log_history": [{...}, ...], "best_metric": ...}``).
:func:`load` reads any of them into a :class:`Loaded`:

* nested objects are flattened to dotted names (``_meta.wd``); a dotted key that collides with a
  nested one, a key given twice in one object, or nesting deeper than :data:`MAX_DEPTH` is
  refused, never resolved silently;
* records without a step are set aside, counted, with where they were — never an error when
  they are the file's head or tail; the scalar fields that no step record has become the run's
  values under their own names (``wd``, not ``_meta.wd``): a head record's are conditions, a
  tail record's outcomes (unless they sit in a config object); a record that names its run
  (``{"run": "a", "config": {...}}``) gives values to that run only; a value such records set
  twice to different values is refused (it changes over steps: it needs its step);
* a JSON file of lists: each step list with the lists it steps is one cadence (paired by name
  where several step lists have one length), cadences stacked on one step column; lists that
  no step list steps are set aside with a note; scalars are the run's values.

Config files beside a log (:func:`read_sidecar`) are read here too.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from grokaudit.csvread import read_csv_arrow
from grokaudit.errors import ErrorCode, LogFormatError
from grokaudit.limits import COLUMN_CAP, check_text_header
from grokaudit.roles import (
    CONFIG_OBJECTS,
    SIDECAR_NAMES,
    STEP_NAMES,
    is_config_parent,
    is_outcome_name,
    is_summary_parent,
)
from grokaudit.schema import STEP_MAX
from grokaudit.shards import TABLE_SUFFIXES
from grokaudit.text import DECIMAL, safe

#: Nesting deeper than this is no log (a JSON bomb, or not a training log at all).
MAX_DEPTH = 64


@dataclass
class Loaded:
    """A file's per-step rows (``table``, flattened, every row with a step) and the rest."""

    table: pa.Table
    step: str | None  #: the step column's name in ``table`` (None: no step column found)
    #: per-run values found outside the step rows (head/tail records, top-level scalars)
    run_values: dict[str, Any] = field(default_factory=dict)
    outcomes: set[str] = field(default_factory=set)  #: names in run_values that are outcomes
    #: values of records that name their run: run id -> name -> value
    by_run: dict[str, dict[str, Any]] = field(default_factory=dict)
    aside: int = 0  #: records (rows) set aside: they have no step
    aside_where: list[str] = field(default_factory=list)  #: where they were ("line 1", …)
    notes: list[str] = field(default_factory=list)  #: what was not read, and why
    sidecars: list[str] = field(default_factory=list)  #: config files whose values were read
    #: the file holds no per-step values, only scalars (a config or a summary file)
    scalars_only: bool = False
    #: integer columns holding one value written with a leading zero (``007``) in a file
    #: without a run column: column -> text (:mod:`grokaudit.csvread`)
    labels: dict[str, str] = field(default_factory=dict)
    #: ``--step-from row`` numbered this file's rows (it had no step column)
    rows_numbered: bool = False


# ------------------------------------------------------------------------------------------
# reading: every format to Arrow, JSON parsed by one strict parser
# ------------------------------------------------------------------------------------------

#: Text files that may be a table with a header line (Keras's ``CSVLogger`` writes
#: ``training.log``): read as CSV or TSV when :func:`delimited_text` says so.
TEXT_TABLE_SUFFIXES = (".log", ".txt", ".dat")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_./@:\-]*")
_CELL = re.compile(rf"\s*(?:{DECIMAL}|[+-]?(?:nan|inf)|NaN|NA|N/A|n/a|null|NULL|None|)\s*",
                   re.ASCII)  # Keras 3 writes NA
_NUMBER_CELL = re.compile(rf"\s*{DECIMAL}\s*", re.ASCII)


def _json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def delimited_text(path: Path) -> str | None:
    """``"csv"`` or ``"tsv"`` for a ``.log``/``.txt``/``.dat`` file that is a table with a
    header line: a first line of at least two names split by commas (or tabs), every one a
    name, and a second line of as many numbers (a cell may be empty); ``"jsonl"`` for one whose
    first two lines are JSON objects (the ``log.txt`` of DeiT, MAE and ConvNeXt: one
    ``json.dumps`` of the epoch's stats per line); None otherwise (a header-less numeric file
    is the text reader's, a free-text log nobody's)."""
    if path.suffix.lower() not in TEXT_TABLE_SUFFIXES or not path.is_file():
        return None
    try:
        with path.open("r", encoding="utf-8-sig", newline="") as fh:  # a BOM: not a name
            head, row = fh.readline(65536).rstrip("\r\n"), fh.readline(65536).rstrip("\r\n")
    except (OSError, UnicodeDecodeError):
        return None
    if head.lstrip().startswith("{") and _json_object(head) and (
            not row.strip() or _json_object(row)):
        return "jsonl"
    for sep, names in _header_names(head):
        cells = row.split(sep)
        if (len(cells) == len(names) and all(_CELL.fullmatch(c) for c in cells)
                and any(_NUMBER_CELL.fullmatch(c) for c in cells)):
            return "tsv" if sep == "\t" else "csv"
    return None


def row_naming_column(t: pa.Table) -> str | None:
    """A text column of ``t`` holding a different value in every row (a manifest's run
    names, a runs table's ``Name``): the table is one row per run, not one run's rows."""
    return next((n for n, c in zip(t.column_names, t.columns)
                 if (pa.types.is_string(c.type) or pa.types.is_large_string(c.type))
                 and not c.null_count and pc.count_distinct(c).as_py() == t.num_rows), None)


def _header_names(head: str) -> list[tuple[str, list[str]]]:
    """``(separator, names)`` for each of a comma and a tab that splits the line ``head``
    into at least two column names."""
    return [(sep, names) for sep in (",", "\t") if len(names := head.split(sep)) >= 2
            and all(_NAME.fullmatch(n.strip()) for n in names)]


def header_only_table(path: Path) -> bool:
    """A ``.log``, ``.txt`` or ``.dat`` file that is a table's header line and nothing else (a
    Keras ``CSVLogger`` whose run stopped before its first epoch ended)."""
    if path.suffix.lower() not in TEXT_TABLE_SUFFIXES or not path.is_file():
        return False
    try:
        with path.open("r", encoding="utf-8-sig", newline="") as fh:
            head, rest = fh.readline(65536).rstrip("\r\n"), fh.read(4096)
    except (OSError, UnicodeDecodeError):
        return False
    return not rest.strip() and bool(_header_names(head))


def read_arrow_file(path: Path, rename: Mapping[str, str] | None = None) -> pa.Table:
    """The file as Arrow, by its suffix (JSON and JSON lines flattened)."""
    kind = TABLE_SUFFIXES.get(path.suffix.lower()) or delimited_text(path)
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
            cap = COLUMN_CAP.get()  # (grokaudit.limits.column_cap)
            if cap is not None and path.suffix.lower() in TEXT_TABLE_SUFFIXES:
                # a .log table: the cap a .csv's header meets before the audit reads it
                check_text_header(path, cap, "\t" if kind == "tsv" else ",")
            return read_csv_arrow(path, tsv=kind == "tsv")
        if kind == "jsonl":
            return _jsonl(path)
        return _json_document(path, rename)
    except LogFormatError:
        raise
    except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError, OSError, RecursionError) as exc:
        raise _unreadable(path, kind, exc) from None


def _unreadable(path: Path, kind: str, exc: BaseException) -> LogFormatError:
    # the parser's message may quote the offending line of the log: escape it, cut it short
    msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    msg = safe(msg if len(msg) <= 200 else msg[:200] + "…")
    return LogFormatError(f"cannot read as {kind}: {msg}; fix that line or the file type",
                          path=str(path), code=ErrorCode.FILE_UNREADABLE)


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def _loads(text: str, path: Path, where: str = "") -> Any:
    """Strict JSON: a key given twice in one object and nesting deeper than :data:`MAX_DEPTH`
    are refused (a parser keeping the last of two keys would drop a value silently)."""
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates)
    except _DuplicateKey as exc:
        raise LogFormatError(f"{where}the key {safe(exc.args[0])!r} appears twice in one object; "
                             "JSON keeps one of them silently: fix the file", path=str(path),
                             column=str(exc.args[0]), code=ErrorCode.DUPLICATE_COLUMN) from None
    except RecursionError:
        raise _too_deep(path, where) from None
    except ValueError as exc:
        raise LogFormatError(f"{where}not JSON ({safe(exc)}); fix the file", path=str(path),
                             code=ErrorCode.FILE_UNREADABLE) from None


def _too_deep(path: Path, where: str = "") -> LogFormatError:
    return LogFormatError(f"{where}objects nested deeper than {MAX_DEPTH} levels: not a training "
                          "log grokaudit reads", path=str(path), code=ErrorCode.FILE_UNREADABLE)


def _text(path: Path) -> str:
    """The file as text (UTF-8, a byte-order mark dropped)."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _unreadable(path, "text", exc) from None


def _flat(obj: Mapping[str, Any], path: Path, where: str, prefix: str = "",
          out: dict[str, Any] | None = None, depth: int = 0) -> dict[str, Any]:
    """One record as dotted keys. A media or table reference (``{"_type": ...}``) stays one
    value, serialized; a dotted key that collides with a nested one is refused."""
    if depth > MAX_DEPTH:
        raise _too_deep(path, where)
    out = {} if out is None else out
    for k, v in obj.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict) and v and "_type" not in v:
            _flat(v, path, where, name + ".", out, depth + 1)
            continue
        if isinstance(v, dict):
            v = json.dumps(v) if v else None
        if name in out:
            raise LogFormatError(
                f"{where}the key {safe(name)!r} is given twice (a dotted key and a nested "
                "object of the same name): fix the file", path=str(path), column=name,
                code=ErrorCode.DUPLICATE_COLUMN)
        out[name] = v
    return out


def _jsonl(path: Path, text: str | None = None) -> pa.Table:
    """JSON lines: each line one object (a line that is not is refused, naming it)."""
    records: list[dict[str, Any]] = []
    for no, line in enumerate((_text(path) if text is None else text).splitlines(), 1):
        if not line.strip():
            continue
        where = f"line {no}: "
        rec = _loads(line, path, where)
        if not isinstance(rec, dict):
            kind = {list: "list", str: "string", bool: "boolean", type(None): "null"}.get(
                type(rec), "number")
            raise LogFormatError(f"line {no} is a JSON {kind}, not an object (one record "
                                 "per line)", path=str(path), code=ErrorCode.FILE_UNREADABLE)
        records.append(_flat(rec, path, where))
    return _records_table(records)


def _records_table(records: list[dict[str, Any]]) -> pa.Table:
    """Flat records (dotted keys) as an Arrow table, columns in order of first appearance."""
    if not records:
        return pa.table({})
    cap = COLUMN_CAP.get()  # (grokaudit.limits.column_cap)
    names: dict[str, None] = {}
    for i, r in enumerate(records):
        for k in r:
            names.setdefault(k, None)
        if cap is not None and len(names) > cap:
            raise LogFormatError(
                f"its records name more than {cap} columns (the cap) by record {i + 1}; if "
                f"the log is really this wide, raise the cap with --max-columns (max_columns "
                "in a config file)", code=ErrorCode.TOO_LARGE)
    cols: dict[str, pa.Array] = {}
    for name in names:
        vals = [r.get(name) for r in records]
        try:
            cols[name] = pa.array(vals, from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            cols[name] = _mixed_column(name, vals)
    return pa.table(cols)


#: Columns whose values name things (run ids): never read as numbers, whatever they look like
#: (``"007"`` and ``7`` are two runs; ``12345678901234567890`` is no float).
_NAMES = frozenset({"run"})


def _mixed_column(name: str, vals: list[Any]) -> pa.Array:
    """A JSON column Arrow cannot type on its own: numbers beyond int64, or numbers in some
    records and text in others. Read as numbers where that loses nothing: integers beyond
    int64 as floats unless two of them would become one float (then exact, as text: ids), and
    a number spelt as text among numbers (``"1.0"`` beside ``2.0``: one value, two spellings)
    as that number. Run ids and anything else are kept as text (refused where it matters)."""
    def number(v: Any) -> bool:
        return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))

    if name not in _NAMES and all(number(v) for v in vals):
        ints = {v for v in vals if isinstance(v, int)}
        if len({float(v) for v in ints}) == len(ints):  # beyond int64 (a corrupted step):
            return pa.array([None if v is None else float(v) for v in vals],
                            type=pa.float64())  # as floats, refused by the range checks
    elif name not in _NAMES and all(number(v) or (isinstance(v, str) and _spelt_number(v))
                                    for v in vals):
        return pa.array([None if v is None else float(v) for v in vals], type=pa.float64())
    return pa.array([None if v is None or (isinstance(v, float) and v != v)
                     else json.dumps(v) if isinstance(v, (list, dict))
                     else str(v) for v in vals], type=pa.string())


def _spelt_number(text: str) -> bool:
    """A finite number written as text (``"1.0"``, ``"1e-3"``); not ``"nan"`` or ``"inf"``,
    which are words a logger writes for what it could not compute, not spellings."""
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


# ------------------------------------------------------------------------------------------
# a JSON document: records, a dict of lists, pandas' layouts
# ------------------------------------------------------------------------------------------

@dataclass
class _Walk:
    scalars: dict[str, Any] = field(default_factory=dict)
    lists: dict[str, list[Any]] = field(default_factory=dict)
    records: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)
    other: list[str] = field(default_factory=list)


def _walk(obj: Mapping[str, Any], prefix: str, out: _Walk, path: Path, depth: int = 0) -> None:
    if depth > MAX_DEPTH:
        raise _too_deep(path)
    for k, v in obj.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            if v:
                _walk(v, name + ".", out, path, depth + 1)
        elif isinstance(v, list):
            if v and all(isinstance(x, dict) for x in v):
                out.records.append((name, v))
            elif all(x is None or isinstance(x, (int, float, str, bool)) for x in v):
                out.lists[name] = v
            else:
                out.other.append(name)
        else:
            if name in out.scalars:
                raise LogFormatError(f"the key {safe(name)!r} is given twice (a dotted key and "
                                     "a nested object of the same name): fix the file",
                                     path=str(path), column=name,
                                     code=ErrorCode.DUPLICATE_COLUMN)
            out.scalars[name] = v


#: The keys of one series written as parallel lists (Sacred's ``metrics.json``).
_SERIES_KEYS = frozenset({"steps", "values", "timestamps"})


def _steps_values(data: Mapping[str, Any], path: Path) -> pa.Table | None:
    """``{name: {"steps": [...], "values": [...], "timestamps": [...]}}`` (Sacred's
    ``FileStorageObserver`` ``metrics.json``, one object per series) as a table of one row per
    step any series logged: the step, and each series' value there under its own name. The
    wall-clock timestamps are named in the notes, not read. Refused: a step that is no
    integer, a series logging one step twice with two values, a series named ``step``, and
    series numbered by Sacred's own counters (``log_scalar`` without ``step=``: each series
    0, 1, 2, … by its own calls) that differ in length -- an accuracy per epoch and a loss per
    iteration would share one axis. None for any other document."""
    if not data or not all(isinstance(v, dict) and {"steps", "values"} <= set(v) <= _SERIES_KEYS
                           for v in data.values()):
        return None
    series: dict[str, dict[int, Any]] = {}
    for name, one in data.items():
        st, vals = one["steps"], one["values"]
        if not (isinstance(st, list) and isinstance(vals, list)) or len(st) != len(vals):
            raise LogFormatError(
                f"series {safe(name)!r} has {_length(st)} steps and {_length(vals)} values; "
                "each step needs its value: fix the file", path=str(path), column=name,
                code=ErrorCode.FILE_UNREADABLE)
        if name == "step":
            raise LogFormatError("a series named 'step' cannot be read beside the series' "
                                 "steps; rename it in the file", path=str(path), column=name,
                                 code=ErrorCode.DUPLICATE_COLUMN)
        points: dict[int, Any] = {}
        for k, (x, v) in enumerate(zip(st, vals)):
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not (
                    math.isfinite(x) and float(x).is_integer()):
                raise LogFormatError(
                    f"series {safe(name)!r}: its step {k + 1} is {safe(repr(x))[:40]}, not an "
                    "integer step; fix the file", path=str(path), column=name,
                    code=ErrorCode.NON_INTEGER_STEP)
            if abs(x) > STEP_MAX:
                raise LogFormatError(
                    f"series {safe(name)!r}: its step {k + 1} is {safe(repr(x))[:40]}, beyond "
                    "2**53 (steps are compared exactly up to there); fix the file",
                    path=str(path), column=name, code=ErrorCode.STEP_OUT_OF_RANGE)
            if int(x) in points and points[int(x)] != v and not (v != v and points[int(x)]
                                                                  != points[int(x)]):
                raise LogFormatError(
                    f"series {safe(name)!r} logs step {int(x)} twice with two values "
                    f"({safe(repr(points[int(x)]))[:30]}, {safe(repr(v))[:30]}); give each "
                    "point its own step", path=str(path), column=name,
                    code=ErrorCode.DUPLICATE_ROWS)
            points[int(x)] = v
        series[str(name)] = points
    counted = {n: len(p) for n, p in series.items()
               if len(p) >= 2 and list(p) == list(range(len(p)))}
    if len(set(counted.values())) > 1:
        (a, na), (b, nb) = sorted(counted.items(), key=lambda kv: kv[1])[::len(counted) - 1]
        raise LogFormatError(
            f"the series are numbered by their own log calls (0, 1, 2, …: Sacred's counter "
            f"when log_scalar is given no step=), and their lengths differ: {safe(a)!r} 0 … "
            f"{na - 1}, {safe(b)!r} 0 … {nb - 1}; one may count epochs and another "
            "iterations, which one axis cannot hold: log with step= (the iteration)",
            path=str(path), code=ErrorCode.STEP_UNITS_MIXED)
    steps = sorted({x for p in series.values() for x in p})
    cols: dict[str, pa.Array] = {"step": pa.array(steps, type=pa.int64())}
    for name, p in series.items():
        vals = [p.get(x) for x in steps]
        try:
            cols[name] = pa.array(vals, from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            cols[name] = _mixed_column(name, vals)
    timed = [f"{n}.timestamps" for n, v in data.items() if "timestamps" in v]
    table = pa.table(cols) if steps else pa.table({})
    return _with_info(table, {"scalars": {}, "other": timed, "outcomes": [],
                              "why": " (wall-clock times)"})


def _length(x: Any) -> str:
    return str(len(x)) if isinstance(x, list) else "no list of"


_NON_SPACE = re.compile(r"\S")


def _json_lines(text: str) -> bool:
    """Whether ``text`` is JSON lines rather than one JSON document: its first line is a whole
    JSON object and another line follows (a document on one line has no second line; a
    pretty-printed one's first line is no whole object)."""
    start = len(text) - len(text.lstrip()) if text[:1].isspace() else 0
    end = text.find("\n", start)
    if end < 0 or text[start:start + 1] != "{" or _NON_SPACE.search(text, end) is None:
        return False
    return _json_object(text[start:end])


def _json_document(path: Path, rename: Mapping[str, str] | None = None) -> pa.Table:
    """A ``.json`` file as a table of step rows. Its other contents (scalars, lists set aside)
    are kept for :func:`load` in the table's metadata."""
    text = _text(path)
    if _json_lines(text):
        # JSON lines under a .json name, as MMEngine (scalars.json), mmcv (*.log.json) and
        # detectron2 (metrics.json) write them: read as what they are
        return _jsonl(path, text)
    data = _loads(text, path)
    if isinstance(data, list):
        if not all(isinstance(x, dict) for x in data):
            raise LogFormatError("a JSON list whose items are not all objects; a log is a list "
                                 "of records or an object of lists", path=str(path),
                                 code=ErrorCode.FILE_UNREADABLE)
        return _records_table([_flat(r, path, f"record {i + 1}: ") for i, r in enumerate(data)])
    if not isinstance(data, dict):
        raise LogFormatError(f"a JSON {type(data).__name__}, not an object or a list of "
                             "records", path=str(path), code=ErrorCode.FILE_UNREADABLE)
    if data and all(isinstance(v, dict) and v and all(str(k).lstrip("-").isdigit() for k in v)
                    for v in data.values()):
        # pandas' default layout (df.to_json()): {"column": {"row": value}}
        return pa.Table.from_pandas(pd.DataFrame(data), preserve_index=False)
    pairs = _steps_values(data, path)
    if pairs is not None:
        return pairs
    if set(data) >= {"columns", "data"} and isinstance(data["columns"], list):
        return pa.Table.from_pandas(pd.DataFrame(data["data"], columns=data["columns"]),
                                    preserve_index=False)
    walk = _Walk()
    _walk(data, "", walk, path)
    info: dict[str, Any] = {"scalars": walk.scalars, "other": list(walk.other),
                            "outcomes": _scalar_outcomes(data, walk.scalars)}
    if walk.records:
        info["other"] += sorted(walk.lists)
        return _with_info(_record_lists(walk.records, path), info)
    if not walk.lists:  # scalars only: a config file, or a summary beside a log
        return _with_info(pa.table({}), info)
    return _with_info(_lists_table(walk.lists, rename, info, path), info)


def _record_lists(lists: list[tuple[str, list[dict[str, Any]]]], path: Path) -> pa.Table:
    """Lists of records (``log_history``; ``{"train": [...], "test": [...]}``) as one table.
    With several lists, each list's columns carry its name (``test.accuracy``) but the step,
    so that a train and a test accuracy never share a column."""
    tables = []
    for name, recs in lists:
        t = _records_table([_flat(r, path, f"{name}[{i}]: ") for i, r in enumerate(recs)])
        if len(lists) > 1:
            step = _find_step(t.column_names)
            t = t.rename_columns([c if c == step else f"{name}.{c}" for c in t.column_names])
            if step is not None and step != "step":
                t = t.rename_columns(["step" if c == step else c for c in t.column_names])
        tables.append(t)
    if len(tables) == 1:
        return tables[0]
    try:
        return pa.concat_tables(tables, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise _unreadable(path, "json", exc) from None


def _with_info(table: pa.Table, info: Mapping[str, Any]) -> pa.Table:
    return table.replace_schema_metadata({b"grokaudit.json": json.dumps(info, default=str)
                                          .encode()})


def _scalar_outcomes(data: Mapping[str, Any], scalars: Mapping[str, Any], *,
                     by_name: bool = True) -> list[str]:
    """Which scalars of a JSON document are outcomes. Inside a config object: none. Beside a
    config object, the document's top-level scalars are results (``{"config": {...},
    "grok_step": 900}``); elsewhere a value is an outcome when a summary object holds it or
    (``by_name``: a log's own scalars, not a config file's) its name says so
    (:func:`is_outcome_name`)."""
    has_config = any(isinstance(data.get(k), dict) for k in CONFIG_OBJECTS)
    out = []
    for name in scalars:
        parents = name.split(".")[:-1]
        if any(is_config_parent(p) for p in parents):
            continue
        if has_config and not parents:
            out.append(name)
        elif any(is_summary_parent(p) for p in parents) or (
                by_name and is_outcome_name(name, in_log=True)):
            out.append(name)
    return out


def _step_word(name: str) -> str | None:
    """The prefix of a step list's name (``train`` of ``train_steps``; ``""`` of ``steps``),
    or None when the name is no step name."""
    leaf = name.rsplit(".", 1)[-1]
    if leaf in STEP_NAMES:
        return ""
    m = _STEPLIKE.search(leaf)
    return None if m is None else leaf[:m.start()].rstrip("_")


def _lists_table(lists: Mapping[str, list[Any]], rename: Mapping[str, str] | None,
                 info: dict[str, Any], path: Path) -> pa.Table:
    """A dict of lists as step rows (module docstring): each step list with the lists it
    steps is one cadence; several cadences are stacked on one step column and joined later
    without interpolation."""
    ren = rename or {}
    by_len: dict[int, list[str]] = {}
    for name, vals in lists.items():
        by_len.setdefault(len(vals), []).append(name)
    cadences: list[tuple[str | None, list[str]]] = []
    for _n, names in sorted(by_len.items(), key=lambda kv: -kv[0]):
        steps = {s: w for s in names if (w := _step_word(ren.get(s, s))) is not None}
        series = [s for s in names if s not in steps]
        if not steps or not series:
            continue  # no step list, or a step-like setting alone (decay_steps: [...])
        if len(steps) == 1:
            cadences.append((next(iter(steps)), series))
            continue
        # several step lists of one length: each steps the lists named like it
        owned: dict[str, list[str]] = {s: [] for s in steps}
        plain = [s for s, w in steps.items() if not w]
        for col in series:
            leaf = col.rsplit(".", 1)[-1]
            hits = [s for s, w in steps.items() if w and leaf.startswith(w + "_")]
            owner = hits[0] if len(hits) == 1 else plain[0] if not hits and len(plain) == 1 \
                else None
            if owner is None:
                raise LogFormatError(
                    f"the lists {', '.join(repr(safe(s)) for s in sorted(steps))} have the same "
                    f"length: which of them steps {safe(col)!r} cannot be told from the names; "
                    "write each cadence with its own step list name (train_steps with "
                    "train_acc)", path=str(path), column=col, code=ErrorCode.MISSING_COLUMN)
            owned[owner].append(col)
        cadences += [(s, cols) for s, cols in owned.items() if cols]
    if not cadences:
        # no step list at all: the lists of the most common length, for --map KEY=step
        n = max(by_len, key=lambda x: (len(by_len[x]), x))
        if n < 3 or len(by_len[n]) < 2:
            info["other"] += sorted(lists)  # a short or lone list is a setting: a config
            return pa.table({})
        cadences = [(None, by_len[n])]
    used = {c for s, cols in cadences for c in ([s] if s else []) + cols}
    info["other"] += sorted(k for k in lists if k not in used)
    info["lengths"] = {k: len(v) for k, v in lists.items() if k not in used}
    # the primary cadence: the one holding the test accuracy, else the longest
    primary = max(range(len(cadences)), key=lambda i: (
        any("test" in c or "val" in c for c in cadences[i][1]), len(lists[cadences[i][1][0]])))
    step_name = cadences[primary][0]
    total = sum(len(lists[cols[0]]) for _, cols in cadences)
    cols_out: dict[str, list[Any]] = {}
    offset = 0
    for i in [primary] + [j for j in range(len(cadences)) if j != primary]:
        s, names = cadences[i]
        n = len(lists[names[0]])
        for name in ([s] if s else []) + names:
            # either every cadence has a step list or none has: with s set, step_name is a str
            target = cast(str, step_name) if (s is not None and name == s) else name
            column = cols_out.setdefault(target, [None] * total)
            column[offset:offset + n] = lists[name]
        offset += n
    out: dict[str, pa.Array] = {}
    for name, vals in cols_out.items():
        try:
            out[name] = pa.array(vals, from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            out[name] = pa.array([None if v is None else str(v) for v in vals],
                                 type=pa.string())
    info["dict_of_lists"] = True
    if len(cadences) > 1:
        info["cadences"] = {str(s): len(lists[cols[0]]) for s, cols in cadences}
    return pa.table(out)


# ------------------------------------------------------------------------------------------
# load: flatten, rename, find the step, set aside the records without one
# ------------------------------------------------------------------------------------------

_STEPLIKE = re.compile(r"(^|_)(steps?|epochs?|iters?|iterations?)$", re.IGNORECASE)


def _find_step(names: list[str], *, lists: bool = False) -> str | None:
    """The step column among ``names``: the first of :data:`STEP_NAMES`, by full name, then by
    the last component of a flattened name (``history.steps``); among the lists of a JSON
    document (``lists``), also a name ending in one of them (``eval_epochs``)."""
    s: str
    for s in STEP_NAMES:
        if s in names:
            return s
    for s in STEP_NAMES:
        hits = [n for n in names if n.rsplit(".", 1)[-1] == s]
        if len(hits) == 1:
            return hits[0]
    if lists:
        hits = sorted((n for n in names if _STEPLIKE.search(n.rsplit(".", 1)[-1])),
                      key=lambda n: ("epoch" in n.lower(), n))
        if hits:
            return hits[0]
    return None


#: The step column ``--step-from row`` adds to a file that has none.
ROW_STEP = "step"


def rows_as_steps(table: pa.Table, path: Path, runs: str | None) -> pa.Table:
    """``table`` with a step column numbering its rows of per-step values 0, 1, 2, … in file
    order (each run's own, where ``runs`` names a run column): ``--step-from row``, for a log
    whose rows are its log points in order and that names no step (Keras's
    ``history.history`` saved as a table). A row holding no value of a column that other rows
    hold too (a config record ``{"lr": 0.1}`` before the epochs) gets no step: it is read as
    run values, as a record without a step always is. Refused (``INVALID_OPTION``) where the
    rows' positions are no shared steps: rows holding different columns (a list of train
    records, then a list of test records), or a column already called ``step``."""
    def refuse(why: str) -> LogFormatError:
        return LogFormatError(f"--step-from row: {why}; name its step column with --map "
                              "COLUMN=step, or read it without --step-from", path=str(path),
                              column=ROW_STEP, code=ErrorCode.INVALID_OPTION)

    if ROW_STEP in table.column_names:
        raise refuse(f"the file already has a column {ROW_STEP!r}")
    names = [n for n in table.column_names if n != runs]
    present = {n: np.asarray(table.column(n).is_valid().to_numpy(zero_copy_only=False),
                             dtype=bool) for n in names}
    series = [n for n in names if int(present[n].sum()) >= 2]  # logged at several rows
    has = np.zeros(table.num_rows, dtype=bool)
    for n in series:
        has |= present[n]
    if has.any() and not any(present[n][has].all() for n in series):
        raise refuse("its rows hold different columns (a list of train records, then one of "
                     "test records?): their positions are no shared steps")
    key = (table.column(runs).to_pandas() if runs is not None and runs in table.column_names
           else pd.Series(np.zeros(table.num_rows, dtype=np.int64)))
    numbered = key[has].groupby(key[has], sort=False, dropna=False).cumcount()
    rows = np.full(table.num_rows, -1, dtype=np.int64)
    rows[has] = numbered.to_numpy(np.int64)
    return table.append_column(ROW_STEP, pa.array(rows, type=pa.int64(), mask=~has))


def flatten(table: pa.Table, path: Path | None = None) -> pa.Table:
    """Nested objects (struct columns) as dotted columns (``_meta.wd``), however deep. An
    object with a ``_type`` field (a W&B media or table reference: an image's path, size,
    digest) is not a set of values: it stays one column, set aside as non-scalar. A dotted
    name that collides with a nested one is refused."""
    depth = 0
    while any(pa.types.is_struct(f.type) and not _typed(f.type) for f in table.schema):
        depth += 1
        if depth > MAX_DEPTH:
            raise _too_deep(path or Path("<table>"))
        cols, names = [], []
        for name, col in zip(table.column_names, table.columns):
            if pa.types.is_struct(col.type) and not _typed(col.type):
                for i in range(col.type.num_fields):
                    child = col.type.field(i)
                    cols.append(pc.struct_field(col, [i]))
                    names.append(f"{name}.{child.name}")
            else:
                cols.append(col)
                names.append(name)
        table = pa.table(cols, names=names)
    names = table.column_names
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise LogFormatError(f"column {safe(twice[0])!r} appears more than once (a dotted name "
                             "and a nested object of the same name?); rename one of them",
                             path=None if path is None else str(path), column=twice[0],
                             code=ErrorCode.DUPLICATE_COLUMN)
    return table


def _typed(t: pa.DataType) -> bool:
    return bool(pa.types.is_struct(t) and t.get_field_index("_type") >= 0)


def load(path: Path, rename: Mapping[str, str] | None = None,
         sidecars: Sequence[Sidecar] = (), *, run_key: str | None = "run",
         step_from: str | None = None, row_runs: str | None = "run") -> Loaded:
    """Read one tabular file as its step rows and its other contents (module docstring).

    ``rename`` renames columns before the step is looked for (``--map iteration=step``).
    ``sidecars`` (farthest first) are config files beside the log: their scalars are run
    values too, overridden by the file's own (with a note). ``run_key`` is the column naming
    runs (records without a step that name their run give values to it only).
    ``step_from="row"`` (``--step-from row``): a file with no step column has its rows
    numbered 0, 1, 2, … in file order as its steps (:func:`rows_as_steps`; each run's own,
    where ``row_runs`` names a run column); a file with one reads its steps.
    Raises :class:`LogFormatError` naming the file."""
    raw = read_arrow_file(path, rename)
    meta = (raw.schema.metadata or {}).get(b"grokaudit.json")
    extras = json.loads(meta) if meta else {}
    table = flatten(raw.replace_schema_metadata(None), path)
    stripped = [n.strip() for n in table.column_names]  # " test_acc" is test_acc
    if stripped != table.column_names:
        twice = sorted({n for n in stripped if stripped.count(n) > 1})
        if twice:
            raise LogFormatError(f"column {safe(twice[0])!r} appears more than once once its "
                                 "spaces are trimmed; rename one of them", path=str(path),
                                 column=twice[0], code=ErrorCode.DUPLICATE_COLUMN)
        table = table.rename_columns(stripped)
    if rename:
        names = table.column_names
        new = [rename.get(n, n) for n in names]
        clash = sorted({n for n in new if new.count(n) > 1} - {n for n in names
                                                                if names.count(n) > 1})
        if clash:
            src = [o for o, n in zip(names, new) if n == clash[0]]
            raise LogFormatError(
                f"--map makes two columns called {safe(clash[0])!r} ({', '.join(map(repr, src))});"
                " rename only one of them", path=str(path), column=clash[0],
                code=ErrorCode.DUPLICATE_COLUMN)
        table = table.rename_columns(new)
        extras["scalars"] = {rename.get(k, k): v for k, v in extras.get("scalars", {}).items()}
    step = _find_step(table.column_names, lists=bool(extras.get("dict_of_lists")))
    loaded = Loaded(table=table, step=step)
    for k, text in (extras.get("labels") or {}).items():
        name = (rename or {}).get(k.strip(), k.strip())
        if name in table.column_names:
            loaded.labels[name] = str(text)
    kinds: dict[str, str] = {}  # where each run value came from, for the overriding note
    folders: set[str] = set()  # the run values a partition folder gave
    for sc in sidecars:
        for k, v in sc.values.items():
            _put_value(loaded, k, v, outcome=k in sc.outcomes)
            kinds[k] = sc.path.name
            (folders.add if sc.partition else folders.discard)(k)
        loaded.sidecars.append(str(sc.path))
        if sc.skipped:
            shown = ", ".join(repr(safe(k)) for k in sc.skipped[:5])
            loaded.notes.append(f"{safe(sc.path.name)}: {len(sc.skipped)} entr"
                                f"{'y' if len(sc.skipped) == 1 else 'ies'} that are no scalar "
                                f"not read: {shown}{', …' if len(sc.skipped) > 5 else ''}")
    declared = set(extras.get("outcomes") or ())
    for k, v in extras.get("scalars", {}).items():
        _override_note(loaded, k, v, kinds, path)
        _put_value(loaded, k, v, outcome=k in declared, replace=True)
    if extras.get("other"):
        shown = ", ".join(repr(safe(n)) for n in extras["other"][:5])
        more = ", …" if len(extras["other"]) > 5 else ""
        lengths = extras.get("lengths") or {}
        why = extras.get("why") or (" (lists that no step list steps)" if lengths else
                                    " (lists of lists or of mixed values)")
        loaded.notes.append(f"{safe(path.name)}: {len(extras['other'])} entr"
                            f"{'y' if len(extras['other']) == 1 else 'ies'} not read{why}: "
                            f"{shown}{more}")
    if extras.get("dict_of_lists") and table.num_columns:
        # one object holding every series ({"history": {"step": [...], ...}}): its name is
        # not part of the columns' names
        heads = {n.split(".", 1)[0] for n in table.column_names}
        if len(heads) == 1 and all("." in n for n in table.column_names):
            table = table.rename_columns([n.split(".", 1)[1] for n in table.column_names])
            loaded.table = table
            loaded.step = step = _find_step(table.column_names, lists=True)
    if step_from == "row" and step is None and table.num_columns:
        loaded.table = table = rows_as_steps(table, path, row_runs)
        loaded.step = step = ROW_STEP
        loaded.rows_numbered = True
        n = int(table.num_rows - table.column(step).null_count)
        loaded.notes.append(f"{safe(path.name)}: no step column; --step-from row numbered its "
                            f"{n} row(s) of per-step values 0, 1, 2, … in file order as the "
                            "steps" + (" (each run's own)" if row_runs in table.column_names
                                       else ""))
    loaded.scalars_only = table.num_columns == 0 and bool(extras.get("scalars"))
    if step is not None and table.num_rows:
        _set_aside(loaded, path, run_key)
    for k, v in list(loaded.run_values.items()):
        if k in loaded.table.column_names and k != step:
            if k not in folders:  # (a partition folder's value: checked by the table reader)
                loaded.notes.append(f"{safe(path.name)}: the column {safe(k)!r} is used, not the "
                                    f"value {safe(v)!r} given for it by "
                                    f"{safe(kinds.get(k, 'a record without a step'))}")
            del loaded.run_values[k]
    _name_run_values(loaded)
    return loaded


def _override_note(loaded: Loaded, k: str, v: Any, kinds: Mapping[str, str],
                   path: Path) -> None:
    if k in kinds and loaded.run_values.get(k) != v:
        loaded.notes.append(f"{safe(path.name)}: {safe(k)} = {safe(v)!r} overrides "
                            f"{safe(loaded.run_values.get(k))!r} from {safe(kinds[k])}")


def config_like(path: Path) -> bool:
    """True for a JSON file that holds no per-step values (a config, a grid spec, a summary):
    it does not make a folder a folder of table logs."""
    if path.suffix.lower() != ".json":
        return False
    try:
        loaded = load(path)
    except LogFormatError:
        return False
    return loaded.table.num_columns == 0 or loaded.step is None


def _put_value(loaded: Loaded, name: str, value: Any, *, outcome: bool,
               replace: bool = False) -> None:
    """Record a run value. A condition already known is never turned into an outcome by a
    later record repeating it (a summary record that copies the config: its ``weight_decay``
    is still the condition the run was trained under); the earlier value is kept unless
    ``replace`` (the file's own values over a config file's)."""
    if isinstance(value, (list, dict)):
        return
    if name in loaded.run_values and name not in loaded.outcomes and outcome and not replace:
        return
    loaded.run_values[name] = value
    if outcome:
        loaded.outcomes.add(name)
    else:
        loaded.outcomes.discard(name)


def _null_step(col: pa.ChunkedArray) -> np.ndarray:
    null = np.asarray(col.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    if pa.types.is_floating(col.type):
        null |= np.asarray(pc.is_nan(col).fill_null(True).to_numpy(zero_copy_only=False),
                           dtype=bool)
    return null


def _set_aside(loaded: Loaded, path: Path, run_key: str | None) -> None:
    """Rows without a step: set aside and counted (module docstring). Their fields that no
    step row has become run values — of the run a record names, else of every run of the
    file; a value such records give twice with different values is refused (it changes over
    steps and needs its step). A record without a step between step rows that holds a value
    of a per-step column is refused, naming its line."""
    table, step = loaded.table, loaded.step
    assert step is not None
    null = _null_step(table.column(step))
    if not null.any():
        return
    has = np.flatnonzero(~null)
    if has.size == 0:
        raise LogFormatError(f"no record has a step (column {safe(step)!r} is empty in every "
                             "record); every logged value needs its step", path=str(path),
                             column=step, code=ErrorCode.MISSING_VALUES)
    first, last = int(has[0]), int(has[-1])
    aside = np.flatnonzero(null)
    stepped = table.filter(pa.array(~null))
    key = run_key if run_key in table.column_names else None
    data_cols = {n for n in stepped.column_names if n not in (step, key)
                 and stepped.column(n).null_count < stepped.num_rows}
    where = _positions(path, aside)
    seen: dict[tuple[str | None, str], tuple[Any, str]] = {}
    for i, at in zip(aside.tolist(), where):
        row = table.slice(i, 1).to_pylist()[0]
        held = sorted(k for k, v in row.items() if k in data_cols and _present(v))
        if first < i < last and held:
            raise LogFormatError(
                f"{at} holds {', '.join(repr(safe(h)) for h in held[:3])} but no "
                f"{safe(step)!r}; every logged value needs its step: fill it in or drop that "
                "record", path=str(path), column=step, code=ErrorCode.MISSING_VALUES)
        run = row.get(key) if key else None
        run = None if run is None else str(run)
        tail = i > last
        for k, v in row.items():
            if k in data_cols or k in (step, key) or not _present(v):
                continue
            before = seen.get((run, k))
            if before is not None and before[0] != v:
                raise LogFormatError(
                    f"{safe(k)!r} is set to different values by records without a step "
                    f"({safe(before[0])!r} at {before[1]}, {safe(v)!r} at {at}): a value that "
                    "changes over steps needs its step, and a condition is one value per run",
                    path=str(path), column=k, code=ErrorCode.NOT_CONSTANT_IN_RUN)
            seen[(run, k)] = (v, at)
            parents = k.split(".")[:-1]
            outcome = ((tail and not any(is_config_parent(p) for p in parents))
                       or any(is_summary_parent(p, strict=True) for p in parents))
            if run is None:
                _put_value(loaded, k, v, outcome=outcome)
            else:
                loaded.by_run.setdefault(run, {})[k] = v
                if outcome:
                    loaded.outcomes.add(k)
    loaded.aside += int(aside.size)
    loaded.aside_where += where
    # columns that only the set-aside records had are not per-step columns
    keep = [n for n in stepped.column_names if n in (step, key) or n in data_cols]
    loaded.table = stepped.select(keep)


def _present(v: Any) -> bool:
    return v is not None and not (isinstance(v, float) and v != v)


def _positions(path: Path, rows: np.ndarray) -> list[str]:
    """Where rows ``rows`` (0-based, in read order) are in the file, for people: a line of a
    CSV or JSON-lines file (blank lines skipped as the readers skip them), else a record."""
    kind = TABLE_SUFFIXES.get(path.suffix.lower())
    if kind in ("csv", "tsv"):
        return [f"line {int(r) + 2}" for r in rows]  # line 1 is the header
    if kind == "jsonl":
        wanted = {int(r): k for k, r in enumerate(rows)}
        out = [""] * len(rows)
        rec = -1
        with path.open("rb") as fh:
            for no, line in enumerate(fh, 1):
                if line.strip():
                    rec += 1
                    if rec in wanted:
                        out[wanted[rec]] = f"line {no}"
        return [o or f"record {int(r) + 1}" for o, r in zip(out, rows)]
    return [f"record {int(r) + 1}" for r in rows]


def _name_run_values(loaded: Loaded) -> None:
    """Run values under their own names: ``_meta.wd`` becomes ``wd`` unless another value of a
    different content or a column has that name. A name is an outcome only when every value
    it stands for is one (a summary that copies the config keeps a condition a condition)."""
    columns = set(loaded.table.column_names)

    def rename(values: Mapping[str, Any], outcomes: set[str]) -> tuple[dict[str, Any],
                                                                        dict[str, list[bool]]]:
        leaves: dict[str, list[str]] = {}
        for name in values:
            leaves.setdefault(name.rsplit(".", 1)[-1], []).append(name)
        renamed: dict[str, Any] = {}
        kinds: dict[str, list[bool]] = {}
        for name, value in values.items():
            leaf = name.rsplit(".", 1)[-1]
            same = len({json.dumps(values[n], default=str) for n in leaves[leaf]}) == 1
            new = leaf if same and leaf not in columns else name
            renamed.setdefault(new, value)
            kinds.setdefault(new, []).append(name in outcomes)
        return renamed, kinds

    loaded.run_values, kinds = rename(loaded.run_values, loaded.outcomes)
    outcomes = {n for n, ks in kinds.items() if all(ks)}
    by_run: dict[str, dict[str, Any]] = {}
    for run, vals in loaded.by_run.items():
        by_run[run], k2 = rename(vals, loaded.outcomes)
        outcomes |= {n for n, ks in k2.items() if all(ks)}
    loaded.by_run = by_run
    loaded.outcomes = outcomes


# ------------------------------------------------------------------------------------------
# sidecars: the run's config in a file beside its log
# ------------------------------------------------------------------------------------------

SIDECAR_SUFFIXES = (".yaml", ".yml")


@dataclass
class Sidecar:
    """The scalars of a config file beside a log, flattened (``model.d_model``)."""

    path: Path
    values: dict[str, Any]
    outcomes: set[str]
    skipped: list[str] = field(default_factory=list)  #: keys not read (lists, YAML tags)
    #: the values of a hive partition folder (``wd=0.1/``), not of a config file: a column of
    #: the same name that holds the same value is no news, and one that contradicts it is
    #: refused by the table reader (``HIVE_KEY_CONFLICT``)
    partition: bool = False


def read_sidecar(path: Path) -> Sidecar:
    """A config file (JSON object, or the plain ``key: value`` YAML that Lightning's
    ``hparams.yaml`` is) as its scalars: conditions, except the results a JSON object keeps
    beside a config object or in a summary object. Raises :class:`LogFormatError` naming the
    file when it is neither."""
    if path.suffix.lower() in SIDECAR_SUFFIXES:
        values, skipped = _plain_yaml(path)
        return Sidecar(path, values, set(), skipped)
    data = _loads(_text(path), path)
    if not isinstance(data, dict):
        raise LogFormatError("a config file must hold a JSON object", path=str(path),
                             code=ErrorCode.FILE_UNREADABLE)
    if str(data.get("schema", "")).startswith("grokaudit."):
        raise LogFormatError("a grokaudit result (--json), not a config file", path=str(path),
                             code=ErrorCode.FORMAT_MISMATCH)
    walk = _Walk()
    _walk(data, "", walk, path)
    skipped = sorted([*walk.lists, *walk.other, *(n for n, _ in walk.records)])
    outcomes = set(_scalar_outcomes(data, walk.scalars, by_name=False))
    return Sidecar(path, dict(walk.scalars), outcomes, skipped)


_YAML_LINE = re.compile(r"^(?P<indent> *)(?P<key>[^:#\s][^:#]*?)\s*:(?:\s+(?P<value>.*?))?\s*$")


def _plain_yaml(path: Path) -> tuple[dict[str, Any], list[str]]:
    """The mappings of a plain YAML file (``key: value``, nested by indentation) as dotted
    scalars. Lists (and the keys of their items), tags (``!!python/…``), block scalars and
    anything else are listed as skipped, never guessed; a line that is not ``key: value``
    makes the file unreadable."""
    values: dict[str, Any] = {}
    skipped: list[str] = []
    stack: list[tuple[int, str]] = []
    skip_below: int | None = None  # inside a list, a block scalar: lines indented past this
    lines = _text(path).splitlines()
    body = [ln.split(" #", 1)[0].strip() for ln in lines]
    if [ln for ln in body if ln and not ln.startswith("#") and ln != "---"] == ["{}"]:
        return values, skipped  # an empty mapping (Lightning's hparams.yaml of no hparams)
    for no, raw in enumerate(lines, 1):
        line = raw.split(" #", 1)[0].rstrip()
        if not line.strip() or line.lstrip().startswith("#") or line.strip() == "---":
            continue
        if "\t" in line[:len(line) - len(line.lstrip())]:
            raise LogFormatError(f"line {no} is indented with a tab; grokaudit reads plain YAML "
                                 "mappings only", path=str(path), code=ErrorCode.FILE_UNREADABLE)
        indent = len(line) - len(line.lstrip(" "))
        if skip_below is not None:
            if indent > skip_below or (indent == skip_below and line.lstrip().startswith("- ")):
                continue
            skip_below = None
        if line.lstrip().startswith("- ") or line.lstrip() == "-":
            # a list under the last key: the key and its items are skipped, never merged
            if stack and stack[-1][0] < indent + 1:
                parent = ".".join(k for _, k in stack)
                if parent and parent not in skipped:
                    skipped.append(parent)
            skip_below = indent
            continue
        m = _YAML_LINE.match(line)
        if m is None:
            raise LogFormatError(f"line {no} is not 'key: value'; grokaudit reads plain YAML "
                                 "mappings only", path=str(path),
                                 code=ErrorCode.FILE_UNREADABLE)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        key = ".".join([*(k for _, k in stack), m.group("key").strip().strip("'\"")])
        value = m.group("value")
        if value is None or value == "":
            stack.append((indent, m.group("key").strip().strip("'\"")))
            continue
        parsed = _yaml_scalar(value)
        if parsed is _SKIP:
            skipped.append(key)
            # a block scalar's lines, and what a tagged object or a flow collection holds
            # below it (``criterion: !!python/object:…`` and its attributes): never read as
            # values of the mapping around it
            skip_below = indent
        else:
            values[key] = parsed
    return values, [k for k in skipped if k not in values]


_SKIP = object()


def _yaml_scalar(text: str) -> Any:
    t = text.strip()
    if t.startswith(("!", "&", "*", "[", "{", "|", ">")):
        return _SKIP  # tags, anchors, flow collections, block scalars: not guessed
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"":
        return t[1:-1]
    low = t.lower()
    if low in ("null", "~"):
        return None
    if low in ("true", "false"):
        return low == "true"
    if low.lstrip("+-.") in ("nan", "inf", "infinity"):
        return t  # YAML spells these .nan, .inf: a bare word is text
    for conv in (int, float):
        try:
            return conv(t)
        except ValueError:
            pass
    return t


__all__ = ["CONFIG_OBJECTS", "Loaded", "SIDECAR_NAMES", "Sidecar", "TABLE_SUFFIXES",
           "config_like", "flatten", "load", "read_arrow_file", "read_sidecar"]
