"""Result objects: frozen dataclasses that keep their evidence, with a stable JSON form.

``AuditResult.to_json()`` is versioned (``"schema": "grokaudit.audit/1"``), has stable keys,
and is byte-identical for identical input and config (no timestamps, sorted collections).
A value that could not be computed is ``None`` next to a :class:`~grokaudit.reasons.Reason`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from .reasons import Reason, Severity

SCHEMA = "grokaudit.audit/1"


def _num(x: float | int | None) -> float | int | None:
    """A JSON-safe number: NaN → None, ±inf → None (the interval's ``censored`` says why)."""
    if x is None:
        return None
    if isinstance(x, bool):
        return x
    if isinstance(x, int):
        return x
    xf = float(x)
    if math.isnan(xf) or math.isinf(xf):
        return None
    if xf.is_integer() and abs(xf) < 2**53:
        return int(xf)
    return xf


@dataclass(frozen=True)
class Interval:
    """A time or quantity known up to an interval: it happened in ``(lower, upper]``.

    ``value`` is the logged step where it was first seen (``None`` when censored);
    ``upper`` is ``None`` when right-censored (``inf``): it had not happened when the log ended.
    A value that is ``None`` with both ends known is *left-censored* (``left_censored``): the
    event happened before logging began (or, for a lag or a cell median, rests on such an
    event), so only its interval is known.
    """

    value: float | None
    lower: float | None
    upper: float | None
    censored: bool

    @classmethod
    def make(cls, value: float, lower: float, upper: float) -> Interval | None:
        """Build from floats where NaN = missing and ``upper = inf`` = censored."""
        if math.isnan(lower) and math.isnan(value):
            return None
        cens = math.isinf(upper)
        return cls(
            value=None if (cens or math.isnan(value)) else float(value),
            lower=None if math.isnan(lower) else float(lower),
            upper=None if (cens or math.isnan(upper)) else float(upper),
            censored=cens,
        )

    @property
    def upper_or_inf(self) -> float:
        return math.inf if self.upper is None else self.upper

    @property
    def left_censored(self) -> bool:
        """Only the interval is known, no value: the event happened before logging began (or
        the quantity is derived from such an event)."""
        return (self.value is None and not self.censored and self.upper is not None
                and self.lower is not None)

    def to_dict(self) -> dict[str, Any]:
        return {"value": _num(self.value), "lower": _num(self.lower),
                "upper": _num(self.upper), "censored": self.censored,
                "left_censored": self.left_censored}

    def describe(self) -> str:
        """Compact text: ``1200``, ``>5400`` (right-censored), ``≤2000`` (left-censored: before
        the first logged step 2000) or ``1400–3400`` (only bounds known)."""
        if self.censored:
            return f">{_fmt(self.lower)}"
        if self.left_censored:
            if self.lower == 0:
                return f"≤{_fmt(self.upper)}"
            return f"{_fmt(self.lower)}–{_fmt(self.upper)}"
        return _fmt(self.value)


def format_number(x: float | None, digits: int = 3) -> str:
    """A number for people: ``—`` when missing (None or NaN), whole numbers and values of 1 000
    or more without decimals (steps), else ``digits`` significant digits. Shared by the text
    report, the HTML report and the figures."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    if abs(x) >= 1000 or float(x).is_integer():
        return f"{x:.0f}"
    return f"{x:.{digits}g}"


_fmt = format_number


@dataclass(frozen=True)
class Finding:
    """One finding: a reason code, its severity, where it applies, and its evidence."""

    code: Reason
    severity: Severity
    scope: str  #: ``input``, ``run``, ``cell``, ``study``
    message: str
    study: Mapping[str, Any] = field(default_factory=dict)
    metric: str | None = None
    cell: Any = None  #: the axis value of the cell, when cell-scoped
    runs: tuple[str, ...] = ()
    evidence: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code.value, "severity": self.severity.value, "scope": self.scope,
            "study": _plain(dict(self.study)), "metric": self.metric, "cell": _plain(self.cell),
            "runs": list(self.runs), "evidence": _plain(dict(self.evidence)),
            "message": self.message,
        }


def _plain(x: Any) -> Any:
    """Convert numpy scalars and containers to JSON-safe Python values."""
    if isinstance(x, Mapping):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, Interval):
        return x.to_dict()
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):
        x = x.item()
    if isinstance(x, float):
        return _num(x)
    if isinstance(x, Reason):
        return x.value
    return x


@dataclass(frozen=True)
class ReferenceRun:
    """The v1.5 analyzer's per-seed numbers that have no field of their own in
    :class:`RunResult` (``--profile reference`` only; ``docs/profiles.md``).

    ``kept`` says whether v1.5 keeps the seed at all (it grokked at a point where the metric is
    logged and has a floor); a seed it drops has every number None. ``t_compress`` and ``gap``
    of a censored seed are at its last metric step, as v1.5 counts them."""

    kept: bool
    drop: float | None  #: m_grok − floor
    valid_comp: bool  #: drop ≥ min_abs_drop: the seed has a t_compress
    censored: bool  #: valid, and never crossed ``floor + eps·drop``
    t_compress: float | None
    m_compress: float | None  #: the metric at t_compress
    gap: float | None  #: t_compress − t_grok
    rel_gap: float | None  #: gap / t_grok (None when t_grok ≤ 0)
    rate: float | None  #: drop / gap (None unless gap > 0)

    def to_dict(self) -> dict[str, Any]:
        return {"kept": self.kept, "drop": _num(self.drop), "valid_comp": self.valid_comp,
                "censored": self.censored, "t_compress": _num(self.t_compress),
                "m_compress": _num(self.m_compress), "gap": _num(self.gap),
                "rel_gap": _num(self.rel_gap), "rate": _num(self.rate)}


@dataclass(frozen=True)
class ReferenceCell:
    """The v1.5 analyzer's per-cell numbers that have no field of their own in
    :class:`CellSummary` (``--profile reference`` only). ``boundary`` is v1.5's flag
    (``high_floor or tiny_drop``); a cell without a valid seed is gated by grokaudit
    (``BOUNDARY_NO_COMPRESSION``) where v1.5 leaves it out of the verdict silently."""

    n: int  #: seeds kept (grokked with a floor)
    n_valid: int  #: kept seeds with drop ≥ min_abs_drop
    n_censored: int  #: valid seeds that never crossed
    censor_frac: float | None
    amp_invalid_frac: float | None
    drop: float | None  #: median drop of the kept seeds
    rate: float | None  #: median rate of the valid seeds
    comp_ratio: float | None  #: median drop / median m_grok
    tiny_drop: bool  #: comp_ratio < min_rel_drop
    high_floor: bool = False  #: floor > high_floor_factor × the median of the cell floors
    boundary: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "n_valid": self.n_valid, "n_censored": self.n_censored,
                "censor_frac": _num(self.censor_frac),
                "amp_invalid_frac": _num(self.amp_invalid_frac), "drop": _num(self.drop),
                "rate": _num(self.rate), "comp_ratio": _num(self.comp_ratio),
                "tiny_drop": self.tiny_drop, "high_floor": self.high_floor,
                "boundary": self.boundary}


@dataclass(frozen=True)
class RunResult:
    """Every per-run quantity of AUDIT_SPEC §1 for one run and one metric."""

    run: str
    cell: Any
    t_mem: Interval | None
    t_grok: Interval
    grok_sustained: bool
    grok_fell_at: float | None
    final_test_acc: float | None
    fully_generalized: bool
    m_start: float | None
    m_grok: float | None
    m_peak: float | None
    floor: float | None
    delta: float | None
    #: ``stable``, ``indeterminate``, ``unstable``, ``none`` (no floor) or ``unchecked``
    #: (stability_check = False: the floor is taken as converged without a test)
    floor_stability: str
    w1_median: float | None
    drift: float | None
    drift_interval: tuple[float | None, float | None]
    mad: float | None
    compression: str  #: ``compressed``, ``none``, ``unknown`` or ``n/a``
    t_compress: Interval | None
    undershoot: float | None
    lag: Interval | None
    rel_lag: float | None
    frac_pre: float | None
    inflation: float | None
    inflation_is_lower_bound: bool
    snapshot: str  #: ``transient``, ``converged``, ``between`` or ``n/a``
    reasons: tuple[Reason, ...]
    reference: ReferenceRun | None = None  #: v1.5's own numbers (``--profile reference``)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "run": self.run, "cell": _plain(self.cell),
            "t_mem": self.t_mem.to_dict() if self.t_mem else None,
            "t_grok": self.t_grok.to_dict(), "grok_sustained": self.grok_sustained,
            "grok_fell_at": _num(self.grok_fell_at), "final_test_acc": _num(self.final_test_acc),
            "fully_generalized": self.fully_generalized, "m_start": _num(self.m_start),
            "m_grok": _num(self.m_grok), "m_peak": _num(self.m_peak), "floor": _num(self.floor),
            "delta": _num(self.delta), "floor_stability": self.floor_stability,
            "w1_median": _num(self.w1_median), "drift": _num(self.drift),
            "drift_interval": [_num(v) for v in self.drift_interval], "mad": _num(self.mad),
            "compression": self.compression,
            "t_compress": self.t_compress.to_dict() if self.t_compress else None,
            "undershoot": _num(self.undershoot),
            "lag": self.lag.to_dict() if self.lag else None, "rel_lag": _num(self.rel_lag),
            "frac_pre": _num(self.frac_pre), "inflation": _num(self.inflation),
            "inflation_is_lower_bound": self.inflation_is_lower_bound,
            "snapshot": self.snapshot, "reasons": [r.value for r in self.reasons],
        }
        if self.reference is not None:
            out["reference"] = self.reference.to_dict()
        return out


@dataclass(frozen=True)
class CellSummary:
    """One cell (the runs sharing every condition but the seed): censoring-aware medians and
    the gates it failed (empty when it passes)."""

    axis_value: Any
    runs: tuple[str, ...]
    n_runs: int
    n_grokked: int
    n_fully_generalized: int
    n_no_compression: int
    n_established: int  #: grokked runs with a stable floor and an uncensored t_compress
    n_tc_censored: int
    t_grok: Interval | None
    t_compress: Interval | None
    lag: Interval | None
    floor: float | None
    delta: float | None
    m_grok: float | None
    rel_lag: float | None
    frac_pre: float | None
    inflation: float | None
    floor_stability: Mapping[str, int]
    n_transient: int
    gates: tuple[Reason, ...]
    notes: tuple[Reason, ...]  #: e.g. MEDIAN_CENSORED
    reference: ReferenceCell | None = None  #: v1.5's own numbers (``--profile reference``)
    #: runs with an at-grok ratio (grokked, the metric at grok, a floor that is not noisy)
    n_judged: int = 0
    #: transient runs whose grok was sustained: where "the value at grok" is defined
    n_transient_sustained: int = 0
    #: the median inflation rests on a floor some run never reached (not stable): a lower bound
    inflation_is_lower_bound: bool = False
    #: runs with a left-censored clock (t_grok or t_compress before logging began)
    n_left_censored: int = 0
    #: runs whose log ends before the floor window of the cell's longest run (HORIZON_MISMATCH)
    short_horizon_runs: tuple[str, ...] = ()
    #: the cell's median floor differs by more than δ from the median of its longer runs alone:
    #: it rests on runs that stopped before their siblings' floor window
    floor_rests_on_short_runs: bool = False

    @property
    def passes(self) -> bool:
        return not self.gates

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "axis_value": _plain(self.axis_value), "runs": list(self.runs),
            "n_runs": self.n_runs, "n_grokked": self.n_grokked,
            "n_fully_generalized": self.n_fully_generalized,
            "n_no_compression": self.n_no_compression, "n_established": self.n_established,
            "n_tc_censored": self.n_tc_censored,
            "t_grok": self.t_grok.to_dict() if self.t_grok else None,
            "t_compress": self.t_compress.to_dict() if self.t_compress else None,
            "lag": self.lag.to_dict() if self.lag else None,
            "floor": _num(self.floor), "delta": _num(self.delta), "m_grok": _num(self.m_grok),
            "rel_lag": _num(self.rel_lag), "frac_pre": _num(self.frac_pre),
            "inflation": _num(self.inflation),
            "floor_stability": dict(sorted(self.floor_stability.items())),
            "n_transient": self.n_transient, "n_judged": self.n_judged,
            "n_transient_sustained": self.n_transient_sustained,
            "inflation_is_lower_bound": self.inflation_is_lower_bound,
            "n_left_censored": self.n_left_censored,
            "short_horizon_runs": list(self.short_horizon_runs),
            "floor_rests_on_short_runs": self.floor_rests_on_short_runs, "passes": self.passes,
            "gates": [g.value for g in self.gates], "notes": [n.value for n in self.notes],
        }
        if self.reference is not None:
            out["reference"] = self.reference.to_dict()
        return out


@dataclass(frozen=True)
class Ordering:
    """The ordering of one quantity against the axis over the passing cells.

    ``identified`` is True only when no assignment of the unidentified pairs can flip the
    sign (``|C − D| > U`` with ≥ 3 cells). ``tau_bounds`` are Kendall's tau bounds.
    """

    quantity: str
    n_cells: int
    concordant: int
    discordant: int
    unidentified: int
    identified: bool
    direction: int  #: +1 increases with the axis, −1 decreases, 0 unknown
    shape: str | None  #: ``monotone``, ``flat``, ``weak``; None when not identified
    tau_bounds: tuple[float, float] | None
    spearman: float | None
    reason: Reason  #: ORDERING_IDENTIFIED or ORDERING_UNDEFINED
    sub_reason: Reason | None  #: TOO_FEW_CELLS, CENSORED_INTERVALS_OVERLAP, TIES_WITHIN_RESOLUTION
    axis_values: tuple[Any, ...]

    @property
    def monotone(self) -> bool:
        return self.identified and self.shape == "monotone"

    def to_dict(self) -> dict[str, Any]:
        return {
            "quantity": self.quantity, "n_cells": self.n_cells, "concordant": self.concordant,
            "discordant": self.discordant, "unidentified": self.unidentified,
            "identified": self.identified, "direction": self.direction, "shape": self.shape,
            "tau_bounds": [_num(t) for t in self.tau_bounds] if self.tau_bounds else None,
            "spearman": _num(self.spearman), "reason": self.reason.value,
            "sub_reason": self.sub_reason.value if self.sub_reason else None,
            "axis_values": _plain(list(self.axis_values)),
        }


@dataclass(frozen=True)
class StudyResult:
    """One study (cells along the axis sharing every other condition) for one metric."""

    study: Mapping[str, Any]
    metric: str
    axis: str | None  #: None: no condition varies (one cell of every run, no orderings)
    cells: tuple[CellSummary, ...]
    runs: tuple[RunResult, ...]
    orderings: tuple[Ordering, ...]
    verdict: Reason | None  #: the clock verdict; None with LOW_POWER_DESCRIPTIVE
    verdict_evidence: Mapping[str, Any]
    findings: tuple[Finding, ...]

    def ordering(self, quantity: str) -> Ordering | None:
        return next((o for o in self.orderings if o.quantity == quantity), None)

    def cell(self, axis_value: Any) -> CellSummary | None:
        return next((c for c in self.cells if c.axis_value == axis_value), None)

    @property
    def verdict_label(self) -> str:
        """The study's outcome in one word: its clock verdict, else ``NOTHING_AUDITABLE`` (the
        audit assessed nothing in this study), ``LOW_POWER_DESCRIPTIVE`` (fewer than two
        passing cells) or ``SINGLE_CONDITION`` (no axis)."""
        if self.verdict is not None:
            return self.verdict.value
        if self.verdict_evidence.get("nothing_auditable"):
            return Reason.NOTHING_AUDITABLE.value
        return (Reason.LOW_POWER_DESCRIPTIVE.value if self.axis is not None
                else Reason.SINGLE_CONDITION.value)

    def to_dict(self) -> dict[str, Any]:
        return {
            "study": _plain(dict(self.study)), "metric": self.metric, "axis": self.axis,
            "verdict": self.verdict.value if self.verdict else None,
            "verdict_evidence": _plain(dict(self.verdict_evidence)),
            "cells": [c.to_dict() for c in self.cells],
            "orderings": [o.to_dict() for o in self.orderings],
            "findings": [f.to_dict() for f in self.findings],
            "runs": [r.to_dict() for r in self.runs],
        }


@dataclass(frozen=True)
class AuditResult:
    """The whole audit: config, input accounting, one StudyResult per study and metric, and
    every finding. ``exit_code`` is what ``grokaudit check`` exits with."""

    version: str
    config: Mapping[str, Any]
    input: Mapping[str, Any]
    studies: tuple[StudyResult, ...]
    findings: tuple[Finding, ...]
    failing: tuple[Finding, ...]  #: the findings that make the audit fail under ``fail_on``
    #: how the result was made (:class:`~grokaudit.trail.Trail`): version, config file,
    #: changed settings, input mapping, input files, command
    trail: Any = None

    @property
    def exit_code(self) -> int:
        return 1 if self.failing else 0

    @property
    def codes(self) -> frozenset[Reason]:
        """Every reason code among the findings (convenient in tests and scripts)."""
        return frozenset(f.code for f in self.findings)

    def study(self, metric: str | None = None, **key: Any) -> StudyResult:
        """The study for ``metric`` (default: the first) whose split matches ``key``."""
        for s in self.studies:
            if (metric is None or s.metric == metric) and all(
                    s.study.get(k) == v for k, v in key.items()):
                return s
        raise KeyError(f"no study for metric={metric!r} {key}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "grokaudit_version": self.version,
            "config": _plain(dict(self.config)),
            "input": _plain(dict(self.input)),
            "summary": {
                "exit_code": self.exit_code,
                "n_findings": len(self.findings),
                "n_failing": len(self.failing),
                "failing_codes": sorted({f.code.value for f in self.failing}),
                "verdicts": [
                    {"study": _plain(dict(s.study)), "metric": s.metric,
                     "verdict": s.verdict.value if s.verdict else None}
                    for s in self.studies
                ],
            },
            "studies": [s.to_dict() for s in self.studies],
            "findings": [f.to_dict() for f in self.findings],
            "trail": None if self.trail is None else self.trail.to_dict(),
        }

    def to_json(self, indent: int | None = 2) -> str:
        """The versioned JSON form; byte-identical for identical input and config."""
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False, allow_nan=False,
                          ensure_ascii=False) + "\n"


_T = TypeVar("_T")


def make_many(cls: type[_T], columns: Mapping[str, Iterable[Any]]) -> list[_T]:
    """``[cls(**row) for row in rows]`` where ``columns`` maps every field name of the frozen
    dataclass ``cls`` to an iterable of that field's values, one per object.

    A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``, about
    3 µs for the 29 fields of a :class:`RunResult`: at a million runs, a third of the audit.
    Objects made here get the same fields as ``__init__`` would give them (so they compare
    equal, hash, print and pickle alike) in a quarter of the time. A class with a
    ``__post_init__``, ``__slots__`` or a field outside ``__init__`` is made with its
    constructor instead."""
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    if set(columns) != set(names):
        missing = sorted(set(names) - set(columns))
        extra = sorted(set(columns) - set(names))
        raise ValueError(f"make_many({cls.__name__}): missing fields {missing}, unknown {extra}")
    rows = zip(*(columns[n] for n in names), strict=True)
    if hasattr(cls, "__post_init__") or hasattr(cls, "__slots__") \
            or not all(f.init for f in fields(cls)):  # type: ignore[arg-type]
        return [cls(**dict(zip(names, row))) for row in rows]
    new = object.__new__

    def make(row: tuple[Any, ...]) -> _T:
        obj = new(cls)
        obj.__dict__.update(zip(names, row))
        return obj

    return [make(row) for row in rows]


def fails(f: Finding, fail_on: Sequence[str]) -> bool:
    """Whether finding ``f`` makes a command exit 1 under ``fail_on``: ``default`` (critical
    findings), ``none``, ``warning`` (warnings and critical findings) or a list of codes."""
    mode = tuple(fail_on)
    if mode == ("default",):
        return f.severity is Severity.CRITICAL
    if mode == ("none",):
        return False
    if mode == ("warning",):
        return f.severity in (Severity.CRITICAL, Severity.WARNING)
    return f.code.value in mode


def sort_findings(findings: Sequence[Finding]) -> tuple[Finding, ...]:
    """A deterministic order: severity (critical first), then scope, study, metric, code."""
    sev = {Severity.CRITICAL: 0, Severity.WARNING: 1, Severity.INFO: 2}
    scope = {"input": 0, "study": 1, "cell": 2, "run": 3}
    # the study's JSON is the same for every finding of a study: made once per distinct study
    # (keyed on each value's type and repr, which tell apart 1, 1.0, True and -0.0, 0.0)
    study_json: dict[tuple[tuple[str, str, str], ...], str] = {}

    def study_key(study: Mapping[str, Any]) -> str:
        k = tuple((str(name), type(v).__qualname__, repr(v)) for name, v in study.items())
        out = study_json.get(k)
        if out is None:
            out = study_json[k] = json.dumps(_plain(dict(study)), sort_keys=True)
        return out

    return tuple(sorted(findings, key=lambda f: (
        sev[f.severity], scope.get(f.scope, 9), study_key(f.study), f.metric or "",
        str(_plain(f.cell)), f.code.value, f.runs)))
