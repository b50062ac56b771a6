"""Plain transcriptions of AUDIT_SPEC §2–§3 for logs whose cell intervals are known by
construction: censoring-aware cell medians of first-passage times, Kendall pair counts, the
ordering's shape, and the clock verdict, each under a config's thresholds.

The named cases pre-register their intervals and pair counts (they follow from the construction
and do not move with a threshold); what *does* move with the user's ``mono_threshold``,
``flat_threshold``, ``large_lag`` and ``censor_warn`` — an ordering's shape and the clock
verdict — is worked out here from those pre-registered numbers. Nothing here calls the audit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from grokaudit import Reason

from .generators import _config, _median

LOW_POWER = "LOW_POWER_DESCRIPTIVE"


@dataclass(frozen=True)
class Iv:
    """A first-passage time seen in ``(lower, value]``; ``value`` None when right-censored."""

    lower: float
    value: float | None

    @property
    def upper(self) -> float:
        return math.inf if self.value is None else self.value

    @property
    def censored(self) -> bool:
        return self.value is None


def cell_median(ivs: Sequence[Iv]) -> Iv:
    """The censoring-aware median of a cell's runs: censored when half or more runs are, with
    the median of the lower bounds; otherwise the median of the values (censored ranked last)."""
    n_cens = sum(iv.censored for iv in ivs)
    lo = _median([iv.lower for iv in ivs])
    if 2 * n_cens >= len(ivs):
        return Iv(lo, None)
    return Iv(lo, _median([iv.upper for iv in ivs]))


@dataclass(frozen=True)
class Ord:
    """An ordering of a time quantity along the axis."""

    n: int
    concordant: int
    discordant: int
    unidentified: int
    identified: bool
    direction: int
    shape: str | None
    tau_bounds: tuple[float, float] | None
    sub_reason: Reason | None

    @property
    def monotone(self) -> bool:
        return self.shape == "monotone"


def shape_of(lo: float, hi: float, cfg: Any = None) -> str:
    """``monotone`` / ``flat`` / ``weak`` from the tau bounds of an identified ordering."""
    cfg = _config(cfg)
    if lo > cfg.mono_threshold or hi < -cfg.mono_threshold:
        return "monotone"
    if -cfg.flat_threshold <= lo and hi <= cfg.flat_threshold:
        return "flat"
    return "weak"


def ordering(cells: Sequence[Iv], cfg: Any = None) -> Ord:
    """Concordant, discordant and unidentified pairs of the cells' intervals (axis order), and
    what follows: identified when ≥ 3 cells and |C − D| > U; the shape from the tau bounds."""
    C = D = U = 0
    cens_overlap = False
    n = len(cells)
    for i in range(n):
        for j in range(i + 1, n):
            a, b = cells[i], cells[j]
            tie = a.value is not None and a.value == b.value
            if a.upper <= b.lower and not tie:
                C += 1
            elif b.upper <= a.lower and not tie:
                D += 1
            else:
                U += 1
                cens_overlap = cens_overlap or a.censored or b.censored
    N = n * (n - 1) // 2
    bounds = ((C - D - U) / N, (C - D + U) / N) if N else None
    if n < 3 or abs(C - D) <= U:
        sub = (Reason.TOO_FEW_CELLS if n < 3 else Reason.CENSORED_INTERVALS_OVERLAP
               if cens_overlap else Reason.NO_NET_DIRECTION if U == 0
               else Reason.TIES_WITHIN_RESOLUTION)
        return Ord(n, C, D, U, False, 0, None, bounds, sub)
    assert bounds is not None
    return Ord(n, C, D, U, True, 1 if C > D else -1, shape_of(*bounds, cfg), bounds, None)


def clock_verdict(og: Ord, oc: Ord, rel_low: Sequence[float], rel_high: Sequence[float],
                  n_censored: int = 0, cfg: Any = None) -> Reason:
    """The clock verdict (AUDIT_SPEC §3) of a study with at least two passing cells, from the
    eligible runs' rel_lag bounds (equal when uncensored, ``high = inf`` when t_compress is
    censored) and the two time orderings."""
    cfg = _config(cfg)
    n = len(rel_low)
    if n == 0 or n_censored / n > cfg.censor_warn:
        return Reason.INCONCLUSIVE_CENSORING
    lo, hi = _median(list(rel_low)), _median(list(rel_high))
    if lo > cfg.large_lag:
        large = True
    elif hi <= cfg.large_lag:
        large = False
    else:
        return Reason.INCONCLUSIVE_CENSORING
    if not large:
        return Reason.SINGLE_CLOCK_SMALL_LAG
    if not (og.identified and oc.identified):
        return Reason.LARGE_LAG_ORDERING_UNDETERMINED
    if og.monotone and oc.monotone:
        return Reason.TWO_CLOCKS if og.direction != oc.direction else Reason.ONE_CLOCK_LARGE_LAG
    return Reason.PARTIALLY_SEPARATED


def rel_lags(t_grok: Sequence[Iv], t_compress: Sequence[Iv]) -> tuple[list[float], list[float]]:
    """Per run: the rel_lag bounds the verdict uses, ``(t_compress − t_grok) / t_grok`` on the
    logged values (``high = inf`` and ``low`` from t_compress's lower bound when censored)."""
    lo, hi = [], []
    for g, c in zip(t_grok, t_compress):
        assert g.value is not None and g.value > 0
        if c.value is None:
            lo.append((c.lower - g.value) / g.value)
            hi.append(math.inf)
        else:
            r = (c.value - g.value) / g.value
            lo.append(r)
            hi.append(r)
    return lo, hi
