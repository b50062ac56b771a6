"""Safe text: strings that come from a log, printed so that they cannot forge output.

A run id, a condition value, a metric name or a file's content in an error message may hold
control characters (ESC sequences, carriage returns, newlines, bidirectional overrides). Every
renderer for the terminal, and every error message, passes such strings through :func:`safe`,
which writes each control character as a visible escape (``\\x1b``, ``\\n``), so one logical
line stays one printed line and the terminal interprets nothing.
"""

from __future__ import annotations

import re
from typing import Any

#: A number written in ASCII decimal (``7``, ``-0.5``, ``.5``, ``1e3``), the one pattern of the
#: readers that parse numbers from text themselves (never ``3_0`` or non-ASCII digits, which
#: ``float()`` accepts); compile it with ``re.ASCII``.
DECIMAL = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"

# C0 controls, DEL, C1 controls, and the Unicode bidirectional and line/paragraph separators
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\u200e\u200f]")


def _escape(m: re.Match[str]) -> str:
    c = m.group(0)
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(c) or (
        f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def safe(x: Any) -> str:
    """``str(x)`` with every control character escaped (one line, nothing interpreted)."""
    s = x if isinstance(x, str) else str(x)
    return _CONTROL.sub(_escape, s)


def safe_json(text: str) -> str:
    """JSON text with C1 controls and Unicode separators escaped as ``\\uXXXX`` (``json.dumps``
    escapes C0 controls itself, but not these, which some terminals interpret)."""
    return re.sub("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\u200e\u200f]",
                  lambda m: f"\\u{ord(m.group(0)):04x}", text)


def format_value(v: Any) -> str:
    """A condition or axis value for people: the shortest text that round-trips in the value's
    stored type (``0.85`` for a float32 0.85, not ``0.8500000238418579``), booleans as
    ``true``/``false``, integers without a decimal point, never a numpy repr
    (``np.float64(1.0)``). Control characters are escaped (:func:`safe`). JSON keeps the full
    value; this is only how it is shown."""
    import numpy as np

    if v is None:
        return "—"
    if isinstance(v, (bool, np.bool_)):
        return "true" if bool(v) else "false"
    if isinstance(v, np.floating):
        if np.isnan(v):
            return "nan"
        return str(v) if isinstance(v, np.float32 | np.float16) else repr(float(v))
    if isinstance(v, np.integer):
        return str(int(v))
    if isinstance(v, float):
        return "nan" if v != v else repr(v)
    return safe(v)


def value_matches(value: Any, given: Any) -> bool:
    """Whether a value named on the command line (``--arms 0.3``, ``--baseline rho=1``) is this
    stored value: the same text as :func:`format_value` shows, or the same number once the text
    is read in the value's own type (``0.3`` names a float32 0.3, ``1`` names ``1.0``)."""
    import numpy as np

    text = str(given).strip()
    if format_value(value) == text or str(value) == text:
        return True
    if isinstance(value, (bool, np.bool_)):
        return text.lower() in (("true", "1") if bool(value) else ("false", "0"))
    try:
        if isinstance(value, np.floating):
            return bool(value == value.dtype.type(float(text)))
        if isinstance(value, (int, float, np.integer)):
            return float(value) == float(text)
    except (TypeError, ValueError, OverflowError):
        return False
    return False


def cell_label(axis: str | None, value: Any) -> str:
    """How a cell is named: ``wd=0.1``, or ``all runs`` in a study without an axis."""
    return "all runs" if axis is None else f"{axis}={format_value(value)}"
