"""The audit of one run while it trains: are the numbers this run will be read for defined yet?

A :class:`LiveRun` is fed the rows a run logs (``log(step, test_acc=…, emb_erank=…)``) and
answers at any step with :meth:`LiveRun.state`: has the run grokked, and held it; for each
metric, has its floor stopped moving and has its compression clock ``t_compress`` settled; and
when not, what is missing, with the numbers that say so ("floor still moving: slope −0.8 per
1 000 steps"). The answer is the audit's own: the rows so far are validated and the run's
clocks computed by the same functions, thresholds and rules as ``grokaudit check``, on the log
as it stands, so the state at the last step of a finished log is what ``check`` says of that
run audited on its own. Within a sweep ``check`` can learn one more thing from siblings: a
sibling that ran longer and shows the metric still moving after this run's horizon makes this
run's floor indeterminate (``HORIZON_MISMATCH``); a single run cannot know that.

Nothing here needs torch: the callbacks for Lightning and ``transformers``
(``grokaudit.callbacks``) and ``grokaudit watch`` are thin shells over this module.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np
import pandas as pd

from .config import AuditConfig, column_scales, grok_levels
from .errors import ConfigError, ErrorCode, GrokauditError, LogFormatError
from .results import Interval, RunResult, format_number, number, plain
from .roles import FRACTION_MAX, PERCENT_MIN, PERCENT_MIN_POINTS
from .schema import ACCURACY_COLUMNS, is_known_metric
from .values import metric_value, step_value

#: A logged value as float64, or its refusal (the one reading of RunLogger and LiveRun).
real_value = metric_value

#: How far past the step S0 from which its numbers hold a run must go, as a share of S0, before
#: ``stop_when="settled"`` stops it: the run stops at ``(1 + margin) × S0``. S0 is read from
#: the log itself (:attr:`LiveState.defined_from`: the grok, and the step since which each
#: metric has sat in its floor band), so the decision at a step is the same however often the
#: state is computed. The value is the one measured on long runs (``benchmarks/live_stop.py``,
#: the table in ``docs/live.md``).
DEFAULT_MARGIN = 1.0

#: The least multiple of its t_grok a run reaches before ``stop_when="settled"`` stops it: a
#: representation often starts to compress long after the grok, and a metric flat over the
#: first few multiples of t_grok reads as "no compression" until it does (seed 003's MLP at
#: wd 3: flat to 800 steps, compressed by 2 300). 20, measured with the margin on long runs
#: (``benchmarks/live_stop.py``, ``docs/live.md``).
DEFAULT_GROK_MULTIPLE = 20.0


class Missing(str, Enum):
    """What keeps a run's numbers undefined at the step it has reached."""

    TOO_FEW_POINTS = "TOO_FEW_POINTS"  #: fewer than 3 logged points
    NO_ACCURACY = "NO_ACCURACY"  #: the grok criterion (test_acc) has not been logged
    NOT_GROKKED = "NOT_GROKKED"  #: test accuracy has not reached the grok threshold
    GROK_NOT_SUSTAINED = "GROK_NOT_SUSTAINED"  #: it reached it and fell back
    #: a clock happened before the first logged step: only a bound (≤ that step) is known
    LEFT_CENSORED = "LEFT_CENSORED"
    METRIC_MISSING = "METRIC_MISSING"  #: the metric has not been logged
    NO_FLOOR = "NO_FLOOR"  #: too few metric points in the final window to read a floor
    #: the final window begins before the grok: no floor read after the run generalized yet
    FLOOR_BEFORE_GROK = "FLOOR_BEFORE_GROK"
    #: the floor is not stable at this horizon: its drift over the final window, or its step
    #: from the window before, is larger than its band (docs/floor.md)
    FLOOR_MOVING = "FLOOR_MOVING"
    FLOOR_INDETERMINATE = "FLOOR_INDETERMINATE"  #: too noisy to tell whether it moves
    COMPRESSION_UNKNOWN = "COMPRESSION_UNKNOWN"  #: cannot tell yet whether it compresses
    NOT_SETTLED = "NOT_SETTLED"  #: t_compress censored: not in the floor band to stay
    #: an accuracy column's scale is not known yet: values above 1 but fewer than 3 above 1.5
    #: (not fractions, not yet clearly percent), or ``acc_scale`` percent with every value so
    #: far ≤ 1. ``check`` decides on the whole log; the live audit waits for enough values
    ACCURACY_SCALE_UNKNOWN = "ACCURACY_SCALE_UNKNOWN"
    #: a value offered through :meth:`LiveRun.record` (the callbacks) was refused and left out
    #: (its code in the evidence): ``check`` refuses a log that holds it
    VALUE_REFUSED = "VALUE_REFUSED"
    #: the audit refused the rows so far for another reason (its code in the evidence)
    NOT_AUDITABLE = "NOT_AUDITABLE"


@dataclass(frozen=True)
class Gap:
    """One thing missing, with the numbers that show it."""

    code: Missing
    message: str
    metric: str | None = None
    evidence: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code.value, "metric": self.metric, "message": self.message,
                "evidence": {k: plain(v) for k, v in sorted(self.evidence.items())}}


@dataclass(frozen=True)
class MetricState:
    """One metric of the run at the step reached."""

    metric: str
    settled: bool  #: the floor is stable and t_compress is known (or no compression is)
    floor: float | None
    floor_stability: str  #: ``stable``, ``unstable``, ``indeterminate``, ``none``, ``unchecked``
    #: the floor's drift per 1 000 steps (Theil–Sen over the final window) and its interval
    slope_per_1000: float | None
    slope_interval: tuple[float | None, float | None]
    window: tuple[float, float]  #: the final window (first step, last step) the floor is read on
    compression: str  #: ``compressed``, ``none``, ``unknown`` or ``n/a``
    t_compress: Interval | None
    run: RunResult | None  #: the audit's own per-run result (None before it can be computed)
    #: the step since which the metric has sat in its floor band F ± δ in this log (the first
    #: logged step after the smoothed metric last left it), whether it compressed or not; None
    #: without a floor or when it ends outside the band
    settled_at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "settled": self.settled, "floor": number(self.floor),
                "settled_at": number(self.settled_at),
                "floor_stability": self.floor_stability,
                "slope_per_1000": number(self.slope_per_1000),
                "slope_interval": [number(v) for v in self.slope_interval],
                "window": [number(v) for v in self.window], "compression": self.compression,
                "t_compress": self.t_compress.to_dict() if self.t_compress else None}


@dataclass(frozen=True)
class LiveState:
    """The live answer for one run at the step it has reached."""

    run: str
    step: float | None  #: the last logged step (None before any row)
    n_points: int  #: logged steps
    grokked: bool  #: t_grok known (not censored)
    grok_sustained: bool  #: grokked and never fell back for ``sustain`` points
    t_grok: Interval | None
    metrics: tuple[MetricState, ...]
    missing: tuple[Gap, ...]  #: empty when every number is defined
    #: S0: the step from which the numbers are what they are now, read from the log itself —
    #: the latest of t_grok (its upper end) and each metric's :attr:`MetricState.settled_at`
    #: (None while they are not defined). A function of the rows up to :attr:`step`, so the
    #: same however often the state is computed
    defined_from: float | None = None
    #: the step at which ``stop_when="settled"`` stops the run: ``(1 + margin) × S0``, and
    #: at least ``grok_multiple × t_grok`` (None while the numbers are not defined)
    stop_at: float | None = None
    #: while not defined: the earliest step the run can stop at, ``max(1 + margin,
    #: grok_multiple) × t_grok`` once it has grokked and held it (S0 is never before the
    #: grok); else None
    stop_not_before: float | None = None

    @property
    def defined(self) -> bool:
        """Grokked and sustained, and every metric settled: the run's clocks, floor and
        snapshot are numbers, not bounds."""
        return not self.missing and bool(self.metrics)

    @property
    def settled(self) -> bool:
        """Defined, and the run has gone past its stop step: what ``stop_when="settled"``
        stops on (:meth:`LiveRun.should_stop`)."""
        return (self.defined and self.step is not None and self.stop_at is not None
                and self.defined_from is not None and self.step >= self.stop_at
                and self.step > self.defined_from)

    @property
    def t_compress_upper(self) -> float | None:
        """The latest of the metrics' t_compress (their upper ends), when all are known."""
        ends = [m.t_compress.upper for m in self.metrics if m.t_compress is not None
                and not m.t_compress.censored and m.t_compress.upper is not None]
        if not ends or len(ends) < sum(m.compression == "compressed" for m in self.metrics):
            return None
        return max(ends)

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run, "step": number(self.step), "n_points": self.n_points,
                "defined": self.defined, "defined_from": number(self.defined_from),
                "settled": self.settled, "stop_at": number(self.stop_at),
                "stop_not_before": number(self.stop_not_before),
                "grokked": self.grokked, "grok_sustained": self.grok_sustained,
                "t_grok": self.t_grok.to_dict() if self.t_grok else None,
                "metrics": [m.to_dict() for m in self.metrics],
                "missing": [g.to_dict() for g in self.missing]}

    def describe(self) -> str:
        """One line: ``run r1 @ 12000: defined since 11000 (t_grok 2400, t_compress emb_erank
        5200)`` or ``run r1 @ 4000: not defined: floor still moving …``."""
        head = f"run {self.run} @ {format_number(self.step)}"
        if self.defined:
            tcs = ", ".join(f"{m.metric} {m.t_compress.format()}" if m.t_compress else
                            f"{m.metric} none (no compression)" for m in self.metrics)
            since = format_number(self.defined_from)
            tg = self.t_grok.format() if self.t_grok else "—"
            return f"{head}: defined since {since} (t_grok {tg}; t_compress {tcs})"
        return f"{head}: not defined: " + "; ".join(g.message for g in self.missing)

    def line(self) -> str:
        """The state in one short line, as a training loop prints it at an evaluation:
        grokked?, each metric compressed? and its floor stable?, and when the run will stop —
        ``run r1 @ 4000 · grokked 1550 · emb_erank compressing, floor moving · stops ≥ 3100``
        or ``… · defined since 5200 · stops at 10400`` (``stop_when="settled"``)."""
        parts = [f"run {self.run} @ {format_number(self.step)}"]
        if self.grokked and self.t_grok is not None:
            parts.append(f"grokked {self.t_grok.format()}" + (
                "" if self.grok_sustained else " (fell back)"))
        else:
            codes = {g.code for g in self.missing}
            parts.append("no accuracy yet" if codes & {Missing.NO_ACCURACY,
                                                         Missing.TOO_FEW_POINTS}
                         else "not grokked")
        for m in self.metrics:
            comp = {"compressed": (f"compressed {m.t_compress.format()}"
                                   if m.t_compress is not None and not m.t_compress.censored
                                   else "compressing"),
                    "none": "no compression", "unknown": "compression unknown"}.get(
                m.compression, "n/a")
            floor = {"stable": "floor stable", "unstable": "floor moving",
                     "indeterminate": "floor noisy", "unchecked": "floor unchecked"}.get(
                m.floor_stability, "no floor")
            parts.append(f"{m.metric} {comp}, {floor}")
        if self.defined:
            parts.append(f"defined since {format_number(self.defined_from)}")
            parts.append("settled: stop" if self.settled
                         else f"stops at {format_number(self.stop_at)}")
        else:
            gaps = sorted({g.code.value for g in self.missing
                           if g.code not in (Missing.NOT_GROKKED, Missing.NO_ACCURACY)})
            if gaps:
                parts.append("waiting: " + ", ".join(gaps))
            parts.append(f"stops ≥ {format_number(self.stop_not_before)}"
                         if self.stop_not_before is not None else "stop step unknown")
        return " · ".join(parts)


class LiveRun:
    """The live audit of one run (see the module's docstring).

    ``metrics``: the metric columns to follow (default: every known metric logged).
    ``config`` or keyword options: the audit's settings, exactly as for ``check``
    (``grok_threshold=0.95``, ``rel_tol=…``); an unknown option is refused.
    """

    def __init__(self, run: str = "run", *, metrics: Sequence[str] | None = None,
                 config: AuditConfig | None = None, margin: float = DEFAULT_MARGIN,
                 grok_multiple: float = DEFAULT_GROK_MULTIPLE, **options: Any) -> None:
        from .api import _config

        self.run = str(run)
        self.margin = checked_margin(margin)
        self.grok_multiple = checked_margin(grok_multiple, "grok_multiple",
                                            DEFAULT_GROK_MULTIPLE)
        self.config = _config(config, options)
        for field_, value, why in (
                ("grok_relative", "off", "reads the grok threshold against the best run of "
                 "the study"),
                ("floor_window", "span", "places the floor window on the grid the cell's runs "
                 "share")):
            if getattr(self.config, field_) not in (value, "index"):
                raise ConfigError(
                    f"{field_} = {getattr(self.config, field_)!r} {why}: one run alone cannot "
                    "know it, so the live audit would disagree with check; audit the sweep "
                    "with check, or follow the runs with the default",
                    code=ErrorCode.INVALID_OPTION, option=field_)
        if isinstance(metrics, str):
            metrics = (metrics,)
        self.metrics = _checked_metrics(tuple(metrics) if metrics else tuple(self.config.metrics))
        #: the scale each accuracy column is read in when the options fix it (``acc_scale``,
        #: ``acc_scales``); a column absent is decided from its values, as ``check`` decides
        self._scales = _option_scales(self.config)
        #: values logged as ±inf, by name: kept out of the audit (not logged), counted here
        self.nonfinite: dict[str, int] = {}
        #: the refusals :meth:`record` left out, by (name, code): (count, first step, last
        #: step, first message); each is a ``VALUE_REFUSED`` gap of every state
        self._refused: dict[tuple[str | None, str], tuple[int, float | None, float | None,
                                                          str]] = {}
        self._frame: pd.DataFrame | None = None
        self._rows: dict[float, dict[str, float]] = {}
        self._last: float | None = None

    # -- feeding ---------------------------------------------------------------------------
    def log(self, step: float, **values: Any) -> None:
        """Record the values logged at ``step``, or refuse the whole call, recording nothing, with
        the code ``check`` gives such a value (the refusal is raised here, where the value
        enters: :meth:`state` and :meth:`should_stop` never raise on rows ``log`` took).

        Several calls at one step fill one row; a name given twice at one step with two values
        is refused (``DUPLICATE_ROWS``), and so is a step before the last one logged
        (``STEP_DECREASING``): a run's steps only grow. A value must be a real number
        (``BAD_COLUMN_TYPE`` for text, a boolean, an array, a complex number — its imaginary
        part is never dropped), within float64's range (``INFINITE_VALUE`` for an integer such
        as ``10**400``), and an accuracy (``test_acc``, ``train_acc``) one that some scale can
        read (``ACCURACY_OUT_OF_RANGE``: below 0 or above 100, or outside [0, 1] in the scale
        ``acc_scale`` fixes). ``run`` is no value name (``RESERVED_COLUMN``). ``None`` and NaN
        mean "not logged"; ±inf is not logged either, counted in :attr:`nonfinite`."""
        s, checked, infinite = self._checked(step, values)
        for k in infinite:
            self.nonfinite[k] = self.nonfinite.get(k, 0) + 1
        self._rows.setdefault(s, {}).update(checked)
        self._last = s

    def record(self, step: float, **values: Any) -> list[GrokauditError]:
        """:meth:`log` for a loop that must not stop (the callbacks use it): never raises on a
        value. Each value ``log`` would refuse is left out, the rest is logged, and the
        refusal is kept as a ``VALUE_REFUSED`` gap of every later state (``check`` refuses a
        log that holds such a value, so the numbers cannot be defined: :meth:`should_stop`
        stays False). A refused step refuses the row. Returns the refusals (empty: all taken).
        """
        offered = {str(k): v for k, v in values.items()}
        refused: list[GrokauditError] = []
        while True:
            try:
                self.log(step, **offered)
                return refused
            except GrokauditError as exc:
                refused.append(exc)
                self._note_refused(step, exc)
                name = getattr(exc, "column", None)
                if not isinstance(exc, LogFormatError) or name not in offered:
                    return refused  # the step, or the whole row: nothing of it is logged
                del offered[name]

    def validate(self, step: float, **values: Any) -> None:
        """Raise what :meth:`log` would raise for this call, recording nothing (a logger that
        writes the row elsewhere asks first, so that both take it or neither)."""
        self._checked(step, values)

    def row(self, step: float) -> dict[str, float]:
        """The values recorded at ``step`` (empty when none)."""
        return dict(self._rows.get(float(step), {}))

    def _checked(self, step: Any, values: Mapping[str, Any]
                 ) -> tuple[float, dict[str, float], list[str]]:
        """The step, the values to record (float64, NaN left out) and the names logged as ±inf;
        a :class:`LogFormatError` for the first value refused (a name logged at this step
        before with another value included)."""
        s = _step(step)
        if self._frame is not None:
            raise ConfigError(f"run {self.run!r} is fed whole tables (observe); log() would "
                              "mix two sources", code=ErrorCode.INVALID_OPTION, option="log")
        if self._last is not None and s < self._last:
            raise LogFormatError(f"run {self.run!r}: step {format_number(s)} comes after step "
                                 f"{format_number(self._last)}; a run's steps only grow: log "
                                 "each run to its own LiveRun", column="step",
                                 code=ErrorCode.STEP_DECREASING)
        checked: dict[str, float] = {}
        infinite: list[str] = []
        for k, v in values.items():
            name = str(k)
            if name == "run":
                raise LogFormatError(f"run {self.run!r}: value name 'run' is the run id; name "
                                     "the value otherwise", column=name,
                                     code=ErrorCode.RESERVED_COLUMN)
            x = metric_value(name, v)
            if math.isinf(x):
                infinite.append(name)
            elif not math.isnan(x):
                if name in ACCURACY_COLUMNS:
                    self._check_accuracy(name, x)
                checked[name] = x
        row = self._rows.get(s, {})
        for k, x in checked.items():
            old = row.get(k)
            if old is not None and old != x:
                raise LogFormatError(f"run {self.run!r}: {k!r} logged twice at step "
                                     f"{format_number(s)} ({old!r}, then {x!r}); log each name "
                                     "once per step", column=k, code=ErrorCode.DUPLICATE_ROWS)
        return s, checked, infinite

    def _check_accuracy(self, name: str, x: float) -> None:
        """Refuse an accuracy no scale can read: outside [0, 1] in the scale the options fix;
        else below 0 or above 100 (percent is the largest scale ``check`` decides on). One
        above 1 within 100 waits for the decision (:data:`Missing.ACCURACY_SCALE_UNKNOWN`)."""
        scale = self._scales.get(name)
        hi = 1.0 if scale is not None else 100.0
        unit = ("a fraction or percent (0-100)" if scale is None
                else f"units of {scale:g} (acc_scale)")
        y = x / (scale or 1.0)
        if y > hi * FRACTION_MAX or y < -1e-9:  # (check's tolerances)
            raise LogFormatError(
                f"run {self.run!r}: {name} = {x!r} is no accuracy read as {unit}: outside "
                "[0, 1]; log accuracies as fractions or percent"
                + ("" if scale is None else ", or change acc_scale"), column=name,
                code=ErrorCode.ACCURACY_OUT_OF_RANGE)

    def _note_refused(self, step: Any, exc: GrokauditError) -> None:
        name = getattr(exc, "column", None)
        key = (name if isinstance(name, str) else None, exc.code.value)
        try:
            s: float | None = _step(step)
        except GrokauditError:
            s = None
        n, first, _, message = self._refused.get(key, (0, s, s, str(exc)))
        self._refused[key] = (n + 1, first, s, message)

    def observe(self, table: pd.DataFrame) -> None:
        """Audit this table of the run's rows from now on (a ``step`` column and the logged
        columns, as the loader reads the log): ``grokaudit watch`` hands each run's rows as
        read, late rows and all, so that the state is the one ``check`` gives the same rows.
        """
        frame = table.drop(columns=[c for c in ("run",) if c in table.columns])
        frame.insert(0, "run", self.run)
        self._frame = frame.reset_index(drop=True)
        steps = frame["step"].to_numpy(dtype=float) if len(frame) else np.zeros(0)
        self._last = float(np.nanmax(steps)) if steps.size else None

    def extend(self, rows: pd.DataFrame | Iterable[Mapping[str, Any]]) -> None:
        """Record many rows (each with a ``step``), in step order."""
        recs: Iterable[Mapping[Any, Any]] = (rows.to_dict("records")
                                             if isinstance(rows, pd.DataFrame) else rows)
        for rec in recs:
            r = {str(k): v for k, v in rec.items()}
            step = r.pop("step")
            r.pop("run", None)
            self.log(step, **r)

    # -- answering -------------------------------------------------------------------------
    def state(self) -> LiveState:
        """The audit of the rows so far (see the module's docstring), with ``defined_from``
        (S0), ``stop_at`` and ``stop_not_before``: each a function of the rows up to the last
        step, never of the states computed before (a callback evaluating every 50 steps,
        ``grokaudit watch`` polling a folder and ``watch --once`` of the finished folder say
        the same of the same rows)."""
        return _stop_steps(self._state(), self.margin, self.grok_multiple)

    def should_stop(self, margin: float | None = None) -> bool:
        """Stop now (``stop_when="settled"``): the numbers are defined and the run has gone
        from S0 (``defined_from``: its grok, and the step since which each metric has sat in
        its floor band) to at least ``(1 + margin) × S0``, and to ``grok_multiple × t_grok``
        (:data:`DEFAULT_GROK_MULTIPLE`) — every metric held on its floor
        over that whole stretch, and the final window shows the floor stable. ``margin``:
        None for the run's own (default :data:`DEFAULT_MARGIN`). A log stopped here is
        audited with every t_compress uncensored."""
        m = self.margin if margin is None else checked_margin(margin)
        return _stop_steps(self._state(), m, self.grok_multiple).settled

    def budget_warning(self, budget: float) -> str | None:
        """A warning when the run is not defined and its last floor window (the final
        ``floor_frac`` of a run that ends at step ``budget``) has begun: unless the metric
        settles now, the log that ends at ``budget`` will carry censored numbers."""
        if isinstance(budget, bool) or not isinstance(budget, (int, float, np.floating,
                                                               np.integer)) \
                or not math.isfinite(budget) or budget <= 0:
            raise ConfigError(f"budget {budget!r}: give the step the run will stop at (a "
                              "positive number)", code=ErrorCode.OPTION_OUT_OF_RANGE,
                              option="budget")
        st = self.state()
        if st.defined or st.step is None:
            return None
        if st.step > budget:
            return (f"run {self.run}: step {format_number(st.step)} is past the budget "
                    f"{format_number(budget)} and the numbers are not defined")
        start = budget - self.config.floor_frac * budget
        if st.step < start:
            return None
        why = "; ".join(g.message for g in st.missing) or "nothing logged yet"
        return (f"run {self.run}: the budget ends at step {format_number(budget)} and its last "
                f"floor window has begun (step {format_number(st.step)}), but the numbers are "
                f"not defined ({why}): its t_compress will be censored unless it settles now; "
                "extend the budget to read them")

    def _table(self) -> pd.DataFrame:
        if self._frame is not None:
            return self._frame
        steps = sorted(self._rows)
        cols = sorted({k for r in self._rows.values() for k in r})
        data: dict[str, Any] = {"run": [self.run] * len(steps), "step": steps}
        for c in cols:
            data[c] = [self._rows[s].get(c, math.nan) for s in steps]
        out: pd.DataFrame = pd.DataFrame(data)
        return out

    def _state(self) -> LiveState:
        st = self._rows_state()
        if self._refused:
            st = _with(st, missing=(*st.missing, *self._refused_gaps()))
        return st

    def _refused_gaps(self) -> list[Gap]:
        out: list[Gap] = []
        for (name, code), (n, first, last, message) in self._refused.items():
            what = f"{name!r} " if name else "a row "
            out.append(Gap(Missing.VALUE_REFUSED, (
                f"{what}refused {n} time(s) (steps {format_number(first)}–"
                f"{format_number(last)}) and left out [{code}]: check refuses a log that holds "
                f"it; {message}"), name,
                {"code": code, "count": n, "first_step": first, "last_step": last}))
        return out

    def _rows_state(self) -> LiveState:
        n = (int(self._frame["step"].nunique()) if self._frame is not None
             else len(self._rows))
        step = self._last
        empty = LiveState(self.run, step, n, False, False, None, (), ())
        if n < 3:
            return _with(empty, missing=(Gap(Missing.TOO_FEW_POINTS,
                                             f"{n} logged point(s); the audit needs 3"),))
        df = self._table()
        criterion = self.config.grok_on
        if criterion not in df.columns or df[criterion].isna().all():
            return _with(empty, missing=(Gap(Missing.NO_ACCURACY,
                                             f"no {criterion} logged yet"),))
        return self._audit(df, empty)

    def _unreadable(self, df: pd.DataFrame, exc: GrokauditError) -> Gap:
        """The gap for rows :meth:`log` took that ``check`` would refuse as they stand: an
        accuracy whose scale is not decided yet, or (not expected) another refusal."""
        if exc.code is ErrorCode.ACCURACY_OUT_OF_RANGE and isinstance(exc, LogFormatError):
            return _scale_gap(df, self._scales, exc)
        return Gap(Missing.NOT_AUDITABLE, f"the audit cannot read the rows "
                   f"so far [{exc.code.value}]: {exc}", getattr(exc, "column", None),
                   {"code": exc.code.value})

    def _audit(self, df: pd.DataFrame, empty: LiveState) -> LiveState:
        from .api import validated_log
        from .cells import build_run
        from .clocks import accuracy_clocks, metric_clocks

        cfg = self.config
        wanted = self.metrics
        present = [m for m in wanted if m in df.columns and df[m].notna().any()]
        # a known metric name is a series whatever it does so far; another name must change
        # over steps to be read as one (until it does, it is not logged as a metric yet)
        custom = [m for m in present if not is_known_metric(m)]
        flat = [m for m in custom if df[m].nunique(dropna=True) < 2]
        named = [m for m in custom if m not in flat]
        try:
            log = validated_log(df.drop(columns=flat), cfg, None, metrics=named)
        except GrokauditError as exc:
            if exc.code is ErrorCode.TOO_FEW_POINTS:
                return _with(empty, missing=(Gap(Missing.TOO_FEW_POINTS, str(exc)),))
            if self._frame is not None:  # a table read whole (watch): refused as check does
                raise
            # rows log() took that check cannot read yet: said, never raised in the loop
            return _with(empty, missing=(self._unreadable(df, exc),))
        metrics = list(wanted) or list(log.summary.metrics)
        acc = accuracy_clocks(log, cfg, None)
        grokked = not bool(acc.t_grok.censored[0])
        sustained = grokked and bool(acc.sustained[0])
        gaps: list[Gap] = []
        states: list[MetricState] = []
        t_grok: Interval | None = None
        groups = np.zeros(1, dtype=np.int64) if cfg.floor_window == "grid" else None
        for m in metrics:
            if m not in log.series:
                why = (f"{m} logged but constant so far: a name that is not a known metric "
                       "is read as one once it changes (check, too, refuses a metric that is "
                       "constant within every run)" if m in flat else f"{m} not logged yet")
                gaps.append(Gap(Missing.METRIC_MISSING, why, m, {"constant": m in flat}))
                continue
            mc = metric_clocks(log, acc, m, cfg, groups=groups)
            r = build_run(self.run, None, acc, mc, 0)
            t_grok = r.t_grok
            ms, mg = _metric_state(r, mc, cfg, m)
            states.append(ms)
            gaps.extend(mg)
        if not metrics:
            gaps.append(Gap(Missing.METRIC_MISSING, "no representation metric logged yet"))
        if t_grok is None:
            t_grok = Interval.make(float(acc.t_grok.value[0]), float(acc.t_grok.lower[0]),
                                   float(acc.t_grok.upper[0]))
        final = float(acc.final_test_acc[0])
        head: list[Gap] = []
        _, sign, level, _ = grok_levels(cfg)
        level = sign * level  # the threshold as logged: an accuracy, or a loss (--grok-below)
        if not grokked:
            head.append(Gap(Missing.NOT_GROKKED, (
                f"not grokked: {cfg.grok_on} has not "
                f"{'reached' if sign > 0 else 'fallen to'} {format_number(level)}"
                + (f" (final-window median so far {format_number(final)})"
                   if not math.isnan(final) else "")),
                evidence={"threshold": level, "final": final}))
        elif not sustained:
            fell = float(acc.fell_at[0])
            head.append(Gap(Missing.GROK_NOT_SUSTAINED,
                            f"grok not sustained: {cfg.grok_on} "
                            f"{'fell back below' if sign > 0 else 'rose back above'} the "
                            f"threshold at step "
                            f"{format_number(fell)}", evidence={"fell_at": fell}))
        elif t_grok is not None and t_grok.left_censored:
            head.append(Gap(Missing.LEFT_CENSORED, f"t_grok is only a bound ({t_grok.format()}"
                            "): the run grokked before its first logged step",
                            evidence={"lower": t_grok.lower, "upper": t_grok.upper}))
        if not grokked or not sustained:  # the metric's gaps follow from the grok's
            gaps = [g for g in gaps if g.code is Missing.METRIC_MISSING]
        elif t_grok is not None and t_grok.upper is not None:
            for ms in states:  # a floor read before the grok says nothing of the trained net
                lo, hi = ms.window
                if ms.floor is not None and lo < t_grok.upper:
                    gaps.append(Gap(Missing.FLOOR_BEFORE_GROK, (
                        f"{ms.metric}: the final window (steps {format_number(lo)}–"
                        f"{format_number(hi)}) begins before the grok (t_grok "
                        f"{t_grok.format()}): no floor read after the run generalized yet"),
                        ms.metric, {"window": [lo, hi], "t_grok_upper": t_grok.upper}))
        n = int(log.step.size)
        return LiveState(self.run, self._last, n, grokked, sustained, t_grok,
                         tuple(states), tuple(head + gaps))


def _scale_gap(df: pd.DataFrame, scales: Mapping[str, float], exc: LogFormatError) -> Gap:
    """``ACCURACY_SCALE_UNKNOWN``: which column, what it holds so far, and what decides."""
    stats: dict[str, Any] = {}
    for c in ACCURACY_COLUMNS:
        if c in df.columns and df[c].notna().any():
            v = df[c].to_numpy(dtype=float)
            stats[c] = {"max": float(np.nanmax(v)), "above_1": int((v > FRACTION_MAX).sum()),
                        "above_1_5": int((v > PERCENT_MIN).sum())}
    col = exc.column if exc.column in stats else next(iter(stats), None)
    st = stats.get(col, {"max": math.nan, "above_1": 0, "above_1_5": 0}) if col else {}
    if col is not None and col in scales:
        why = (f"acc_scale reads {col} in units of {scales[col]:g}, but every accuracy so far "
               f"is ≤ 1 (max {st['max']:.6g}): check refuses such a log; it is read "
               "once a value passes 1")
    else:
        why = (f"{col} has {st.get('above_1', 0)} value(s) above 1 (max "
               f"{st.get('max', math.nan):.6g}) and {st.get('above_1_5', 0)} above "
               f"{PERCENT_MIN:g}: not fractions, not yet clearly percent (percent needs "
               f"{PERCENT_MIN_POINTS} values above {PERCENT_MIN:g}, as check decides); pass "
               "acc_scale=100 if it is percent, else check will refuse this log")
    return Gap(Missing.ACCURACY_SCALE_UNKNOWN, f"accuracy scale unknown: {why}",
               col, {"columns": stats, "needed_above_1_5": PERCENT_MIN_POINTS,
                     "acc_scale": scales.get(col) if col else None})


def _metric_state(r: RunResult, mc: Any, cfg: AuditConfig, m: str
                  ) -> tuple[MetricState, list[Gap]]:
    last = float(mc.last_step[0])
    w2 = float(mc.w2_lower[0])
    span = last - w2
    per = 1000.0 / span if span > 0 else math.nan

    def per_k(x: float | None) -> float | None:
        return None if x is None or math.isnan(per) else x * per

    slope = per_k(r.drift)
    lo, hi = (per_k(v) for v in r.drift_interval)
    gaps: list[Gap] = []
    ev = {"floor": r.floor, "slope_per_1000": slope, "slope_interval": [lo, hi],
          "window": [w2, last]}
    floor_ok = r.floor_stability in ("stable", "unchecked")
    if r.floor is None:
        gaps.append(Gap(Missing.NO_FLOOR, f"{m}: too few points in the final window to read a "
                        f"floor (needs {cfg.min_floor_points})", m))
    elif r.floor_stability == "unstable":
        d = r.delta if r.delta is not None else math.nan
        band = f"the band ±{format_number(d)}"
        moved = (r.w1_median is not None and r.floor is not None
                 and abs(r.w1_median - r.floor) > d)
        why = (f"the window before sat at {format_number(r.w1_median)}, the floor at "
               f"{format_number(r.floor)}: a step larger than {band}" if moved else
               f"slope {_signed(slope)} per 1 000 steps [{_signed(lo)}, {_signed(hi)}] over "
               f"steps {format_number(w2)}–{format_number(last)}, a drift beyond {band}")
        gaps.append(Gap(Missing.FLOOR_MOVING, f"{m}: floor still moving: {why}", m,
                        {**ev, "w1_median": r.w1_median, "delta": r.delta,
                         "cause": "step" if moved else "drift"}))
    elif r.floor_stability == "indeterminate":
        gaps.append(Gap(Missing.FLOOR_INDETERMINATE, f"{m}: floor too noisy to tell whether it "
                        f"still moves: slope {_signed(slope)} per 1 000 steps [{_signed(lo)}, "
                        f"{_signed(hi)}]", m, ev))
    tc = r.t_compress
    if floor_ok and tc is not None and tc.left_censored:
        gaps.append(Gap(Missing.LEFT_CENSORED, f"{m}: t_compress is only a bound "
                        f"({tc.format()})", m, {"lower": tc.lower, "upper": tc.upper}))
    elif floor_ok and r.compression == "unknown":
        gaps.append(Gap(Missing.COMPRESSION_UNKNOWN, f"{m}: cannot tell yet whether it "
                        "compresses", m))
    elif floor_ok and r.compression == "compressed" and (tc is None or tc.censored):
        gaps.append(Gap(Missing.NOT_SETTLED, f"{m}: compression clock not settled: the "
                        f"smoothed metric has not entered the floor band "
                        f"{format_number(r.floor)} ± {format_number(r.delta)} to stay", m,
                        {"floor": r.floor, "delta": r.delta}))
    settled = floor_ok and (r.compression == "none" or (
        r.compression == "compressed" and tc is not None and not tc.censored
        and not tc.left_censored))
    at = float(mc.settled_at[0])
    state = MetricState(m, settled, r.floor, r.floor_stability, slope, (lo, hi), (w2, last),
                        r.compression, tc, r, None if math.isnan(at) else at)
    return state, gaps


def checked_margin(margin: Any, name: str = "margin", default: float = DEFAULT_MARGIN
                   ) -> float:
    """``margin`` (or another stop setting, ``name``) as a float, or refused
    (``OPTION_OUT_OF_RANGE``): a non-negative number."""
    if isinstance(margin, bool) or not isinstance(margin, (int, float, np.floating,
                                                           np.integer)) \
            or margin < 0 or not math.isfinite(margin):
        raise ConfigError(f"{name} {margin!r}: give a non-negative number (default "
                          f"{default:g})", code=ErrorCode.OPTION_OUT_OF_RANGE, option=name)
    return float(margin)


def _stop_steps(st: LiveState, margin: float, grok_multiple: float = DEFAULT_GROK_MULTIPLE
                ) -> LiveState:
    """``st`` with S0 and its stop steps: S0 the latest of t_grok's upper end and each
    metric's ``settled_at`` when the numbers are defined; the run stops at
    ``max((1 + margin) × S0, grok_multiple × t_grok)``."""
    if st.defined and st.t_grok is not None and st.t_grok.upper is not None:
        # a metric not in its band at the last step has sat on its floor since no step yet
        ends: list[float] = [st.t_grok.upper]
        for m in st.metrics:
            at = m.settled_at if m.settled_at is not None else st.step
            if at is not None:
                ends.append(at)
        # a compressed metric's t_compress is its settle step under the default rule; under
        # the crossing rule it may come later: S0 is never before a clock
        ends += [m.t_compress.upper for m in st.metrics if m.t_compress is not None
                 and m.t_compress.upper is not None and not m.t_compress.censored]
        s0 = max(ends)
        stop = max((1.0 + margin) * s0, grok_multiple * st.t_grok.upper)
        return _with(st, defined_from=s0, stop_at=stop, stop_not_before=None)
    low = None
    if st.grokked and st.grok_sustained and st.t_grok is not None \
            and st.t_grok.upper is not None:
        low = max(1.0 + margin, grok_multiple) * st.t_grok.upper
    return _with(st, defined_from=None, stop_at=None, stop_not_before=low)


def _signed(x: float | None) -> str:
    if x is None or math.isnan(x):
        return "—"
    return ("+" if x > 0 else "−" if x < 0 else "") + f"{abs(x):.2g}"


def _step(step: Any) -> float:
    """A step as RunLogger takes it: an integer ≥ 0 up to 2**53 (a float that is a whole
    number too); anything else refused with its code."""
    if isinstance(step, (float, np.floating)) and not isinstance(step, bool) \
            and math.isfinite(float(step)) and float(step).is_integer():
        step = int(step)
    return float(step_value(step))


def _checked_metrics(metrics: tuple[str, ...]) -> tuple[str, ...]:
    """The metric names to follow; the run id, the step or an accuracy refused
    (``RESERVED_COLUMN``, as ``check`` refuses such a ``--metric``) when the run is created,
    not at every state."""
    for m in metrics:
        if not isinstance(m, str) or not m:
            raise ConfigError(f"metrics: {m!r} is not a column name", option="metrics",
                              code=ErrorCode.INVALID_OPTION)
        if m in ("run", "step", *ACCURACY_COLUMNS):
            raise ConfigError(f"metrics: {m!r} is a required column of the log, not a "
                              "representation metric; name a metric column (e.g. emb_erank)",
                              option="metrics", code=ErrorCode.RESERVED_COLUMN)
    return metrics


def _option_scales(cfg: AuditConfig) -> dict[str, float]:
    """The scale of each accuracy column the options fix (``acc_scales``, else ``acc_scale``)."""
    out = {} if cfg.acc_scale is None else {c: float(cfg.acc_scale) for c in ACCURACY_COLUMNS}
    return out | column_scales(cfg)


def _with(st: LiveState, **changes: Any) -> LiveState:
    import dataclasses

    return dataclasses.replace(st, **changes)
