"""grokaudit: which numbers in a grokking training log can be trusted.

The public API::

    import grokaudit
    result = grokaudit.audit_path("logs.parquet", by="rho")
    result.verdicts            # per study and metric
    result.to_json()           # versioned, byte-stable JSON

See ``docs/`` for the definitions (AUDIT_SPEC).

The names below are imported on first use (PEP 562): ``import grokaudit`` and the command
line's start-up (``grokaudit --version``, ``--help``) do not load pandas and pyarrow, and a
Ctrl-C while a command loads them is the command's interruption (exit 130), not a traceback.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .version import __version__

if TYPE_CHECKING:
    from .api import audit_path, audit_table
    from .config import AuditConfig, make_config
    from .errors import ConfigError, GrokauditError, LogFormatError, MissingExtraError
    from .logger import RunLogger, read_run_folder
    from .metrics import spectral_metrics
    from .reasons import Reason, Severity
    from .results import AuditResult
    from .schema import read_table, write_table

#: Each public name → the module that holds it.
_WHERE = {
    "AuditConfig": "config", "make_config": "config",
    "ConfigError": "errors", "GrokauditError": "errors", "LogFormatError": "errors",
    "MissingExtraError": "errors", "Reason": "reasons", "Severity": "reasons",
    "read_table": "schema", "write_table": "schema", "audit_path": "api",
    "audit_table": "api", "AuditResult": "results", "RunLogger": "logger",
    "read_run_folder": "logger", "spectral_metrics": "metrics",
}

__all__ = ["AuditConfig", "AuditResult", "ConfigError", "GrokauditError", "LogFormatError",
           "MissingExtraError", "Reason", "RunLogger", "Severity", "__version__", "audit_path",
           "audit_table", "make_config", "read_run_folder", "read_table", "spectral_metrics",
           "write_table"]


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use; a submodule (``grokaudit.api``)
    imported when first named."""
    if name in _WHERE:
        value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    else:
        try:
            value = importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    import types

    loaded = {k for k, v in globals().items() if isinstance(v, types.ModuleType)
              and v.__name__.startswith(f"{__name__}.")}
    return sorted({*__all__, *loaded})
