"""What the loader is given to read a log that is not a canonical table: a :class:`LogReader`.

The loader (``loader.read_any``, ``loader.read_source``) reads canonical tables itself and
hands every other path to the reader it is passed; it never names the adapters. They are wired
here, in one place: :data:`ADAPTERS` is the adapters' registry (``grokaudit.adapters.read_log``,
every format of ``grokaudit formats``), imported on the first read that needs it, so that
reading a canonical table never imports the adapters. The public entry points
(``grokaudit.audit_path``, the command line) pass it; it is also the loader's default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa

from .errors import ErrorCode, LogFormatError
from .limits import Limits


class LogReader(Protocol):
    """Reads one path in a format named by ``format`` (``None``: detected from the path) as
    the canonical Arrow table, provenance in its metadata; ``mapping``, ``run_from`` and
    ``cond`` are the ``--map``, ``--run-from`` and ``--cond`` options; ``partial`` reads a part
    of a log that may lack the test accuracy; ``limits`` caps what the input may declare;
    ``on_duplicate`` (``error``, ``first``, ``last``: ``--on-duplicate``) resolves rows of one
    (run, step) with different values by the loader's rule
    (:func:`grokaudit.loader.join_duplicate_rows`). The loader passes ``on_duplicate`` only
    when it is not ``error``, so a reader that resolves nothing need not take it; likewise
    ``layout`` (the shape options ``--long``, ``--columns``, ``--conditions-from``, ``--on``),
    passed only when one is given.
    Raises :class:`~grokaudit.errors.LogFormatError` for a path it cannot read."""

    def __call__(self, path: Path, format: str | None, /, *,
                 mapping: dict[str, str] | None, run_from: str | None,
                 cond: dict[str, str] | None, partial: bool,
                 limits: Limits | None, on_duplicate: str = "error",
                 layout: Mapping[str, Any] | None = None) -> pa.Table: ...


@dataclass(frozen=True)
class InstalledAdapters:
    """The adapters' registry as a :class:`LogReader`: ``grokaudit.adapters.read_log``,
    imported when first called."""

    def __call__(self, path: Path, format: str | None, /, *,
                 mapping: dict[str, str] | None, run_from: str | None,
                 cond: dict[str, str] | None, partial: bool,
                 limits: Limits | None, on_duplicate: str = "error",
                 layout: Mapping[str, Any] | None = None) -> pa.Table:
        try:
            from .adapters import read_log
        except ImportError:
            raise LogFormatError("not a canonical table (run, step, test_acc columns) and the "
                                 "adapters are not installed; reinstall grokaudit",
                                 path=str(path), code=ErrorCode.UNKNOWN_FORMAT) from None
        return read_log(path, format, mapping=mapping, run_from=run_from, cond=cond,
                        partial=partial, limits=limits, on_duplicate=on_duplicate,
                        layout=layout)


#: The adapters' registry: what the public entry points pass to the loader.
ADAPTERS: LogReader = InstalledAdapters()
