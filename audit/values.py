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


def _float_value(name: str, value: Any) -> float:
    """A logged value as float64 by ``float()``; ``None`` and NaN mean "not logged at this step"."""
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


def metric_value(name: str, value: Any) -> float:
    """A logged value as float64, as :meth:`~grokaudit.logger.RunLogger.log` and
    :meth:`~grokaudit.live.LiveRun.log` take it (``None`` and NaN: not
    logged; ±inf kept, to be counted), or a :class:`LogFormatError` where reading it would
    change it: a complex number (its imaginary part would be dropped), a boolean, text or an
    object in a NumPy array or tensor (``BAD_COLUMN_TYPE``), a finite number beyond float64's
    range such as ``10**400`` (``INFINITE_VALUE``: it would read as inf)."""
    kind = _kind(value)
    if kind is not None:
        raise LogFormatError(f"value {name!r} = {_short(value)} is {kind}, not a real number; log "
                             "real numbers (NaN or None = not logged)", column=name,
                             code=ErrorCode.BAD_COLUMN_TYPE)
    try:
        x = _float_value(name, value)
    except OverflowError:
        x = math.inf if _positive(value) else -math.inf
    if math.isinf(x) and not _same(value, x):
        raise LogFormatError(f"value {name!r} = {_short(value)} is beyond float64's range "
                             f"(±{np.finfo(float).max:.3g}): it would read as {x}; log it "
                             "as a float", column=name, code=ErrorCode.INFINITE_VALUE)
    return x


def _kind(value: Any) -> str | None:
    """What a value is when it is not a real number a float() would read faithfully: a
    complex, a boolean or a non-numeric array element (NumPy or torch, 0-d)."""
    if isinstance(value, (complex, np.complexfloating)):
        return "a complex number"
    dtype = getattr(value, "dtype", None)
    if isinstance(dtype, np.dtype):
        return (None if dtype.kind in "iuf" else "a complex number" if dtype.kind == "c"
                else "a boolean" if dtype.kind == "b" else f"an array of {dtype}")
    if dtype is not None and getattr(dtype, "is_complex", False) is True:  # torch
        return "a complex number"
    if dtype is not None and str(dtype) == "torch.bool":
        return "a boolean"
    return None


def _positive(value: Any) -> bool:
    try:
        return bool(value > 0)
    except Exception:  # a value without an order: the sign does not matter
        return True


def _same(value: Any, x: float) -> bool:
    """Whether ``value`` is ``x`` itself (an inf logged as inf, not a number beyond float64's
    range that became one)."""
    try:
        return bool(value == x)
    except Exception:  # a value that cannot be compared is not inf itself
        return False


def _short(value: Any) -> str:
    text = repr(value) if not isinstance(value, int) or value.bit_length() < 200 else (
        f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits")  # (no str():
    # an integer of over 4 300 digits cannot be written as text by Python)
    return text if len(text) <= 60 else text[:57] + "..."
