"""Whether a path is a canonical table (``run``, ``step``, the accuracies: read as it is) or a
log for the adapters: a cheap look at its column names. Both the loader and the hive dataset
ask, so it lives apart from both (no import cycle between them)."""

from __future__ import annotations

import json
from pathlib import Path

from .limits import CSV_HEADER_MAX
from .roles import choose_accuracy


def is_canonical(p: Path) -> bool:
    """True when ``p`` is a canonical table, read as it is: a Parquet, CSV, TSV or JSON-lines
    file whose columns include ``run`` and ``step``, a folder of Parquet shards whose first
    shard has them, or a :class:`~grokaudit.RunLogger` folder. Anything else (a file without
    a run column, another step name, another format) is read by the adapters."""
    if p.is_dir():
        from .runfolder import is_run_folder

        if is_run_folder(p):
            return True
        from .shards import shard_files

        shards = shard_files(p)
        return bool(shards) and _canonical_columns(shards[0])
    # JSON lines always go through the table reader: records without a step (a config record,
    # a summary record) are set aside there whatever the first record holds
    return p.suffix.lower() in (".parquet", ".pq", ".csv", ".tsv") and _canonical_columns(p)


def _canonical_columns(p: Path) -> bool:
    """``run`` and ``step`` present, and ``test_acc`` too unless no column could be the test
    accuracy (a log audited on a loss, ``--grok-on``): a table whose accuracy has another name
    (``val_acc``) is read by the adapters, which choose it and say so."""
    names = _column_names(p)
    if names is None:
        return p.suffix.lower() in (".parquet", ".pq")  # damaged: the canonical reader says why
    return canonical_names(names)


def canonical_names(names: set[str] | frozenset[str]) -> bool:
    """Column names of a canonical table: ``run``, ``step``, and ``test_acc`` unless no column
    could be the test accuracy (see :func:`_canonical_columns`)."""
    if not {"run", "step"} <= names:
        return False
    if "test_acc" not in names and names & _LONG_NAMES and names & _LONG_VALUES:
        return False  # a long table (run, step, metric, value): the table reader pivots it
    return "test_acc" in names or choose_accuracy({n: 1 for n in names}, "test_acc") is None


#: The name and value columns of a long table (``grokaudit.adapters.shapes``).
_LONG_NAMES = frozenset({"metric", "metric_name", "key", "tag", "name"})
_LONG_VALUES = frozenset({"value", "val"})


def _column_names(p: Path) -> set[str] | None:
    """The cheap look at a file's column names (schema, header line, first record); None when
    the file cannot be read."""
    suffix = p.suffix.lower()
    try:
        if suffix in (".parquet", ".pq"):
            import pyarrow.parquet as pq

            names = set(pq.read_schema(p).names)
        elif suffix in (".csv", ".tsv"):
            import csv

            with p.open("r", encoding="utf-8-sig", errors="replace", newline="") as fh:
                first = fh.readline(CSV_HEADER_MAX)  # (a header's length is capped there)
            row = next(csv.reader([first], delimiter="\t" if suffix == ".tsv" else ","), [])
            names = {c.strip() for c in row}
        else:
            with p.open("r", encoding="utf-8", errors="replace") as fh:
                line = ""
                for line in fh:
                    if line.strip():
                        break
            rec = json.loads(line) if line.strip() else {}
            names = set(rec) if isinstance(rec, dict) else set()
    except (OSError, ValueError, RecursionError):  # unreadable: let the reader say why
        return None
    return names
