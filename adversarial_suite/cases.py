"""The named adversarial cases, each with its pre-registered expected verdict, reasons and numbers.

Every case builds its log from known parameters (:mod:`.generators`) and states, before the
audit runs, what a correct audit must say: the study verdict, the reason codes that must and
must not appear, and the numbers (logged steps, floors, orderings) that follow from the
construction. The numbers were worked out from the construction by the rules of AUDIT_SPEC
(a first-passage time is the first logged step at or after the true crossing; a linear fall
seen through a trailing median of 3 points enters the band one logged point after the raw
metric does), and :func:`~.generators.settle_step`, a plain-loop transcription of the settling
rule, agrees with each of them (``tests/suite/test_suite_cases.py`` checks that too).

Runs last 10 000 steps and log every 100 steps unless a case says otherwise; the metric is
``emb_erank`` with a floor of 10 (band half-width δ = 0.5) unless stated.

The user's thresholds
---------------------
``grokaudit suite`` runs the cases under the user's config, so a case is a *function of the
config* (:class:`K` holds it): its log is built relative to the thresholds, so that the
pre-registered answer holds for any valid value, and what cannot hold for every value is worked
out from the config. In short:

* accuracy levels sit on the right side of ``grok_threshold``, ``full_threshold`` and
  ``mem_threshold`` (:func:`~.generators.acc_levels`); a fall lasts at least ``sustain`` points;
* the settling steps are pre-registered; each fall (or return, or collapse) is placed so that
  the smoothed metric settles exactly there under the user's ``rel_tol``, ``abs_tol`` and
  ``smooth`` (:meth:`K.solve`, by the plain-loop oracle);
* magnitudes a rule compares with the band are multiples of δ (noise, undershoot, drift, a
  second floor); floors and peaks follow ``high_floor_factor``, ``transient_threshold``,
  ``min_rel_drop`` and ``min_abs_drop``;
* runs are lengthened until the final windows (``floor_frac``, ``min_floor_points``,
  ``max_floor_frac``) lie on the flat tail (:meth:`K.fit_length`);
* an ordering's shape (``mono_threshold``, ``flat_threshold``) and the clock verdict
  (``large_lag``, ``censor_warn``) are derived from the pre-registered intervals by
  :mod:`.oracle`.

A value a case's design cannot show (a ``smooth`` wider than the gap it must resolve, a
``censor_warn`` no passing cell can exceed) raises :class:`Unsupported`; that case then keeps
its own (the profile's) value of that threshold, and the suite says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from grokaudit import AuditConfig, Reason
from grokaudit.config import RANGES, make_config
from grokaudit.config import replace as replace_config
from grokaudit.errors import ConfigError

from .expect import LOW_POWER, Approx, Expect, OneOf, StudyExpect
from .generators import (
    RunSpec,
    _median,
    band_delta,
    cell_runs,
    drop_ratio,
    metric_points,
    settle_margin,
    settle_step,
    spec_windows,
    table,
    trailing_median,
    with_levels,
)
from .oracle import Iv, Ord, clock_verdict, ordering, rel_lags

R = Reason
#: The base run: starts at 30, peaks at 40 at t_grok, falls linearly to the floor 10.
BASE = RunSpec("base", m_start=30.0, m_peak=40.0, floor=10.0, t_mem=500.0)
CLOCK_VERDICTS = frozenset({R.TWO_CLOCKS, R.ONE_CLOCK_LARGE_LAG, R.PARTIALLY_SEPARATED,
                            R.SINGLE_CLOCK_SMALL_LAG, R.LARGE_LAG_ORDERING_UNDETERMINED})

#: Fields that describe a log's design, not a threshold: each case sets its own, whatever the
#: user's config says (a project's ``metrics = ["emb_pr"]`` must not break a synthetic log).
#: ``fail_on`` is a reporting choice, not a definition: the cases' exit codes are registered
#: under the default severities, so a project's ``fail_on = "none"`` must not fail them.
DESIGN_DEFAULTS: dict[str, Any] = {"by": None, "cell": (), "metrics": ("emb_erank",),
                                   "acc_scale": None, "on_duplicate": "error",
                                   "fail_on": ("default",)}

#: The thresholds that place the settling step and the final windows.
SETTLE_FIELDS = ("smooth", "rel_tol", "abs_tol")
WINDOW_FIELDS = ("floor_frac", "min_floor_points", "max_floor_frac", "smooth", "sustain")
DROP_FIELDS = ("min_rel_drop", "min_abs_drop", "smooth")
#: Every threshold a case may follow (the numeric options of the config).
_THRESHOLDS = tuple(RANGES)
#: Fields validated against each other: reverting one may need its partner reverted too.
_PARTNERS = {"floor_frac": ("max_floor_frac",), "max_floor_frac": ("floor_frac",),
             "mono_threshold": ("flat_threshold",), "flat_threshold": ("mono_threshold",)}
#: Smallest distance of a smoothed value from a band edge (in band half-widths) a placement
#: may leave: closer would test float rounding, not the audit.
MIN_MARGIN = 0.005
#: Placements found by :meth:`K.solve`, by spec and the thresholds they depend on (the same
#: clean runs appear in several cases).
_SOLVED: dict[Any, float] = {}
#: Longest run a case may be stretched to, as a multiple of its design length.
MAX_STRETCH = 4


class Unsupported(Exception):
    """A case's log cannot show its point under the config's value of one of ``fields``: the
    case keeps its own (the profile's) value of the first of them the user changed."""

    def __init__(self, fields: Sequence[str], reason: str) -> None:
        super().__init__(reason)
        self.fields = tuple(fields)
        self.reason = reason


# ------------------------------------------------------------------------------------------
# the config a case is built under
# ------------------------------------------------------------------------------------------

class K:
    """The thresholds one case is built under, and the tools that place its log relative to
    them. Nothing here runs the audit: the settling steps, windows and drops come from the
    plain-loop oracles of :mod:`.generators`, orderings and verdicts from :mod:`.oracle`."""

    def __init__(self, cfg: AuditConfig) -> None:
        self.cfg = cfg

    # -- magnitudes ---------------------------------------------------------------------------
    def delta(self, floor: float) -> float:
        """The band half-width around ``floor``."""
        return band_delta(floor, self.cfg)

    def peak(self, floor: float, nominal: float) -> float:
        """``nominal``, or a higher peak when a fall from ``nominal`` to ``floor`` would not
        count as compression under ``min_rel_drop`` / ``min_abs_drop``."""
        c = self.cfg
        if c.min_rel_drop > 0.85:
            raise Unsupported(("min_rel_drop",), "a compression that large leaves no room for "
                              "the case's floors")
        need: float = max(floor / (1.0 - c.min_rel_drop - 0.1), floor + 1.25 * c.min_abs_drop)
        return max(nominal, need)

    def base(self, **changes: Any) -> RunSpec:
        """:data:`BASE` with ``changes``, its peak raised if the drop must be larger."""
        spec = replace(BASE, **changes)
        pk = self.peak(spec.floor, spec.m_peak)
        if pk != spec.m_peak:
            spec = replace(spec, m_start=spec.m_start * pk / spec.m_peak, m_peak=pk)
        return spec

    # -- orderings and verdicts ---------------------------------------------------------------
    def ordering(self, cells: Sequence[Iv]) -> Ord:
        return ordering(cells, self.cfg)

    def verdict(self, tg: Sequence[Iv], tc: Sequence[Iv], run_tg: Sequence[Iv],
                run_tc: Sequence[Iv]) -> Reason:
        """The clock verdict from the cells' t_grok/t_compress intervals and the eligible
        runs' (uncensored rel_lag bounds; censored t_compress counts as censored)."""
        lo, hi = rel_lags(run_tg, run_tc)
        n_cens = sum(iv.censored for iv in run_tc)
        return clock_verdict(self.ordering(tg), self.ordering(tc), lo, hi, n_cens, self.cfg)

    def simple_verdict(self, tg: Mapping[Any, int], tc: Mapping[Any, int], seeds: int,
                       cad_g: int = 100, cad_c: int = 100) -> tuple[Reason, Ord, Ord]:
        """The verdict of a study whose runs all settle: every seed of a cell at the cell's
        logged t_grok and t_compress."""
        cells = sorted(tg)
        ivg = [Iv(tg[c] - cad_g, tg[c]) for c in cells]
        ivc = [Iv(tc[c] - cad_c, tc[c]) for c in cells]
        v = self.verdict(ivg, ivc, [g for g in ivg for _ in range(seeds)],
                         [c for c in ivc for _ in range(seeds)])
        return v, self.ordering(ivg), self.ordering(ivc)

    # -- settling -----------------------------------------------------------------------------
    def settle(self, spec: RunSpec, floor: float | None = None) -> tuple[int, int] | None:
        c = self.cfg
        return settle_step(spec, c.rel_tol, c.smooth, abs_tol=c.abs_tol, floor=floor)

    def _margin(self, spec: RunSpec, floor: float | None) -> float:
        c = self.cfg
        return settle_margin(spec, c.rel_tol, c.smooth, abs_tol=c.abs_tol, floor=floor)

    def solve(self, spec: RunSpec, target: float, *, fld: str = "t_floor",
              floor: float | None = None, lower: float | None = None) -> RunSpec:
        """``spec`` with ``fld`` (when the fall ends, the return, the collapse) placed so that
        the smoothed metric settles exactly at logged step ``target`` (previous logged step
        outside the band) under this config. The design value is kept when it already does
        (so the default config reproduces the hand-worked logs); otherwise the value with the
        widest margin to the band edges is searched for."""
        cad = spec.dt * spec.metric_every
        want = (int(target), int(target - cad if lower is None else lower))
        if self.settle(spec, floor) == want and self._margin(spec, floor) > MIN_MARGIN:
            return spec
        c = self.cfg
        key = (repr(replace(spec, run="", conditions={}, noise_seed=0)), want, fld, floor,
               c.rel_tol, c.abs_tol, c.smooth)
        if key not in _SOLVED:
            if len(_SOLVED) > 4096:
                _SOLVED.clear()
            _SOLVED[key] = self._search(spec, want, fld, floor)
        change: dict[str, Any] = {fld: _SOLVED[key]}  # a field named at run time
        return replace(spec, **change)

    def _search(self, spec: RunSpec, want: tuple[int, int], fld: str,
                floor: float | None) -> float:
        lo = {"t_floor": spec.peak_time, "t_return": (spec.t_dip or 0.0),
              "t_collapse": spec.t_floor}[fld] + 1.0
        hi = lo + 4.0 * spec.length

        seen: dict[float, float] = {}

        def at(v: float) -> float:
            if v not in seen:
                change: dict[str, Any] = {fld: v}  # a field named at run time
                st = self.settle(replace(spec, **change), floor)
                seen[v] = math.inf if st is None else float(st[0])
            return seen[v]

        why = (f"no placement of the case's {fld.replace('t_', '')} settles the smoothed metric "
               f"at step {want[0]} under these thresholds")
        if at(lo) > want[0] or at(hi) < want[0]:
            raise Unsupported(SETTLE_FIELDS, why)
        a_lo, a_hi = lo, hi  # smallest v with at(v) >= target
        while a_hi - a_lo > 0.5:
            m = 0.5 * (a_lo + a_hi)
            a_lo, a_hi = (a_lo, m) if at(m) >= want[0] else (m, a_hi)
        b_lo, b_hi = lo, hi  # largest v with at(v) <= target
        while b_hi - b_lo > 0.5:
            m = 0.5 * (b_lo + b_hi)
            b_lo, b_hi = (m, b_hi) if at(m) <= want[0] else (b_lo, m)
        best, best_m = None, MIN_MARGIN
        for v in np.linspace(a_hi, b_lo, 17) if b_lo >= a_hi else ():
            change: dict[str, Any] = {fld: float(v)}  # a field named at run time
            s2 = replace(spec, **change)
            if self.settle(s2, floor) == want:
                m = self._margin(s2, floor)
                if m > best_m:
                    best, best_m = float(v), m
        if best is None:
            raise Unsupported(SETTLE_FIELDS, why)
        return best

    # -- lengths and checks -------------------------------------------------------------------
    def fit_length(self, specs: Sequence[RunSpec], base: int) -> int:
        """The shortest run length from ``base`` up (in steps of 2000) whose final windows lie
        where the construction is flat: W1 after every fall has ended, every designed settle
        before W2, and the accuracy's final window after every grok (and fall)."""
        c = self.cfg
        for L in range(base, MAX_STRETCH * base + 1, 2000):
            if all(self._fits(replace(s, length=L)) for s in specs):
                return L
        raise Unsupported(WINDOW_FIELDS, "the final windows do not fit on the flat end of the "
                          f"case's runs even when stretched to {MAX_STRETCH}× their length "
                          f"(floor_frac {c.floor_frac}, min_floor_points {c.min_floor_points})")

    def _fits(self, s: RunSpec) -> bool:
        c = self.cfg
        win = spec_windows(s, c)
        if win is None:
            return False
        flat = {"compress": s.t_floor, "none": s.t_floor, "drift": s.t_floor,
                "late_collapse": s.t_floor,
                "rebound": s.t_return if s.t_return is not None else s.t_floor + 1500
                }.get(s.metric_shape)
        if flat is not None and win.w1_lo < flat:
            return False
        if s.metric_shape in ("compress", "rebound") and s.acc_shape != "never":
            st = self.settle(s)
            if st is None or st[0] >= win.w2_lo:
                return False
        g = s.grid()
        acc = np.unique(np.r_[g[:: s.acc_every], g[-1]]).astype(float)
        target = g[-1] - c.floor_frac * (g[-1] - g[0])
        n_in = int((acc >= target).sum())
        start = target if n_in >= c.min_floor_points else float(
            acc[max(acc.size - c.min_floor_points, 0)])
        acc_flat = s.t_grok
        if s.acc_shape == "unsustained" and s.t_fall is not None:
            acc_flat = s.t_fall + s.fall_points * s.dt
        return s.acc_shape == "never" or start >= acc_flat

    def finish(self, specs: Sequence[RunSpec], base: int = 10000) -> tuple[list[RunSpec], int]:
        """Accuracy levels for this config, and the run length that fits the final windows."""
        specs = [with_levels(s, self.cfg) for s in specs]
        L = self.fit_length(specs, base)
        return [replace(s, length=L) for s in specs], L

    def check(self, specs: Sequence[RunSpec], outliers: Iterable[Any] = (),
              no_compression: Iterable[str] = ()) -> None:
        """Refuse (:class:`Unsupported`) a log whose premise the config breaks: a run without
        a floor, a designed compression too small for ``min_rel_drop``/``min_abs_drop``, or a
        cell that ``high_floor_factor`` would gate (other than the designed ``outliers``)."""
        c = self.cfg
        nocomp = set(no_compression)
        floors: dict[tuple[Any, ...], dict[Any, list[float]]] = {}
        for s in specs:
            win = spec_windows(s, c, noise=True)
            if win is None:
                raise Unsupported(WINDOW_FIELDS, f"run {s.run} has no floor window")
            if s.metric_shape in ("compress", "rebound") and s.acc_shape != "never" \
                    and s.run not in nocomp:
                ratio, drop = drop_ratio(s, c)
                if not (ratio >= c.min_rel_drop + 0.02 and drop >= 1.02 * c.min_abs_drop):
                    raise Unsupported(DROP_FIELDS, f"run {s.run}'s compression (drop "
                                      f"{drop:.3g}, {ratio:.0%} of its peak) would not count")
            study = tuple(sorted((k, v) for k, v in s.conditions.items()
                                 if k not in ("rho", "seed")))
            floors.setdefault(study, {}).setdefault(s.conditions.get("rho"), []).append(
                win.floor)
        out = set(outliers)
        for cells in floors.values():
            med = {cv: _median(v) for cv, v in cells.items()}
            ref = _median(list(med.values()))
            for cv, f in med.items():
                gated = ref > 0 and f > c.high_floor_factor * ref
                near = ref > 0 and abs(f - c.high_floor_factor * ref) < 0.02 * ref
                if near or gated != (cv in out):
                    raise Unsupported(("high_floor_factor", "rel_tol"),
                                      f"cell {cv}'s floor {f:.3g} against {c.high_floor_factor}"
                                      f"× the median floor {ref:.3g}")


# ------------------------------------------------------------------------------------------
# cases
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Instance:
    """A case built under one config: the log, the expected answer, the config it runs with,
    and the thresholds of the user's config it could not follow (each a sentence)."""

    case: Case
    cfg: AuditConfig
    table: pd.DataFrame
    expect: Expect
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Case:
    """A named adversarial log and what a correct audit must say about it, under a config."""

    name: str
    title: str  #: one line: what the log is
    why: str  #: what a careless audit would claim, and why the expectation is right
    make: Callable[[K], tuple[pd.DataFrame, Expect]]  #: the log and its answer under a config
    options: Mapping[str, Any] = field(default_factory=dict)  #: config fields (by, cell…)
    reference_fails: str | None = None  #: why the reference profile gets it wrong (docs)

    def config(self, cfg: AuditConfig | None = None) -> AuditConfig:
        """The user's config (default: the defaults) with the case's own design fields."""
        cfg = make_config() if cfg is None else cfg
        opts = {**DESIGN_DEFAULTS,
                **{k: (tuple(v) if isinstance(v, list) else v) for k, v in self.options.items()}}
        return replace_config(cfg, **opts)

    def instance(self, cfg: AuditConfig | None = None) -> Instance:
        """Build the case under ``cfg``. A threshold the case cannot follow is reverted to the
        profile's value for this case only, and said so in ``notes``."""
        c = self.config(cfg)
        own = make_config(profile=c.profile)
        notes: list[str] = []
        for _ in range(len(_PARTNERS) + 12):
            try:
                df, exp = self.make(K(c))
                return Instance(self, c, df, exp, tuple(notes))
            except Unsupported as u:
                changed = [f for f in u.fields if getattr(c, f) != getattr(own, f)]
                if changed:
                    f = changed[0]
                    notes.append(f"{f} = {getattr(c, f)!r}: {u.reason}; this case keeps its "
                                 f"own {f} = {getattr(own, f)!r}")
                    c = _revert(c, f, own)
                    continue
                # the reason names no threshold the user changed: fall back to the profile's
                rest = {f: getattr(own, f) for f in _THRESHOLDS if getattr(c, f) != getattr(own, f)}
                if not rest:
                    raise RuntimeError(f"case {self.name} cannot be built under the "
                                       f"{c.profile} profile: {u.reason}") from u
                notes.append(f"{u.reason} under these thresholds; this case keeps its own "
                             + ", ".join(f"{f} = {v!r}" for f, v in rest.items()))
                c = replace_config(c, **rest)
        raise RuntimeError(f"case {self.name}: too many thresholds it cannot follow")

    def table(self, cfg: AuditConfig | None = None) -> pd.DataFrame:
        return self.instance(cfg).table

    def expected(self, cfg: AuditConfig | None = None) -> Expect:
        return self.instance(cfg).expect


def _revert(c: AuditConfig, f: str, own: AuditConfig) -> AuditConfig:
    try:
        return replace_config(c, **{f: getattr(own, f)})
    except ConfigError:
        both = (f, *_PARTNERS.get(f, ()))
        return replace_config(c, **{g: getattr(own, g) for g in both})


def _runs(axis_values: list[Any], n_seeds: int, base: RunSpec, **per_cell: list[Any]
          ) -> list[RunSpec]:
    """Cells along ``rho``: ``per_cell`` gives a field's value per cell (a list per seed if
    the value is itself a list)."""
    out: list[RunSpec] = []
    for i, v in enumerate(axis_values):
        fixed = {}
        per_seed = {}
        for f, vals in per_cell.items():
            if isinstance(vals[i], list):
                per_seed[f] = vals[i]
            else:
                fixed[f] = vals[i]
        out.extend(cell_runs("rho", v, n_seeds, replace(base, **fixed), **per_seed))
    return out


def _rid(rho: Any, seed: int) -> str:
    return f"rho={rho}/s{seed}"


def _rho(s: RunSpec) -> Any:
    return s.conditions["rho"]


def _settle_all(k: K, specs: Sequence[RunSpec], targets: Mapping[Any, int],
                fld: str = "t_floor") -> list[RunSpec]:
    """Each run placed to settle at its cell's pre-registered step."""
    return [k.solve(s, targets[_rho(s)], fld=fld) for s in specs]


def _ord(o: Ord, **literal: Any) -> dict[str, Any]:
    """An ordering's expectation: the pre-registered (threshold-free) numbers, with the shape
    and identification as the config's thresholds make them."""
    out: dict[str, Any] = {"identified": o.identified}
    if o.identified:
        out.update(direction=o.direction, shape=o.shape)
    else:
        out["sub_reason"] = o.sub_reason
    out.update(literal)
    return out


def _expect(studies: tuple[StudyExpect, ...], present: Iterable[Reason] = (),
            absent: Iterable[Reason] = (), **kw: Any) -> Expect:
    """An :class:`Expect` whose ``present`` holds every derived clock verdict, and whose
    ``absent`` never names one of them."""
    verdicts = {s.verdict for s in studies if isinstance(s.verdict, Reason)}
    return Expect(studies=studies, present=frozenset(set(present) | verdicts),
                  absent=frozenset(set(absent) - verdicts), **kw)


# ------------------------------------------------------------------------------------------
# the reference's nine
# ------------------------------------------------------------------------------------------

#: Clean study: t_grok 2050±30 / 3050±30 / 4050±30, first seen at 2100/3100/4100; each run
#: settles at 2800/3800/4800 (the fall reaches the floor ~600 steps after grok).
CLEAN_TG = {1.0: 2100, 2.0: 3100, 3.0: 4100}
CLEAN_TC = {1.0: 2800, 2.0: 3800, 3.0: 4800}


def _clean_specs(k: K) -> list[RunSpec]:
    # by design the metric reaches its floor 600 steps after grok, enters the band 10 steps
    # earlier, and the smoothed metric is seen inside one point after the next logged step
    specs = _runs([1.0, 2.0, 3.0], 3, k.base(),
                  t_grok=[[a - 30, a, a + 30] for a in (2050, 3050, 4050)],
                  t_floor=[[a + 570, a + 600, a + 630] for a in (2050, 3050, 4050)])
    return _settle_all(k, specs, CLEAN_TC)


def _clean_study(k: K) -> StudyExpect:
    v, og, oc = k.simple_verdict(CLEAN_TG, CLEAN_TC, 3)
    lag = k.ordering([Iv(600, 700)] * 3)  # every cell lags 700 in (600, 800]: tied
    return StudyExpect(
        verdict=v,
        runs={_rid(1.0, 0): {"t_grok.value": 2100, "t_grok.lower": 2000,
                             "t_compress.value": 2800, "t_compress.lower": 2700,
                             "lag.value": 700, "lag.lower": 600, "lag.upper": 800,
                             "rel_lag": 700 / 2100, "floor": 10.0, "delta": k.delta(10.0),
                             "floor_stability": "stable", "t_mem.value": 500,
                             "compression": "compressed"}},
        cells={1.0: {"t_grok.value": 2100, "t_compress.value": 2800, "floor": 10.0,
                     "lag.value": 700, "lag.lower": 600, "lag.upper": 800,
                     "gates": (), "n_grokked": 3, "n_established": 3},
               2.0: {"t_grok.value": 3100, "t_compress.value": 3800, "gates": ()},
               3.0: {"t_grok.value": 4100, "t_compress.value": 4800, "gates": ()}},
        orderings={"t_grok": _ord(og, concordant=3, discordant=0, unidentified=0,
                                  tau_bounds=(1.0, 1.0)),
                   "t_compress": _ord(oc),
                   "lag": _ord(lag, sub_reason=R.TIES_WITHIN_RESOLUTION)},
    )


def _clean(k: K) -> tuple[pd.DataFrame, Expect]:
    specs, _ = k.finish(_clean_specs(k))
    k.check(specs)
    return table(specs), _expect(
        (_clean_study(k),), present={R.SHARED_ENDPOINT},
        absent={R.INCONCLUSIVE_CENSORING, R.REBOUND, R.FLOOR_UNSTABLE, R.MEDIAN_CENSORED,
                R.COMPRESSION_BEFORE_GROK})


CLEAN_ONE_CLOCK = Case(
    name="clean_one_clock",
    title="three cells; compression follows grok by 700 steps in each",
    why=("The easy case: both clocks move together and the lag is small (rel_lag 0.17–0.33). "
         "The audit must identify both orderings and say SINGLE_CLOCK_SMALL_LAG (under "
         "large_lag 0.5), with the settling step exact to the cadence."),
    make=_clean,
    options={"by": "rho"},
)


def _all_censored(k: K) -> tuple[pd.DataFrame, Expect]:
    specs, L = k.finish(_runs([1.0, 2.0, 3.0], 2, k.base(acc_shape="never")))
    k.check(specs)
    exp = Expect(
        studies=(StudyExpect(
            verdict=LOW_POWER,
            runs={_rid(1.0, 0): {"t_grok.censored": True, "t_grok.value": None,
                                 "t_grok.upper": None, "t_grok.lower": L,
                                 "t_compress": None, "lag": None, "inflation": None,
                                 "frac_pre": None, "m_grok": None,
                                 "reasons_include": (R.NO_GROK,)}},
            # no run of a cell grokked: the cell's gate is NO_GROK, not a boundary between
            # generalizing and not (issue 39: runs stuck at chance read as a boundary case)
            cells={v: {"gates": (R.NO_GROK,), "n_grokked": 0,
                       "t_grok.censored": True, "t_grok.value": None, "t_compress": None}
                   for v in (1.0, 2.0, 3.0)},
        ),),
        present=frozenset({R.NO_GROK, R.LOW_POWER_DESCRIPTIVE, R.MEDIAN_CENSORED,
                           R.NOTHING_AUDITABLE}),
        absent=CLOCK_VERDICTS | {R.INCONCLUSIVE_CENSORING, R.SNAPSHOT_TRANSIENT,
                                 R.BOUNDARY_PARTIAL_GENERALIZATION},
        exit_code=1,  # nothing was assessed: never a green exit 0
    )
    return table(specs), exp


ALL_CENSORED = Case(
    name="all_censored",
    title="no run ever groks (test_acc stays at 0.30)",
    why=("Every t_grok is right-censored at the last step. No lag, no t_compress, no "
         "ordering can be computed; a careless audit would fall back to the last step and "
         "report numbers. The cells are boundary cells (not fully generalized) and the "
         "study is descriptive only; since nothing was assessed the result is "
         "NOTHING_AUDITABLE (critical, exit 1), never a green pass."),
    make=_all_censored,
    options={"by": "rho"},
)


def _high_floor(k: K) -> tuple[pd.DataFrame, Expect]:
    # a fourth cell whose floor is high_floor_factor + 1 times the others' (40 under the
    # default factor 3): it compresses from 2.5× to 1× its floor
    f4 = 10.0 * (k.cfg.high_floor_factor + 1.0)
    cell4 = _runs([4.0], 3, k.base(m_start=2.0 * f4, m_peak=2.5 * f4, floor=f4,
                                   t_grok=5050.0, t_floor=5650.0))
    specs, _ = k.finish(_clean_specs(k) + _settle_all(k, cell4, {4.0: 5800}))
    k.check(specs, outliers={4.0})
    v, og, _ = k.simple_verdict(CLEAN_TG, CLEAN_TC, 3)
    exp = _expect((StudyExpect(
        verdict=v,
        cells={4.0: {"gates": (R.HIGH_FLOOR_OUTLIER,), "floor": f4, "t_compress.value": 5800},
               1.0: {"gates": ()}, 2.0: {"gates": ()}, 3.0: {"gates": ()}},
        orderings={"t_grok": _ord(og, n_cells=3, axis_values=(1.0, 2.0, 3.0)),
                   "floor": {"n_cells": 3}},
        findings=((R.HIGH_FLOOR_OUTLIER, 4.0),),
    ),), present={R.HIGH_FLOOR_OUTLIER})
    return table(specs), exp


HIGH_FLOOR_BOUNDARY = Case(
    name="high_floor_boundary",
    title="the clean study plus a cell whose floor is 4× the others' (40 vs 10)",
    why=("The reference's second boundary criterion: a floor above 3× (high_floor_factor) the "
         "median floor of all cells marks a boundary cell. It is shown with HIGH_FLOOR_OUTLIER "
         "and left out of every ordering, so the orderings run over the three clean cells "
         "only. The fourth cell's floor is (high_floor_factor + 1) × 10."),
    make=_high_floor,
    options={"by": "rho"},
)


#: t_grok rises along rho (first seen 1100/1600/2100/2600), t_compress falls
#: (settles at 7100/6100/5100/4200): rel_lag 5.5/2.8/1.4/0.62, median large.
TWO_TG = {1.0: 1100, 2.0: 1600, 3.0: 2100, 4.0: 2600}
TWO_TC = {1.0: 7100, 2.0: 6100, 3.0: 5100, 4.0: 4200}


def _two_clock_specs(k: K) -> list[RunSpec]:
    specs = _runs([1.0, 2.0, 3.0, 4.0], 3, k.base(),
                  t_grok=[[a - 30, a, a + 30] for a in (1050, 1550, 2050, 2550)],
                  t_floor=[7050.0, 6050.0, 5020.0, 4050.0])
    return _settle_all(k, specs, TWO_TC)


def _two_clocks(k: K) -> tuple[pd.DataFrame, Expect]:
    specs, _ = k.finish(_two_clock_specs(k))
    k.check(specs)
    v, og, oc = k.simple_verdict(TWO_TG, TWO_TC, 3)
    exp = _expect((StudyExpect(
        verdict=v,
        runs={_rid(1.0, 1): {"t_grok.value": 1100, "t_compress.value": 7100,
                             "t_compress.lower": 7000, "lag.value": 6000},
              _rid(4.0, 2): {"t_grok.value": 2600, "t_compress.value": 4200}},
        cells={c: {"t_compress.value": t} for c, t in TWO_TC.items()},
        orderings={"t_grok": _ord(og, concordant=6, tau_bounds=(1.0, 1.0)),
                   "t_compress": _ord(oc, discordant=6, tau_bounds=(-1.0, -1.0))},
    ),), absent={R.INCONCLUSIVE_CENSORING, R.MEDIAN_CENSORED})
    return table(specs), exp


TRUE_TWO_CLOCKS = Case(
    name="true_two_clocks",
    title="t_grok rises with rho while t_compress falls; large lag",
    why=("The paper's two-clocks signature. Both orderings are identified with every pair "
         "ordered (tau bounds [1, 1] and [−1, −1]); only then may TWO_CLOCKS be said."),
    make=_two_clocks,
    options={"by": "rho"},
)


def _single_cell(k: K) -> tuple[pd.DataFrame, Expect]:
    specs, _ = k.finish(_clean_specs(k)[:3])
    k.check(specs)
    exp = Expect(
        studies=(StudyExpect(
            verdict=LOW_POWER,
            cells={1.0: {"t_grok.value": 2100, "t_compress.value": 2800, "floor": 10.0,
                         "gates": ()}},
            orderings={q: {"identified": False, "sub_reason": R.TOO_FEW_CELLS}
                       for q in ("t_grok", "t_compress", "lag", "floor", "m_grok")},
        ),),
        present=frozenset({R.LOW_POWER_DESCRIPTIVE}),
        absent=CLOCK_VERDICTS | {R.INCONCLUSIVE_CENSORING, R.SHARED_ENDPOINT},
    )
    return table(specs), exp


SINGLE_CELL = Case(
    name="single_cell",
    title="one cell of three seeds",
    why=("Nothing comparative can be said about one cell: LOW_POWER_DESCRIPTIVE, every "
         "ordering undefined with TOO_FEW_CELLS, no clock verdict — but the per-cell numbers "
         "are still reported."),
    make=_single_cell,
    options={"by": "rho"},
)


REBOUND_TG = {1.0: 2100, 2.0: 3100, 3.0: 4100}
REBOUND_TC = {1.0: 4500, 2.0: 5500, 3.0: 6500}


def _rebound_specs(k: K) -> list[RunSpec]:
    # floor reached at t_floor; then the metric undershoots by 6δ (3 below the floor of 10)
    # 500 steps later and is back on the floor 1000 steps after that. The raw metric
    # re-enters the band at t_return − 167; the smoothed one at the second logged step after
    # that (the return is placed so that it settles at 4500/5500/6500 under any band and
    # smoothing the case can show).
    d = k.delta(10.0)
    base = k.base(metric_shape="rebound", undershoot=6.0 * d if d > 0 else 3.0)
    specs = _runs([1.0, 2.0, 3.0], 3, base,
                  t_grok=[2050.0, 3050.0, 4050.0], t_floor=[3050.0, 4050.0, 5050.0],
                  t_dip=[3550.0, 4550.0, 5550.0], t_return=[4550.0, 5550.0, 6550.0])
    return _settle_all(k, specs, REBOUND_TC, fld="t_return")


def _rebound(k: K) -> tuple[pd.DataFrame, Expect]:
    d = k.delta(10.0)
    specs, _ = k.finish(_rebound_specs(k))
    k.check(specs)
    # the undershoot is measured on the smoothed metric: the depth the trailing median sees
    under = 10.0 - min(trailing_median(metric_points(specs[0])[1], k.cfg.smooth))
    if under <= d * 1.05:
        raise Unsupported(("smooth",), "the smoothed dip no longer leaves the band")
    v, og, oc = k.simple_verdict(REBOUND_TG, REBOUND_TC, 3)
    exp = _expect((StudyExpect(
        verdict=v,
        runs={_rid(1.0, 0): {"t_compress.value": 4500, "t_compress.lower": 4400,
                             "undershoot": Approx(under, 1e-9 * max(1.0, under)),
                             "floor": 10.0, "floor_stability": "stable",
                             "reasons_include": (R.REBOUND,)},
              _rid(3.0, 2): {"t_compress.value": 6500}},
        cells={c: {"t_compress.value": t} for c, t in REBOUND_TC.items()},
    ),), present={R.REBOUND})
    return table(specs), exp


NON_MONOTONE_REBOUND = Case(
    name="non_monotone_rebound",
    title="the metric undershoots its floor by 3 (6δ) and comes back (a rebound)",
    why=("The first dip into the band (around t_floor) is not compression: the metric goes "
         "on below the band and returns. t_compress is the final settling, 4500/5500/6500, "
         "with REBOUND and the undershoot (2.7 through the trailing median) reported; the "
         "first crossing would say ~3100."),
    make=_rebound,
    options={"by": "rho"},
    reference_fails="the crossing rule takes the first dip as t_compress (lag ~1000, not ~2400)",
)


def _before_grok_specs(k: K) -> list[RunSpec]:
    # the metric peaks at step 500, reaches its floor at 1500 (settled at 1600: raw inside
    # from 1500, smoothed one point later), long before grok at 3050/4050/5050.
    base = k.base(t_peak=500.0, t_floor=1500.0)
    specs = _runs([1.0, 2.0, 3.0], 3, base, t_grok=[3050.0, 4050.0, 5050.0])
    return _settle_all(k, specs, {1.0: 1600, 2.0: 1600, 3.0: 1600})


def _before_grok(k: K) -> tuple[pd.DataFrame, Expect]:
    specs, _ = k.finish(_before_grok_specs(k))
    k.check(specs)
    tg = {1.0: 3100, 2.0: 4100, 3.0: 5100}
    v, _, _ = k.simple_verdict(tg, {1.0: 1600, 2.0: 1600, 3.0: 1600}, 3)
    exp = _expect((StudyExpect(
        verdict=v,
        runs={_rid(1.0, 0): {"t_compress.value": 1600, "t_grok.value": 3100,
                             "lag.value": -1500, "lag.lower": -1600, "lag.upper": -1400,
                             "rel_lag": -1500 / 3100, "m_grok": 10.0,
                             "compression": "compressed", "snapshot": "converged",
                             "reasons_include": (R.COMPRESSION_BEFORE_GROK,
                                                 R.SNAPSHOT_CONVERGED),
                             "reasons_exclude": (R.NO_COMPRESSION,)},
              _rid(3.0, 1): {"lag.value": -3500}},
        cells={1.0: {"lag.value": -1500, "gates": ()}, 3.0: {"lag.value": -3500}},
        orderings={"lag": {"identified": True, "direction": -1}},
    ),), present={R.COMPRESSION_BEFORE_GROK},
        absent={R.NO_COMPRESSION, R.BOUNDARY_NO_COMPRESSION, R.SNAPSHOT_TRANSIENT})
    return table(specs), exp


COMPRESSION_BEFORE_GROK = Case(
    name="compression_before_grok",
    title="the metric has finished compressing long before the run groks",
    why=("The lag is negative: t_compress 1600, t_grok 3100/4100/5100, lag −1500/−2500/−3500. "
         "It must be reported as a negative number (COMPRESSION_BEFORE_GROK), never clipped "
         "to 0; and the metric did compress (it is not a NO_COMPRESSION boundary). The "
         "at-grok reading is already the floor (SNAPSHOT_CONVERGED)."),
    make=_before_grok,
    options={"by": "rho"},
    reference_fails=("the crossing rule only looks at steps ≥ t_grok, so it reports "
                     "t_compress = t_grok and a lag of 0 instead of a negative lag"),
)


#: Logged every 500 steps; t_compress falls along rho (settles at 6000/5500/4500).
TIES_TC = {1.0: 6000, 2.0: 5500, 3.0: 4500}


def _ties_specs(k: K, t_grok: list[Any]) -> list[RunSpec]:
    specs = _runs([1.0, 2.0, 3.0], 3, k.base(dt=500), t_grok=t_grok,
                  t_floor=[5550.0, 4550.0, 3550.0])
    return _settle_all(k, specs, TIES_TC)


def _ties(k: K) -> tuple[pd.DataFrame, Expect]:
    specs, _ = k.finish(_ties_specs(k, [2100.0, 2200.0, 2300.0]))
    k.check(specs)
    tg = {1.0: 2500, 2.0: 2500, 3.0: 2500}
    v, og, oc = k.simple_verdict(tg, TIES_TC, 3, 500, 500)
    exp = _expect((StudyExpect(
        verdict=v,
        cells={c: {"t_grok.value": 2500, "t_grok.lower": 2000} for c in (1.0, 2.0, 3.0)},
        orderings={"t_grok": _ord(og, concordant=0, discordant=0, unidentified=3,
                                  sub_reason=R.TIES_WITHIN_RESOLUTION),
                   "t_compress": _ord(oc)},
    ),), present={R.ORDERING_UNDEFINED},
        absent={R.TWO_CLOCKS, R.ONE_CLOCK_LARGE_LAG, R.PARTIALLY_SEPARATED})
    return table(specs), exp


TIES = Case(
    name="ties",
    title="logged every 500 steps; the three cells grok at 2100/2200/2300, all first seen at 2500",
    why=("The true t_grok rises with rho, but the log cannot show it: all three are first "
         "seen at the same logged step, so every pair is tied and the t_grok ordering is "
         "undefined (TIES_WITHIN_RESOLUTION). With a large lag the verdict must be "
         "LARGE_LAG_ORDERING_UNDETERMINED, not a clock claim."),
    make=_ties,
    options={"by": "rho"},
)


def _noisy(k: K) -> tuple[pd.DataFrame, Expect]:
    # metric noise sd 2δ (1.0 on a floor of 10 with δ = 0.5): the MAD of W2 (~1.3δ) exceeds
    # δ/2. The noise draws are seeded, so the ratio MAD/δ is the same under any rel_tol.
    d = k.delta(10.0)
    sd = 2.0 * d if d > 0 else 1.0
    specs = _runs([1.0, 2.0, 3.0], 3, k.base(noise=sd, noise_seed=7),
                  t_grok=[2050.0, 3050.0, 4050.0], t_floor=[3050.0, 4050.0, 5050.0])
    specs, _ = k.finish(specs)
    k.check(specs)
    exp = Expect(
        studies=(StudyExpect(
            verdict=LOW_POWER,
            runs={_rid(v, s): {"floor_stability": OneOf(("indeterminate", "unstable")),
                               "t_compress.value": None, "t_compress.censored": True,
                               "floor": Approx(10.0, 1.5 * sd),
                               "reasons_include": (R.FLOOR_NOISY,)}
                  for v in (1.0, 2.0, 3.0) for s in range(3)},
            cells={v: {"gates": (R.COMPRESSION_NOT_ESTABLISHED,), "n_established": 0}
                   for v in (1.0, 2.0, 3.0)},
        ),),
        present=frozenset({R.FLOOR_NOISY, R.COMPRESSION_NOT_ESTABLISHED}),
        absent=CLOCK_VERDICTS | {R.NO_COMPRESSION, R.FLOOR_STABLE},
    )
    return table(specs), exp


NOISY = Case(
    name="noisy",
    title="metric noise (sd 1.0 = 2δ) twice the floor band's half-width (0.5)",
    why=("The tolerance is below the noise: no floor can be called stable, so no t_compress "
         "is established (FLOOR_NOISY; the floor is indeterminate or unstable, never "
         "stable). The cells fail COMPRESSION_NOT_ESTABLISHED and nothing comparative is "
         "said. The floor itself is still ≈ 10."),
    make=_noisy,
    options={"by": "rho"},
    reference_fails="without a stability check the noisy floor is taken as converged",
)


# ------------------------------------------------------------------------------------------
# ours
# ------------------------------------------------------------------------------------------

def _late_collapse(k: K) -> tuple[pd.DataFrame, Expect]:
    # a floor of 10 from t_floor, then a second collapse to 6 in W1's second half, placed so
    # that the smoothed metric is inside the final band from W2's first point on (collapse at
    # 8850 by default: W1 (8000–9000) still reads 10, W2 (9000–10000) reads 6)
    c = k.cfg
    q = min(0.6, 0.9 / (1.0 + 3.0 * c.rel_tol), 1.0 - 0.33 * c.abs_tol)
    if q < 0.05:
        raise Unsupported(("rel_tol", "abs_tol"), "the band is too wide for a second floor "
                          "below the first")
    f2 = 10.0 * q
    base = k.base(metric_shape="late_collapse", floor2=f2, t_collapse=8850.0)
    specs, L = k.finish(_runs([1.0, 2.0, 3.0], 3, base, t_grok=[2050.0, 3050.0, 4050.0],
                              t_floor=[3050.0, 4050.0, 5050.0]))
    win = spec_windows(replace(specs[0], metric_shape="compress"), c)
    assert win is not None
    steps = metric_points(specs[0])[0]
    first_w2 = int(steps[np.searchsorted(steps, win.w2_lo)])
    specs = [k.solve(s, first_w2, fld="t_collapse", floor=f2) for s in specs]
    k.check(specs)
    lower = first_w2 - specs[0].dt
    for s in specs:
        w = spec_windows(s, c)
        if w is None or not (math.isclose(w.w1_median, 10.0) and math.isclose(w.floor, f2)):
            raise Unsupported(("smooth",) + WINDOW_FIELDS,
                              "the collapse no longer falls in the second half of W1")
    exp = Expect(
        studies=(StudyExpect(
            verdict=LOW_POWER,
            runs={_rid(v, 0): {"floor_stability": "unstable", "floor": f2,
                               "w1_median": 10.0, "t_compress.value": None,
                               "t_compress.censored": True, "t_compress.lower": lower,
                               "compression": "unknown", "inflation_is_lower_bound": True,
                               "reasons_include": (R.FLOOR_UNSTABLE, R.COMPRESSION_UNKNOWN),
                               "reasons_exclude": (R.NO_COMPRESSION,)}
                  for v in (1.0, 2.0, 3.0)},
            cells={v: {"gates": (R.COMPRESSION_NOT_ESTABLISHED,), "t_compress.censored": True}
                   for v in (1.0, 2.0, 3.0)},
        ),),
        present=frozenset({R.FLOOR_UNSTABLE, R.COMPRESSION_UNKNOWN,
                           R.COMPRESSION_NOT_ESTABLISHED}),
        absent=CLOCK_VERDICTS | {R.NO_COMPRESSION},
    )
    return table(specs), exp


LATE_SECOND_COLLAPSE = Case(
    name="late_second_collapse",
    title="a plateau at 10, then a second collapse to 6 in the last 12% of the run",
    why=("The 'floor' of 10 was not the end: W1's median (10) and W2's (6) differ by more "
         "than δ (0.3), so the floor is unstable and there is no t_compress — censored with "
         "lower = 8900, the last step outside the final band. The amount of compression is "
         "COMPRESSION_UNKNOWN, never NO_COMPRESSION; the cells are gated."),
    make=_late_collapse,
    options={"by": "rho"},
    reference_fails=("without a stability check the second floor is taken as converged and "
                     "a t_compress is reported for a metric that has not settled"),
)


def _drift_specs(k: K, drift: float, t_floor: list[float], floor: float = 10.0
                 ) -> list[RunSpec]:
    return _runs([1.0, 2.0, 3.0], 3, k.base(metric_shape="drift", drift=drift, floor=floor),
                 t_grok=[2050.0, 3050.0, 4050.0], t_floor=t_floor)


def _drift_ok(k: K, specs: Sequence[RunSpec]) -> bool:
    for s in specs:
        w = spec_windows(s, k.cfg)
        end = float(s.metric(np.array([float(s.length)]))[0])
        if w is None or end <= 0 or w.floor <= 0:
            return False
        d = k.delta(w.floor)
        if abs(w.w1_median - w.floor) <= 2.0 * d:
            return False
    return True


def _slow_drift(k: K) -> tuple[pd.DataFrame, Expect]:
    # the design: after reaching 10 the metric slides by −0.8 per 1000 steps, more than δ over
    # the final window. When that is not clearly more than δ under the config (or the floors
    # of the cells would differ enough for high_floor_factor), the cells drift from a common
    # step and the slide is set to 2.5δ of the final floor over W2.
    specs, L = k.finish(_drift_specs(k, -0.8, [3050.0, 4050.0, 5050.0]))
    try:
        if not _drift_ok(k, specs):
            raise Unsupported(("rel_tol",), "")
        k.check(specs)
    except Unsupported:
        c = k.cfg
        specs, L = k.finish(_drift_specs(k, -0.8, [5050.0] * 3))
        win = spec_windows(specs[0], c)
        if win is None:
            raise Unsupported(WINDOW_FIELDS, "no final window") from None
        lw = L - win.w2_lo
        mid = L - 0.5 * lw - 5050.0  # steps from the drift's start to W2's middle
        # start high enough that a slide of 2.5 abs_tol over W2 stays above zero to the end
        f0 = max(10.0, 4.0 * c.abs_tol * (L - 5050.0) / lw)
        kr = 2.5 * c.rel_tol
        slope = -kr * f0 / (lw + kr * mid) if kr > 0 else 0.0
        slope = min(slope, -2.5 * c.abs_tol / lw)
        specs, L = k.finish(_drift_specs(k, slope * 1000.0, [5050.0] * 3, f0))
        if not _drift_ok(k, specs):
            raise Unsupported(("rel_tol", "abs_tol"), "no slide is both larger than the band "
                              "over the final window and short of zero") from None
        k.check(specs)
    win = spec_windows(specs[0], k.cfg)
    assert win is not None
    drift = specs[0].drift / 1000.0 * (L - win.w2_lo)
    exp = Expect(
        studies=(StudyExpect(
            verdict=LOW_POWER,
            runs={_rid(v, 0): {"floor_stability": "unstable", "t_compress.value": None,
                               "t_compress.censored": True,
                               "drift": Approx(drift, 1e-6 * max(1.0, abs(drift))),
                               "compression": "unknown",
                               "reasons_include": (R.FLOOR_UNSTABLE,)}
                  for v in (1.0, 2.0, 3.0)},
            cells={v: {"gates": (R.COMPRESSION_NOT_ESTABLISHED,)} for v in (1.0, 2.0, 3.0)},
        ),),
        present=frozenset({R.FLOOR_UNSTABLE, R.COMPRESSION_NOT_ESTABLISHED}),
        absent=CLOCK_VERDICTS | {R.NO_COMPRESSION},
    )
    return table(specs), exp


SLOW_DRIFT = Case(
    name="slow_drift",
    title="after reaching 10 the metric keeps sliding down by 0.8 per 1000 steps",
    why=("No plateau was reached: the Theil–Sen drift over W2 (−0.8) lies outside ±δ "
         "(δ ≈ 0.24) and W1/W2 medians differ by 0.8. Floor unstable, no t_compress, "
         "COMPRESSION_UNKNOWN; cells gated."),
    make=_slow_drift,
    options={"by": "rho"},
    reference_fails="without a stability check a drifting metric gets a t_compress",
)


CAD_TG = {1.0: 2100, 2.0: 3100, 3.0: 4100}
CAD_TC = {1.0: 4400, 2.0: 5600, 3.0: 6400}


def _cadence_specs(k: K) -> list[RunSpec]:
    # accuracy every 100 steps, metric every 400; peak 1050 steps before grok, floor 1950
    # after. Settling: raw inside from 4000/5200/6000, smoothed at the next metric point.
    specs = _runs([1.0, 2.0, 3.0], 2, k.base(metric_every=4),
                  t_grok=[2050.0, 3050.0, 4050.0],
                  t_peak=[1000.0, 2000.0, 3000.0], t_floor=[4000.0, 5000.0, 6000.0])
    return _settle_all(k, specs, CAD_TC)


def _cadences(k: K) -> tuple[pd.DataFrame, Expect]:
    specs, _ = k.finish(_cadence_specs(k))
    k.check(specs)
    m_grok = float(specs[0].metric(np.array([2000.0]))[0])  # the metric point before grok
    v, _, _ = k.simple_verdict(CAD_TG, CAD_TC, 2, 100, 400)
    exp = _expect((StudyExpect(
        verdict=v,
        runs={_rid(1.0, 0): {"t_grok.value": 2100, "t_grok.lower": 2000,
                             "t_compress.value": 4400, "t_compress.lower": 4000,
                             "lag.value": 2300, "lag.lower": 1900, "lag.upper": 2400,
                             "m_grok": m_grok,
                             "reasons_exclude": (R.METRIC_NOT_AT_GROK,)},
              _rid(2.0, 1): {"t_compress.value": 5600, "t_compress.lower": 5200}},
        cells={c: {"t_compress.value": t} for c, t in CAD_TC.items()},
    ),), present={R.MISSING_VALUES},
        absent={R.METRIC_NOT_AT_GROK, R.INCONCLUSIVE_CENSORING})
    return table(specs), exp


DIFFERENT_CADENCES = Case(
    name="different_cadences",
    title="accuracy logged every 100 steps, the metric every 400 (NaN in between)",
    why=("Each clock is censored by its own cadence: t_grok in (2000, 2100], t_compress in "
         "(4000, 4400]; the lag interval combines both ([1900, 2400]). m_grok is read at "
         "the last metric point before grok (step 2000: 30.0), within one metric interval."),
    make=_cadences,
    options={"by": "rho"},
)


def _coarse(k: K) -> tuple[pd.DataFrame, Expect]:
    specs, _ = k.finish(_ties_specs(k, [1800.0, 2300.0, 2400.0]))
    k.check(specs)
    tg = {1.0: 2000, 2.0: 2500, 3.0: 2500}
    v, og, oc = k.simple_verdict(tg, TIES_TC, 3, 500, 500)
    exp = _expect((StudyExpect(
        verdict=v,
        cells={c: {"t_grok.value": t} for c, t in tg.items()},
        orderings={"t_grok": _ord(og, concordant=2, discordant=0, unidentified=1,
                                  tau_bounds=(1 / 3, 1.0)),
                   "t_compress": _ord(oc)},
    ),), absent={R.TWO_CLOCKS})
    return table(specs), exp


COARSE_CADENCE_TIE = Case(
    name="coarse_cadence_tie",
    title="logged every 500 steps; two of three cells are first seen grokking at the same step",
    why=("t_grok 1800/2300/2400 is seen at 2000/2500/2500: one pair tied. C = 2, D = 0, "
         "U = 1: the sign is identified (|C − D| > U) but tau is only known in [1/3, 1], so "
         "the ordering is weak, not monotone, and the verdict is PARTIALLY_SEPARATED. Spearman "
         "on the point medians (0.87) would call it monotone and claim TWO_CLOCKS."),
    make=_coarse,
    options={"by": "rho"},
    reference_fails="Spearman on point medians calls the tied t_grok ordering monotone: TWO_CLOCKS",
)


def _half_censored(k: K) -> tuple[pd.DataFrame, Expect]:
    # four seeds per cell; seeds 2 and 3 reach their floor only in the middle of the final
    # window W2 (9500 by default): their t_compress is censored.
    c = k.cfg
    if c.censor_warn >= 0.5:
        raise Unsupported(("censor_warn",), "no passing cell can have more than half its runs "
                          "censored (it would fail COMPRESSION_NOT_ESTABLISHED), so a censored "
                          "share above censor_warn cannot be built")
    early = _runs([1.0, 2.0, 3.0], 4, k.base(), t_grok=[2050.0, 3050.0, 4050.0],
                  t_floor=[2650.0, 3650.0, 4650.0])
    early = [s for s in early if s.conditions["seed"] < 2]
    early, L = k.finish(_settle_all(k, early, CLEAN_TC))
    win = spec_windows(early[0], c)
    assert win is not None
    # the late seeds settle in the middle of W2; under a band too wide for W1 and W2 to
    # differ, their fall starts at W1 instead of at grok (several times steeper)
    def late_seeds(t_peak: float | None) -> list[RunSpec]:
        out = _runs([1.0, 2.0, 3.0], 4, replace(early[0], t_peak=t_peak,
                                                t_floor=0.5 * (win.w2_lo + L)),
                    t_grok=[2050.0, 3050.0, 4050.0])
        return [s for s in out if s.conditions["seed"] >= 2]

    def censored(s: RunSpec) -> bool:
        w = spec_windows(s, c)
        if w is None:
            return False
        st = k.settle(s, w.floor)
        return (st is None or st[0] >= w.w2_lo
                or abs(w.w1_median - w.floor) > 1.05 * k.delta(w.floor))

    late = late_seeds(None)
    if not all(censored(s) for s in late):
        late = late_seeds(win.w1_lo)
        if not all(censored(s) for s in late):
            raise Unsupported(("rel_tol", "abs_tol") + WINDOW_FIELDS,
                              "the late seeds would settle before the end")
    specs = sorted(early + late, key=lambda s: (_rho(s), s.conditions["seed"]))
    k.check(specs)
    exp = Expect(
        studies=(StudyExpect(
            verdict=R.INCONCLUSIVE_CENSORING,
            runs={_rid(1.0, 0): {"t_compress.value": 2800},
                  _rid(1.0, 2): {"t_compress.value": None, "t_compress.censored": True}},
            cells={v: {"t_compress.censored": True, "t_compress.value": None,
                       "t_compress.upper": None, "n_tc_censored": 2, "n_established": 2,
                       "notes": (R.MEDIAN_CENSORED,), "gates": ()}
                   for v in (1.0, 2.0, 3.0)},
        ),),
        present=frozenset({R.INCONCLUSIVE_CENSORING, R.MEDIAN_CENSORED}),
        absent=CLOCK_VERDICTS,
        exit_code=1,
    )
    return table(specs), exp


HALF_SEEDS_CENSORED = Case(
    name="half_seeds_censored",
    title="in every cell two of four seeds have not settled when the log ends",
    why=("With half the runs censored the cell median of t_compress is censored too "
         "(MEDIAN_CENSORED): only its lower bound is known and no value may be shown. Half "
         "of the eligible runs censored (> censor_warn, 25%): INCONCLUSIVE_CENSORING. Dropping "
         "the censored seeds would report a median of 2800 and a small-lag verdict."),
    make=_half_censored,
    options={"by": "rho"},
    reference_fails=("the reference keeps censored runs in the medians at their last logged "
                     "step and does not see the late seeds as censored: a number where there "
                     "is only a bound"),
)


OVERLAP_TG = {1.0: 2100, 2.0: 3100, 3.0: 4100}


def _overlap(k: K) -> tuple[pd.DataFrame, Expect]:
    # 20 000-step runs. Cells 1 and 3 settle at 13000 and 14000; in cell 2 two seeds settle
    # at 5200 and two are still falling when the log ends: its median t_compress is censored
    # with lower bound (5100 + 20000)/2 = 12550, which overlaps both neighbours.
    c = k.cfg
    settled = _runs([1.0, 2.0, 3.0], 4, replace(k.base(), length=20000),
                    t_grok=[2050.0, 3050.0, 4050.0], t_floor=[13050.0, 5050.0, 14050.0])
    settled = [s for s in settled if _rho(s) != 2.0 or s.conditions["seed"] < 2]
    settled, L = k.finish(_settle_all(k, settled, {1.0: 13000, 2.0: 5200, 3.0: 14000}),
                          base=20000)
    win = spec_windows(settled[0], c)
    assert win is not None
    # the late seeds reach their floor a quarter of W2 before the end (19500 by default), so
    # the smoothed metric never enters the band around W2's median; under a band too wide for
    # that, their fall starts at W1 instead of at grok (four times steeper)
    def late_seeds(t_peak: float | None) -> list[RunSpec]:
        out = cell_runs("rho", 2.0, 4, replace(settled[0], t_grok=3050.0, t_peak=t_peak,
                                                t_floor=L - 0.25 * (L - win.w2_lo)))[2:]
        return [with_levels(s, c) for s in out]

    def settles(s: RunSpec) -> bool:
        w = spec_windows(s, c)
        return w is None or k.settle(s, w.floor) is not None

    late = late_seeds(None)
    if any(settles(s) for s in late):
        late = late_seeds(win.w1_lo)
        if any(settles(s) for s in late):
            raise Unsupported(("rel_tol", "abs_tol") + WINDOW_FIELDS,
                              "the late seeds would settle before the end")
    specs = sorted(settled + late, key=lambda s: (_rho(s), s.conditions["seed"]))
    k.check(specs)
    lo2 = 0.5 * (5100 + L)
    if lo2 >= 13000:
        raise Unsupported(WINDOW_FIELDS, "the runs had to be stretched so far that the "
                          "censored median no longer overlaps its neighbours")
    tc = {1.0: Iv(12900, 13000), 2.0: Iv(lo2, None), 3.0: Iv(13900, 14000)}
    ivg = [Iv(t - 100, t) for t in OVERLAP_TG.values()]
    run_tg = [ivg[int(_rho(s)) - 1] for s in specs]
    run_tc = [Iv(12900, 13000) if _rho(s) == 1.0 else Iv(13900, 14000) if _rho(s) == 3.0
              else Iv(5100, 5200) if s.conditions["seed"] < 2 else Iv(L, None)
              for s in specs]
    v = k.verdict(ivg, list(tc.values()), run_tg, run_tc)
    og, oc = k.ordering(ivg), k.ordering(list(tc.values()))
    exp = _expect((StudyExpect(
        verdict=v,
        cells={1.0: {"t_compress.value": 13000, "t_compress.lower": 12900, "gates": ()},
               2.0: {"t_compress.censored": True, "t_compress.value": None,
                     "t_compress.lower": lo2, "notes": (R.MEDIAN_CENSORED,), "gates": ()},
               3.0: {"t_compress.value": 14000, "gates": ()}},
        orderings={"t_compress": _ord(oc, concordant=1, discordant=0, unidentified=2,
                                      tau_bounds=(-1 / 3, 1.0),
                                      sub_reason=R.CENSORED_INTERVALS_OVERLAP),
                   "t_grok": _ord(og)},
    ),), present={R.MEDIAN_CENSORED},
        absent={R.PARTIALLY_SEPARATED, R.TWO_CLOCKS, R.ONE_CLOCK_LARGE_LAG,
                R.INCONCLUSIVE_CENSORING})
    return table(specs), exp


CENSORED_INTERVALS_OVERLAP = Case(
    name="censored_intervals_overlap",
    title="a middle cell whose censored median t_compress (> 12550) overlaps both neighbours",
    why=("Only one pair is ordered (cell 1 before cell 3): C = 1, D = 0, U = 2, so no "
         "assignment of the overlapping pairs is ruled out and the t_compress ordering is "
         "undefined (CENSORED_INTERVALS_OVERLAP, tau in [−1/3, 1]); with a large lag the "
         "verdict is LARGE_LAG_ORDERING_UNDETERMINED. Calling the ordering identified because "
         "C > D would claim a partial separation the log cannot support."),
    make=_overlap,
    options={"by": "rho"},
    reference_fails=None,
)


def _hides_floors(k: K) -> tuple[float, float]:
    """Floors of the compressing cells and of the boundary cell (12 and 31 by design): the
    boundary's drop is small under min_rel_drop/min_abs_drop, the others' is not, the floors
    differ by more than δ, and high_floor_factor does not gate the boundary cell."""
    c = k.cfg

    def ok(fc: float, fb: float) -> bool:
        base = replace(BASE, t_grok=3000.0, t_floor=4000.0, run="x")
        rc, dc = drop_ratio(replace(base, floor=fc), c)
        rb, db = drop_ratio(replace(base, floor=fb), c)
        if math.isnan(rc) or math.isnan(rb):
            raise Unsupported(WINDOW_FIELDS, "a 10 000-step run has no floor window")
        small = rb < c.min_rel_drop - 0.02 or db < 0.98 * c.min_abs_drop
        large = rc >= c.min_rel_drop + 0.02 and dc >= 1.02 * c.min_abs_drop
        return (small and large and fb - fc > 1.5 * k.delta(fc)
                and fb < 0.98 * c.high_floor_factor * fc)

    if ok(12.0, 31.0):
        return 12.0, 31.0
    # the boundary keeps half the drop that would count; the others drop past it
    pk = 40.0
    small_drop = 0.5 * max(c.min_rel_drop * 0.9 * pk, c.min_abs_drop)
    fb = pk - small_drop
    for fc in np.linspace(fb / (0.97 * c.high_floor_factor), 0.5, 40):
        if fc > 0 and ok(float(fc), fb):
            return float(fc), fb
    raise Unsupported(("min_rel_drop", "min_abs_drop", "high_floor_factor", "rel_tol"),
                      "no pair of floors makes one cell a no-compression boundary that reads "
                      "like its compressing neighbour without a high-floor gate")


def _hides(k: K) -> tuple[pd.DataFrame, Expect]:
    # cells 1–3 compress 40 → 12; cell 4 only 40 → 31 (a drop of 9 < 25% of 40: no
    # compression). Grok is on a logged step (3000) at the peak, so every m_grok is 40.
    fc, fb = _hides_floors(k)
    base = replace(BASE, floor=fc, t_grok=3000.0, t_floor=4000.0)
    specs, _ = k.finish(_runs([1.0, 2.0, 3.0, 4.0], 2, base, floor=[fc, fc, fc, fb]))
    k.check(specs, no_compression={_rid(4.0, 0), _rid(4.0, 1)})
    exp = Expect(
        studies=(StudyExpect(
            verdict=OneOf(tuple(CLOCK_VERDICTS)),  # not the point of the case
            # no-compression runs have no t_compress at all, so compression is not
            # established either (AUDIT_SPEC §2, read literally)
            cells={4.0: {"gates": (R.BOUNDARY_NO_COMPRESSION, R.COMPRESSION_NOT_ESTABLISHED),
                         "m_grok": 40.0, "floor": fb, "n_no_compression": 2},
                   3.0: {"gates": (), "m_grok": 40.0, "floor": fc}},
            runs={_rid(4.0, 0): {"t_compress": None,
                                 "compression": "none",
                                 "reasons_include": (R.NO_COMPRESSION,)}},
            findings=((R.SNAPSHOT_HIDES_BOUNDARY, 4.0),),
        ),),
        present=frozenset({R.SNAPSHOT_HIDES_BOUNDARY, R.BOUNDARY_NO_COMPRESSION}),
        exit_code=1,
    )
    return table(specs), exp


SNAPSHOT_HIDES_BOUNDARY = Case(
    name="snapshot_hides_boundary",
    title="a no-compression cell reads the same at grok (40) as its compressing neighbour",
    why=("Read at grok, cell 4 looks like cell 3 (m_grok 40 vs 40); its floor (31) is far "
         "from cell 3's (12). It is a boundary cell (BOUNDARY_NO_COMPRESSION) that the "
         "at-grok snapshot hides: SNAPSHOT_HIDES_BOUNDARY, critical."),
    make=_hides,
    options={"by": "rho"},
    reference_fails=None,
)


def _reverses_levels(k: K) -> tuple[list[float], list[float]]:
    """At-grok values rising (30/40/50) and floors falling (20/15/10) by design; under the
    config the floors must be farther apart than their bands (and within high_floor_factor),
    the peaks transients (above transient_threshold × floor) and compressions (min_rel_drop)."""
    c = k.cfg

    def ok(pk: Sequence[float], fl: Sequence[float]) -> bool:
        d = [k.delta(f) for f in fl]
        for i in range(2):  # floor intervals (F ± δ) and m_grok intervals (P ± δ) apart
            if (fl[i] - d[i]) - (fl[i + 1] + d[i + 1]) <= 0.05 * fl[i + 1] or \
                    (pk[i + 1] - d[i + 1]) - (pk[i] + d[i]) <= 0.05 * pk[i]:
                return False
        med = sorted(fl)[1]
        if max(fl) >= 0.98 * c.high_floor_factor * med:
            return False
        for p, f, di in zip(pk, fl, d):
            spec = replace(BASE, m_peak=p, m_start=0.75 * p, floor=f, t_grok=3000.0,
                           t_floor=6050.0)
            r, dr = drop_ratio(spec, c)
            if math.isnan(r):
                raise Unsupported(WINDOW_FIELDS, "a 10 000-step run has no floor window")
            if not (p > 1.02 * c.transient_threshold * f and p - f > 1.1 * di
                    and r >= c.min_rel_drop + 0.02 and dr >= 1.02 * c.min_abs_drop):
                return False
        return True

    pk, fl = [30.0, 40.0, 50.0], [20.0, 15.0, 10.0]
    if ok(pk, fl):
        return pk, fl
    r = max(c.rel_tol, c.abs_tol / 10.0)
    if r >= 0.6:
        raise Unsupported(("rel_tol", "abs_tol"), "the bands are too wide to order three floors")
    qf = 1.25 * (1.0 + r) / (1.0 - r)
    fl = [10.0 * qf * qf, 10.0 * qf, 10.0]
    pk = []
    for f, p0 in zip(fl, (30.0, 40.0, 50.0)):
        p = max(p0, 1.25 * c.transient_threshold * f, f / (0.9 - min(c.min_rel_drop, 0.8)),
                f + 1.25 * c.min_abs_drop, f * (1.0 + 3.0 * r))
        if pk:
            p = max(p, pk[-1] + 3.0 * (k.delta(f) + k.delta(fl[len(pk) - 1])) + 1.0,
                    1.15 * pk[-1])
        pk.append(p)
    if not ok(pk, fl):
        raise Unsupported(("high_floor_factor", "rel_tol", "abs_tol", "transient_threshold",
                           "min_rel_drop"), "no three floors and peaks are ordered apart, "
                          "transient and compressing without a high-floor gate")
    return pk, fl


def _reverses(k: K) -> tuple[pd.DataFrame, Expect]:
    # peaks exactly at grok (on logged steps 2000/3000/4000), floors falling
    pk, fl = _reverses_levels(k)
    out: list[RunSpec] = []
    for v, tg, p, f in zip((1.0, 2.0, 3.0), (2000.0, 3000.0, 4000.0), pk, fl):
        out += cell_runs("rho", v, 2, replace(BASE, t_grok=tg, m_peak=p, m_start=0.75 * p,
                                              floor=f, t_floor=tg + 3050.0))
    specs, _ = k.finish(out)
    k.check(specs)
    om = k.ordering([Iv(0, 1), Iv(1, 2), Iv(2, 3)])  # rising, every pair ordered
    of = k.ordering([Iv(2, 3), Iv(1, 2), Iv(0, 1)])  # falling
    rev = om.monotone and of.monotone
    exp = Expect(
        studies=(StudyExpect(
            verdict=OneOf(tuple(CLOCK_VERDICTS)),
            cells={v: {"m_grok": p, "floor": f} for v, p, f in zip((1.0, 2.0, 3.0), pk, fl)},
            orderings={"m_grok": _ord(om, tau_bounds=(1.0, 1.0)),
                       "floor": _ord(of, tau_bounds=(-1.0, -1.0))},
            findings=((R.SNAPSHOT_REVERSES_ORDERING, None),) if rev else (),
        ),),
        present=frozenset({R.SNAPSHOT_TRANSIENT} | ({R.SNAPSHOT_REVERSES_ORDERING} if rev
                                                      else set())),
        absent=frozenset() if rev else frozenset({R.SNAPSHOT_REVERSES_ORDERING}),
        exit_code=1,
    )
    return table(specs), exp


SNAPSHOT_REVERSES_ORDERING = Case(
    name="snapshot_reverses_ordering",
    title="the at-grok value rises along rho (30/40/50) while the floor falls (20/15/10)",
    why=("Read at grok, the metric says 'more rho, higher rank'; converged, it says the "
         "opposite. Both orderings are monotone (tau [1,1] and [−1,−1]) in opposite "
         "directions: SNAPSHOT_REVERSES_ORDERING, critical (and every cell's at-grok reading "
         "is a transient above transient_threshold × its floor)."),
    make=_reverses,
    options={"by": "rho"},
)


def _two_arm_specs(k: K) -> list[RunSpec]:
    mlp = [replace(s, run="mlp/" + s.run, conditions={**s.conditions, "arch": "mlp"})
           for s in _two_clock_specs(k)]
    tr = [replace(s, run="tr/" + s.run, conditions={**s.conditions, "arch": "transformer"})
          for s in _clean_specs(k)]
    specs, _ = k.finish(mlp + tr)
    k.check(specs)
    return specs


def _duplicate(k: K) -> tuple[pd.DataFrame, Expect]:
    return table(_two_arm_specs(k)), Expect(error="DUPLICATE_AXIS_VALUES")


DUPLICATE_AXIS_VALUES = Case(
    name="duplicate_axis_values",
    title="two architectures share the rho values 1, 2, 3 and no --cell separates them",
    why=("Pooling the arms would mix two studies into one cell per rho. The audit must "
         "refuse with DUPLICATE_AXIS_VALUES (the reference only warns and mixes them)."),
    make=_duplicate,
    options={"by": "rho"},
)


def _split(k: K) -> tuple[pd.DataFrame, Expect]:
    specs = _two_arm_specs(k)
    v_mlp, _, _ = k.simple_verdict(TWO_TG, TWO_TC, 3)
    v_tr, _, _ = k.simple_verdict(CLEAN_TG, CLEAN_TC, 3)
    return table(specs), Expect(studies=(
        StudyExpect(verdict=v_mlp, key={"arch": "mlp"},
                    cells={1.0: {"t_compress.value": 7100, "n_runs": 3}}),
        StudyExpect(verdict=v_tr, key={"arch": "transformer"},
                    cells={1.0: {"t_compress.value": 2800, "n_runs": 3}}),
    ))


DUPLICATE_AXIS_VALUES_SPLIT = Case(
    name="duplicate_axis_values_split",
    title="the same two-arm log audited with --cell arch",
    why=("Split by arch, each arm is its own study with its own verdict: the MLP arm has two "
         "clocks, the Transformer arm a single clock with a small lag."),
    make=_split,
    options={"by": "rho", "cell": ("arch",)},
)


def _unsustained(k: K) -> tuple[pd.DataFrame, Expect]:
    # grok at 2050 (seen 2100); test_acc falls below the threshold at 3000 for
    # max(4, sustain) logged points, then recovers
    pts = max(4, k.cfg.sustain)
    specs = _runs([1.0, 2.0, 3.0], 2, k.base(acc_shape="unsustained", fall_points=pts),
                  t_grok=[2050.0, 3050.0, 4050.0], t_fall=[3000.0, 4000.0, 5000.0],
                  t_floor=[2650.0, 3650.0, 4650.0])
    specs, _ = k.finish(_settle_all(k, specs, CLEAN_TC))
    k.check(specs)
    v, _, _ = k.simple_verdict(CLEAN_TG, CLEAN_TC, 2)
    exp = _expect((StudyExpect(
        verdict=v,
        runs={_rid(1.0, 0): {"t_grok.value": 2100, "grok_sustained": False,
                             "grok_fell_at": 3000, "fully_generalized": True,
                             "reasons_include": (R.GROK_NOT_SUSTAINED,)},
              _rid(3.0, 1): {"grok_fell_at": 5000}},
    ),), present={R.GROK_NOT_SUSTAINED})
    return table(specs), exp


GROK_NOT_SUSTAINED = Case(
    name="grok_not_sustained",
    title="test_acc crosses 0.90 at 2100, falls to 0.5 for four logged points at 3000, recovers",
    why=("The first crossing is still t_grok (2100), but the grok was not sustained "
         "(the fall lasts at least sustain points): GROK_NOT_SUSTAINED with the step it fell "
         "(3000)."),
    make=_unsustained,
    options={"by": "rho"},
)


def _percent_table(k: K) -> pd.DataFrame:
    df, _ = _clean(k)
    df["test_acc"] = df["test_acc"] * 100
    df["train_acc"] = df["train_acc"] * 100
    return df


def _percent_read(k: K) -> tuple[pd.DataFrame, Expect]:
    _, expect = _clean(k)
    return _percent_table(k), replace(expect, present=expect.present | {R.ACCURACY_IN_PERCENT})


ACCURACY_IN_PERCENT = Case(
    name="accuracy_in_percent",
    title="the clean study with accuracies logged in percent (0–100)",
    why=("Read as fractions every run would 'grok' at step 0. A column with values above 1.5 "
         "cannot hold fractions: read as percent by the one per-column rule, it is the clean "
         "study — the same verdict and numbers — and the audit says how it read it "
         "(ACCURACY_IN_PERCENT)."),
    make=_percent_read,
    options={"by": "rho"},
)


ACCURACY_IN_PERCENT_SCALED = Case(
    name="accuracy_in_percent_scaled",
    title="the percent log audited with acc_scale = 100",
    why="Rescaled, it is the clean study: the same verdict and the same numbers.",
    make=lambda k: (_percent_table(k), _clean(k)[1]),
    options={"by": "rho", "acc_scale": 100.0},
)


def _too_short(k: K) -> tuple[pd.DataFrame, Expect]:
    specs, L = k.finish(_clean_specs(k))
    k.check(specs)
    extra = with_levels(replace(k.base(), run="rho=2.0/s9", conditions={"rho": 2.0, "seed": 9},
                                length=L), k.cfg)
    df = pd.concat([table(specs), extra.rows().iloc[:2]], ignore_index=True)
    rows = sum(s.grid().size for s in specs)
    v, _, _ = k.simple_verdict(CLEAN_TG, CLEAN_TC, 3)
    exp = _expect((StudyExpect(
        verdict=v,
        cells={2.0: {"n_runs": 3, "t_compress.value": 3800}},
    ),), present={R.TOO_SHORT},
        input={"runs_read": 10, "runs_kept": 9, "runs_too_short": ["rho=2.0/s9"],
               "set_aside": {"run_too_short": 2}, "rows_read": rows + 2, "rows_kept": rows})
    return df, exp


RUN_TOO_SHORT = Case(
    name="run_too_short",
    title="the clean study plus a run with only two logged points",
    why=("A run with fewer than 3 points cannot be audited: it is set aside with a TOO_SHORT "
         "finding and counted in the input section — never a crash, never silently dropped. "
         "The rest of the study is audited as if it were not there."),
    make=_too_short,
    options={"by": "rho"},
)


def _metric_gap(k: K) -> tuple[pd.DataFrame, Expect]:
    # the metric logger was down from step 1000 to 3000 (exclusive); grok at 2050/2550/2850
    # is first seen at 2100/2600/2900, when the last metric point (1000) is 1100+ steps old
    specs = _runs([1.0, 2.0, 3.0], 2, k.base(metric_gap=(1000.0, 3000.0)),
                  t_grok=[2050.0, 2550.0, 2850.0], t_floor=[4050.0, 5050.0, 6050.0])
    specs, _ = k.finish(specs)
    k.check(specs)
    exp = Expect(
        studies=(StudyExpect(
            verdict=OneOf(tuple(CLOCK_VERDICTS)),
            runs={_rid(v, 0): {"m_grok": None, "inflation": None, "frac_pre": None,
                               "t_grok.value": tg,
                               "reasons_include": (R.METRIC_NOT_AT_GROK,),
                               "reasons_exclude": (R.SNAPSHOT_TRANSIENT,
                                                   R.SNAPSHOT_CONVERGED)}
                  for v, tg in ((1.0, 2100), (2.0, 2600), (3.0, 2900))},
            cells={v: {"m_grok": None} for v in (1.0, 2.0, 3.0)},
            orderings={"m_grok": {"identified": False}},
        ),),
        present=frozenset({R.METRIC_NOT_AT_GROK}),
        absent=frozenset({R.SNAPSHOT_TRANSIENT, R.SNAPSHOT_REVERSES_ORDERING}),
    )
    return table(specs), exp


METRIC_GAP_AT_GROK = Case(
    name="metric_gap_at_grok",
    title="the metric was not logged between steps 1000 and 3000, around every grok",
    why=("The last metric point before grok (step 1000) is far more than one metric logging "
         "interval (100) before t_grok: there is no at-grok reading. m_grok, inflation and "
         "frac_pre are null with METRIC_NOT_AT_GROK, never the stale value; the clocks "
         "themselves are unaffected."),
    make=_metric_gap,
    options={"by": "rho"},
)


#: The cases above; :data:`.catalog.CASES` adds issue 19's (:mod:`.cases_evidence`, which
#: builds on these).
BASE_CASES: tuple[Case, ...] = (
    CLEAN_ONE_CLOCK, ALL_CENSORED, HIGH_FLOOR_BOUNDARY, TRUE_TWO_CLOCKS, SINGLE_CELL,
    NON_MONOTONE_REBOUND, COMPRESSION_BEFORE_GROK, TIES, NOISY,
    LATE_SECOND_COLLAPSE, SLOW_DRIFT, DIFFERENT_CADENCES, COARSE_CADENCE_TIE,
    HALF_SEEDS_CENSORED, CENSORED_INTERVALS_OVERLAP, SNAPSHOT_HIDES_BOUNDARY,
    SNAPSHOT_REVERSES_ORDERING, DUPLICATE_AXIS_VALUES, DUPLICATE_AXIS_VALUES_SPLIT,
    GROK_NOT_SUSTAINED, ACCURACY_IN_PERCENT, ACCURACY_IN_PERCENT_SCALED, RUN_TOO_SHORT,
    METRIC_GAP_AT_GROK,
)


__all__ = ["BASE", "BASE_CASES", "Case", "DESIGN_DEFAULTS", "Instance", "K", "Unsupported"]
