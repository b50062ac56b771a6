"""Per-run clocks for the claim audits: the core's ``accuracy_clocks`` (interval- and
right-censored ``t_mem``, ``t_grok``) joined with each run's conditions in one DataFrame; the
core's censoring-aware cell median; the ``cell`` split of a :class:`~grokaudit.design.Design`
(validated as ``grokaudit check`` validates its own) into studies.

Every claim command starts here, so every claim uses the same clocks, censoring, medians and
input validation as ``grokaudit check``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..cells import interval_median
from ..clocks import AccuracyClocks, Event, accuracy_clocks
from ..config import AuditConfig
from ..design import Design, cell_value
from ..errors import ConfigError, ErrorCode, LogFormatError, param_name
from ..results import Finding, Interval
from ..schema import ACCURACY_COLUMNS, REQUIRED, LogTable
from ..stream import LogParts
from ..text import safe
from .results import ClaimResult, make_result

#: What a log's ``step`` column may count, as the adapters and the trainer spell it.
STEP_UNITS = {"step": "steps", "steps": "steps", "epoch": "epochs", "epochs": "epochs"}

#: The frame column holding each run's position in the log (rows of the clock arrays).
POS = "__i"


@dataclass(frozen=True)
class RunClocks:
    """The validated log, its accuracy clocks, and one row per run in ``frame``.

    ``frame`` columns: ``run``, every condition column, ``__i`` (the run's position in the log:
    its row in ``acc`` and in packed series), ``tg_value``/``tg_lower``/``tg_upper``
    (``tg_upper = inf`` when right-censored), ``grokked``, the same for ``tm_`` (``t_mem``;
    NaN when ``train_acc`` is not logged), ``memorized``, ``sustained``, ``first_step``,
    ``last_step`` (the last logged step; for a run that never grokked, the last step its grok
    criterion was evaluated). Times are in ``step_unit``. A study (``--cell``) is a RunClocks whose
    frame holds its runs only.
    """

    log: LogTable
    acc: AccuracyClocks
    frame: pd.DataFrame
    step_unit: str
    interval_censoring: bool = True
    #: a log read in parts (``--stream``): ``log`` then holds no points, and a per-run
    #: quantity of the points is computed part by part (:meth:`per_run`)
    parts: LogParts | None = None

    @property
    def points(self) -> LogTable | LogParts:
        """Where the points are: the log, or its parts."""
        return self.log if self.parts is None else self.parts

    def per_run(self, fn: Callable[[LogTable, slice], np.ndarray], what: str = ""
                ) -> np.ndarray:
        """``fn(log, runs)``'s per-run values for every run of the log (``runs``: the
        positions of ``log``'s runs in the whole log), computed on the whole log or part by
        part; index it with :attr:`pos`."""
        if self.parts is None:
            return fn(self.log, slice(0, self.log.n_runs))
        return self.parts.map(fn, what)

    @property
    def pos(self) -> np.ndarray:
        """The log positions of this frame's runs."""
        out: np.ndarray = self.frame[POS].to_numpy(dtype=np.int64)
        return out

    def subset(self, mask: np.ndarray) -> RunClocks:
        return RunClocks(self.log, self.acc, self.frame[mask].reset_index(drop=True),
                         self.step_unit, self.interval_censoring, self.parts)

    def result(self, command: str, config: AuditConfig, params: Mapping[str, Any],
               studies: Sequence[tuple[Mapping[str, Any], Any, Sequence[Finding]]]
               ) -> ClaimResult:
        """The claim's result over this log: its studies, the log's input summary, and what
        ``check`` says of the input itself (runs set aside, accuracies read as percent, what
        the reader noted), so that a run left out of a claim is named, never dropped without
        a word."""
        from ..api import input_findings

        return make_result(command, params=params, config=config.to_dict(),
                           input=self.log.summary.to_dict(), studies=studies,
                           fail_on=config.fail_on, findings=input_findings(self.log))

    def median(self, which: str, rows: np.ndarray | None = None, *,
               left_unknown: bool = False) -> Interval | None:
        """The core's censoring-aware median (:func:`grokaudit.cells.interval_median`) of
        ``t_grok``, ``t_mem`` or ``gap`` over frame rows ``rows`` (default all): the interval
        ``[median(L), median(U)]`` with the median of the logged values, censored (only the
        lower bound known) when half or more of the runs are censored. With ``left_unknown``,
        a run that grokked before its log begins counts as unknown in ``(0, first step]``
        (not read at that step), so a median it decides is an interval with no value; the
        same for ``t_mem`` (memorized before logging) and for a ``gap`` with either end
        left-censored."""
        idx = self.pos if rows is None else self.pos[np.asarray(rows)]
        ev = {"t_grok": self.acc.t_grok, "t_mem": self.acc.t_mem,
              "gap": gap_event(self.acc)}[which]
        if ev is None or idx.size == 0:
            return None
        if left_unknown:  # ≤ the first logged step, not that step
            cols = {"t_grok": ("tg_left",), "t_mem": ("tm_left",),
                    "gap": ("tg_left", "tm_left")}[which]
            left = np.zeros(ev.value.size, dtype=bool)
            for c in cols:
                left[self.pos] |= self.frame[c].to_numpy(dtype=bool)
            ev = Event(np.where(left, np.nan, ev.value), ev.lower, ev.upper, ev.index)
        return interval_median(ev, idx, self.interval_censoring)[0]


def _pointed(ev: Event) -> Event:
    """``ev`` with a left-censored event read at the first logged step (its upper end)."""
    left = ev.left_censored
    if not left.any():
        return ev
    return Event(np.where(left, ev.upper, ev.value), ev.lower, ev.upper, ev.index)


def gap_event(acc: AccuracyClocks) -> Event | None:
    """``gap = t_grok − t_mem`` per run as an Event, by interval arithmetic:
    ``(L_grok − U_mem, U_grok − L_mem]``; NaN (left out of medians) for a run that never
    memorized, censored when the run never grokked."""
    tm = acc.t_mem
    if tm is None:
        return None
    tg = acc.t_grok
    mem = ~np.isinf(tm.upper)
    with np.errstate(invalid="ignore"):
        lower = np.where(mem, tg.lower - tm.upper, np.nan)
        upper = np.where(mem, tg.upper - tm.lower, np.nan)
        value = np.where(mem & ~np.isinf(tg.upper), tg.value - tm.value, np.nan)
    return Event(value, lower, upper, np.full(value.size, -1, dtype=np.int64))


def load_log(table: pa.Table | pd.DataFrame | LogTable, cfg: AuditConfig,
             source: str | None = None) -> LogTable:
    """Validate a canonical table (or pass a :class:`LogTable` through)."""
    if isinstance(table, LogTable):
        return table
    from ..api import validated_log

    return validated_log(table, cfg, source, metrics=())


def step_unit_of(log: LogTable, given: str | None = None) -> str:
    """The unit of the step column: ``given`` (``--step-unit``), else what the adapter or the
    trainer recorded in the provenance (``epoch`` → ``epochs``), else ``steps``."""
    raw = given if given is not None else log.summary.provenance.get("step_unit")
    if raw is None:
        return "steps"
    return STEP_UNITS.get(str(raw).strip().lower(), str(raw))


def run_clocks(table: pa.Table | pd.DataFrame | LogTable | LogParts, cfg: AuditConfig,
               source: str | None = None, step_unit: str | None = None) -> RunClocks:
    """The per-run clocks of every run in ``table`` under ``cfg`` (thresholds, censoring);
    of a log read in parts (:class:`~grokaudit.stream.LogParts`), part by part."""
    if cfg.grok_relative != "off":
        raise ConfigError("grok_relative = study is an option of `check` and `report`; the claim "
                          "commands fit t_grok at absolute thresholds (--thresholds)",
                          code=ErrorCode.INVALID_OPTION, option="grok_relative")
    parts = table if isinstance(table, LogParts) else None
    if parts is not None:
        log = parts.log
        acc = parts.map(lambda lg, _: accuracy_clocks(lg, cfg), "accuracy clocks")
    else:
        log = load_log(table, cfg, source)
        acc = accuracy_clocks(log, cfg)
    f = log.conditions.reset_index()
    f["run"] = f["run"].astype(str)
    f[POS] = np.arange(len(f), dtype=np.int64)
    # a clock left-censored by `check` (the event before logging began) is read by the claim
    # fits at its first logged step, as before; `tg_left`/`tm_left` name those runs for the
    # claims' own treatment of trimmed logs (issue 20)
    f["tg_left"] = acc.t_grok.left_censored
    f["tm_left"] = (acc.t_mem.left_censored if acc.t_mem is not None
                    else np.zeros(len(f), dtype=bool))
    acc = dataclasses.replace(acc, t_grok=_pointed(acc.t_grok),
                              t_mem=None if acc.t_mem is None else _pointed(acc.t_mem))
    tg = acc.t_grok
    f["tg_value"] = tg.value
    f["tg_lower"] = tg.lower
    f["tg_upper"] = tg.upper
    f["grokked"] = ~tg.censored
    if acc.t_mem is not None:
        f["tm_value"] = acc.t_mem.value
        f["tm_lower"] = acc.t_mem.lower
        f["tm_upper"] = acc.t_mem.upper
        f["memorized"] = ~acc.t_mem.censored
    else:
        for c in ("tm_value", "tm_lower", "tm_upper"):
            f[c] = np.nan
        f["memorized"] = False
    f["sustained"] = acc.sustained
    f["first_step"] = acc.span_first
    # what is known of a run that never grokked ends at its last evaluation of the criterion
    # (test_acc NaN in the rows after it: not evaluated, not "not grokked")
    f["last_step"] = np.where(tg.censored, tg.lower, acc.span_last)
    return RunClocks(log, acc, f, step_unit_of(log, step_unit), cfg.interval_censoring, parts)


def require_series(rc: RunClocks, col: str, param: str) -> np.ndarray:
    """The per-row values of a per-step column, or :class:`LogFormatError` naming ``param``;
    :class:`ConfigError` for a log read in parts (its points are not held)."""
    if rc.parts is not None:
        raise ConfigError(f"{param_name(param)}: the per-step values of every run are read at "
                          "once; audit without --stream", code=ErrorCode.INVALID_OPTION,
                          option="--stream")
    if col in REQUIRED or col in ACCURACY_COLUMNS:
        # the accuracies are the clocks every claim is measured against, not a signal
        raise LogFormatError(f"{param_name(param)} {safe(col)!r} is the log's own "
                             f"{'step' if col == 'step' else 'run id' if col == 'run' else 'accuracy'}"
                             ", which the grok and memorization clocks are read from; name "
                             "another per-step column (e.g. attn_cv)",
                             path=rc.log.summary.source, column=col, param=param,
                             code=ErrorCode.RESERVED_COLUMN)
    if col in rc.log.conditions.columns:
        raise LogFormatError(f"{param_name(param)} {safe(col)!r} is a condition (one value per "
                             "run), not a per-step column; per-step columns present: "
                             f"{sorted(rc.log.series) or 'none'}",
                             path=rc.log.summary.source, column=col, param=param,
                             code=ErrorCode.NOT_A_SERIES)
    if col not in rc.log.series:
        # named nowhere in the log: a misspelling, refused as check refuses a --metric
        raise LogFormatError(f"{param_name(param)} column {safe(col)!r} is not in the log; "
                             f"per-step columns present: {sorted(rc.log.series) or 'none'}",
                             path=rc.log.summary.source, column=col, param=param,
                             code=ErrorCode.METRIC_NOT_FOUND)
    return np.asarray(rc.log.series[col], dtype=np.float64)  # float32 as stored: widened


def check_design(frame: pd.DataFrame, design: Design) -> None:
    """Refuse to pool arms, as ``check`` does (:meth:`Design.refuse_pooling` over the runs of
    ``frame``): ``DUPLICATE_AXIS_VALUES`` naming the columns to split with ``cell``."""
    design.refuse_pooling(frame)


def studies(rc: RunClocks, design: Design) -> list[tuple[dict[str, Any], RunClocks]]:
    """Split ``rc`` into the studies of ``design`` (one per value of its ``cell`` columns, one
    study without them), after refusing runs one of its cells would pool (:func:`check_design`;
    not when the command pools runs). Each study's key holds its cell values as
    :func:`grokaudit.design.cell_value` shows them, as in ``check``."""
    check_design(rc.frame, design)
    cell = list(design.cell)
    if not cell:
        return [({}, rc)]
    out = []
    for key, idx in rc.frame.groupby(cell, sort=True, dropna=False).indices.items():
        key_t = key if isinstance(key, tuple) else (key,)
        mask = np.zeros(len(rc.frame), dtype=bool)
        mask[idx] = True
        out.append(({c: cell_value(v) for c, v in zip(cell, key_t)}, rc.subset(mask)))
    return out


def py(v: Any) -> Any:
    """A numpy scalar as a plain Python value (a float32 widened: a value computed with; a
    cell's value as shown is :func:`grokaudit.design.cell_value`)."""
    return v.item() if hasattr(v, "item") else v


def stopped_early(frame: pd.DataFrame, by: Sequence[str]) -> np.ndarray:
    """Runs that never grokked and stopped before their cell's median grok step (the study's,
    when nothing in their cell grokked): crashed or cut short, not failures to grok. Their
    outcome is unknown, so a grok rate leaves them out; a survival fit keeps them censored at
    their last step."""
    grok = frame["grokked"].to_numpy(dtype=bool)
    tg = frame["tg_value"].to_numpy(dtype=float)
    last = frame["last_step"].to_numpy(dtype=float)
    need_all = float(np.median(tg[grok])) if grok.any() else math.nan
    need = np.full(len(frame), need_all)
    for ix in frame.groupby(list(by), sort=False).indices.values():
        ix = np.asarray(ix)
        g = ix[grok[ix]]
        if g.size:
            need[ix] = float(np.median(tg[g]))
    with np.errstate(invalid="ignore"):
        out: np.ndarray = ~grok & (last < need)
    return out
