"""Runs of one cell whose logs end far apart (``HORIZON_MISMATCH``).

A floor is a floor relative to a horizon: the last quarter of a run stopped at step 4 250 can
be flat while a sibling that ran to 18 950 keeps compressing long after 4 250. A run *ends
short* when its metric's last logged step comes before the floor window of its cell's longest
run began. For each such run the longest run's metric over the short run's own floor window is
compared with the longest run's floor: when it differs by more than the longest run's band δ,
the metric was still moving at the short run's horizon, so the short run's floor, stable over
its own window, is only *indeterminate* (the clocks are recomputed with it marked so). When the
longest run did not move, the short floors stand; the runs are still named.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .clocks import MetricClocks
from .config import AuditConfig
from .schema import LogTable


@dataclass(frozen=True)
class HorizonCheck:
    """Per run (arrays of length R, in the table's run order)."""

    short: np.ndarray  #: bool: ends before the floor window of its cell's longest run
    not_converged: np.ndarray  #: bool: short, and the longest run moved after its horizon
    longest: np.ndarray  #: int: the row of its cell's longest run
    sibling_value: np.ndarray  #: the longest run's metric over the short run's floor window

    @property
    def any(self) -> bool:
        return bool(self.short.any())


def horizon_check(table: LogTable, mc: MetricClocks, groups: np.ndarray,
                  cfg: AuditConfig) -> HorizonCheck | None:
    """The horizon check of metric ``mc`` over cells ``groups`` (one id per run); None when
    there is nothing to check (no stability check in this profile, fewer than two runs) or
    no run ends short."""
    last = np.asarray(mc.last_step, dtype=np.float64)
    R = last.size
    if not cfg.stability_check or R < 2:
        return None
    g = np.asarray(groups, dtype=np.int64)
    L = np.where(np.isnan(last), -np.inf, last)
    order = np.lexsort((-L, g))  # by cell, the longest run first
    gs = g[order]
    first = np.r_[True, gs[1:] != gs[:-1]]
    head = order[first]
    longest = np.empty(R, dtype=np.int64)
    longest[order] = head[np.cumsum(first) - 1]
    w2 = mc.w2_lower[longest]
    with np.errstate(invalid="ignore"):
        short = ~np.isnan(last) & ~np.isnan(w2) & (last < w2) & (longest != np.arange(R))
    if not short.any():
        return None
    metric = table.series[mc.metric]
    sib = np.full(R, np.nan)
    not_conv = np.zeros(R, dtype=bool)
    for i in np.flatnonzero(short).tolist():
        lo = mc.w2_lower[i]
        if np.isnan(lo):  # the short run has no floor window to compare
            continue
        k = int(longest[i])
        a, b = int(table.offsets[k]), int(table.offsets[k + 1])
        st = table.step[a:b]
        v = np.asarray(metric[a:b], dtype=np.float64)
        sel = (st >= lo) & (st <= last[i]) & ~np.isnan(v)
        if not sel.any():
            continue
        sib[i] = float(np.median(v[sel]))
        fl, dl = mc.floor[k], mc.delta[k]
        not_conv[i] = bool(np.isfinite(fl) and abs(sib[i] - fl) > dl)
    return HorizonCheck(short, not_conv, longest, sib)
