"""What a reader collects: series of (step, value, wall time) points, plus what it could not read.

Every reader fills one :class:`Points`. It holds the points in long form, one chunk per
(run, metric, source file), in the order they were read; per-run conditions and origins
(the path a run came from, for ``--cond`` and ``--run-from path``); the source files; and the
warnings and findings the audit shows. :mod:`grokaudit.adapters.merge` turns it into the
canonical table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: Finding codes an adapter may raise (the core has a ``Reason`` for each).
FINDING_CODES = ("SOURCE_DOWNSAMPLED", "RESUMED_DUPLICATES", "SOURCE_TRUNCATED",
                 "POSSIBLY_SAMPLED")


@dataclass(frozen=True)
class Finding:
    """One thing the audit must show about the source log (a ``Reason`` code plus where)."""

    code: str
    detail: str
    run: str | None = None
    file: str | None = None
    offset: int | None = None  #: byte offset in ``file`` where the problem starts
    count: int | None = None  #: points, records or bytes concerned (the detail says which)

    def __post_init__(self) -> None:
        if self.code not in FINDING_CODES:
            raise ValueError(f"unknown finding code {self.code!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "severity": "warning", "run": self.run,
                "detail": self.detail, "file": self.file, "offset": self.offset,
                "count": self.count}


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
    extra: dict[str, Any] = field(default_factory=dict)  #: reader-specific provenance

    def add(self, run: str, metric: str, step: Any, value: Any,
            wall_time: Any | None = None) -> None:
        """Append the points of one metric of one run (arrays of equal length)."""
        s = np.asarray(step, dtype=np.int64)
        v = np.asarray(value, dtype=np.float64)
        w = None if wall_time is None else np.asarray(wall_time, dtype=np.float64)
        if s.shape != v.shape or (w is not None and w.shape != s.shape):
            raise ValueError("step, value and wall_time must have the same length")
        if s.size:
            self.chunks.append(Chunk(str(run), str(metric), s, v, w))
        self.origins.setdefault(str(run), str(run))

    def add_condition(self, run: str, key: str, value: Any) -> None:
        """Set a condition (a value constant within the run, such as ``wd`` or ``seed``)."""
        self.conditions.setdefault(str(run), {})[str(key)] = value

    def finding(self, code: str, detail: str, **where: Any) -> None:
        self.findings.append(Finding(code, detail, **where))

    @property
    def n_points(self) -> int:
        return sum(c.step.size for c in self.chunks)
