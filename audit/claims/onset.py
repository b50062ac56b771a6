"""``grokaudit onset``: when does a run generalize, and what controls it (CLAIMS_SPEC, seed 003).

Per run ``t_mem``, ``t_grok`` and ``gap = t_grok − t_mem``, censored honestly; per cell the grok
rate with a Wilson interval and the core's censoring-aware medians; a phase map over two axes;
and the scaling of ``log t_grok`` on the log of the chosen hyperparameters fitted two ways, side
by side:

1. as papers do — OLS on the runs that grokked (R², leave-one-out R²);
2. as the log supports — an AFT model that keeps every run (interval- and right-censored), its
   error family (Weibull, log-normal, log-logistic) chosen by AIC and reported.

``SURVIVORSHIP_BIAS`` only when runs were left out of OLS *and* the gap is attributable to them:
the seeded bootstrap CI (runs resampled within cells, every fit redone) of
``exponent_OLS − exponent_AFT`` excludes 0, and so does the CI of
``exponent_AFT(grokked runs only) − exponent_AFT(all runs)`` — the same model and error family,
with and without the left-out runs. A gap with nothing left out (or one the left-out runs do
not explain) is an estimator difference, not survivorship.
``THRESHOLD_SENSITIVE`` when an exponent's sign or a cell ordering changes with the grok
threshold.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..config import AuditConfig, replace
from ..design import Axis, Design
from ..errors import ErrorCode, LogFormatError, param_name, param_value
from ..reasons import Reason
from ..results import Finding, Interval
from ..schema import LogTable
from ..text import format_value, safe
from .flagged import flag_runs
from .results import ClaimResult, Record, finding, outward, p_text
from .runs import RunClocks, py, run_clocks, stopped_early, studies
from .stats import (
    BootstrapCI,
    LinearFit,
    Proportion,
    bootstrap,
    ols,
    poisson_binomial_tail,
    wilson,
)
from .survival import FAMILIES, AFTFit, aft, fit_families, median_time, survival

# ------------------------------------------------------------------------------------------
# the body
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OnsetCell(Record):
    """One cell (a combination of the ``--by`` values)."""

    cell: Mapping[str, Any]
    runs: tuple[str, ...]
    n_runs: int
    n_grokked: int
    grok_rate: Proportion  #: over the runs whose outcome is known (not stopped early)
    t_grok_median: Interval | None
    gap_median: Interval | None
    n_gap: int  #: runs with a gap (they memorized)
    n_stopped_early: int = 0  #: censored before the cell's median grok step: left out of the rate


@dataclass(frozen=True)
class PhaseCell(Record):
    row: Any
    column: Any
    grok_rate: Proportion


@dataclass(frozen=True)
class PhaseMap(Record):
    rows: str
    columns: str
    cells: tuple[PhaseCell, ...]


@dataclass(frozen=True)
class ExactRange(Record):
    """One exponent's range over every law with no scatter (``σ → 0``) that hits every run's
    ``(lower, upper]`` interval: the least and greatest value (linear programs), None where
    unbounded. The set the data allow when the AFT is degenerate."""

    term: str
    low: float | None
    high: float | None


@dataclass(frozen=True)
class OlsSummary(Record):
    """OLS of ``log t_grok`` on the grokked runs (what papers do)."""

    fit: LinearFit | None
    refused: Reason | None
    n_runs: int
    n_left_out: int


@dataclass(frozen=True)
class AftSummary(Record):
    """The censored AFT on every run: each family's AIC and the family chosen by AIC."""

    family: str | None
    fit: AFTFit | None
    refused: Reason | None
    n_runs: int
    aic: Mapping[str, float | None]  #: per family (None: did not converge)
    #: why it was refused: ``rank`` (the grokked runs do not vary in every term),
    #: ``degenerate`` (σ → 0: a law with no scatter hits every run's interval), ``no_se``
    #: (no finite standard error), ``too_few_runs``, ``no_grok``, ``no_convergence``
    cause: str | None = None
    #: with ``degenerate``: each exponent's range over the laws that hit every interval
    exact_set: tuple[ExactRange, ...] = ()


@dataclass(frozen=True)
class Estimate(Record):
    estimate: float
    low: float | None
    high: float | None


@dataclass(frozen=True)
class TermComparison(Record):
    """One exponent fitted both ways, and the survivorship test."""

    term: str
    ols: Estimate | None
    aft: Estimate | None
    difference: BootstrapCI | None  #: exponent_OLS − exponent_AFT
    left_out_effect: BootstrapCI | None  #: exponent_AFT(grokked only) − exponent_AFT(all)
    survivorship_bias: bool | None  #: None: not testable (nothing left out, or a fit refused)
    note: str | None


@dataclass(frozen=True)
class ThresholdRow(Record):
    grok_threshold: float
    n_grokked: int
    aft_exponents: Mapping[str, float]
    cells: tuple[OnsetCell, ...]
    #: where the AFT is degenerate at this threshold (σ → 0): each exponent's range over the
    #: laws with no scatter (its sign is known when the range excludes 0)
    exact_set: tuple[ExactRange, ...] = ()


@dataclass(frozen=True)
class LawCheck(Record):
    """The chosen AFT law against the runs it could not see grok in one cell: how many of
    them the law expects to be censored at their horizons, and how likely as many as were."""

    cell: Mapping[str, Any]
    situation: str  #: ``beyond_horizon`` (every run censored) or ``inside_cell`` (some grokked)
    n_runs: int  #: the cell's runs whose outcome is known (runs stopped early left out)
    n_censored: int
    horizon: float  #: the median last step of its censored runs
    predicted_median: float | None  #: the law's median t_grok in the cell
    p_beyond: float  #: the law's mean P(T > horizon) over the cell's runs
    expected_censored: float
    p_value: float  #: P(at least n_censored censored) under the law
    alpha: float  #: the level it is judged at (Bonferroni over the cells checked)
    contradicted: bool


@dataclass(frozen=True)
class LeftOut(Record):
    """The runs OLS left out (no grok logged), by situation: different reasons, different
    words."""

    n_runs: int
    beyond_horizon: int  #: in cells where no run grokked by the end of the log
    inside_cells: int  #: censored in cells where other runs grokked (survivorship)
    stopped_early: int  #: censored before their cell's median grok step (crashed, cut short)

    def words(self) -> str:
        parts = []
        if self.beyond_horizon:
            parts.append(f"{self.beyond_horizon} in cells beyond the horizon (no run grokked)")
        if self.inside_cells:
            parts.append(f"{self.inside_cells} censored inside cells where others grokked "
                         "(survivorship)")
        if self.stopped_early:
            parts.append(f"{self.stopped_early} stopped early")
        return "; ".join(parts)


@dataclass(frozen=True)
class OnsetRun(Record):
    run: str
    conditions: Mapping[str, Any]
    t_mem: Interval | None
    t_grok: Interval | None
    gap: Interval | None


@dataclass(frozen=True)
class OnsetBody(Record):
    step_unit: str
    by: tuple[str, ...]
    n_runs: int
    cells: tuple[OnsetCell, ...]
    phase_map: PhaseMap | None
    ols: OlsSummary
    aft: AftSummary
    comparison: tuple[TermComparison, ...]
    threshold_sensitivity: tuple[ThresholdRow, ...]
    runs: tuple[OnsetRun, ...]
    left_out: LeftOut | None = None
    law_checks: tuple[LawCheck, ...] = ()


# ------------------------------------------------------------------------------------------
# fits
# ------------------------------------------------------------------------------------------

def _design(frame: pd.DataFrame, by: Sequence[str], interactions: bool
            ) -> tuple[np.ndarray, list[str]]:
    """Intercept, ``log(col)`` for each column, and optionally every pairwise product."""
    cols = [np.ones(len(frame))]
    names = ["intercept"]
    logs = {c: np.log(frame[c].to_numpy(dtype=float)) for c in by}
    for c in by:
        cols.append(logs[c])
        names.append(f"log_{c}")
    if interactions:
        for a, b in itertools.combinations(by, 2):
            cols.append(logs[a] * logs[b])
            names.append(f"log_{a}:log_{b}")
    return np.column_stack(cols), names


def _aft_bounds(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each run's ``(lower, upper]`` for the AFT. A grok seen at step 0 is read as (0, 1]."""
    lo = frame["tg_lower"].to_numpy(dtype=float)
    up = frame["tg_upper"].to_numpy(dtype=float)
    up = np.where(up <= 0, 1.0, up)
    lo = np.minimum(np.maximum(lo, 0.0), up)
    return lo, up


def _log_t(frame: pd.DataFrame) -> np.ndarray:
    out: np.ndarray = np.log(np.maximum(frame["tg_value"].to_numpy(dtype=float), 1.0))
    return out


@dataclass(frozen=True)
class _Fits:
    names: list[str]
    ols: LinearFit | None
    ols_why: Reason | None
    aft: AFTFit | None
    aft_why: Reason | None
    family: str | None
    aic: dict[str, float | None]
    aft_cause: str | None = None
    exact_set: tuple[ExactRange, ...] = ()


def _exact_law(X: np.ndarray, lo: np.ndarray, up: np.ndarray, names: Sequence[str]
               ) -> tuple[ExactRange, ...] | None:
    """Whether a law with no scatter (``log T = xᵀβ`` exactly, ``σ → 0``) puts every run
    strictly inside its ``(lower, upper]`` interval (or on its exact time): then every AFT
    family's likelihood is largest in the limit ``σ → 0`` — any scatter puts mass outside the
    intervals — and there is no maximum. A law that only touches an end (runs of one cell on
    either side of a logged step) keeps part of that run's mass outside as σ → 0: the
    likelihood levels off, and the fit is not degenerate.
    Checked by a linear program (``log L ≤ xᵀβ ≤ log U``, feasible or not). Returns None
    when no such law exists; else each exponent's least and greatest value over those laws
    (one linear program per end; the closure of the set), None for an unbounded end."""
    from scipy.optimize import linprog

    p = X.shape[1]
    exact = lo == up
    has_lo = (lo > 0) & ~exact
    has_up = np.isfinite(up) & ~exact
    with np.errstate(divide="ignore"):
        llo, lup = np.log(np.where(lo > 0, lo, 1.0)), np.log(np.where(up > 0, up, 1.0))
    lup = np.where(np.isfinite(up), lup, 0.0)
    # rows: −xβ + s ≤ −log L (lower ends), xβ + s ≤ log U (upper ends); xβ = log t (exact);
    # the margin s ≥ 0 is maximized (s > 0: strictly inside), feasibility is what counts
    A = np.vstack([np.column_stack((-X[has_lo], np.ones(int(has_lo.sum())))),
                   np.column_stack((X[has_up], np.ones(int(has_up.sum()))))])
    b = np.concatenate((-llo[has_lo], lup[has_up]))
    Aeq = np.column_stack((X[exact], np.zeros(int(exact.sum())))) if exact.any() else None
    beq = lup[exact] if exact.any() else None
    bounds = [(None, None)] * p + [(0.0, 1.0)]
    c = np.zeros(p + 1)
    c[p] = -1.0
    res = linprog(c, A_ub=A if A.size else None, b_ub=b if A.size else None, A_eq=Aeq,
                  b_eq=beq, bounds=bounds, method="highs")
    if res.status != 0:
        return None
    beta = np.asarray(res.x[:p], dtype=float)
    widths = (lup - llo)[has_lo & has_up]
    widths = widths[widths > 0]
    if A.size and float(res.x[p]) <= max(1e-9, 1e-6 * float(widths.min()) if widths.size
                                         else 1e-9):
        # the laws that hit every interval only touch an end of one (runs of one cell on
        # either side of a logged step: (75, 100] and (100, 125]): as σ → 0 such a run keeps
        # only part of its mass inside, so the likelihood levels off instead of rising to its
        # bound, and the fit has a maximum: not degenerate
        return None
    viol = max([0.0, *(llo[has_lo] - X[has_lo] @ beta), *(X[has_up] @ beta - lup[has_up])])
    if widths.size and viol > 1e-3 * float(widths.min()):
        # the law found leaves runs outside their intervals by more than the intervals are
        # wide (steps offset by 1e12: widths ≈1e−10 in log t, below the solver's tolerance):
        # whether an exact law exists is not decided; none is claimed
        return None
    out = []
    for j in range(1, p):  # the exponents (the intercept aside)
        ends: list[float | None] = []
        for sign in (1.0, -1.0):
            cj = np.zeros(p + 1)
            cj[j] = sign
            r = linprog(cj, A_ub=A if A.size else None, b_ub=b if A.size else None,
                        A_eq=Aeq, b_eq=beq, bounds=[(None, None)] * p + [(0.0, 0.0)],
                        method="highs")
            ends.append(sign * float(r.fun) if r.status == 0 else None)
        if ends[0] is not None and ends[1] is not None and ends[0] > ends[1]:
            # the solver's tolerance (≈1e−7 in log t) exceeds the intervals' widths (steps
            # offset by 1e12: widths ≈1e−10): feasibility was not decided, no range is known
            return None
        out.append(ExactRange(names[j], ends[0], ends[1]))
    return tuple(out)


def _fits(frame: pd.DataFrame, by: Sequence[str], interactions: bool, level: float,
          family: str | None = None) -> _Fits:
    """OLS on the grokked runs and the AFT on all runs (``family``, or each family and the
    smallest AIC)."""
    X, names = _design(frame, by, interactions)
    p = X.shape[1]
    g = frame["grokked"].to_numpy(dtype=bool)
    ols_fit: LinearFit | None = None
    ols_why: Reason | None = None
    if int(g.sum()) > p + 1 and np.linalg.matrix_rank(X[g]) == p:
        ols_fit = ols(X[g], _log_t(frame)[g], names, level)
    else:
        ols_why = Reason.TOO_FEW_RUNS
    aft_fit: AFTFit | None = None
    aft_why: Reason | None = None
    cause: str | None = None
    exact: tuple[ExactRange, ...] | None = None
    aic: dict[str, float | None] = {f: None for f in FAMILIES}
    chosen = None
    lo_b, up_b = _aft_bounds(frame)
    events = np.isfinite(up_b)  # runs that grokked: an exact or interval-censored time
    if len(frame) <= p + 1 or np.linalg.matrix_rank(X) < p:
        aft_why, cause = Reason.TOO_FEW_RUNS, "too_few_runs"
    elif not g.any():
        # every run censored: only a lower bound, no scaling
        aft_why, cause = Reason.FIT_FAILED, "no_grok"
    elif np.linalg.matrix_rank(X[events]) < p:
        # the grokked runs do not vary in every term (all in one cell): right-censored runs
        # alone bound a slope on one side only -- the likelihood rises without end, and a
        # fit would print its optimizer's stopping point with a CI of ±10⁷
        aft_why, cause = Reason.NOT_IDENTIFIED, "rank"
    elif (exact := _exact_law(X, lo_b, up_b, names)) is not None:
        # a law with no scatter hits every run's interval: σ → 0, no maximum; a Wald
        # interval there would be set by where the optimizer stopped
        aft_why, cause = Reason.NOT_IDENTIFIED, "degenerate"
    else:
        lo, up = lo_b, up_b
        if family is None:
            fits, chosen = fit_families(X, lo, up, names, level)
            aic = {f: (fits[f].aic if fits[f].converged else None) for f in FAMILIES}
        else:
            fits = {family: aft(X, lo, up, names, level, family=family)}
            chosen = family if fits[family].converged else None
            aic[family] = fits[family].aic if chosen else None
        if chosen is None:
            aft_why, cause = Reason.FIT_FAILED, "no_convergence"
        elif not all(se is not None and np.isfinite(se) for se in fits[chosen].se):
            # a flat likelihood: no standard error
            aft_why, cause = Reason.NOT_IDENTIFIED, "no_se"
        else:
            aft_fit = fits[chosen]
    return _Fits(names, ols_fit, ols_why, aft_fit, aft_why, chosen, aic, cause, exact or ())


def _bootstrap_terms(frame: pd.DataFrame, by: Sequence[str], interactions: bool,
                     names: Sequence[str], family: str, level: float, seed: int, B: int
                     ) -> tuple[BootstrapCI, ...]:
    """Per term ``[exponent_OLS − exponent_AFT(all), exponent_AFT(grokked) −
    exponent_AFT(all)]``: runs resampled within cells, the three fits redone each time."""
    X, _ = _design(frame, by, interactions)
    p = X.shape[1]
    g = frame["grokked"].to_numpy(dtype=bool)
    y = _log_t(frame)
    lo, up = _aft_bounds(frame)
    cells = [np.asarray(ix) for ix in frame.groupby(list(by), sort=True).indices.values()]
    k = len(names) - 1

    def stat(ix: np.ndarray) -> np.ndarray | None:
        gi = ix[g[ix]]
        if gi.size <= p + 1 or np.linalg.matrix_rank(X[gi]) < p:
            return None
        try:
            fa = aft(X[ix], lo[ix], up[ix], names, level, family=family, inference=False)
            fs = aft(X[gi], lo[gi], up[gi], names, level, family=family, inference=False)
        except ValueError:
            return None
        if not (fa.converged and fs.converged):
            return None
        co, *_ = np.linalg.lstsq(X[gi], y[gi], rcond=None)
        a = np.asarray(fa.coef)
        return np.concatenate((co[1:] - a[1:], np.asarray(fs.coef)[1:] - a[1:]))

    cis = bootstrap(cells, stat, seed=seed, level=level, n_resamples=B,
                    label="runs within cells")
    return cis[:k] + cis[k:]


# ------------------------------------------------------------------------------------------
# cells
# ------------------------------------------------------------------------------------------

def _cells(rc: RunClocks, by: Sequence[str], level: float) -> tuple[OnsetCell, ...]:
    f = rc.frame
    out = []
    mem = f["memorized"].to_numpy(dtype=bool)
    early = stopped_early(f, by)
    for key, ix in f.groupby(list(by), sort=True).indices.items():
        key_t = key if isinstance(key, tuple) else (key,)
        rows = np.asarray(ix, dtype=np.int64)
        g = f.iloc[rows]
        k = int(g["grokked"].sum())
        n_early = int(early[rows].sum())
        out.append(OnsetCell(
            cell={c: py(v) for c, v in zip(by, key_t)},
            runs=tuple(sorted(g["run"].tolist())), n_runs=len(rows), n_grokked=k,
            grok_rate=wilson(k, len(rows) - n_early, level),
            t_grok_median=rc.median("t_grok", rows, left_unknown=True),
            gap_median=(rc.median("gap", rows, left_unknown=True) if mem[rows].any()
                        else None),
            n_gap=int(mem[rows].sum()), n_stopped_early=n_early))
    return tuple(out)


def _left_out(f: pd.DataFrame, by: Sequence[str]) -> LeftOut:
    cens = ~f["grokked"].to_numpy(dtype=bool)
    early = stopped_early(f, by) & cens
    beyond = inside = 0
    for ix in f.groupby(list(by), sort=False).indices.values():
        ix = np.asarray(ix)
        c = cens[ix] & ~early[ix]
        if not c.any():
            continue
        if c.sum() == (~early[ix]).sum():
            beyond += int(c.sum())
        else:
            inside += int(c.sum())
    return LeftOut(int(cens.sum()), beyond, inside, int(early.sum()))


def _law_checks(f: pd.DataFrame, by: Sequence[str], interactions: bool, fit: AFTFit,
                level: float) -> tuple[LawCheck, ...]:
    """The chosen AFT law against every cell with runs it never saw grok: the law's
    probability that each run of the cell is still ungrokked at its last step, and the
    probability of at least as many censored runs as the log shows (Poisson-binomial). A cell
    the law calls that unlikely (below ``1 − level`` over the number of cells checked)
    contradicts it: a whole cell beyond the horizon the law says should have grokked, or more
    survivors inside a cell than it allows."""
    X, _ = _design(f, by, interactions)
    cens = ~f["grokked"].to_numpy(dtype=bool)
    early = stopped_early(f, by)
    last = f["last_step"].to_numpy(dtype=float)
    horizon = np.where(cens, f["tg_lower"].to_numpy(dtype=float), last)
    p_beyond = survival(fit, X, horizon)
    med = median_time(fit, X)
    cells = []
    for key, ix in f.groupby(list(by), sort=True).indices.items():
        ix = np.asarray(ix)
        use = ix[~early[ix]]
        k = int(cens[use].sum())
        if use.size == 0 or k == 0:
            continue
        key_t = key if isinstance(key, tuple) else (key,)
        cells.append((key_t, use, k))
    alpha = (1.0 - level) / max(len(cells), 1)
    out = []
    for key_t, use, k in cells:
        ps = p_beyond[use]
        pv = poisson_binomial_tail(ps, k)
        m = float(np.median(med[use]))
        out.append(LawCheck(
            cell={c: py(v) for c, v in zip(by, key_t)},
            situation="beyond_horizon" if k == use.size else "inside_cell",
            n_runs=int(use.size), n_censored=k,
            horizon=float(np.median(horizon[use][cens[use]])),
            predicted_median=m if np.isfinite(m) else None,
            p_beyond=float(np.mean(ps)), expected_censored=float(np.sum(ps)), p_value=pv,
            alpha=alpha, contradicted=pv < alpha))
    return tuple(out)


def _pair_orders(cells: Sequence[OnsetCell]) -> dict[tuple[int, int], int]:
    """+1 / −1 when two cells' median t_grok intervals are ordered, 0 when they overlap or
    either is missing."""
    out: dict[tuple[int, int], int] = {}
    for i, j in itertools.combinations(range(len(cells)), 2):
        a, b = cells[i].t_grok_median, cells[j].t_grok_median
        if a is None or b is None or a.lower is None or b.lower is None:
            out[(i, j)] = 0
        elif a.upper_or_inf <= b.lower and a.upper_or_inf < b.upper_or_inf:
            out[(i, j)] = 1
        elif b.upper_or_inf <= a.lower and b.upper_or_inf < a.upper_or_inf:
            out[(i, j)] = -1
        else:
            out[(i, j)] = 0
    return out


def _phase_map(rc: RunClocks, axes: Sequence[str], by: Sequence[str], level: float
               ) -> PhaseMap | None:
    """The grok rate over two ``--by`` columns; as in the cell table, a run stopped early
    (its outcome unknown) is left out of the rate's denominator."""
    if len(axes) != 2:
        return None
    a, b = axes
    f = rc.frame
    early = stopped_early(f, by)
    grok = f["grokked"].to_numpy(dtype=bool)
    cells = []
    for key, ix in f.groupby([a, b], sort=True).indices.items():
        ra, rb = key if isinstance(key, tuple) else (key, None)
        ix = np.asarray(ix)
        cells.append(PhaseCell(py(ra), py(rb),
                               wilson(int(grok[ix].sum()), int((~early[ix]).sum()), level)))
    return PhaseMap(a, b, tuple(cells))


# ------------------------------------------------------------------------------------------
# one study: the fits, then each test of them, each with its findings
# ------------------------------------------------------------------------------------------

def _study(rc: RunClocks, config: AuditConfig, by: Sequence[str], interactions: bool,
           thresholds: Sequence[float], axes: Sequence[str], level: float, seed: int,
           n_resamples: int, source: str | None) -> tuple[OnsetBody, list[Finding]]:
    f = rc.frame
    cells = _cells(rc, by, level)
    fit = _fits(f, by, interactions, level)
    left_out = ~f["grokked"].to_numpy(dtype=bool)
    lo_words = _left_out(f, by)
    findings = _censoring_findings(f, by) + _refusal_findings(f, fit)
    if fit.ols_why is not None and fit.aft_why is not None:
        # neither scaling fit: no law is tested (check's NOTHING_AUDITABLE: never a green exit)
        findings.append(finding(
            Reason.NOTHING_AUDITABLE, "study",
            f"neither scaling fit could be made ({int(f['grokked'].sum())} of {len(f)} runs "
            "grokked): the claim of a scaling law is not tested",
            evidence={"n_runs": len(f), "n_grokked": int(f["grokked"].sum()),
                      "ols": fit.ols_why, "aft": fit.aft_why}))
    comparison, fs = _comparison(f, by, interactions, fit, lo_words, level, seed, n_resamples)
    findings += fs
    sens, fs = _threshold_sensitivity(rc, config, source, by, interactions, thresholds,
                                      level, fit, cells)
    findings += fs
    checks, fs = _law_findings(f, by, interactions, fit, level)
    findings += fs
    n_left_out = int(left_out.sum())
    body = OnsetBody(
        step_unit=rc.step_unit, by=tuple(by), n_runs=len(f), cells=cells,
        phase_map=_phase_map(rc, axes, by, level),
        ols=OlsSummary(fit.ols, fit.ols_why, int((~left_out).sum()), n_left_out),
        aft=AftSummary(fit.family, fit.aft, fit.aft_why, len(f), fit.aic, fit.aft_cause,
                       fit.exact_set),
        comparison=comparison, threshold_sensitivity=sens, runs=_runs(f, by),
        left_out=lo_words, law_checks=checks)
    return body, findings


def _censoring_findings(f: pd.DataFrame, by: Sequence[str]) -> list[Finding]:
    """The runs each fit reads differently: stopped early (out of the rate, censored in the
    AFT) and grokked before logging began (an upper bound for OLS, an interval for the AFT)."""
    findings = []
    early = stopped_early(f, by)
    if early.any():
        findings.append(flag_runs(
            Reason.INSUFFICIENT_BUDGET, f, early,
            f"{int(early.sum())} runs stopped before their cell's median grok step without "
            "grokking: left out of the grok rate, not counted as failures; the AFT keeps them "
            "censored at their last step"))
    left_g = f["tg_left"].to_numpy(dtype=bool) if "tg_left" in f.columns else \
        np.zeros(len(f), dtype=bool)
    if left_g.any():
        findings.append(flag_runs(
            Reason.LEFT_CENSORED, f, left_g,
            f"{int(left_g.sum())} runs grokked before logging began: OLS reads t_grok at their "
            "first logged step (only an upper bound of it); the AFT keeps their interval "
            "(0, first step]"))
    at_start = f["grokked"].to_numpy(dtype=bool) & ~left_g & \
        (f["tg_value"].to_numpy(dtype=float) <= 0)
    if at_start.any():
        findings.append(flag_runs(
            Reason.GROKKED_AT_START, f, at_start,
            f"{int(at_start.sum())} runs were at the threshold at step 0 (generalizing before "
            "any training): log t_grok is undefined there; OLS reads them at t = 1 (ln t = 0) "
            "and the AFT as (0, 1], so a law in log t_grok rests on a value the log does not "
            "give; check the task and the threshold, or leave these runs out"))
    return findings


def _refusal_findings(f: pd.DataFrame, fit: _Fits) -> list[Finding]:
    """One finding per scaling fit refused, its cause in words and in the evidence."""
    findings = []
    for why, which in ((fit.ols_why, "ols"), (fit.aft_why, "aft")):
        if why is None:
            continue
        cause = fit.aft_cause if which == "aft" else "too_few_runs"
        msg = f"the {which} scaling fit was refused: " + _REFUSALS.get(
            cause or "", "see the evidence")
        ev: dict[str, Any] = {"fit": which, "cause": cause, "n_runs": len(f),
                              "n_grokked": int(f["grokked"].sum()),
                              "n_parameters": len(fit.names)}
        if which == "aft" and cause == "degenerate":
            msg += "; the exponents the data allow (every law that hits every run): " + \
                ", ".join(f"{e.term} {_range_words(e)}" for e in fit.exact_set)
            ev["exact_set"] = fit.exact_set
        findings.append(finding(why, "study", msg, evidence=ev))
    return findings


def _comparison(f: pd.DataFrame, by: Sequence[str], interactions: bool, fit: _Fits,
                lo_words: LeftOut, level: float, seed: int, n_resamples: int
                ) -> tuple[tuple[TermComparison, ...], list[Finding]]:
    """The two fits exponent by exponent, and the survivorship test: the bootstrap (only when
    both fits stand and OLS left runs out) and a ``SURVIVORSHIP_BIAS`` per biased term."""
    left_out = ~f["grokked"].to_numpy(dtype=bool)
    n_left_out = int(left_out.sum())
    names = fit.names
    testable = fit.ols is not None and fit.aft is not None and fit.family is not None
    diffs: tuple[BootstrapCI, ...] = ()
    if testable and n_left_out > 0:
        assert fit.family is not None
        diffs = _bootstrap_terms(f, by, interactions, names, fit.family, level, seed,
                                 n_resamples)
    k = len(names) - 1
    comparison, findings = [], []
    for i, nm in enumerate(names[1:]):
        tc = _term(nm, fit, (diffs[i], diffs[k + i]) if diffs else None, testable,
                   n_left_out)
        comparison.append(tc)
        if tc.survivorship_bias:
            findings.append(_survivorship(f, tc, fit.family, lo_words, level))
    return tuple(comparison), findings


def _term(nm: str, fit: _Fits, diffs: tuple[BootstrapCI, BootstrapCI] | None,
          testable: bool, n_left_out: int) -> TermComparison:
    """One exponent both ways; ``diffs``: the CIs of OLS − AFT and of the left-out runs'
    effect. Biased only when both exclude 0 (the module docstring)."""
    o = None if fit.ols is None else Estimate(*fit.ols.get(nm))
    a = None if fit.aft is None else Estimate(*fit.aft.get(nm))
    if not testable:
        return TermComparison(nm, o, a, None, None, None,
                              "a fit was refused: nothing to compare")
    if n_left_out == 0:
        return TermComparison(nm, o, a, None, None, None, "no run was left out of OLS: a gap "
                              "is an estimator difference, not survivorship")
    assert diffs is not None
    diff, left = diffs
    if not (diff.identified and left.identified):
        return TermComparison(nm, o, a, diff, left, None, "the bootstrap gave no interval: "
                              + (diff.note or left.note or ""))
    note = None
    if diff.excludes(0.0) and not left.excludes(0.0):
        note = ("OLS differs from the AFT, but leaving the censored runs out does "
                "not explain it (estimator or error-shape difference)")
    return TermComparison(nm, o, a, diff, left, diff.excludes(0.0) and left.excludes(0.0),
                          note)


def _survivorship(f: pd.DataFrame, tc: TermComparison, family: str | None,
                  lo_words: LeftOut, level: float) -> Finding:
    left_out = ~f["grokked"].to_numpy(dtype=bool)
    n_left_out = int(left_out.sum())
    return finding(
        Reason.SURVIVORSHIP_BIAS, "study",
        f"the exponent of {tc.term} fitted by OLS on the grokked runs only differs from the "
        f"censored {family} AFT's beyond the {level:.0%} CI of the difference, and "
        f"the {n_left_out} runs OLS left out account for it ({lo_words.words()})",
        runs=f.loc[left_out, "run"].tolist(),
        evidence={"term": tc.term, "ols": tc.ols, "aft": tc.aft, "family": family,
                  "difference": tc.difference, "left_out_effect": tc.left_out_effect,
                  "n_left_out": n_left_out, "n_runs": len(f)})


def _threshold_sensitivity(rc: RunClocks, config: AuditConfig, source: str | None,
                           by: Sequence[str], interactions: bool,
                           thresholds: Sequence[float], level: float, fit: _Fits,
                           cells: Sequence[OnsetCell]
                           ) -> tuple[tuple[ThresholdRow, ...], list[Finding]]:
    """The study redone at each grok threshold (the AFT in the family ``fit`` chose), and
    ``THRESHOLD_SENSITIVE`` when an exponent's sign or a cell ordering changes."""
    if not thresholds:
        return (), []
    rows, orders = [], []
    for t in thresholds:
        row, order = _at_threshold(rc, config, source, by, interactions, level, fit.family,
                                   float(t))
        rows.append(row)
        orders.append(order)
    signs = _signs_seen(rows, fit.names[1:])
    sign_flips = [nm for nm, s in signs.items() if len(s) > 1]
    flips = _ordering_flips(orders, cells)
    if not (sign_flips or flips):
        return tuple(rows), []
    return tuple(rows), [finding(
        Reason.THRESHOLD_SENSITIVE, "study",
        "an exponent's sign or a cell ordering changes with the grok threshold",
        evidence={"thresholds": [float(t) for t in thresholds],
                  "exponent_sign_changes": sign_flips, "ordering_flips": flips})]


def _at_threshold(rc: RunClocks, config: AuditConfig, source: str | None, by: Sequence[str],
                  interactions: bool, level: float, family: str | None, t: float
                  ) -> tuple[ThresholdRow, dict[tuple[int, int], int]]:
    """The study's runs re-clocked at grok threshold ``t``: their cells and fits, and the
    ordering of the cells' median t_grok."""
    rct = run_clocks(rc.points, replace(config, grok_threshold=t), source, rc.step_unit)
    rct = rct.subset(np.isin(rct.frame["run"], rc.frame["run"]))
    cells_t = _cells(rct, by, level)
    ft = _fits(rct.frame, by, interactions, level, family=family)
    ex = {} if ft.aft is None else {nm: ft.aft.get(nm)[0] for nm in ft.names[1:]}
    row = ThresholdRow(t, int(rct.frame["grokked"].sum()), ex, cells_t, ft.exact_set)
    return row, _pair_orders(cells_t)


def _signs_seen(rows: Sequence[ThresholdRow], terms: Sequence[str]) -> dict[str, set[int]]:
    """Each exponent's signs over the thresholds: the AFT's value where it was fitted, or,
    where it is degenerate, its range's sign when the range excludes 0."""
    signs: dict[str, set[int]] = {nm: set() for nm in terms}
    for row in rows:
        for nm, e in row.aft_exponents.items():
            if e != 0:
                signs[nm].add(1 if e > 0 else -1)
        for er in row.exact_set:
            if er.low is not None and er.low > 0:
                signs[er.term].add(1)
            elif er.high is not None and er.high < 0:
                signs[er.term].add(-1)
    return signs


def _ordering_flips(orders: Sequence[Mapping[tuple[int, int], int]],
                    cells: Sequence[OnsetCell]) -> list[dict[str, Any]]:
    """The pairs of cells ordered one way at one threshold and the other way at another."""
    flips = []
    for ij in (orders[0] if orders else {}):
        seen = {o[ij] for o in orders} - {0}
        if seen == {1, -1}:
            flips.append({"cells": [cells[ij[0]].cell, cells[ij[1]].cell]})
    return flips


def _law_findings(f: pd.DataFrame, by: Sequence[str], interactions: bool, fit: _Fits,
                  level: float) -> tuple[tuple[LawCheck, ...], list[Finding]]:
    """The chosen law against the runs it never saw grok, and ``LAW_CONTRADICTED`` when a
    cell contradicts it."""
    if fit.aft is None:
        return (), []
    checks = _law_checks(f, by, interactions, fit.aft, level)
    bad = [c for c in checks if c.contradicted]
    if not bad:
        return checks, []
    return checks, [finding(
        Reason.LAW_CONTRADICTED, "study",
        f"the {fit.family} AFT law is contradicted by {len(bad)} cell(s) it could not see "
        "grok: " + "; ".join(_check_words(c) for c in bad) + "; its exponents describe "
        "the cells that grokked, not the sweep",
        evidence={"law": fit.family, "checks": bad})]


def _runs(f: pd.DataFrame, by: Sequence[str]) -> tuple[OnsetRun, ...]:
    """Each run's clocks, by run name; the gap only where ``t_mem`` is not censored."""
    runs = []
    for r in f.sort_values("run").itertuples(index=False):
        rd = r._asdict()
        tm = Interval.make(r.tm_value, r.tm_lower, r.tm_upper)
        gap = None
        if tm is not None and not tm.censored:
            gap = Interval.make(r.tg_value - r.tm_value, r.tg_lower - r.tm_upper,
                                r.tg_upper - r.tm_lower)
        runs.append(OnsetRun(r.run, {c: py(rd[c]) for c in by},
                             tm, Interval.make(r.tg_value, r.tg_lower, r.tg_upper), gap))
    return tuple(runs)


#: Why a scaling fit was refused, by cause (the evidence's ``cause``).
_REFUSALS = {
    "too_few_runs": "no more runs than parameters + 1 (grokked runs, for OLS), or a singular "
                    "design; no coefficient is printed",
    "no_grok": "no run grokked: every time is only a lower bound, there is no scaling",
    "rank": "its exponents are not identified — the runs that grokked do not vary in every "
            "axis term (all in one cell?), and censored runs bound a slope on one side only; "
            "no coefficient is printed",
    "degenerate": "its exponents are not identified — a law with no scatter (σ → 0) puts every "
                  "run inside its logged (lower, upper] interval, so every error family's "
                  "likelihood rises without end as σ shrinks: there is no maximum, and a Wald "
                  "interval would only say where the optimizer stopped",
    "no_se": "its exponents are not identified — the likelihood is flat at its maximum (no "
             "finite standard error); no coefficient is printed",
    "no_convergence": "no error family's fit converged; no coefficient is printed",
}


def _range_words(e: ExactRange) -> str:
    """An exponent's range over the laws with no scatter, each end rounded outwards."""
    lo = "−∞" if e.low is None else outward(e.low, down=True)
    hi = "∞" if e.high is None else outward(e.high, down=False)
    return f"{'(' if e.low is None else '['}{lo}, {hi}{')' if e.high is None else ']'}"


def _check_words(c: LawCheck) -> str:
    where = ", ".join(f"{k}={v}" for k, v in c.cell.items())
    what = ("a cell beyond the horizon" if c.situation == "beyond_horizon"
            else "survivors inside a cell")
    pred = "—" if c.predicted_median is None else f"{c.predicted_median:.6g}"
    return (f"{where} ({what}: {c.n_censored}/{c.n_runs} runs never grokked by "
            f"{outward(c.horizon, 6, down=True)}; the law predicts a median {pred} and expects "
            f"{c.expected_censored:.3g} such runs, P(≥ {c.n_censored}) = "
            f"{p_text(c.p_value, c.alpha)})")


def run_onset(table: pa.Table | pd.DataFrame | LogTable, config: AuditConfig, *,
              by: Sequence[str], interactions: bool = False,
              thresholds: Sequence[float] = (), phase_map: Sequence[str] = (),
              cell: Sequence[str] = (), level: float = 0.95, seed: int = 0,
              n_resamples: int = 199, step_unit: str | None = None,
              source: str | None = None) -> ClaimResult:
    """Audit onset-scaling claims; see the module docstring. ``cell`` splits the runs into
    separate studies (``--cell``); runs sharing the ``by`` values but differing in another
    condition are refused (``DUPLICATE_AXIS_VALUES``) unless ``cell`` separates them."""
    if not by:
        raise LogFormatError(f"onset needs {param_value('by', 'COL[,COL]')} (the "
                             "hyperparameters of the scaling fit)", path=source, param="by",
                             code=ErrorCode.INVALID_OPTION)
    rc = run_clocks(table, config, source, step_unit)
    design = Design.validate(rc.log, axes=[Axis(c, positive=True) for c in by], cell=cell,
                             what="the scaling fit")
    axes = list(phase_map) or (list(by[:2]) if len(by) >= 2 else [])
    for c in axes:
        if c not in by:
            raise LogFormatError(f"{param_name('phase_map')} column {c!r} is not a "
                                 f"{param_name('by')} column; the map shows the cells of the "
                                 "fit", path=source, column=c, param="phase_map",
                                 code=ErrorCode.INVALID_OPTION)
    if axes and len(axes) != 2:
        raise LogFormatError(f"{param_name('phase_map')} takes two {param_name('by')} columns: "
                             "ROW,COL", path=source, param="phase_map",
                             code=ErrorCode.INVALID_OPTION)
    out = []
    for key, rcs in studies(rc, design):
        for c in by:
            if rcs.frame[c].nunique() < 2:
                raise LogFormatError(f"{param_name('by')} column {c!r} has a single value "
                                     f"({py(rcs.frame[c].iloc[0])!r}){_in(key)}; a scaling fit "
                                     "needs it to vary", path=source, column=c, param="by",
                                     code=ErrorCode.NO_AXIS)
        body, fs = _study(rcs, config, by, interactions, thresholds, axes, level, seed,
                          n_resamples, source)
        out.append((key, body, fs))
    params = {"by": list(by), "interactions": interactions, "cell": list(cell),
              "thresholds": [float(t) for t in thresholds], "phase_map": axes, "level": level,
              "seed": seed, "n_resamples": n_resamples, "step_unit": rc.step_unit}
    return rc.result("onset", config, params, out)


def _in(key: Mapping[str, Any]) -> str:
    shown = ", ".join(f"{safe(str(k))}={format_value(v) if v == v and v != '' else '(missing)'}"
                      for k, v in key.items())
    return f" in the study {shown}" if key else ""
