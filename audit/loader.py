"""The one loader: any log path a command is given → the canonical Arrow table.

``read_any`` serves ``audit_path``, ``check``, ``report`` and every claim command, so they all
read the same things the same way: a canonical table (Parquet, CSV, TSV, JSONL) or a folder of
Parquet shards directly, anything else through the adapters (imported only then).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from pathlib import Path

import pyarrow as pa

from .errors import ErrorCode, LogFormatError
from .schema import read_arrow

CANONICAL_SUFFIXES = (".parquet", ".pq", ".csv", ".tsv", ".jsonl", ".ndjson")


def read_any(path: str | os.PathLike[str], fmt: str | None = None, *,
             mapping: Mapping[str, str] | None = None, run_from: str | None = None,
             cond: Mapping[str, str] | None = None) -> pa.Table:
    """Read the log at ``path`` as a canonical Arrow table (provenance in its metadata).

    ``fmt`` names an adapter (``grokaudit formats``); ``mapping``/``run_from``/``cond`` are the
    adapters' ``--map``/``--run-from``/``--cond``. Raises :class:`LogFormatError`.
    """
    p = Path(path)
    if not p.exists():
        raise LogFormatError("no such file or directory; check the path", path=str(p),
                             code=ErrorCode.FILE_NOT_FOUND)
    adapter_opts = bool(fmt or mapping or run_from or cond)
    suffix = p.suffix.lower()
    canonical = suffix in CANONICAL_SUFFIXES or (
        p.is_dir() and any(q.suffix in (".parquet", ".pq") for q in p.iterdir()))
    if canonical and not adapter_opts and (suffix in (".parquet", ".pq") or p.is_dir()):
        return read_arrow(p)
    try:
        adapters = importlib.import_module("grokaudit.adapters")
    except ImportError:
        if canonical and not adapter_opts:
            return read_arrow(p)
        raise LogFormatError("not a canonical table (.parquet, .csv, .tsv, .jsonl) and the "
                             "adapters are not installed; reinstall grokaudit", path=str(p),
                             code=ErrorCode.UNKNOWN_FORMAT) from None
    if canonical and not adapter_opts:
        # a text table may be a W&B export: let detection decide, keep the fast path else
        if adapters.detect_format(p) == "table":
            return read_arrow(p)
    table: pa.Table = adapters.read_log(p, fmt, mapping=dict(mapping) if mapping else None,
                                        run_from=run_from, cond=dict(cond) if cond else None)
    return table
