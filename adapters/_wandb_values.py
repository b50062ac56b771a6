"""The texts of a W&B history: ``value_json`` read as Python reads it, many at once.

A history item's value is JSON text (``"0.25"``, ``"NaN"``, ``"{\"_type\": \"image\"}"``); its
number is ``float(text)`` when Python reads it so, else the JSON value (:func:`_value`). The
plain numbers, by far the most, are read all at once by Arrow's string-to-number cast (the same
correctly rounded conversion, :func:`parse_many`); every other text is read by Python.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from grokaudit.errors import ErrorCode, LogFormatError
from grokaudit.schema import STEP_MAX
from grokaudit.text import safe
from numpy.lib.stride_tricks import sliding_window_view

_SPECIAL = {"NaN": math.nan, "nan": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _value(text: str) -> Any:
    """A history value: float fast path (also reads NaN and Infinity), else JSON."""
    try:
        return float(text)
    except ValueError:
        return _json_value(text)


def _step_value(text: str) -> int | float | str | None:
    """A ``_step`` value_json: an int (read exactly, whatever its size), an integral float
    (``2.0``), None for ``null``, else the text itself (refused by the caller)."""
    t = text.strip()
    try:
        return int(t)
    except ValueError:
        pass
    try:
        return float(t)  # non-finite and fractional steps are refused by the caller
    except ValueError:
        pass
    return None if t == "null" else t


def _json_value(text: str) -> Any:
    try:
        v = json.loads(text)
    except (ValueError, RecursionError):  # nested too deep for Python: not a number either
        return None
    if isinstance(v, str):
        return _SPECIAL.get(v)
    return v


def _checked_step(k: int, step: Any, first_key: str, file: str) -> int:
    """The step of history record ``k`` (which holds values), or its :class:`LogFormatError`."""
    if step is None:
        raise LogFormatError(
            f"history record {k} ({safe(first_key)!r}, …) has no step; every "
            "logged value needs its step", path=file, column="_step",
            code=ErrorCode.MISSING_VALUES)
    if isinstance(step, str) or (isinstance(step, float) and not step.is_integer()):
        raise LogFormatError(
            f"history record {k} has the step {safe(step)[:40]!r}, which is not an "
            "integer", path=file, column="_step", code=ErrorCode.NON_INTEGER_STEP)
    istep = int(step)
    if not 0 <= istep <= STEP_MAX:
        raise LogFormatError(
            f"history record {k} has the step {istep}, outside 0..2**53; a damaged "
            "record?", path=file, column="_step",
            code=ErrorCode.NEGATIVE_STEP if istep < 0 else ErrorCode.STEP_OUT_OF_RANGE)
    return istep


def _texts(data: bytes, start: np.ndarray, length: np.ndarray) -> list[bytes]:
    return list(map(data.__getitem__, map(slice, start.tolist(), (start + length).tolist())))


def _floats(texts: list[bytes]) -> list[Any]:
    """``_value`` of each text (bytes of UTF-8): ``float()`` of the lot at once when it can."""
    try:
        return list(map(float, texts))
    except ValueError:
        return [_value(t.decode("utf-8")) for t in texts]


def _steps(texts: list[bytes]) -> list[int | float | str | None]:
    try:
        return list(map(int, texts))
    except ValueError:
        return [_step_value(t.decode("utf-8")) for t in texts]


# ------------------------------------------------------------------------------------------
# many texts at once
# ------------------------------------------------------------------------------------------

#: Widest text read at once (wider ones, rare, are read by Python).
_WIDE = 32
#: Per byte: 1 a character no plain number holds (Python decides: whitespace, ``_``, ``(``,
#: non-ASCII, ...), 2 ``n``/``N``, 4 a sign, 8 not a digit.
_CLASS = np.full(256, 1 | 8, dtype=np.uint8)
_CLASS[np.frombuffer(b"0123456789", dtype=np.uint8)] = 0
_CLASS[np.frombuffer(b".eEiIfFaAtTyY", dtype=np.uint8)] = 8
_CLASS[np.frombuffer(b"nN", dtype=np.uint8)] = 2 | 8
_CLASS[np.frombuffer(b"+-", dtype=np.uint8)] = 4 | 8


def parse_many(bufp: np.ndarray, at: np.ndarray, length: np.ndarray,
               integers: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``float()`` (or ``int()``) of the texts ``bufp[at : at + length]``: (values, ok), ok
    marking the texts read here; each other one (not a plain number: whitespace, ``1_0``,
    ``nan(1)``, a signed NaN, JSON, ...) is for Python to read, as it would alone.

    The plain numbers are copied side by side into one Arrow string array and cast by Arrow,
    whose conversion is correctly rounded, as Python's is (and reads ``NaN``, ``Infinity``,
    ``1e400`` as Python does); digits only, at most 15, for ``integers``.
    """
    dtype = np.int64 if integers else np.float64
    values = np.zeros(at.size, dtype=dtype)
    ok = (length > 0) & (length <= (15 if integers else _WIDE))
    if not ok.any():
        return values, ok
    width = int(length[ok].max())
    ok &= at + width <= bufp.size
    rows = np.flatnonzero(ok)
    mat = sliding_window_view(bufp, width)[at[rows]]
    inside = np.arange(width)[None, :] < length[rows, None]
    data = mat[inside]
    raw = data.tobytes()
    if raw.translate(None, b"0123456789" if integers else _NUMBER) or (
            not integers and (b"n" in raw or b"N" in raw) and _SIGNED_NAN.search(raw)):
        keep = _plain(mat, inside, integers)  # a text Python reads: which ones
        ok[rows[~keep]] = False
        rows, data = rows[keep], mat[keep][inside[keep]]
    if not rows.size:
        return values, ok
    offsets = np.zeros(rows.size + 1, dtype=np.int64)
    np.cumsum(length[rows], out=offsets[1:])
    texts = pa.LargeStringArray.from_buffers(rows.size, pa.py_buffer(offsets), pa.py_buffer(data))
    try:
        values[rows] = pc.cast(texts, pa.int64() if integers else pa.float64()).to_numpy()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        ok[rows] = False  # one text Arrow refuses: Python reads them all
    return values, ok


def _plain(mat: np.ndarray, inside: np.ndarray, integers: bool) -> np.ndarray:
    """Per row of ``mat`` (its bytes ``inside``): a plain number, to be read at once."""
    cls = np.where(inside, _CLASS[mat], 0)
    flags = np.bitwise_or.reduce(cls, axis=1)
    keep: np.ndarray = (flags & (8 if integers else 1)) == 0
    maybe = np.flatnonzero(((flags & 6) == 6) & keep)
    if maybe.size:  # a sign right before n/N: a signed NaN, whose sign bit is Python's
        sign = (cls[maybe, :-1] & 4).astype(bool)
        keep[maybe[np.any(sign & (cls[maybe, 1:] & 2).astype(bool), axis=1)]] = False
    return keep


_NUMBER = b"0123456789+-.eEinfatyINFATY"
_SIGNED_NAN = re.compile(rb"[-+][nN]")


def numbers(bufp: np.ndarray, at: np.ndarray, length: np.ndarray,
            integers: bool = False) -> np.ndarray | None:
    """``float()`` (or ``int()``) of every text at once when every text is a plain number
    (``1``, ``-2.5e-07``, ``NaN``, ``Infinity``); else None, and each text is read by Python.
    """
    if not at.size:
        return np.zeros(0, dtype=np.int64 if integers else np.float64)
    values, ok = parse_many(bufp, at, length, integers)
    return values if ok.all() else None
