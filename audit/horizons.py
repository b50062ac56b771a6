"""Runs of one cell whose logs end far apart (``HORIZON_MISMATCH``).

A floor is a floor relative to a horizon: the last quarter of a run stopped at step 4 250 can
be flat while a sibling that ran to 18 950 keeps compressing long after 4 250. A run *ends
short* when its metric's last logged step comes before the floor window of its cell's longest
run with a floor began. For each such run the longest run's metric over the short run's own
floor window is compared with the longest run's floor: when it differs by more than the longest
run's band δ, the metric was still moving at the short run's horizon, and when the short run's
floor also differs from the longest run's by more than δ, the short floor is not the level the
cell converges to: stable over its own window, it is only *indeterminate* (the clocks are
recomputed with it marked so). A short run that already sits on the longest run's floor keeps
it; a short run without a floor window, or a longest run without points in it, is named but
not compared.
"""

from __future__ import annotations

from collections.abc import Callable
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
    compared: np.ndarray  #: bool: short, and compared (both had points in its floor window)
    longest: np.ndarray  #: int: the row of its cell's longest run
    sibling_value: np.ndarray  #: the longest run's metric over the short run's floor window

    @property
    def any(self) -> bool:
        return bool(self.short.any())


def horizon_references(mc: MetricClocks, groups: np.ndarray, cfg: AuditConfig
                       ) -> tuple[np.ndarray, np.ndarray] | None:
    """``(short, longest)`` of :class:`HorizonCheck` (None when nothing is checked or no run
    ends short): which runs end short, and each run's reference, from the clocks alone."""
    last = np.asarray(mc.last_step, dtype=np.float64)
    R = last.size
    if not cfg.stability_check or R < 2:
        return None
    g = np.asarray(groups, dtype=np.int64)
    # the reference of each cell: its longest run *with a floor* (a stray late point of a run
    # without a floor window cannot stand in for a horizon)
    L = np.where(np.isnan(last) | np.isnan(mc.w2_lower), -np.inf, last)
    order = np.lexsort((-L, g))  # by cell, the longest run first
    gs = g[order]
    first = np.r_[True, gs[1:] != gs[:-1]]
    head = order[first]
    longest = np.empty(R, dtype=np.int64)
    longest[order] = head[np.cumsum(first) - 1]
    w2 = mc.w2_lower[longest]
    with np.errstate(invalid="ignore"):
        short = ~np.isnan(last) & ~np.isnan(w2) & (last < w2) & (longest != np.arange(R)) \
            & np.isfinite(L[longest])
    if not short.any():
        return None
    return short, longest


def references_compared(mc: MetricClocks, short: np.ndarray, longest: np.ndarray
                        ) -> np.ndarray:
    """The reference runs whose points :func:`horizon_check` reads (sorted run numbers)."""
    return np.unique(longest[short & ~np.isnan(mc.w2_lower)])


#: The points of one run: ``(steps, metric values)``.
RunPoints = Callable[[int], tuple[np.ndarray, np.ndarray]]


def horizon_check(table: LogTable | None, mc: MetricClocks, groups: np.ndarray,
                  cfg: AuditConfig, points: RunPoints | None = None) -> HorizonCheck | None:
    """The horizon check of metric ``mc`` over cells ``groups`` (one id per run); None when
    there is nothing to check (no stability check in this profile, fewer than two runs) or
    no run ends short. The reference runs' points are read from ``table``, or by ``points``
    (a log read in parts: only those runs are read again)."""
    ref = horizon_references(mc, groups, cfg)
    if ref is None:
        return None
    short, longest = ref
    last = np.asarray(mc.last_step, dtype=np.float64)
    R = last.size
    if points is None:
        assert table is not None
        log, metric = table, table.series[mc.metric]

        def points(k: int) -> tuple[np.ndarray, np.ndarray]:
            a, b = int(log.offsets[k]), int(log.offsets[k + 1])
            return log.step[a:b], metric[a:b]

    sib = np.full(R, np.nan)
    not_conv = np.zeros(R, dtype=bool)
    compared = np.zeros(R, dtype=bool)
    for i in np.flatnonzero(short).tolist():
        lo = mc.w2_lower[i]
        if np.isnan(lo):  # the short run has no floor window to compare
            continue
        k = int(longest[i])
        st, raw = points(k)
        v = np.asarray(raw, dtype=np.float64)
        sel = (st >= lo) & (st <= last[i]) & ~np.isnan(v)
        if not sel.any():
            continue
        sib[i] = float(np.median(v[sel]))
        compared[i] = True
        fl, dl = mc.floor[k], mc.delta[k]
        moved = bool(np.isfinite(fl) and abs(sib[i] - fl) > dl)
        elsewhere = not (np.isfinite(mc.floor[i]) and abs(mc.floor[i] - fl) <= dl)
        not_conv[i] = moved and elsewhere
    return HorizonCheck(short=short, not_converged=not_conv, compared=compared, longest=longest,
                        sibling_value=sib)
