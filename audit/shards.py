"""One canonical Parquet file read as stored, and the provenance its schema metadata carries.

A leaf: ``schema.read_arrow`` (every canonical input) and ``logger.read_run_folder`` (the
segments a :class:`~grokaudit.RunLogger` writes) both read shards with it, so neither module
imports the other to read a file (``schema`` hands a RunLogger folder to ``logger``; ``logger``
never reaches back into ``schema``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .errors import ErrorCode, LogFormatError
from .text import safe

#: The schema metadata key under which every grokaudit table carries its provenance (JSON).
PROVENANCE_KEY = b"grokaudit"
#: The suffixes of a folder's Parquet files (any case: ``part-0.PARQUET`` is one).
PARQUET_FILE_SUFFIXES = (".parquet", ".pq")
#: Files a dataset writer leaves beside its parts (Spark's markers, pyarrow's metadata files).
WRITER_FILES = frozenset({"_SUCCESS", "_common_metadata", "_metadata"})
#: Logs in the other canonical formats: a folder of shards that holds one is refused.
_OTHER_LOG_SUFFIXES = (".csv", ".tsv", ".jsonl", ".ndjson")
#: The formats of the generic table reader, by file suffix: in a folder it reads, files with
#: other suffixes (a licence, notes) are no part of the log.
TABLE_SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "tsv",
                  ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json"}


#: Model checkpoints and pickles: no reader opens them (a folder's notes say so; the audit
#: trail does not hash them as inputs: a Lightning run's 2 GB ``.ckpt`` is none of its log).
NEVER_READ_SUFFIXES = (".pt", ".pth", ".ckpt", ".bin", ".safetensors", ".pkl", ".pickle")


def walk_files(root: Path, *, strict: bool = False, hidden: bool = True) -> list[Path]:
    """Every file under the folder ``root``, in sorted order. A symbolic link to a folder is
    followed, as pyarrow's dataset reader follows it (``wd=1/`` linked from another disk is
    part of the log, never silently left out), except a link to a folder on the path from the
    file system's root to the folder being walked (``..``, ``.``, ``/``, the home folder: a
    loop, or a walk out of the log). Dangling links are left out here (nothing can read them;
    a folder of logs holding one under a log's name is refused before this walk, by
    :func:`refuse_unreadable_entries`). A folder that cannot be listed is refused
    (``FILE_UNREADABLE``) with ``strict`` (the folders a reader reads parts from), else
    skipped (a ``lost+found`` beside the log is none of it). ``hidden=False`` does not enter
    folders whose names start with a dot (a reader that ignores them need not list them)."""
    out: list[Path] = []
    top = Path(os.path.realpath(root))

    def visit(d: Path, above: frozenset[str]) -> None:
        try:
            entries = list(d.iterdir())
        except OSError as exc:
            if strict:
                raise unreadable(d, "folder", exc) from None
            return
        for q in entries:
            try:
                is_dir = q.is_dir()
                is_file = not is_dir and q.is_file()
            except OSError:  # a link we may not follow
                continue
            if is_dir:
                if not hidden and q.name.startswith("."):
                    continue
                real = os.path.realpath(q)
                if real not in above:  # (and not above a linked folder either)
                    visit(q, above | {real, *(str(a) for a in Path(real).parents)})
            elif is_file:
                out.append(q)

    visit(root, frozenset({str(top), *(str(a) for a in top.parents)}))
    return sorted(out)


def _log_like(q: Path) -> bool:
    """A name a reader of a folder reads: a table, an ``.npz``, TensorBoard events or a W&B
    run file."""
    suffix = q.suffix.lower()
    return (suffix in TABLE_SUFFIXES or suffix in (".npz", ".wandb")
            or "tfevents" in q.name)


def refuse_special_file(p: Path) -> None:
    """A path that exists but is neither a regular file nor a folder (a FIFO, socket or device
    under a log's name) is ``FILE_UNREADABLE``; checked before anything opens it (a FIFO
    would wait for a writer forever)."""
    if p.exists() and not (p.is_file() or p.is_dir()):
        raise LogFormatError("not a regular file or a folder (a FIFO, a socket or a device): "
                             "grokaudit reads log files and folders; copy the log to a file",
                             path=str(p), code=ErrorCode.FILE_UNREADABLE)


def refuse_unreadable_entries(folder: Path) -> None:
    """Refuse a folder holding, under a log's name, an entry no reader can read: a link to a
    missing file or partition folder (``wd=2.0`` on a volume not mounted) or a FIFO, socket or
    device (``FILE_UNREADABLE``, naming it). The readers walk regular files only, so such a
    log would be left out of the audit without a word. Linked folders are entered (once);
    hidden entries are no part of a log."""
    seen: set[str] = set()

    def visit(d: Path) -> None:
        real = os.path.realpath(d)
        if real in seen:
            return
        seen.add(real)
        try:
            entries = list(d.iterdir())
        except OSError:
            return  # a folder that cannot be listed is judged where it is read
        for q in entries:
            if q.name.startswith("."):
                continue
            try:
                is_dir = q.is_dir()
                exists = is_dir or q.exists()
            except OSError:
                continue
            if is_dir:
                visit(q)
            elif not exists and q.is_symlink() and (_log_like(q) or "=" in q.name):
                raise LogFormatError("a link to a missing file or folder: the log it names "
                                     "cannot be read (a volume not mounted?); restore its "
                                     "target or remove the link", path=str(q),
                                     code=ErrorCode.FILE_UNREADABLE)
            elif exists and not q.is_file() and _log_like(q):
                raise LogFormatError("not a regular file (a FIFO, socket or device): no reader "
                                     "reads it; replace it with the log's file or remove it",
                                     path=str(q), code=ErrorCode.FILE_UNREADABLE)

    visit(folder)


def spelled_as_python(t: pa.DataType) -> bool:
    """Whether run ids of type ``t`` (a dictionary of them too) are floats or booleans, which
    Arrow's cast to text spells otherwise than Python and pandas (``1`` for 1.0, ``true`` for
    True)."""
    vt = t.value_type if pa.types.is_dictionary(t) else t
    return bool(pa.types.is_floating(vt) or pa.types.is_boolean(vt))


def python_texts(values: pa.Array) -> pa.Array:
    """Float or boolean ``values`` as text, as numpy's ``astype(str)`` (and so a DataFrame's)
    spells them: ``1.0``, ``1.1`` (float32: its shortest spelling), ``True``; a null or a NaN
    stays missing."""
    missing = np.asarray(pc.is_null(values, nan_is_null=True).to_numpy(zero_copy_only=False),
                         dtype=bool)
    filled = values.fill_null(False if pa.types.is_boolean(values.type) else 0.0)
    texts = np.asarray(filled.to_numpy(zero_copy_only=False)).astype(str)
    return pa.array(texts, pa.string(), mask=missing)


def run_id_text(col: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """The run ids of ``col`` as text, spelled as every reader spells them: text as it is, a
    float or boolean id by :func:`python_texts` (once per distinct id), any other type by
    Arrow's cast. A missing (or NaN) id stays missing. A chunked array gives a chunked
    array."""
    if not spelled_as_python(col.type):
        return col.cast(pa.string())
    enc = pc.dictionary_encode(col)
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.combine_chunks()
    out = pc.take(python_texts(enc.dictionary), enc.indices)
    return pa.chunked_array([out]) if isinstance(col, pa.ChunkedArray) else out


def decode_mixed_dictionaries(schemas: Sequence[pa.Schema]) -> list[pa.Schema]:
    """``schemas`` with each column that is dictionary-encoded in some (a pandas Categorical)
    and plain in others given as its values: Arrow joins neither such schemas nor such tables,
    and the values are the same text."""
    kinds: dict[str, set[bool]] = {}
    for sc in schemas:
        for f in sc:
            kinds.setdefault(f.name, set()).add(pa.types.is_dictionary(f.type))
    mixed = {n for n, k in kinds.items() if len(k) > 1}
    out = []
    for sc in schemas:
        for i, f in enumerate(sc):
            if f.name in mixed and pa.types.is_dictionary(f.type):
                sc = sc.set(i, f.with_type(f.type.value_type))
        out.append(sc)
    return out


def join_tables(tables: Sequence[pa.Table]) -> pa.Table:
    """The shards of a folder as one table: numbers widened to their common type (a float32
    shard beside a float64 one, an integer column beside a float one: the values stay exact),
    a column a shard lacks missing there, a dictionary column beside a plain one decoded.
    Raises what ``pa.concat_tables`` raises for columns that cannot be joined."""
    schemas = decode_mixed_dictionaries([t.schema for t in tables])
    tables = [t if t.schema == sc else t.cast(sc) for t, sc in zip(tables, schemas, strict=True)]
    return pa.concat_tables(tables, promote_options="permissive")


def shard_files(folder: Path) -> list[Path]:
    """The Parquet shards of a folder read as a folder of shards: its top-level ``.parquet``
    and ``.pq`` files (any case), sorted by name; not macOS's ``._NAME`` files, which it
    writes beside each file it copies to a foreign disk (their metadata, never Parquet)."""
    return sorted(q for q in folder.iterdir()
                  if q.suffix.lower() in PARQUET_FILE_SUFFIXES and not q.name.startswith("._"))


def refuse_unread_beside_shards(folder: Path) -> None:
    """A folder of shards reads its top-level Parquet files only: refuse one that also holds
    a log it would leave out — a file in another log format, or Parquet parts (or other logs)
    in a folder below — rather than audit part of it in silence (``UNREAD_FILES``). Hidden
    files, a writer's marker files and other files (a config, notes) are not logs."""
    logs = (*PARQUET_FILE_SUFFIXES, *_OTHER_LOG_SUFFIXES)
    # one walk of the folder (its loop guard: a link to it or above it is not followed)
    found: Path | None = None
    for r in walk_files(folder, hidden=False):
        top, *below = r.relative_to(folder).parts
        if any(part.startswith(".") for part in (top, *below)) or top in WRITER_FILES \
                or Path(top).suffix.lower() in PARQUET_FILE_SUFFIXES:
            continue  # hidden, a writer's marker, a shard (a folder so named is read as one)
        if r.suffix.lower() in (logs if below else _OTHER_LOG_SUFFIXES):
            found = r  # sorted: the first such file
            break
    if found is not None:
        rel = found.relative_to(folder).as_posix()
        raise LogFormatError(
            f"the folder's top-level Parquet files are read as its shards, and it also "
            f"holds {safe(rel)!r}, which they would leave out; move the other logs out of "
            "the folder, or pass each one as its own input (several inputs are merged by "
            "run)", path=str(folder), code=ErrorCode.UNREAD_FILES)


def provenance_of(schema: pa.Schema, path: str | None = None) -> dict[str, Any]:
    """The provenance in the schema metadata (``{}`` when there is none).

    The audit trusts parts of it (which runs a source downsampled, which findings a reader
    raised), so malformed provenance is an error, never skipped: skipping it would silently
    narrow the intervals of downsampled runs."""
    meta = schema.metadata or {}
    raw = meta.get(PROVENANCE_KEY)
    if not raw:
        return {}

    def bad(why: str) -> LogFormatError:
        return LogFormatError(
            f"the file's grokaudit provenance metadata is malformed ({why}); rewrite the file "
            "with `grokaudit convert`, or drop the 'grokaudit' schema metadata", path=path,
            code=ErrorCode.PROVENANCE_MALFORMED)

    try:
        val = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise bad("not JSON") from None
    if not isinstance(val, dict):
        raise bad("not a JSON object")
    ds = val.get("downsampled_runs")
    if ds is not None and not (isinstance(ds, list) and all(isinstance(r, (str, int)) for r in ds)):
        raise bad("'downsampled_runs' is not a list of run ids")
    fs = val.get("findings")
    if fs is not None and not (isinstance(fs, list) and all(isinstance(f, dict) for f in fs)):
        raise bad("'findings' is not a list of objects")
    su = val.get("step_unit")
    if su is not None and not isinstance(su, str):
        raise bad("'step_unit' is not a string")
    return val


def files_provenance(schemas: Sequence[pa.Schema], paths: Sequence[str]) -> dict[str, Any]:
    """The provenance of a folder's files as one: the first file's, with the runs another
    file says its source downsampled and the findings and warnings it raised added (each
    once). Reading the first file's alone would silently narrow the intervals of runs that a
    later shard says were downsampled, and drop its findings. Every file's metadata is
    checked (``PROVENANCE_MALFORMED`` names the file)."""
    provs = [provenance_of(sc, str(p)) for sc, p in zip(schemas, paths)]
    out = dict(provs[0]) if provs else {}
    for key in ("downsampled_runs", "findings", "warnings"):
        if not any(p.get(key) for p in provs[1:]):
            continue
        merged: list[Any] = []
        seen: set[str] = set()  # each value once, by its JSON text (findings are objects)
        for p in provs:
            for v in p.get(key) or []:
                k = json.dumps(v, sort_keys=True, default=str)
                if k not in seen:
                    seen.add(k)
                    merged.append(v)
        out[key] = merged
    return out


def run_type_refusal(t: pa.DataType, path: Path | str | None) -> LogFormatError | None:
    """``BAD_COLUMN_TYPE`` for a run column whose type holds no one id per row (a list, a
    struct, a map, a union, or a dictionary of them); None for any other type."""
    vt = t.value_type if pa.types.is_dictionary(t) else t
    if not (pa.types.is_nested(vt) or pa.types.is_union(vt)):
        return None
    return LogFormatError(f"column 'run' has type {t}; it must hold one run id per row (a text "
                          "or a number): write each run's id as text", path=None if path is None
                          else str(path), column="run", code=ErrorCode.BAD_COLUMN_TYPE)


def refuse_nested_run(path: Path | str, err: Exception) -> None:
    """Where pyarrow failed to open ``path`` with its run ids read as a dictionary (it raises
    ``KeyError`` for a nested column): ``BAD_COLUMN_TYPE`` when the run column is nested;
    otherwise returns, and the caller raises ``err``."""
    try:
        t = pq.read_schema(path).field("run").type
    except Exception:  # noqa: BLE001  the caller raises the error it met
        return
    refusal = run_type_refusal(t, path)
    if refusal is not None:
        raise refusal from err


def release_arrow_memory() -> None:
    """Hand the memory Arrow has freed back to the OS. Arrow's allocator (mimalloc or jemalloc)
    keeps freed pages for reuse, and nothing after the read allocates through Arrow: without
    this, the Parquet decoder's buffers and the casts' temporaries stay in the resident set
    while numpy allocates the audit's arrays beside them."""
    pa.default_memory_pool().release_unused()


def empty_file(p: Path) -> LogFormatError:
    """The refusal of a file of no bytes (``FILE_EMPTY``)."""
    return LogFormatError("file is empty; there is nothing to audit", path=str(p),
                          code=ErrorCode.FILE_EMPTY)


def refuse_columns_twice(names: Sequence[str], p: Path) -> None:
    """A column name that appears twice in the file ``p`` is refused (``DUPLICATE_COLUMN``)."""
    twice = sorted({n for n in names if list(names).count(n) > 1})
    if twice:
        raise LogFormatError(f"column(s) {[safe(n) for n in twice]} appear more than "
                             "once; rename one", path=str(p), column=twice[0],
                             code=ErrorCode.DUPLICATE_COLUMN)


def parquet_columns(p: Path) -> list[str]:
    """The column names of the Parquet file ``p``, from its footer; a name that appears twice
    is refused (``DUPLICATE_COLUMN``)."""
    names: list[str] = pq.read_schema(p).names
    refuse_columns_twice(names, p)
    return names


def read_parquet(p: Path, names: list[str]) -> pa.Table:
    """The Parquet file ``p`` (whose columns are ``names``) as an Arrow table."""
    # run ids repeat on every row: read them dictionary-encoded (about 3x faster); without
    # pre-buffering, a local file is read faster and with a lower peak (the compressed column
    # chunks are not all held at once)
    try:
        table = pq.read_table(p, read_dictionary=["run"] if "run" in names else None,
                              pre_buffer=False)
    except KeyError as err:  # a nested run column, which pyarrow cannot read as a dictionary
        refuse_nested_run(p, err)
        raise
    release_arrow_memory()  # the decoder's buffers: freed, handed back to the OS
    return table


def unreadable(p: Path, kind: str, exc: BaseException) -> LogFormatError:
    """The error for a file of type ``kind`` its reader could not read (``FILE_UNREADABLE``)."""
    msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return LogFormatError(f"cannot read as {kind}: {msg}", path=str(p),
                          code=ErrorCode.FILE_UNREADABLE)


def read_shard(p: Path) -> pa.Table:
    """One Parquet file (a shard) as an Arrow table, refused as ``schema.read_arrow`` refuses
    it: missing (``FILE_NOT_FOUND``), empty (``FILE_EMPTY``), a column twice, unreadable."""
    if not p.exists():
        raise LogFormatError("no such file or directory; check the path", path=str(p),
                             code=ErrorCode.FILE_NOT_FOUND)
    if p.is_dir():
        raise LogFormatError("a folder named as a Parquet file; read it as its own path",
                             path=str(p), code=ErrorCode.FILE_UNREADABLE)
    if p.stat().st_size == 0:
        raise empty_file(p)
    try:
        return read_parquet(p, parquet_columns(p))
    except LogFormatError:
        raise
    except (pa.ArrowInvalid, ValueError, OSError, TypeError) as exc:
        raise unreadable(p, "parquet", exc) from None
