"""Deliberate bugs in the claim audits, each a patch that the claim cases must catch.

Like :mod:`.mutants` for the core: a :class:`~.mutants.Mutant` patches a function where the
claim audit looks it up (``grokaudit.claims.onset._study``, ``grokaudit.claims.runs.
interval_median``…; a function that module imports is wrapped as its defining module holds it,
``grokaudit.cells.interval_median``…) with a ``monkeypatch``-like object (pytest's fixture, or
:class:`~.mutants.Patcher`). Most reproduce what the claim audits did before issue 11, or a
shortcut a careless implementation would take.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import grokaudit.claims.compare as compare
import grokaudit.claims.dose as dose
import grokaudit.claims.onset as onset
import grokaudit.claims.precursor as precursor
import grokaudit.claims.runs as runs
import grokaudit.claims.stats as stats
import grokaudit.claims.survival as survival
import grokaudit.claims.transition as transition
import numpy as np
from grokaudit import cells
from grokaudit.claims.results import finding
from grokaudit.claims.stats import TestResult
from grokaudit.reasons import Reason
from grokaudit.results import Interval

from .mutants import Mutant


def _survivorship_without_censoring(mp: Any) -> None:
    """SURVIVORSHIP_BIAS whenever the CI of exponent_OLS − exponent_AFT excludes 0, whether
    or not OLS left any run out (the audit before issue 11)."""
    orig = onset._study

    def mutant(rc: Any, config: Any, by: Any, interactions: Any, thresholds: Any, axes: Any,
               level: float, seed: int, n_resamples: int, source: Any) -> Any:
        body, fs = orig(rc, config, by, interactions, thresholds, axes, level, seed,
                        n_resamples, source)
        if body.ols.n_left_out or body.ols.fit is None or body.aft.family is None:
            return body, fs
        names = ["intercept", *[c.term for c in body.comparison]]
        diffs = onset._bootstrap_terms(rc.frame, by, interactions, names, body.aft.family,
                                       level, seed, n_resamples)
        comp = []
        for i, tc in enumerate(body.comparison):
            if diffs[i].excludes(0.0):
                fs = [*fs, finding(Reason.SURVIVORSHIP_BIAS, "study",
                                   f"OLS and the AFT differ on {tc.term}",
                                   evidence={"term": tc.term, "n_left_out": 0})]
                tc = dataclasses.replace(tc, difference=diffs[i], survivorship_bias=True)
            comp.append(tc)
        return dataclasses.replace(body, comparison=tuple(comp)), fs

    mp.setattr(onset, "_study", mutant)


def _aft_always_weibull(mp: Any) -> None:
    """The AFT's error family is always Weibull, never chosen by AIC."""
    orig = survival.fit_families

    def mutant(*a: Any, **k: Any) -> Any:
        fits, best = orig(*a, **k)
        return fits, ("weibull" if fits["weibull"].converged else best)

    mp.setattr(onset, "fit_families", mutant)


def _median_of_upper_ends(mp: Any) -> None:
    """A claim's cell median reports the median of the runs' upper ends as its value (the
    core's lag bug): right for t_grok, one cadence off for a gap t_grok − t_mem."""
    orig = cells.interval_median

    def mutant(ev: Any, idx: Any, interval_censoring: bool = True) -> Any:
        med, cens = orig(ev, idx, interval_censoring)
        if med is not None and not cens and med.upper is not None:
            med = dataclasses.replace(med, value=med.upper)
        return med, cens

    mp.setattr(runs, "interval_median", mutant)


def _censored_median_as_value(mp: Any) -> None:
    """A censored cell median (half or more runs never grokked) becomes a value: its lower
    bound (the reference analyzer's censored medians as point values)."""
    orig = cells.interval_median

    def mutant(ev: Any, idx: Any, interval_censoring: bool = True) -> Any:
        med, cens = orig(ev, idx, interval_censoring)
        if med is not None and cens and med.lower is not None:
            return Interval(med.lower, med.lower, med.lower, False), False
        return med, cens

    mp.setattr(runs, "interval_median", mutant)


def _laws_always_identified(mp: Any) -> None:
    """The law with the smallest AICc is named whatever its margin (no
    MODELS_INDISTINGUISHABLE)."""
    orig = dose._study

    def mutant(*a: Any, **k: Any) -> Any:
        body, fs = orig(*a, **k)
        fs = [f for f in fs if f.code is not Reason.MODELS_INDISTINGUISHABLE]
        ok = body.best is not None and not any(
            f.contradicted for f in body.fits if f.model == body.best)
        return dataclasses.replace(body, identified=ok), fs

    mp.setattr(dose, "_study", mutant)


def _interval_at_separation(mp: Any) -> None:
    """Separation is never detected: a separated transition gets the ridge artefact λ_c and a
    bootstrap interval (the audit before issue 11)."""
    orig = transition.separation

    def mutant(u: np.ndarray, y: np.ndarray) -> str:
        out = orig(u, y)
        return "constant" if out == "constant" else "none"

    mp.setattr(transition, "separation", mutant)


def _bracketing_unchecked(mp: Any) -> None:
    """TOO_FEW_LEVELS is never raised for a transition bracketed by too few levels."""
    mp.setattr(transition, "_bracketing", lambda findings, levels, below, above: None)


def _censored_pairs_exact(mp: Any) -> None:
    """A pair whose run never grokked is treated as exact: the run's last logged step is
    taken as its t_grok."""
    orig = compare._pair

    def exact(r: Any) -> Any:  # r: the run's row (a pandas Series)
        if not math.isinf(r["tg_upper"]):
            return r
        r = r.copy()
        r["tg_value"] = r["tg_upper"] = r["tg_lower"]
        return r

    mp.setattr(compare, "_pair", lambda k, a, b, *rest: orig(k, exact(a), exact(b), *rest))


def _median_upper_bound_as_value(mp: Any) -> None:
    """The median difference of censored pairs, known only as a range, is printed as its
    upper end."""
    orig = compare._censored_summary

    def mutant(pairs: Any) -> Any:
        out = orig(pairs)
        m = out.median_d
        if m.value is None and m.high is not None:
            out = dataclasses.replace(out, median_d=Interval.claim(m.high, m.low, m.high))
        return out

    mp.setattr(compare, "_censored_summary", mutant)


def _one_sided_power(mp: Any) -> None:
    """Power judged by the one-sided smallest p (1/2ⁿ): five pairs look sufficient."""
    mp.setattr(compare, "min_wilcoxon_p", lambda n: 1.0 if n <= 0 else 1.0 / 2.0 ** n)


def _arms_pooled(mp: Any) -> None:
    """Runs that share the axis values but differ in another condition are pooled silently
    (no DUPLICATE_AXIS_VALUES)."""
    mp.setattr(runs, "check_design", lambda *a, **k: None)


def _placebo_ignored(mp: Any) -> None:
    """The placebo comparison is computed but never fails the precursor (only the
    permutation null does)."""
    orig = stats.mcnemar_exact

    def mutant(a: Any, b: Any) -> TestResult:
        t = orig(a, b)
        return dataclasses.replace(t, p_value=0.0)

    mp.setattr(precursor, "mcnemar_exact", mutant)


def _edge_peaks_count(mp: Any) -> None:
    """A peak on the window's edge counts as a precursor peak (the raw statistic is
    tested)."""
    orig = precursor._peaks

    def mutant(rc: Any, values: Any) -> Any:
        out = dict(orig(rc, values))
        out["edge"] = np.zeros_like(out["edge"])
        return out

    mp.setattr(precursor, "_peaks", mutant)


# -- issue 20 ------------------------------------------------------------------------------

def _law_unchecked(mp: Any) -> None:
    """The onset law is never checked against the cells it never saw grok (before issue 20)."""
    mp.setattr(onset, "_law_checks", lambda *a, **k: ())


def _censored_resamples_dropped(mp: Any) -> None:
    """A resample in which a fitted cell's median turns censored is dropped (before issue 20):
    the interval closes on the side those resamples would push it."""
    mp.setattr(dose, "_beyond", lambda x, cens, best, xc: np.full(1 + 3 * len(xc), np.nan))


def _bracket_only(mp: Any) -> None:
    """Under separation only the bracket: no profile-likelihood set (before issue 20)."""
    mp.setattr(transition, "profile_set", lambda *a, **k: None)


def _time_null_only(mp: Any) -> None:
    """The precursor null places peaks uniformly in time only: a noise signal on a geometric
    grid (peaks early, where the points are) is called specific."""
    mp.setattr(precursor, "_null_points", precursor._null)


CLAIM_MUTANTS: tuple[Mutant, ...] = (
    Mutant("survivorship_without_censoring", "SURVIVORSHIP_BIAS whenever the CI of OLS − AFT "
           "excludes 0, even when no run was left out of OLS", _survivorship_without_censoring),
    Mutant("aft_always_weibull", "the AFT's error family is always Weibull, not chosen by AIC",
           _aft_always_weibull),
    Mutant("median_of_upper_ends", "a cell median's value is the median of the runs' upper "
           "ends (a gap's median one cadence high)", _median_of_upper_ends),
    Mutant("censored_median_as_value", "a censored cell median is reported as a value (its "
           "lower bound) and fitted like the others", _censored_median_as_value),
    Mutant("laws_always_identified", "the smallest-AICc law is named whatever its margin (no "
           "MODELS_INDISTINGUISHABLE)", _laws_always_identified),
    Mutant("interval_at_separation", "separation is never detected: a separated transition "
           "gets a point λ_c with a bootstrap interval", _interval_at_separation),
    Mutant("bracketing_unchecked", "TOO_FEW_LEVELS is never raised for a transition with too "
           "few levels on a side", _bracketing_unchecked),
    Mutant("censored_pairs_exact", "a censored pair's difference is treated as exact (the run "
           "that never grokked 'grokked' at its last step)", _censored_pairs_exact),
    Mutant("median_upper_bound_as_value", "the median difference of censored pairs, known only "
           "as a range, is printed as its upper bound", _median_upper_bound_as_value),
    Mutant("one_sided_power", "power judged by the one-sided smallest p (1/2ⁿ): five pairs "
           "pass", _one_sided_power),
    Mutant("arms_pooled", "runs sharing the axis values but differing in another condition are "
           "pooled silently (no DUPLICATE_AXIS_VALUES)", _arms_pooled),
    Mutant("placebo_ignored", "the placebo's McNemar test never fails a precursor",
           _placebo_ignored),
    Mutant("edge_peaks_count", "a peak on the window's edge counts as a precursor peak",
           _edge_peaks_count),
    Mutant("law_unchecked", "onset's law is never checked against the cells it never saw grok",
           _law_unchecked),
    Mutant("censored_resamples_dropped", "dose drops the resamples that turn a fitted cell "
           "censored", _censored_resamples_dropped),
    Mutant("bracket_only", "transition under separation reports the bracket only, no "
           "profile-likelihood set", _bracket_only),
    Mutant("time_null_only", "precursor's only null places peaks uniformly in time",
           _time_null_only),
)

#: The claim case(s) each mutant must break (documented in docs/adversarial-suite.md).
CLAIM_CAUGHT_BY: dict[str, frozenset[str]] = {
    "law_unchecked": frozenset({"onset_cell_beyond_horizon"}),
    "censored_resamples_dropped": frozenset({"dose_censored_resamples"}),
    "bracket_only": frozenset({"transition_quasi_separated"}),
    "time_null_only": frozenset({"precursor_geometric_noise"}),
    "survivorship_without_censoring": frozenset({"onset_lognormal_uncensored"}),
    "aft_always_weibull": frozenset({"onset_lognormal_uncensored"}),
    "median_of_upper_ends": frozenset({"onset_lognormal_uncensored",
                                       "onset_weibull_uncensored"}),
    "censored_median_as_value": frozenset({"dose_law_contradicted", "onset_censored_weibull"}),
    "laws_always_identified": frozenset({"dose_indistinguishable"}),
    "interval_at_separation": frozenset({"transition_separated"}),
    "bracketing_unchecked": frozenset({"transition_too_few_levels"}),
    "censored_pairs_exact": frozenset({"compare_censored_pairs"}),
    "median_upper_bound_as_value": frozenset({"compare_censored_pairs"}),
    "one_sided_power": frozenset({"compare_too_few_pairs"}),
    "arms_pooled": frozenset({"pooled_arms"}),
    "placebo_ignored": frozenset({"precursor_trivial"}),
    "edge_peaks_count": frozenset({"precursor_monotone"}),
}

__all__ = ["CLAIM_CAUGHT_BY", "CLAIM_MUTANTS"]
