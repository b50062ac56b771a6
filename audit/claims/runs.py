"""Per-run clocks for the claim audits: the core's ``accuracy_clocks`` (interval- and
right-censored ``t_mem``, ``t_grok``) joined with each run's conditions in one DataFrame.

Every claim command starts here, so every claim uses the same clocks, censoring and input
validation as ``grokaudit check``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..clocks import AccuracyClocks, accuracy_clocks
from ..config import AuditConfig
from ..errors import ErrorCode, LogFormatError
from ..results import Interval
from ..schema import LogTable, build_log_table

STEP_UNITS = ("steps", "epochs")


@dataclass(frozen=True)
class RunClocks:
    """The validated log, its accuracy clocks, and one row per run in ``frame``.

    ``frame`` columns: ``run``, every condition column, ``tg_value``/``tg_lower``/``tg_upper``
    (``tg_upper = inf`` when right-censored), ``grokked``, the same for ``tm_`` (``t_mem``;
    NaN when ``train_acc`` is not logged), ``sustained``, ``first_step``, ``last_step``.
    Times are in ``step_unit`` (the log's ``step`` column).
    """

    log: LogTable
    acc: AccuracyClocks
    frame: pd.DataFrame
    step_unit: str

    def t_grok(self, i: int) -> Interval:
        r = self.frame.iloc[i]
        return Interval.make(r.tg_value, r.tg_lower, r.tg_upper) or Interval(None, None, None,
                                                                              True)


def load_log(table: pa.Table | pd.DataFrame | LogTable, cfg: AuditConfig,
             source: str | None = None) -> LogTable:
    """Validate a canonical table (or pass a :class:`LogTable` through)."""
    if isinstance(table, LogTable):
        return table
    return build_log_table(table, path=source, acc_scale=cfg.acc_scale,
                           on_duplicate=cfg.on_duplicate)


def run_clocks(table: pa.Table | pd.DataFrame | LogTable, cfg: AuditConfig,
               source: str | None = None, step_unit: str | None = None) -> RunClocks:
    """The per-run clocks of every run in ``table`` under ``cfg`` (thresholds, censoring)."""
    log = load_log(table, cfg, source)
    acc = accuracy_clocks(log, cfg)
    unit = step_unit or str(log.summary.provenance.get("step_unit", "steps"))
    if unit not in STEP_UNITS:
        unit = "steps"
    f = log.conditions.reset_index()
    f["run"] = f["run"].astype(str)
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
    f["last_step"] = acc.span_last
    return RunClocks(log, acc, f, unit)


def require_columns(rc: RunClocks, cols: Sequence[str], flag: str, *, numeric: bool = True,
                    positive: bool = False) -> None:
    """Raise :class:`LogFormatError` unless each column is a (numeric, positive) condition."""
    cond = rc.log.conditions
    src = rc.log.summary.source
    for c in cols:
        if c not in cond.columns:
            hint = " (it varies within runs: it is a per-step column)" if c in rc.log.series \
                else ""
            raise LogFormatError(f"{flag} column {c!r} is not a condition column{hint}; "
                                 f"conditions present: {sorted(cond.columns) or 'none'}",
                                 path=src, column=c, code=ErrorCode.NOT_A_CONDITION)
        if numeric and not pd.api.types.is_numeric_dtype(cond[c]):
            raise LogFormatError(f"{flag} column {c!r} is not numeric", path=src, column=c, code=ErrorCode.NOT_NUMERIC)
        if numeric and cond[c].isna().any():
            raise LogFormatError(f"{flag} column {c!r} is missing for some runs", path=src,
                                 column=c, code=ErrorCode.CONDITION_MISSING)
        if positive and (cond[c] <= 0).any():
            raise LogFormatError(f"{flag} column {c!r} has values ≤ 0; its log is undefined "
                                 "(choose a positive parametrization)", path=src, column=c, code=ErrorCode.NOT_POSITIVE)


def require_series(rc: RunClocks, col: str, flag: str) -> np.ndarray:
    """The per-row values of a per-step column, or :class:`LogFormatError`."""
    if col not in rc.log.series:
        raise LogFormatError(f"{flag} column {col!r} is not a per-step column; per-step columns "
                             f"present: {sorted(rc.log.series) or 'none'}",
                             path=rc.log.summary.source, column=col, code=ErrorCode.NOT_A_SERIES)
    return rc.log.series[col]


def median_interval(lower: np.ndarray, upper: np.ndarray) -> tuple[float, float, bool]:
    """The censoring-aware median of per-run intervals: ``[median(L), median(U)]`` (AUDIT_SPEC
    §2). ``censored`` is True when half or more runs are censored (``median(U) = inf``)."""
    lo = np.asarray(lower, dtype=float)
    up = np.asarray(upper, dtype=float)
    if lo.size == 0:
        return math.nan, math.nan, True
    ml = float(np.median(lo))
    ups = np.sort(up)
    n = ups.size
    # median with inf handled explicitly: numpy's mean of (x, inf) is inf, which is what we want
    mu = float(ups[n // 2]) if n % 2 else float(0.5 * (ups[n // 2 - 1] + ups[n // 2]))
    return ml, mu, math.isinf(mu)


def cell_key(row: Any, cols: Sequence[str]) -> tuple[Any, ...]:
    return tuple(_py(row[c]) for c in cols)


def _py(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v


def py(v: Any) -> Any:
    """A numpy scalar as a plain Python value."""
    return _py(v)
