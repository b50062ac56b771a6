"""``grokaudit compare``: paired comparisons of methods (CLAIMS_SPEC, seed 004 §6.3).

``--by method --pair seed``: runs are paired by the ``--pair`` column across two arms of the
``--by`` column; per pair ``d = t_grok(first arm) − t_grok(second arm)`` (positive: the second
arm groks sooner). A pair in which one arm never grokked is a *censored difference*: only a
bound is known (``d > bound`` when the first arm is censored, ``d < bound`` when the second is);
so is a pair in which one arm grokked before its log begins (``t_grok ≤`` its first logged
step: ``d < bound`` when it is the first arm); a pair where both arms are censored has no known
bound. Such pairs are shown and counted, and
never enter a statistic as if their bound were a value:

- with every pair observed: the exact Wilcoxon signed-rank test, the sign-flip permutation
  test, Cohen's ``d_z``, a seeded bootstrap CI of the mean difference (BCa, at the expanded
  level that covers 95 %) and the order-statistic CI of the median difference;
- with censored pairs, or pairs known only as ranges (arms evaluated at different steps): the
  mean and median difference are printed as what they are — bounds (``mean d > x``) or
  ranges — from each pair's range of ``d``, and each gets a seeded percentile bootstrap CI over
  pairs that carries both the ranges and the sampling (each resample's statistic a range: the
  interval from its lower ends' lower percentile to its upper ends' upper percentile,
  :func:`~.stats.range_bootstrap`); the range itself is not a CI; the test is the exact sign
  test on the pairs whose sign is known (a censored pair whose bound excludes 0 has a known
  sign); the Wilcoxon p-value is given as an upper bound when every censored pair's bound lies
  on the side of the effect (moving a censored difference further out can only make the
  statistic more extreme); no ``d_z``. The statistics of the complete pairs are shown apart,
  labelled as what they are (the censored pairs dropped).

Resolution (``PAIRS_WITHIN_RESOLUTION``): pairs whose arms were evaluated at different steps
(a range of ``d``), and — on one grid shared by both arms — a grid coarser than the effect:
most pairs tied at ``d = 0``, or the mean difference's CI within one evaluation interval of 0.

Power: the smallest p-value the test can reach with the pairs it uses — pairs tied at
``d = 0`` and censored pairs of unknown sign are dropped by the tests, and counted —
(``UNDERPOWERED`` when it cannot reach ``α``), the usable pairs needed to make ``α``
reachable, and the smallest effect ``d_z`` detectable with 80 % power by the test in use (the
exact sign test's own power when it is the test; a paired t-test for the Wilcoxon test). Pairing: the correlation of the two arms' times over the complete
pairs (pairing gains power only when it is positive).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..config import AuditConfig
from ..design import Axis, Design
from ..errors import ConfigError, ErrorCode, LogFormatError, param_name, param_value
from ..reasons import Reason
from ..results import Finding, Interval, format_number
from ..schema import LogTable
from ..text import format_value, safe, value_matches
from .results import ClaimResult, Record, finding, outward
from .runs import RunClocks, py, run_clocks, studies
from .stats import (
    BootstrapCI,
    Correlation,
    TestResult,
    bootstrap,
    cohen_dz,
    min_detectable_dz,
    min_detectable_dz_sign,
    min_wilcoxon_p,
    pearson,
    range_bootstrap,
    sign_flip_test,
    sign_test,
    wilcoxon_exact,
)

POWER = 0.8
TEST_NAMES = {"wilcoxon_exact": "exact Wilcoxon signed-rank", "sign_exact": "exact sign"}


# ------------------------------------------------------------------------------------------
# the body
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Pair(Record):
    pair: Any
    runs: tuple[str, str]
    t_grok: tuple[Interval | None, Interval | None]
    #: ``observed``, ``lower_bound``, ``upper_bound``, ``both_censored``; ``interval`` (both
    #: grokked, evaluated at different steps: a range of known sign) or ``unresolved`` (a
    #: range holding both signs)
    kind: str
    #: the value, or what is known: ``d > low`` / ``d < high`` / ``low < d < high`` / nothing
    d: Interval  #: claim form
    sign: int | None  #: +1, −1 or 0 when known


@dataclass(frozen=True)
class PairedStats(Record):
    """Statistics of fully observed differences (every value a value)."""

    n: int
    mean: float | None
    median: float | None
    cohen_dz: float | None
    wilcoxon: TestResult
    sign_flip: TestResult
    mean_ci: BootstrapCI | None
    median_ci: BootstrapCI | None


@dataclass(frozen=True)
class CensoredSummary(Record):
    """What the pairs support when some are censored: bounds, and tests that need no value
    for a censored difference."""

    n_pairs: int
    n_bounded: int
    n_both_censored: int
    mean_d: Interval  #: claim form, from each pair's range of d
    median_d: Interval  #: claim form
    sign: TestResult  #: exact sign test on the pairs with a known sign
    wilcoxon_p_at_most: float | None  #: the Wilcoxon p is at most this (None: no bound)
    wilcoxon_note: str
    #: pairs of observed runs whose sign the evaluation steps cannot resolve (``unresolved``)
    n_unresolved: int = 0
    #: pairs of observed runs evaluated at different steps, their sign known (``interval``)
    n_interval: int = 0
    #: seeded percentile bootstrap CIs over pairs of ``mean_d`` and ``median_d``: each
    #: resample's statistic a range, the CI from its lower ends' low to its upper ends' high
    #: (:func:`~.stats.range_bootstrap`); ``mean_d``/``median_d`` are ranges, not CIs
    mean_ci: BootstrapCI | None = None
    median_ci: BootstrapCI | None = None


@dataclass(frozen=True)
class Power(Record):
    test: str  #: the test the claim rests on
    n: int  #: pairs that test uses (a nonzero difference of known sign, or value)
    alpha: float
    min_attainable_p: float
    pairs_needed: int  #: usable pairs (nonzero differences) that make p < α attainable
    min_detectable_dz: float | None  #: with ``power``, by ``dz_method``
    power: float
    n_pairs: int = 0  #: pairs compared
    n_ties: int = 0  #: pairs with d = 0, dropped by the test
    #: censored or unresolved pairs whose sign is not known (sign test only)
    n_unknown_sign: int = 0
    #: how ``min_detectable_dz`` is computed: ``sign_exact`` (the exact sign test's own
    #: power, normal differences) or ``paired_t`` (a paired t-test, the rank test's proxy)
    dz_method: str = "paired_t"

    def words(self) -> str:
        """``5 usable pairs`` and, when it differs from the pairs compared, why."""
        out = f"{self.n} usable pair{'' if self.n == 1 else 's'}"
        if self.n != self.n_pairs:
            why = [f"{self.n_ties} tied at d = 0"] if self.n_ties else []
            if self.n_unknown_sign:
                why.append(f"{self.n_unknown_sign} with no known sign")
            out += f" of {self.n_pairs} ({', '.join(why)}: the test drops them)"
        return out


@dataclass(frozen=True)
class CompareBody(Record):
    step_unit: str
    by: str
    pair_column: str
    arms: tuple[Any, Any]
    difference: str
    n_runs: int  #: runs in the study (both arms and any other)
    n_pairs: int
    n_runs_paired: int
    pairs: tuple[Pair, ...]
    unpaired: tuple[Any, ...]
    censored: CensoredSummary | None  #: None when every pair is observed
    tests: PairedStats | None  #: every pair, when none is censored (else None)
    complete_pairs: PairedStats | None  #: with censored pairs: the observed ones only, a
    #: subset the censoring selected (a test, not an estimate of the effect)
    power: Power
    pairing: Correlation
    alpha: float


# ------------------------------------------------------------------------------------------
# pairs
# ------------------------------------------------------------------------------------------

def _known(r: Any, resolution: bool = False) -> tuple[float, float]:
    """What a run's t_grok is known to be, as ``(low, high)``: ``(−∞, first logged step]``
    when it grokked before logging began (left-censored: only an upper bound); ``(last
    step, ∞)`` when it never grokked (right-censored); when it grokked in the log, ``(last
    step below the threshold, first step seen]`` with ``resolution`` (interval censoring),
    else its value (the first step seen) at both ends."""
    if math.isinf(r.tg_upper):
        return float(r.tg_lower), math.inf
    if bool(getattr(r, "tg_left", False)):
        return -math.inf, float(r.tg_upper)
    if resolution:
        return float(r.tg_lower), float(r.tg_value)
    return float(r.tg_value), float(r.tg_value)


def _interval(r: Any) -> Interval | None:
    """The run's t_grok as ``check`` shows it: no value when it grokked before logging."""
    left = bool(getattr(r, "tg_left", False))
    return Interval.make(math.nan if left else r.tg_value, r.tg_lower, r.tg_upper)


def _observed(r: Any) -> bool:
    return not math.isinf(r.tg_upper) and not bool(getattr(r, "tg_left", False))


def _pair(k: Any, a: Any, b: Any, resolution: bool = True) -> Pair:
    """The difference ``a − b`` of two runs' t_grok: ``d`` lies in ``(low_a − high_b,
    high_a − low_b)`` (:func:`_known`), and an end that is infinite is unknown, so the pair
    is a lower bound, an upper bound, or nothing when either run is censored.

    When both grokked in the log, ``d`` is the difference of the steps grokking was first
    seen — ``observed`` — when that difference is what the log measures: both runs' grok
    intervals have the same width (one evaluation grid: the difference is the middle of
    the range of ``d``) and the range does not hold both signs (a difference of 0 is a tie).
    Otherwise (with ``resolution``, i.e. interval censoring) the arms were evaluated at
    different steps and the first-seen difference is off-centre by half the difference of
    the widths: the pair is ``interval`` (the open range, its sign known) or ``unresolved``
    (the range holds both signs: no sign)."""
    ia, ib = _interval(a), _interval(b)
    (la, ha), (lb, hb) = _known(a, resolution), _known(b, resolution)
    with np.errstate(invalid="ignore"):
        lo, hi = la - hb, ha - lb  # −∞ − −∞ cannot occur: each run has one finite end
    runs, t = (a.run, b.run), (ia, ib)
    if _observed(a) and _observed(b):
        d = float(a.tg_value) - float(b.tg_value)
        same_grid = (ha - la) == (hb - lb)
        if not resolution or (same_grid and (d == 0 or not lo < 0 < hi)):
            return Pair(py(k), runs, t, "observed", Interval.claim(d, d, d), int(np.sign(d)))
        if lo < 0 < hi:
            return Pair(py(k), runs, t, "unresolved", Interval.span(lo, hi), None)
        return Pair(py(k), runs, t, "interval", Interval.span(lo, hi), 1 if lo >= 0 else -1)
    if math.isfinite(lo):  # d > lo: the first arm censored, or the second grokked before logging
        return Pair(py(k), runs, t, "lower_bound", Interval.claim(None, lo, None),
                    1 if lo >= 0 else None)
    if math.isfinite(hi):
        return Pair(py(k), runs, t, "upper_bound", Interval.claim(None, None, hi),
                    -1 if hi <= 0 else None)
    return Pair(py(k), runs, t, "both_censored", Interval.claim(None, None, None), None)


def expanded_level(n: int, level: float) -> float:
    """The level a bootstrap percentile (or BCa) interval of a mean of ``n`` units is taken at
    so that it covers ``level``: Hesterberg's expansion, ``2Φ(√(n/(n−1))·t_{n−1}) − 1`` at
    ``t``'s ``(1 + level)/2`` quantile. The bootstrap of a mean is a z-interval with the 1/n
    deviation: on 10 pairs its 95 % covered 89 % (benchmarks/claims_coverage.py)."""
    if n < 2:
        return level
    from scipy import stats as st

    z = math.sqrt(n / (n - 1)) * float(st.t.ppf((1 + level) / 2, n - 1))
    return float(1 - 2 * st.norm.sf(z))


def median_interval(d: np.ndarray, *, level: float, seed: int) -> BootstrapCI:
    """The distribution-free interval of a median: the order statistics ``d_(k)`` and
    ``d_(n+1−k)``, ``k`` the largest with ``P(Binomial(n, ½) < k) ≤ (1 − level)/2`` (covers at
    least ``level`` for any continuous distribution). The bootstrap's percentile interval of
    a median of 10 pairs covered 92.8 % at a nominal 95 % (benchmarks/claims_coverage.py).
    No interval when even ``k = 1`` does not reach ``level`` (5 pairs or fewer at 95 %)."""
    from scipy import stats as st

    x = np.sort(np.asarray(d, dtype=float))
    n = int(x.size)
    est = float(np.median(x)) if n else None
    k = 0
    for j in range(1, n // 2 + 1):
        if float(st.binom.cdf(j - 1, n, 0.5)) <= (1 - level) / 2:
            k = j
    if k == 0:
        return BootstrapCI(est, None, None, level, "order statistics", 0, 0, seed,
                           note=f"{n} pairs: the sample's range covers less than "
                                f"{level:.0%} of the median's distribution")
    return BootstrapCI(est, float(x[k - 1]), float(x[n - k]), level, "order statistics", 0, 0,
                       seed)


def paired_stats(d: np.ndarray, *, seed: int, level: float) -> PairedStats:
    """Every paired statistic of observed differences ``d``."""
    n = int(d.size)
    mean_ci = median_ci = None
    if n:
        (mean_ci,) = bootstrap(n, lambda ix: float(np.mean(d[ix])), seed=seed,
                               level=expanded_level(n, level), method="bca", label="pairs")
        mean_ci = dataclasses.replace(mean_ci, level=level)
        median_ci = median_interval(d, level=level, seed=seed)
    return PairedStats(
        n=n, mean=float(d.mean()) if n else None, median=float(np.median(d)) if n else None,
        cohen_dz=cohen_dz(d), wilcoxon=wilcoxon_exact(d), sign_flip=sign_flip_test(d, seed=seed),
        mean_ci=mean_ci, median_ci=median_ci)


def _ranges(pairs: Sequence[Pair]) -> tuple[np.ndarray, np.ndarray]:
    lo = np.array([-math.inf if p.d.low is None else p.d.low for p in pairs], dtype=float)
    hi = np.array([math.inf if p.d.high is None else p.d.high for p in pairs], dtype=float)
    return lo, hi


def _attained(ends: np.ndarray, closed: np.ndarray, which: str) -> bool:
    """Whether the ``which`` statistic (``mean`` or ``median``) of the pairs at these ends can
    be taken: every value it averages must be attainable (an observed difference, not the
    open bound of a censored one). For the median, the middle one or two of the ends sorted
    (closed first among ties: a tie can put an attainable value there)."""
    if which == "mean":
        return bool(closed.all())
    order = np.lexsort((~closed, ends))
    n = ends.size
    mid = order[[(n - 1) // 2, n // 2]]
    return bool(closed[mid].all())


def _censored_summary(pairs: Sequence[Pair]) -> CensoredSummary:
    lo, hi = _ranges(pairs)
    observed = np.array([p.kind == "observed" for p in pairs], dtype=bool)
    with np.errstate(invalid="ignore"):
        # a censored difference's bound is never taken (t_grok lies strictly beyond the last
        # step): an end is closed only when observed differences alone make it
        mean = Interval.span(float(np.mean(lo)), float(np.mean(hi)),
                             _attained(lo, observed, "mean"), _attained(hi, observed, "mean"))
        median = Interval.span(float(np.median(lo)), float(np.median(hi)),
                               _attained(lo, observed, "median"), _attained(hi, observed, "median"))
    signs = [p.sign for p in pairs if p.sign is not None]
    st = sign_test(np.array(signs, dtype=float))
    # Wilcoxon with each censored difference at its bound: raising a positive difference's
    # magnitude never lowers W+, lowering a negative one's never raises it; so when every
    # censored pair is bounded away from 0 on the side where W+ already lies, the true
    # statistic is at least as extreme and its p-value at most the p at the bounds.
    bounded = [p for p in pairs if p.kind in ("lower_bound", "upper_bound")]
    n_both = sum(p.kind == "both_censored" for p in pairs)
    n_unres = sum(p.kind == "unresolved" for p in pairs)
    n_range = sum(p.kind == "interval" for p in pairs)
    at = np.array([p.d.value if p.kind == "observed" else
                   (p.d.low if p.kind == "lower_bound" else p.d.high)
                   for p in pairs if p.kind in ("observed", "lower_bound", "upper_bound")],
                  dtype=float)
    w = wilcoxon_exact(at)
    p_max = None
    if n_both:
        note = "a pair with both arms censored has no known bound: no Wilcoxon bound"
    elif n_unres or n_range:
        note = ("a pair of arms evaluated at different steps is a range, with no known rank: "
                "no Wilcoxon bound")
    elif w.statistic is None:
        note = "no nonzero difference"
    else:
        nz = at[at != 0]
        centre = len(nz) * (len(nz) + 1) / 4
        up = w.statistic >= centre
        ok = all((p.kind == "lower_bound" and p.sign == 1) if up else
                 (p.kind == "upper_bound" and p.sign == -1) for p in bounded)
        if ok:
            p_max = w.p_value
            note = "each censored pair at its bound; the true p is at most this"
        else:
            note = ("a censored pair is bounded against the direction of the effect: its "
                    "rank is unknown, no Wilcoxon bound")
    return CensoredSummary(len(pairs), len(bounded), int(n_both), mean, median, st, p_max,
                           note, int(n_unres), int(n_range))


def _with_cis(summary: CensoredSummary, pairs: Sequence[Pair], *, seed: int, level: float
              ) -> CensoredSummary:
    """``summary`` with the CIs of its mean and median difference: the sampling on top of the
    ranges (the range of the pairs' mean is what these pairs allow; it says nothing of the
    seeds not run, so it is not a confidence interval)."""
    lo, hi = _ranges(pairs)
    return dataclasses.replace(
        summary,
        mean_ci=range_bootstrap(lo, hi, np.mean, seed=seed, level=level, label="pairs"),
        median_ci=range_bootstrap(lo, hi, np.median, seed=seed, level=level, label="pairs"))


def _grid_step(a: Any, b: Any) -> float | None:
    """The evaluation interval at grokking shared by a pair's two observed runs (each run's
    ``t_grok`` known in ``(lower, seen]``; the same width in both arms: one grid), in steps;
    None when the arms were evaluated differently there."""
    wa = float(a.tg_value) - float(a.tg_lower)
    wb = float(b.tg_value) - float(b.tg_lower)
    return wa if wa == wb and wa > 0 else None


def _resolution(pairs: Sequence[Pair], Ai: pd.DataFrame, Bi: pd.DataFrame,
                censored: CensoredSummary | None, mean_ci: BootstrapCI | None
                ) -> Finding | None:
    """``PAIRS_WITHIN_RESOLUTION`` when the log cannot resolve the differences: pairs whose
    arms were evaluated at different steps (``d`` a range), or pairs on one grid shared by
    both arms that is coarser than the effect — most pairs compared tied at ``d = 0`` (each
    tie's true ``d`` anywhere in ``(−w, w)`` for a grid step ``w``), or the mean difference's
    CI within one grid step of 0 (the smallest step, when the pairs' steps differ). The
    first-seen differences on a shared grid are multiples of its step: an effect smaller
    than the step shows only as how often a pair straddles an evaluation. None otherwise."""
    unres = [p for p in pairs if p.kind in ("unresolved", "interval")]
    n_unres = censored.n_unresolved if censored is not None else 0
    n_range = censored.n_interval if censored is not None else 0
    grid: list[tuple[Pair, float]] = []
    for p in pairs:
        w = _grid_step(Ai.loc[p.pair], Bi.loc[p.pair]) if p.kind == "observed" else None
        if w is not None:
            grid.append((p, w))
    ties = [p for p, _ in grid if p.d.value == 0]
    step = min((w for _, w in grid), default=None)
    steps = sorted({w for _, w in grid})
    ci_low, ci_high = (mean_ci.low, mean_ci.high) if mean_ci is not None else (None, None)
    most_tied = 2 * len(ties) > len(pairs)
    ci_within = (step is not None and ci_low is not None and ci_high is not None
                 and -step < ci_low and ci_high < step)
    coarse = bool(grid) and (most_tied or ci_within)
    if not unres and not coarse:
        return None
    said = []
    if unres:
        said.append(
            f"{len(unres)} of {len(pairs)} pairs grokked in both arms, but at steps evaluated "
            "differently in the two arms: the difference of the steps grokking was first "
            "seen is not what the log measures; d is a range ("
            f"{n_unres} of them holding both signs: which arm grokked sooner is not in the "
            "log), and the test is the sign test on the pairs of known sign")
    if coarse:
        assert step is not None
        w_txt = format_number(step)
        grid_txt = (f"every {w_txt} steps" if len(steps) == 1 else
                    f"every {w_txt} to {format_number(steps[-1])} steps")
        why = []
        if most_tied:
            why.append(f"{len(ties)} of {len(pairs)} pairs are tied at d = 0 (a tied pair's "
                       f"true d lies anywhere in (−{w_txt}, {w_txt})"
                       f"{'' if len(steps) == 1 else ' or wider'})")
        if ci_within:
            assert mean_ci is not None and ci_low is not None and ci_high is not None
            why.append(f"the {100 * mean_ci.level:g}% CI of the mean d "
                       f"[{outward(ci_low, down=True)}, {outward(ci_high, down=False)}] lies "
                       "within one evaluation interval of 0")
        said.append(
            f"{len(grid)} of {len(pairs)} pairs were evaluated on one grid in both arms "
            f"({grid_txt} at grokking), so each difference is read in whole evaluation "
            f"intervals; {' and '.join(why)}: an effect smaller than the grid's step is not "
            "resolved by this log")
    runs = ([r for p in unres for r in p.runs]
            + [r for p, _ in grid if coarse and (ci_within or p.d.value == 0) for r in p.runs])
    return finding(
        Reason.PAIRS_WITHIN_RESOLUTION, "study", "; ".join(said), runs=runs,
        evidence={"n_unresolved": n_unres, "n_interval": n_range, "n_pairs": len(pairs),
                  "pairs": [{"pair": p.pair, "d_low": p.d.low, "d_high": p.d.high,
                             "sign": p.sign} for p in unres[:20]],
                  "shared_grid": coarse, "cadence": step if coarse else None,
                  "n_shared_grid": len(grid), "n_ties": len(ties),
                  "mean_d_ci": [ci_low, ci_high] if coarse and ci_within else None})


def _order(v: Any) -> tuple[int, Any]:
    """Pair labels in natural order: numbers numerically, then text."""
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
        return (0, float(v))
    return (1, str(v))


def _pairs_needed(alpha: float) -> int:
    n = 1
    while min_wilcoxon_p(n) >= alpha:
        n += 1
    return n


# ------------------------------------------------------------------------------------------
# one study
# ------------------------------------------------------------------------------------------

def _arms(f: pd.DataFrame, by: str, arms: Sequence[Any], source: str | None) -> list[Any]:
    # the values as stored (a float32 0.3 stays one, so that `--arms 0.3` names it)
    levels = sorted(f[by].dropna().unique(), key=format_value)
    if arms:
        chosen = []
        for a in arms:
            match = [v for v in levels if value_matches(v, a)]
            if not match:
                raise LogFormatError(f"{param_name('arms')} {safe(a)!r} is not a value of "
                                     f"{by!r} (values: "
                                     f"{', '.join(format_value(v) for v in levels)})",
                                     path=source, column=by, param="arms",
                                     code=ErrorCode.UNKNOWN_VALUE)
            chosen.append(match[0])
        if len(chosen) != 2 or chosen[0] == chosen[1]:
            raise LogFormatError(f"{param_name('arms')} takes exactly two different values: "
                                 "FIRST,SECOND", path=source, param="arms",
                                 code=ErrorCode.INVALID_OPTION)
        return chosen
    if len(levels) != 2:
        raise LogFormatError(f"{param_name('by')} {by!r} has {len(levels)} "
                             f"value{'' if len(levels) == 1 else 's'} "
                             f"({', '.join(format_value(v) for v in levels)}); choose two "
                             f"with {param_value('arms', 'A,B')}",
                             path=source, column=by, code=ErrorCode.INVALID_OPTION)
    return levels


def _study(rc: RunClocks, by: str, pair: str, arms: Sequence[Any], alpha: float,
           level: float, seed: int, source: str | None) -> tuple[CompareBody, list[Finding]]:
    f = rc.frame
    a_arm, b_arm = _arms(f, by, arms, source)
    A = f[f[by] == a_arm]
    B = f[f[by] == b_arm]
    for arm, g in ((a_arm, A), (b_arm, B)):
        dup = g[pair][g[pair].duplicated()]
        if len(dup):
            raise LogFormatError(f"arm {by}={py(arm)!r} has several runs with {pair}="
                                 f"{py(dup.iloc[0])!r} and the same conditions; a pair is one "
                                 "run per arm", path=source, column=pair,
                                 code=ErrorCode.DUPLICATE_AXIS_VALUES)
    keys = sorted(set(A[pair]) & set(B[pair]), key=_order)
    unpaired = sorted((set(A[pair]) ^ set(B[pair])), key=_order)
    Ai = A.set_index(pair)
    Bi = B.set_index(pair)
    pairs = [_pair(k, Ai.loc[k], Bi.loc[k], rc.interval_censoring) for k in keys]
    obs_pairs = [p for p in pairs if p.kind == "observed"]
    obs = np.array([p.d.value for p in obs_pairs], dtype=float)
    n_cens = len(pairs) - len(obs_pairs)
    findings: list[Finding] = []
    censored = None
    complete = paired_stats(obs, seed=seed, level=level)
    main_test = complete.wilcoxon
    if n_cens:
        censored = _with_cis(_censored_summary(pairs), pairs, seed=seed, level=level)
        main_test = censored.sign
    mean_ci = censored.mean_ci if censored is not None else complete.mean_ci
    res = _resolution(pairs, Ai, Bi, censored, mean_ci) if rc.interval_censoring else None
    if res is not None:
        findings.append(res)
    if censored is not None and censored.n_bounded + censored.n_both_censored:
        findings.append(finding(
            Reason.CENSORED_PAIRS, "study",
            f"{censored.n_bounded} pairs with one arm censored (never grokked, or grokked "
            "before its log begins: only a bound on d), "
            f"{censored.n_both_censored} with both censored: the mean and median difference "
            "are bounds, the test is the sign test on the pairs of known sign, and no effect "
            "size is estimated",
            runs=[r for p in pairs if p.kind in ("lower_bound", "upper_bound", "both_censored")
                  for r in p.runs],
            evidence={"n_bounded": censored.n_bounded,
                      "n_both_censored": censored.n_both_censored, "n_pairs": len(pairs),
                      "mean_d": censored.mean_d, "median_d": censored.median_d}))
    n_use = main_test.n
    sd = float(np.std(obs, ddof=1)) if obs.size >= 2 else None
    sign_used = main_test.name == "sign_exact"
    # the detectable effect of the test in use: the sign test's own power when it is the
    # test (a paired t-test would promise more than it can deliver)
    mde = (min_detectable_dz_sign(n_use, alpha, POWER) if sign_used
           else min_detectable_dz(n_use, alpha, POWER))
    power = Power(test=main_test.name, n=n_use, alpha=alpha,
                  min_attainable_p=min_wilcoxon_p(n_use), pairs_needed=_pairs_needed(alpha),
                  min_detectable_dz=mde, power=POWER, n_pairs=len(pairs),
                  n_ties=main_test.n_zeros,
                  n_unknown_sign=len(pairs) - n_use - main_test.n_zeros,
                  dz_method="sign_exact" if sign_used else "paired_t")
    if power.min_attainable_p >= alpha:
        findings.append(finding(
            Reason.UNDERPOWERED, "study",
            f"{power.words()}: the {TEST_NAMES[main_test.name]} test cannot reach "
            f"p < {alpha} (smallest attainable p = {power.min_attainable_p:.4g}; "
            f"{power.pairs_needed} usable pairs needed)",
            evidence={"n_pairs": n_use, "n_pairs_compared": len(pairs),
                      "n_ties": power.n_ties, "n_unknown_sign": power.n_unknown_sign,
                      "alpha": alpha, "test": main_test.name,
                      "min_attainable_p": power.min_attainable_p,
                      "pairs_needed": power.pairs_needed,
                      "min_detectable_dz": power.min_detectable_dz, "sd_d": sd}))
    pa_ = np.array([Ai.loc[p.pair].tg_value for p in obs_pairs], dtype=float)
    pb_ = np.array([Bi.loc[p.pair].tg_value for p in obs_pairs], dtype=float)
    body = CompareBody(
        step_unit=rc.step_unit, by=by, pair_column=pair, arms=(py(a_arm), py(b_arm)),
        difference=f"t_grok({by}={py(a_arm)}) - t_grok({by}={py(b_arm)})",
        n_runs=len(f), n_pairs=len(pairs), n_runs_paired=2 * len(pairs), pairs=tuple(pairs),
        unpaired=tuple(py(u) for u in unpaired), censored=censored,
        tests=None if n_cens else complete, complete_pairs=complete if n_cens else None,
        power=power, pairing=pearson(pa_, pb_, level),
        alpha=alpha)
    return body, findings


def run_compare(table: pa.Table | pd.DataFrame | LogTable, config: AuditConfig, *,
                by: str, pair: str, arms: Sequence[Any] = (), cell: Sequence[str] = (),
                alpha: float = 0.05, level: float = 0.95, seed: int = 0,
                step_unit: str | None = None, source: str | None = None) -> ClaimResult:
    """Audit a paired comparison of two arms of ``by``, paired on ``pair``. ``cell`` splits
    the runs into separate studies; runs of one arm and one pair value that differ in another
    condition are refused (``DUPLICATE_AXIS_VALUES``) unless ``cell`` separates them."""
    if pair == by:  # every run would be its own pair's only arm
        raise ConfigError(f"{param_name('pair')} and {param_name('by')} both name {safe(pair)!r}: "
                          "the arms are the values of --by, the pairs the values of another "
                          "condition (the seed)", code=ErrorCode.INVALID_OPTION, option="pair")
    rc = run_clocks(table, config, source, step_unit)
    design = Design.validate(rc.log, axes=[Axis(by, numeric=False),
                                           Axis(pair, "pair", numeric=False)],
                             cell=cell, pair=pair, what="the paired comparison")
    keep = np.ones(len(rc.frame), dtype=bool)
    if arms:  # the design check concerns the two arms compared only
        chosen = _arms(rc.frame, by, arms, source)
        keep = rc.frame[by].isin(chosen).to_numpy()
    rc_arms = rc.subset(keep)
    out = []
    for key, rcs in studies(rc_arms, design):
        body, fs = _study(rcs, by, pair, arms, alpha, level, seed, source)
        out.append((key, body, fs))
    params = {"by": by, "pair": pair, "arms": [str(a) for a in arms], "cell": list(cell),
              "alpha": alpha, "level": level, "seed": seed, "step_unit": rc.step_unit}
    return rc.result("compare", config, params, out)
