"""One error root for grokaudit, with subclasses that also take a builtin base.

The CLI catches :class:`GrokauditError` once and turns it into a one-line message and
exit code 2; library users can catch ``ValueError`` or ``ImportError`` as usual. Every error
carries an :class:`ErrorCode` (``exc.code``): scripts and tests test the code, never the text.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from enum import Enum
from typing import Any


class ErrorCode(str, Enum):
    """Why grokaudit refused an input, an option or an output. The value appears in messages
    as ``[CODE]`` and is what tests assert."""

    # -- files -------------------------------------------------------------------------------
    FILE_NOT_FOUND = "FILE_NOT_FOUND"
    FILE_EMPTY = "FILE_EMPTY"
    FILE_UNREADABLE = "FILE_UNREADABLE"  #: the parser of its format rejected it
    UNKNOWN_FILE_TYPE = "UNKNOWN_FILE_TYPE"
    UNKNOWN_FORMAT = "UNKNOWN_FORMAT"  #: no adapter recognises it / no such adapter
    FORMAT_MISMATCH = "FORMAT_MISMATCH"  #: the named adapter cannot read this path
    CORRUPT_RECORD = "CORRUPT_RECORD"  #: a damaged record inside a readable file
    DATABASE_LOCKED = "DATABASE_LOCKED"
    NO_SHARDS = "NO_SHARDS"
    SHARDS_INCOMPATIBLE = "SHARDS_INCOMPATIBLE"
    UNREAD_FILES = "UNREAD_FILES"  #: a folder of shards also holds logs it would not read
    PROVENANCE_MALFORMED = "PROVENANCE_MALFORMED"
    #: a file read in parts changed (or went) between its parts: they would mix two versions
    INPUT_CHANGED = "INPUT_CHANGED"
    #: a file that could run code when read (a pickle holding more than tensors and numbers)
    UNSAFE_FILE = "UNSAFE_FILE"
    #: a RunLogger folder whose segment numbers have a gap: rows written were lost
    SEGMENT_MISSING = "SEGMENT_MISSING"
    #: a hive key repeated in one path with two values, or a path value a column contradicts
    HIVE_KEY_CONFLICT = "HIVE_KEY_CONFLICT"
    # -- columns and values ------------------------------------------------------------------
    MISSING_COLUMN = "MISSING_COLUMN"
    DUPLICATE_COLUMN = "DUPLICATE_COLUMN"
    BAD_COLUMN_TYPE = "BAD_COLUMN_TYPE"
    MISSING_VALUES = "MISSING_VALUES"  #: a required value (run id, step) is missing
    NEGATIVE_STEP = "NEGATIVE_STEP"
    STEP_OUT_OF_RANGE = "STEP_OUT_OF_RANGE"
    NON_INTEGER_STEP = "NON_INTEGER_STEP"
    #: one step column counts iterations in some rows and epochs in others
    STEP_UNITS_MIXED = "STEP_UNITS_MIXED"
    INFINITE_VALUE = "INFINITE_VALUE"
    ACCURACY_OUT_OF_RANGE = "ACCURACY_OUT_OF_RANGE"
    NOT_CONSTANT_IN_RUN = "NOT_CONSTANT_IN_RUN"
    DUPLICATE_ROWS = "DUPLICATE_ROWS"
    NO_ROWS = "NO_ROWS"
    TOO_FEW_POINTS = "TOO_FEW_POINTS"
    OUT_OF_MEMORY = "OUT_OF_MEMORY"  #: the log does not fit in the memory the process may use
    TOO_LARGE = "TOO_LARGE"  #: a file declares more rows or columns than the cap allows
    # -- what to audit -----------------------------------------------------------------------
    NO_METRIC = "NO_METRIC"
    METRIC_NOT_FOUND = "METRIC_NOT_FOUND"
    RESERVED_COLUMN = "RESERVED_COLUMN"  #: --metric test_acc, --metric step…
    NOT_A_SERIES = "NOT_A_SERIES"  #: a per-step column was expected
    NO_AXIS = "NO_AXIS"
    AMBIGUOUS_AXIS = "AMBIGUOUS_AXIS"
    NOT_A_CONDITION = "NOT_A_CONDITION"  #: --by / --cell / --pair … is not constant in runs
    NOT_NUMERIC = "NOT_NUMERIC"
    NOT_POSITIVE = "NOT_POSITIVE"
    CONDITION_MISSING = "CONDITION_MISSING"  #: a condition value is missing for a run
    DUPLICATE_AXIS_VALUES = "DUPLICATE_AXIS_VALUES"
    UNKNOWN_VALUE = "UNKNOWN_VALUE"  #: --arms / --baseline name a value the log lacks
    RUN_ID_AMBIGUOUS = "RUN_ID_AMBIGUOUS"  #: two run ids equal once normalized (NFC, trimmed)
    INCOMPATIBLE_INPUTS = "INCOMPATIBLE_INPUTS"
    # -- options and config files ------------------------------------------------------------
    INVALID_OPTION = "INVALID_OPTION"  #: wrong type or syntax
    OPTION_OUT_OF_RANGE = "OPTION_OUT_OF_RANGE"
    UNKNOWN_OPTION = "UNKNOWN_OPTION"
    INVALID_FAIL_ON = "INVALID_FAIL_ON"
    CONFIG_SYNTAX = "CONFIG_SYNTAX"
    CONFIG_NOT_FOUND = "CONFIG_NOT_FOUND"
    # -- outputs -----------------------------------------------------------------------------
    OUTPUT_IS_INPUT = "OUTPUT_IS_INPUT"
    OUTPUT_IN_INPUT_DIR = "OUTPUT_IN_INPUT_DIR"
    OUTPUT_IS_DIRECTORY = "OUTPUT_IS_DIRECTORY"
    OUTPUT_NOT_REGULAR = "OUTPUT_NOT_REGULAR"  #: a device, FIFO, socket or symbolic link
    OUTPUT_NOT_WRITABLE = "OUTPUT_NOT_WRITABLE"
    OUTPUT_EXTENSION = "OUTPUT_EXTENSION"
    OUTPUT_CLASH = "OUTPUT_CLASH"  #: two outputs of one command name the same file
    RUN_ID_TAKEN = "RUN_ID_TAKEN"  #: RunLogger: the run id already has files in the folder
    WORK_WOULD_BE_LOST = "WORK_WOULD_BE_LOST"  #: train: a checkpoint or partial log would be replaced
    STEP_DECREASING = "STEP_DECREASING"  #: RunLogger: a step below the run's previous step
    # -- environment -------------------------------------------------------------------------
    MISSING_EXTRA = "MISSING_EXTRA"
    TRAINER_FAILED = "TRAINER_FAILED"
    #: reproduce: the estimated training time exceeds --budget-hours
    BUDGET_EXCEEDED = "BUDGET_EXCEEDED"
    #: reproduce: a claim command it ran failed with an internal error (not a refusal)
    AUDIT_FAILED = "AUDIT_FAILED"


class GrokauditError(Exception):
    """Root of every error grokaudit raises on purpose. ``code`` says why (an ErrorCode)."""

    code: ErrorCode

    def __init__(self, message: str, *, code: ErrorCode) -> None:
        if not isinstance(code, ErrorCode):
            raise TypeError(f"code must be an ErrorCode, got {code!r}")
        self.code = code
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as what it is (a Ray task or a worker process hands its error back this
        way): rebuilt without calling ``__init__`` again, whose keyword-only ``code`` pickle's
        default (``cls(*args)``) cannot pass, so the message, the code and every attribute
        (path, column, option, …) come back as they were."""
        return (_rebuild, (type(self), self.args, dict(self.__dict__)))


def _rebuild(cls: type[GrokauditError], args: tuple[Any, ...], state: dict[str, Any]
             ) -> GrokauditError:
    err = cls.__new__(cls)
    Exception.__init__(err, *args)
    err.__dict__.update(state)
    return err


class LogFormatError(GrokauditError, ValueError):
    """The log cannot be read as the canonical table (a missing or invalid column, bad values).

    The message names the file, the column and the fix. ``param`` names the parameter whose
    value was refused (``"by"``, ``"cell"``, ``"metrics"``…; None when it is the log itself):
    the message spells it as the caller does (:func:`param_name`).
    """

    def __init__(self, message: str, *, code: ErrorCode, path: str | None = None,
                 column: str | None = None, param: str | None = None) -> None:
        self.path = path
        self.column = column
        self.param = param
        prefix = f"{path}: " if path else ""
        super().__init__(prefix + message, code=code)


class ConfigError(GrokauditError, ValueError):
    """An invalid option, flag or configuration file value. ``option`` names it."""

    def __init__(self, message: str, *, code: ErrorCode = ErrorCode.INVALID_OPTION,
                 option: str | None = None) -> None:
        self.option = option
        super().__init__(message, code=code)


class OutputError(GrokauditError, ValueError):
    """An output path that grokaudit refuses to write (an input, a device, a directory…)."""

    def __init__(self, message: str, *, code: ErrorCode, path: str | None = None) -> None:
        self.path = path
        super().__init__(message, code=code)


class MissingExtraError(GrokauditError, ImportError):
    """An optional dependency is needed; the message names the extra to install."""

    def __init__(self, message: str, *, code: ErrorCode = ErrorCode.MISSING_EXTRA) -> None:
        super().__init__(message, code=code)


#: True while the command line runs: messages name a parameter by its flag (``--by``).
_FLAG_SPELLING: ContextVar[bool] = ContextVar("grokaudit_flag_spelling", default=False)

#: The flags not spelled ``--`` + the parameter's name.
_FLAGS = {"metrics": "--metric"}


def param_name(param: str) -> str:
    """How a message names the parameter ``param`` (``"by"``; ``"baseline/raised"`` for
    two): ``by=`` from the Python API, its flag ``--by`` while the command line runs
    (:func:`flag_spelling`). The library raises with parameter names; only the CLI turns them
    into flags."""
    if _FLAG_SPELLING.get():
        return "/".join(_FLAGS.get(p, "--" + p.replace("_", "-")) for p in param.split("/"))
    return "/".join(f"{p}=" for p in param.split("/"))


def param_value(param: str, value: str) -> str:
    """``param`` given ``value``, as the caller writes it: ``cell=arch`` or ``--cell arch``."""
    name = param_name(param)
    return f"{name} {value}" if _FLAG_SPELLING.get() else f"{name}{value}"


@contextmanager
def flag_spelling() -> Iterator[None]:
    """Within this block messages name parameters by their flags (the command line's)."""
    token = _FLAG_SPELLING.set(True)
    try:
        yield
    finally:
        _FLAG_SPELLING.reset(token)


class GrokauditWarning(UserWarning):
    """Root of the warnings grokaudit issues."""
