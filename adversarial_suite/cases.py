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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd
from grokaudit import Reason

from .expect import LOW_POWER, Approx, Between, Expect, OneOf, StudyExpect
from .generators import RunSpec, cell_runs, table

R = Reason
#: The base run: starts at 30, peaks at 40 at t_grok, falls linearly to the floor 10.
BASE = RunSpec("base", m_start=30.0, m_peak=40.0, floor=10.0, t_mem=500.0)
CLOCK_VERDICTS = frozenset({R.TWO_CLOCKS, R.ONE_CLOCK_LARGE_LAG, R.PARTIALLY_SEPARATED,
                            R.SINGLE_CLOCK_SMALL_LAG, R.LARGE_LAG_ORDERING_UNDETERMINED})


@dataclass(frozen=True)
class Case:
    """A named adversarial log and what a correct audit must say about it."""

    name: str
    title: str  #: one line: what the log is
    why: str  #: what a careless audit would claim, and why the expectation is right
    build: Callable[[], pd.DataFrame]
    expect: Expect
    options: Mapping[str, Any] = field(default_factory=dict)  #: config fields (by, cell…)
    reference_fails: str | None = None  #: why the reference profile gets it wrong (docs)

    def table(self) -> pd.DataFrame:
        return self.build()


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


# ------------------------------------------------------------------------------------------
# the reference's nine
# ------------------------------------------------------------------------------------------

def _clean_specs() -> list[RunSpec]:
    # t_grok 2050±30 / 3050±30 / 4050±30 (first seen at 2100/3100/4100); the metric reaches
    # its floor 600 steps after grok, enters the band 10 steps earlier, and the smoothed
    # metric is seen inside one point after the next logged step: 2800/3800/4800.
    return _runs([1.0, 2.0, 3.0], 3, BASE,
                 t_grok=[[a - 30, a, a + 30] for a in (2050, 3050, 4050)],
                 t_floor=[[a + 570, a + 600, a + 630] for a in (2050, 3050, 4050)])


def _clean_expect() -> Expect:
    return Expect(
        studies=(StudyExpect(
            verdict=R.SINGLE_CLOCK_SMALL_LAG,
            runs={_rid(1.0, 0): {"t_grok.value": 2100, "t_grok.lower": 2000,
                                 "t_compress.value": 2800, "t_compress.lower": 2700,
                                 "lag.value": 700, "lag.lower": 600, "lag.upper": 800,
                                 "rel_lag": 700 / 2100, "floor": 10.0, "delta": 0.5,
                                 "floor_stability": "stable", "t_mem.value": 500,
                                 "compression": "compressed"}},
            cells={1.0: {"t_grok.value": 2100, "t_compress.value": 2800, "floor": 10.0,
                         "lag.value": 700, "lag.lower": 600, "lag.upper": 800,
                         "gates": (), "n_grokked": 3, "n_established": 3},
                   2.0: {"t_grok.value": 3100, "t_compress.value": 3800, "gates": ()},
                   3.0: {"t_grok.value": 4100, "t_compress.value": 4800, "gates": ()}},
            orderings={"t_grok": {"identified": True, "direction": 1, "shape": "monotone",
                                  "concordant": 3, "discordant": 0, "unidentified": 0,
                                  "tau_bounds": (1.0, 1.0)},
                       "t_compress": {"identified": True, "direction": 1,
                                      "shape": "monotone"},
                       # every cell lags by 700 in (600, 800]: the lags are tied
                       "lag": {"identified": False,
                               "sub_reason": R.TIES_WITHIN_RESOLUTION}},
        ),),
        present=frozenset({R.SINGLE_CLOCK_SMALL_LAG, R.SHARED_ENDPOINT}),
        absent=frozenset({R.INCONCLUSIVE_CENSORING, R.REBOUND, R.FLOOR_UNSTABLE,
                          R.MEDIAN_CENSORED, R.COMPRESSION_BEFORE_GROK}),
    )


CLEAN_ONE_CLOCK = Case(
    name="clean_one_clock",
    title="three cells; compression follows grok by 700 steps in each",
    why=("The easy case: both clocks move together and the lag is small (rel_lag 0.17–0.33). "
         "The audit must identify both orderings and say SINGLE_CLOCK_SMALL_LAG, with the "
         "settling step exact to the cadence."),
    build=lambda: table(_clean_specs()),
    expect=_clean_expect(),
    options={"by": "rho"},
)


ALL_CENSORED = Case(
    name="all_censored",
    title="no run ever groks (test_acc stays at 0.30)",
    why=("Every t_grok is right-censored at the last step. No lag, no t_compress, no "
         "ordering can be computed; a careless audit would fall back to the last step and "
         "report numbers. The cells are boundary cells (not fully generalized) and the "
         "study is descriptive only."),
    build=lambda: table(_runs([1.0, 2.0, 3.0], 2, replace(BASE, acc_shape="never"))),
    expect=Expect(
        studies=(StudyExpect(
            verdict=LOW_POWER,
            runs={_rid(1.0, 0): {"t_grok.censored": True, "t_grok.value": None,
                                 "t_grok.upper": None, "t_grok.lower": 10000,
                                 "t_compress": None, "lag": None, "inflation": None,
                                 "frac_pre": None, "m_grok": None,
                                 "reasons_include": (R.NO_GROK,)}},
            cells={v: {"gates": (R.BOUNDARY_PARTIAL_GENERALIZATION,), "n_grokked": 0,
                       "t_grok.censored": True, "t_grok.value": None, "t_compress": None}
                   for v in (1.0, 2.0, 3.0)},
        ),),
        present=frozenset({R.NO_GROK, R.LOW_POWER_DESCRIPTIVE, R.MEDIAN_CENSORED,
                           R.BOUNDARY_PARTIAL_GENERALIZATION}),
        absent=CLOCK_VERDICTS | {R.INCONCLUSIVE_CENSORING, R.SNAPSHOT_TRANSIENT},
    ),
    options={"by": "rho"},
)


def _high_floor_specs() -> list[RunSpec]:
    specs = _clean_specs()
    # a fourth cell with a floor of 40 (4× the others'): it compresses from 100 to 40
    specs += _runs([4.0], 3, replace(BASE, m_start=80.0, m_peak=100.0, floor=40.0,
                                     t_grok=5050.0, t_floor=5650.0))
    return specs


HIGH_FLOOR_BOUNDARY = Case(
    name="high_floor_boundary",
    title="the clean study plus a cell whose floor is 4× the others' (40 vs 10)",
    why=("The reference's second boundary criterion: a floor above 3× the median floor of "
         "all cells marks a boundary cell. It is shown with HIGH_FLOOR_OUTLIER and left out "
         "of every ordering, so the orderings run over the three clean cells only."),
    build=lambda: table(_high_floor_specs()),
    expect=Expect(
        studies=(StudyExpect(
            verdict=R.SINGLE_CLOCK_SMALL_LAG,
            cells={4.0: {"gates": (R.HIGH_FLOOR_OUTLIER,), "floor": 40.0,
                         "t_compress.value": 5800},
                   1.0: {"gates": ()}, 2.0: {"gates": ()}, 3.0: {"gates": ()}},
            orderings={"t_grok": {"n_cells": 3, "axis_values": (1.0, 2.0, 3.0),
                                  "identified": True, "shape": "monotone"},
                       "floor": {"n_cells": 3}},
            findings=((R.HIGH_FLOOR_OUTLIER, 4.0),),
        ),),
        present=frozenset({R.HIGH_FLOOR_OUTLIER, R.SINGLE_CLOCK_SMALL_LAG}),
    ),
    options={"by": "rho"},
)


def _two_clock_specs() -> list[RunSpec]:
    # t_grok rises along rho (first seen 1100/1600/2100/2600), t_compress falls
    # (settles at 7100/6100/5100/4200): rel_lag 5.5/2.8/1.4/0.62, median large.
    return _runs([1.0, 2.0, 3.0, 4.0], 3, BASE,
                 t_grok=[[a - 30, a, a + 30] for a in (1050, 1550, 2050, 2550)],
                 t_floor=[7050.0, 6050.0, 5020.0, 4050.0])


TRUE_TWO_CLOCKS = Case(
    name="true_two_clocks",
    title="t_grok rises with rho while t_compress falls; large lag",
    why=("The paper's two-clocks signature. Both orderings are identified with every pair "
         "ordered (tau bounds [1, 1] and [−1, −1]); only then may TWO_CLOCKS be said."),
    build=lambda: table(_two_clock_specs()),
    expect=Expect(
        studies=(StudyExpect(
            verdict=R.TWO_CLOCKS,
            runs={_rid(1.0, 1): {"t_grok.value": 1100, "t_compress.value": 7100,
                                 "t_compress.lower": 7000, "lag.value": 6000},
                  _rid(4.0, 2): {"t_grok.value": 2600, "t_compress.value": 4200}},
            cells={1.0: {"t_compress.value": 7100}, 2.0: {"t_compress.value": 6100},
                   3.0: {"t_compress.value": 5100}, 4.0: {"t_compress.value": 4200}},
            orderings={"t_grok": {"identified": True, "direction": 1, "concordant": 6,
                                  "tau_bounds": (1.0, 1.0), "shape": "monotone"},
                       "t_compress": {"identified": True, "direction": -1, "discordant": 6,
                                      "tau_bounds": (-1.0, -1.0), "shape": "monotone"}},
        ),),
        present=frozenset({R.TWO_CLOCKS}),
        absent=frozenset({R.INCONCLUSIVE_CENSORING, R.MEDIAN_CENSORED}),
    ),
    options={"by": "rho"},
)


SINGLE_CELL = Case(
    name="single_cell",
    title="one cell of three seeds",
    why=("Nothing comparative can be said about one cell: LOW_POWER_DESCRIPTIVE, every "
         "ordering undefined with TOO_FEW_CELLS, no clock verdict — but the per-cell numbers "
         "are still reported."),
    build=lambda: table(_clean_specs()[:3]),
    expect=Expect(
        studies=(StudyExpect(
            verdict=LOW_POWER,
            cells={1.0: {"t_grok.value": 2100, "t_compress.value": 2800, "floor": 10.0,
                         "gates": ()}},
            orderings={q: {"identified": False, "sub_reason": R.TOO_FEW_CELLS}
                       for q in ("t_grok", "t_compress", "lag", "floor", "m_grok")},
        ),),
        present=frozenset({R.LOW_POWER_DESCRIPTIVE}),
        absent=CLOCK_VERDICTS | {R.INCONCLUSIVE_CENSORING, R.SHARED_ENDPOINT},
    ),
    options={"by": "rho"},
)


def _rebound_specs() -> list[RunSpec]:
    # floor reached at t_floor; then the metric undershoots to 7 (3 below the floor) 500
    # steps later and is back on the floor 1000 steps after that. The raw metric re-enters
    # the band at t_return − 167; the smoothed one at the second logged step after that.
    base = replace(BASE, metric_shape="rebound", undershoot=3.0)
    return _runs([1.0, 2.0, 3.0], 3, base,
                 t_grok=[2050.0, 3050.0, 4050.0], t_floor=[3050.0, 4050.0, 5050.0],
                 t_dip=[3550.0, 4550.0, 5550.0], t_return=[4550.0, 5550.0, 6550.0])


NON_MONOTONE_REBOUND = Case(
    name="non_monotone_rebound",
    title="the metric undershoots its floor by 3 and comes back (a rebound)",
    why=("The first dip into the band (around t_floor) is not compression: the metric goes "
         "on below the band and returns. t_compress is the final settling, 4500/5500/6500, "
         "with REBOUND and the undershoot (3) reported; the first crossing would say ~3100."),
    build=lambda: table(_rebound_specs()),
    expect=Expect(
        studies=(StudyExpect(
            verdict=R.ONE_CLOCK_LARGE_LAG,
            runs={_rid(1.0, 0): {"t_compress.value": 4500, "t_compress.lower": 4400,
                                 "undershoot": Between(2.5, 3.0), "floor": 10.0,
                                 "floor_stability": "stable",
                                 "reasons_include": (R.REBOUND,)},
                  _rid(3.0, 2): {"t_compress.value": 6500}},
            cells={1.0: {"t_compress.value": 4500}, 2.0: {"t_compress.value": 5500},
                   3.0: {"t_compress.value": 6500}},
        ),),
        present=frozenset({R.REBOUND, R.ONE_CLOCK_LARGE_LAG}),
    ),
    options={"by": "rho"},
    reference_fails="the crossing rule takes the first dip as t_compress (lag ~1000, not ~2400)",
)


def _before_grok_specs() -> list[RunSpec]:
    # the metric peaks at step 500, reaches its floor at 1500 (settled at 1600: raw inside
    # from 1500, smoothed one point later), long before grok at 3050/4050/5050.
    base = replace(BASE, t_peak=500.0, t_floor=1500.0)
    return _runs([1.0, 2.0, 3.0], 3, base, t_grok=[3050.0, 4050.0, 5050.0])


COMPRESSION_BEFORE_GROK = Case(
    name="compression_before_grok",
    title="the metric has finished compressing long before the run groks",
    why=("The lag is negative: t_compress 1600, t_grok 3100/4100/5100, lag −1500/−2500/−3500. "
         "It must be reported as a negative number (COMPRESSION_BEFORE_GROK), never clipped "
         "to 0; and the metric did compress (it is not a NO_COMPRESSION boundary). The "
         "at-grok reading is already the floor (SNAPSHOT_CONVERGED)."),
    build=lambda: table(_before_grok_specs()),
    expect=Expect(
        studies=(StudyExpect(
            verdict=R.SINGLE_CLOCK_SMALL_LAG,
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
        ),),
        present=frozenset({R.COMPRESSION_BEFORE_GROK, R.SINGLE_CLOCK_SMALL_LAG}),
        absent=frozenset({R.NO_COMPRESSION, R.BOUNDARY_NO_COMPRESSION, R.SNAPSHOT_TRANSIENT}),
    ),
    options={"by": "rho"},
    reference_fails=("the crossing rule only looks at steps ≥ t_grok, so it reports "
                     "t_compress = t_grok and a lag of 0 instead of a negative lag"),
)


def _ties_specs(dt: int, t_grok: list[Any], t_floor: list[Any]) -> list[RunSpec]:
    return _runs([1.0, 2.0, 3.0], 3, replace(BASE, dt=dt), t_grok=t_grok, t_floor=t_floor)


TIES = Case(
    name="ties",
    title="logged every 500 steps; the three cells grok at 2100/2200/2300, all first seen at 2500",
    why=("The true t_grok rises with rho, but the log cannot show it: all three are first "
         "seen at the same logged step, so every pair is tied and the t_grok ordering is "
         "undefined (TIES_WITHIN_RESOLUTION). With a large lag the verdict must be "
         "LARGE_LAG_ORDERING_UNDETERMINED, not a clock claim."),
    build=lambda: table(_ties_specs(500, [2100.0, 2200.0, 2300.0],
                                    [5550.0, 4550.0, 3550.0])),
    expect=Expect(
        studies=(StudyExpect(
            verdict=R.LARGE_LAG_ORDERING_UNDETERMINED,
            cells={v: {"t_grok.value": 2500, "t_grok.lower": 2000} for v in (1.0, 2.0, 3.0)},
            orderings={"t_grok": {"identified": False, "concordant": 0, "discordant": 0,
                                  "unidentified": 3,
                                  "sub_reason": R.TIES_WITHIN_RESOLUTION},
                       "t_compress": {"identified": True, "direction": -1}},
        ),),
        present=frozenset({R.LARGE_LAG_ORDERING_UNDETERMINED, R.ORDERING_UNDEFINED}),
        absent=frozenset({R.TWO_CLOCKS, R.ONE_CLOCK_LARGE_LAG, R.PARTIALLY_SEPARATED}),
    ),
    options={"by": "rho"},
)


def _noisy_specs() -> list[RunSpec]:
    # metric noise sd 1.0 on a floor of 10 (δ = 0.5): the MAD of W2 (~0.67) exceeds δ/2
    return _runs([1.0, 2.0, 3.0], 3, replace(BASE, noise=1.0, noise_seed=7),
                 t_grok=[2050.0, 3050.0, 4050.0], t_floor=[3050.0, 4050.0, 5050.0])


NOISY = Case(
    name="noisy",
    title="metric noise (sd 1.0) twice the floor band's half-width (0.5)",
    why=("The tolerance is below the noise: no floor can be called stable, so no t_compress "
         "is established (FLOOR_NOISY; the floor is indeterminate or unstable, never "
         "stable). The cells fail COMPRESSION_NOT_ESTABLISHED and nothing comparative is "
         "said. The floor itself is still ≈ 10."),
    build=lambda: table(_noisy_specs()),
    expect=Expect(
        studies=(StudyExpect(
            verdict=LOW_POWER,
            runs={_rid(v, s): {"floor_stability": OneOf(("indeterminate", "unstable")),
                               "t_compress.value": None, "t_compress.censored": True,
                               "floor": Approx(10.0, 1.5), "reasons_include": (R.FLOOR_NOISY,)}
                  for v in (1.0, 2.0, 3.0) for s in range(3)},
            cells={v: {"gates": (R.COMPRESSION_NOT_ESTABLISHED,), "n_established": 0}
                   for v in (1.0, 2.0, 3.0)},
        ),),
        present=frozenset({R.FLOOR_NOISY, R.COMPRESSION_NOT_ESTABLISHED}),
        absent=CLOCK_VERDICTS | {R.NO_COMPRESSION, R.FLOOR_STABLE},
    ),
    options={"by": "rho"},
    reference_fails="without a stability check the noisy floor is taken as converged",
)


# ------------------------------------------------------------------------------------------
# ours
# ------------------------------------------------------------------------------------------

def _late_collapse_specs() -> list[RunSpec]:
    # a floor of 10 from t_floor, then a second collapse to 6 at step 8850: W1 (8000–9000)
    # still reads 10, W2 (9000–10000) reads 6
    base = replace(BASE, metric_shape="late_collapse", floor2=6.0, t_collapse=8850.0)
    return _runs([1.0, 2.0, 3.0], 3, base, t_grok=[2050.0, 3050.0, 4050.0],
                 t_floor=[3050.0, 4050.0, 5050.0])


LATE_SECOND_COLLAPSE = Case(
    name="late_second_collapse",
    title="a plateau at 10, then a second collapse to 6 in the last 12% of the run",
    why=("The 'floor' of 10 was not the end: W1's median (10) and W2's (6) differ by more "
         "than δ (0.3), so the floor is unstable and there is no t_compress — censored with "
         "lower = 8900, the last step outside the final band. The amount of compression is "
         "COMPRESSION_UNKNOWN, never NO_COMPRESSION; the cells are gated."),
    build=lambda: table(_late_collapse_specs()),
    expect=Expect(
        studies=(StudyExpect(
            verdict=LOW_POWER,
            runs={_rid(v, 0): {"floor_stability": "unstable", "floor": 6.0,
                               "w1_median": 10.0, "t_compress.value": None,
                               "t_compress.censored": True, "t_compress.lower": 8900,
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
    ),
    options={"by": "rho"},
    reference_fails=("without a stability check the second floor is taken as converged and "
                     "a t_compress is reported for a metric that has not settled"),
)


SLOW_DRIFT = Case(
    name="slow_drift",
    title="after reaching 10 the metric keeps sliding down by 0.8 per 1000 steps",
    why=("No plateau was reached: the Theil–Sen drift over W2 (−0.8) lies outside ±δ "
         "(δ ≈ 0.24) and W1/W2 medians differ by 0.8. Floor unstable, no t_compress, "
         "COMPRESSION_UNKNOWN; cells gated."),
    build=lambda: table(_runs([1.0, 2.0, 3.0], 3,
                              replace(BASE, metric_shape="drift", drift=-0.8),
                              t_grok=[2050.0, 3050.0, 4050.0],
                              t_floor=[3050.0, 4050.0, 5050.0])),
    expect=Expect(
        studies=(StudyExpect(
            verdict=LOW_POWER,
            runs={_rid(v, 0): {"floor_stability": "unstable", "t_compress.value": None,
                               "t_compress.censored": True, "drift": Approx(-0.8, 1e-6),
                               "compression": "unknown",
                               "reasons_include": (R.FLOOR_UNSTABLE,)}
                  for v in (1.0, 2.0, 3.0)},
            cells={v: {"gates": (R.COMPRESSION_NOT_ESTABLISHED,)} for v in (1.0, 2.0, 3.0)},
        ),),
        present=frozenset({R.FLOOR_UNSTABLE, R.COMPRESSION_NOT_ESTABLISHED}),
        absent=CLOCK_VERDICTS | {R.NO_COMPRESSION},
    ),
    options={"by": "rho"},
    reference_fails="without a stability check a drifting metric gets a t_compress",
)


def _cadence_specs() -> list[RunSpec]:
    # accuracy every 100 steps, metric every 400; peak 1050 steps before grok, floor 1950
    # after. Settling: raw inside from 4000/5200/6000, smoothed at the next metric point.
    base = replace(BASE, metric_every=4)
    return _runs([1.0, 2.0, 3.0], 2, base, t_grok=[2050.0, 3050.0, 4050.0],
                 t_peak=[1000.0, 2000.0, 3000.0], t_floor=[4000.0, 5000.0, 6000.0])


DIFFERENT_CADENCES = Case(
    name="different_cadences",
    title="accuracy logged every 100 steps, the metric every 400 (NaN in between)",
    why=("Each clock is censored by its own cadence: t_grok in (2000, 2100], t_compress in "
         "(4000, 4400]; the lag interval combines both ([1900, 2400]). m_grok is read at "
         "the last metric point before grok (step 2000: 30.0), within one metric interval."),
    build=lambda: table(_cadence_specs()),
    expect=Expect(
        studies=(StudyExpect(
            verdict=R.ONE_CLOCK_LARGE_LAG,
            runs={_rid(1.0, 0): {"t_grok.value": 2100, "t_grok.lower": 2000,
                                 "t_compress.value": 4400, "t_compress.lower": 4000,
                                 "lag.value": 2300, "lag.lower": 1900, "lag.upper": 2400,
                                 "m_grok": 30.0,
                                 "reasons_exclude": (R.METRIC_NOT_AT_GROK,)},
                  _rid(2.0, 1): {"t_compress.value": 5600, "t_compress.lower": 5200}},
            cells={1.0: {"t_compress.value": 4400}, 2.0: {"t_compress.value": 5600},
                   3.0: {"t_compress.value": 6400}},
        ),),
        present=frozenset({R.ONE_CLOCK_LARGE_LAG, R.MISSING_VALUES}),
        absent=frozenset({R.METRIC_NOT_AT_GROK, R.INCONCLUSIVE_CENSORING}),
    ),
    options={"by": "rho"},
)


COARSE_CADENCE_TIE = Case(
    name="coarse_cadence_tie",
    title="logged every 500 steps; two of three cells are first seen grokking at the same step",
    why=("t_grok 1800/2300/2400 is seen at 2000/2500/2500: one pair tied. C = 2, D = 0, "
         "U = 1: the sign is identified (|C − D| > U) but tau is only known in [1/3, 1], so "
         "the ordering is weak, not monotone, and the verdict is PARTIALLY_SEPARATED. Spearman "
         "on the point medians (0.87) would call it monotone and claim TWO_CLOCKS."),
    build=lambda: table(_ties_specs(500, [1800.0, 2300.0, 2400.0],
                                    [5550.0, 4550.0, 3550.0])),
    expect=Expect(
        studies=(StudyExpect(
            verdict=R.PARTIALLY_SEPARATED,
            cells={1.0: {"t_grok.value": 2000}, 2.0: {"t_grok.value": 2500},
                   3.0: {"t_grok.value": 2500}},
            orderings={"t_grok": {"identified": True, "concordant": 2, "discordant": 0,
                                  "unidentified": 1, "tau_bounds": (1 / 3, 1.0),
                                  "shape": "weak", "direction": 1},
                       "t_compress": {"identified": True, "direction": -1,
                                      "shape": "monotone"}},
        ),),
        present=frozenset({R.PARTIALLY_SEPARATED}),
        absent=frozenset({R.TWO_CLOCKS}),
    ),
    options={"by": "rho"},
    reference_fails="Spearman on point medians calls the tied t_grok ordering monotone: TWO_CLOCKS",
)


def _half_censored_specs() -> list[RunSpec]:
    # four seeds per cell; seeds 2 and 3 reach their floor only at step 9500, inside the
    # final window: their t_compress is censored.
    return _runs([1.0, 2.0, 3.0], 4, BASE,
                 t_grok=[2050.0, 3050.0, 4050.0],
                 t_floor=[[2650.0, 2650.0, 9500.0, 9500.0], [3650.0, 3650.0, 9500.0, 9500.0],
                          [4650.0, 4650.0, 9500.0, 9500.0]])


HALF_SEEDS_CENSORED = Case(
    name="half_seeds_censored",
    title="in every cell two of four seeds have not settled when the log ends",
    why=("With half the runs censored the cell median of t_compress is censored too "
         "(MEDIAN_CENSORED): only its lower bound is known and no value may be shown. Half "
         "of the eligible runs censored (> 25%): INCONCLUSIVE_CENSORING. Dropping the "
         "censored seeds would report a median of 2800 and a small-lag verdict."),
    build=lambda: table(_half_censored_specs()),
    expect=Expect(
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
    ),
    options={"by": "rho"},
    reference_fails=("the reference drops censored runs from the medians and does not see "
                     "the late seeds as censored: a number where there is only a bound"),
)


def _censored_overlap_specs() -> list[RunSpec]:
    # 20 000-step runs. Cells 1 and 3 settle at 13000 and 14000; in cell 2 two seeds settle
    # at 5200 and two are still falling when the log ends: its median t_compress is censored
    # with lower bound (5100 + 20000)/2 = 12550, which overlaps both neighbours.
    return _runs([1.0, 2.0, 3.0], 4, replace(BASE, length=20000),
                 t_grok=[2050.0, 3050.0, 4050.0],
                 t_floor=[13050.0, [5050.0, 5050.0, 19500.0, 19500.0], 14050.0])


CENSORED_INTERVALS_OVERLAP = Case(
    name="censored_intervals_overlap",
    title="a middle cell whose censored median t_compress (> 12550) overlaps both neighbours",
    why=("Only one pair is ordered (cell 1 before cell 3): C = 1, D = 0, U = 2, so no "
         "assignment of the overlapping pairs is ruled out and the t_compress ordering is "
         "undefined (CENSORED_INTERVALS_OVERLAP, tau in [−1/3, 1]); with a large lag the "
         "verdict is LARGE_LAG_ORDERING_UNDETERMINED. Calling the ordering identified because "
         "C > D would claim a partial separation the log cannot support."),
    build=lambda: table(_censored_overlap_specs()),
    expect=Expect(
        studies=(StudyExpect(
            verdict=R.LARGE_LAG_ORDERING_UNDETERMINED,
            cells={1.0: {"t_compress.value": 13000, "t_compress.lower": 12900, "gates": ()},
                   2.0: {"t_compress.censored": True, "t_compress.value": None,
                         "t_compress.lower": 12550, "notes": (R.MEDIAN_CENSORED,),
                         "gates": ()},
                   3.0: {"t_compress.value": 14000, "gates": ()}},
            orderings={"t_compress": {"identified": False, "concordant": 1, "discordant": 0,
                                      "unidentified": 2, "tau_bounds": (-1 / 3, 1.0),
                                      "sub_reason": R.CENSORED_INTERVALS_OVERLAP},
                       "t_grok": {"identified": True, "shape": "monotone", "direction": 1}},
        ),),
        present=frozenset({R.LARGE_LAG_ORDERING_UNDETERMINED, R.MEDIAN_CENSORED}),
        absent=frozenset({R.PARTIALLY_SEPARATED, R.TWO_CLOCKS, R.ONE_CLOCK_LARGE_LAG,
                          R.INCONCLUSIVE_CENSORING}),
    ),
    options={"by": "rho"},
    reference_fails=None,
)


def _hides_boundary_specs() -> list[RunSpec]:
    # cells 1–3 compress 40 → 12; cell 4 only 40 → 31 (a drop of 9 < 25% of 40: no
    # compression). Grok is on a logged step (3000) at the peak, so every m_grok is 40.
    base = replace(BASE, floor=12.0, t_grok=3000.0, t_floor=4000.0)
    return _runs([1.0, 2.0, 3.0, 4.0], 2, base, floor=[12.0, 12.0, 12.0, 31.0])


SNAPSHOT_HIDES_BOUNDARY = Case(
    name="snapshot_hides_boundary",
    title="a no-compression cell reads the same at grok (40) as its compressing neighbour",
    why=("Read at grok, cell 4 looks like cell 3 (m_grok 40 vs 40); its floor (31) is far "
         "from cell 3's (12). It is a boundary cell (BOUNDARY_NO_COMPRESSION) that the "
         "at-grok snapshot hides: SNAPSHOT_HIDES_BOUNDARY, critical."),
    build=lambda: table(_hides_boundary_specs()),
    expect=Expect(
        studies=(StudyExpect(
            verdict=OneOf(tuple(CLOCK_VERDICTS)),  # not the point of the case
            # no-compression runs have no t_compress at all, so compression is not
            # established either (AUDIT_SPEC §2, read literally)
            cells={4.0: {"gates": (R.BOUNDARY_NO_COMPRESSION, R.COMPRESSION_NOT_ESTABLISHED),
                         "m_grok": 40.0,
                         "floor": 31.0, "n_no_compression": 2},
                   3.0: {"gates": (), "m_grok": 40.0, "floor": 12.0}},
            runs={_rid(4.0, 0): {"t_compress": None,
                                 "compression": "none",
                                 "reasons_include": (R.NO_COMPRESSION,)}},
            findings=((R.SNAPSHOT_HIDES_BOUNDARY, 4.0),),
        ),),
        present=frozenset({R.SNAPSHOT_HIDES_BOUNDARY, R.BOUNDARY_NO_COMPRESSION}),
        exit_code=1,
    ),
    options={"by": "rho"},
    reference_fails=None,
)


def _reverses_specs() -> list[RunSpec]:
    # peaks 30/40/50 exactly at grok (on logged steps 2000/3000/4000), floors 20/15/10
    out: list[RunSpec] = []
    for v, tg, pk, fl in ((1.0, 2000.0, 30.0, 20.0), (2.0, 3000.0, 40.0, 15.0),
                          (3.0, 4000.0, 50.0, 10.0)):
        out += cell_runs("rho", v, 2, replace(BASE, t_grok=tg, m_peak=pk, m_start=0.75 * pk,
                                              floor=fl, t_floor=tg + 3050.0))
    return out


SNAPSHOT_REVERSES_ORDERING = Case(
    name="snapshot_reverses_ordering",
    title="the at-grok value rises along rho (30/40/50) while the floor falls (20/15/10)",
    why=("Read at grok, the metric says 'more rho, higher rank'; converged, it says the "
         "opposite. Both orderings are monotone (tau [1,1] and [−1,−1]) in opposite "
         "directions: SNAPSHOT_REVERSES_ORDERING, critical."),
    build=lambda: table(_reverses_specs()),
    expect=Expect(
        studies=(StudyExpect(
            verdict=OneOf(tuple(CLOCK_VERDICTS)),
            cells={1.0: {"m_grok": 30.0, "floor": 20.0}, 2.0: {"m_grok": 40.0, "floor": 15.0},
                   3.0: {"m_grok": 50.0, "floor": 10.0}},
            orderings={"m_grok": {"identified": True, "direction": 1, "shape": "monotone",
                                  "tau_bounds": (1.0, 1.0)},
                       "floor": {"identified": True, "direction": -1, "shape": "monotone",
                                 "tau_bounds": (-1.0, -1.0)}},
            findings=((R.SNAPSHOT_REVERSES_ORDERING, None),),
        ),),
        present=frozenset({R.SNAPSHOT_REVERSES_ORDERING, R.SNAPSHOT_TRANSIENT}),
        exit_code=1,
    ),
    options={"by": "rho"},
)


def _two_arm_specs() -> list[RunSpec]:
    mlp = [replace(s, run="mlp/" + s.run, conditions={**s.conditions, "arch": "mlp"})
           for s in _two_clock_specs()]
    tr = [replace(s, run="tr/" + s.run, conditions={**s.conditions, "arch": "transformer"})
          for s in _clean_specs()]
    return mlp + tr


DUPLICATE_AXIS_VALUES = Case(
    name="duplicate_axis_values",
    title="two architectures share the rho values 1, 2, 3 and no --cell separates them",
    why=("Pooling the arms would mix two studies into one cell per rho. The audit must "
         "refuse with DUPLICATE_AXIS_VALUES (the reference only warns and mixes them)."),
    build=lambda: table(_two_arm_specs()),
    expect=Expect(error="DUPLICATE_AXIS_VALUES"),
    options={"by": "rho"},
)


DUPLICATE_AXIS_VALUES_SPLIT = Case(
    name="duplicate_axis_values_split",
    title="the same two-arm log audited with --cell arch",
    why=("Split by arch, each arm is its own study with its own verdict: the MLP arm has two "
         "clocks, the Transformer arm a single clock with a small lag."),
    build=lambda: table(_two_arm_specs()),
    expect=Expect(studies=(
        StudyExpect(verdict=R.TWO_CLOCKS, key={"arch": "mlp"},
                    cells={1.0: {"t_compress.value": 7100, "n_runs": 3}}),
        StudyExpect(verdict=R.SINGLE_CLOCK_SMALL_LAG, key={"arch": "transformer"},
                    cells={1.0: {"t_compress.value": 2800, "n_runs": 3}}),
    )),
    options={"by": "rho", "cell": ("arch",)},
)


def _unsustained_specs() -> list[RunSpec]:
    # grok at 2050 (seen 2100); test_acc falls to 0.5 for 4 logged points from 3000, recovers
    return _runs([1.0, 2.0, 3.0], 2, replace(BASE, acc_shape="unsustained", fall_points=4),
                 t_grok=[2050.0, 3050.0, 4050.0], t_fall=[3000.0, 4000.0, 5000.0],
                 t_floor=[2650.0, 3650.0, 4650.0])


GROK_NOT_SUSTAINED = Case(
    name="grok_not_sustained",
    title="test_acc crosses 0.90 at 2100, falls to 0.5 for four logged points at 3000, recovers",
    why=("The first crossing is still t_grok (2100), but the grok was not sustained: "
         "GROK_NOT_SUSTAINED with the step it fell (3000)."),
    build=lambda: table(_unsustained_specs()),
    expect=Expect(
        studies=(StudyExpect(
            verdict=R.SINGLE_CLOCK_SMALL_LAG,
            runs={_rid(1.0, 0): {"t_grok.value": 2100, "grok_sustained": False,
                                 "grok_fell_at": 3000, "fully_generalized": True,
                                 "reasons_include": (R.GROK_NOT_SUSTAINED,)},
                  _rid(3.0, 1): {"grok_fell_at": 5000}},
        ),),
        present=frozenset({R.GROK_NOT_SUSTAINED}),
    ),
    options={"by": "rho"},
)


def _percent() -> pd.DataFrame:
    df = table(_clean_specs())
    df["test_acc"] = df["test_acc"] * 100
    df["train_acc"] = df["train_acc"] * 100
    return df


ACCURACY_IN_PERCENT = Case(
    name="accuracy_in_percent",
    title="the clean study with accuracies logged in percent (0–100)",
    why=("Read as fractions every run 'groks' at step 0. The audit must stop with an input "
         "error on test_acc that suggests --acc-scale 100."),
    build=_percent,
    expect=Expect(error="PERCENT_ACCURACY"),
    options={"by": "rho"},
)


ACCURACY_IN_PERCENT_SCALED = Case(
    name="accuracy_in_percent_scaled",
    title="the percent log audited with acc_scale = 100",
    why="Rescaled, it is the clean study: the same verdict and the same numbers.",
    build=_percent,
    expect=_clean_expect(),
    options={"by": "rho", "acc_scale": 100.0},
)


def _too_short() -> pd.DataFrame:
    df = table(_clean_specs())
    extra = replace(BASE, run="rho=2.0/s9", conditions={"rho": 2.0, "seed": 9}).rows()
    return pd.concat([df, extra.iloc[:2]], ignore_index=True)


RUN_TOO_SHORT = Case(
    name="run_too_short",
    title="the clean study plus a run with only two logged points",
    why=("A run with fewer than 3 points cannot be audited: it is set aside with a TOO_SHORT "
         "finding and counted in the input section — never a crash, never silently dropped. "
         "The rest of the study is audited as if it were not there."),
    build=_too_short,
    expect=Expect(
        studies=(StudyExpect(
            verdict=R.SINGLE_CLOCK_SMALL_LAG,
            cells={2.0: {"n_runs": 3, "t_compress.value": 3800}},
        ),),
        present=frozenset({R.TOO_SHORT}),
        input={"runs_read": 10, "runs_kept": 9, "runs_too_short": ["rho=2.0/s9"],
               "set_aside": {"run_too_short": 2}, "rows_read": 911, "rows_kept": 909},
    ),
    options={"by": "rho"},
)


def _metric_gap_specs() -> list[RunSpec]:
    # the metric logger was down from step 1000 to 3000 (exclusive); grok at 2050/2550/2850
    # is first seen at 2100/2600/2900, when the last metric point (1000) is 1100+ steps old
    return _runs([1.0, 2.0, 3.0], 2, replace(BASE, metric_gap=(1000.0, 3000.0)),
                 t_grok=[2050.0, 2550.0, 2850.0], t_floor=[4050.0, 5050.0, 6050.0])


METRIC_GAP_AT_GROK = Case(
    name="metric_gap_at_grok",
    title="the metric was not logged between steps 1000 and 3000, around every grok",
    why=("The last metric point before grok (step 1000) is far more than one metric logging "
         "interval (100) before t_grok: there is no at-grok reading. m_grok, inflation and "
         "frac_pre are null with METRIC_NOT_AT_GROK, never the stale value; the clocks "
         "themselves are unaffected."),
    build=lambda: table(_metric_gap_specs()),
    expect=Expect(
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
    ),
    options={"by": "rho"},
)


CASES: tuple[Case, ...] = (
    CLEAN_ONE_CLOCK, ALL_CENSORED, HIGH_FLOOR_BOUNDARY, TRUE_TWO_CLOCKS, SINGLE_CELL,
    NON_MONOTONE_REBOUND, COMPRESSION_BEFORE_GROK, TIES, NOISY,
    LATE_SECOND_COLLAPSE, SLOW_DRIFT, DIFFERENT_CADENCES, COARSE_CADENCE_TIE,
    HALF_SEEDS_CENSORED, CENSORED_INTERVALS_OVERLAP, SNAPSHOT_HIDES_BOUNDARY, SNAPSHOT_REVERSES_ORDERING,
    DUPLICATE_AXIS_VALUES, DUPLICATE_AXIS_VALUES_SPLIT, GROK_NOT_SUSTAINED,
    ACCURACY_IN_PERCENT, ACCURACY_IN_PERCENT_SCALED, RUN_TOO_SHORT, METRIC_GAP_AT_GROK,
)

CASES_BY_NAME: dict[str, Case] = {c.name: c for c in CASES}
