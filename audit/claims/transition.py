"""``grokaudit transition``: phase boundaries (CLAIMS_SPEC, seed 001).

Per run a grok indicator. A run that never grokked is a non-grok only up to its budget: a run
whose last logged step falls before the median ``t_grok`` of its neighbours (the grokked runs of
its own and the adjacent levels) is ``INSUFFICIENT_BUDGET`` — left out of the fit, not counted as
a failure.

- Logistic fit ``P(grok) = 1/(1 + exp(−(a + b·ln λ)))`` by maximum likelihood (IRLS) →
  transition point ``λ_c = exp(−a/b)``, with a seeded stratified bootstrap CI (runs resampled
  within levels; a resample whose levels are separated has no maximum-likelihood boundary and
  counts as a failed draw).
- Separation: when no grokking run lies below a non-grokking one (or the reverse) the
  likelihood has no maximum — the slope runs to infinity and any ``λ_c`` between the two levels
  that bracket the boundary fits equally well. ``λ_c`` is then reported as that bracket
  ``(λ_lo, λ_hi)``, never as a point with an interval (``TRANSITION_SEPARATED``).
- Above the transition (on the side where grokking happens), the time to grok
  ``T ∝ |λ − λ_c|^(−ν)``: OLS of ``ln T`` (cell medians) on ``ln|λ − λ_c|``, with ``ν``'s CI
  from the same bootstrap (``λ_c`` re-estimated in each resample). ``ν`` depends on ``λ_c``:
  when ``λ_c`` is only bracketed, ``ν`` is not identified and only its range over the bracket
  is reported.
- Phase labels per level: ``memorization`` (no run grokked), ``collapse`` (most grokked runs
  regress after grokking, or their attention heads end up identical), ``grokking`` otherwise.

``TOO_FEW_LEVELS`` when fewer than 4 levels in all, or fewer than 2 on either side of ``λ_c``
(of the bracket), bracket the transition (or fewer than 3 grokking levels carry the power law).
Exponents are empirical numbers with CIs; they are never matched to a universality class.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa

from ..clocks import pack
from ..config import AuditConfig
from ..design import Axis, Design
from ..reasons import Reason
from ..results import Finding, Interval, format_number
from ..schema import LogTable
from .flagged import flag_runs
from .results import ClaimResult, Record, finding, outward
from .runs import RunClocks, py, run_clocks, studies
from .stats import BootstrapCI, Proportion, bootstrap, wilson

RIDGE = 1e-6
MIN_LEVELS = 4
MIN_SIDE = 2
MIN_POWER_CELLS = 3
HEADS_IDENTICAL = 0.99

#: The logistic boundary is only bracketed (separation). reasons.py adds the code; until then
#: FIT_FAILED (a warning) stands in for it.


# ------------------------------------------------------------------------------------------
# the body
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TransitionLevel(Record):
    level: Any
    n_runs: int
    n_scored: int
    n_insufficient_budget: int
    grok_rate: Proportion
    median_t_grok: Interval | None
    n_regressed: int
    n_heads_identical: int
    phase: str


@dataclass(frozen=True)
class Boundary(Record):
    """Where the grok rate crosses ½.

    ``separation``: ``none`` (the logistic MLE exists: ``lambda_c`` with its CI), ``complete``
    or ``quasi`` (no MLE: ``bracket`` only, no point, no CI)."""

    separation: str
    lambda_c: float | None
    ci: BootstrapCI | None
    bracket: tuple[float | None, float | None] | None
    grok_side: str  #: ``above`` or ``below``: where grokking happens
    intercept: float | None
    slope_log_lambda: float | None
    levels_below: int
    levels_above: int
    #: the profile-likelihood set of λ_c (its deviance within χ²₁ of the smallest), with
    #: whether each end is open; under separation the one honest statement of where it lies
    profile: ProfileSet | None = None
    #: λ_c lies outside the levels, or with no level on one side: an extrapolation (no CI)
    extrapolated: bool = False
    #: under quasi-separation, the level where both outcomes occur
    shared_level: float | None = None


@dataclass(frozen=True)
class ProfileSet(Record):
    """``{λ_c : D(λ_c) − min D ≤ χ²₁(level)}``, ``D`` the logistic deviance with the boundary
    held at ``λ_c`` and the slope profiled out (its limit ``∞`` included), on a grid of
    ``n_grid`` points between the outer levels: ``low``/``high`` its ends (None: it reaches the
    sweep's edge), ``best`` where the deviance is smallest."""

    low: float | None
    high: float | None
    low_open: bool
    high_open: bool
    best: float
    min_deviance: float
    level: float
    n_grid: int
    #: under separation the set is widened to the bracket of levels around the jump: the χ²
    #: cut is not calibrated when the slope's estimate is infinite (the bare set missed the
    #: true λ_c in 14 of 200 replicates of an 8 × 8 design, benchmarks/claims_coverage.py)
    widened: bool = False


@dataclass(frozen=True)
class PowerLaw(Record):
    """``T ∝ |λ − λ_c|^(−ν)`` on the grokking side. With a bracketed ``λ_c`` only
    ``nu_range`` (``ν`` as ``λ_c`` moves inside the bracket) is given."""

    nu: float | None
    log_prefactor: float | None
    n_cells: int
    nu_ci: BootstrapCI | None
    #: ν's point value as λ_c moves over the whole (open) set where it may lie:
    #: ``(min, max)``; the sampling noise of the cell medians is not in it
    nu_range: tuple[float, float] | None
    #: ν < 0 established: its bootstrap interval lies below 0 (LAW_CONTRADICTED)
    contradicted: bool = False


@dataclass(frozen=True)
class TransitionBody(Record):
    step_unit: str
    by: str
    n_runs: int
    levels: tuple[TransitionLevel, ...]
    boundary: Boundary | None  #: None: no transition (every scored run on one side)
    power_law: PowerLaw | None
    note: str


# ------------------------------------------------------------------------------------------
# the logistic boundary
# ------------------------------------------------------------------------------------------

def logistic_fit(u: np.ndarray, y: np.ndarray, iters: int = 100) -> tuple[float, float] | None:
    """``(a, b)`` of the logistic regression of ``y`` on ``u`` (IRLS, a tiny ridge on ``b``
    for numerical safety). None when every ``y`` is the same (no transition in the data).
    Under separation the result is a ridge artefact: check :func:`separation` first."""
    if y.size == 0 or y.min() == y.max():
        return None
    X = np.column_stack((np.ones_like(u), u))
    beta = np.zeros(2)
    pen = np.diag([0.0, RIDGE])
    for _ in range(iters):
        eta = np.clip(X @ beta, -35, 35)
        p = 1 / (1 + np.exp(-eta))
        W = p * (1 - p)
        g = X.T @ (y - p) - pen @ beta
        H = (X * W[:, None]).T @ X + pen
        try:
            step = np.linalg.solve(H, g)
        except np.linalg.LinAlgError:
            return None
        beta = beta + step
        if np.max(np.abs(step)) < 1e-10:
            break
    return float(beta[0]), float(beta[1])


def separation(u: np.ndarray, y: np.ndarray) -> str:
    """``complete`` when every grokking run lies strictly on one side of every other run,
    ``quasi`` when they touch at one value of ``u``, ``none`` when they overlap (the
    logistic MLE exists), ``constant`` when every ``y`` is the same."""
    g, n = u[y == 1], u[y == 0]
    if g.size == 0 or n.size == 0:
        return "constant"
    lo_hi = (n.max(), g.min()) if g.mean() >= n.mean() else (g.max(), n.min())
    if lo_hi[0] < lo_hi[1]:
        return "complete"
    if lo_hi[0] == lo_hi[1]:
        return "quasi"
    return "none"


def _bracket(levels: np.ndarray, lam: np.ndarray, y: np.ndarray, kind: str
             ) -> tuple[float | None, float | None, str, float | None]:
    """The two levels between which the boundary lies under separation, the grok side, and
    (quasi-separation) the level where both outcomes occur. For quasi-separation the bracket
    is that level's neighbours (None where it has none on a side)."""
    g, n = lam[y == 1], lam[y == 0]
    above = g.mean() >= n.mean()
    lo, hi = (n.max(), g.min()) if above else (g.max(), n.min())
    shared = None
    if kind == "quasi":
        shared = float(lo)
        below_l = levels[levels < shared]
        above_l = levels[levels > shared]
        lo = below_l.max() if below_l.size else None
        hi = above_l.min() if above_l.size else None
    return (None if lo is None else float(lo), None if hi is None else float(hi),
            "above" if above else "below", shared)


def jump_words(by: str, lo: float | None, hi: float | None, shared: float | None) -> str:
    """Where the grok rate jumps under separation, in words (levels rounded outwards)."""
    def lv(x: float, down: bool) -> str:
        return outward(x, 4, down=down)

    if lo is not None and hi is not None:
        out = f"the grok rate jumps between {by} = {lv(lo, True)} and {lv(hi, False)}"
        return out + (f" (both outcomes at {lv(shared, True)})" if shared is not None else "")
    if shared is None:
        return "the grok rate jumps between two adjacent levels"
    at = outward(shared, 4, down=True)
    if lo is None and hi is None:
        return (f"every scored run is at one level, {by} = {at}, where both outcomes occur: "
                "no boundary can be placed")
    side = ("no level below it" if lo is None else "no level above it")
    return f"the grok rate jumps at {by} = {at}, where both outcomes occur ({side})"


def _deviance(u: np.ndarray, y: np.ndarray, u_c: float, sign: float) -> float:
    """The logistic deviance of ``P(grok) = σ(b·(u − u_c))`` minimized over the slope
    ``b`` of the grok side's sign, its limit ``b → ∞`` (a step at ``u_c``) included."""
    d = sign * (u - u_c)

    def dev(log_b: float) -> float:
        eta = math.exp(log_b) * d
        # −2 Σ log p(y): log σ(η) = −log(1 + e^(−η)), stably
        return float(2 * np.sum(np.where(y == 1, np.logaddexp(0, -eta), np.logaddexp(0, eta))))

    from scipy import optimize

    res = optimize.minimize_scalar(dev, bounds=(-12.0, 12.0), method="bounded",
                                   options={"xatol": 1e-6})
    best = min(float(res.fun), dev(-12.0))
    # the step at u_c: runs on their own side cost nothing, a tie costs 2·log 2, a run on the
    # wrong side costs without bound
    wrong = np.any(((d > 0) & (y == 0)) | ((d < 0) & (y == 1)))
    if not wrong:
        best = min(best, float(2 * math.log(2) * np.sum(d == 0)))
    return best


def profile_set(levels: np.ndarray, u: np.ndarray, y: np.ndarray, grok_above: bool,
                level: float, n_grid: int = 801) -> ProfileSet | None:
    """The profile-likelihood set of λ_c over a geometric grid between the outer levels (the
    levels themselves on it): the points whose profile deviance is within ``χ²₁(level)`` of the
    smallest, as an open interval whose ends are the first grid points outside it (outwards by
    at most one grid step); an end that reaches the outer level is None (the set runs to the
    edge of the sweep, and may go on beyond it)."""
    from scipy import stats

    lv = np.unique(levels.astype(float))
    if lv.size < 2 or y.min() == y.max():
        return None
    grid = np.unique(np.concatenate([np.geomspace(lv[0], lv[-1], n_grid), lv]))
    sign = 1.0 if grok_above else -1.0
    dev = np.array([_deviance(u, y, math.log(g), sign) for g in grid])
    m = int(np.argmin(dev))
    best, at = _off_grid_minimum(u, y, sign, grid, m, float(dev[m]))
    cut = float(stats.chi2.ppf(level, 1))
    # the set is cut from the deviance's least value, found between the grid's points (the
    # grid's least alone is too high: its set came out too wide)
    inside = dev - best <= cut
    # the connected stretch of the grid around the best point
    i = j = m
    while i > 0 and inside[i - 1]:
        i -= 1
    while j < grid.size - 1 and inside[j + 1]:
        j += 1
    # each end reported outwards: at the first grid point outside the set (open), where the
    # set's true end lies between it and the last point inside; None when the set reaches
    # the outer level (it may extend beyond the sweep)
    low = None if i == 0 else float(grid[i - 1])
    high = None if j == grid.size - 1 else float(grid[j + 1])
    return ProfileSet(low, high, low is not None, high is not None, at, best, level,
                      int(grid.size))


def _off_grid_minimum(u: np.ndarray, y: np.ndarray, sign: float, grid: np.ndarray, m: int,
                      dev_m: float) -> tuple[float, float]:
    """The profile deviance's least value and where, searched between the grid points on
    either side of the grid's least ``m`` (``dev_m``): the maximum-likelihood λ_c lies off the
    grid, and its deviance can be well below the grid's least."""
    from scipy import optimize

    a = math.log(float(grid[max(m - 1, 0)]))
    b = math.log(float(grid[min(m + 1, grid.size - 1)]))
    if b <= a:
        return dev_m, float(grid[m])
    res = optimize.minimize_scalar(lambda t: _deviance(u, y, t, sign), bounds=(a, b),
                                   method="bounded", options={"xatol": 1e-9})
    if float(res.fun) < dev_m:
        return float(res.fun), float(math.exp(float(res.x)))
    return dev_m, float(grid[m])


def _nu_range(levels: np.ndarray, medT: np.ndarray, lo: float, hi: float, above: bool
              ) -> tuple[float, float] | None:
    """ν as λ_c moves over the open interval ``(lo, hi)``, up to its ends (a geometric grid
    that approaches each end to 10⁻⁶ of the span in log λ). Where the end on the grokking
    side is a level in the fit, ν → 0 as λ_c approaches it (that level's ``ln|λ − λ_c|`` goes
    to −∞ and pulls the slope to 0): the range runs to 0, which no grid point reaches."""
    t = np.concatenate([np.geomspace(1e-6, 0.5, 60), 1.0 - np.geomspace(1e-6, 0.5, 60)])
    grid = np.exp(math.log(lo) + np.unique(t) * (math.log(hi) - math.log(lo)))
    nus = [p[0] for p in (_power(levels, medT, float(c), above) for c in grid)
           if p is not None]
    if not nus:
        return None
    near = hi if above else lo
    fitted = np.isfinite(medT) & np.isclose(levels, near, rtol=0, atol=0)
    if fitted.any():
        nus.append(0.0)  # the limit at the grokking side's end, open
    return float(min(nus)), float(max(nus))


def _boundary(ab: tuple[float, float] | None) -> float | None:
    if ab is None or ab[1] == 0:
        return None
    u_c = -ab[0] / ab[1]
    return u_c if abs(u_c) < 700 else None


def _power(levels: np.ndarray, medT: np.ndarray, lam_c: float, above: bool
           ) -> tuple[float, float, int] | None:
    """``(ν, c, n_cells)`` of ``ln T = c − ν ln|λ − λ_c|`` over the grokking side."""
    side = (levels > lam_c) if above else (levels < lam_c)
    ok = side & np.isfinite(medT)
    if ok.sum() < MIN_POWER_CELLS:
        return None
    d = np.log(np.abs(levels[ok] - lam_c))
    A = np.column_stack((np.ones_like(d), d))
    coef, *_ = np.linalg.lstsq(A, np.log(medT[ok]), rcond=None)
    return -float(coef[1]), float(coef[0]), int(ok.sum())


def _budget(f: pd.DataFrame, by: str, levels: np.ndarray) -> np.ndarray:
    """True for censored runs cut short before their neighbours' median time to grok."""
    lvl_idx = np.searchsorted(levels, f[by].to_numpy(dtype=float))
    grok = f["grokked"].to_numpy(dtype=bool)
    tg = f["tg_value"].to_numpy(dtype=float)
    last = f["last_step"].to_numpy(dtype=float)
    # per level: the median t_grok of the grokked runs of that level and its two neighbours
    near = np.abs(lvl_idx[None, :] - np.arange(levels.size)[:, None]) <= 1  # (levels, runs)
    pool = np.where(near & grok[None, :], tg[None, :], np.nan)
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            need = np.nanmedian(pool, axis=1)  # NaN when no neighbour grokked
    short: np.ndarray = ~grok & (last < np.nan_to_num(need[lvl_idx], nan=-np.inf))
    return short


# ------------------------------------------------------------------------------------------
# one study
# ------------------------------------------------------------------------------------------

def _levels(rc: RunClocks, by: str, levels: np.ndarray, short: np.ndarray, level: float
            ) -> tuple[list[TransitionLevel], np.ndarray]:
    f = rc.frame
    lam = f[by].to_numpy(dtype=float)
    y = f["grokked"].to_numpy(dtype=bool)
    use = ~short
    heads = None
    if "attn_head_cos" in rc.log.series:
        def last(log: LogTable, _: slice) -> np.ndarray:
            P = pack(log.series["attn_head_cos"], log)
            out: np.ndarray = P.values[np.arange(P.counts.size),
                                       np.maximum(P.counts - 1, 0)]
            return out

        heads = rc.per_run(last, "attn_head_cos")[rc.pos]
    sustained = f["sustained"].to_numpy(dtype=bool)
    cells = []
    medT = np.full(levels.size, np.nan)
    for j, lv in enumerate(levels):
        m = lam == lv
        k, n = int(y[m & use].sum()), int((m & use).sum())
        med = rc.median("t_grok", np.flatnonzero(m))
        medT[j] = math.inf if med is None or med.censored or med.value is None else med.value
        g = m & y
        regress = int((g & ~sustained).sum())
        same_heads = int((g & (heads >= HEADS_IDENTICAL)).sum()) if heads is not None else 0
        if n == 0:
            phase = "undetermined"
        elif k == 0:
            phase = "memorization"
        elif 2 * regress > g.sum() or 2 * same_heads > g.sum():
            phase = "collapse"
        else:
            phase = "grokking"
        cells.append(TransitionLevel(py(lv), int(m.sum()), n, int((m & short).sum()),
                                     wilson(k, n, level), med, regress, same_heads, phase))
    return cells, medT


class _Sweep(NamedTuple):
    """The study's runs along λ, as the boundary's fits read them."""

    frame: pd.DataFrame
    by: str
    levels: np.ndarray  #: the distinct values of λ, ascending
    lam: np.ndarray  #: each run's λ
    u: np.ndarray  #: each run's ln λ
    y: np.ndarray  #: each run's outcome (1.0: grokked)
    use: np.ndarray  #: the scored runs (not cut short by their budget)
    medT: np.ndarray  #: each level's median t_grok (``inf``: censored)


def _study(rc: RunClocks, by: str, level: float, seed: int, n_resamples: int
           ) -> tuple[TransitionBody, list[Finding]]:
    f = rc.frame
    levels = np.sort(f[by].unique().astype(float))
    short = _budget(f, by, levels)
    findings: list[Finding] = []
    if short.any():
        findings.append(flag_runs(
            Reason.INSUFFICIENT_BUDGET, f, short,
            f"{int(short.sum())} runs stopped before their neighbours' median time to grok: "
            "left out of the fit, not counted as failures"))
    cells, medT = _levels(rc, by, levels, short, level)
    lam = f[by].to_numpy(dtype=float)
    sw = _Sweep(f, by, levels, lam, np.log(lam), f["grokked"].to_numpy(dtype=float), ~short,
                medT)
    kind = separation(sw.u[sw.use], sw.y[sw.use])
    boundary: Boundary | None = None
    power_law: PowerLaw | None = None
    if kind == "constant":
        findings.append(finding(
            Reason.NO_TRANSITION, "study",
            "every scored run is on the same side (all grok or none): no transition point",
            evidence={"n_scored": int(sw.use.sum()), "n_grokked": int(sw.y[sw.use].sum())}))
    elif kind != "none":
        boundary, power_law, fs = _separated(sw, kind, level)
        findings += fs
    else:
        boundary, power_law, fs = _logistic(sw, level, seed, n_resamples)
        findings += fs
    body = TransitionBody(
        step_unit=rc.step_unit, by=by, n_runs=len(f), levels=tuple(cells), boundary=boundary,
        power_law=power_law,
        note="exponents are empirical, with CIs; no universality class is implied")
    return body, findings


def _separated(sw: _Sweep, kind: str, level: float
               ) -> tuple[Boundary, PowerLaw | None, list[Finding]]:
    """Under separation: the bracket and the profile-likelihood set of λ_c (no point, no
    CI), and ν only as its range over where λ_c may lie."""
    levels, use = sw.levels, sw.use
    lo, hi, side, shared = _bracket(levels, sw.lam[use], sw.y[use], kind)
    below = int(np.sum(levels <= lo)) if lo is not None else 0
    above = int(np.sum(levels >= hi)) if hi is not None else 0
    prof = profile_set(levels, sw.u[use], sw.y[use], side == "above", level)
    if prof is not None:
        w_lo = None if prof.low is None or lo is None else min(prof.low, lo)
        w_hi = None if prof.high is None or hi is None else max(prof.high, hi)
        if (w_lo, w_hi) != (prof.low, prof.high):
            prof = dataclasses.replace(prof, low=w_lo, high=w_hi,
                                       low_open=prof.low_open or w_lo is None,
                                       high_open=prof.high_open or w_hi is None,
                                       widened=True)
    boundary = Boundary(kind, None, None, (lo, hi), side, None, None, below, above, prof,
                        shared_level=shared)
    findings = [_separation_finding(sw.by, kind, lo, hi, side, shared, prof, level)]
    _bracketing(findings, levels, below, above)
    # where λ_c may lie: the profile set (under quasi-separation narrower than the bracket)
    p_lo = (prof.low if prof is not None and prof.low is not None else lo)
    p_hi = (prof.high if prof is not None and prof.high is not None else hi)
    power_law = None
    if p_lo is not None and p_hi is not None and p_lo < p_hi:
        rng = _nu_range(levels, sw.medT, p_lo, p_hi, side == "above")
        if rng is not None:
            power_law = PowerLaw(None, None, 0, None, rng)
    return boundary, power_law, findings


def _separation_finding(by: str, kind: str, lo: float | None, hi: float | None, side: str,
                        shared: float | None, prof: ProfileSet | None, level: float
                        ) -> Finding:
    where = (f"; the profile-likelihood {level:.0%} set of λ_c is "
             f"{_set_words(prof)}" if prof is not None else
             f"; any λ_c between {outward(lo, 4, down=True)} and "
             f"{outward(hi, 4, down=False)} fits as well"
             if lo is not None and hi is not None else "")
    return finding(
        Reason.TRANSITION_SEPARATED, "study",
        f"the levels are {'perfectly' if kind == 'complete' else 'quasi-'}"
        f"{' ' if kind == 'complete' else ''}separated: "
        f"{jump_words(by, lo, hi, shared)} and the logistic slope has no maximum{where}: "
        "no point estimate, no bootstrap interval, ν not identified",
        evidence={"separation": kind, "bracket": [lo, hi], "grok_side": side,
                  "shared_level": shared, "profile_set": prof})


def _logistic(sw: _Sweep, level: float, seed: int, n_resamples: int
              ) -> tuple[Boundary | None, PowerLaw | None, list[Finding]]:
    """Without separation: the logistic λ_c (None far outside the sweep), the power law on
    the grokking side, and one bootstrap for both intervals."""
    levels, u, y, use = sw.levels, sw.u, sw.y, sw.use
    ab = logistic_fit(u[use], y[use])
    u_c = _boundary(ab)
    assert ab is not None
    if u_c is None:
        return None, None, [finding(
            Reason.NO_TRANSITION, "study",
            "the logistic fit puts the boundary far outside the sweep: no transition point",
            evidence={"intercept": ab[0], "slope": ab[1]})]
    findings: list[Finding] = []
    lam_c = math.exp(u_c)
    above_side = ab[1] > 0
    below = int(np.sum(levels < lam_c))
    above = int(np.sum(levels > lam_c))
    _bracketing(findings, levels, below, above)
    extrapolated = below == 0 or above == 0
    prof = profile_set(levels, u[use], y[use], above_side, level)
    power = _power(levels, sw.medT, lam_c, above_side)
    if power is None:
        findings.append(finding(
            Reason.TOO_FEW_LEVELS, "study",
            f"fewer than {MIN_POWER_CELLS} grokking levels with an uncensored median: "
            "no power law", evidence={"what": "power_law", "needed": MIN_POWER_CELLS}))
    ci_c, ci_nu = _bootstrap_boundary(sw, power is not None, above_side, level, seed,
                                      n_resamples)
    ci_c, ci_nu = _with_dropped(ci_c, ci_nu, prof)
    if extrapolated:  # beyond the levels no resample places λ_c: no interval
        ci_c = BootstrapCI(ci_c.estimate, None, None, level, ci_c.method,
                           ci_c.n_resamples, ci_c.n_valid, ci_c.seed,
                           f"λ_c lies {'below' if below == 0 else 'above'} every level: "
                           "an extrapolation, no interval")
    ci_c = _open_where_the_profile_is(ci_c, prof)
    boundary = Boundary("none", lam_c, ci_c, None, "above" if above_side else "below",
                        ab[0], ab[1], below, above, prof, extrapolated)
    if power is None:
        return boundary, None, findings
    power_law, fs = _power_law(power, ci_nu, lam_c, extrapolated, level)
    return boundary, power_law, findings + fs


#: the share of resamples with no boundary (separated) above which the bootstrap's intervals
#: are not printed: the dropped resamples lie on one side, and the rest give a biased
#: interval (86 % coverage of a nominal 95 % on 8 levels × 8 runs)
MAX_DROPPED = 0.05


def _with_dropped(ci_c: BootstrapCI, ci_nu: BootstrapCI, prof: ProfileSet | None
                  ) -> tuple[BootstrapCI, BootstrapCI]:
    """λ_c's interval: the bootstrap's joined with the profile-likelihood set (each covers
    where the other's tail is short), or the profile set alone when more than
    :data:`MAX_DROPPED` of the resamples were separated; ν's interval is then not given."""
    dropped = ci_c.n_resamples - ci_c.n_valid
    if dropped <= MAX_DROPPED * ci_c.n_resamples:
        if prof is None or not ci_c.identified or ci_c.low is None or ci_c.high is None:
            return ci_c, ci_nu
        lo = ci_c.low if prof.low is None else min(ci_c.low, prof.low)
        hi = ci_c.high if prof.high is None else max(ci_c.high, prof.high)
        return dataclasses.replace(ci_c, low=lo, high=hi), ci_nu
    why = (f"{dropped} of {ci_c.n_resamples} resamples gave no boundary (separated levels, "
           "or a boundary far outside the sweep), and such resamples lie on one side: a "
           "bootstrap interval of the rest would be biased")
    nu = dataclasses.replace(ci_nu, low=None, high=None, low_unbounded=False,
                             high_unbounded=False, note=why + "; no interval for ν")
    if prof is None:
        return dataclasses.replace(ci_c, low=None, high=None, low_unbounded=False,
                                   high_unbounded=False, note=why), nu
    return dataclasses.replace(ci_c, low=prof.low, high=prof.high,
                               low_unbounded=prof.low is None,
                               high_unbounded=prof.high is None,
                               note=why + "; the interval is the profile-likelihood set"), nu


def _open_where_the_profile_is(ci: BootstrapCI, prof: ProfileSet | None) -> BootstrapCI:
    """The bootstrap interval of λ_c, unbounded on each side where the profile-likelihood set
    runs to the sweep's edge: a closed interval there claimed a bound the likelihood does not
    give (resamples with no boundary — separated — are dropped, and they are the ones that
    would lie beyond it; 22 of 200 replicates of a 4 × 6 design printed such a closed CI)."""
    if prof is None or not ci.identified or (prof.low is not None and prof.high is not None):
        return ci
    note = (f"the profile-likelihood set reaches the {'lowest' if prof.low is None else ''}"
            f"{' and the ' if prof.low is None and prof.high is None else ''}"
            f"{'highest' if prof.high is None else ''} level: the interval is open there; "
            f"{ci.n_resamples - ci.n_valid} of {ci.n_resamples} resamples gave no boundary")
    return dataclasses.replace(
        ci, low=None if prof.low is None else ci.low, high=None if prof.high is None else ci.high,
        low_unbounded=ci.low_unbounded or prof.low is None,
        high_unbounded=ci.high_unbounded or prof.high is None, note=note)


def _bootstrap_boundary(sw: _Sweep, with_power: bool, above_side: bool, level: float,
                        seed: int, n_resamples: int) -> tuple[BootstrapCI, BootstrapCI]:
    """The CIs of λ_c and (``with_power``) ν: one resample of runs within levels serves both,
    the logistic on its scored runs, the medians on all of its runs (budget-short ones too,
    as in the table). A separated resample has no boundary: a failed draw."""
    levels, u, y, use = sw.levels, sw.u, sw.y, sw.use
    strata = [np.flatnonzero(sw.lam == lv) for lv in levels]
    cuts = np.cumsum([s.size for s in strata])[:-1]
    tv = np.where(y == 1, sw.frame["tg_value"].to_numpy(dtype=float), np.inf)

    def stat(ix: np.ndarray) -> list[float]:
        sel = ix[use[ix]]
        if separation(u[sel], y[sel]) != "none":
            return [math.nan, math.nan]  # no maximum-likelihood boundary here
        ucb = _boundary(logistic_fit(u[sel], y[sel]))
        if ucb is None:
            return [math.nan, math.nan]
        nu = math.nan
        if with_power:
            med_b = np.array([np.median(tv[p]) for p in np.split(ix, cuts)])
            pw = _power(levels, med_b, math.exp(ucb), above_side)
            nu = math.nan if pw is None else pw[0]
        return [math.exp(ucb), nu]

    ci_c, ci_nu = bootstrap(strata, stat, seed=seed, level=level, n_resamples=n_resamples,
                            label="runs within levels")
    return ci_c, ci_nu


def _power_law(power: tuple[float, float, int], ci_nu: BootstrapCI, lam_c: float,
               extrapolated: bool, level: float) -> tuple[PowerLaw, list[Finding]]:
    """The power law with ν's interval; ``LAW_CONTRADICTED`` when that interval lies below 0."""
    # ν < 0 contradicts critical slowing down only when its interval says so: a
    # negative point value with an interval reaching 0, or with none, is noise
    nu_below = bool(power[0] < 0 and ci_nu.identified and ci_nu.high is not None
                    and ci_nu.high < 0)
    power_law = PowerLaw(power[0], power[1], power[2], ci_nu, None, nu_below)
    if not nu_below:
        return power_law, []
    assert ci_nu.high is not None
    return power_law, [finding(
        Reason.LAW_CONTRADICTED, "study",
        f"ν = {format_number(power[0])} < 0, its {level:.0%} interval "
        f"below 0 (upper end {outward(ci_nu.high, down=False)}): the time to "
        "grok rises away from λ_c, the opposite of the critical-slowing-down "
        "form T ∝ |λ − λ_c|^(−ν) (ν > 0); the power law does not describe "
        "these levels",
        evidence={"nu": power[0], "nu_ci": ci_nu, "lambda_c": lam_c,
                  "extrapolated": extrapolated})]


def _set_words(prof: ProfileSet) -> str:
    """The profile-likelihood set, each end rounded outwards."""
    a = "[" if prof.low is not None and not prof.low_open else "("
    b = "]" if prof.high is not None and not prof.high_open else ")"
    low = (outward(prof.low, 4, down=True) if prof.low is not None
           else "beyond the lowest level")
    high = (outward(prof.high, 4, down=False) if prof.high is not None
            else "beyond the highest level")
    return f"{a}{low}, {high}{b}" + (
        " (widened to the bracket: under separation the χ² cut is not calibrated)"
        if prof.widened else "")


def _bracketing(findings: list[Finding], levels: np.ndarray, below: int, above: int) -> None:
    if levels.size < MIN_LEVELS or min(below, above) < MIN_SIDE:
        findings.append(finding(
            Reason.TOO_FEW_LEVELS, "study",
            f"{levels.size} levels, {below} below and {above} above λ_c: the transition is "
            f"not bracketed (need ≥ {MIN_LEVELS}, ≥ {MIN_SIDE} per side)",
            evidence={"n_levels": int(levels.size), "below": below, "above": above,
                      "what": "transition"}))




def run_transition(table: pa.Table | pd.DataFrame | LogTable, config: AuditConfig, *, by: str,
                   cell: Sequence[str] = (), level: float = 0.95, seed: int = 0,
                   n_resamples: int = 499, step_unit: str | None = None,
                   source: str | None = None) -> ClaimResult:
    """Audit a phase-boundary claim along ``by`` (λ, positive); see the module docstring.
    ``cell`` splits the runs into separate studies; runs sharing a level but differing in
    another condition are refused (``DUPLICATE_AXIS_VALUES``) unless ``cell`` separates
    them."""
    rc = run_clocks(table, config, source, step_unit)
    design = Design.validate(rc.log, axes=[Axis(by, positive=True)], cell=cell,
                             what="the transition fit")
    out = []
    for key, rcs in studies(rc, design):
        body, fs = _study(rcs, by, level, seed, n_resamples)
        out.append((key, body, fs))
    params = {"by": by, "cell": list(cell), "level": level, "seed": seed,
              "n_resamples": n_resamples, "step_unit": rc.step_unit}
    return rc.result("transition", config, params, out)
