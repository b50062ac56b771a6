"""Pre-registered expectations and the comparison of an audit result against them.

An expectation names what must hold — the verdict, reason codes that must be present or
absent, and numbers of runs, cells and orderings — never a message string. Numbers are
compared exactly (up to float rounding) unless wrapped in :class:`Approx`, :class:`OneOf`
or :class:`Between`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from grokaudit import AuditResult, LogFormatError, Reason

LOW_POWER = "LOW_POWER_DESCRIPTIVE"


@dataclass(frozen=True)
class Approx:
    """A number known up to ``tol`` (absolute)."""

    value: float
    tol: float

    def ok(self, got: Any) -> bool:
        return got is not None and abs(float(got) - self.value) <= self.tol

    def __repr__(self) -> str:
        return f"{self.value:g}±{self.tol:g}"


@dataclass(frozen=True)
class Between:
    """A number in ``[lo, hi]`` (None for an open side)."""

    lo: float | None = None
    hi: float | None = None

    def ok(self, got: Any) -> bool:
        if got is None:
            return False
        g = float(got)
        return (self.lo is None or g >= self.lo) and (self.hi is None or g <= self.hi)

    def __repr__(self) -> str:
        return f"[{self.lo}, {self.hi}]"


@dataclass(frozen=True)
class OneOf:
    """Any of several values."""

    values: tuple[Any, ...]

    def ok(self, got: Any) -> bool:
        return any(_eq(v, got) for v in self.values)

    def __repr__(self) -> str:
        return "|".join(map(repr, self.values))


def _eq(want: Any, got: Any) -> bool:
    if hasattr(want, "ok"):
        return bool(want.ok(got))
    if want is None or got is None:
        return want is got
    if isinstance(want, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(want) != len(got):
            return False
        return all(_eq(w, g) for w, g in zip(want, got))
    if isinstance(want, bool) or isinstance(got, bool):
        return bool(want) == bool(got) and type(want) is type(got)
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        return math.isclose(float(want), float(got), rel_tol=1e-9, abs_tol=1e-9)
    return bool(want == got)


def get_path(obj: Any, path: str) -> Any:
    """``get_path(run, "t_compress.value")``: None as soon as a link is None. A link may also
    be a mapping key (``params.alpha``) or a position in a tuple (``comparison.0.aft``; None
    past the end)."""
    for part in path.split("."):
        if obj is None:
            return None
        if isinstance(obj, Mapping):
            obj = obj.get(part)
        elif isinstance(obj, (tuple, list)) and part.lstrip("-").isdigit():
            i = int(part)
            obj = obj[i] if -len(obj) <= i < len(obj) else None
        else:
            obj = getattr(obj, part)
    return obj


@dataclass(frozen=True)
class StudyExpect:
    """What must hold in one study (``key`` selects it by its split, e.g. ``{"arch": "mlp"}``).

    ``verdict``: a clock-verdict :class:`Reason`, or ``LOW_POWER`` when fewer than 2 cells pass.
    ``runs``/``cells``/``orderings`` map a run id, an axis value or a quantity to
    ``{attribute path: expected}``. ``findings`` lists ``(code, cell)`` pairs that must appear
    (cell None = any); ``severities`` lists ``(code, cell, severity)``: the finding must appear
    with that severity (``"warning"`` where a careless audit would say ``"critical"``).
    """

    verdict: Reason | str | OneOf | None
    key: Mapping[str, Any] = field(default_factory=dict)
    runs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    cells: Mapping[Any, Mapping[str, Any]] = field(default_factory=dict)
    orderings: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    findings: tuple[tuple[Reason, Any], ...] = ()
    severities: tuple[tuple[Reason, Any, str], ...] = ()


@dataclass(frozen=True)
class Expect:
    """The pre-registered answer of a case: an input error, or one expectation per study."""

    studies: tuple[StudyExpect, ...] = ()
    present: frozenset[Reason] = frozenset()  #: codes that must be among the findings
    absent: frozenset[Reason] = frozenset()  #: codes that must not be
    exit_code: int | None = None
    error: str | None = None  #: expected LogFormatError code (an ErrorCode value)
    input: Mapping[str, Any] = field(default_factory=dict)  #: ``result.input`` entries

    @property
    def label(self) -> str:
        """The expected outcome in one word, for the suite's table."""
        if self.error:
            return f"error:{self.error}"
        return " ".join(verdict_label(s.verdict) for s in self.studies) or "-"


def verdict_label(v: Any) -> str:
    if v is None or v == LOW_POWER:
        return LOW_POWER
    if isinstance(v, OneOf):
        return "any-clock-verdict"
    return v.value if isinstance(v, Reason) else str(v)


def error_label(exc: LogFormatError) -> str:
    """The error's code (an ``ErrorCode`` value), e.g. ``ACCURACY_OUT_OF_RANGE``."""
    code: str = exc.code.value
    return code


def compare(expect: Expect, result: AuditResult | None, error: LogFormatError | None
            ) -> list[str]:
    """Every way ``result`` (or the error raised instead) departs from ``expect``."""
    bad: list[str] = []
    if expect.error is not None:
        if error is None:
            return [f"expected input error {expect.error}, got a result"]
        got = error_label(error)
        if got != expect.error:
            bad.append(f"expected input error {expect.error}, got {got}")
        return bad
    if error is not None:
        return [f"unexpected input error {error_label(error)}: {error}"]
    assert result is not None
    codes = result.codes
    for c in sorted(expect.present - codes, key=lambda r: r.value):
        bad.append(f"missing code {c.value}")
    for c in sorted(expect.absent & codes, key=lambda r: r.value):
        bad.append(f"unexpected code {c.value}")
    if expect.exit_code is not None and result.exit_code != expect.exit_code:
        bad.append(f"exit_code {result.exit_code} != {expect.exit_code}")
    for key, want in expect.input.items():
        got_in = result.input.get(key)
        if not _eq(want, got_in):
            bad.append(f"input {key} = {got_in!r}, expected {want!r}")
    for se in expect.studies:
        try:
            study = result.study(**dict(se.key))
        except KeyError:
            bad.append(f"no study {dict(se.key)}")
            continue
        where = f"study {dict(se.key)}: " if se.key else ""
        want_v = None if se.verdict == LOW_POWER else se.verdict
        ok = study.verdict is None if want_v is None else _eq(want_v, study.verdict)
        if not ok:
            bad.append(f"{where}verdict {verdict_label(study.verdict)} != {verdict_label(want_v)}")
        for rid, fields_ in se.runs.items():
            run = next((r for r in study.runs if r.run == rid), None)
            if run is None:
                bad.append(f"{where}no run {rid}")
                continue
            bad.extend(_fields(f"{where}run {rid}", run, fields_))
        for av, fields_ in se.cells.items():
            cell = study.cell(av)
            if cell is None:
                bad.append(f"{where}no cell {av}")
                continue
            bad.extend(_fields(f"{where}cell {av}", cell, fields_))
        for q, fields_ in se.orderings.items():
            o = study.ordering(q)
            if o is None:
                bad.append(f"{where}no ordering {q}")
                continue
            bad.extend(_fields(f"{where}ordering {q}", o, fields_))
        for code, cell in se.findings:
            if not any(f.code is code and (cell is None or f.cell == cell)
                       for f in study.findings):
                bad.append(f"{where}missing finding {code.value}" +
                           (f" on cell {cell}" if cell is not None else ""))
        for code, cell, sev in se.severities:
            got_s = sorted({f.severity.value for f in study.findings
                            if f.code is code and (cell is None or f.cell == cell)})
            if got_s != [sev]:
                bad.append(f"{where}{code.value}" + (f" on cell {cell}" if cell is not None
                                                      else "")
                           + f" has severity {got_s or 'none'}, expected {sev}")
    return bad


def _fields(where: str, obj: Any, fields_: Mapping[str, Any]) -> list[str]:
    out = []
    for path, want in fields_.items():
        if path == "reasons_include":
            got_r = set(obj.reasons)
            miss = [r.value for r in want if r not in got_r]
            if miss:
                out.append(f"{where}: reasons lack {miss}")
            continue
        if path == "reasons_exclude":
            hit = [r.value for r in want if r in set(obj.reasons)]
            if hit:
                out.append(f"{where}: reasons include {hit}")
            continue
        got = get_path(obj, path)
        if not _eq(want, got):
            out.append(f"{where}: {path} = {got!r}, expected {want!r}")
    return out
