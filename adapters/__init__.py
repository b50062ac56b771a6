"""Readers that turn the logs people already have into grokaudit's canonical table.

::

    from grokaudit.adapters import read_log
    table = read_log("runs/")                      # format detected from the path
    table = read_log("export.csv", "wandb-csv")    # or named
    table = read_log("sweep/", mapping={"val_acc": "test_acc"},
                     run_from="path", cond={"wd": r"wd([0-9.]+)"})

``read_log`` returns a ``pyarrow.Table`` (one row per (run, step)) whose schema metadata holds
the provenance under ``grokaudit``: the adapter and its version, the source files, warnings,
and findings (``SOURCE_DOWNSAMPLED``, ``RESUMED_DUPLICATES``, ``SOURCE_TRUNCATED``,
``POSSIBLY_SAMPLED``, ``RUN_CONTINUED``, ``STEP_CADENCE_MISMATCH``) that ``grokaudit check``
shows. See ``docs/adapters.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
from grokaudit import progress
from grokaudit.errors import ConfigError, ErrorCode, LogFormatError
from grokaudit.limits import COLUMN_CAP, DEFAULT_LIMITS, Limits, check_declared, column_cap
from grokaudit.shards import refuse_unreadable_entries
from grokaudit.text import safe

from .cadence import check_cadence
from .merge import ReadOptions, apply_options, build_table
from .mixed import join_conditions
from .points import Finding
from .registry import (
    FormatInfo,
    Reader,
    check_input,
    detect_format,
    get_reader,
    list_formats,
    readers,
    register,
)
from .shapes import layout_options

__all__ = [
    "Finding",
    "FormatInfo",
    "ReadOptions",
    "Reader",
    "detect_format",
    "get_reader",
    "list_formats",
    "read_log",
    "readers",
    "register",
]


#: The shape options one reader alone reads: (its format, the flag, what the flag is for).
_READER_OPTIONS = {
    "columns": (("text",), "--columns", "names the columns of a header-less numeric text file"),
    "long": (("table",), "--long", "pivots a long table (one row per step and metric)"),
    "step_from": (("table", "text"), "--step-from",
                  "numbers the rows of a table (or the lines of a header-less text file) with "
                  "no step column"),
}


def _detect(p: Path, shape: Mapping[str, Any]) -> str:
    """The format of ``p``; with ``--columns`` and no format recognised, the header-less text
    reader, whose refusal says why the file is none (a header line, a word on some line)."""
    try:
        return detect_format(p)
    except LogFormatError as exc:
        if shape.get("columns") and exc.code is ErrorCode.UNKNOWN_FORMAT:
            return "text"
        raise


def _refuse_unread_layout(shape: Mapping[str, Any], name: str, p: Path) -> None:
    """A shape option that the reader of ``p`` does not read is refused (``INVALID_OPTION``),
    never ignored: ``--columns`` on a CSV with a header would have changed nothing."""
    for key, (fmts, flag, what) in _READER_OPTIONS.items():
        if shape.get(key) is not None and name not in fmts:
            raise ConfigError(f"{flag} {what}, but {safe(str(p))} is read as {safe(name)} "
                              f"(`grokaudit formats`): leave {flag} out, or give --format "
                              f"{fmts[0]} if it is such a file", option=flag,
                              code=ErrorCode.INVALID_OPTION)


def read_log(path: str | Path, format: str | None = None, *,
             mapping: dict[str, str] | None = None, run_from: str | None = None,
             cond: dict[str, str] | None = None, partial: bool = False,
             limits: Limits | None = DEFAULT_LIMITS, on_duplicate: str = "error",
             layout: Mapping[str, Any] | None = None) -> pa.Table:
    """Read an external log as the canonical table (Arrow, provenance in its metadata).

    ``partial`` reads a part of a log that other paths complete (``check acc.csv metrics/``):
    a part may lack the test accuracy, which the merged table must have.

    ``format`` names a reader (``grokaudit formats``); by default it is detected from ``path``.
    ``mapping`` renames metrics (``{"val_acc": "test_acc"}``); ``run_from`` is ``"path"``
    (run ids from file or directory names), ``"column"`` (a ``run`` column) or a column name;
    ``cond`` maps a condition name to a regex over each run's path (first group is the value).
    ``limits`` caps the rows and columns the input may declare in its Parquet metadata
    (``TOO_LARGE``; ``None``: no cap). ``on_duplicate`` (``error``, ``first``, ``last``)
    resolves the rows of one (run, step) that a table with a run column holds twice with
    different values, as every reader does (:func:`grokaudit.loader.join_duplicate_rows`).
    ``layout`` holds the options that say a log's shape (:func:`.shapes.layout_options`:
    ``long`` (``--long``), ``columns`` (``--columns``), ``conditions_from`` and ``on``
    (``--conditions-from``, ``--on``), ``step_scale`` (``--step-scale``: a positive integer
    or ``"cadence"``, :mod:`.cadence`)).
    Raises :class:`~grokaudit.errors.LogFormatError` for unreadable input and
    :class:`~grokaudit.errors.MissingExtraError` when the format's extra is not installed.
    """
    p = Path(path)
    check_input(p)
    if p.is_dir():  # (here, not in check_input: detect_format checks the input again)
        refuse_unreadable_entries(p)
    check_declared(p, limits)  # what its Parquet metadata declares, before reading it
    shape = layout_options(layout)
    name = format or _detect(p, shape)
    reader = get_reader(name)
    if on_duplicate not in ("error", "first", "last"):
        raise ConfigError(f"on_duplicate must be error, first or last, got {on_duplicate!r}",
                          option="on_duplicate", code=ErrorCode.INVALID_OPTION)
    _refuse_unread_layout(shape, name, p)
    options = ReadOptions(mapping=mapping, run_from=run_from, cond=cond,
                          on_duplicate=on_duplicate, **shape)
    try:
        with progress.reading(str(p)), \
                column_cap(limits.max_columns if limits is not None else COLUMN_CAP.get()):
            points = reader.read(p, options)
            progress.stage("joining by run and step")
            apply_options(points, options, str(p), whole=not partial)
            join_conditions(points, options, p, whole=not partial)
            # a step column counting log events, against the cadence the config declares
            check_cadence(points, options.step_scale)
            # a run's rows repeated in two table files of one folder are a resume (the last
            # read wins, RESUMED_DUPLICATES) unless --on-duplicate first|last says which wins
            keep = on_duplicate if reader.name == "table" and on_duplicate != "error" else None
            return build_table(points, adapter=reader.name, adapter_version=reader.version,
                               path=str(p), require_test_acc=not (reader.partial or partial),
                               on_duplicate=keep)
    except LogFormatError as exc:
        if exc.path is not None:
            raise
        # an error raised where the file was not known (a step checked in Points.add): name
        # the input, so that the message still says which log it is about
        raise LogFormatError(str(exc), path=str(p), column=exc.column,
                             code=exc.code) from None
