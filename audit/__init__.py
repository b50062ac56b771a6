"""grokaudit: which numbers in a grokking training log can be trusted.

The public API::

    import grokaudit
    result = grokaudit.audit_path("logs.parquet", by="rho")
    result.verdicts            # per study and metric
    result.to_json()           # versioned, byte-stable JSON

See ``docs/`` for the definitions (AUDIT_SPEC).
"""

from __future__ import annotations

from .config import AuditConfig, make_config
from .errors import ConfigError, GrokauditError, LogFormatError, MissingExtraError
from .reasons import Reason, Severity
from .schema import read_table, write_table
from .version import __version__

__all__ = [
    "AuditConfig",
    "ConfigError",
    "GrokauditError",
    "LogFormatError",
    "MissingExtraError",
    "Reason",
    "Severity",
    "__version__",
    "make_config",
    "read_table",
    "write_table",
]

from .api import audit_path, audit_table  # noqa: E402
from .results import AuditResult  # noqa: E402

__all__ += ["AuditResult", "audit_path", "audit_table"]

from .logger import RunLogger, read_run_folder  # noqa: E402
from .metrics import spectral_metrics  # noqa: E402

__all__ += ["RunLogger", "read_run_folder", "spectral_metrics"]
