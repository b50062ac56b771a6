"""One error root for grokaudit, with subclasses that also take a builtin base.

The CLI catches :class:`GrokauditError` once and turns it into a one-line message and
exit code 2; library users can catch ``ValueError`` or ``FileNotFoundError`` as usual.
"""

from __future__ import annotations


class GrokauditError(Exception):
    """Root of every error grokaudit raises on purpose."""


class LogFormatError(GrokauditError, ValueError):
    """The log cannot be read as the canonical table (a missing or invalid column, bad values).

    The message names the file, the column and the fix.
    """

    def __init__(self, message: str, *, path: str | None = None, column: str | None = None,
                 code: str | None = None) -> None:
        self.path = path
        self.column = column
        self.code = code
        prefix = f"{path}: " if path else ""
        super().__init__(prefix + message)


class ConfigError(GrokauditError, ValueError):
    """An invalid option, flag or configuration file value."""


class MissingExtraError(GrokauditError, ImportError):
    """An optional dependency is needed; the message names the extra to install."""


class GrokauditWarning(UserWarning):
    """Root of the warnings grokaudit issues."""
