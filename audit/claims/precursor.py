"""``grokaudit precursor``: does a signal announce grokking? (CLAIMS_SPEC, seed 004 §6.1)

For a per-step signal (``--signal attn_cv``), per run: the peak step of the signal after the
memorization gate (first logged ``train_acc ≥ mem_threshold``), the lead ``t_grok − t_peak``, and
whether the peak is known to precede grokking (``t_peak ≤`` the last logged step before grokking
was first seen: t_grok lies in ``(that step, first step seen]``, and a peak between the two does
not count; the step first seen itself without interval censoring). Runs
that never grok, or never memorize, are counted apart, never dropped silently.

Validity checks:

- ``PEAK_AT_WINDOW_EDGE``: the peak is the first point after the gate or the last logged point
  (a monotone signal "peaks" there trivially).
- The statistic: the fraction of grokked runs whose peak is *interior* (not on the window's
  edge) and precedes grokking. (The raw fraction, edge peaks included, is reported too: it is
  what papers quote, and a signal that simply falls after the gate scores 1 on it.)
- Two nulls, the same statistic with each run's peak placed at random: (1) *over its logged
  points* (the signal's values permuted within the window: the null of a signal that is noise
  from point to point), (2) *uniformly in time* over the window (a uniform step between its
  first and last logged step, read at the first logged point at or after it: the null of a
  signal smooth in time). Under geometric logging the two differ — most points lie early, so
  (1) measures the logging schedule as much as the signal; a signal is specific only when it
  beats both. Seeded; each ``p = (1 + #{null ≥ observed}) / (1 + B)``.
- The placebo comparison: a smooth placebo signal (default ``weight_norm``) scored the same way
  on the same runs, and the exact one-sided McNemar test that the signal succeeds (interior
  peak preceding grokking) in more runs than the placebo: among the runs where exactly one of
  the two succeeds, ``P(X ≥ n_signal_only)`` with ``X ~ Binomial(n_discordant, ½)``.
- ``PRECURSOR_NOT_SPECIFIC`` when the permutation ``p ≥ α`` or the placebo test's ``p ≥ α``
  (the signal does not beat a signal that carries no information about grokking).
- The lead's CI: a seeded percentile bootstrap of the median lead over grokked runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa

from ..clocks import pack
from ..config import AuditConfig
from ..design import Design
from ..errors import ErrorCode, LogFormatError
from ..reasons import Reason
from ..results import Finding, Interval
from ..schema import LogTable
from .flagged import flag_runs
from .results import ClaimResult, Record, finding
from .runs import RunClocks, require_series, run_clocks, studies
from .stats import BootstrapCI, TestResult, bootstrap, mcnemar_exact

DEFAULT_PLACEBO = "weight_norm"


# ------------------------------------------------------------------------------------------
# the body
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PrecursorRun(Record):
    run: str
    gate_step: float | None
    t_grok: float | None  #: None: never grokked (counted apart)
    grokked: bool
    peak_step: float | None
    window_points: int
    peak_at_edge: bool
    #: ``t_grok − t_peak`` to the step grokking was first seen; None when the run is not
    #: scored, or when the peak lies inside t_grok's interval (the lead's sign is not known)
    lead: float | None
    #: True/False when known; None when the run is not scored, or its peak lies inside
    #: t_grok's interval (the signal logged between two accuracy evaluations): not known
    precedes: bool | None
    #: what the log says of the lead: ``(lower − t_peak, seen − t_peak]``, t_grok's interval
    #: (a point without interval censoring); None when the run is not scored
    lead_range: Interval | None = None  #: claim form


@dataclass(frozen=True)
class PermutationNull(Record):
    n_perm: int
    seed: int
    mean_fraction: float | None
    p_value: float | None


@dataclass(frozen=True)
class PlaceboComparison(Record):
    """The placebo scored on the same runs, and the paired test of signal against it."""

    signal: str
    fraction_preceding: float | None
    fraction_preceding_interior: float | None
    n_peak_at_edge: int
    n_signal_only: int  #: runs where only the signal succeeds
    n_placebo_only: int
    test: TestResult  #: exact one-sided McNemar: the signal succeeds more often
    n_compared: int = 0  #: scored runs where the placebo has a window too
    n_without_placebo: int = 0  #: scored runs with no placebo value: left out of the test


@dataclass(frozen=True)
class PrecursorBody(Record):
    step_unit: str
    signal: str
    n_runs: int
    n_memorized: int
    n_grokked: int
    n_scored: int
    n_no_grok: int
    n_no_memorization: int
    fraction_preceding: float | None
    fraction_preceding_interior: float | None
    lead_median: float | None
    lead_ci: BootstrapCI | None
    null_permuted: PermutationNull  #: the peak at a random logged point (values permuted)
    placebo: PlaceboComparison | None
    runs: tuple[PrecursorRun, ...]
    null_time: PermutationNull | None = None  #: the peak at a uniformly random time
    #: grokked, memorized runs with no value of the signal in their window: not scored
    n_no_signal: int = 0
    #: the median lead as the log bounds it: ``(median of the lowest leads, median of the
    #: first-seen leads]``; ``lead_median`` and ``lead_ci`` are None when it holds both signs
    lead_range: Interval | None = None  #: claim form


# ------------------------------------------------------------------------------------------
# scoring
# ------------------------------------------------------------------------------------------

def _peaks(rc: RunClocks, values: np.ndarray) -> dict[str, np.ndarray]:
    """Per run of the study: the post-gate window of the signal, its peak step, and whether
    the peak is on the window's edge."""
    P = pack(values, rc.log)
    pos = rc.pos
    valid, steps, vals = P.valid[pos], P.steps[pos], P.values[pos]
    gate = rc.frame["tm_value"].to_numpy(dtype=float)
    inwin = valid & (steps >= gate[:, None])  # NaN gate (no memorization): empty window
    n_win = inwin.sum(axis=1)
    masked = np.where(inwin, vals, -np.inf)
    k = np.argmax(masked, axis=1)
    has = n_win > 0
    peak_step = np.where(has, steps[np.arange(len(k)), k], np.nan)
    first = np.argmax(inwin, axis=1)
    last = vals.shape[1] - 1 - np.argmax(inwin[:, ::-1], axis=1)
    edge = has & ((k == first) | (k == last))
    return {"n_window": n_win, "peak_step": peak_step, "edge": edge, "steps": steps,
            "in_window": inwin}


def _success(peak_step: np.ndarray, tg: np.ndarray, interior: np.ndarray | None = None
             ) -> np.ndarray:
    """Per run: the peak precedes grokking (and, given ``interior``, is not on an edge)."""
    with np.errstate(invalid="ignore"):
        ok: np.ndarray = peak_step < tg
    if interior is not None:
        ok = ok & interior
    return ok


def _window_draws(pk: dict[str, np.ndarray], rows: np.ndarray, n_perm: int, seed: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What both nulls draw from: the rows' steps, where each run's window begins and how many
    points it holds, and ``n_perm`` uniform draws per run (the same for both nulls)."""
    rng = np.random.default_rng(seed)
    inwin = pk["in_window"][rows]
    first = np.argmax(inwin, axis=1)  # the window's points are contiguous
    return pk["steps"][rows], first, inwin.sum(axis=1), rng.random((n_perm, rows.size))


def _null_points(pk: dict[str, np.ndarray], tg: np.ndarray, use: np.ndarray, n_perm: int,
                 seed: int) -> np.ndarray:
    """Null fractions: each run's peak at a uniformly random logged point of its window (the
    values permuted)."""
    rows = np.flatnonzero(use)
    if rows.size == 0:
        return np.array([])
    steps, first, nw, u = _window_draws(pk, rows, n_perm, seed)
    k = np.floor(u * nw[None, :]).astype(np.int64)
    st = steps[np.arange(rows.size)[None, :], first[None, :] + k]
    interior = (k > 0) & (k < nw[None, :] - 1)
    out: np.ndarray = np.mean((st < tg[rows][None, :]) & interior, axis=1)
    return out


def _null(pk: dict[str, np.ndarray], tg: np.ndarray, use: np.ndarray, n_perm: int,
          seed: int) -> np.ndarray:
    """Null fractions: each run's peak at a time drawn uniformly over its window's step span,
    read at the first logged point at or after it (the logging grid's density does not weigh
    the draw)."""
    rows = np.flatnonzero(use)
    if rows.size == 0:
        return np.array([])
    steps, first, nw, u = _window_draws(pk, rows, n_perm, seed)
    hit = np.zeros((n_perm, rows.size), dtype=bool)
    for j in range(rows.size):
        w = steps[j, first[j]:first[j] + nw[j]].astype(float)
        t = w[0] + u[:, j] * (w[-1] - w[0])
        k = np.minimum(np.searchsorted(w, t, side="left"), w.size - 1)
        interior = (k > 0) & (k < w.size - 1)
        hit[:, j] = (w[k] < tg[rows[j]]) & interior
    out: np.ndarray = hit.mean(axis=1)
    return out


def known_before(rc: RunClocks) -> np.ndarray:
    """Per run, the cut ``c`` such that a peak at step ``p < c`` is known to precede grokking:
    t_grok lies in ``(lower, first step seen]``, so a peak precedes it for certain only at or
    before ``lower`` (the last logged step below the threshold). A peak logged between the two
    — a signal logged more often than the accuracy — is not known to precede it and does not
    count. Without interval censoring, the step grokking was first seen."""
    f = rc.frame
    if not rc.interval_censoring:
        return f["tg_value"].to_numpy(dtype=float)
    cut: np.ndarray = np.nextafter(f["tg_lower"].to_numpy(dtype=float), np.inf)
    return cut


def _score(rc: RunClocks, col: str, param: str, n_perm: int, seed: int) -> dict[str, Any]:
    vals = require_series(rc, col, param)
    pk = _peaks(rc, vals)
    f = rc.frame
    tg = known_before(rc)
    grokked = f["grokked"].to_numpy(dtype=bool)
    use = grokked & (pk["n_window"] > 0)
    ok = _success(pk["peak_step"], tg, ~pk["edge"])
    raw = _success(pk["peak_step"], tg)
    obs = float(np.mean(ok[use])) if use.any() else None
    null_pts = _null_points(pk, tg, use, n_perm, seed)
    null_time = _null(pk, tg, use, n_perm, seed)

    def p_of(null: np.ndarray) -> float | None:
        if obs is None or not null.size:
            return None
        return (1.0 + float(np.sum(null >= obs - 1e-12))) / (1.0 + null.size)

    return {"pk": pk, "use": use, "ok": ok, "cut": tg, "fraction": obs, "null": null_pts,
            "p_perm": p_of(null_pts), "p_time": p_of(null_time),
            "fraction_raw": float(np.mean(raw[use])) if use.any() else None,
            "null_mean": float(null_pts.mean()) if null_pts.size else None,
            "null_time_mean": float(null_time.mean()) if null_time.size else None}


# ------------------------------------------------------------------------------------------
# one study: the signal scored, the runs it could not score, its tests, its lead
# ------------------------------------------------------------------------------------------

class _Outcomes(NamedTuple):
    """Which runs the signal can be scored on (per run of the study)."""

    memorized: np.ndarray
    grokked: np.ndarray
    no_signal: np.ndarray  #: memorized and grokked, with no value of the signal in the window


def _study(rc: RunClocks, signal: str, placebo: str | None, n_perm: int, alpha: float,
           level: float, seed: int) -> tuple[PrecursorBody, list[Finding]]:
    f = rc.frame
    s = _score(rc, signal, "signal", n_perm, seed)
    memorized = f["memorized"].to_numpy(dtype=bool)
    grokked = f["grokked"].to_numpy(dtype=bool)
    oc = _Outcomes(memorized, grokked, memorized & grokked & (s["pk"]["n_window"] == 0))
    lead = np.where(s["use"], f["tg_value"].to_numpy(dtype=float) - s["pk"]["peak_step"],
                    np.nan)
    # the earliest t_grok the log allows: just after the last step evaluated below the
    # threshold (the first-seen step itself without interval censoring)
    lowest = (f["tg_lower"].to_numpy(dtype=float) if rc.interval_censoring
              else f["tg_value"].to_numpy(dtype=float))
    lead_low = np.where(s["use"], lowest - s["pk"]["peak_step"], np.nan)
    findings = _unscored_findings(f, signal, s, oc) + _edge_findings(f, s["pk"])
    plc = _placebo(rc, placebo, s, n_perm, seed) if placebo else None
    findings += _specificity_findings(signal, placebo, s, plc, alpha)
    leads = lead[s["use"]]
    lead_ci = lead_range = None
    lead_median = float(np.median(leads)) if leads.size else None
    if leads.size:
        lows = lead_low[s["use"]]
        lo, hi = float(np.median(lows)), float(np.median(leads))
        lead_range = Interval.span(lo, hi, False, True)
        if lo < 0 < hi:  # the lead's sign is not in the log: no point, no interval of it
            lead_median = None
        elif lo < hi:
            # the cadence only bounds each lead (grokking lies between two evaluations): the
            # first-seen leads are off by up to an evaluation interval, so no point value;
            # the interval covers the range: the lower ends' low to the upper ends' high
            lead_median = None
            lead_ci = _range_ci(lows, leads, seed, level)
        else:
            (lead_ci,) = bootstrap(leads.size, lambda ix: float(np.median(leads[ix])),
                                   seed=seed, level=level, n_resamples=999, label="runs")
    body = PrecursorBody(
        step_unit=rc.step_unit, signal=signal, n_runs=len(f),
        n_memorized=int(memorized.sum()), n_grokked=int(grokked.sum()),
        n_scored=int(s["use"].sum()), n_no_grok=int((memorized & ~grokked).sum()),
        n_no_memorization=int((~memorized).sum()),
        fraction_preceding=s["fraction_raw"], fraction_preceding_interior=s["fraction"],
        lead_median=lead_median, lead_ci=lead_ci, lead_range=lead_range,
        null_permuted=PermutationNull(n_perm, seed, s["null_mean"], s["p_perm"]),
        null_time=PermutationNull(n_perm, seed, s["null_time_mean"], s["p_time"]),
        placebo=plc, runs=_runs(f, s, oc, lead, lead_low),
        n_no_signal=int(oc.no_signal.sum()))
    return body, findings


def _precedes(peak: float, cut: float, seen: float) -> bool | None:
    """Known to precede (before ``cut``), known not to (at or after the step grokking was
    first seen), or not known: the peak lies inside t_grok's interval."""
    if peak < cut:
        return True
    if peak >= seen:
        return False
    return None


def _range_ci(lows: np.ndarray, highs: np.ndarray, seed: int, level: float
              ) -> BootstrapCI | None:
    """A bootstrap interval of a median known only as a range (each run's lead in
    ``(low, high]``): runs resampled, the interval from the lower ends' median's lower
    percentile to the upper ends' median's upper percentile, so that it covers wherever in
    its range each lead lies. None when either end has no interval."""
    c_lo, c_hi = bootstrap(lows.size, lambda ix: np.array([np.median(lows[ix]),
                                                           np.median(highs[ix])]),
                           seed=seed, level=level, n_resamples=999, label="runs")
    if not (c_lo.identified and c_hi.identified):
        return c_lo if not c_lo.identified else c_hi
    return BootstrapCI(None, c_lo.low, c_hi.high, level,
                       "percentile (of a range: its lower ends' low, its upper ends' high)",
                       c_lo.n_resamples, min(c_lo.n_valid, c_hi.n_valid), seed,
                       low_unbounded=c_lo.low_unbounded, high_unbounded=c_hi.high_unbounded)


def _runs(f: pd.DataFrame, s: Mapping[str, Any], oc: _Outcomes, lead: np.ndarray,
          lead_low: np.ndarray) -> tuple[PrecursorRun, ...]:
    """Each run's window, peak and lead, by run name: the lead as a value only when its sign
    is known (the peak not inside t_grok's interval), its range always."""
    pk, cut = s["pk"], s["cut"]
    tg = f["tg_value"].to_numpy(dtype=float)
    tm = f["tm_value"].to_numpy(dtype=float)
    runs = []
    for i, r in enumerate(f.itertuples(index=False)):
        precedes = (_precedes(float(pk["peak_step"][i]), float(cut[i]), float(tg[i]))
                    if s["use"][i] else None)
        known = s["use"][i] and precedes is not None
        runs.append(PrecursorRun(
            run=str(r.run), gate_step=float(tm[i]) if oc.memorized[i] else None,
            t_grok=float(tg[i]) if oc.grokked[i] else None, grokked=bool(oc.grokked[i]),
            peak_step=None if np.isnan(pk["peak_step"][i]) else float(pk["peak_step"][i]),
            window_points=int(pk["n_window"][i]), peak_at_edge=bool(pk["edge"][i]),
            lead=float(lead[i]) if known else None, precedes=precedes,
            lead_range=(Interval.span(float(lead_low[i]), float(lead[i]), False, True)
                        if s["use"][i] else None)))
    runs.sort(key=lambda d: d.run)
    return tuple(runs)


def _unscored_findings(f: pd.DataFrame, signal: str, s: Mapping[str, Any], oc: _Outcomes
                       ) -> list[Finding]:
    """The runs counted apart (never memorized, never grokked, no value of the signal in
    their window), and ``NOTHING_AUDITABLE`` when no run is left to score."""
    memorized, grokked, no_signal = oc
    findings = []
    if not memorized.all():
        findings.append(flag_runs(
            Reason.NO_MEMORIZATION, f, ~memorized,
            f"{int((~memorized).sum())} runs never reach the memorization gate: no window",
            of=len(f)))
    if (memorized & ~grokked).any():
        findings.append(flag_runs(
            Reason.NO_GROK, f, memorized & ~grokked,
            f"{int((memorized & ~grokked).sum())} memorized runs never grok: counted apart",
            of=len(f)))
    # runs the signal says nothing about: memorized and grokked, yet no value of the signal in
    # their window (or none at all). Counted and named: fewer scored runs never read as a pass
    if no_signal.any():
        findings.append(finding(
            Reason.METRIC_MISSING, "run",
            f"{int(no_signal.sum())} of {int((memorized & grokked).sum())} grokked runs have no "
            f"value of {signal} after the memorization gate: not scored",
            runs=sorted(f.loc[no_signal, "run"].astype(str)),
            evidence={"signal": signal, "n_runs": int(no_signal.sum()),
                      "of": int((memorized & grokked).sum()),
                      "no_points": sorted(f.loc[no_signal, "run"].astype(str))}))
    if not s["use"].any():
        findings.append(_nothing_auditable(f, signal, oc))
    return findings


def _nothing_auditable(f: pd.DataFrame, signal: str, oc: _Outcomes) -> Finding:
    memorized, grokked, no_signal = oc
    why = []
    if not grokked.any():
        why.append("no run grokked")
    elif not (memorized & grokked).any():
        why.append("no grokked run reached the memorization gate")
    if no_signal.any():
        why.append(f"{int(no_signal.sum())} grokked runs have no value of {signal} in "
                   "their window")
    return finding(
        Reason.NOTHING_AUDITABLE, "study",
        f"no run could be scored ({'; '.join(why) or 'no window'}): the claim that "
        f"{signal} announces grokking is not tested",
        evidence={"signal": signal, "n_runs": len(f), "n_grokked": int(grokked.sum()),
                  "n_memorized": int(memorized.sum()),
                  "n_without_signal": int(no_signal.sum())})


def _edge_findings(f: pd.DataFrame, pk: Mapping[str, np.ndarray]) -> list[Finding]:
    """``PEAK_AT_WINDOW_EDGE`` for the runs whose peak is the window's first or last point."""
    edge_runs = f.loc[pk["edge"], "run"].tolist()
    n_with = int((pk["n_window"] > 0).sum())
    if not edge_runs:
        return []
    return [finding(
        Reason.PEAK_AT_WINDOW_EDGE, "study",
        f"{len(edge_runs)}/{n_with} runs peak on the gate or at the log end",
        runs=sorted(edge_runs),
        evidence={"n_runs": len(edge_runs), "of": n_with,
                  "majority": len(edge_runs) * 2 >= max(n_with, 1)})]


def _placebo(rc: RunClocks, placebo: str, s: Mapping[str, Any], n_perm: int, seed: int
             ) -> PlaceboComparison:
    """The placebo scored on the same runs: grokked, with a window for the signal and for the
    placebo (a run without placebo values is no failure of the placebo: it is left out, and
    counted); the exact McNemar test of the signal against it."""
    ps = _score(rc, placebo, "placebo", n_perm, seed)
    both = s["use"] & (ps["pk"]["n_window"] > 0)
    a, b = s["ok"][both], ps["ok"][both]
    return PlaceboComparison(
        signal=placebo, fraction_preceding=ps["fraction_raw"],
        fraction_preceding_interior=ps["fraction"],
        n_peak_at_edge=int(ps["pk"]["edge"].sum()),
        n_signal_only=int(np.sum(a & ~b)), n_placebo_only=int(np.sum(~a & b)),
        test=mcnemar_exact(a, b), n_compared=int(both.sum()),
        n_without_placebo=int((s["use"] & ~both).sum()))


def _specificity_findings(signal: str, placebo: str | None, s: Mapping[str, Any],
                          plc: PlaceboComparison | None, alpha: float) -> list[Finding]:
    """``PRECURSOR_NOT_SPECIFIC`` when the signal does not beat a null or the placebo."""
    obs = s["fraction"]
    if obs is None:
        return []
    failed = []
    if s["p_perm"] is not None and s["p_perm"] >= alpha:
        failed.append("permutation")
    if s["p_time"] is not None and s["p_time"] >= alpha:
        failed.append("time")
    if plc is not None and plc.test.p_value is not None and plc.test.p_value >= alpha:
        failed.append("placebo")
    if not failed:
        return []
    # a test whose smallest attainable p is not below α was never passable: say so, not that
    # the signal "does no better" (n_perm draws: p ≥ 1/(1 + n_perm); McNemar on n runs with
    # a placebo value: p ≥ 2^−n)
    n_perm = int(s["null"].size)
    floor = {"permutation": 1.0 / (1.0 + n_perm), "time": 1.0 / (1.0 + n_perm),
             "placebo": 0.5 ** plc.n_compared if plc is not None else 1.0}
    untestable = [x for x in failed if floor[x] >= alpha]
    beaten = [x for x in failed if x not in untestable]
    words = {"permutation": "its own values permuted within runs",
             "time": "its peak placed uniformly in time",
             "placebo": f"the placebo {placebo} (exact McNemar p = "
                        f"{plc.test.p_value:.3g})" if plc else ""}
    parts = []
    if beaten:
        parts.append(f"{signal} does no better than "
                     + " or ".join(words[x] for x in beaten) + f" at α = {alpha}")
    if untestable:
        parts.append("the " + " and ".join(
            {"permutation": f"permutation null ({n_perm} draws)",
             "time": f"time null ({n_perm} draws)",
             "placebo": f"placebo test (on {plc.n_compared if plc else 0} runs)"}[x]
            for x in untestable)
            + f" cannot reach p < {alpha} (smallest attainable p = "
            + ", ".join(f"{floor[x]:.3g}" for x in untestable)
            + "): more runs or draws are needed before the signal can be called specific")
    return [finding(
        Reason.PRECURSOR_NOT_SPECIFIC, "study", "; ".join(parts),
        evidence={"fraction": obs, "p_perm": s["p_perm"], "p_time": s["p_time"],
                  "alpha": alpha,
                  "placebo": placebo, "placebo_test": plc.test if plc else None,
                  "placebo_fraction": plc.fraction_preceding_interior if plc else None,
                  "failed": failed, "untestable": untestable})]


def run_precursor(table: pa.Table | pd.DataFrame | LogTable, config: AuditConfig, *,
                  signal: str, placebo: str | None = None, cell: Sequence[str] = (),
                  n_perm: int = 999, alpha: float = 0.05, level: float = 0.95, seed: int = 0,
                  step_unit: str | None = None, source: str | None = None) -> ClaimResult:
    """Audit the claim that ``signal`` announces grokking; see the module docstring.

    The statistic pools every run of a study (it has no axis: runs of different conditions
    are exchangeable for the question "does the peak precede grokking?"); ``cell`` splits the
    runs into separate studies."""
    rc = run_clocks(table, config, source, step_unit)
    if rc.log.train_acc is None:
        raise LogFormatError("precursor needs train_acc (the memorization gate); the log has "
                             "none", path=source, column="train_acc",
                             code=ErrorCode.MISSING_COLUMN)
    require_series(rc, signal, "signal")
    if placebo is not None:
        if placebo == signal:
            raise LogFormatError(f"--placebo {placebo!r} is the signal itself: a placebo is "
                                 "another signal, one that carries no information about "
                                 "grokking (default weight_norm)", path=source,
                                 column=placebo, param="placebo",
                                 code=ErrorCode.INVALID_OPTION)
        require_series(rc, placebo, "placebo")
    elif DEFAULT_PLACEBO in rc.log.series and signal != DEFAULT_PLACEBO:
        placebo = DEFAULT_PLACEBO
    out = []
    design = Design.validate(rc.log, axes=None, cell=cell, what="the precursor statistic")
    for key, rcs in studies(rc, design):
        body, fs = _study(rcs, signal, placebo, n_perm, alpha, level, seed)
        out.append((key, body, fs))
    params = {"signal": signal, "placebo": placebo, "cell": list(cell), "n_perm": n_perm,
              "alpha": alpha, "level": level, "seed": seed, "step_unit": rc.step_unit}
    return rc.result("precursor", config, params, out)
