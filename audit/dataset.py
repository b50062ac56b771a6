"""A canonical Parquet log read in parts: one file, by its row groups, or a hive-partitioned
dataset folder (``wd=0.1/seed=3/part-0.parquet``: the folder names give every row of the file
those conditions), file by file.

:func:`open_dataset` reads the files the in-memory audit reads (a folder of shards at its top
level, as the loader lists them; otherwise every Parquet part under partition folders), their
columns joined as the loader joins them (numbers widened to a common type, a column a file
lacks missing there), and says what it found otherwise: a ``run`` column; no other file among
partitioned parts (a config file, a CSV), no partition key that is also a column or holds both
numbers and text (the adapters read those, whole). A key given twice in a path with two
values, or a column that contradicts its partition folder, is refused (``HIVE_KEY_CONFLICT``)
on every path (:func:`hive_partitions`). A *unit* is what Parquet reads at once (a row group
of the file, or one file of the dataset); a part is any range of the log's rows, read with
:meth:`ParquetDataset.read_rows` (the units holding it, cut).
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .errors import ErrorCode, LogFormatError
from .shards import (
    PARQUET_FILE_SUFFIXES,
    PROVENANCE_KEY,
    WRITER_FILES,
    decode_mixed_dictionaries,
    empty_file,
    files_provenance,
    refuse_columns_twice,
    refuse_nested_run,
    refuse_unread_beside_shards,
    release_arrow_memory,
    run_id_text,
    shard_files,
    unreadable,
    walk_files,
)
from .text import DECIMAL, safe

#: The folder name of a missing partition value (Spark, pyarrow).
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


@dataclass(frozen=True)
class Unit:
    """The smallest piece read at once: row groups of one file (None: the whole file)."""

    file: int
    row_groups: tuple[int, ...] | None
    rows: int


@dataclass(frozen=True)
class ParquetDataset:
    """A canonical Parquet file or dataset folder, ready to be read unit by unit."""

    root: Path
    files: tuple[Path, ...]
    columns: tuple[str, ...]  #: the files' columns, joined
    partition_keys: tuple[str, ...]  #: the hive keys, in folder order
    partitions: tuple[dict[str, Any], ...]  #: per file, its partition values
    partition_types: dict[str, pa.DataType]  #: one Arrow type per key, over every file
    units: tuple[Unit, ...]
    provenance: dict[str, Any]
    schema: pa.Schema  #: the files' columns joined (numbers widened to a common type)
    file_columns: tuple[frozenset[str], ...] = ()  #: per file, its own columns
    #: per file, its size and modification time (ns) when opened: checked at every read
    stamps: tuple[tuple[int, int], ...] = ()

    @property
    def rows(self) -> int:
        return sum(u.rows for u in self.units)

    def _conform(self, t: pa.Table, names: Sequence[str]) -> pa.Table:
        """One file's table in the joined columns ``names``: widened, a column it lacks as
        missing values, the folder's provenance in its metadata (every part reads the one
        the in-memory audit reads)."""
        if self.root.is_dir() or t.schema.names != list(names):
            cols = []
            fields = [self.schema.field(n) for n in names]
            for fld in fields:
                if fld.name not in t.column_names:
                    cols.append(pa.nulls(t.num_rows, fld.type))
                    continue
                c = t.column(fld.name)
                if c.type != fld.type and not (fld.name == "run"
                                               and pa.types.is_dictionary(c.type)):
                    c = c.cast(fld.type)
                cols.append(c)
            meta = dict(t.schema.metadata or {})
            if self.root.is_dir():
                meta[PROVENANCE_KEY] = json.dumps(self.provenance, sort_keys=True).encode()
            t = pa.table(cols, names=list(names)).replace_schema_metadata(meta)
        return t

    @functools.cached_property
    def _opened(self) -> dict[bool, pq.ParquetFile]:
        return {}

    def _parquet(self, i: int, run_dictionary: bool) -> pq.ParquetFile:
        """File ``i`` opened for reading (``run`` dictionary-encoded or not). One file read by
        its row groups is opened once: its footer, which lists every row group, is parsed
        once, not once per row group (a file of many small row groups read in parts was
        several times slower than read whole). A folder's files are opened when read."""
        one_file = self.root.is_file()
        f = self._opened.get(run_dictionary) if one_file else None
        if f is None:
            try:
                f = pq.ParquetFile(self.files[i],
                                   read_dictionary=["run"] if run_dictionary else None)
            except KeyError as err:  # a nested run column: not readable as a dictionary
                refuse_nested_run(self.files[i], err)
                raise
            if one_file:
                self._opened[run_dictionary] = f
        return f

    def read_all(self) -> pa.Table:
        """The whole log as one table, a folder's provenance in the schema metadata (the
        in-memory reading of what :mod:`grokaudit.stream` reads in parts)."""
        return self.read(range(len(self.units)))

    @functools.cached_property
    def starts(self) -> np.ndarray:
        """(units + 1,) the first row of each unit in the whole log, and the row count."""
        return np.concatenate(([0], np.cumsum([u.rows for u in self.units]))).astype(np.int64)

    def read_rows(self, first: int, stop: int, columns: Sequence[str] | None = None,
                  runs: pa.Array | None = None) -> pa.Table:
        """Rows ``first:stop`` of the whole log (the units holding them are read and cut)."""
        s = self.starts
        lo = int(np.searchsorted(s, first, side="right")) - 1
        hi = int(np.searchsorted(s, stop, side="left"))
        t = self.read(range(lo, hi), columns)
        t = t.slice(first - int(s[lo]), stop - first)
        if runs is not None:
            # the ids spelled as the validation spells them (a float id is "1.0", not "1")
            t = t.filter(pc.is_in(run_id_text(t.column("run")), value_set=runs))
            i = t.schema.get_field_index("run")
            col = t.column(i)
            if pa.types.is_dictionary(col.type):
                # the stored dictionaries list every run of their row groups: only the runs
                # kept (validation would decode all of them, a string object each)
                t = t.set_column(i, t.schema.field(i), pc.dictionary_encode(
                    col.cast(col.type.value_type)).cast(col.type))
        return t

    def unchanged(self, i: int) -> None:
        """Refuse (``INPUT_CHANGED``) file ``i`` if its size or modification time is not what
        it was when the dataset was opened, or it is gone: its parts would mix two versions
        of the log (a sweep still being written, a file replaced while a long audit ran)."""
        if not self.stamps:
            return
        path = self.files[i]
        try:
            st = os.stat(path)
            now: tuple[int, int] | None = (st.st_size, st.st_mtime_ns)
        except OSError:
            now = None
        if now != self.stamps[i]:
            raise LogFormatError(
                "changed while it was read in parts (" + ("it is gone" if now is None else
                "its size or modification time differ from when the audit opened it")
                + "): the parts would mix two versions of the log; audit it again once it "
                "is written", path=str(path), code=ErrorCode.INPUT_CHANGED)

    def read(self, units: Sequence[int], columns: Sequence[str] | None = None) -> pa.Table:
        """Units ``units`` (consecutive, in order) as one table: the files' ``columns`` (all
        by default) and the partition columns. A file that changed since the dataset was
        opened is refused (:meth:`unchanged`)."""
        cols = list(self.columns) if columns is None else [c for c in columns
                                                             if c in self.columns]
        tables = []
        for i in units:
            u = self.units[i]
            path = self.files[u.file]
            self.unchanged(u.file)
            try:
                # run ids as stored, dictionary-encoded (as the loader reads them): no text
                # decoded per row (a shard without the column: missing there, as the loader
                # reads it)
                f = self._parquet(u.file, "run" in cols and "run" in self.file_columns[u.file])
                here = [c for c in cols if c in f.schema_arrow.names]
                t = (f.read(columns=here) if u.row_groups is None
                     else f.read_row_groups(list(u.row_groups), columns=here))
            except (OSError, pa.ArrowException) as exc:
                self.unchanged(u.file)  # a file replaced while it was read: said as such
                raise unreadable(path, "Parquet file", exc) from None
            self.unchanged(u.file)  # and not replaced while this part was read
            t = self._conform(t, cols)
            for k in self.partition_keys:
                if columns is None or k in columns:
                    v = pa.scalar(self.partitions[u.file].get(k), type=self.partition_types[k])
                    t = t.append_column(k, pa.repeat(v, t.num_rows))
            tables.append(t)
        if "run" in cols and len({t.schema.field("run").type for t in tables}) > 1:
            # a shard without run ids (missing there) beside dictionary-encoded ones: decoded
            fld = self.schema.field("run")
            tables = [t.set_column(t.schema.get_field_index("run"), fld,
                                   t.column("run").cast(fld.type)) for t in tables]
        # the run ids of two files have two dictionaries: unified (the ids are the same text)
        out = tables[0] if len(tables) == 1 else pa.concat_tables(
            tables, promote_options="none").unify_dictionaries()
        del tables
        release_arrow_memory()
        return out


class RunFoldersRefused(LogFormatError):
    """A folder whose runs are named by ``run=ID`` partition folders, but not for every part
    or also by a part's own ``run`` column: refused in memory too (the adapters would read
    ``run`` as a condition, ``run_cond``, and misname every run)."""


def _not_streamable(path: Path, why: str) -> LogFormatError:
    return LogFormatError(f"cannot be streamed: {why}; audit it without --stream (read whole)",
                          path=str(path), code=ErrorCode.FORMAT_MISMATCH)


_NUMBER = re.compile(DECIMAL, re.ASCII)
_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)


def partition_value(raw: str) -> Any:
    """The value a hive partition folder's name gives (``wd=0.1`` → 0.1), as pyarrow and
    Spark write them: percent-escapes decoded; a number when it reads as a finite number (an
    integer when written as one), else text; missing for the hive null and ``nan`` (the one
    rule of the dataset reader and the table adapter)."""
    text = urllib.parse.unquote(raw)
    if text == HIVE_NULL or text.lower() == "nan":
        return None
    # a number written in ASCII digits only: Python's float() also takes "2024_01" (202401)
    # and other scripts' digits, which pyarrow keeps as text
    if not _NUMBER.fullmatch(text):
        return text
    if _INTEGER.fullmatch(text):
        n = int(text)  # exact: a 20-digit seed is not rounded through a float
        return n if -2**63 <= n < 2**63 else text
    x = float(text)
    return x if math.isfinite(x) else text


def hive_partitions(folders: Sequence[str], path: str | os.PathLike[str]
                    ) -> list[tuple[int, str, Any]]:
    """The hive partition values that the folder names ``folders`` (from the dataset's root
    down to a file: ``("wd=0.1", "seed=3")``) give every row of the file at ``path``: ``(the
    folder's index, key, value)`` in folder order, the value read by
    :func:`partition_value` (``run=007`` stays the text ``"007"``: a run id is a name). The
    one rule of the dataset reader, ``--stream`` and the table adapter. A key repeated with
    the same value is given once; a key repeated with two values (``wd=0.1/wd=0``) is
    refused (``HIVE_KEY_CONFLICT``): either value could be meant, and keeping one would
    change the axis without a word."""
    out: list[tuple[int, str, Any]] = []
    seen: dict[str, tuple[Any, str]] = {}
    for i, part in enumerate(folders):
        key, sep, raw = part.partition("=")
        if not sep or not key or key.startswith("."):
            continue
        name = urllib.parse.unquote(key)
        if name == "run":  # a run id is a name, never a number: run=007 is not run=7
            text = urllib.parse.unquote(raw)
            value: Any = None if text == HIVE_NULL else text
        else:
            value = partition_value(raw)
        before = seen.get(name)
        if before is not None:
            if _same_value(before[0], value):
                continue
            raise LogFormatError(
                f"the partition key {safe(name)!r} is given twice in the path, with two "
                f"values ({safe(before[1])!r} and {safe(part)!r}): which one the rows hold "
                "cannot be told; rename one of the folders", path=str(path), column=name,
                code=ErrorCode.HIVE_KEY_CONFLICT)
        seen[name] = (value, part)
        out.append((i, name, value))
    return out


def _same_value(a: Any, b: Any) -> bool:
    """Two partition (or cell) values are one value: equal numbers (``0.1`` and ``0.10``,
    ``1`` and ``1.0``), equal text, or both missing."""
    if a is None or b is None:
        return a is None and b is None
    num = (int, float, np.integer, np.floating)
    if isinstance(a, str) != isinstance(b, str):  # a number written as text: "0.10" is 0.1
        a, b = (float(x) if isinstance(x, str) and _NUMBER.fullmatch(x.strip()) else x
                for x in (a, b))
    if isinstance(a, num) and isinstance(b, num) and not isinstance(a, bool) \
            and not isinstance(b, bool):
        return bool(float(a) == float(b))
    return bool(type(a) is type(b) and a == b) or str(a) == str(b)


def _partition_of(rel: Path, path: Path) -> dict[str, Any]:
    """The hive partition values of a file's folders (``wd=0.1/seed=3``), by
    :func:`hive_partitions`."""
    return {k: v for _, k, v in hive_partitions(rel.parts[:-1], path)}


def column_contradicts(value: Any, column: pa.Array | pa.ChunkedArray) -> tuple[bool, Any]:
    """Whether the values of a file's column contradict the partition value ``value`` its
    folder gives it (a missing cell contradicts nothing), and the first value that does."""
    for v in pc.unique(column).to_pylist():
        if v is None or (isinstance(v, float) and v != v):
            continue
        if not _same_value(value, v):
            return True, v
    return False, None


def refuse_partition_conflicts(conflicts: Sequence[tuple[str, str, Any, Any]],
                               root: str | os.PathLike[str]) -> None:
    """Refuse (``HIVE_KEY_CONFLICT``) files whose column contradicts the partition folder of
    the same name: ``(file, key, partition value, column value)`` each, the first named and
    the others counted. Neither value can be chosen for the user: keeping the column drops
    the folder's value, keeping the folder's rewrites every row of the column, and either
    silently changes the axis the audit compares along."""
    if not conflicts:
        return
    f, key, pval, cval = conflicts[0]
    more = (f"; {len(conflicts) - 1} other file(s) contradict their folders too"
            if len(conflicts) > 1 else "")
    raise LogFormatError(
        f"the file {safe(f)!r} is in the partition folder {safe(key)}={safe(pval)} but its "
        f"column {safe(key)!r} holds {safe(cval)}{more}: which value the rows hold cannot be "
        "told; rename the column or the folders", path=str(root), column=key,
        code=ErrorCode.HIVE_KEY_CONFLICT)


def _refuse_columns_against_folders(root: Path, files: Sequence[Path],
                                    partitions: Sequence[dict[str, Any]],
                                    keys: Sequence[str]) -> None:
    """Each file's columns named like a partition key (``keys``), read alone, against its
    folder's value (:func:`refuse_partition_conflicts`)."""
    conflicts: list[tuple[str, str, Any, Any]] = []
    for f, part in zip(files, partitions):
        here = [k for k in keys if k in part]
        if not here:
            continue
        try:
            t = pq.read_table(f, columns=here)
        except (OSError, pa.ArrowException) as exc:
            raise unreadable(f, "Parquet file", exc) from None
        for k in here:
            bad, v = column_contradicts(part[k], t.column(k))
            if bad:
                conflicts.append((f.relative_to(root).as_posix(), k, part[k], v))
    refuse_partition_conflicts(conflicts, root)


def _partition_types(partitions: Sequence[dict[str, Any]], keys: Sequence[str]
                     ) -> dict[str, pa.DataType | None]:
    types: dict[str, pa.DataType | None] = {}
    for k in keys:
        vals = [p.get(k) for p in partitions if p.get(k) is not None]
        if all(isinstance(v, int) for v in vals):
            types[k] = pa.int64()
        elif all(isinstance(v, (int, float)) for v in vals):
            types[k] = pa.float64()
        elif all(isinstance(v, str) for v in vals):
            types[k] = pa.string()
        else:  # numbers beside text: no one Arrow type holds them as the adapters do
            types[k] = None
    return types


def _read_by_the_adapters(q: Path, part_stems: set[tuple[Path, str]]) -> bool:
    """Whether the in-memory read of a partitioned folder reads the file ``q`` beside its
    Parquet parts: a table in another format (CSV, JSON…), a config file by its well-known name
    (``config.yaml``) or a part's same-stem YAML (``part_stems``: each part's folder and
    stem), whose values become conditions. Other files (``LICENSE``, ``README.md``, notes, a
    sweep's YAML) are no part of the log on either path."""
    from .roles import SIDECAR_NAMES
    from .shards import TABLE_SUFFIXES

    suffix = q.suffix.lower()
    if suffix in TABLE_SUFFIXES or q.name in SIDECAR_NAMES:
        return True
    return suffix in (".yaml", ".yml") and (q.parent, q.stem) in part_stems


def _folder_files(root: Path) -> tuple[list[Path], bool]:
    """The Parquet files of a folder, and whether it is a folder of shards: the loader's
    shards (the top level only, as :func:`~grokaudit.schema.read_arrow` lists them) when it
    reads the folder so, else every part under partition folders (refusing other files)."""
    from .canonical import is_canonical
    from .runfolder import is_run_folder

    if is_run_folder(root):
        raise _not_streamable(root, "a RunLogger folder is read whole (its reader reports "
                                    "what a kill cut short)")
    if is_canonical(root):
        refuse_unread_beside_shards(root)  # as the loader refuses it
        return shard_files(root), True
    files: list[Path] = []
    others: list[Path] = []
    # a partition folder it cannot list is refused; hidden folders are no part of the log
    for q in walk_files(root, strict=True, hidden=False):
        rel = q.relative_to(root)
        if not q.is_file() or any(p.startswith(".") for p in rel.parts) \
                or q.name in WRITER_FILES or q.suffix.lower() == ".crc":
            continue
        (files if q.suffix.lower() in PARQUET_FILE_SUFFIXES else others).append(q)
    part_stems = {(p.parent, p.stem) for p in files}  # (folder, stem) of every part
    for q in others:
        if _read_by_the_adapters(q, part_stems):
            raise _not_streamable(root, f"the folder holds {safe(q.relative_to(root).as_posix())!r}"
                                        ", which is not a Parquet part (config files and other "
                                        "formats are read by the adapters)")
    if not files:
        raise _not_streamable(root, "the folder holds no Parquet file")
    return files, False


def _refuse_text_in_numeric_columns(files: Sequence[Path], schemas: Sequence[pa.Schema]
                                    ) -> None:
    """A part whose steps or accuracies are not numbers (text beside numbers in the other
    parts) is refused as the in-memory validation refuses it (``BAD_COLUMN_TYPE``, naming the
    file and the column), not as a folder the stream cannot read."""
    from .schema import MUST_HOLD, bad_column_type

    for name in MUST_HOLD:
        for f, sc in zip(files, schemas):
            if name not in sc.names:
                continue
            t = sc.field(name).type
            if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_null(t)
                    or (pa.types.is_boolean(t) and name != "step")):
                raise bad_column_type(name, t, f)


def _schemas(files: Sequence[Path]) -> tuple[list[pa.Schema], list[Any], list[tuple[int, int]]]:
    schemas, metas, stamps = [], [], []
    for f in files:
        st = f.stat()
        if st.st_size == 0:  # as the loader refuses it
            raise empty_file(f)
        stamps.append((st.st_size, st.st_mtime_ns))
        try:
            meta = pq.ParquetFile(f).metadata
            schemas.append(meta.schema.to_arrow_schema())
        except (OSError, pa.ArrowException) as exc:
            raise unreadable(f, "Parquet file", exc) from None
        refuse_columns_twice(schemas[-1].names, f)  # as the loader refuses it
        metas.append(meta)
    return schemas, metas, stamps


def _unify(schemas: Sequence[pa.Schema]) -> pa.Schema:
    """The files' columns joined as the loader joins them (:func:`grokaudit.shards.join_tables`):
    numbers widened, a column dictionary-encoded in one file and plain in another as its
    values."""
    return pa.unify_schemas(decode_mixed_dictionaries(schemas), promote_options="permissive")


def open_dataset(path: str | Path) -> ParquetDataset:
    """The canonical Parquet file or dataset folder at ``path``, unit by unit; refuses
    (``FORMAT_MISMATCH``, naming what it found) anything the streamed audit cannot read.
    The files of a folder are those the in-memory audit reads, their columns joined as it
    joins them (numbers widened to a common type, a column a file lacks missing there)."""
    root = Path(path)
    if not root.exists():
        raise LogFormatError("no such file or directory; check the path", path=str(root),
                             code=ErrorCode.FILE_NOT_FOUND)
    shards = False
    if root.is_file():
        files = [root]
        if root.suffix.lower() not in PARQUET_FILE_SUFFIXES:
            raise _not_streamable(root, "not a Parquet file (only a canonical Parquet file or "
                                        "a folder of them is read in parts)")
    else:
        files, shards = _folder_files(root)
    schemas, metas, stamps = _schemas(files)
    try:
        unified = _unify(schemas)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        if shards:  # as the loader refuses them
            raise LogFormatError(f"shards have incompatible columns ({exc}); convert them to "
                                 "one schema", path=str(root),
                                 code=ErrorCode.SHARDS_INCOMPATIBLE) from None
        _refuse_text_in_numeric_columns(files, schemas)  # as the validation refuses them
        raise _not_streamable(root, f"its files have incompatible columns ({exc})") from None
    columns = tuple(unified.names)
    partitions = [_partition_of(f.relative_to(root), f) if root.is_dir() else {}
                  for f in files]
    # `run=ID/` folders (pandas' and pyarrow's partition_cols=["run"]) name the runs of
    # files without a run column: every part in one, none naming its runs itself
    run_folders = not shards and any("run" in p for p in partitions)
    if run_folders:
        for f, p, sc in zip(files, partitions, schemas):
            why = ("has a 'run' column inside a 'run=ID' folder: both would name its runs"
                   if "run" in sc.names else "is in no 'run=ID' folder and has no 'run' "
                   "column: its runs have no name" if "run" not in p else "")
            if why:
                raise RunFoldersRefused(
                    f"the part {safe(f.relative_to(root).as_posix())!r} {why}; name the runs "
                    "one way: every part in a 'run=ID' folder, or a 'run' column in every "
                    "part", path=str(root), column="run", code=ErrorCode.FORMAT_MISMATCH)
    if "run" not in columns and not run_folders:
        raise LogFormatError(
            "has no 'run' column: a log read in parts names each row's run, by a 'run' column "
            "or 'run=ID' partition folders (a folder of one-run files is read whole, without "
            "--stream)", path=str(files[0]), column="run", code=ErrorCode.MISSING_COLUMN)
    runless = [f for f, sc in zip(files, schemas) if "run" not in sc.names]
    if runless and not shards and not run_folders:
        # a one-run file among partitioned parts: the adapters name it
        raise _not_streamable(root, f"the part {safe(runless[0].relative_to(root).as_posix())!r}"
                                    " has no 'run' column (a one-run file is read by the "
                                    "adapters, named by its path)")
    units: list[Unit] = []
    empty: list[str] = []  # a writer's part files without rows (Spark writes them)
    for i, (f, meta) in enumerate(zip(files, metas)):
        if root.is_file():
            units += [Unit(0, (g,), meta.row_group(g).num_rows)
                      for g in range(meta.num_row_groups)]
        elif meta.num_rows:
            units.append(Unit(i, None, meta.num_rows))
        else:
            empty.append(f.relative_to(root).as_posix())
    keys: list[str] = []
    for p in partitions:
        keys += [k for k in p if k not in keys]
    clash = [k for k in keys if k in columns]
    if clash:
        _refuse_columns_against_folders(root, files, partitions, clash)
        raise _not_streamable(root, f"the partition key {safe(clash[0])!r} is also a column "
                                    "of the files")
    types = _partition_types(partitions, keys)
    mixed = [k for k, t in types.items() if t is None]
    if mixed:
        raise _not_streamable(root, f"the partition key {safe(mixed[0])!r} holds numbers and "
                                    "text (the adapters read it)")
    if not sum(u.rows for u in units):  # as the validation refuses a table without rows
        raise LogFormatError("the table has no rows; there is nothing to audit",
                             path=str(root), code=ErrorCode.NO_ROWS)
    prov = files_provenance(schemas, [str(f) for f in files])
    if shards:
        prov["shards"] = [f.name for f in files]  # a folder of shards, as the loader names it
    elif root.is_dir():
        prov["source_files"] = [str(f) for f in files]
    if empty and not shards:  # said as the adapters say it
        prov["warnings"] = [*(prov.get("warnings") or []), (
            f"{len(empty)} file(s) with a header and no rows: no run read from them "
            f"({', '.join(repr(e) for e in empty[:3])}{', …' if len(empty) > 3 else ''})")]
    prov = json.loads(json.dumps(prov, sort_keys=True))  # as the metadata gives it back
    return ParquetDataset(root, tuple(files), columns, tuple(keys), tuple(partitions),
                          {k: t for k, t in types.items() if t is not None}, tuple(units), prov,
                          unified, tuple(frozenset(sc.names) for sc in schemas), tuple(stamps))


def hive_dataset(path: Path) -> ParquetDataset | None:
    """The folder of canonical Parquet files at ``path`` under (hive partition) folders
    (``run``, ``step`` and the test accuracy in its files, nothing else), read without the
    adapters; None for any other folder (the adapters read it)."""
    from .canonical import canonical_names

    try:
        ds = open_dataset(path)
    except RunFoldersRefused:
        raise
    except LogFormatError as exc:
        if exc.code in (ErrorCode.PROVENANCE_MALFORMED, ErrorCode.FILE_EMPTY,
                        ErrorCode.DUPLICATE_COLUMN, ErrorCode.HIVE_KEY_CONFLICT):
            # the adapters would read the folder with no provenance at all (the runs its
            # source downsampled, silently narrowed), or refuse a part in other words:
            # refused, as --stream refuses it, with the same code
            raise
        return None
    if not canonical_names(ds.file_columns[0] | set(ds.partition_keys)):
        return None
    return ds
