"""What a reader collects: series of (step, value, wall time) points, plus what it could not read.

Every reader fills one :class:`Points`. It holds the points in long form, one chunk per
(run, metric, source file), in the order they were read; per-run conditions and origins
(the path a run came from, for ``--cond`` and ``--run-from path``); the source files; and the
warnings and findings the audit shows. :mod:`grokaudit.adapters.merge` turns it into the
canonical table.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from grokaudit import progress
from grokaudit.errors import ErrorCode, LogFormatError
from grokaudit.schema import STEP_MAX
from grokaudit.text import safe

#: Finding codes an adapter may raise (the core has a ``Reason`` for each).
FINDING_CODES = ("SOURCE_DOWNSAMPLED", "RESUMED_DUPLICATES", "SOURCE_TRUNCATED",
                 "POSSIBLY_SAMPLED", "RUN_CONTINUED", "STEP_CADENCE_MISMATCH", "RUN_SEGMENTS")


def as_steps(step: Any, *, what: str = "a step", path: str | None = None,
             column: str | None = "step") -> np.ndarray:
    """``step`` as an int64 array, or a :class:`LogFormatError` naming ``what``.

    Refuses missing (NaN, None), non-integer and non-finite steps, negative steps, and steps
    above :data:`grokaudit.schema.STEP_MAX` (2**53, the largest step the audit compares
    exactly) — without a numpy cast that would wrap a uint64 above the int64 range into a
    negative number. ``what`` says where the steps come from (``"metric 'x' of run 'r'"``).
    """
    a = np.asarray(step)
    if a.dtype.kind == "i":
        out = a.astype(np.int64, copy=False)
    elif a.dtype.kind == "u":
        if a.size and int(a.max()) > STEP_MAX:
            raise _out_of_range(int(a.max()), what, path, column)
        out = a.astype(np.int64)
    elif a.dtype.kind == "f":
        out = _float_steps(a.astype(np.float64, copy=False), what, path, column)
    elif a.dtype.kind == "O":
        vals = a.ravel().tolist()
        if any(v is None for v in vals):
            raise _missing(sum(v is None for v in vals), what, path, column)
        if not all(isinstance(v, (int, float, np.integer, np.floating))
                   and not isinstance(v, (bool, np.bool_)) for v in vals):
            bad = next(v for v in vals if not isinstance(v, (int, float, np.integer,
                                                              np.floating)))
            raise LogFormatError(f"{what} has the step {safe(repr(bad))[:60]}, which is not a "
                                 "number; steps are integer optimizer steps", path=path,
                                 column=column, code=ErrorCode.NON_INTEGER_STEP)
        big = [v for v in vals if isinstance(v, (int, np.integer)) and abs(int(v)) > STEP_MAX]
        if big:
            raise _out_of_range(int(big[0]), what, path, column)
        out = _float_steps(np.asarray([float(v) for v in vals], dtype=np.float64).reshape(a.shape),
                           what, path, column)
    else:
        raise LogFormatError(f"{what} has steps of type {a.dtype}; steps are integer optimizer "
                             "steps", path=path, column=column, code=ErrorCode.BAD_COLUMN_TYPE)
    if out.size:
        lo, hi = int(out.min()), int(out.max())
        if lo < 0:
            raise LogFormatError(f"{what} has the negative step {lo}; steps must be >= 0",
                                 path=path, column=column, code=ErrorCode.NEGATIVE_STEP)
        if hi > STEP_MAX:
            raise _out_of_range(hi, what, path, column)
    return out


def _float_steps(a: np.ndarray, what: str, path: str | None, column: str | None) -> np.ndarray:
    nan = np.isnan(a)
    if nan.any():
        raise _missing(int(nan.sum()), what, path, column)
    if not np.all(np.isfinite(a)):
        raise LogFormatError(f"{what} has an infinite step; steps are integer optimizer steps",
                             path=path, column=column, code=ErrorCode.NON_INTEGER_STEP)
    if a.size and float(np.abs(a).max()) > STEP_MAX:
        big = float(a[np.argmax(np.abs(a))])
        raise _out_of_range(f"{big:g}", what, path, column)
    if np.any(a != np.round(a)):
        bad = float(a[np.argmax(a != np.round(a))])
        raise LogFormatError(f"{what} has the non-integer step {bad:g}; steps are integer "
                             "optimizer steps", path=path, column=column,
                             code=ErrorCode.NON_INTEGER_STEP)
    return a.astype(np.int64)


def _missing(n: int, what: str, path: str | None, column: str | None) -> LogFormatError:
    return LogFormatError(f"{what} has {n} missing (null) step(s); every logged value needs its "
                          "step: fill them in or drop those rows", path=path, column=column,
                          code=ErrorCode.MISSING_VALUES)


def _out_of_range(v: Any, what: str, path: str | None, column: str | None) -> LogFormatError:
    return LogFormatError(f"{what} has the step {v}, beyond the largest supported step "
                          f"{STEP_MAX} (2**53); steps are optimizer steps: a corrupted or "
                          "mis-typed step?", path=path, column=column,
                          code=ErrorCode.STEP_OUT_OF_RANGE)


@dataclass(frozen=True)
class Finding:
    """One thing the audit must show about the source log (a ``Reason`` code plus where)."""

    code: str
    detail: str
    run: str | None = None
    file: str | None = None
    offset: int | None = None  #: byte offset in ``file`` where the problem starts
    count: int | None = None  #: points, records or bytes concerned (the detail says which)
    runs: tuple[str, ...] | None = None  #: the runs, when a finding concerns several
    #: what else the finding rests on, as (key, value) pairs (the config keys and values
    #: read, a column's largest step…): fields of its dict, and so of the audit's evidence
    evidence: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if self.code not in FINDING_CODES:
            raise ValueError(f"unknown finding code {self.code!r}")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "severity": "warning", "run": self.run,
                               "detail": self.detail, "file": self.file, "offset": self.offset,
                               "count": self.count}
        if self.runs is not None:
            out["runs"] = list(self.runs)
        for k, v in self.evidence:
            out.setdefault(k, v)
        return out


@dataclass
class Chunk:
    """Points of one metric of one run read from one place, in read order."""

    run: str
    metric: str
    step: np.ndarray  #: (n,) int64
    value: np.ndarray  #: (n,) float64; NaN is a logged NaN
    wall_time: np.ndarray | None  #: (n,) float64 seconds since the epoch, or None if unknown


@dataclass
class Points:
    """Everything one reader read from one path (see the module docstring)."""

    chunks: list[Chunk] = field(default_factory=list)
    conditions: dict[str, dict[str, Any]] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    downsampled_runs: set[str] = field(default_factory=set)
    #: conditions that are results of the run (``final_test_acc``): kept, never design
    outcomes: set[str] = field(default_factory=set)
    #: records read but set aside, by reason (``record_without_step``): counted, never lost
    set_aside: dict[str, int] = field(default_factory=dict)
    #: warnings the audit shows as findings of their own (the accuracy chosen, percent, records
    #: set aside); the others are its ``notes`` (``READER_NOTES``)
    shown: set[str] = field(default_factory=set)
    extra: dict[str, Any] = field(default_factory=dict)  #: reader-specific provenance
    #: (run, name) of the conditions read from a column of the log that held one value in
    #: the run (not from a config file or --cond): a series elsewhere makes them a series
    constant_columns: set[tuple[str, str]] = field(default_factory=set)

    def add(self, run: str, metric: str, step: Any, value: Any,
            wall_time: Any | None = None) -> None:
        """Append the points of one metric of one run (arrays of equal length).

        Steps are checked by :func:`as_steps` (missing, non-integer, negative or beyond 2**53:
        a :class:`LogFormatError`)."""
        s = as_steps(step, what=f"metric {safe(metric)!r} of run {safe(run)!r}")
        v = np.asarray(value, dtype=np.float64)
        w = None if wall_time is None else np.asarray(wall_time, dtype=np.float64)
        if s.shape != v.shape or (w is not None and w.shape != s.shape):
            raise ValueError("step, value and wall_time must have the same length")
        if s.size:
            self.chunks.append(Chunk(str(run), str(metric), s, v, w))
        self.origins.setdefault(str(run), str(run))
        progress.tick(int(s.size), len(self.files))

    def add_condition(self, run: str, key: str, value: Any) -> None:
        """Set a condition (a value constant within the run, such as ``wd`` or ``seed``)."""
        self.conditions.setdefault(str(run), {})[str(key)] = value

    def rename_runs(self, names: dict[str, str]) -> None:
        """Rename runs (old id -> new id, each new id given once) everywhere a run is named:
        its points, conditions, origin and the findings about it."""
        if not names:
            return
        def new(r: str) -> str:
            return names.get(r, r)
        for c in self.chunks:
            c.run = new(c.run)
        self.conditions = {new(r): v for r, v in self.conditions.items()}
        self.origins = {new(r): v for r, v in self.origins.items()}
        self.downsampled_runs = {new(r) for r in self.downsampled_runs}
        self.constant_columns = {(new(r), k) for r, k in self.constant_columns}
        self.findings = [dataclasses.replace(
            f, run=None if f.run is None else new(f.run),
            runs=None if f.runs is None else tuple(new(r) for r in f.runs))
            for f in self.findings]

    def finding(self, code: str, detail: str, **where: Any) -> None:
        self.findings.append(Finding(code, detail, **where))

    @property
    def n_points(self) -> int:
        return sum(c.step.size for c in self.chunks)
