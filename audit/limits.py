"""How large an input may say it is, checked before it is read.

A Parquet file is compressed: a file of half a megabyte can declare twenty million rows and
expand to more than a gigabyte. Its footer says how many rows and columns it holds, so that is
read first (a few kilobytes), and an input that declares more than :class:`Limits` allows is
refused (``TOO_LARGE``) before a single column is read, naming the file, what it declares and
the option that raises the cap (``--max-rows``, ``--max-columns``, or ``max_rows`` /
``max_columns`` in a config file). A folder counts the rows of every Parquet file under it.

A CSV or TSV file declares its columns in its header line: that line alone is read (and
only as far as the cap: a header of 120 000 names is refused after its first
``max_columns``), the columns counted, and a file wider than the cap refused the same way,
before the parser sees it. The header's length also sizes the parser's block
(:func:`csv_block_size`): pyarrow reads a CSV in blocks of 1 MiB, and a header longer than
one block would be refused as "Empty CSV file or block". A JSON-lines file's first record is
counted the same way (its fields, nested objects flattened). Other text formats (TensorBoard,
W&B run files) declare nothing: what they can hold is bounded by their bytes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ErrorCode, LogFormatError
from .text import safe

#: Default cap on the rows an input may declare: the largest log the performance tables
#: measure routinely (``docs/performance.md``: 2 000 runs × 5 000 steps).
DEFAULT_MAX_ROWS = 10_000_000
#: Default cap on the columns an input may declare.
DEFAULT_MAX_COLUMNS = 10_000
_MAGIC = b"PAR1"
#: pyarrow's CSV block size: a header line longer than it needs a larger block.
CSV_BLOCK_SIZE = 1 << 20
#: The longest CSV header line read (and the largest block the CSV parser is given): 64 MiB,
#: room for 100 000 column names of 600 bytes each.
CSV_HEADER_MAX = 64 << 20
#: The suffixes of the text tables whose header line declares their columns, and their
#: delimiters.
TEXT_TABLE_DELIMITERS = {".csv": ",", ".tsv": "\t"}
#: JSON-lines logs: their first record's fields are counted (no header declares them).
JSON_LINES_SUFFIXES = (".jsonl", ".ndjson")


@dataclass(frozen=True)
class Limits:
    """The most rows and columns an input may declare in its metadata."""

    max_rows: int = DEFAULT_MAX_ROWS
    max_columns: int = DEFAULT_MAX_COLUMNS

    @classmethod
    def of(cls, cfg: Any) -> Limits:
        """The limits of an :class:`~grokaudit.config.AuditConfig` (its ``max_rows`` and
        ``max_columns``)."""
        return cls(int(cfg.max_rows), int(cfg.max_columns))


#: The caps of a read that names none.
DEFAULT_LIMITS = Limits()


@dataclass(frozen=True)
class Declared:
    """What an input's Parquet metadata declares: rows in all, the widest file's columns."""

    rows: int
    columns: int
    files: int  #: Parquet files counted


def declared(path: str | os.PathLike[str]) -> Declared | None:
    """The rows and columns the Parquet metadata under ``path`` declares, or ``None`` when
    ``path`` holds no readable Parquet footer (another format: nothing is declared)."""
    p = Path(path)
    if p.is_dir():
        from .shards import PARQUET_FILE_SUFFIXES, walk_files  # (pyarrow: only when used)

        # every Parquet file under it, partition folders linked from elsewhere included
        files = [q for q in walk_files(p) if q.suffix.lower() in PARQUET_FILE_SUFFIXES]
    elif p.is_file() and _is_parquet(p):
        files = [p]
    else:
        return None
    rows = cols = n = 0
    for q in files:
        md = _metadata(q)
        if md is None:
            continue  # unreadable: the reader names the file and the fault
        rows += md[0]
        cols = max(cols, md[1])
        n += 1
    return Declared(rows, cols, n) if n else None


def check_declared(path: str | os.PathLike[str], limits: Limits | None) -> None:
    """Refuse (``TOO_LARGE``) an input whose Parquet metadata declares more rows or columns
    than ``limits`` allows, or whose CSV or TSV header names more columns (every such file
    under a folder; :func:`check_text_header`); ``None`` checks nothing."""
    if limits is None:
        return
    for q in _text_tables(Path(path)):
        if q.suffix.lower() in JSON_LINES_SUFFIXES:
            check_first_record(q, limits.max_columns)
        else:
            check_text_header(q, limits.max_columns)
    for q in _npz_files(Path(path)):
        check_npz(q, limits.max_rows)
    d = declared(path)
    if d is None:
        return
    where = "declares" if d.files == 1 and not Path(path).is_dir() else (
        f"holds {d.files} Parquet file(s) that declare")
    if d.rows > limits.max_rows:
        raise LogFormatError(
            f"{where} {d.rows} rows, more than the cap of {limits.max_rows}; if the log is "
            f"really this large, raise the cap with --max-rows {d.rows} (max_rows in a config "
            "file), or, with check, report or a claim command, audit a canonical Parquet log "
            "part by part with --stream (memory bounded by the part)", path=str(path),
            code=ErrorCode.TOO_LARGE)
    if d.columns > limits.max_columns:
        raise LogFormatError(
            f"{where} {d.columns} columns, more than the cap of {limits.max_columns}; if the "
            f"log is really this wide, raise the cap with --max-columns {d.columns} "
            "(max_columns in a config file)", path=str(path), code=ErrorCode.TOO_LARGE)


def describe(path: str | os.PathLike[str]) -> str:
    """``a.parquet (declares 20000000 rows × 9 columns)``, or the path alone: for a message
    about an input that did not fit in memory."""
    try:
        d = declared(path)
    except OSError:
        d = None
    if d is None:
        return safe(str(path))
    return f"{safe(str(path))} (declares {d.rows} rows × {d.columns} columns)"


def _is_parquet(p: Path) -> bool:
    try:
        with open(p, "rb") as f:
            return f.read(4) == _MAGIC
    except OSError:
        return False


def _metadata(p: Path) -> tuple[int, int] | None:
    import pyarrow.parquet as pq

    try:
        md = pq.read_metadata(p)
        return int(md.num_rows), int(md.num_columns)
    except Exception:  # noqa: BLE001 - a broken footer is the reader's to report, by name
        return None


# ------------------------------------------------------------------------------------------
# text tables: the header line
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TextHeader:
    """A CSV or TSV file's header line as far as it was read: its columns (at least this
    many when not ``complete``) and its length in bytes (read so far when not complete)."""

    columns: int
    size: int
    complete: bool


#: The column cap of the read under way (``--max-columns``; None: no cap), for readers that
#: find a table's columns only as they read its records (JSON lines whose keys grow record
#: by record, a nested object of 30 000 keys): they refuse as soon as the cap is passed,
#: before any column is built.
COLUMN_CAP: ContextVar[int | None] = ContextVar("grokaudit_column_cap", default=None)


@contextmanager
def column_cap(cap: int | None) -> Iterator[None]:
    """Within this block, readers refuse a table naming more than ``cap`` columns
    (:data:`COLUMN_CAP`; ``TOO_LARGE``)."""
    token = COLUMN_CAP.set(cap)
    try:
        yield
    finally:
        COLUMN_CAP.reset(token)


def _npz_files(p: Path) -> list[Path]:
    """The NPZ archives at ``p``: the file itself, or every one under the folder."""
    if p.is_file():
        return [p] if p.suffix.lower() == ".npz" else []
    if not p.is_dir():
        return []
    from .shards import walk_files

    return [q for q in walk_files(p, hidden=False) if q.suffix.lower() == ".npz"]


def check_npz(path: Path, max_rows: int) -> None:
    """Refuse (``TOO_LARGE``) an NPZ archive one of whose arrays declares, in its ``.npy``
    header, more values than ``max_rows`` (each value is a logged point at most): read before
    anything is decompressed beyond the header (a 26 MB archive of zeros declared 5·10⁸
    values and took 6.4 GB). An archive whose headers cannot be read is left to its reader,
    which says why."""
    import zipfile

    import numpy as np

    try:
        with zipfile.ZipFile(path) as z:
            for info in z.infolist():
                if not info.filename.endswith(".npy"):
                    continue
                with z.open(info) as fh:
                    version = np.lib.format.read_magic(fh)
                    read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                            else np.lib.format.read_array_header_2_0)
                    shape = read(fh)[0]
                n = 1
                for k in shape:
                    n *= int(k)
                if n > max_rows:
                    raise LogFormatError(
                        f"array {safe(info.filename[:-4])!r} declares {n} values "
                        f"(shape {tuple(int(k) for k in shape)}), more than the cap of "
                        f"{max_rows} points; if the log is really this large, raise the cap "
                        f"with --max-rows {n} (max_rows in a config file)", path=str(path),
                        code=ErrorCode.TOO_LARGE)
    except LogFormatError:
        raise
    except Exception:  # not a readable archive: its reader refuses it with the reason
        return


def _text_tables(p: Path) -> list[Path]:
    """The CSV and TSV files at ``p``: the file itself, or every one under the folder."""
    if p.is_file():
        return [p] if _text_table(p) else []
    if not p.is_dir():
        return []
    from .shards import walk_files

    return [q for q in walk_files(p, hidden=False) if _text_table(q)]


def _text_table(q: Path) -> bool:
    suffix = q.suffix.lower()
    return (suffix in TEXT_TABLE_DELIMITERS or suffix in JSON_LINES_SUFFIXES) \
        and not q.name.startswith(".")


def _line_end(buf: bytes | bytearray) -> int:
    """The end of the first line of ``buf`` (a newline outside double quotes), or -1."""
    at = buf.find(b"\n")
    while at >= 0 and buf.count(b'"', 0, at) % 2:
        at = buf.find(b"\n", at + 1)  # a newline inside a quoted name
    return at


def _count_columns(line: bytes | bytearray, delimiter: str) -> int:
    """The fields of one CSV line (quoted delimiters are inside a field)."""
    sep = delimiter.encode()
    if b'"' not in line:
        return line.count(sep) + 1
    import csv

    text = bytes(line).decode("utf-8-sig", errors="replace")
    try:
        return len(next(csv.reader([text], delimiter=delimiter, strict=False), []))
    except csv.Error:  # a name longer than the csv module's field limit: counted as written
        return line.count(sep) + 1


def text_header(path: str | os.PathLike[str], delimiter: str = ",",
                max_columns: int | None = None) -> TextHeader:
    """The header line of the CSV or TSV file ``path``, read 1 MiB at a time and no further
    than its end, than :data:`CSV_HEADER_MAX` bytes, or (without quotes in it) than the
    point where it names more than ``max_columns`` columns."""
    buf = bytearray()
    sep = delimiter.encode()
    with open(path, "rb") as fh:
        while True:
            chunk = fh.read(CSV_BLOCK_SIZE)
            buf += chunk
            end = _line_end(buf)
            if end >= 0 or not chunk:
                line = buf if end < 0 else buf[:end]
                return TextHeader(_count_columns(line.rstrip(b"\r"), delimiter), len(line), True)
            if len(buf) > CSV_HEADER_MAX or (max_columns is not None and b'"' not in buf
                                              and buf.count(sep) + 1 > max_columns):
                return TextHeader(buf.count(sep) + 1, len(buf), False)


def check_text_header(path: Path, max_columns: int, delimiter: str | None = None
                      ) -> TextHeader:
    """Refuse (``TOO_LARGE``) the CSV or TSV file ``path`` when its header names more than
    ``max_columns`` columns or is longer than :data:`CSV_HEADER_MAX`; returns the header.
    ``delimiter``: by the file's suffix unless given."""
    if delimiter is None:
        delimiter = TEXT_TABLE_DELIMITERS.get(path.suffix.lower(), ",")
    try:
        h = text_header(path, delimiter, max_columns)
    except OSError:
        return TextHeader(0, 0, True)  # unreadable: the reader names the file and the fault
    if h.columns > max_columns:
        n = str(h.columns) if h.complete else f"more than {max_columns} (at least {h.columns})"
        raise LogFormatError(
            f"its header names {n} columns, more than the cap of {max_columns}; if the log "
            f"is really this wide, raise the cap with --max-columns {h.columns} (max_columns "
            "in a config file)", path=str(path), code=ErrorCode.TOO_LARGE)
    if not h.complete:
        raise LogFormatError(
            f"its header line is longer than {CSV_HEADER_MAX >> 20} MiB (no line end in its "
            "first bytes): not a table grokaudit reads; convert it to Parquet",
            path=str(path), code=ErrorCode.TOO_LARGE)
    return h


def _fields(obj: Any, limit: int) -> int:
    """The scalar fields of a JSON record once nested objects are flattened (``a.b``), counted
    up to just past ``limit``."""
    n = 0
    todo = [obj]
    while todo and n <= limit:
        o = todo.pop()
        for v in o.values():
            if isinstance(v, dict) and v:
                todo.append(v)
            else:
                n += 1
    return n


def check_first_record(path: Path, max_columns: int) -> None:
    """Refuse (``TOO_LARGE``) the JSON-lines file ``path`` when its first record holds more
    than ``max_columns`` fields (nested objects flattened, as the reader flattens them): a
    log that wide is refused before its records are parsed into columns. Only the first
    non-blank line is read (at most :data:`CSV_HEADER_MAX` bytes of it); a line that is not
    a JSON object is left to the reader, which names it."""
    import json

    try:
        with open(path, "rb") as fh:
            line = b""
            while not line.strip():
                line = fh.readline(CSV_HEADER_MAX + 1)
                if not line:
                    return
    except OSError:
        return  # unreadable: the reader names the file and the fault
    if len(line) > CSV_HEADER_MAX:
        raise LogFormatError(
            f"its first record is longer than {CSV_HEADER_MAX >> 20} MiB: not a log grokaudit "
            "reads; convert it to Parquet", path=str(path), code=ErrorCode.TOO_LARGE)
    try:
        rec = json.loads(line)
    except (ValueError, RecursionError):
        return
    n = _fields(rec, max_columns) if isinstance(rec, dict) else 0
    if n > max_columns:
        raise LogFormatError(
            f"its first record holds more than {max_columns} fields, the cap on columns; if "
            "the log is really this wide, raise the cap with --max-columns (max_columns in a "
            "config file)", path=str(path), code=ErrorCode.TOO_LARGE)


def csv_block_size(path: str | os.PathLike[str], delimiter: str = ",") -> int:
    """The block size for pyarrow's CSV reader of ``path``: its default (1 MiB), or room for
    the header line and a row as long when the header is longer (at most
    :data:`CSV_HEADER_MAX` and a row). Refuses a header longer than that (``TOO_LARGE``)."""
    p = Path(path)
    h = check_text_header(p, 2**62, delimiter) if p.is_file() else TextHeader(0, 0, True)
    return max(CSV_BLOCK_SIZE, 2 * h.size + CSV_BLOCK_SIZE)
