"""How large an input may say it is, checked before it is read.

A Parquet file is compressed: a file of half a megabyte can declare twenty million rows and
expand to more than a gigabyte. Its footer says how many rows and columns it holds, so that is
read first (a few kilobytes), and an input that declares more than :class:`Limits` allows is
refused (``TOO_LARGE``) before a single column is read, naming the file, what it declares and
the option that raises the cap (``--max-rows``, ``--max-columns``, or ``max_rows`` /
``max_columns`` in a config file). A folder counts the rows of every Parquet file under it.

Text formats (CSV, JSONL, TensorBoard, W&B exports) declare nothing: what they can hold is
bounded by their bytes, and they are read as they are.
"""

from __future__ import annotations

import os
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
    than ``limits`` allows; ``None`` checks nothing."""
    if limits is None:
        return
    d = declared(path)
    if d is None:
        return
    where = "declares" if d.files == 1 and not Path(path).is_dir() else (
        f"holds {d.files} Parquet file(s) that declare")
    if d.rows > limits.max_rows:
        raise LogFormatError(
            f"{where} {d.rows} rows, more than the cap of {limits.max_rows}; if the log is "
            f"really this large, raise the cap with --max-rows {d.rows} (max_rows in a config "
            "file)", path=str(path), code=ErrorCode.TOO_LARGE)
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
