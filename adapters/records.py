"""One tabular file as its logger wrote it: the per-step rows, and what the file holds besides.

Loggers people write by hand put more than per-step rows in a file: a config record first and a
summary record last in a JSON-lines log (``{"_meta": {...}}`` … ``{"_summary": {...}}``), nested
objects, a JSON file of lists (``{"steps": [...], "test_acc": [...], "seed": 3}``), Hugging
Face's ``trainer_state.json`` (``{"log_history": [{...}, ...], "best_metric": ...}``).
:func:`load` reads any of them into a :class:`Loaded`:

* nested objects are flattened to dotted names (``_meta.wd``);
* records without a step are set aside, counted, with where they were — never an error when
  they are the file's head or tail; the scalar fields that no step record has become the run's
  values under their own names (``wd``, not ``_meta.wd``): a head record's are conditions, a
  tail record's (or a summary object's) outcomes;
* a JSON file of lists: the lists as long as the step list are columns, its scalars the run's
  values; lists of another length are set aside with a note.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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
from grokaudit.roles import STEP_NAMES, is_outcome_name, is_summary_parent
from grokaudit.text import safe

TABLE_SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "tsv",
                  ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json"}


@dataclass
class Loaded:
    """A file's per-step rows (``table``, flattened, every row with a step) and the rest."""

    table: pa.Table
    step: str | None  #: the step column's name in ``table`` (None: no step column found)
    #: per-run values found outside the step rows (head/tail records, top-level scalars)
    run_values: dict[str, Any] = field(default_factory=dict)
    outcomes: set[str] = field(default_factory=set)  #: names in run_values that are outcomes
    aside: int = 0  #: records (rows) set aside: they have no step
    aside_where: list[str] = field(default_factory=list)  #: where they were ("line 1", …)
    notes: list[str] = field(default_factory=list)  #: what was not read, and why
    sidecars: list[str] = field(default_factory=list)  #: config files whose values were read
    #: the file holds no per-step values, only scalars (a config or a summary file)
    scalars_only: bool = False


def read_arrow_file(path: Path, rename: Mapping[str, str] | None = None) -> pa.Table:
    """The file as Arrow, by its suffix (JSON and JSON lines not flattened yet)."""
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
            data = path.read_bytes()
            # Arrow's reader is fast, but it crashes the process on a file holding a bare
            # `null` line and reads a `null` among records as an empty row: it only sees files
            # whose every line is an object; the others are parsed line by line, which names
            # the first line that is not one
            if all(line.lstrip()[:1] == b"{" for line in data.split(b"\n") if line.strip()):
                try:
                    return pajson.read_json(io.BytesIO(data))
                except (pa.ArrowInvalid, pa.ArrowTypeError):
                    pass  # a value whose type changes between records: parsed line by line
            return _jsonl_by_line(path)
        return _json_document(path, rename)
    except LogFormatError:
        raise
    except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError, OSError) as exc:
        raise _unreadable(path, kind, exc) from None


def _unreadable(path: Path, kind: str, exc: BaseException) -> LogFormatError:
    # the parser's message may quote the offending line of the log: escape it, cut it short
    msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    msg = safe(msg if len(msg) <= 200 else msg[:200] + "…")
    return LogFormatError(f"cannot read as {kind}: {msg}; fix that line or the file type",
                          path=str(path), code=ErrorCode.FILE_UNREADABLE)


def _jsonl_by_line(path: Path) -> pa.Table:
    """JSON lines parsed one by one (when Arrow's reader refuses a column whose type changes
    between records): each line must be an object; a bad one is named by its line number."""
    records: list[dict[str, Any]] = []
    with path.open("r", encoding="utf-8", errors="strict") as fh:
        for no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError as exc:
                raise LogFormatError(f"line {no} is not JSON ({safe(exc)}); fix that line",
                                     path=str(path), code=ErrorCode.FILE_UNREADABLE) from None
            if not isinstance(rec, dict):
                kind = {list: "list", str: "string", bool: "boolean", type(None): "null"}.get(
                    type(rec), "number")
                raise LogFormatError(f"line {no} is a JSON {kind}, not an object (one record "
                                     "per line)", path=str(path), code=ErrorCode.FILE_UNREADABLE)
            records.append(rec)
    return _records_table(records, path)


def _records_table(records: list[dict[str, Any]], path: Path) -> pa.Table:
    """A list of records (dicts, possibly nested) as an Arrow table with dotted names."""
    if not records:
        return pa.table({})
    # a media or table reference ({"_type": "image-file", ...}) stays one value, serialized:
    # it is set aside as non-scalar, never flattened into fields that look like values
    records = [{k: json.dumps(v) if isinstance(v, dict) and "_type" in v else v
                for k, v in r.items()} for r in records]
    df = pd.json_normalize(records, sep=".")
    cols: dict[str, pa.Array] = {}
    for name in df.columns:
        s = df[name]
        try:
            cols[str(name)] = pa.array(s.tolist(), from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            # numbers in some records, text in others: kept as text (refused where it matters)
            cols[str(name)] = pa.array([None if v is None or (isinstance(v, float) and v != v)
                                        else json.dumps(v) if isinstance(v, (list, dict))
                                        else str(v) for v in s.tolist()], type=pa.string())
    return pa.table(cols)


# ------------------------------------------------------------------------------------------
# a JSON document: records, a dict of lists, pandas' layouts
# ------------------------------------------------------------------------------------------

@dataclass
class _Walk:
    scalars: dict[str, Any] = field(default_factory=dict)
    lists: dict[str, list[Any]] = field(default_factory=dict)
    records: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)
    other: list[str] = field(default_factory=list)


def _walk(obj: Mapping[str, Any], prefix: str, out: _Walk) -> None:
    for k, v in obj.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            if v:
                _walk(v, name + ".", out)
        elif isinstance(v, list):
            if v and all(isinstance(x, dict) for x in v):
                out.records.append((name, v))
            elif all(x is None or isinstance(x, (int, float, str, bool)) for x in v):
                out.lists[name] = v
            else:
                out.other.append(name)
        else:
            out.scalars[name] = v


def _json_document(path: Path, rename: Mapping[str, str] | None = None) -> pa.Table:
    """A ``.json`` file as a table of step rows. Its other contents (scalars, lists of another
    length) are kept for :func:`load` in the table's metadata."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise _unreadable(path, "json", exc) from None
    except ValueError as exc:
        raise LogFormatError(f"not JSON ({safe(exc)}); fix the file", path=str(path),
                             code=ErrorCode.FILE_UNREADABLE) from None
    if isinstance(data, list):
        if not all(isinstance(x, dict) for x in data):
            raise LogFormatError("a JSON list whose items are not all objects; a log is a list "
                                 "of records or an object of lists", path=str(path),
                                 code=ErrorCode.FILE_UNREADABLE)
        return _records_table(data, path)
    if not isinstance(data, dict):
        raise LogFormatError(f"a JSON {type(data).__name__}, not an object or a list of "
                             "records", path=str(path), code=ErrorCode.FILE_UNREADABLE)
    if data and all(isinstance(v, dict) and v and all(str(k).lstrip("-").isdigit() for k in v)
                    for v in data.values()):
        # pandas' default layout (df.to_json()): {"column": {"row": value}}
        return pa.Table.from_pandas(pd.DataFrame(data), preserve_index=False)
    if set(data) >= {"columns", "data"} and isinstance(data["columns"], list):
        return pa.Table.from_pandas(pd.DataFrame(data["data"], columns=data["columns"]),
                                    preserve_index=False)
    walk = _Walk()
    _walk(data, "", walk)
    info: dict[str, Any] = {"scalars": walk.scalars, "other": list(walk.other),
                            "outcomes": _scalar_outcomes(data, walk.scalars)}
    if walk.records:
        table = _records_table([r for _, recs in walk.records for r in recs], path)
        info["other"] += sorted(walk.lists)
        return _with_info(table, info)
    if not walk.lists:  # scalars only: a config file, or a summary beside a log
        return _with_info(pa.table({}), info)
    return _with_info(_lists_table(walk.lists, rename, info), info)


def _with_info(table: pa.Table, info: Mapping[str, Any]) -> pa.Table:
    return table.replace_schema_metadata({b"grokaudit.json": json.dumps(info, default=str)
                                          .encode()})


#: Objects of a JSON file or sidecar whose scalars are the run's conditions; beside one, the
#: file's other scalars are results (``{"config": {...}, "grok_step": 900}``).
CONFIG_OBJECTS = ("config", "args", "hparams", "params", "cfg", "settings", "hyperparameters",
                  "hyper_parameters", "_meta", "meta")


def _scalar_outcomes(data: Mapping[str, Any], scalars: Mapping[str, Any]) -> list[str]:
    """Which scalars of a JSON document are outcomes: beside a config object, every scalar
    outside it; otherwise those whose name says so (:func:`is_outcome_name`)."""
    has_config = any(isinstance(data.get(k), dict) for k in CONFIG_OBJECTS)
    out = []
    for name in scalars:
        top = name.split(".", 1)[0]
        if has_config:
            if top not in CONFIG_OBJECTS or is_summary_parent(name):
                out.append(name)
        elif is_outcome_name(name):
            out.append(name)
    return out


def _lists_table(lists: Mapping[str, list[Any]], rename: Mapping[str, str] | None,
                 info: dict[str, Any]) -> pa.Table:
    """A dict of lists as step rows. Lists of one length are one cadence, stepped by the step
    list among them (``history.eval_epochs``); several cadences (accuracy every 100 steps, a
    metric every 500) are stacked on one step column, joined later without interpolation.
    Lists of a length that has no step list are set aside (``info["other"]``); with no step
    list at all, the lists of the most common length are kept so that ``--map KEY=step`` can
    name one."""
    ren = rename or {}
    by_len: dict[int, list[str]] = {}
    for name, vals in lists.items():
        by_len.setdefault(len(vals), []).append(name)
    stepped = {n: step for n, names in by_len.items()
               if (step := _find_step([ren.get(k, k) for k in names], lists=True)) is not None}
    inv = {ren.get(k, k): k for k in lists}
    if not stepped:
        n = max(by_len, key=lambda x: (len(by_len[x]), x))
        if n < 3 or len(by_len[n]) < 2:
            # a short list or a lone list (``"betas": [0.9, 0.98]``) is a setting, not a
            # series: the document is a config or a summary
            info["other"] += sorted(lists)
            return pa.table({})
        keep = {n: None}
    else:
        keep = {n: inv[s] for n, s in stepped.items()}
    # the primary cadence: the one holding the test accuracy, else the longest
    primary = max(keep, key=lambda n: (any("test" in k or "val" in k for k in by_len[n]), n))
    step_name = keep[primary]
    cols: dict[str, list[Any]] = {}
    total = sum(keep)
    offset = 0
    for n in sorted(keep, key=lambda x: x != primary):
        for name in by_len[n]:
            target = step_name if (keep[n] is not None and name == keep[n]) else name
            col = cols.setdefault(target, [None] * total)
            col[offset:offset + n] = lists[name]
        offset += n
    for n, names in by_len.items():
        if n not in keep:
            info["other"] += names
            info.setdefault("lengths", {}).update({k: n for k in names})
    out: dict[str, pa.Array] = {}
    for name, vals in cols.items():
        try:
            out[name] = pa.array(vals, from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            out[name] = pa.array([None if v is None else str(v) for v in vals],
                                 type=pa.string())
    info["dict_of_lists"] = True
    if len(keep) > 1:
        info["cadences"] = {str(keep[n]): n for n in sorted(keep)}
    return pa.table(out)


# ------------------------------------------------------------------------------------------
# load: flatten, rename, find the step, set aside the records without one
# ------------------------------------------------------------------------------------------

_STEPLIKE = re.compile(r"(^|_)(steps?|epochs?|iters?|iterations?)$", re.IGNORECASE)


def _find_step(names: list[str], *, lists: bool = False) -> str | None:
    """The step column among ``names``: the first of :data:`STEP_NAMES`, by full name, then by
    the last component of a flattened name (``history.steps``); among the lists of a JSON
    document (``lists``), also a name ending in one of them (``eval_epochs``)."""
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


def flatten(table: pa.Table) -> pa.Table:
    """Nested objects (struct columns) as dotted columns (``_meta.wd``), however deep. An
    object with a ``_type`` field (a W&B media or table reference: an image's path, size,
    digest) is not a set of values: it stays one column, set aside as non-scalar."""
    while any(pa.types.is_struct(f.type) and not _typed(f.type) for f in table.schema):
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
    return table


def _typed(t: pa.DataType) -> bool:
    return bool(pa.types.is_struct(t) and t.get_field_index("_type") >= 0)


def load(path: Path, rename: Mapping[str, str] | None = None,
         sidecars: Sequence[Sidecar] = ()) -> Loaded:
    """Read one tabular file as its step rows and its other contents (module docstring).

    ``rename`` renames columns before the step is looked for (``--map iteration=step``).
    ``sidecars`` (farthest first) are config files beside the log: their scalars are run
    values too, overridden by the file's own. Raises :class:`LogFormatError` naming the
    file."""
    raw = read_arrow_file(path, rename)
    meta = (raw.schema.metadata or {}).get(b"grokaudit.json")
    extras = json.loads(meta) if meta else {}
    table = flatten(raw.replace_schema_metadata(None))
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
    for sc in sidecars:
        for k, v in sc.values.items():
            _put_value(loaded, k, v, outcome=k in sc.outcomes)
        loaded.sidecars.append(str(sc.path))
        if sc.skipped:
            shown = ", ".join(repr(safe(k)) for k in sc.skipped[:5])
            loaded.notes.append(f"{safe(sc.path.name)}: {len(sc.skipped)} entr"
                                f"{'y' if len(sc.skipped) == 1 else 'ies'} that are no scalar "
                                f"not read: {shown}{', …' if len(sc.skipped) > 5 else ''}")
    declared = set(extras.get("outcomes") or ())
    for k, v in extras.get("scalars", {}).items():
        _put_value(loaded, k, v, outcome=k in declared)
    if extras.get("other"):
        shown = ", ".join(repr(safe(n)) for n in extras["other"][:5])
        more = ", …" if len(extras["other"]) > 5 else ""
        lengths = extras.get("lengths") or {}
        why = (" (lists of another length than the steps)" if lengths else
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
    loaded.scalars_only = table.num_columns == 0 and bool(extras.get("scalars"))
    if step is not None and table.num_rows:
        _set_aside(loaded, path)
    _name_run_values(loaded)
    return loaded


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


def _put_value(loaded: Loaded, name: str, value: Any, *, outcome: bool) -> None:
    """Record a run value. A condition already known is never turned into an outcome by a
    later record repeating it (a summary record that copies the config: its ``weight_decay``
    is still the condition the run was trained under); the earlier value is kept."""
    if isinstance(value, (list, dict)):
        return
    if outcome and name in loaded.run_values and name not in loaded.outcomes:
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


def _set_aside(loaded: Loaded, path: Path) -> None:
    """Rows without a step: the head and tail records are set aside (their fields that no step
    row has become run values); a record without a step between step rows that holds a value
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
    data_cols = {n for n in stepped.column_names if n != step
                 and stepped.column(n).null_count < stepped.num_rows}
    where = _positions(path, aside)
    for i, at in zip(aside.tolist(), where):
        row = table.slice(i, 1).to_pylist()[0]
        held = sorted(k for k, v in row.items() if k in data_cols and _present(v))
        if first < i < last and held:
            raise LogFormatError(
                f"{at} holds {', '.join(repr(safe(h)) for h in held[:3])} but no "
                f"{safe(step)!r}; every logged value needs its step: fill it in or drop that "
                "record", path=str(path), column=step, code=ErrorCode.MISSING_VALUES)
        tail = i > last
        for k, v in row.items():
            if k in data_cols or k == step or not _present(v):
                continue
            _put_value(loaded, k, v, outcome=tail or is_outcome_name(k))
    loaded.aside += int(aside.size)
    loaded.aside_where += where
    # columns that only the set-aside records had are not per-step columns
    keep = [n for n in stepped.column_names if n == step or n in data_cols]
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
    different content or a column has that name; a value under a summary object
    (``_summary.x``) is an outcome — unless a condition of the same name says the same (a
    summary that copies the config)."""
    leaves: dict[str, list[str]] = {}
    for name in loaded.run_values:
        leaves.setdefault(name.rsplit(".", 1)[-1], []).append(name)
    columns = set(loaded.table.column_names)
    renamed: dict[str, Any] = {}
    kinds: dict[str, list[bool]] = {}  # new name -> is-outcome of each contributor
    for name, value in loaded.run_values.items():
        leaf = name.rsplit(".", 1)[-1]
        parents = name.split(".")[:-1]
        same = len({json.dumps(loaded.run_values[n], default=str) for n in leaves[leaf]}) == 1
        new = leaf if same and leaf not in columns else name
        renamed.setdefault(new, value)
        outcome = name in loaded.outcomes or any(is_summary_parent(p) for p in parents)
        kinds.setdefault(new, []).append(outcome)
    loaded.run_values = renamed
    loaded.outcomes = {n for n, ks in kinds.items() if all(ks)}


# ------------------------------------------------------------------------------------------
# sidecars: the run's config in a file beside its log
# ------------------------------------------------------------------------------------------

#: Config files loggers write beside a run's log (Lightning's ``hparams.yaml``, a training
#: script's ``config.json`` or ``args.json``), whose scalars are the run's conditions.
SIDECAR_NAMES = ("hparams.yaml", "hparams.yml", "hparams.json", "config.json", "config.yaml",
                 "config.yml", "args.json", "args.yaml", "params.json", "params.yaml",
                 "hyperparameters.json", "run_config.json", "meta.json")
SIDECAR_SUFFIXES = (".yaml", ".yml")


@dataclass
class Sidecar:
    """The scalars of a config file beside a log, flattened (``model.d_model``)."""

    path: Path
    values: dict[str, Any]
    outcomes: set[str]
    skipped: list[str] = field(default_factory=list)  #: keys not read (lists, YAML tags)


def read_sidecar(path: Path) -> Sidecar:
    """A config file (JSON object, or the plain ``key: value`` YAML that Lightning's
    ``hparams.yaml`` is) as its scalars. Raises :class:`LogFormatError` naming the file when
    it is neither."""
    if path.suffix.lower() in SIDECAR_SUFFIXES:
        values, skipped = _plain_yaml(path)
        return Sidecar(path, values, {k for k in values if is_outcome_name(k)}, skipped)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise LogFormatError(f"not JSON ({safe(exc)}); fix the file", path=str(path),
                             code=ErrorCode.FILE_UNREADABLE) from None
    if not isinstance(data, dict):
        raise LogFormatError("a config file must hold a JSON object", path=str(path),
                             code=ErrorCode.FILE_UNREADABLE)
    walk = _Walk()
    _walk(data, "", walk)
    skipped = sorted([*walk.lists, *walk.other, *(n for n, _ in walk.records)])
    return Sidecar(path, dict(walk.scalars), set(_scalar_outcomes(data, walk.scalars)),
                   skipped)


_YAML_LINE = re.compile(r"^(?P<indent> *)(?P<key>[^:#\s][^:#]*?)\s*:(?:\s+(?P<value>.*?))?\s*$")


def _plain_yaml(path: Path) -> tuple[dict[str, Any], list[str]]:
    """The mappings of a plain YAML file (``key: value``, nested by indentation) as dotted
    scalars. Lists, tags (``!!python/…``) and anything else are listed as skipped, never
    guessed; a line that is not ``key: value`` makes the file unreadable."""
    values: dict[str, Any] = {}
    skipped: list[str] = []
    stack: list[tuple[int, str]] = []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LogFormatError(f"cannot read ({safe(exc)})", path=str(path),
                             code=ErrorCode.FILE_UNREADABLE) from None
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.split(" #", 1)[0].rstrip()
        if not line.strip() or line.lstrip().startswith("#") or line.strip() == "---":
            continue
        if line.lstrip().startswith("- "):  # a list item: its key is already skipped
            continue
        m = _YAML_LINE.match(line)
        if m is None:
            raise LogFormatError(f"line {no} is not 'key: value'; grokaudit reads plain YAML "
                                 "mappings only", path=str(path),
                                 code=ErrorCode.FILE_UNREADABLE)
        indent = len(m.group("indent"))
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
        else:
            values[key] = parsed
    return values, skipped


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
