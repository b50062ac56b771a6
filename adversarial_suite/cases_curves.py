"""The named cases of curves that rise before they compress, and of runs stuck at chance.

A norm (the weights', an embedding's) often grows from a small initialization before it falls:
its first values lie below its floor without undershooting it. A norm may also only grow. And
runs may never leave chance level. Each case is a log a careless audit misreads (a rebound that
is only the rise, a plateau called a floor, a cell at chance called a boundary between
generalizing and not), with its pre-registered answer. Runs log every 100 steps, as in
:mod:`.cases`.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from .cases import (
    CLEAN_TC,
    CLOCK_VERDICTS,
    Case,
    K,
    R,
    _clean_study,
    _expect,
    _rid,
    _runs,
    _settle_all,
)
from .expect import LOW_POWER, Expect, StudyExpect
from .generators import table

# ------------------------------------------------------------------------------------------
# a norm that rises first, then compresses
# ------------------------------------------------------------------------------------------

#: where a rising norm starts: far below the floor of 10 under any band the suite can show
RISE_START = 1.0


def _rise_then_compress(k: K) -> tuple[pd.DataFrame, Expect]:
    # the clean study, but each run's metric starts at 1 (below its floor of 10) and rises to
    # its peak at grok before it falls: the rise crosses the band on its way up
    specs = _runs([1.0, 2.0, 3.0], 3, k.base(m_start=RISE_START),
                  t_grok=[[a - 30, a, a + 30] for a in (2050, 3050, 4050)],
                  t_floor=[[a + 570, a + 600, a + 630] for a in (2050, 3050, 4050)])
    specs, _ = k.finish(_settle_all(k, specs, CLEAN_TC))
    k.check(specs)
    study = _clean_study(k)
    return table(specs), _expect(
        (study,), present={R.SHARED_ENDPOINT},
        absent={R.REBOUND, R.INCONCLUSIVE_CENSORING, R.FLOOR_UNSTABLE, R.NO_COMPRESSION})


RISE_THEN_COMPRESS = Case(
    name="rise_then_compress",
    title="the clean study, each metric rising from 1 to its peak before it compresses",
    why=("A norm grown from a small initialization lies below its floor before it rose; that "
         "is no undershoot. Measured after the peak, nothing rebounds: the clean study's "
         "answer, with no REBOUND. An audit that measures the undershoot from the first "
         "logged point calls every run a rebound."),
    make=_rise_then_compress,
    options={"by": "rho"},
)


# ------------------------------------------------------------------------------------------
# a norm that only rises
# ------------------------------------------------------------------------------------------

def _only_rises(k: K) -> tuple[pd.DataFrame, Expect]:
    # cell 1.0: rises from 2 to 40 by step 3000 and stays there (a plateau); cell 2.0: rises
    # through the whole log (still rising at its end). Every run groks as in the clean study
    # (not k.base: no peak is raised to make a fall count; there is no fall)
    plateau = replace(k.base(), metric_shape="none", m_start=2.0, m_peak=40.0, floor=40.0,
                      t_peak=3000.0, t_floor=3001.0)
    climbing = replace(plateau, metric_shape="still_rising", t_peak=60000.0, t_floor=60001.0)
    specs = [*_runs([1.0], 3, plateau, t_grok=[[2020.0, 2050.0, 2080.0]]),
             *_runs([2.0], 3, climbing, t_grok=[[3020.0, 3050.0, 3080.0]])]
    specs, _ = k.finish(specs)
    k.check(specs, no_compression=[s.run for s in specs])
    never = {"floor": None, "floor_stability": "none", "compression": "none",
             "t_compress": None, "inflation": None, "reasons_include": (R.NO_COMPRESSION,)}
    exp = Expect(
        studies=(StudyExpect(
            verdict=LOW_POWER,
            runs={_rid(1.0, 0): never, _rid(2.0, 2): never},
            cells={1.0: {"floor": None, "n_no_compression": 3, "n_grokked": 3},
                   2.0: {"floor": None, "n_no_compression": 3, "n_grokked": 3}},
        ),),
        present=frozenset({R.NO_COMPRESSION, R.BOUNDARY_NO_COMPRESSION, R.NOTHING_AUDITABLE}),
        absent=frozenset({R.REBOUND, R.FLOOR_TOO_FEW_POINTS, R.SNAPSHOT_TRANSIENT,
                          R.COMPRESSION_UNKNOWN, *CLOCK_VERDICTS}),
        exit_code=1,  # nothing was assessed: never a green exit 0
    )
    return table(specs), exp


ONLY_RISES = Case(
    name="only_rises",
    title="a metric that only rises: to a plateau (cell 1.0) or to the end of the log (2.0)",
    why=("A metric that never turns down did not compress: NO_COMPRESSION, and its plateau "
         "is no floor (no F, no stability, no ratio at grok). An audit that measures a rebound "
         "from the first point calls the rise a REBOUND, and one that takes the last values "
         "as a floor prints a 'stable floor' the metric never fell to."),
    make=_only_rises,
    options={"by": "rho"},
)


# ------------------------------------------------------------------------------------------
# runs stuck at chance
# ------------------------------------------------------------------------------------------

#: a test accuracy at chance on a task with ~1 400 classes
CHANCE = 0.0007


def _at_chance(k: K) -> tuple[pd.DataFrame, Expect]:
    # the clean study plus a cell whose runs never leave chance level
    specs = _runs([1.0, 2.0, 3.0], 3, k.base(),
                  t_grok=[[a - 30, a, a + 30] for a in (2050, 3050, 4050)],
                  t_floor=[[a + 570, a + 600, a + 630] for a in (2050, 3050, 4050)])
    specs = _settle_all(k, specs, CLEAN_TC)
    stuck = _runs([4.0], 3, k.base(acc_shape="never", acc_never=CHANCE, acc_low=CHANCE))
    specs, _ = k.finish([*specs, *stuck])
    k.check(specs)
    clean = _clean_study(k)
    study = replace(clean, cells={
        **clean.cells, 4.0: {"gates": (R.NO_GROK,), "n_grokked": 0, "t_grok.censored": True,
                             "t_compress": None}})
    return table(specs), _expect(
        (study,), present={R.NO_GROK, R.MEDIAN_CENSORED},
        absent={R.BOUNDARY_PARTIAL_GENERALIZATION, R.REBOUND})


AT_CHANCE = Case(
    name="at_chance",
    title="the clean study plus a cell whose runs stay at chance (test accuracy 0.0007)",
    why=("Runs that never leave chance did not grok: the cell's gate is NO_GROK, not "
         "BOUNDARY_PARTIAL_GENERALIZATION (a boundary needs runs on the generalizing side). "
         "The clean cells keep their answer."),
    make=_at_chance,
    options={"by": "rho"},
)


CURVE_CASES: tuple[Case, ...] = (RISE_THEN_COMPRESS, ONLY_RISES, AT_CHANCE)

__all__ = ["CURVE_CASES"]
