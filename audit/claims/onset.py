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
from ..errors import ErrorCode, LogFormatError
from ..reasons import Reason
from ..results import Finding, Interval
from ..schema import LogTable
from .results import ClaimResult, Record, finding, make_result
from .runs import RunClocks, py, require_columns, run_clocks, studies
from .stats import BootstrapCI, LinearFit, Proportion, bootstrap, ols, wilson
from .survival import FAMILIES, AFTFit, aft, fit_families

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
    grok_rate: Proportion
    t_grok_median: Interval | None
    gap_median: Interval | None
    n_gap: int  #: runs with a gap (they memorized)


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
    aic: dict[str, float | None] = {f: None for f in FAMILIES}
    chosen = None
    if len(frame) <= p + 1 or np.linalg.matrix_rank(X) < p:
        aft_why = Reason.TOO_FEW_RUNS
    elif not g.any():
        aft_why = Reason.FIT_FAILED  # every run censored: only a lower bound, no scaling
    else:
        lo, up = _aft_bounds(frame)
        if family is None:
            fits, chosen = fit_families(X, lo, up, names, level)
            aic = {f: (fits[f].aic if fits[f].converged else None) for f in FAMILIES}
        else:
            fits = {family: aft(X, lo, up, names, level, family=family)}
            chosen = family if fits[family].converged else None
            aic[family] = fits[family].aic if chosen else None
        if chosen is None:
            aft_why = Reason.FIT_FAILED
        else:
            aft_fit = fits[chosen]
    return _Fits(names, ols_fit, ols_why, aft_fit, aft_why, chosen, aic)


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
    for key, ix in f.groupby(list(by), sort=True).indices.items():
        key_t = key if isinstance(key, tuple) else (key,)
        rows = np.asarray(ix, dtype=np.int64)
        g = f.iloc[rows]
        k = int(g["grokked"].sum())
        out.append(OnsetCell(
            cell={c: py(v) for c, v in zip(by, key_t)},
            runs=tuple(sorted(g["run"].tolist())), n_runs=len(rows), n_grokked=k,
            grok_rate=wilson(k, len(rows), level),
            t_grok_median=rc.median("t_grok", rows),
            gap_median=rc.median("gap", rows) if mem[rows].any() else None,
            n_gap=int(mem[rows].sum())))
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


def _phase_map(rc: RunClocks, axes: Sequence[str], level: float) -> PhaseMap | None:
    if len(axes) != 2:
        return None
    a, b = axes
    f = rc.frame
    cells = []
    for (ra, rb), g in f.groupby([a, b], sort=True):
        cells.append(PhaseCell(py(ra), py(rb),
                               wilson(int(g["grokked"].sum()), len(g), level)))
    return PhaseMap(a, b, tuple(cells))


# ------------------------------------------------------------------------------------------
# one study
# ------------------------------------------------------------------------------------------

def _study(rc: RunClocks, config: AuditConfig, by: Sequence[str], interactions: bool,
           thresholds: Sequence[float], axes: Sequence[str], level: float, seed: int,
           n_resamples: int, source: str | None) -> tuple[OnsetBody, list[Finding]]:
    f = rc.frame
    findings: list[Finding] = []
    cells = _cells(rc, by, level)
    fit = _fits(f, by, interactions, level)
    names = fit.names
    left_out = ~f["grokked"].to_numpy(dtype=bool)
    n_left_out = int(left_out.sum())
    for why, which in ((fit.ols_why, "ols"), (fit.aft_why, "aft")):
        if why is not None:
            findings.append(finding(why, "study", f"the {which} scaling fit was refused",
                                    evidence={"fit": which, "n_runs": len(f),
                                              "n_grokked": int(f["grokked"].sum()),
                                              "n_parameters": len(names)}))

    # -- the two fits, exponent by exponent, and the survivorship test ---------------------
    diffs: tuple[BootstrapCI, ...] = ()
    testable = fit.ols is not None and fit.aft is not None and fit.family is not None
    if testable and n_left_out > 0:
        assert fit.family is not None
        diffs = _bootstrap_terms(f, by, interactions, names, fit.family, level, seed,
                                 n_resamples)
    comparison = []
    k = len(names) - 1
    for i, nm in enumerate(names[1:]):
        o = a = None
        if fit.ols is not None:
            o = Estimate(*fit.ols.get(nm))
        if fit.aft is not None:
            a = Estimate(*fit.aft.get(nm))
        diff = left = None
        biased: bool | None = None
        note = None
        if not testable:
            note = "a fit was refused: nothing to compare"
        elif n_left_out == 0:
            note = "no run was left out of OLS: a gap is an estimator difference, not survivorship"
        else:
            diff, left = diffs[i], diffs[k + i]
            if not (diff.identified and left.identified):
                note = "the bootstrap gave no interval: " + (diff.note or left.note or "")
            else:
                biased = diff.excludes(0.0) and left.excludes(0.0)
                if diff.excludes(0.0) and not left.excludes(0.0):
                    note = ("OLS differs from the AFT, but leaving the censored runs out does "
                            "not explain it (estimator or error-shape difference)")
        comparison.append(TermComparison(nm, o, a, diff, left, biased, note))
        if biased:
            assert diff is not None and left is not None
            findings.append(finding(
                Reason.SURVIVORSHIP_BIAS, "study",
                f"the exponent of {nm} fitted by OLS on the grokked runs only differs from the "
                f"censored {fit.family} AFT's beyond the {level:.0%} CI of the difference, and "
                f"the {n_left_out} runs OLS left out account for it",
                runs=f.loc[left_out, "run"].tolist(),
                evidence={"term": nm, "ols": o, "aft": a, "family": fit.family,
                          "difference": diff, "left_out_effect": left,
                          "n_left_out": n_left_out, "n_runs": len(f)}))

    # -- threshold sensitivity --------------------------------------------------------------
    sens: list[ThresholdRow] = []
    if thresholds:
        signs: dict[str, set[int]] = {nm: set() for nm in names[1:]}
        orders_by_t = []
        for t in thresholds:
            rct = run_clocks(rc.log, replace(config, grok_threshold=float(t)), source,
                             rc.step_unit)
            rct = rct.subset(np.isin(rct.frame["run"], f["run"]))
            cells_t = _cells(rct, by, level)
            ft = _fits(rct.frame, by, interactions, level, family=fit.family)
            ex = {}
            if ft.aft is not None:
                for nm in names[1:]:
                    e = ft.aft.get(nm)[0]
                    ex[nm] = e
                    if e != 0:
                        signs[nm].add(1 if e > 0 else -1)
            orders_by_t.append(_pair_orders(cells_t))
            sens.append(ThresholdRow(float(t), int(rct.frame["grokked"].sum()), ex, cells_t))
        flips = []
        for ij in (orders_by_t[0] if orders_by_t else {}):
            seen = {o[ij] for o in orders_by_t} - {0}
            if seen == {1, -1}:
                flips.append({"cells": [cells[ij[0]].cell, cells[ij[1]].cell]})
        sign_flips = [nm for nm, s in signs.items() if len(s) > 1]
        if sign_flips or flips:
            findings.append(finding(
                Reason.THRESHOLD_SENSITIVE, "study",
                "an exponent's sign or a cell ordering changes with the grok threshold",
                evidence={"thresholds": [float(t) for t in thresholds],
                          "exponent_sign_changes": sign_flips, "ordering_flips": flips}))

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
    body = OnsetBody(
        step_unit=rc.step_unit, by=tuple(by), n_runs=len(f), cells=cells,
        phase_map=_phase_map(rc, axes, level),
        ols=OlsSummary(fit.ols, fit.ols_why, int((~left_out).sum()), n_left_out),
        aft=AftSummary(fit.family, fit.aft, fit.aft_why, len(f), fit.aic),
        comparison=tuple(comparison), threshold_sensitivity=tuple(sens), runs=tuple(runs))
    return body, findings


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
        raise LogFormatError("onset needs --by COL[,COL] (the hyperparameters of the scaling "
                             "fit)", path=source, column="--by", code=ErrorCode.INVALID_OPTION)
    rc = run_clocks(table, config, source, step_unit)
    require_columns(rc, by, "--by", positive=True)
    axes = list(phase_map) or (list(by[:2]) if len(by) >= 2 else [])
    for c in axes:
        if c not in by:
            raise LogFormatError(f"--phase-map column {c!r} is not a --by column; the map "
                                 "shows the cells of the fit", path=source, column=c,
                                 code=ErrorCode.INVALID_OPTION)
    if axes and len(axes) != 2:
        raise LogFormatError("--phase-map takes two --by columns: ROW,COL", path=source,
                             column="--phase-map", code=ErrorCode.INVALID_OPTION)
    out = []
    for key, rcs in studies(rc, cell, by, source, "the scaling fit"):
        for c in by:
            if rcs.frame[c].nunique() < 2:
                raise LogFormatError(f"--by column {c!r} has a single value "
                                     f"({py(rcs.frame[c].iloc[0])!r}){_in(key)}; a scaling fit "
                                     "needs it to vary", path=source, column=c,
                                     code=ErrorCode.NO_AXIS)
        body, fs = _study(rcs, config, by, interactions, thresholds, axes, level, seed,
                          n_resamples, source)
        out.append((key, body, fs))
    params = {"by": list(by), "interactions": interactions, "cell": list(cell),
              "thresholds": [float(t) for t in thresholds], "phase_map": axes, "level": level,
              "seed": seed, "n_resamples": n_resamples, "step_unit": rc.step_unit}
    return make_result("onset", params=params, config=config.to_dict(),
                       input=rc.log.summary.to_dict(), studies=out, fail_on=config.fail_on)


def _in(key: Mapping[str, Any]) -> str:
    return f" in the study {dict(key)}" if key else ""
