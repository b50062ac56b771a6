"""The registry of readers: format name -> reader, and format detection from a path.

Readers are found through the entry-point group ``grokaudit.adapters``; the built-in readers
are declared there too (``pyproject.toml``), so a third-party reader is registered exactly like
a built-in one. An entry point names a :class:`Reader` object::

    [project.entry-points."grokaudit.adapters"]
    myformat = "my_package.grokaudit_reader:READER"

When the installed metadata is stale (a source checkout not reinstalled since the entry points
were added), the built-in readers are added from :data:`BUILTIN` so that they always exist.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grokaudit.errors import ErrorCode, GrokauditError, LogFormatError, MissingExtraError
from grokaudit.text import safe

from .merge import ReadOptions
from .points import Points

ENTRY_POINT_GROUP = "grokaudit.adapters"

#: Built-in readers: name -> "module:attribute" (the same targets as the entry points).
BUILTIN: dict[str, str] = {
    "table": "grokaudit.adapters.table:READER",
    "npz": "grokaudit.adapters.npz:READER",
    "tensorboard": "grokaudit.adapters.tensorboard:READER",
    "wandb-csv": "grokaudit.adapters.wandb:PANEL_CSV_READER",
    "wandb-history": "grokaudit.adapters.wandb:HISTORY_READER",
    "wandb-offline": "grokaudit.adapters.wandb:OFFLINE_READER",
    "mlflow": "grokaudit.adapters.mlflow:FILE_STORE_READER",
    "mlflow-sqlite": "grokaudit.adapters.mlflow:SQLITE_READER",
    "text": "grokaudit.adapters.text:READER",
}


@dataclass(frozen=True)
class Reader:
    """One log format: how to recognise it and how to read it.

    ``detect(path)`` returns True when ``path`` (a file or a directory) is in this format; it
    must be cheap (a name, a header) and must not import the optional dependency. An
    ``OSError`` or ``ValueError`` it raises means "not this format"; a
    :class:`~grokaudit.errors.GrokauditError` means "this format, but it cannot be read now"
    (a locked database) and ends detection with that error.
    ``read(path, options)`` returns the collected :class:`Points`. ``priority`` orders
    detection: lower is tried first (specific formats before the generic table). ``partial``
    readers may return a log without a test accuracy (one chart of several).
    """

    name: str
    description: str
    read: Callable[[Path, ReadOptions], Points]
    detect: Callable[[Path], bool]
    version: str = "1"
    extra: str | None = None  #: the grokaudit extra that installs the dependency
    extra_module: str | None = None  #: the module that extra provides (checked without import)
    priority: int = 50
    #: one file may hold only part of a log (a W&B chart export: some metrics of every run),
    #: so a file without a test accuracy is read, to be merged with the path that has it; the
    #: canonical table (``grokaudit check``) still refuses a log without one
    partial: bool = False

    def extra_installed(self) -> bool:
        if self.extra_module is None:
            return True
        return importlib.util.find_spec(self.extra_module) is not None


@dataclass(frozen=True)
class FormatInfo:
    """A row of ``grokaudit formats``."""

    name: str
    description: str
    extra: str | None
    extra_installed: bool


_registered: dict[str, Reader] = {}


def register(reader: Reader) -> None:
    """Register ``reader`` at run time (entry points are the usual path)."""
    _registered[reader.name] = reader


def _load(target: str) -> Reader:
    mod_name, _, attr = target.partition(":")
    obj = getattr(importlib.import_module(mod_name), attr)
    if not isinstance(obj, Reader):
        raise GrokauditError(f"adapter entry point {target!r} is not a grokaudit Reader",
                             code=ErrorCode.UNKNOWN_FORMAT)
    return obj


def readers() -> dict[str, Reader]:
    """All readers by name: entry points, then built-ins missing from stale metadata."""
    found: dict[str, Reader] = {}
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in found:
            continue
        try:
            found[ep.name] = _load(ep.value)
        except (ImportError, AttributeError, GrokauditError):
            continue  # a broken third-party plugin must not break the others
    for name, target in BUILTIN.items():
        found.setdefault(name, _load(target))
    found.update(_registered)
    return found


def get_reader(name: str) -> Reader:
    """The reader registered under ``name``; raises :class:`LogFormatError` if none."""
    all_readers = readers()
    if name not in all_readers:
        raise LogFormatError(f"unknown format {safe(name)!r}; known formats: "
                             f"{', '.join(sorted(all_readers))} (see `grokaudit formats`)",
                             code=ErrorCode.UNKNOWN_FORMAT)
    return all_readers[name]


def check_input(p: Path) -> None:
    """Refuse, naming ``p``, an input that no reader could read: a missing path, an empty
    file, an empty folder, or one grokaudit has no permission to read."""
    if not p.exists():
        raise LogFormatError("no such file or directory; check the path", path=str(p),
                             code=ErrorCode.FILE_NOT_FOUND)
    if not os.access(p, os.R_OK | (os.X_OK if p.is_dir() else 0)):
        raise LogFormatError("permission denied: grokaudit cannot read it; fix its permissions "
                             "or read a copy", path=str(p), code=ErrorCode.FILE_UNREADABLE)
    if p.is_file() and p.stat().st_size == 0:
        raise LogFormatError("file is empty; there is nothing to read", path=str(p),
                             code=ErrorCode.FILE_EMPTY)
    if p.is_dir() and not any(q.is_file() for q in p.rglob("*")):
        raise LogFormatError("folder holds no files; there is nothing to read (check the path)",
                             path=str(p), code=ErrorCode.FILE_EMPTY)


def detect_format(path: str | Path) -> str:
    """The name of the format of ``path``; raises :class:`LogFormatError` naming the file.

    A reader's ``detect`` that fails with ``OSError`` or ``ValueError`` does not recognise the
    path; one that raises a :class:`GrokauditError` (a locked MLflow database, a damaged SQLite
    file) recognised it but cannot read it, and that error is raised as it is — never turned
    into "not a log format grokaudit recognises".
    """
    p = Path(path)
    check_input(p)
    claims: list[str] = []
    for reader in sorted(readers().values(), key=lambda r: (r.priority, r.name)):
        try:
            if reader.detect(p):
                if p.is_file():
                    return reader.name
                claims.append(reader.name)
        except GrokauditError:
            raise
        except (OSError, ValueError, RecursionError):  # an unreadable header: not this format
            continue
    if claims:
        return _one_format(p, claims)
    found = ""
    if p.is_dir():
        files = [q for q in itertools.islice((q for q in p.rglob("*") if q.is_file()), 4)]
        shown = ", ".join(repr(safe(q.relative_to(p).as_posix())) for q in files[:3])
        found = f" (found {shown}{', …' if len(files) > 3 else ''})"
    raise LogFormatError(
        f"not a log format grokaudit recognises{found}; see `grokaudit formats`, and pass "
        "--format NAME if you know it", path=str(p), code=ErrorCode.UNKNOWN_FORMAT)


#: Formats whose files are tables: where one of them claims a folder, the generic table
#: reader's claim on the same files is no other format.
TABLE_BASED = frozenset({"wandb-csv", "wandb-history"})


def _one_format(p: Path, claims: list[str]) -> str:
    """The format of a folder, decided by all its files: the one reader that claims it.

    The generic table reader does not compete with a table-based format (a W&B history is a
    table) nor where its only files are config files (``hparams.yaml`` beside TensorBoard
    events, ``wandb-summary.json`` beside a ``.wandb`` file). Two stores in one folder
    (TensorBoard events and an MLflow store) are refused, naming both: read each as its own
    path, or choose with ``--format``."""
    if "table" in claims and len(claims) > 1:
        from .files import table_files
        from .records import SIDECAR_NAMES, config_like

        if set(claims) & TABLE_BASED or all(f.name in SIDECAR_NAMES or config_like(f)
                                            for f in table_files(p)):
            claims = [c for c in claims if c != "table"]
    if len(set(claims)) == 1:
        return claims[0]
    raise LogFormatError(
        f"this folder holds logs of several formats ({', '.join(sorted(set(claims)))}); give "
        "each as its own path (the folder that holds it), or choose one with --format NAME",
        path=str(p), code=ErrorCode.UNKNOWN_FORMAT)


def list_formats() -> list[FormatInfo]:
    """Every registered format with its one-line description and extra status."""
    return [FormatInfo(r.name, r.description, r.extra, r.extra_installed())
            for r in sorted(readers().values(), key=lambda r: r.name)]


def import_extra(module: str, extra: str) -> Any:
    """Import ``module``; raise :class:`MissingExtraError` naming the extra when it is absent."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtraError(f"reading this log needs {module.split('.')[0]}, which is not "
                                f"installed; fix: pip install 'grokaudit[{extra}]'",
                                code=ErrorCode.MISSING_EXTRA) from None
