"""A logged step and a logged value, checked as :class:`~grokaudit.logger.RunLogger` and
:class:`~grokaudit.live.LiveRun` take them (a leaf: both import it, neither the other)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .errors import ErrorCode, LogFormatError
from .schema import STEP_MAX


def step_value(step: Any) -> int:
    """An integer optimizer step, 0 to 2**53; anything else refused with its code."""
    if isinstance(step, (bool, np.bool_)) or not hasattr(step, "__index__"):
        raise LogFormatError(f"step {step!r} ({type(step).__name__}) is not an integer; steps "
                             "are integer optimizer steps", column="step",
                             code=ErrorCode.NON_INTEGER_STEP)
    try:
        s = int(step.__index__())
    except (TypeError, ValueError, RuntimeError):
        raise LogFormatError(f"step {step!r} is not an integer; steps are integer optimizer "
                             "steps", column="step", code=ErrorCode.NON_INTEGER_STEP) from None
    if s < 0:
        raise LogFormatError(f"step {s} is negative; steps must be ≥ 0", column="step",
                             code=ErrorCode.NEGATIVE_STEP)
    if s > STEP_MAX:
        raise LogFormatError(f"step {s} is beyond the largest supported step {STEP_MAX}",
                             column="step", code=ErrorCode.STEP_OUT_OF_RANGE)
    return s


def metric_value(name: str, value: Any) -> float:
    """A logged value as float64; ``None`` and NaN mean "not logged at this step"."""
    if value is None:
        return math.nan
    if isinstance(value, (bool, np.bool_, str, bytes)):
        raise LogFormatError(f"value {name!r} = {value!r} is not a number; log numbers (NaN or "
                             "None = not logged); conditions go in conditions={...}",
                             column=name, code=ErrorCode.BAD_COLUMN_TYPE)
    if getattr(value, "ndim", 0) != 0:
        raise LogFormatError(f"value {name!r} has shape {getattr(value, 'shape', '?')}; log one "
                             "number per name (for a weight matrix: spectral_metrics(W))",
                             column=name, code=ErrorCode.BAD_COLUMN_TYPE)
    try:
        return float(value)
    except (TypeError, ValueError, RuntimeError):
        raise LogFormatError(f"value {name!r} = {value!r} ({type(value).__name__}) is not a "
                             "real number", column=name,
                             code=ErrorCode.BAD_COLUMN_TYPE) from None
