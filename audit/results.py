"""Result objects: frozen dataclasses that keep their evidence, with a stable JSON form.

``AuditResult.to_json()`` is versioned (``"schema": "grokaudit.audit/1"``), has stable keys,
and is byte-identical for identical input and config (no timestamps, sorted collections).
A value that could not be computed is ``None`` next to a :class:`~grokaudit.reasons.Reason`.
"""

from __future__ import annotations

import enum
import json
import math
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .reasons import Reason, Severity

SCHEMA = "grokaudit.audit/1"


def number(x: float | int | None, digits: int | None = None) -> float | int | None:
    """A JSON-safe number: NaN → None, ±inf → None (the interval's ``censored`` says why), a
    whole float → int, else the float (rounded to ``digits`` significant digits when given:
    a tiny positive p-value stays positive)."""
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
    return xf if digits is None else float(f"{xf:.{digits}g}")




#: The claim form's floats are rounded to this many significant digits (the claim results'
#: rounding, :data:`grokaudit.claims.results.DIGITS`: fits of a few seeds are not reproducible
#: beyond it across BLAS builds). Here, so that the claim form writes itself.
CLAIM_DIGITS = 12


@dataclass(frozen=True)
class Interval:
    """A time or quantity known up to an interval: the one interval type of every result.

    ``value`` is the point when one is known (else ``None``); ``lower`` and ``upper`` its ends.
    It has two forms, each with its own JSON (:meth:`to_dict`), told apart by ``closed``:

    * the **audit form** (``closed`` is ``None``; built positionally or by :meth:`make`), the
      clocks of ``check`` and the claims' per-run times: it happened in ``(lower, upper]``.
      ``value`` is the logged step where it was first seen (``None`` when censored); ``upper``
      is ``None`` when right-censored (``censored``: it had not happened when the log ended),
      a ``None`` end otherwise is missing. A value that is ``None`` with both ends known is
      *left-censored* (``left_censored``): the event happened before logging began (or, for a
      lag or a cell median, rests on such an event), so only its interval is known. JSON:
      ``{"value", "lower", "upper", "censored", "left_censored"}``.
    * the **claim form** (``closed`` is ``(low_closed, high_closed)``; built by :meth:`span`
      or :meth:`claim`), the claims' derived ranges (a paired difference, a median lead): a
      ``None`` end is unbounded, each end is closed when the quantity can take that value
      (``low`` and ``high`` name the ends as its JSON does; ``censored``: unbounded above).
      JSON: ``{"value", "low", "high", "low_closed", "high_closed"}``, floats rounded to
      :data:`CLAIM_DIGITS` significant digits.

    ``closed`` takes part in equality: two intervals that write different JSON are not equal.
    """

    value: float | None
    lower: float | None
    upper: float | None
    censored: bool
    closed: tuple[bool, bool] | None = None

    @classmethod
    def make(cls, value: float, lower: float, upper: float) -> Interval | None:
        """An audit-form interval from floats where NaN = missing and ``upper = inf`` =
        censored; ``None`` when neither the value nor the lower end is known."""
        if math.isnan(lower) and math.isnan(value):
            return None
        cens = math.isinf(upper)
        return cls(
            value=None if (cens or math.isnan(value)) else float(value),
            lower=None if math.isnan(lower) else float(lower),
            upper=None if (cens or math.isnan(upper)) else float(upper),
            censored=cens,
        )

    @classmethod
    def claim(cls, value: float | None, low: float | None, high: float | None,
              low_closed: bool = False, high_closed: bool = False) -> Interval:
        """A claim-form interval from its JSON fields as they are (``None``: unbounded)."""
        return cls(value, low, high, high is None, (low_closed, high_closed))

    @classmethod
    def span(cls, low: float, high: float, low_closed: bool = False,
             high_closed: bool = False) -> Interval:
        """A claim-form interval from floats where ``±inf`` (or NaN) means unbounded; equal
        ends give a point, closed at both ends; an unbounded end is never closed."""
        lo = None if math.isinf(low) or math.isnan(low) else float(low)
        hi = None if math.isinf(high) or math.isnan(high) else float(high)
        if lo is not None and hi is not None and lo == hi:
            return cls.claim(lo, lo, hi, True, True)
        return cls.claim(None, lo, hi, low_closed and lo is not None,
                         high_closed and hi is not None)

    @property
    def form(self) -> str:
        """``audit`` or ``claim``: which JSON form :meth:`to_dict` writes."""
        return "audit" if self.closed is None else "claim"

    @property
    def low(self) -> float | None:
        """The lower end, by the claim form's name."""
        return self.lower

    @property
    def high(self) -> float | None:
        """The upper end, by the claim form's name."""
        return self.upper

    @property
    def low_closed(self) -> bool:
        """Whether the quantity can equal ``lower``: never in the audit form's ``(lower, …``."""
        return self.closed is not None and self.closed[0]

    @property
    def high_closed(self) -> bool:
        """Whether the quantity can equal ``upper``: the audit form's ``…, upper]`` is closed
        whenever it has an upper end."""
        return self.upper is not None if self.closed is None else self.closed[1]

    @property
    def upper_or_inf(self) -> float:
        return math.inf if self.upper is None else self.upper

    @property
    def left_censored(self) -> bool:
        """Only the interval is known, no value: the event happened before logging began (or
        the quantity is derived from such an event). An audit-form notion: a claim-form range
        with no value is a range, never an event before logging."""
        return (self.closed is None and self.value is None and not self.censored
                and self.upper is not None and self.lower is not None)

    def to_dict(self) -> dict[str, Any]:
        """The JSON of this interval's form (see the class docstring)."""
        if self.closed is not None:
            d = CLAIM_DIGITS
            return {"value": number(self.value, d), "low": number(self.lower, d),
                    "high": number(self.upper, d), "low_closed": bool(self.closed[0]),
                    "high_closed": bool(self.closed[1])}
        return {"value": number(self.value), "lower": number(self.lower),
                "upper": number(self.upper), "censored": self.censored,
                "left_censored": self.left_censored}

    def format(self, style: str = "compact") -> str:
        """The interval as plain text, never a point where only a bound is known; one method
        for every text printer (the JSON form is :meth:`to_dict`; the HTML report's markup is
        :func:`grokaudit.html_report.interval_html`, so that no result builds HTML):

        * ``compact``: ``1200``, ``>5400`` (right-censored), ``≤2000`` (left-censored: before
          the first logged step 2000) or ``1400–3400`` (only bounds known);
        * ``table`` (the text report's tables): as compact, a censored one ``>5400 (cens)``;
        * ``claim`` (the claims' text): a point with its ``(lower, upper]``, a value known only
          by a bound as ``>5400``, ends rounded outwards (:func:`outward`); ``claim_value``: the
          same without the interval.

        A claim-form interval prints only in the ``claim`` styles (alike): ``x``, ``(x, y)``,
        ``[x, y]``, ``≥x``, ``>x``, ``≤x``, ``<x``, ``unknown`` when unbounded."""
        if style not in _STYLES:
            raise ValueError(f"style {style!r}: one of {', '.join(_STYLES)}")
        if self.closed is not None:
            if style not in ("claim", "claim_value"):
                raise ValueError(f"style {style!r}: a claim-form interval prints in claim, "
                                 "claim_value")
            return self._span_text()
        if style in ("claim", "claim_value"):
            return self._claim_text(detail=style == "claim")
        # a bound is rounded outwards: ">5401.5" prints ">5401", never ">5402"
        if self.censored:
            lo = outward(self.lower, down=True)
            return f">{lo} (cens)" if style == "table" else f">{lo}"
        if self.left_censored:
            hi = outward(self.upper, down=False)
            return f"≤{hi}" if self.lower == 0 else f"{outward(self.lower, down=True)}–{hi}"
        return format_number(self.value)

    def _claim_text(self, detail: bool) -> str:
        if self.left_censored:  # only its bounds: both said, as in every other style
            lo, hi = outward(self.lower, down=True), outward(self.upper, down=False)
            return f"≤{hi}" if self.lower == 0 else f"({lo}, {hi}]"
        if self.censored or self.value is None:
            return "—" if self.lower is None else f">{outward(self.lower, down=True)}"
        if detail and self.lower is not None and self.upper is not None \
                and self.lower != self.upper:
            return (f"{format_number(self.value)} ({outward(self.lower, down=True)}, "
                    f"{outward(self.upper, down=False)}]")
        return format_number(self.value)

    def _span_text(self) -> str:
        """A claim-form interval: its value, else its ends with their closure, each end
        rounded outwards; ``unknown`` when unbounded on both sides."""
        if self.value is not None:
            return format_number(self.value)
        if self.lower is not None and self.upper is not None:
            lo, hi = outward(self.lower, down=True), outward(self.upper, down=False)
            return (f"{'[' if self.low_closed else '('}{lo}, {hi}"
                    f"{']' if self.high_closed else ')'}")
        if self.lower is not None:
            return f"{'≥' if self.low_closed else '>'}{outward(self.lower, down=True)}"
        if self.upper is not None:
            return f"{'≤' if self.high_closed else '<'}{outward(self.upper, down=False)}"
        return "unknown"


_STYLES = ("compact", "table", "claim", "claim_value")


def format_interval(iv: Interval | None, style: str = "compact") -> str:
    """:meth:`Interval.format`, ``—`` for a value that could not be computed (None)."""
    return "—" if iv is None else iv.format(style)


#: From here on a number is printed with significant digits, whole or not (1e16 is above
#: every step count a log holds and every integer a float keeps exactly).
HUGE = 1e16


def format_number(x: float | None, digits: int = 3) -> str:
    """A number for people: ``—`` when missing (None or NaN), whole numbers and values of 1 000
    or more without decimals (steps), else ``digits`` significant digits. Shared by the text
    report, the HTML report and the figures."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    if abs(x) >= HUGE:  # no step count: a 1e300 dose is not printed as 301 digits
        return f"{x:.{digits}g}"
    if abs(x) >= 1000 or float(x).is_integer():
        return f"{x:.0f}"
    return f"{x:.{digits}g}"


def outward(x: float | None, digits: int = 3, *, down: bool) -> str:
    """``x`` as :func:`~grokaudit.results.format_number` prints it, rounded away from the
    inside of an interval (``down`` for a lower end, or the bound of ``> x``): a printed
    interval or bound never claims less than was computed. ``None``/NaN print ``—``."""
    if x is None or math.isnan(x):
        return "—"
    s = format_number(x, digits)
    try:
        v = float(s)
    except ValueError:
        return s
    if (v <= x) if down else (v >= x):
        return s
    if abs(x) < HUGE and (abs(x) >= 1000 or float(x).is_integer()):
        q = 1.0
    else:
        q = 10.0 ** (math.floor(math.log10(abs(x))) - digits + 1)
    k = math.floor(x / q) if down else math.ceil(x / q)
    return format_number(k * q, digits)



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
            "study": plain(dict(self.study)), "metric": self.metric, "cell": plain(self.cell),
            "runs": list(self.runs), "evidence": plain(dict(self.evidence)),
            "message": self.message,
        }


def plain(x: Any, digits: int | None = None) -> Any:
    """Any result value as a JSON-safe Python value: the one converter of every result.

    Mappings (keys as text), sequences and arrays become dicts and lists, intervals and
    records their ``to_dict()``, enums their value, numpy scalars Python ones, numbers go
    through :func:`number` (NaN and ±inf become None; ``digits`` rounds floats, as the claim
    results do), anything else its text."""
    if isinstance(x, Mapping):
        return {str(k): plain(v, digits) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v, digits) for v in x]
    if isinstance(x, Interval):
        return x.to_dict()
    if isinstance(x, np.ndarray):
        return [plain(v, digits) for v in x.tolist()]
    if hasattr(x, "to_dict") and callable(x.to_dict):
        return plain(x.to_dict(), digits)
    if isinstance(x, enum.Enum):
        return plain(x.value, digits)
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return number(float(x), digits)
    if x is None or isinstance(x, str):
        return x
    return str(x)




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
        return {"kept": self.kept, "drop": number(self.drop), "valid_comp": self.valid_comp,
                "censored": self.censored, "t_compress": number(self.t_compress),
                "m_compress": number(self.m_compress), "gap": number(self.gap),
                "rel_gap": number(self.rel_gap), "rate": number(self.rate)}


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
                "censor_frac": number(self.censor_frac),
                "amp_invalid_frac": number(self.amp_invalid_frac), "drop": number(self.drop),
                "rate": number(self.rate), "comp_ratio": number(self.comp_ratio),
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
            "run": self.run, "cell": plain(self.cell),
            "t_mem": self.t_mem.to_dict() if self.t_mem else None,
            "t_grok": self.t_grok.to_dict(), "grok_sustained": self.grok_sustained,
            "grok_fell_at": number(self.grok_fell_at), "final_test_acc": number(self.final_test_acc),
            "fully_generalized": self.fully_generalized, "m_start": number(self.m_start),
            "m_grok": number(self.m_grok), "m_peak": number(self.m_peak), "floor": number(self.floor),
            "delta": number(self.delta), "floor_stability": self.floor_stability,
            "w1_median": number(self.w1_median), "drift": number(self.drift),
            "drift_interval": [number(v) for v in self.drift_interval], "mad": number(self.mad),
            "compression": self.compression,
            "t_compress": self.t_compress.to_dict() if self.t_compress else None,
            "undershoot": number(self.undershoot),
            "lag": self.lag.to_dict() if self.lag else None, "rel_lag": number(self.rel_lag),
            "frac_pre": number(self.frac_pre), "inflation": number(self.inflation),
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
    #: False in an accuracy-only audit (no metric: ``COMPRESSION_NOT_ASSESSED``): every count
    #: and flag of the compression is ``null`` in the JSON, not a count of 0
    compression_assessed: bool = True

    @property
    def passes(self) -> bool:
        return not self.gates

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "axis_value": plain(self.axis_value), "runs": list(self.runs),
            "n_runs": self.n_runs, "n_grokked": self.n_grokked,
            "n_fully_generalized": self.n_fully_generalized,
            "n_no_compression": self.n_no_compression, "n_established": self.n_established,
            "n_tc_censored": self.n_tc_censored,
            "t_grok": self.t_grok.to_dict() if self.t_grok else None,
            "t_compress": self.t_compress.to_dict() if self.t_compress else None,
            "lag": self.lag.to_dict() if self.lag else None,
            "floor": number(self.floor), "delta": number(self.delta), "m_grok": number(self.m_grok),
            "rel_lag": number(self.rel_lag), "frac_pre": number(self.frac_pre),
            "inflation": number(self.inflation),
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
        if not self.compression_assessed:
            out.update(dict.fromkeys(_COMPRESSION_KEYS))
        return out


#: A cell's JSON keys that only a metric's compression decides: ``null`` when it was not
#: assessed (the numbers of a metric, ``floor`` to ``inflation``, are None already).
_COMPRESSION_KEYS = ("n_no_compression", "n_established", "n_tc_censored", "floor_stability",
                     "n_transient", "n_judged", "n_transient_sustained",
                     "inflation_is_lower_bound", "short_horizon_runs",
                     "floor_rests_on_short_runs")


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
    #: TOO_FEW_CELLS, CENSORED_INTERVALS_OVERLAP, TIES_WITHIN_RESOLUTION, NO_NET_DIRECTION
    sub_reason: Reason | None
    axis_values: tuple[Any, ...]

    @property
    def monotone(self) -> bool:
        return self.identified and self.shape == "monotone"

    def to_dict(self) -> dict[str, Any]:
        return {
            "quantity": self.quantity, "n_cells": self.n_cells, "concordant": self.concordant,
            "discordant": self.discordant, "unidentified": self.unidentified,
            "identified": self.identified, "direction": self.direction, "shape": self.shape,
            "tau_bounds": [number(t) for t in self.tau_bounds] if self.tau_bounds else None,
            "spearman": number(self.spearman), "reason": self.reason.value,
            "sub_reason": self.sub_reason.value if self.sub_reason else None,
            "axis_values": plain(list(self.axis_values)),
        }


@dataclass(frozen=True)
class StudyResult:
    """One study (cells along the axis sharing every other condition) for one metric, or
    for none (``metric`` None: an accuracy-only audit, ``COMPRESSION_NOT_ASSESSED``)."""

    study: Mapping[str, Any]
    metric: str | None  #: None: no metric audited, the accuracy clocks only
    axis: str | None  #: None: no condition varies (one cell of every run, no orderings)
    cells: tuple[CellSummary, ...]
    #: every run's results: the audit gives a :class:`~grokaudit.runtable.RunTable` (columns;
    #: a read-only sequence of :class:`RunResult` made on demand, ``to_arrow()``)
    runs: Sequence[RunResult]
    orderings: tuple[Ordering, ...]
    verdict: Reason | None  #: the clock verdict; None with LOW_POWER_DESCRIPTIVE
    verdict_evidence: Mapping[str, Any]
    findings: tuple[Finding, ...]

    def ordering(self, quantity: str) -> Ordering | None:
        return next((o for o in self.orderings if o.quantity == quantity), None)

    def cell(self, axis_value: Any) -> CellSummary | None:
        return next((c for c in self.cells if c.axis_value == axis_value), None)

    @property
    def compression_assessed(self) -> bool:
        """Whether a metric was audited: False for an accuracy-only study (its clock audit
        only, ``COMPRESSION_NOT_ASSESSED``)."""
        return self.metric is not None

    @property
    def verdict_label(self) -> str:
        """The study's outcome in one word: its clock verdict, else ``NOTHING_AUDITABLE`` (the
        audit assessed nothing in this study), ``COMPRESSION_NOT_ASSESSED`` (accuracy only: no
        clock verdict without a metric), ``LOW_POWER_DESCRIPTIVE`` (fewer than two passing
        cells) or ``SINGLE_CONDITION`` (no axis)."""
        if self.verdict is not None:
            return self.verdict.value
        if self.verdict_evidence.get("nothing_auditable"):
            return Reason.NOTHING_AUDITABLE.value
        if not self.compression_assessed:
            return Reason.COMPRESSION_NOT_ASSESSED.value
        return (Reason.LOW_POWER_DESCRIPTIVE.value if self.axis is not None
                else Reason.SINGLE_CONDITION.value)

    def to_dict(self) -> dict[str, Any]:
        return self._dict([r.to_dict() for r in self.runs])

    def _json_tree(self, holes: dict[str, Any] | None = None) -> dict[str, Any]:
        """:meth:`to_dict` with the runs made one at a time as the JSON is written
        (:meth:`Result.json_chunks`), never all at once. Private: json's C encoder (used by
        ``json.dumps`` without an indent) reads a list's own items, which this tree's runs
        list does not hold — only json_chunks' encoder walks it. With ``holes``, runs held
        as columns (a RunTable) are a placeholder string, its key in ``holes`` as json
        writes it: json_chunks writes them from their columns there."""
        if holes is not None and hasattr(self.runs, "json_list"):
            token = f"grokaudit-runs-{uuid.uuid4().hex}"
            holes[json.encoder.encode_basestring(token)] = self.runs
            return self._dict(token)  # type: ignore[arg-type]
        return self._dict(OneAtATime(self.runs, _run_dict))

    def _dict(self, runs: list[Any]) -> dict[str, Any]:
        return {
            "study": plain(dict(self.study)), "metric": self.metric, "axis": self.axis,
            "verdict": self.verdict.value if self.verdict else None,
            "verdict_evidence": plain(dict(self.verdict_evidence)),
            "cells": [c.to_dict() for c in self.cells],
            "orderings": [o.to_dict() for o in self.orderings],
            "findings": [f.to_dict() for f in self.findings],
            "runs": runs,
        }


def _run_dict(r: RunResult) -> dict[str, Any]:
    return r.to_dict()


class OneAtATime(list):  # type: ignore[type-arg]
    """A list for the JSON encoder that holds nothing: each item is made from ``items`` by
    ``make`` when the encoder reaches it, and dropped once written (a study's million runs
    were a million dicts, then the whole text, before the first byte was written). Only
    the encoder reads it: its length and its iteration."""

    def __init__(self, items: Sequence[Any], make: Callable[[Any], Any]) -> None:
        super().__init__()
        self._items, self._make = items, make

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Any]:
        return (self._make(x) for x in self._items)


def _defined_in(cls: type, name: str) -> type:
    """The class of ``cls``'s method resolution order that defines ``name``."""
    return next(c for c in cls.__mro__ if name in c.__dict__)


def _indented(indent: Any) -> bool:
    """An indent of a number of spaces (not a bool, not text): json writes one line per
    value, which :meth:`Result.json_chunks` writes a study's runs into from their columns."""
    return isinstance(indent, int) and not isinstance(indent, bool) and indent > 0


class Result:
    """What every command's result offers (the audit, each claim, the sensitivity grid, the
    suite): its ``findings``, the ``fail_on`` they are judged under, and derived from those
    once, here, ``failing`` (the findings that make the command exit 1), ``exit_code`` (1 when
    any fails, else 0), ``codes`` and ``to_json``. A subclass is a frozen dataclass with
    ``findings`` and ``fail_on`` fields (or properties) and a ``to_dict``."""

    findings: tuple[Finding, ...]
    fail_on: tuple[str, ...]

    @property
    def failing(self) -> tuple[Any, ...]:
        """The findings that fail under ``fail_on`` (:func:`fails`)."""
        return tuple(f for f in self.findings if fails(f, self.fail_on))

    @property
    def exit_code(self) -> int:
        """What the command exits with: 1 when something fails, else 0."""
        return 1 if self.failing else 0

    @property
    def codes(self) -> frozenset[Reason]:
        """Every reason code among the findings (convenient in tests and scripts)."""
        return frozenset(f.code for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def to_json(self, indent: int | None = 2) -> str:
        """The versioned JSON form: strict JSON (no NaN), UTF-8 text, byte-identical for
        identical input and options. With an indent, the text of :meth:`json_chunks` (a
        study's runs written from their columns: a million runs in seconds, not minutes);
        without, ``json.dumps``' C encoder. Either is :meth:`_reference_json`'s text."""
        if _indented(indent):
            return "".join(self.json_chunks(indent))
        return self._reference_json(indent)

    def _reference_json(self, indent: int | None = 2) -> str:
        """``json.dumps`` of :meth:`to_dict`: the text :meth:`to_json` and :meth:`json_chunks`
        give, made the plain way (the tests and ``benchmarks/identity.py`` compare with it)."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False,
                          ensure_ascii=False) + "\n"

    def _json_tree(self, holes: dict[str, Any] | None = None) -> Any:
        """What :meth:`json_chunks` encodes: :meth:`to_dict`, or a tree of the same JSON
        whose long lists are made as they are written (:class:`OneAtATime`: for json_chunks'
        pure-Python encoder only), or left as placeholders listed in ``holes``
        (:meth:`StudyResult._json_tree`)."""
        return self.to_dict()

    def json_chunks(self, indent: int | None = 2) -> Iterator[str]:
        """:meth:`to_json` in pieces, the same text: for writing a large result (a million
        runs) without holding its whole JSON, nor every run's dict, in memory. A study's
        runs held as columns are written from them (:meth:`RunTable.json_list
        <grokaudit.runtable.RunTable.json_list>`), with no per-run object."""
        enc = json.JSONEncoder(indent=indent, allow_nan=False, ensure_ascii=False)
        # iterencode is json.dumps' own encoder, chunk by chunk (with an indent json.dumps
        # uses this pure-Python encoder too): the same bytes
        holes: dict[str, Any] | None = {} if _indented(indent) else None
        # a subclass that changes to_dict and not _json_tree: its to_dict is its JSON
        tree = (self._json_tree(holes) if issubclass(_defined_in(type(self), "_json_tree"),
                                                     _defined_in(type(self), "to_dict"))
                else self.to_dict())
        pad = ""  # the indentation of the line being written
        last: tuple[str, str] = ("", "")  # the two chunks before this one
        for chunk in enc.iterencode(tree):
            runs = holes.get(chunk) if holes else None
            if runs is not None and last == ('"runs"', enc.key_separator):
                # the placeholder, written alone after its key: the runs' list there, at
                # the level of its key (json's pure-Python encoder indents by levels)
                assert holes is not None and isinstance(indent, int)
                del holes[chunk]
                yield from runs.json_list(" " * indent, len(pad) // indent)
            else:
                if "\n" in chunk:
                    pad = chunk[chunk.rfind("\n") + 1:]
                yield chunk
            last = (last[1], chunk)
        if holes:  # a placeholder json did not write where it was put
            raise RuntimeError("the runs of a study were not written")
        yield "\n"


@dataclass(frozen=True)
class AuditResult(Result):
    """The whole audit: config, input accounting, one StudyResult per study and metric, and
    every finding. ``exit_code`` is what ``grokaudit check`` exits with."""

    version: str
    config: Mapping[str, Any]
    input: Mapping[str, Any]
    studies: tuple[StudyResult, ...]
    findings: tuple[Finding, ...]
    #: how the result was made (:class:`~grokaudit.trail.Trail`): version, config file,
    #: changed settings, input mapping, input files, command
    trail: Any = None
    #: which findings fail the audit (``default``: the critical ones; :func:`fails`)
    fail_on: tuple[str, ...] = ("default",)

    def study(self, metric: str | None = None, **key: Any) -> StudyResult:
        """The study for ``metric`` (default: the first) whose split matches ``key``."""
        for s in self.studies:
            if (metric is None or s.metric == metric) and all(
                    s.study.get(k) == v for k, v in key.items()):
                return s
        raise KeyError(f"no study for metric={metric!r} {key}")

    def to_dict(self) -> dict[str, Any]:
        return self._dict([s.to_dict() for s in self.studies])

    def _json_tree(self, holes: dict[str, Any] | None = None) -> dict[str, Any]:
        return self._dict([s._json_tree(holes) for s in self.studies])

    def _dict(self, studies: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "grokaudit_version": self.version,
            "config": plain(dict(self.config)),
            "input": plain(dict(self.input)),
            "summary": {
                "exit_code": self.exit_code,
                "n_findings": len(self.findings),
                "n_failing": len(self.failing),
                "failing_codes": sorted({f.code.value for f in self.failing}),
                "verdicts": [
                    {"study": plain(dict(s.study)), "metric": s.metric,
                     "verdict": s.verdict.value if s.verdict else None}
                    for s in self.studies
                ],
            },
            "studies": studies,
            "findings": [f.to_dict() for f in self.findings],
            "trail": None if self.trail is None else self.trail.to_dict(),
        }


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
            out = study_json[k] = json.dumps(plain(dict(study)), sort_keys=True)
        return out

    return tuple(sorted(findings, key=lambda f: (
        sev[f.severity], scope.get(f.scope, 9), study_key(f.study), f.metric or "",
        str(plain(f.cell)), f.code.value, f.runs)))
