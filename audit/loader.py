"""The one loader: the log paths a command is given → one canonical Arrow table.

``read_any`` serves ``audit_path``, ``check``, ``report`` and every claim command, so they all
read the same things the same way: a canonical table (Parquet, CSV, TSV, JSONL) or a folder of
Parquet shards directly, anything else through the :class:`~grokaudit.readers.LogReader` it is
passed (``readers``: the adapters' registry, :data:`~grokaudit.readers.ADAPTERS`, by default;
imported only then). Several paths (files or folders, mixed formats) are read one by one and
merged by run (:func:`merge_tables`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, overload

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute  # noqa: F401 - pa.compute

from .canonical import canonical_names as canonical_names
from .canonical import is_canonical as is_canonical
from .errors import ConfigError, ErrorCode, LogFormatError
from .limits import DEFAULT_LIMITS, Limits, check_declared
from .readers import ADAPTERS, LogReader
from .schema import (
    ACCURACY_COLUMNS,
    KNOWN_SERIES,
    REQUIRED,
    ParquetSource,
    is_known_metric,
    read_arrow,
)
from .shards import (
    PROVENANCE_KEY,
    provenance_of,
    refuse_special_file,
    refuse_unreadable_entries,
    run_id_text,
)
from .text import safe

PathLike = str | os.PathLike[str]

CANONICAL_SUFFIXES = (".parquet", ".pq", ".csv", ".tsv", ".jsonl", ".ndjson")


def read_any(paths: PathLike | Sequence[PathLike], fmt: str | None = None, *,
             mapping: Mapping[str, str] | None = None, run_from: str | None = None,
             cond: Mapping[str, str] | None = None, on_duplicate: str = "error",
             partial: bool = False, limits: Limits | None = DEFAULT_LIMITS,
             readers: LogReader = ADAPTERS, layout: Mapping[str, Any] | None = None
             ) -> pa.Table:
    """Read the log at ``paths`` (one path, or several to merge) as one canonical Arrow table
    (provenance in its metadata).

    ``fmt`` names an adapter (``grokaudit formats``); ``mapping``/``run_from``/``cond`` are the
    adapters' ``--map``/``--run-from``/``--cond`` (applied to every path). Several paths are
    merged by run with :func:`merge_tables` (``on_duplicate`` resolves conflicting rows).
    ``partial`` reads a log that lacks the test accuracy (``grokaudit inspect`` says so
    instead of refusing). ``limits`` caps the rows and columns each input may declare in its
    Parquet metadata, checked before it is read (``TOO_LARGE``; ``None``: no cap).
    ``readers`` reads every path that is not a canonical table (the adapters' registry by
    default). ``layout``: the shape options (``--long``, ``--columns``, ``--conditions-from``,
    ``--on``), passed to the readers. Raises :class:`LogFormatError`.
    """
    if isinstance(paths, (str, os.PathLike)):
        return _read_one(paths, fmt, mapping, run_from, cond, partial=partial, limits=limits,
                         readers=readers, on_duplicate=on_duplicate, layout=layout)
    items = list(paths)
    if not items:
        raise LogFormatError("no log path given", code=ErrorCode.FILE_NOT_FOUND)
    if len(items) == 1:
        return _read_one(items[0], fmt, mapping, run_from, cond, partial=partial,
                         limits=limits, readers=readers, on_duplicate=on_duplicate,
                         layout=layout)
    _refuse_repeated_paths(items)
    # each path may be a part of the log (one holds the accuracy, another the metric): the
    # merged table is validated as a whole by the audit
    for p in items:  # every input's size before any is read
        check_declared(p, limits)
    tables = [_read_one(p, fmt, mapping, run_from, cond, partial=True, limits=None,
                        readers=readers, on_duplicate=on_duplicate, layout=layout)
              for p in items]
    if cond and not partial:  # a --cond that no run of any input takes: a typo, refused
        for key, pattern in cond.items():
            if not any(key in t.column_names and t.column(key).null_count < t.num_rows
                       for t in tables):
                raise ConfigError(
                    f"--cond {safe(key)}={safe(pattern)!r} matches the path of no run of the "
                    f"{len(items)} inputs; fix the pattern (`grokaudit inspect` shows the runs' "
                    "paths)", option="--cond", code=ErrorCode.INVALID_OPTION)
    return merge_tables(tables, [str(p) for p in items], on_duplicate=on_duplicate)


def _refuse_repeated_paths(items: Sequence[PathLike]) -> None:
    """One file or folder given twice (under two names) is refused: it would merge with
    itself."""
    seen: dict[tuple[int, int], str] = {}
    for p in items:
        try:
            st = os.stat(p)
        except OSError:
            continue
        key = (st.st_dev, st.st_ino)
        if key in seen:
            raise LogFormatError(f"given twice (also as {safe(seen[key])}); name each log once",
                                 path=str(p), code=ErrorCode.INCOMPATIBLE_INPUTS)
        seen[key] = str(p)


def read_source(paths: PathLike | Sequence[PathLike], fmt: str | None = None, *,
                mapping: Mapping[str, str] | None = None, run_from: str | None = None,
                cond: Mapping[str, str] | None = None, on_duplicate: str = "error",
                limits: Limits | None = DEFAULT_LIMITS,
                readers: LogReader = ADAPTERS, layout: Mapping[str, Any] | None = None
                ) -> pa.Table | ParquetSource:
    """:func:`read_any` for an audit that validates the log once and drops the input: a
    single canonical Parquet file comes back as a :class:`ParquetSource`, which validation
    reads column by column (hand it over with :class:`~grokaudit.schema.Owned`); any other
    input is read whole, as by :func:`read_any`."""
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if len(items) == 1:
        return _read_one(items[0], fmt, mapping, run_from, cond, lazy=True, limits=limits,
                         readers=readers, on_duplicate=on_duplicate, layout=layout)
    return read_any(paths, fmt, mapping=mapping, run_from=run_from, cond=cond,
                    on_duplicate=on_duplicate, limits=limits, readers=readers, layout=layout)


@overload
def _read_one(path: PathLike, fmt: str | None, mapping: Mapping[str, str] | None,
              run_from: str | None, cond: Mapping[str, str] | None, *,
              partial: bool = False, lazy: Literal[False] = False,
              limits: Limits | None = None, readers: LogReader = ADAPTERS,
              on_duplicate: str = "error", layout: Mapping[str, Any] | None = None
              ) -> pa.Table: ...


@overload
def _read_one(path: PathLike, fmt: str | None, mapping: Mapping[str, str] | None,
              run_from: str | None, cond: Mapping[str, str] | None, *,
              partial: bool = False, lazy: bool,
              limits: Limits | None = None, readers: LogReader = ADAPTERS,
              on_duplicate: str = "error", layout: Mapping[str, Any] | None = None
              ) -> pa.Table | ParquetSource: ...


def _read_one(path: PathLike, fmt: str | None, mapping: Mapping[str, str] | None,
              run_from: str | None, cond: Mapping[str, str] | None, *,
              partial: bool = False, lazy: bool = False,
              limits: Limits | None = None, readers: LogReader = ADAPTERS,
              on_duplicate: str = "error", layout: Mapping[str, Any] | None = None
              ) -> pa.Table | ParquetSource:
    """One path as a canonical table; with ``lazy``, a canonical Parquet file as a
    :class:`ParquetSource` (a folder of shards and every other input are read whole).
    ``limits``: checked from the metadata first (:func:`~grokaudit.limits.check_declared`).
    ``on_duplicate`` reaches the reader of a non-canonical input (a canonical table is
    resolved by its validation, by the same rule)."""
    p = Path(path)
    if not p.exists():
        raise LogFormatError("no such file or directory; check the path", path=str(p),
                             code=ErrorCode.FILE_NOT_FOUND)
    refuse_special_file(p)
    if p.is_dir():
        refuse_unreadable_entries(p)  # a log under a dangling link or a FIFO: never left out
    check_declared(p, limits)
    shape = {k: v for k, v in (layout or {}).items() if v}
    adapter_opts = bool(fmt or mapping or run_from or cond or shape)
    if not adapter_opts and is_canonical(p):
        return read_arrow(p, lazy=lazy and p.is_file() and p.suffix.lower() in (".parquet",
                                                                               ".pq"))
    if not adapter_opts and p.is_dir():
        from .dataset import hive_dataset

        ds = hive_dataset(p)  # canonical files in partition folders: read as they are
        if ds is not None:
            return ds.read_all()
    # every other log, a single file without a run column included (one run named by its
    # path), goes through the same readers in every command
    maps = dict(mapping) if mapping else None
    conds = dict(cond) if cond else None
    # (on_duplicate and layout passed only when they say something: see LogReader)
    more: dict[str, Any] = {"on_duplicate": on_duplicate} if on_duplicate != "error" else {}
    if shape:
        more["layout"] = shape
    from .limits import column_cap

    # limits: what files declare was checked above; columns found record by record are
    # capped as they are read
    with column_cap(limits.max_columns if limits is not None else None):
        return readers(p, fmt, mapping=maps, run_from=run_from, cond=conds, partial=partial,
                       limits=None, **more)


def _is_series(name: str) -> bool:
    return (name in REQUIRED or name in ACCURACY_COLUMNS or name in KNOWN_SERIES
            or is_known_metric(name))


def _path_run_ids(tables: Sequence[pa.Table], sources: Sequence[str],
                  provs: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Run ids named by file names that two inputs share (``r1/metrics.csv`` and
    ``r3/metrics.csv`` are both "metrics") are two runs, never one: they are renamed by their
    path from the inputs' common folder (``r1/metrics``, ``r3/metrics``)."""
    out: list[dict[str, str]] = [{} for _ in tables]
    by_path = [k for k, p in enumerate(provs) if p.get("path_run_ids")]
    ids = {k: set(run_id_text(pa.compute.unique(tables[k].column("run"))).to_pylist())
           for k in by_path}
    seen: dict[str, int] = {}
    clash = False
    for k in by_path:
        for r in ids[k]:
            clash |= r in seen and seen[r] != k
            seen.setdefault(r, k)
    if not clash:
        return out
    paths = {k: Path(sources[k]).resolve() for k in by_path}
    common = Path(os.path.commonpath([str(p if p.is_dir() else p.parent)
                                      for p in paths.values()]))
    for k in by_path:
        rel = paths[k].relative_to(common)
        if paths[k].is_file():
            new = rel.with_suffix("").as_posix()
            out[k] = {r: new for r in ids[k]}
        else:
            out[k] = {r: f"{rel.as_posix()}/{r}" if rel.parts else r for r in ids[k]}
    return out


def _unify_types(df: pd.DataFrame, tables: Sequence[pa.Table], sources: Sequence[str]) -> None:
    """A column that is numbers in one input and text in another: read as numbers when every
    text is a plain decimal (``0.1`` here, ``"0.10"`` there: one setting written by two files),
    else refused naming the column, the files and both types (in place)."""
    from .identity import _number

    for c in df.columns:
        if df[c].dtype != object:
            continue
        vals = df[c].dropna().tolist()
        texts = [v for v in vals if isinstance(v, str)]
        if not texts or len(texts) == len(vals):
            continue  # text only (or nothing): a text column
        if all(_number(v) is not None for v in vals):
            df[c] = [np.nan if v is None or (isinstance(v, float) and v != v) else _number(v)
                     for v in df[c].tolist()]
            continue
        kinds: dict[str, str] = {}
        for t, src in zip(tables, sources):
            if c in t.column_names:
                kinds.setdefault(str(t.schema.field(c).type), src)
        shown = "; ".join(f"{typ} in {safe(src)}" for typ, src in kinds.items())
        raise LogFormatError(f"column {safe(c)!r} holds numbers in one input and text in "
                             f"another ({shown}); convert one of them", path=", ".join(sources),
                             column=str(c), code=ErrorCode.INCOMPATIBLE_INPUTS)


def _collision_hint(rows: pd.DataFrame, bad: pd.DataFrame, sources: Sequence[str]) -> str:
    """How to resolve conflicting rows: when one run id holds different values in different
    inputs, they are most likely different runs that share an id (``seed0`` in every
    condition's folder), and choosing one copy would silently drop a run."""
    first_run = bad.index[0][0]
    srcs = sorted(set(rows.loc[rows["run"] == first_run, "__src"].tolist()))
    if len(srcs) > 1:
        named = " and ".join(safe(sources[k]) for k in srcs[:2])
        return (f": run {safe(first_run)!r} is in {named} with different values — most likely "
                "different runs that share an id; name runs by their file with --run-from path "
                "(one run per file), or give the runs distinct ids; pass --on-duplicate "
                "first|last only if the inputs are copies of the same runs")
    return "; pass --on-duplicate first|last to choose"


def merge_tables(tables: Sequence[pa.Table], sources: Sequence[str], *,
                 on_duplicate: str = "error") -> pa.Table:
    """Merge canonical tables read from several paths into one, by run.

    Rows of one run may come from several sources (a run split over files, or one file per
    metric as in a W&B panel export): rows with the same ``(run, step)`` are joined column by
    column — a value present in one source fills the gap in another, identical values are kept
    once, and two different values are a conflict: ``DUPLICATE_ROWS`` (exit 2) unless
    ``on_duplicate`` is ``first`` or ``last`` (the source named first or last wins). A condition
    column (constant within each run where present) that only some sources carry is filled for
    the whole run. Provenance is merged (sources, findings, downsampled runs; ``rows_joined``:
    the rows read that were joined into another input's row); sources that disagree on the
    step unit are refused (``INCOMPATIBLE_INPUTS``).
    """
    provs = [provenance_of(t.schema, src) for t, src in zip(tables, sources)]
    _refuse_mixed_step_units(provs, sources)
    df = _stacked(tables, sources, provs)
    key = ["run", "step"]
    cols = [c for c in df.columns if c not in (*key, "__src")]
    df, resolved = _join_rows(df, cols, sources, on_duplicate)
    _fill_partial_conditions(df, cols)
    df = df.sort_values(key, kind="stable").reset_index(drop=True)
    # rows of one (run, step) in several inputs became one row: they were read all the same
    # (joined, or, holding different values, set aside by --on-duplicate: counted apart)
    joined = sum(t.num_rows for t in tables) - len(df) - resolved
    _unify_types(df, tables, sources)
    try:
        table = pa.Table.from_pandas(df, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise LogFormatError(f"the inputs cannot be merged into one table ({safe(exc)}); "
                             "convert them to one schema", path=", ".join(sources),
                             code=ErrorCode.INCOMPATIBLE_INPUTS) from None
    merged = _merged_provenance(provs, sources, joined)
    if resolved:
        add_resolved(merged, on_duplicate, resolved)
    meta = {PROVENANCE_KEY: json.dumps(merged, sort_keys=True, default=str).encode()}
    return table.replace_schema_metadata(meta)


def _refuse_mixed_step_units(provs: Sequence[Mapping[str, Any]], sources: Sequence[str]) -> None:
    units = {p.get("step_unit", "steps") for p in provs}
    if len(units) > 1:
        raise LogFormatError(f"the inputs count steps in different units ({sorted(units)}); "
                             "audit them separately or convert one", path=", ".join(sources),
                             code=ErrorCode.INCOMPATIBLE_INPUTS)


def _stacked(tables: Sequence[pa.Table], sources: Sequence[str],
             provs: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Every input's rows in one frame, run ids renamed where two inputs share a file name
    (:func:`_path_run_ids`), each row's input index in ``__src``."""
    frames = []
    renames = _path_run_ids(tables, sources, provs)
    for k, t in enumerate(tables):
        df = t.to_pandas()
        df["run"] = df["run"].astype(str)
        if renames[k]:
            df["run"] = df["run"].map(renames[k])
        df["__src"] = k
        frames.append(df)
    try:
        stacked: pd.DataFrame = pd.concat(frames, ignore_index=True, sort=False)
    except (TypeError, ValueError) as exc:  # pragma: no cover - concat rarely refuses
        raise LogFormatError(f"the inputs cannot be merged ({exc})", path=", ".join(sources),
                             code=ErrorCode.INCOMPATIBLE_INPUTS) from None
    return stacked


@dataclass
class JoinedRows:
    """Rows of one key joined by :func:`join_duplicate_rows`: ``frame`` (one row per key,
    unless the conflicts were left unresolved), ``conflicts`` (per conflicting key, the number
    of different values of each column) and ``resolved`` (the rows of conflicting keys that
    ``first``/``last`` dropped)."""

    frame: pd.DataFrame
    conflicts: pd.DataFrame
    resolved: int = 0


def join_duplicate_rows(df: pd.DataFrame, key: Sequence[str], cols: Sequence[str],
                        on_duplicate: str, order: str | None = None) -> JoinedRows:
    """The one rule for rows of one key (``(run, step)``), in every reader: they are joined
    column by column — a value fills another row's gap, identical values are kept once — and
    two different values in one column are a conflict: with ``on_duplicate="error"`` they are
    returned unresolved (``conflicts``; the caller refuses them, ``DUPLICATE_ROWS``); with
    ``first`` or ``last``, the first or last value present (in the frame's order, or by the
    column ``order``) wins, column by column. Returns the rows in ``key`` and ``cols``."""
    key, cols = list(key), list(cols)
    dup = df.duplicated(key, keep=False).to_numpy()
    if not dup.any():
        return JoinedRows(df[[*key, *cols]], pd.DataFrame())
    sub = df[dup] if order is None else df[dup].sort_values([*key, order], kind="stable")
    groups = sub.groupby(key, sort=False, dropna=False)
    nun = groups[cols].nunique(dropna=True)
    bad = nun[(nun > 1).any(axis=1)]
    if len(bad) and on_duplicate == "error":
        return JoinedRows(df[[*key, *cols]], bad)
    g = groups[cols]
    joined = (g.last() if on_duplicate == "last" else g.first()).reset_index()
    resolved = int((groups.size().loc[bad.index] - 1).sum()) if len(bad) else 0
    out: pd.DataFrame = pd.concat([df.loc[~dup, [*key, *cols]], joined], ignore_index=True,
                                  sort=False)
    return JoinedRows(out, bad, resolved)


def _join_rows(df: pd.DataFrame, cols: list[str], sources: Sequence[str],
               on_duplicate: str) -> tuple[pd.DataFrame, int]:
    """Rows of one (run, step) joined by :func:`join_duplicate_rows` (the input named first
    is first): two different values are ``DUPLICATE_ROWS`` unless ``on_duplicate`` chooses
    ``first`` or ``last``. Returns the frame without ``__src`` and the rows that choice
    resolved."""
    j = join_duplicate_rows(df, ["run", "step"], cols, on_duplicate, order="__src")
    bad = j.conflicts
    if len(bad) and on_duplicate == "error":
        col = next(c for c in cols if (bad[c] > 1).any())
        ex = ", ".join(f"{safe(r)}@{s}" for r, s in list(bad.index[:3]))
        sub = df[df.duplicated(["run", "step"], keep=False).to_numpy()]
        raise LogFormatError(
            f"{len(bad)} (run, step) rows hold different values in different inputs "
            f"(first: {ex}, column {safe(col)!r}){_collision_hint(sub, bad, sources)}",
            path=", ".join(sources), column=col, code=ErrorCode.DUPLICATE_ROWS)
    return j.frame, j.resolved


#: The provenance key of the duplicate rows a reader resolved by ``--on-duplicate`` before
#: validation: ``{"duplicate_first_wins": rows}``, counted by validation as the rows it sets
#: aside itself (``InputSummary.set_aside``, the ``DUPLICATE_ROWS`` finding).
RESOLVED_KEY = "duplicates_resolved"


def add_resolved(prov: dict[str, Any], on_duplicate: str, rows: int) -> None:
    """Count ``rows`` resolved by ``on_duplicate`` in the provenance ``prov`` (in place)."""
    name = f"duplicate_{on_duplicate}_wins"
    counts = prov.setdefault(RESOLVED_KEY, {})
    counts[name] = int(counts.get(name, 0)) + int(rows)


def _fill_partial_conditions(df: pd.DataFrame, cols: list[str]) -> None:
    """A condition carried by some sources only: filled for the whole run (in place)."""
    for c in cols:
        if _is_series(c) or not df[c].isna().any():
            continue
        per_run = df.groupby("run", sort=False)[c]
        if int(per_run.nunique(dropna=True).max()) <= 1:
            df[c] = per_run.transform("first")


def _merged_provenance(provs: Sequence[Mapping[str, Any]], sources: Sequence[str],
                       joined: int) -> dict[str, Any]:
    """The inputs' provenance as one: lists joined, the step unit and columns, the
    accuracy scales and columns, the adapters that read them."""
    merged: dict[str, Any] = {"inputs": list(sources)}
    if joined > 0:
        merged["rows_joined"] = int(joined)
    for p in provs:
        for k2 in ("source_files", "findings", "warnings"):
            if p.get(k2):
                merged.setdefault(k2, []).extend(p[k2])
        if p.get("downsampled_runs"):
            merged.setdefault("downsampled_runs", []).extend(str(r) for r in p["downsampled_runs"])
        if p.get("step_unit"):
            merged["step_unit"] = p["step_unit"]
        if p.get("step_column"):
            names = {*str(merged.get("step_column", "")).split(", "), str(p["step_column"])}
            merged["step_column"] = ", ".join(sorted(c for c in names if c))
        if p.get("config_files"):
            merged.setdefault("config_files", []).extend(p["config_files"])
        if p.get("outcomes"):
            merged["outcomes"] = sorted(set(merged.get("outcomes", [])) | set(p["outcomes"]))
        for k2, n in (p.get(RESOLVED_KEY) or {}).items():
            merged.setdefault(RESOLVED_KEY, {})[k2] = merged.get(RESOLVED_KEY, {}).get(k2, 0) + n
        for k2, n in (p.get("set_aside") or {}).items():
            merged.setdefault("set_aside", {})[k2] = merged.get("set_aside", {}).get(k2, 0) + n
        _merge_accuracy_scale(merged, p.get("accuracy_scale") or {})
        for k2, d in (p.get("accuracy_columns") or {}).items():
            merged.setdefault("accuracy_columns", {}).setdefault(k2, d)
        if p.get("notes"):
            merged.setdefault("notes", []).extend(p["notes"])
    if "downsampled_runs" in merged:
        merged["downsampled_runs"] = sorted(set(merged["downsampled_runs"]))
    merged["adapters"] = sorted({str(p.get("adapter", "table")) for p in provs})
    return merged


def _merge_accuracy_scale(merged: dict[str, Any], scales: Mapping[str, Any]) -> None:
    """Each accuracy column over every input: its largest value, all its low runs."""
    for k2, d in scales.items():
        have = merged.setdefault("accuracy_scale", {}).get(k2)
        if have is None:
            merged["accuracy_scale"][k2] = dict(d)
        else:
            have["max"] = max(float(have.get("max", 0)), float(d.get("max", 0)))
            have["n_runs_at_most_1"] = (int(have.get("n_runs_at_most_1", 0))
                                        + int(d.get("n_runs_at_most_1", 0)))
            have["runs_at_most_1"] = (list(have.get("runs_at_most_1", []))
                                      + list(d.get("runs_at_most_1", [])))[:20]
