"""Deliberate bugs, each a patch over the core, that the suite must catch (the mutation check).

A :class:`Mutant` patches functions where the core looks them up (``grokaudit.api`` imports
``metric_clocks``, ``ordering``… by name, so those are patched there); the original it wraps is
taken from the module that defines it (``grokaudit.clocks.metric_clocks``…), the same function
``grokaudit.api`` holds (``tests/suite/test_suite_mutations.py`` checks that they are one). Apply one with a
``monkeypatch``-like object that has ``setattr(target, name, value)``; pytest's fixture works,
and so does :class:`Patcher` for use outside pytest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grokaudit.api as api
import grokaudit.cells as cells
import grokaudit.schema as schema
import numpy as np
from grokaudit import clocks, study
from grokaudit.reasons import Reason


@dataclass(frozen=True)
class Mutant:
    name: str
    bug: str  #: the deliberate bug, in one sentence
    apply: Callable[[Any], None]  #: ``apply(monkeypatch)``


def _wrap_metric_clocks(mp: Any, post: Callable[..., Any] | None = None,
                        **cfg_changes: Any) -> None:
    orig = clocks.metric_clocks

    # the core's own signature, keywords included (groups, not_converged…): a wrapper that
    # refused them would make every audit crash, and a crash is not a catch
    def mutant(table: Any, acc: Any, metric: str, cfg: Any, run_index: Any = None,
               **kw: Any) -> Any:
        if cfg_changes:
            cfg = dataclasses.replace(cfg, **cfg_changes)
        out = orig(table, acc, metric, cfg, run_index, **kw)
        return post(out, table, acc, metric, cfg, run_index) if post else out

    mp.setattr(api, "metric_clocks", mutant)


def _first_crossing(mp: Any) -> None:
    _wrap_metric_clocks(mp, rule="crossing")


def _no_stability(mp: Any) -> None:
    _wrap_metric_clocks(mp, stability_check=False)


def _ordering_without_u(mp: Any) -> None:
    orig = study.ordering

    def mutant(cells_: Any, q: str, cfg: Any) -> Any:
        o = orig(cells_, q, cfg)
        C, D, U = o.concordant, o.discordant, o.unidentified
        if o.identified or o.n_cells < 3 or C == D:
            return o
        N = o.n_cells * (o.n_cells - 1) // 2
        lo, hi = (C - D - U) / N, (C - D + U) / N
        shape = ("monotone" if (C - D) / N > cfg.mono_threshold or (C - D) / N <
                 -cfg.mono_threshold else "weak")
        return dataclasses.replace(o, identified=True, direction=1 if C > D else -1,
                                   shape=shape, tau_bounds=(lo, hi),
                                   reason=Reason.ORDERING_IDENTIFIED, sub_reason=None)

    mp.setattr(api, "ordering", mutant)


def _censored_dropped(mp: Any) -> None:
    orig = cells.interval_median

    def mutant(ev: Any, idx: np.ndarray, interval_censoring: bool = True) -> Any:
        idx = np.asarray(idx)
        keep = np.isfinite(ev.upper[idx])
        return orig(ev, idx[keep] if keep.any() else idx, interval_censoring)

    mp.setattr(cells, "interval_median", mutant)


def _retime(out: Any, acc: Any, value: np.ndarray, lower: np.ndarray) -> Any:
    """``out`` with ``t_compress`` (where it was established) set to ``value``/``lower``."""
    ok = out.tc_status == clocks.TC_OK
    tv = np.where(ok, value, out.t_compress.value)
    tl = np.where(ok, lower, out.t_compress.lower)
    tu = np.where(ok, value, out.t_compress.upper)
    tg = acc.t_grok
    lag = clocks.Event(np.where(ok, tv - tg.value, out.lag.value),
                       np.where(ok, tl - tg.upper, out.lag.lower),
                       np.where(ok, tu - tg.lower, out.lag.upper), out.lag.index)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(ok, (tv - tg.value) / tg.value, out.rel_lag_low)
    return dataclasses.replace(
        out, t_compress=clocks.Event(tv, tl, tu, out.t_compress.index), lag=lag,
        rel_lag_low=rel, rel_lag_high=np.where(ok, rel, out.rel_lag_high),
        before_grok=ok & (tu <= tg.lower),
        concurrent=ok & (tl < tg.upper) & (tg.lower < tu))


def _first_dip(mp: Any) -> None:
    def post(out: Any, table: Any, acc: Any, metric: str, cfg: Any, ri: Any) -> Any:
        # settling measured against the band's upper edge only: an undershoot counts as
        # "inside", so a rebound's first dip is taken as the compression time
        P = clocks.pack(table.series[metric], table, ri)
        sm = clocks.trailing_median(P, cfg.smooth)
        above = P.valid & (sm > (out.floor + out.delta)[:, None])
        last = clocks._last_true(above)
        val = clocks._take(P.steps, last + 1)
        low = np.where(last >= 0, clocks._take(P.steps, last), 0.0)
        return _retime(out, acc, val, low)

    _wrap_metric_clocks(mp, post=post)


def _lag_clipped(mp: Any) -> None:
    def post(out: Any, table: Any, acc: Any, metric: str, cfg: Any, ri: Any) -> Any:
        lag = clocks.Event(np.maximum(out.lag.value, 0.0), np.maximum(out.lag.lower, 0.0),
                           np.maximum(out.lag.upper, 0.0), out.lag.index)
        return dataclasses.replace(out, lag=lag, rel_lag_low=np.maximum(out.rel_lag_low, 0.0),
                                   rel_lag_high=np.maximum(out.rel_lag_high, 0.0),
                                   before_grok=np.zeros_like(out.before_grok))

    _wrap_metric_clocks(mp, post=post)


def _no_high_floor_gate(mp: Any) -> None:
    mp.setattr(api, "apply_high_floor_gate", lambda cells_, cfg: tuple(cells_))


def _t_grok_point(mp: Any) -> None:
    orig = clocks.accuracy_clocks

    def mutant(table: Any, cfg: Any, *args: Any, **kw: Any) -> Any:
        return orig(table, dataclasses.replace(cfg, interval_censoring=False), *args, **kw)

    mp.setattr(api, "accuracy_clocks", mutant)


def _stale_at_grok(mp: Any) -> None:
    def post(out: Any, table: Any, acc: Any, metric: str, cfg: Any, ri: Any) -> Any:
        # the last metric point before grok is used however old it is
        P = clocks.pack(table.series[metric], table, ri)
        tgv = np.where(acc.t_grok.censored, -np.inf, acc.t_grok.value)
        j = ((P.steps <= tgv[:, None]) & P.valid).sum(axis=1) - 1
        stale = out.metric_not_at_grok & (j >= 0)
        return dataclasses.replace(
            out, m_grok=np.where(stale, clocks._take(P.values, j), out.m_grok),
            m_grok_step=np.where(stale, clocks._take(P.steps, j), out.m_grok_step),
            metric_not_at_grok=out.metric_not_at_grok & ~stale)

    _wrap_metric_clocks(mp, post=post)


# -- issue 19: verdicts that never overstate -----------------------------------------------

def _snapshot_always_critical(mp: Any) -> None:
    orig = study.snapshot_findings

    def mutant(*args: Any, **kw: Any) -> Any:
        from grokaudit.reasons import Severity
        return [dataclasses.replace(f, severity=Severity.CRITICAL)
                if f.code in (Reason.SNAPSHOT_TRANSIENT, Reason.SNAPSHOT_HIDES_BOUNDARY) else f
                for f in orig(*args, **kw)]

    mp.setattr(api, "snapshot_findings", mutant)


def _ratio_any_floor(mp: Any) -> None:
    def post(out: Any, table: Any, acc: Any, metric: str, cfg: Any, ri: Any) -> Any:
        # the inflation divides by any floor, noisy or never reached, and is never a bound
        with np.errstate(divide="ignore", invalid="ignore"):
            infl = np.where(~np.isnan(out.m_grok) & (out.floor > 0), out.m_grok / out.floor,
                            np.nan)
        return dataclasses.replace(out, inflation=infl,
                                   inflation_lower_bound=np.zeros_like(out.inflation_lower_bound))

    _wrap_metric_clocks(mp, post=post)


def _left_as_point(mp: Any) -> None:
    orig = clocks.first_passage

    def mutant(P: Any, threshold: Any, interval: bool = True, widen: Any = None,
               **kw: Any) -> Any:
        ev = orig(P, threshold, interval, widen, **kw)
        # an event at the first logged point is read at that point, as if logging began at 0
        left = np.isnan(ev.value) & np.isfinite(ev.upper)
        return clocks.Event(np.where(left, ev.upper, ev.value), ev.lower, ev.upper, ev.index)

    mp.setattr(clocks, "first_passage", mutant)


def _no_horizon_check(mp: Any) -> None:
    mp.setattr(api, "horizon_check", lambda *a, **k: None)


def _no_memorization_hidden(mp: Any) -> None:
    mp.setattr(api, "_RUN_CODES", tuple(c for c in api._RUN_CODES
                                        if c is not Reason.NO_MEMORIZATION))


def _missing_metric_silent(mp: Any) -> None:
    mp.setattr(api, "_metric_missing", lambda *a, **k: None)


def _nothing_reads_as_pass(mp: Any) -> None:
    mp.setattr(api, "_nothing_auditable", lambda *a, **k: None)


def _values_as_stored(mp: Any) -> None:
    mp.setattr(schema, "canonical_values", lambda a: a)


def _copies_not_compared(mp: Any) -> None:
    mp.setattr(schema, "duplicate_runs", lambda *a, **k: [])
    mp.setattr(schema, "check_run_ids", lambda *a, **k: None)


def _rebound_from_start(mp: Any) -> None:
    orig = clocks._rebound

    def mutant(sm: np.ndarray, w: Any, pk: Any) -> Any:
        return orig(sm, w, pk._replace(at=np.zeros_like(pk.at)))

    mp.setattr(clocks, "_rebound", mutant)


def _plateau_as_floor(mp: Any) -> None:
    orig = clocks._peak

    def mutant(P: Any, sm: np.ndarray, w: Any, *args: Any, **kw: Any) -> Any:
        out = orig(P, sm, w, *args, **kw)  # the kernel passed on: the core's own signature
        return out._replace(rising=np.zeros_like(out.rising))

    mp.setattr(clocks, "_peak", mutant)


def _chance_as_boundary(mp: Any) -> None:
    orig = cells.summarize_cell

    def mutant(*a: Any, **k: Any) -> Any:
        c = orig(*a, **k)
        gates = tuple(Reason.BOUNDARY_PARTIAL_GENERALIZATION if g is Reason.NO_GROK else g
                      for g in c.gates)
        return dataclasses.replace(c, gates=gates)

    mp.setattr(api, "summarize_cell", mutant)


MUTANTS: tuple[Mutant, ...] = (
    Mutant("first_crossing", "t_compress is the first crossing after grok (the reference's "
           "rule), not the settling time", _first_crossing),
    Mutant("no_stability_check", "the floor-stability check is disabled: every floor is "
           "stable", _no_stability),
    Mutant("ordering_without_u", "an ordering is identified whenever C ≠ D, without the "
           "|C − D| > U rule", _ordering_without_u),
    Mutant("censored_dropped", "censored runs are dropped from the cell medians",
           _censored_dropped),
    Mutant("rebound_first_dip", "settling ignores the band's lower edge, so a rebound's first "
           "dip is taken as compression", _first_dip),
    Mutant("lag_clipped", "a negative lag is clipped to 0 (compression before grok hidden)",
           _lag_clipped),
    Mutant("no_high_floor_gate", "the HIGH_FLOOR_OUTLIER gate is never applied",
           _no_high_floor_gate),
    Mutant("t_grok_point", "t_grok is a point, not an interval (lower = the logged step)",
           _t_grok_point),
    Mutant("stale_at_grok", "the at-grok value is the last metric point before grok however "
           "old it is (METRIC_NOT_AT_GROK never raised)", _stale_at_grok),
    Mutant("snapshot_always_critical", "a snapshot finding is critical even where the value at "
           "grok is undefined (a gated, unsustained cell)", _snapshot_always_critical),
    Mutant("ratio_any_floor", "the inflation divides by any floor, noisy or never reached, "
           "and is never a lower bound", _ratio_any_floor),
    Mutant("left_as_point", "an event at the first logged point is read at that point, as if "
           "logging began at step 0", _left_as_point),
    Mutant("no_horizon_check", "floors are judged only over each run's own horizon",
           _no_horizon_check),
    Mutant("no_memorization_hidden", "NO_MEMORIZATION is computed per run but never reported",
           _no_memorization_hidden),
    Mutant("missing_metric_silent", "runs without the audited metric are not named",
           _missing_metric_silent),
    Mutant("nothing_reads_as_pass", "a log where nothing could be assessed gets no finding "
           "(a green exit 0)", _nothing_reads_as_pass),
    Mutant("values_as_stored", "condition values keep their stored precision (float32 and "
           "float64 spellings of one number are two cells)", _values_as_stored),
    Mutant("copies_not_compared", "run ids and trajectories are not compared: a copy is a "
           "replicate", _copies_not_compared),
    Mutant("rebound_from_start", "the undershoot is measured from the first logged point, "
           "so a norm's rise from its initialization reads as a rebound", _rebound_from_start),
    Mutant("plateau_as_floor", "a metric that never turned down keeps its plateau as a floor",
           _plateau_as_floor),
    Mutant("chance_as_boundary", "a cell whose runs never grokked is gated as a boundary case "
           "(BOUNDARY_PARTIAL_GENERALIZATION)", _chance_as_boundary),
)


class Patcher:
    """A minimal ``monkeypatch`` for use outside pytest: ``with Patcher() as mp: ...``."""

    def __init__(self) -> None:
        self._undo: list[tuple[Any, str, Any]] = []

    def setattr(self, target: Any, name: str, value: Any) -> None:
        self._undo.append((target, name, getattr(target, name)))
        setattr(target, name, value)

    def __enter__(self) -> Patcher:
        return self

    def __exit__(self, *exc: Any) -> None:
        for target, name, old in reversed(self._undo):
            setattr(target, name, old)
        self._undo.clear()
