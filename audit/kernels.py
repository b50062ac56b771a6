"""Which kernel runs the validation's array passes and the per-run clocks' passes over each
run's points: numpy (the reference and the default) or numba (the optional extra ``fast``),
passed to the work as a parameter, never process state.

A :class:`Kernel` travels as a keyword argument from ``grokaudit check --kernel NAME`` (built
by :func:`kernel_named`) through :func:`grokaudit.refusals.validated_log` to
:func:`grokaudit.schema.build_log_table` and the passes it makes, and through
:func:`grokaudit.api.audit_log` to the clocks' blocks, whose compiled loops are
:mod:`grokaudit.clockloops`. The numpy path is what the audit means; each numba kernel below
(and each loop there) is a twin of one numpy pass that returns exactly its
answer (same values, same dtype, same first index, NaN and ±0.0 compared as numpy compares
them), or ``None`` where it cannot promise that (an empty run, a dtype numba does not take, a
zero whose sign numpy would pick): the caller then runs the numpy pass. Only
order-independent computations are compiled (comparisons, counts, first indices, integer
extremes): no floating-point sum, whose result depends on its order.

The kernels are plain Python loops compiled on first use with
``numba.njit(cache=True, nogil=True)`` (:func:`_compiled`): numba is imported only there, so
a log validated on numpy never imports it. The first run on a fresh install compiles them
(about a second per dtype met, kept in numba's cache); later runs load them from the cache.
Their inner loops run over slices of :data:`_BLOCK` rows (no negative index to wrap), which
lets LLVM vectorize them.

``auto`` (the command line's default) picks numba only for a log of at least
:data:`AUTO_MIN_ROWS` rows with numba importable: importing numba and loading the cached
kernels costs more than the compiled passes save on smaller logs (``docs/performance.md``,
"The ``fast`` extra").
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, TypeVar

import numpy as np

from .errors import ConfigError, ErrorCode, MissingExtraError

T = TypeVar("T")

#: The names ``--kernel`` takes.
KERNELS = ("auto", "numpy", "numba")
#: Rows from which ``auto`` picks numba (when it is importable): below, importing numba and
#: loading its cached kernels (about 0.7 s) costs more than the compiled passes save (13 ms
#: per million rows of 5 000-step runs, 4–15 ms of 50-step runs; measured:
#: ``docs/performance.md``, "The ``fast`` extra").
AUTO_MIN_ROWS = 100_000_000
#: What a missing ``fast`` extra says (``MISSING_EXTRA``).
NUMBA_MISSING = "--kernel numba needs numba: pip install 'grokaudit[fast]'"
#: Rows per block of the compiled loops.
_BLOCK = 8192


@dataclass(frozen=True)
class Kernel:
    """A kernel choice: ``numpy``, ``numba``, or ``auto`` (resolved by :meth:`for_rows` once
    the log's rows are counted). A plain value: pass it down, compare it, print its name."""

    name: str = "numpy"

    def __post_init__(self) -> None:
        if self.name not in KERNELS:  # a misspelt kernel must not run numpy silently
            raise ConfigError(f"kernel {self.name!r}: choose one of {', '.join(KERNELS)}",
                              code=ErrorCode.INVALID_OPTION, option="--kernel")

    def for_rows(self, rows: int) -> Kernel:
        """The kernel that validates a log of ``rows`` rows: ``auto`` resolved (numba for at
        least :data:`AUTO_MIN_ROWS` rows when numba imports, else numpy); the others as
        they are."""
        if self.name != "auto":
            return self
        return NUMBA if rows >= AUTO_MIN_ROWS and numba_importable() else NUMPY

    @property
    def numba(self) -> bool:
        """Whether the numba kernels run (``auto`` not yet resolved: no)."""
        return self.name == "numba"


#: The reference kernel, the default of every function that takes one.
NUMPY = Kernel("numpy")
#: The compiled kernels (extra ``fast``).
NUMBA = Kernel("numba")
#: Numba for large logs when it is installed, numpy otherwise (:meth:`Kernel.for_rows`).
AUTO = Kernel("auto")


@functools.cache
def numba_importable() -> bool:
    """Whether numba imports here (an install whose numba does not import, e.g. built for
    another numpy, counts as no numba: ``auto`` then runs numpy)."""
    try:
        importlib.import_module("numba")
    except ImportError:
        return False
    return True


def kernel_named(name: str, rows: int | None = None) -> Kernel:
    """The kernel ``--kernel NAME`` names: ``numba`` checked now (numba imported), so that a
    missing extra fails before any work; ``auto`` resolved for ``rows`` when they are known,
    else left ``auto`` for the validation to resolve once it has counted them. Raises
    :class:`ConfigError` (``INVALID_OPTION``) for a name not in :data:`KERNELS`,
    :class:`MissingExtraError` (``MISSING_EXTRA``) for ``numba`` without numba."""
    if name == "numpy":
        return NUMPY
    if name == "numba":
        if not numba_importable():
            raise MissingExtraError(NUMBA_MISSING)
        return NUMBA
    if name == "auto":
        return AUTO if rows is None else AUTO.for_rows(rows)
    raise ConfigError(f"kernel {name!r}: choose one of {', '.join(KERNELS)}",
                      code=ErrorCode.INVALID_OPTION, option="--kernel")


# ------------------------------------------------------------------------------------------
# the loops: plain Python, compiled by numba on first use (see the module doc)
# ------------------------------------------------------------------------------------------

def _first_change_loop(v: np.ndarray, same_run: np.ndarray, nan_equal: bool) -> int:
    """First ``i ≥ 1`` with ``same_run[i-1]`` and ``v[i] != v[i-1]`` (both NaN: equal with
    ``nan_equal``); −1 when none. Counts a block's inequalities first (vectorized: NaN
    against NaN counts there), then looks for the first change in a block that has some."""
    n = v.shape[0]
    for lo in range(1, n, _BLOCK):
        hi = min(n, lo + _BLOCK)
        a = v[lo:hi]
        b = v[lo - 1:hi - 1]
        s = same_run[lo - 1:hi - 1]
        c = 0
        for j in range(a.shape[0]):
            c += (a[j] != b[j]) & s[j]
        if c:
            for j in range(a.shape[0]):
                x = a[j]
                y = b[j]
                if s[j] and x != y and (not nan_equal or x == x or y == y):
                    return lo + j
    return -1


def _group_steps_loop(codes: np.ndarray, step: np.ndarray, same_run: np.ndarray
                      ) -> tuple[int, bool, bool]:
    """``same_run[i] = codes[i+1] == codes[i]`` written, and in one pass: how many are
    true, whether a step repeats or goes back within a run (``<=``), whether one goes back
    (``<``)."""
    n = codes.shape[0] - 1
    n_same = 0
    back = False
    down = False
    for lo in range(0, n, _BLOCK):
        hi = min(n, lo + _BLOCK)
        c0 = codes[lo:hi]
        c1 = codes[lo + 1:hi + 1]
        s0 = step[lo:hi]
        s1 = step[lo + 1:hi + 1]
        out = same_run[lo:hi]
        for j in range(c0.shape[0]):
            s = c1[j] == c0[j]
            out[j] = s
            n_same += s
            back |= s & (s1[j] <= s0[j])
            down |= s & (s1[j] < s0[j])
    return n_same, back, down


def _int_range_loop(a: np.ndarray) -> tuple[int, int]:
    """``(min, max)`` of a non-empty integer array, in one pass."""
    lo = a[0]
    hi = a[0]
    for i in range(a.shape[0]):
        x = a[i]
        lo = x if x < lo else lo
        hi = x if x > hi else hi
    return lo, hi


def _float_steps_loop(a: np.ndarray) -> tuple[bool, float, bool]:
    """``(every value finite, max |value|, some value not an integer)`` in one pass (the
    last two read only when the first holds)."""
    finite = True
    top = 0.0
    frac = False
    for i in range(a.shape[0]):
        x = a[i]
        finite &= (x - x) == 0  # NaN and ±inf give NaN
        ax = abs(x)
        top = ax if ax > top else top
        frac |= x != np.floor(x)
    return finite, top, frac


def _nan_per_run_loop(v: np.ndarray, offsets: np.ndarray) -> tuple[int, int]:
    """``(NaN rows of the runs with a value, runs with no value)``; ``(-1, -1)`` at an
    empty run (numpy's ``reduceat`` reads a row there: the caller takes numpy's path)."""
    n_nan = 0
    never_rows = 0
    absent = 0
    for r in range(offsets.shape[0] - 1):
        lo = offsets[r]
        hi = offsets[r + 1]
        if hi <= lo:
            return -1, -1
        seg = v[lo:hi]
        k = 0
        for j in range(seg.shape[0]):
            x = seg[j]
            k += x != x
        n_nan += k
        if k == hi - lo:
            absent += 1
            never_rows += k
    return n_nan - never_rows, absent


def _count_above_loop(v: np.ndarray, t: Any) -> int:
    """How many values exceed ``t`` (NaN never does)."""
    c = 0
    for i in range(v.shape[0]):
        c += v[i] > t
    return c


_LOOPS = {"first_change": _first_change_loop, "group_steps": _group_steps_loop,
          "int_range": _int_range_loop, "float_steps": _float_steps_loop,
          "nan_per_run": _nan_per_run_loop, "count_above": _count_above_loop}


@functools.cache
def _compiled() -> SimpleNamespace:
    """The loops compiled by numba (:func:`with_numba`). Compiled lazily, per dtype, on
    first call."""
    return with_numba(lambda jit: SimpleNamespace(**{name: jit(fn)
                                                     for name, fn in _LOOPS.items()}))


def with_numba(build: Callable[[Any], T]) -> T:
    """``build(jit)``, ``jit`` numba's ``njit(cache=True, nogil=True)`` (numba imported here,
    the one place a kernel imports it): ``cache=True`` keeps the machine code in numba's
    cache (beside the loops' file, or ``NUMBA_CACHE_DIR``), ``nogil=True`` lets other threads
    run meanwhile. Where numba has no writable cache folder (a read-only install, no
    ``NUMBA_CACHE_DIR``: ``RuntimeError`` as the loops are decorated) ``build`` runs again
    with ``njit(nogil=True)``: compiled anew in each process, the same machine code, never an
    error. :class:`MissingExtraError` without numba."""
    try:
        numba: Any = importlib.import_module("numba")
    except ImportError:
        raise MissingExtraError(NUMBA_MISSING) from None
    try:
        return build(numba.njit(cache=True, nogil=True))
    except RuntimeError:
        return build(numba.njit(nogil=True))


# ------------------------------------------------------------------------------------------
# the twins: each returns its numpy pass's answer, or None where the numpy pass must run
# ------------------------------------------------------------------------------------------

#: The dtypes the twins compile for (float16, objects, booleans: the numpy pass).
_NUMERIC = frozenset("bhilqBHILQ") | {"f", "d"}


def _takes(*arrays: np.ndarray) -> bool:
    return all(a.dtype.char in _NUMERIC and a.dtype.isnative for a in arrays)


def _bools(a: np.ndarray) -> bool:
    return a.dtype == np.bool_


def first_change(v: np.ndarray, same_run: np.ndarray, nan_equal: bool) -> int | None:
    """:func:`grokaudit.schema._first_change_in`'s answer in one compiled pass (it stops at
    the first block with a change as numpy's does); None for a dtype it does not take."""
    if not (_takes(v) and _bools(same_run)) or same_run.shape[0] < v.shape[0] - 1:
        return None
    return int(_compiled().first_change(v, same_run, bool(nan_equal)))


def group_steps(codes: np.ndarray, step: np.ndarray
                ) -> tuple[np.ndarray, int, bool, bool] | None:
    """``(same_run, its count, a step repeats or goes back in a run, one goes back)`` of
    :func:`grokaudit.schema._group_rows` in one pass over the run codes and the steps; None
    below two rows or for a dtype it does not take."""
    n = codes.shape[0]
    if n < 2 or step.shape[0] != n or not _takes(codes, step):
        return None
    same_run = np.empty(n - 1, dtype=bool)
    n_same, back, down = _compiled().group_steps(codes, step, same_run)
    return same_run, int(n_same), bool(back), bool(down)


def int_range(a: np.ndarray) -> tuple[int, int] | None:
    """``(a.min(), a.max())`` of an integer array in one pass; None when empty."""
    if a.size == 0 or a.dtype.kind not in "iu" or not _takes(a):
        return None
    lo, hi = _compiled().int_range(a)
    return int(lo), int(hi)


def float_steps(a: np.ndarray) -> tuple[bool, float, bool] | None:
    """For a float step column: ``(all finite, float(abs(a).max()), any non-integer)`` in
    one pass (numpy: ``isfinite``, ``abs().max()``, ``a != round(a)``); None when empty."""
    if a.size == 0 or a.dtype.kind != "f" or not _takes(a):
        return None
    finite, top, frac = _compiled().float_steps(a)
    return bool(finite), float(top), bool(frac)


def missing_and_absent(v: np.ndarray, offsets: np.ndarray) -> tuple[int, int] | None:
    """:func:`grokaudit.schema._missing_and_absent` in one pass over the runs; None where
    numpy's ``reduceat`` has a corner the loop does not copy (no run, an empty run, offsets
    that do not span the column)."""
    if (v.size == 0 or offsets.size < 2 or int(offsets[0]) != 0
            or int(offsets[-1]) != v.size or not _takes(v, offsets)):
        return None
    missing, absent = _compiled().nan_per_run(v, offsets)
    if missing < 0:
        return None
    return int(missing), int(absent)


def count_above(v: np.ndarray, t: float) -> int | None:
    """``np.count_nonzero(v > t)`` of a float array, ``t`` in ``v``'s precision as numpy
    compares it."""
    if v.dtype.kind != "f" or not _takes(v):
        return None
    return int(_compiled().count_above(v, v.dtype.type(t)))


__all__ = ["AUTO", "AUTO_MIN_ROWS", "KERNELS", "NUMBA", "NUMBA_MISSING", "NUMPY", "Kernel",
           "count_above", "first_change", "float_steps", "group_steps", "int_range",
           "kernel_named", "missing_and_absent", "numba_importable", "with_numba"]
