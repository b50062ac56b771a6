"""``grokaudit dose``: dose–response laws and mediation (CLAIMS_SPEC, seed 000).

Per cell along the dose axis ``x`` (``--by rho``): the core's censoring-aware median ``t_grok``
(the interval ``[median(L), median(U)]`` with the median of the logged grok steps; only the
lower bound when half or more of the runs never grokked) and a seeded bootstrap CI over seeds.
Cells whose median is censored cannot enter a fit (``MEDIAN_CENSORED``), nor can cells outside
``--fit-range`` (``OUTSIDE_FIT_RANGE``).

On the same response ``ln T`` and the same cells, three laws are fitted by least squares:

- exponential ``ln T = c + α·x``;
- power law ``ln T = c + β·ln x``;
- saddle-node ``T = A·|x₀ − x|^(−1/2)``, i.e. ``ln T = ln A − ½·ln|x₀ − x|`` with ``x₀`` beyond
  the fitted cells (on the side where ``T`` grows);

and compared by AICc (each has ``k = 3`` parameters, counting the residual variance). ΔAICc is
reported for every pair; ``MODELS_INDISTINGUISHABLE`` when the best beats the runner-up by less
than 2 — never call that a law. One seeded stratified bootstrap (seeds resampled within each
cell, every law refitted) gives the winning law's key parameter (``α``, ``β`` or ``x₀``) a CI
and every law's predicted median at the censored cells it left out. A resample in which a
fitted cell's median turns censored is never dropped: it counts where that cell pushes each
quantity (an open end; ``x₀`` → that cell's dose for the saddle-node), or at both ends where
the way is not known.

Each censored cell then tests each law, run by run: under the law at the upper end of its
predicted median's bootstrap interval (the end most favourable to it), a run at that dose is
still ungrokked at its last step with probability ``p`` (the share of the fitted cells' runs
lying at least that far above the law, one added to count and total, a censored run counted
as above), and the cell's number of censored runs is Poisson-binomial. The law is contradicted
when ``P(K ≥ k) < (1 − level)/m`` (Bonferroni over the ``m`` cells checked) —
``LAW_CONTRADICTED`` when it is the winning law. With no bootstrap interval of the prediction
(``basis = point``) a cell is not checked.

Mediation (``--mediator``, ``--baseline``, ``--raised``, ``--sweep``): the recovery fraction
``(T₁ − T₂)/(T₁ − T₀)``, ``T₂`` read where the mediator equals its baseline value along the sweep
(linear interpolation; refused with ``MEDIATOR_OUT_OF_RANGE`` outside the swept range), with a
paired bootstrap over seeds; and the data-collapse check: ``R²`` of ``ln T`` on the mediator
alone, then with the dose added, and the increment.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
from scipy import optimize

from ..config import AuditConfig
from ..design import Axis, Design
from ..errors import ConfigError, ErrorCode, LogFormatError, param_name, param_value
from ..reasons import Reason, Severity
from ..results import Finding, Interval
from ..schema import LogTable
from ..text import format_value, safe
from .results import ClaimResult, Record, finding, outward, p_text
from .runs import RunClocks, py, run_clocks, studies
from .stats import BootstrapCI, Split, aicc, bootstrap, ols, poisson_binomial_tail

MODELS = ("exponential", "power", "saddle_node")
KEY_PARAM = {"exponential": "alpha", "power": "beta", "saddle_node": "x0"}
K_PARAMS = 3


# ------------------------------------------------------------------------------------------
# the body
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class DoseCell(Record):
    x: Any
    runs: tuple[str, ...]
    n_runs: int
    n_grokked: int
    median_t_grok: Interval | None  #: censored: only its lower bound is known
    median_ci: BootstrapCI | None  #: None for a censored median (a bound has no CI)
    in_fit: bool
    #: ``censored`` (only a lower bound), ``interval`` (a median known only as an interval:
    #: ``≤300``, ``(490, 700]``), ``at_start`` (a median at step 0: no ln T) or
    #: ``outside_fit_range``
    left_out: str | None


@dataclass(frozen=True)
class CensoredCheck(Record):
    """A law against one censored cell it left out (the cell's median exceeds ``bound``),
    run by run: under the law at the end of its prediction's bootstrap interval most
    favourable to it, the probability of at least ``n_censored`` of the cell's ``n_runs``
    runs still ungrokked at their last steps."""

    x: Any
    bound: float
    predicted: float | None  #: the law's median T at x (None: beyond x₀, no grok predicted)
    #: the upper bootstrap limit of that median (None: unbounded, or no interval)
    predicted_high: float | None
    #: ``bootstrap`` (checked at the upper limit) or ``point`` (no bootstrap interval of the
    #: prediction: not checked, never contradicted)
    basis: str
    contradicted: bool
    n_runs: int = 0
    n_censored: int = 0
    horizon: float | None = None  #: the median last step of the cell's censored runs
    #: per run, P(still ungrokked at its last step) under the law at ``predicted_high``: the
    #: mean over the cell's runs (None: not checked)
    p_run: float | None = None
    expected_censored: float | None = None
    p_value: float | None = None  #: P(K ≥ n_censored), K Poisson-binomial (None: not checked)
    alpha: float | None = None  #: the level it is judged at (Bonferroni over cells checked)
    note: str | None = None  #: why it was not checked


@dataclass(frozen=True)
class LawFit(Record):
    model: str
    params: Mapping[str, float] | None
    rss: float | None
    aicc: float | None
    refused: str | None
    censored_checks: tuple[CensoredCheck, ...]

    @property
    def contradicted(self) -> bool:
        return any(c.contradicted for c in self.censored_checks)


@dataclass(frozen=True)
class DeltaAicc(Record):
    models: tuple[str, str]
    delta_aicc: float


@dataclass(frozen=True)
class KeyParameter(Record):
    name: str
    ci: BootstrapCI
    #: resamples in which a fitted cell's median turned censored: each counted where that
    #: cell pushes the parameter (an open end; for the saddle-node's x₀ that cell's dose),
    #: or at both ends when the way is not known (``n_both_ends``)
    n_resamples_censored: int = 0
    n_both_ends: int = 0  #: of those, counted at both ends (−∞ low, +∞ high)
    n_dropped: int = 0  #: resamples that gave no value (dropped), of ``ci.n_resamples``


@dataclass(frozen=True)
class SweepPoint(Record):
    value: float
    mediator_median: float | None
    t_grok_median: float | None  #: None when censored there


@dataclass(frozen=True)
class Collapse(Record):
    n_runs: int
    n_left_out: int  #: runs in the design that never grokked (no ln T)
    r2_mediator: float | None
    r2_mediator_dose: float | None
    increment: float | None


@dataclass(frozen=True)
class Mediation(Record):
    mediator: str
    baseline: Mapping[str, Any]
    raised: Mapping[str, Any]
    sweep: str
    T0: Interval | None
    T1: Interval | None
    M0: float | None
    T2: float | None
    sweep_at: float | None
    recovery: float | None
    recovery_ci: BootstrapCI | None
    sweep_points: tuple[SweepPoint, ...]
    collapse: Collapse


@dataclass(frozen=True)
class DoseBody(Record):
    step_unit: str
    by: str
    n_runs: int
    cells: tuple[DoseCell, ...]
    fit_range: tuple[float, float] | None
    fit_cells: tuple[Any, ...]
    fits: tuple[LawFit, ...]
    delta_aicc: tuple[DeltaAicc, ...]
    best: str | None
    runner_up: str | None
    identified: bool
    key_parameter: KeyParameter | None
    mediation: Mediation | None

    def fit(self, model: str) -> LawFit | None:
        return next((f for f in self.fits if f.model == model), None)


# ------------------------------------------------------------------------------------------
# the three laws
# ------------------------------------------------------------------------------------------

def _linear(u: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """``y = c + a·u`` by least squares, fitted on ``u`` centred and scaled (the answer does
    not depend on the units of ``u``: doses of 1e300 left the intercept's column below the
    solver's cut-off, and the slope fit alone)."""
    lo, hi = (float(u.min()), float(u.max())) if u.size else (0.0, 0.0)
    m = lo / 2 + hi / 2  # (no sum or square: doses of 1e300 or 1e-300 stay in range)
    sd = hi / 2 - lo / 2
    sd = sd if sd > 0 and math.isfinite(sd) else 1.0
    z = (u - m) / sd
    A = np.column_stack((np.ones_like(z), z))
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    r = y - A @ coef
    a = float(coef[1]) / sd
    return float(coef[0]) - a * m, a, float(r @ r)


def _saddle(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float] | None:
    """Best ``(ln A, x₀, RSS)`` of ``y = ln A − ½ ln|x₀ − x|`` over both sides of the data,
    searched on the doses scaled to [0, 1] (the units do not change the fit)."""
    lo = float(x.min())
    span = float(x.max() - lo) or 1.0
    fit = _saddle_unit((x - lo) / span, y)
    if fit is None:
        return None
    lnA, x0, rss = fit
    # |x₀ − x| = span·|x₀' − x'|: ln A moves by ½ ln span
    return lnA + 0.5 * math.log(span), lo + span * x0, rss


def _saddle_unit(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float] | None:
    """:func:`_saddle` on doses spanning [0, 1]."""
    span = float(x.max() - x.min()) or 1.0
    best = None
    for side in (1, -1):
        edge = x.max() if side > 0 else x.min()

        def rss(log_gap: float, side: int = side, edge: float = edge) -> float:
            x0 = edge + side * math.exp(log_gap)
            u = -0.5 * np.log(np.abs(x0 - x))
            a = float(np.mean(y - u))
            r = y - a - u
            return float(r @ r)

        res = optimize.minimize_scalar(rss, bounds=(math.log(1e-6 * span),
                                                    math.log(1e3 * span)), method="bounded",
                                       options={"xatol": 1e-10})
        x0 = edge + side * math.exp(res.x)
        u = -0.5 * np.log(np.abs(x0 - x))
        a = float(np.mean(y - u))
        cand = (a, float(x0), float(res.fun))
        if best is None or cand[2] < best[2]:
            best = cand
    return best


def fit_laws(x: np.ndarray, lnT: np.ndarray) -> dict[str, dict[str, Any]]:
    """Fit the three laws to ``(x, ln T)``; each entry has its parameters, RSS and AICc."""
    n = int(x.size)
    out: dict[str, dict[str, Any]] = {}
    c, a, r = _linear(x, lnT)
    out["exponential"] = {"params": {"c": c, "alpha": a}, "rss": r}
    if np.all(x > 0):
        c, b, r = _linear(np.log(x), lnT)
        out["power"] = {"params": {"c": c, "beta": b}, "rss": r}
    else:
        out["power"] = {"params": None, "rss": None, "refused": "x ≤ 0: ln x undefined"}
    s = _saddle(x, lnT) if n >= 3 else None
    if s:
        side = 1.0 if s[1] > x.max() else -1.0
        out["saddle_node"] = {"params": {"lnA": s[0], "x0": s[1]}, "rss": s[2], "side": side}
    else:
        out["saddle_node"] = {"params": None, "rss": None, "refused": "fewer than 3 cells"}
    # residuals at the rounding of ln T are no evidence: two laws that both fit exactly (a
    # flat response, which the exponential and power laws each fit with slope 0) tie, never
    # ranked by which one's rounding happened to be smaller
    noise = n * (64 * np.finfo(float).eps * max(1.0, float(np.max(np.abs(lnT)))
                                                if n else 1.0)) ** 2
    for m in out.values():
        m["aicc"] = aicc(max(m["rss"], noise), n, K_PARAMS) if m["rss"] is not None else None
    return out


def predict(fits: Mapping[str, Mapping[str, Any]], model: str, x: float) -> float:
    """The law's ``ln T`` at ``x``; ``+inf`` at or beyond a saddle-node's ``x₀`` (no grok)."""
    f = fits[model]
    p = f["params"]
    if p is None:
        return math.nan
    if model == "exponential":
        return float(p["c"] + p["alpha"] * x)
    if model == "power":
        return float(p["c"] + p["beta"] * math.log(x)) if x > 0 else math.nan
    if (x - p["x0"]) * f["side"] >= 0:
        return math.inf
    return float(p["lnA"] - 0.5 * math.log(abs(p["x0"] - x)))


def _beyond(x: np.ndarray, meds: np.ndarray, best: str, xc: Sequence[float]) -> Split:
    """The statistic of :func:`_bootstrap_laws` for a resample in which some fitted cells
    have a censored median (``meds`` infinite there: ln T beyond every finite value): the
    best law's key parameter and each law's prediction at the censored cells ``xc``, each as
    the limit its fit reaches as those cells' ln T grows without bound.

    - exponential and power laws (least squares, linear in ``u = x`` or ``ln x``): the slope
      and a prediction move with the sign of each such cell's leverage — ``±inf`` (an open
      end) when every such cell pushes the same way;
    - saddle-node: a single such cell at the edge of the fitted doses draws ``x₀`` onto it
      (``x₀`` → its dose; ``ln A`` from the other cells, so each prediction has its limit:
      ``+inf``, no grok, at or beyond it);
    - otherwise the way is not known: the resample counts at both ends (``−inf`` for the
      lower end, ``+inf`` for the upper) — never dropped."""
    cens = ~np.isfinite(meds)
    both = (-math.inf, math.inf)

    def way(u: np.ndarray, at: float | None) -> tuple[float, float]:
        d = u - u.mean()
        suu = float(np.sum(d * d))
        if suu == 0:
            return both
        lev = d[cens] / suu if at is None else 1.0 / u.size + (at - u.mean()) * d[cens] / suu
        signs = set(np.sign(lev).tolist()) - {0.0}
        if len(signs) != 1:
            return both
        v = signs.pop() * math.inf
        return (v, v)

    us = {"exponential": x.astype(float), "power": np.log(np.maximum(x.astype(float), 1e-300))}
    idx = np.flatnonzero(cens)
    limit = None  # the saddle-node's limit: (ln A, x₀, side)
    if idx.size == 1 and x.size >= 3 and x[idx[0]] in (x.max(), x.min()):
        c = float(x[idx[0]])
        side = 1.0 if c == x.max() else -1.0
        ok = ~cens
        a = float(np.mean(np.log(np.maximum(meds[ok], 1.0)) + 0.5 * np.log(np.abs(c - x[ok]))))
        limit = (a, c, side)
    lo: list[float] = []
    hi: list[float] = []

    def put(v: tuple[float, float]) -> None:
        lo.append(v[0])
        hi.append(v[1])

    if best in us:
        put(way(us[best], None))
    else:
        put((limit[1], limit[1]) if limit is not None else both)
    for m in MODELS:
        for xv in xc:
            if m == "saddle_node":
                if limit is None:
                    put(both)
                elif (xv - limit[1]) * limit[2] >= 0:
                    put((math.inf, math.inf))  # at or beyond x₀: no grok
                else:
                    v = limit[0] - 0.5 * math.log(abs(limit[1] - xv))
                    put((v, v))
            elif m == "power" and xv <= 0:
                put((math.nan, math.nan))
            else:
                put(way(us[m], xv if m == "exponential" else math.log(xv)))
    return Split(np.asarray(lo, dtype=float), np.asarray(hi, dtype=float))


def _key(fits: Mapping[str, Mapping[str, Any]], model: str) -> float:
    p = fits[model]["params"]
    return math.nan if p is None else float(p[KEY_PARAM[model]])


# ------------------------------------------------------------------------------------------
# cells
# ------------------------------------------------------------------------------------------

def _t_values(f: pd.DataFrame) -> np.ndarray:
    """Each run's logged grok step, ``+inf`` when it never grokked (ranked last)."""
    return np.where(f["grokked"].to_numpy(dtype=bool), f["tg_value"].to_numpy(dtype=float),
                    np.inf)


def _cell_rows(rc: RunClocks, by: str) -> list[tuple[Any, np.ndarray]]:
    return [(py(x), np.asarray(rows)) for x, rows in
            rc.frame.groupby(by, sort=True).indices.items()]


def _median_ci(tv: np.ndarray, rows: np.ndarray, level: float, seed: int, B: int
               ) -> BootstrapCI:
    (ci,) = bootstrap([rows], lambda ix: float(np.median(tv[ix])), seed=seed, level=level,
                      n_resamples=B, label="seeds")
    return ci


# ------------------------------------------------------------------------------------------
# mediation
# ------------------------------------------------------------------------------------------

def _match(f: pd.DataFrame, spec: Mapping[str, Any]) -> np.ndarray:
    m = np.ones(len(f), dtype=bool)
    for k, v in spec.items():
        col = f[k]
        if pd.api.types.is_numeric_dtype(col) and isinstance(v, (int, float)):
            m &= np.isclose(col.to_numpy(dtype=float), float(v))
        else:
            m &= (col.astype(str) == str(v)).to_numpy()
    return m


def _mediator_values(rc: RunClocks, mediator: str, source: str | None) -> np.ndarray:
    """Per run: the mediator condition, or the median of the mediator series up to t_grok
    (up to the log's end for a run that never grokked)."""
    f = rc.frame
    if mediator in rc.log.conditions.columns:
        return f[mediator].to_numpy(dtype=float)
    if mediator not in rc.log.series:
        # in neither: a misspelling, named as check names a misspelt --metric
        raise LogFormatError(f"{param_name('mediator')} column {safe(mediator)!r} is not in the "
                             "log (neither a condition nor a per-step column)", path=source,
                             column=mediator, param="mediator", code=ErrorCode.METRIC_NOT_FOUND)
    from ..clocks import pack

    pos = rc.pos
    # per run of the log: the grok step's upper end (NaN: a run of another study, not used)
    tg = np.full(rc.log.n_runs, np.nan)
    tg[pos] = f["tg_upper"].to_numpy(dtype=float)

    def medians(log: LogTable, runs: slice) -> np.ndarray:
        P = pack(log.series[mediator], log)
        use = P.valid & (P.steps <= tg[runs][:, None])
        with np.errstate(all="ignore"):
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out: np.ndarray = np.nanmedian(np.where(use, P.values, np.nan), axis=1)
                return out

    values: np.ndarray = rc.per_run(medians, f"mediator {mediator}")[pos]
    return values


def _recovery(f: pd.DataFrame, med: np.ndarray, base: np.ndarray, raised: np.ndarray,
              sweep_rows: np.ndarray, sweep: str, w: np.ndarray) -> dict[str, Any]:
    """Recovery fraction from runs weighted by ``w`` (bootstrap multiplicities); medians of
    the logged grok steps, a censored run ranked last (a censored median is ``inf``)."""
    tv = _t_values(f)

    def wmed(mask: np.ndarray, v: np.ndarray) -> float:
        vals = np.repeat(v[mask], w[mask])
        return float(np.median(vals)) if vals.size else math.nan

    T0, T1, M0 = wmed(base, tv), wmed(raised, tv), wmed(base, med)
    pts = []
    for sv in sorted(f.loc[sweep_rows, sweep].unique()):
        m = sweep_rows & (f[sweep] == sv).to_numpy()
        pts.append((float(sv), wmed(m, med), wmed(m, tv)))
    out: dict[str, Any] = {"T0": T0, "T1": T1, "M0": M0, "T2": None, "sweep_at": None,
                           "recovery": None, "sweep": pts}
    for (s1, m1, t1), (s2, m2, t2) in zip(pts, pts[1:]):
        if not (math.isfinite(m1) and math.isfinite(m2)):
            continue
        if (m1 - M0) * (m2 - M0) <= 0 and m1 != m2:
            if not (math.isfinite(t1) and math.isfinite(t2)):
                return out
            fr = (M0 - m1) / (m2 - m1)
            out["sweep_at"] = s1 + fr * (s2 - s1)
            out["T2"] = math.exp(math.log(t1) + fr * (math.log(t2) - math.log(t1)))
            break
    if out["T2"] is not None and math.isfinite(T0) and math.isfinite(T1) and T1 != T0:
        out["recovery"] = (T1 - out["T2"]) / (T1 - T0)
    return out


def _mediation(rc: RunClocks, mediator: str, baseline: Mapping[str, Any],
               raised: Mapping[str, Any], sweep: str, dose: str, level: float, seed: int,
               B: int, source: str | None) -> tuple[Mediation, list[Finding]]:
    f = rc.frame
    med = _mediator_values(rc, mediator, source)
    base = _match(f, baseline)
    rai = _match(f, raised)
    sweep_spec = {k: v for k, v in raised.items() if k != sweep}
    sweep_rows = _match(f, sweep_spec)
    if not base.any() or not rai.any():
        raise LogFormatError(f"{param_name('baseline')} {dict(baseline)} or "
                             f"{param_name('raised')} {dict(raised)} matches no run",
                             path=source, param="baseline", code=ErrorCode.UNKNOWN_VALUE)
    if (sweep_rows & base).any():
        # the sweep passes through the baseline cell, where the mediator is M0 by definition:
        # T₂ would be T₀ and the recovery 1 by construction
        shown = ",".join(f"{safe(str(k))}={v}" for k, v in baseline.items())
        raise LogFormatError(f"{param_name('sweep')} {sweep!r} runs through the baseline cell "
                             f"{shown}: the mediator has its baseline value there by "
                             "definition, so the recovery would be 1 by construction; sweep a "
                             "column at the raised dose, away from the baseline (--baseline "
                             "rho=1,tau=1 --raised rho=1.15,tau=1 --sweep tau)", path=source,
                             column=sweep, param="sweep", code=ErrorCode.INVALID_OPTION)
    findings: list[Finding] = []
    w = np.ones(len(f), dtype=np.int64)
    est = _recovery(f, med, base, rai, sweep_rows, sweep, w)
    ci = None
    if est["recovery"] is None:
        findings.append(finding(
            Reason.MEDIATOR_OUT_OF_RANGE, "study",
            f"the mediator's baseline value is not reached along the {sweep} sweep (or T is "
            "censored there): T₂ cannot be read",
            evidence={"M0": est["M0"], "sweep": est["sweep"]}))
    elif "seed" in f.columns:
        seeds = np.array(sorted(f["seed"].unique(), key=str), dtype=object)
        sidx = pd.Index(seeds).get_indexer(f["seed"])

        def stat(ix: np.ndarray) -> float | None:
            cnt = np.bincount(ix, minlength=seeds.size)
            r = _recovery(f, med, base, rai, sweep_rows, sweep, cnt[sidx])["recovery"]
            return None if r is None else float(r)

        (ci,) = bootstrap(seeds.size, stat, seed=seed, level=level, n_resamples=B,
                          label="paired over seeds")
    # data collapse: ln T on the mediator, then with the dose (grokked runs: ln T needs one)
    design = (base | rai | sweep_rows) & np.isfinite(med)
    used = design & f["grokked"].to_numpy()
    y = np.log(f.loc[used, "tg_value"].to_numpy(dtype=float))
    collapse = Collapse(int(used.sum()), int((design & ~used).sum()), None, None, None)
    if used.sum() >= 4 and dose in f.columns:
        m = med[used]
        d = f.loc[used, dose].to_numpy(dtype=float)
        f1 = ols(np.column_stack((np.ones_like(m), m)), y, ["intercept", mediator])
        f2 = ols(np.column_stack((np.ones_like(m), m, d)), y, ["intercept", mediator, dose])
        collapse = Collapse(collapse.n_runs, collapse.n_left_out, f1.r2, f2.r2,
                            None if f1.r2 is None or f2.r2 is None else f2.r2 - f1.r2)
    T0 = rc.median("t_grok", np.flatnonzero(base))
    T1 = rc.median("t_grok", np.flatnonzero(rai))
    return Mediation(
        mediator=mediator, baseline=dict(baseline), raised=dict(raised), sweep=sweep,
        T0=T0, T1=T1, M0=est["M0"], T2=est["T2"], sweep_at=est["sweep_at"],
        recovery=est["recovery"], recovery_ci=ci,
        sweep_points=tuple(SweepPoint(s, m, t if math.isfinite(t) else None)
                           for s, m, t in est["sweep"]),
        collapse=collapse), findings


# ------------------------------------------------------------------------------------------
# one study: the cells, the three laws fitted and compared, each tested, with its findings
# ------------------------------------------------------------------------------------------

class _Cells(NamedTuple):
    """The dose cells and which of them each step reads."""

    cells: list[DoseCell]
    rows: list[np.ndarray]  #: each cell's rows of the frame
    fit_idx: list[int]  #: the cells in the fit
    cens_idx: list[int]  #: the censored cells inside the fit range: the laws' checks
    outside: list[Any]  #: the doses outside the fit range


class _Fitted(NamedTuple):
    """The three laws fitted to the cells in the fit."""

    x: np.ndarray  #: the fitted cells' doses
    xc: list[float]  #: the censored cells' doses (``_Cells.cens_idx``)
    bounds: list[float]  #: the bound each of those cells' median exceeds
    fits: dict[str, dict[str, Any]]  #: :func:`fit_laws` (empty with fewer than 3 cells)
    scored: list[str]  #: the laws with an AICc, the smallest first


class _Laws(NamedTuple):
    """The laws compared: ΔAICc, the best and the runner-up, the best law's key parameter
    and every law's checks against the censored cells."""

    delta: tuple[DeltaAicc, ...]
    best: str | None
    runner_up: str | None
    key_parameter: KeyParameter | None
    checks: dict[str, list[CensoredCheck]]


def _study(rc: RunClocks, by: str, fit_range: tuple[float, float] | None, level: float,
           seed: int, n_resamples: int, mediator: str | None,
           baseline: Mapping[str, Any] | None, raised: Mapping[str, Any] | None,
           sweep: str | None, source: str | None) -> tuple[DoseBody, list[Finding]]:
    findings: list[Finding] = []
    mediation = None
    if mediator is not None:
        assert baseline and raised and sweep
        mediation, mf = _mediation(rc, mediator, baseline, raised, sweep, by, level, seed,
                                   n_resamples, source)
        findings.extend(mf)
        # the dose-response law is read on the dose axis with the other conditions at baseline
        others = {k: v for k, v in baseline.items() if k != by}
        rc = rc.subset(_match(rc.frame, others))
    f = rc.frame
    tv = _t_values(f)
    cs = _dose_cells(rc, by, fit_range, tv, level, seed, n_resamples)
    findings += _outside_findings(cs.outside, fit_range)
    fitted = _fit(cs)
    laws, fs = _compare_laws(f, by, cs, fitted, tv, level, seed, n_resamples)
    findings += fs
    findings += _censored_findings(cs.cells, laws.checks)
    if mediation is None and not any(v.get("params") is not None for v in fitted.fits.values()):
        findings.append(_nothing_fitted(cs))
    fits, checks, best = fitted.fits, laws.checks, laws.best
    law_fits = tuple(
        LawFit(m, fits[m]["params"], fits[m]["rss"], fits[m]["aicc"], fits[m].get("refused"),
               tuple(checks[m])) for m in MODELS if m in fits)
    body = DoseBody(
        step_unit=rc.step_unit, by=by, n_runs=len(f), cells=tuple(cs.cells),
        fit_range=fit_range, fit_cells=tuple(cs.cells[i].x for i in cs.fit_idx),
        fits=law_fits, delta_aicc=laws.delta, best=best, runner_up=laws.runner_up,
        identified=bool(best and not any(fd.code is Reason.MODELS_INDISTINGUISHABLE
                                         for fd in findings)
                        and not any(c.contradicted for c in checks[best])),
        key_parameter=laws.key_parameter, mediation=mediation)
    return body, findings


def _dose_cells(rc: RunClocks, by: str, fit_range: tuple[float, float] | None,
                tv: np.ndarray, level: float, seed: int, B: int) -> _Cells:
    """Each dose's cell: its median t_grok (with a bootstrap CI when not censored), and
    whether it enters the fits (not censored, inside ``fit_range``)."""
    f = rc.frame
    rows_by_x = _cell_rows(rc, by)
    cells: list[DoseCell] = []
    cens_idx, outside = [], []
    for i, (x, rows) in enumerate(rows_by_x):
        med = rc.median("t_grok", rows, left_unknown=True)
        cens = med is None or med.censored
        # an interval with no value: runs that grokked before their logs begin (≤ first
        # step), or short runs beside long ones, leave the middle undetermined
        interval = not cens and med is not None and med.value is None
        # a median at step 0 (runs generalizing before any training): ln T is undefined
        at_start = not cens and not interval and med is not None and med.value is not None \
            and med.value <= 0
        out_range = fit_range is not None and not (fit_range[0] <= x <= fit_range[1])
        why = "censored" if cens else "interval" if interval else "at_start" if at_start else (
            "outside_fit_range" if out_range else None)
        if cens and not out_range:
            cens_idx.append(i)
        if out_range:
            outside.append(x)
        cells.append(DoseCell(
            x=x, runs=tuple(sorted(f["run"].iloc[rows].tolist())), n_runs=int(rows.size),
            n_grokked=int(f["grokked"].iloc[rows].sum()), median_t_grok=med,
            median_ci=None if cens or interval or at_start
            else _median_ci(tv, rows, level, seed, B),
            in_fit=why is None, left_out=why))
    fit_idx = [i for i, c in enumerate(cells) if c.in_fit]
    return _Cells(cells, [rows for _, rows in rows_by_x], fit_idx, cens_idx, outside)


def _outside_findings(outside: Sequence[Any], fit_range: tuple[float, float] | None
                      ) -> list[Finding]:
    if not outside:
        return []
    assert fit_range is not None
    return [finding(
        Reason.OUTSIDE_FIT_RANGE, "cell",
        f"{len(outside)} cells lie outside the fit range [{fit_range[0]:g}, "
        f"{fit_range[1]:g}]",
        evidence={"cells": list(outside), "fit_range": list(fit_range)})]


def _fit(cs: _Cells) -> _Fitted:
    """The three laws on ``ln`` of the fitted cells' medians (with at least 3 cells)."""
    cells = cs.cells
    x = np.array([cells[i].x for i in cs.fit_idx], dtype=float)
    lnT = np.log([max(_med_value(cells[i]), 1.0) for i in cs.fit_idx]) if cs.fit_idx else \
        np.array([])
    with np.errstate(over="ignore"):
        spread = float(x.max() / 2 - x.min() / 2) * 2 if x.size else 0.0
    if x.size >= 2 and not math.isfinite(spread):
        # a span beyond float64 (doses of ±1e308): no law's fit can be written in these units
        raise LogFormatError(
            "the doses of the fit span more than the largest float (1.8e308): rescale the "
            "axis (write it in other units)", code=ErrorCode.NOT_NUMERIC)
    if x.size >= 2 and 0 < float(np.ptp(x)) < np.finfo(float).tiny:
        # slopes per unit of such doses are beyond float64: no law can be written in them
        raise LogFormatError(
            f"the doses of the fit span {float(np.ptp(x)):.3g}, below the smallest normal "
            f"float ({np.finfo(float).tiny:.3g}): no law's slope can be written in these "
            "units; rescale the axis (write it in other units)",
            code=ErrorCode.NOT_NUMERIC)
    fits: dict[str, dict[str, Any]] = fit_laws(x, lnT) if len(cs.fit_idx) >= 3 else {}
    scored = sorted((m for m in MODELS if fits.get(m, {}).get("aicc") is not None),
                    key=lambda m: fits[m]["aicc"])
    return _Fitted(x, [float(cells[i].x) for i in cs.cens_idx],
                   [_med_lower(cells[i]) for i in cs.cens_idx], fits, scored)


def _compare_laws(f: pd.DataFrame, by: str, cs: _Cells, fitted: _Fitted, tv: np.ndarray,
                  level: float, seed: int, n_resamples: int) -> tuple[_Laws, list[Finding]]:
    """ΔAICc for every pair, the best law (``MODELS_INDISTINGUISHABLE`` by a margin under 2),
    the bootstrap, and every law against the censored cells (``LAW_CONTRADICTED`` for the
    best); ``TOO_FEW_CELLS`` when fewer than two laws could be scored."""
    fits, scored = fitted.fits, fitted.scored
    if len(scored) < 2:
        return _Laws((), None, None, None, {m: [] for m in MODELS}), [finding(
            Reason.TOO_FEW_CELLS, "study",
            f"{len(cs.fit_idx)} cells in the fit: AICc needs at least {K_PARAMS + 2} to "
            "compare three-parameter laws",
            evidence={"n_cells": len(cs.fit_idx), "needed": K_PARAMS + 2})]
    findings = []
    delta = tuple(DeltaAicc((a, b), fits[a]["aicc"] - fits[b]["aicc"])
                  for a, b in itertools.combinations(MODELS, 2)
                  if fits[a].get("aicc") is not None and fits[b].get("aicc") is not None)
    best, runner = scored[0], scored[1]
    gap = fits[runner]["aicc"] - fits[best]["aicc"]
    if gap < 2:
        findings.append(finding(
            Reason.MODELS_INDISTINGUISHABLE, "study",
            f"{best} beats {runner} by ΔAICc = {gap:.2f} < 2: no law is identified",
            evidence={"best": best, "runner_up": runner, "delta_aicc": gap,
                      "n_cells": len(cs.fit_idx)}))
    key_ci, cis = _bootstrap_laws(cs, fitted, best, tv, level, seed, n_resamples)
    checks = _censored_checks(f, by, cs, fitted, cis, tv, level)
    bad = [c for c in checks[best] if c.contradicted]
    if bad:
        findings.append(finding(
            Reason.LAW_CONTRADICTED, "study",
            f"the {best} law is contradicted by {len(bad)} censored cell(s) it left out: "
            + "; ".join(f"{by}={c.x}, {_situation(cs.cells, c.x)}: " + _check_words(c)
                        for c in bad),
            severity=Severity.CRITICAL,
            evidence={"law": best, "checks": bad}))
    return _Laws(delta, best, runner, key_ci, checks), findings


def _bootstrap_laws(cs: _Cells, fitted: _Fitted, best: str, tv: np.ndarray, level: float,
                    seed: int, n_resamples: int
                    ) -> tuple[KeyParameter, tuple[BootstrapCI, ...]]:
    """One bootstrap: seeds resampled within each fitted cell, every law refitted; the key
    parameter of the best law, then each law's prediction at each censored cell (law by law,
    cell by cell)."""
    x, xc = fitted.x, fitted.xc
    strata = [cs.rows[i] for i in cs.fit_idx]
    sizes = [s.size for s in strata]
    turned = [0, 0]  # resamples with a fitted cell's median censored; of them, both ends

    def stat(ix: np.ndarray) -> np.ndarray | Split:
        parts = np.split(ix, np.cumsum(sizes)[:-1])
        meds = np.array([np.median(tv[p]) for p in parts])
        if not np.all(np.isfinite(meds)):
            # a fitted cell's median turned censored: it lies beyond every value the
            # resample can give it. Never dropped (that would close the interval on the
            # side those resamples hold): each quantity is counted at the limit its fit
            # reaches as that cell's ln T grows, or at both ends where the way is unknown
            turned[0] += 1
            sp = _beyond(x, meds, best, xc)
            if isinstance(sp, Split):
                turned[1] += int(np.asarray(sp.low)[0] != np.asarray(sp.high)[0])
            return sp
        fb = fit_laws(x, np.log(np.maximum(meds, 1.0)))
        return np.array([_key(fb, best)] + [predict(fb, m, xv) for m in MODELS
                                            for xv in xc])

    cis = bootstrap(strata, stat, seed=seed, level=level, n_resamples=n_resamples,
                    label="seeds within cells")
    key_ci = KeyParameter(KEY_PARAM[best], cis[0], turned[0], turned[1],
                          cis[0].n_resamples - cis[0].n_valid)
    return key_ci, tuple(cis)


def _censored_checks(f: pd.DataFrame, by: str, cs: _Cells, fitted: _Fitted,
                     cis: Sequence[BootstrapCI], tv: np.ndarray, level: float
                     ) -> dict[str, list[CensoredCheck]]:
    """Each censored cell against each law, run by run (the module docstring), Bonferroni
    over the cells whose prediction has a bootstrap interval."""
    strata = [cs.rows[i] for i in cs.fit_idx]
    resid_rows = np.concatenate(strata) if strata else np.zeros(0, dtype=np.int64)
    xc = fitted.xc
    checks: dict[str, list[CensoredCheck]] = {m: [] for m in MODELS}
    for mi, m in enumerate(MODELS):
        if fitted.fits[m]["params"] is None:
            continue
        cis_m = [cis[1 + mi * len(xc) + j] for j in range(len(xc))]
        n_checked = sum(1 for c in cis_m if c.identified)
        alpha = (1.0 - level) / max(n_checked, 1)
        for j, (xv, bd) in enumerate(zip(xc, fitted.bounds)):
            i = cs.cens_idx[j]
            checks[m].append(_check_cell(f, by, fitted.fits, m, cs.cells[i], cs.rows[i], xv,
                                         bd, cis_m[j], resid_rows, tv, alpha))
    return checks


def _nothing_fitted(cs: _Cells) -> Finding:
    """``NOTHING_AUDITABLE`` (critical, as ``check`` says it of a log where nothing could be
    assessed): no law was fitted, so no dose–response claim is tested; a log of censored cells
    never reads as a pass."""
    left: dict[str, int] = {}
    for c in cs.cells:
        if c.left_out is not None:
            left[c.left_out] = left.get(c.left_out, 0) + 1
    why = ", ".join(f"{n} {w.replace('_', ' ')}" for w, n in sorted(left.items()))
    return finding(
        Reason.NOTHING_AUDITABLE, "study",
        f"no dose–response law was fitted ({len(cs.fit_idx)} of {len(cs.cells)} cells in the "
        f"fit{'; left out: ' + why if why else ''}; a law needs 3): the claim is not tested",
        evidence={"n_cells": len(cs.cells), "n_fitted": len(cs.fit_idx), "left_out": left})


def _censored_findings(cells: Sequence[DoseCell], checks: Mapping[str, list[CensoredCheck]]
                       ) -> list[Finding]:
    """``MEDIAN_CENSORED`` for the cells left out of every fit, saying whether the laws were
    checked against them."""
    out = _interval_findings(cells)
    n_cens_all = [c.x for c in cells if c.left_out == "censored"]
    if not n_cens_all:
        return out
    checked = any(c.p_value is not None for m in MODELS for c in checks[m])
    unchecked = any(c.p_value is None for m in MODELS for c in checks[m])
    return [finding(
        Reason.MEDIAN_CENSORED, "cell",
        f"{len(n_cens_all)} cells have a censored median t_grok (only a lower bound): left "
        "out of every fit" + ("; the fitted laws are checked against those inside the "
                              "fit range, run by run" if checked else
                              "; the laws were NOT checked against them (no law was fitted)"
                              if not any(checks[m] for m in MODELS) else
                              "; the laws were NOT checked against them (no bootstrap "
                              "interval of any law's prediction)")
        + ("; some of these checks were not made (no bootstrap interval of the law's "
           "prediction)" if unchecked and checked else ""),
        runs=[r for c in cells if c.left_out == "censored" for r in c.runs],
        evidence={"cells": n_cens_all, "checked_against_laws": checked})] + out


def _interval_findings(cells: Sequence[DoseCell]) -> list[Finding]:
    """``MEDIAN_CENSORED`` for the cells whose median t_grok is only an interval (``≤300`` when
    runs grokked before their logs begin, ``(490, 700]`` when short runs leave the middle
    undetermined): left out of every fit, never fitted at an end of the interval."""
    out = []
    zero = [c for c in cells if c.left_out == "at_start"]
    if zero:
        out.append(finding(
            Reason.GROKKED_AT_START, "cell",
            f"{len(zero)} cells have a median t_grok of step 0 (their runs were at the "
            "threshold before any training): ln T is undefined there; left out of every fit",
            runs=[r for c in zero for r in c.runs],
            evidence={"cells": [c.x for c in zero]}))
    iv = [c for c in cells if c.left_out == "interval"]
    if not iv:
        return out
    shown = ", ".join(f"{format_value(c.x)}: {c.median_t_grok.format('claim')}" for c in iv
                      if c.median_t_grok is not None)
    return out + [finding(
        Reason.MEDIAN_CENSORED, "cell",
        f"{len(iv)} cells have a median t_grok known only as an interval ({shown}: runs that "
        "grokked before their logs begin, or stopped early beside longer ones): left out of "
        "every fit", runs=[r for c in iv for r in c.runs],
        evidence={"cells": [c.x for c in iv], "kind": "interval"})]


def _check_cell(f: pd.DataFrame, by: str, fits: Mapping[str, Mapping[str, Any]], model: str,
                cell: DoseCell, rows: np.ndarray, xv: float, bound: float, ci: BootstrapCI,
                resid_rows: np.ndarray, tv: np.ndarray, alpha: float) -> CensoredCheck:
    """One law against one censored cell, run by run (the module docstring)."""
    pred = predict(fits, model, xv)
    last = f["last_step"].to_numpy(dtype=float)
    cens_run = ~f["grokked"].to_numpy(dtype=bool)
    k = int(cens_run[rows].sum())
    horizon = float(np.median(last[rows][cens_run[rows]])) if k else None
    common = {"x": cell.x, "bound": bound,
              "predicted": None if math.isinf(pred) else math.exp(pred),
              "n_runs": int(rows.size), "n_censored": k, "horizon": horizon}
    if math.isinf(pred):  # beyond x₀: the law predicts no grok, every run censored
        n = int(rows.size)
        return CensoredCheck(**common, predicted_high=None,
                             basis="bootstrap" if ci.identified else "point",
                             contradicted=False, p_run=1.0, expected_censored=float(n),
                             p_value=1.0, alpha=alpha)
    if not ci.identified:
        return CensoredCheck(**common, predicted_high=None, basis="point", contradicted=False,
                             note=f"no bootstrap interval of the prediction: {ci.note}")
    hi = math.inf if ci.high_unbounded or ci.high is None else ci.high
    # the fitted cells' runs about the law (ln t − the law's ln T at their dose); a run that
    # never grokked lies above the law by an unknown amount: counted above any threshold
    g = ~cens_run[resid_rows]
    law_at = np.array([predict(fits, model, float(v)) for v in
                       f[by].to_numpy(dtype=float)[resid_rows]])
    r = np.log(np.maximum(tv[resid_rows][g], 1.0)) - law_at[g]
    n_tot, n_above_always = int(resid_rows.size), int((~g).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        c = np.log(np.maximum(last[rows], 1.0)) - hi  # how far above the law each run's budget is
    ps = np.array([1.0 if not math.isfinite(cj) else
                   (1.0 + float(np.sum(r >= cj)) + n_above_always) / (n_tot + 1.0)
                   for cj in c.tolist()])
    pv = poisson_binomial_tail(ps, k)
    return CensoredCheck(**common, predicted_high=None if math.isinf(hi) else math.exp(hi),
                         basis="bootstrap", contradicted=bool(pv < alpha),
                         p_run=float(np.mean(ps)), expected_censored=float(np.sum(ps)),
                         p_value=pv, alpha=alpha)


def _check_words(c: CensoredCheck) -> str:
    """What a contradicted check says, every bound rounded outwards."""
    assert c.p_value is not None and c.p_run is not None and c.alpha is not None
    med = ("no median (unbounded)" if c.predicted_high is None else
           f"a median of at most {outward(c.predicted_high, down=False)} (the upper end of its "
           "bootstrap interval)")
    return (f"{c.n_censored}/{c.n_runs} runs never grokked by "
            f"{outward(c.horizon, down=True)} (the cell's median > "
            f"{outward(c.bound, down=True)}); the law gives it {med}, under which a run stays "
            f"ungrokked that long with probability {p_text(c.p_run)} on "
            f"average and P(≥ {c.n_censored} of {c.n_runs}) = "
            f"{p_text(c.p_value, c.alpha)} < {c.alpha:.3g} (Bonferroni)")


def _situation(cells: Sequence[DoseCell], x: Any) -> str:
    """Why a cell's median is censored, in the words ``onset`` uses: every run beyond the
    horizon, or more than half of them (survivors inside the cell)."""
    c = next(c for c in cells if c.x == x)
    if c.n_grokked == 0:
        return f"a cell beyond the horizon (0/{c.n_runs} grokked)"
    return f"survivors inside the cell ({c.n_runs - c.n_grokked}/{c.n_runs} never grokked)"


def _med_value(c: DoseCell) -> float:
    """The median of a fitted (uncensored) cell."""
    assert c.median_t_grok is not None and c.median_t_grok.value is not None
    return float(c.median_t_grok.value)


def _med_lower(c: DoseCell) -> float:
    """The bound a censored cell's median exceeds."""
    assert c.median_t_grok is not None and c.median_t_grok.lower is not None
    return float(c.median_t_grok.lower)




def run_dose(table: pa.Table | pd.DataFrame | LogTable, config: AuditConfig, *, by: str,
             fit_range: tuple[float, float] | None = None, cell: Sequence[str] = (),
             level: float = 0.95, seed: int = 0, n_resamples: int = 999,
             mediator: str | None = None, baseline: Mapping[str, Any] | None = None,
             raised: Mapping[str, Any] | None = None, sweep: str | None = None,
             step_unit: str | None = None, source: str | None = None) -> ClaimResult:
    """Audit a dose–response law along ``by`` (and, optionally, a mediation claim).

    ``cell`` splits the runs into separate studies; runs sharing a dose value (and, with
    mediation, the sweep and baseline/raised columns) but differing in another condition are
    refused (``DUPLICATE_AXIS_VALUES``) unless ``cell`` separates them."""
    if mediator is None and (baseline or raised or sweep):
        raise ConfigError(f"{param_name('baseline')}, {param_name('raised')} and "
                          f"{param_name('sweep')} describe a mediation: they need "
                          f"{param_value('mediator', 'COL')} (they are never ignored)",
                          code=ErrorCode.INVALID_OPTION, option="--mediator")
    rc = run_clocks(table, config, source, step_unit)
    axes = [Axis(by)]
    if mediator is not None:
        if not (baseline and raised and sweep):
            raise LogFormatError(f"mediation needs {param_name('baseline')}, "
                                 f"{param_name('raised')} and {param_name('sweep')} with "
                                 f"{param_name('mediator')}", path=source, param="mediator",
                                 code=ErrorCode.INVALID_OPTION)
        axes += [Axis(sweep, "sweep"), *(Axis(c, "baseline/raised", numeric=False)
                                         for c in dict.fromkeys([*baseline, *raised]))]
    design = Design.validate(rc.log, axes=axes, cell=cell, what="the dose-response fit")
    out = []
    for key, rcs in studies(rc, design):
        body, fs = _study(rcs, by, fit_range, level, seed, n_resamples, mediator, baseline,
                          raised, sweep, source)
        out.append((key, body, fs))
    params = {"by": by, "fit_range": list(fit_range) if fit_range else None,
              "cell": list(cell), "level": level, "seed": seed, "n_resamples": n_resamples,
              "mediator": mediator, "baseline": dict(baseline or {}),
              "raised": dict(raised or {}), "sweep": sweep, "step_unit": rc.step_unit}
    return rc.result("dose", config, params, out)
