"""The named cases of issue 19: verdicts that never say more than the log supports.

Each is a log a careless audit overstates (a critical finding from a cell the audit itself
gated out, a ratio against a floor never reached, a log that starts after runs grokked, runs of
one cell that stop far apart, a replication that never memorized, a metric missing in most
runs, one run or one value under two spellings), with its pre-registered answer. Runs log every
100 steps; the metric's floor is 10 (δ = 0.5) unless stated, as in :mod:`.cases`.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd

from .cases import (
    CLEAN_TC,
    CLOCK_VERDICTS,
    Case,
    K,
    R,
    Unsupported,
    _clean,
    _clean_specs,
    _rho,
    _rid,
    _runs,
    _settle_all,
)
from .expect import LOW_POWER, Expect, OneOf, StudyExpect
from .generators import table

# ------------------------------------------------------------------------------------------
# severity follows evidence
# ------------------------------------------------------------------------------------------


def _gated_transient(k: K) -> tuple[pd.DataFrame, Expect]:
    # the clean study plus a cell whose test accuracy collapses for the last 20 % of the run
    # (not sustained, not fully generalized: gated), its metric read at grok as far above its
    # floor as in the passing cells
    specs, L = k.finish(_clean_specs(k))
    extra = _runs([4.0], 3, k.base(acc_shape="collapse"), t_grok=[[4020.0, 4050.0, 4080.0]],
                  t_floor=[[4620.0, 4650.0, 4680.0]])
    extra, _ = k.finish(extra, base=L)
    if extra[0].length != L:
        raise Unsupported(("floor_frac",), "the collapsing cell needs a longer log")
    k.check([*specs, *extra])
    exp = Expect(
        studies=(StudyExpect(
            verdict=OneOf(tuple(CLOCK_VERDICTS)),
            cells={4.0: {"gates": (R.BOUNDARY_PARTIAL_GENERALIZATION,), "n_grokked": 3,
                         "n_transient_sustained": 0}},
            runs={_rid(4.0, 0): {"grok_sustained": False, "fully_generalized": False,
                                 "reasons_include": (R.SNAPSHOT_TRANSIENT,)}},
            severities=((R.SNAPSHOT_TRANSIENT, 4.0, "warning"),
                        (R.SNAPSHOT_TRANSIENT, 1.0, "critical")),
        ),),
        present=frozenset({R.SNAPSHOT_TRANSIENT, R.BOUNDARY_PARTIAL_GENERALIZATION}),
    )
    return table([*specs, *extra]), exp


GATED_TRANSIENT = Case(
    name="gated_cell_transient",
    title="the clean study plus a cell whose test accuracy collapses after grok (gated)",
    why=("In the gated cell the first crossing of 0.90 is not a grok that lasted: 'the value at "
         "grok' has no meaning there. Its transient is reported as a warning that says why; "
         "the passing cells' transients stay critical. A careless audit fails the run on the "
         "cell it gated itself."),
    make=_gated_transient,
    options={"by": "rho"},
    reference_fails="v1.5's gates do not test generalization, so the collapsing cell passes",
)


def _floor_not_reached(k: K) -> tuple[pd.DataFrame, Expect]:
    # cell 1.0: the metric is still falling when the log ends, by 1.5δ over the final window
    # (enough to be unstable, a spread of ~0.4δ: not noise), toward a floor of 10 it never
    # reaches (no floor reached: the ratio is a lower bound); cell 2.0: the floor is noise of
    # 3δ around 10 (no level: no ratio)
    c = k.cfg
    d = k.delta(10.0)
    falling = _runs([1.0], 3, k.base(metric_shape="still_falling"),
                    t_grok=[[2020.0, 2050.0, 2080.0]], t_floor=[[40000.0] * 3])
    noisy = _runs([2.0], 3, k.base(noise=3.0 * d), t_grok=[[3020.0, 3050.0, 3080.0]],
                  t_floor=[[3620.0, 3650.0, 3680.0]])
    clean = _settle_all(k, _runs([3.0], 3, k.base(), t_grok=[[4020.0, 4050.0, 4080.0]],
                                 t_floor=[[4620.0, 4650.0, 4680.0]]), CLEAN_TC)
    specs, L = k.finish([*falling, *noisy, *clean])
    # the slope s: s·W = 1.5·δ(end), the end value 40 − s·(L − t_grok), W the final window
    W, run = c.floor_frac * L, L - 2050.0
    peak = falling[0].m_peak
    s_rel = 1.5 * c.rel_tol * peak / (W + 1.5 * c.rel_tol * run)
    slope = max(s_rel, 1.5 * c.abs_tol / W)
    end = peak - slope * run
    if end <= 10.0 + 2.0 * d or W / 100 < c.min_floor_points:
        raise Unsupported(("rel_tol", "abs_tol", "floor_frac"),
                          "no fall both unstable and not noisy ends above its floor")
    specs = [replace(sp, t_floor=sp.t_grok + (peak - sp.floor) / slope)
             if _rho(sp) == 1.0 else sp for sp in specs]
    exp = Expect(
        studies=(StudyExpect(
            verdict=OneOf((*CLOCK_VERDICTS, R.INCONCLUSIVE_CENSORING, None)),
            cells={1.0: {"inflation_is_lower_bound": True},
                   2.0: {"inflation": None, "n_judged": 0}},
            runs={_rid(1.0, 0): {"inflation_is_lower_bound": True,
                                 "floor_stability": OneOf(("unstable", "indeterminate"))},
                  _rid(2.0, 0): {"inflation": None, "reasons_include": (R.FLOOR_NOISY,),
                                 "reasons_exclude": (R.SNAPSHOT_TRANSIENT,)}},
        ),),
        present=frozenset({R.FLOOR_NOISY}),
    )
    return table(specs), exp


FLOOR_NOT_REACHED = Case(
    name="floor_not_reached",
    title="a cell still falling when the log ends, and a cell whose floor is noise",
    why=("Against a floor the log never reached, m_grok / F is only a lower bound of the "
         "inflation (inflation_is_lower_bound, printed ≥); against a floor that is noise of "
         "3δ there is no level to divide by, so no ratio and no transient finding."),
    make=_floor_not_reached,
    options={"by": "rho"},
    reference_fails='without a stability check every floor is reached and divides the value at grok',
)


# ------------------------------------------------------------------------------------------
# left-censoring
# ------------------------------------------------------------------------------------------

#: The log starts at this step (the earlier rows were not kept: a trimmed or resumed log).
TRIM = 2500


def _left_censored(k: K) -> tuple[pd.DataFrame, Expect]:
    # 1.0 grokked at 1050 and compressed by ~1700, before logging began; 2.0, 3.0 and 4.0
    # grokked at 1550/1850/2250 (before 2500) and settle at 3200/3700/4200, after it; 5.0
    # groks at 4050 and settles at 4800
    early = _settle_all(k, _runs([1.0], 3, k.base(), t_grok=[1050.0], t_floor=[1650.0]),
                        {1.0: 1700})
    mid = _settle_all(k, _runs([2.0, 3.0, 4.0], 3, k.base(), t_grok=[1550.0, 1850.0, 2250.0],
                               t_floor=[3150.0, 3650.0, 4150.0]),
                      {2.0: 3200, 3.0: 3700, 4.0: 4200})
    late = _settle_all(k, _runs([5.0], 3, k.base(), t_grok=[4050.0], t_floor=[4750.0]),
                       {5.0: 4800})
    specs, _ = k.finish([*early, *mid, *late])
    k.check(specs)
    df = table(specs)
    df = df[df["step"] >= TRIM].reset_index(drop=True)
    left_tg = {"t_grok.value": None, "t_grok.lower": 0, "t_grok.upper": TRIM,
               "t_grok.left_censored": True, "m_grok": None, "frac_pre": None,
               "inflation": None, "lag.value": None, "rel_lag": None,
               "reasons_include": (R.LEFT_CENSORED,),
               "reasons_exclude": (R.METRIC_NOT_AT_GROK,)}
    exp = Expect(
        studies=(StudyExpect(
            # the t_grok of three passing cells is only known to lie before 2500: the lag's
            # size and the t_grok ordering cannot both be read; never a small single clock
            verdict=OneOf((R.LARGE_LAG_ORDERING_UNDETERMINED, R.INCONCLUSIVE_CENSORING)),
            runs={_rid(1.0, 0): {**left_tg, "t_compress.value": None,
                                 "t_compress.left_censored": True,
                                 "t_compress.upper": TRIM, "compression": "unknown",
                                 "reasons_exclude": (R.NO_COMPRESSION, R.METRIC_NOT_AT_GROK)},
                  _rid(2.0, 0): {**left_tg, "t_compress.value": 3200,
                                 "lag.lower": 3100 - TRIM, "lag.upper": 3200},
                  _rid(5.0, 0): {"t_grok.value": 4100, "t_grok.left_censored": False}},
            cells={1.0: {"gates": (R.COMPRESSION_NOT_ESTABLISHED,), "n_left_censored": 3},
                   2.0: {"t_grok.value": None, "t_grok.upper": TRIM, "gates": (),
                         "n_left_censored": 3},
                   5.0: {"t_grok.value": 4100, "n_left_censored": 0}},
            orderings={"t_grok": {"identified": False,
                                  "sub_reason": R.CENSORED_INTERVALS_OVERLAP}},
        ),),
        present=frozenset({R.LEFT_CENSORED}),
        absent=frozenset({R.NO_COMPRESSION, R.SINGLE_CLOCK_SMALL_LAG}),
    )
    return df, exp


LOG_STARTS_AFTER_GROK = Case(
    name="log_starts_after_grok",
    title="a log that starts at step 2500, after four of five cells grokked",
    why=("A run already above the grok threshold at its first logged point grokked before "
         "logging began: t_grok is left-censored in (0, 2500], with no value at grok, no "
         "frac_pre, and a lag known only as bounds. A careless audit reads t_grok = 2500, "
         "ties three cells, computes a small lag from the point and says "
         "SINGLE_CLOCK_SMALL_LAG; a run already on its floor at 2500 is reported as "
         "NO_COMPRESSION instead of 'compressed before logging'."),
    make=_left_censored,
    options={"by": "rho"},
    reference_fails='without interval censoring t_grok is read as the first logged step, 2500',
)


# ------------------------------------------------------------------------------------------
# horizons
# ------------------------------------------------------------------------------------------

def _horizons(k: K) -> tuple[pd.DataFrame, Expect]:
    # every run settles on 10 at 2800/3800/4800; seeds 0 and 1 of cell 2.0 stop soon after
    # (at `short`, flat on 10 over both their windows); seed 2 of cell 2.0 runs on and drops
    # to a second floor (10 − 4δ) 1500 steps after they stopped, well before its own windows
    d = k.delta(10.0)
    f = k.cfg.floor_frac
    specs, L = k.finish(_clean_specs(k))
    floor2 = 10.0 - 4.0 * d
    if floor2 <= 0.5 * 10.0 or f >= 0.4:
        raise Unsupported(("rel_tol", "abs_tol", "floor_frac"),
                          "no second floor fits below the first")
    last_settle = max(s.t_floor for s in specs) + 100.0
    short = max(5000, int(math.ceil(last_settle / (1.0 - 2.0 * f) / 100.0)) * 100)
    collapse = short + 1500.0
    L = max(L, int(math.ceil(collapse / (1.0 - 2.0 * f) / 1000.0)) * 1000 + 1000)
    out = []
    for s in specs:
        s = replace(s, length=L)
        if s.conditions["rho"] != 2.0:
            out.append(s)
        elif s.conditions["seed"] == 2:
            out.append(replace(s, metric_shape="late_collapse", floor2=floor2,
                               t_collapse=collapse))
        else:
            out.append(replace(s, length=short))
    if not all(k._fits(s) for s in out if s.metric_shape != "late_collapse"):
        raise Unsupported(("floor_frac", "min_floor_points"),
                          "the short runs' windows do not fit on their flat end")
    exp = Expect(
        studies=(StudyExpect(
            verdict=OneOf((*CLOCK_VERDICTS, None)),
            runs={_rid(2.0, 0): {"floor": 10.0, "floor_stability": "indeterminate"},
                  _rid(2.0, 2): {"floor": floor2, "floor_stability": "stable"},
                  _rid(1.0, 0): {"floor_stability": "stable"}},
            cells={2.0: {"short_horizon_runs": (_rid(2.0, 0), _rid(2.0, 1)),
                         "floor_rests_on_short_runs": True,
                         "gates": (R.COMPRESSION_NOT_ESTABLISHED,)},
                   1.0: {"short_horizon_runs": (), "floor_rests_on_short_runs": False}},
            findings=((R.HORIZON_MISMATCH, 2.0),),
        ),),
        present=frozenset({R.HORIZON_MISMATCH}),
    )
    return table(out), exp


HORIZON_MISMATCH = Case(
    name="horizon_mismatch",
    title="two seeds of one cell stop at 5000, flat; the third runs on and compresses again",
    why=("A floor is stable only relative to the horizon its siblings reached: the long seed "
         "shows the metric still moving after the short ones stopped, so their floors are "
         "indeterminate (not stable), the cell's t_compress is not established, and the "
         "cell floor (10, the short runs' median) is said to rest on the shorter runs "
         "(HORIZON_MISMATCH)."),
    make=_horizons,
    options={"by": "rho"},
    reference_fails="without a stability check no floor is compared with a sibling's horizon",
)


# ------------------------------------------------------------------------------------------
# failed replications, missing evidence
# ------------------------------------------------------------------------------------------

def _no_memorization(k: K) -> tuple[pd.DataFrame, Expect]:
    # cell 4.0 never fits its training data (train_acc stays below mem_threshold) and never
    # groks: a failed replication, not a late grok
    specs, L = k.finish(_clean_specs(k))
    failed = _runs([4.0], 3, k.base(acc_shape="never", t_mem=10.0 * L))
    failed, _ = k.finish(failed, base=L)
    exp = Expect(
        studies=(StudyExpect(
            verdict=OneOf(tuple(CLOCK_VERDICTS)),
            runs={_rid(4.0, 0): {"t_mem.censored": True,
                                 "reasons_include": (R.NO_MEMORIZATION, R.NO_GROK)}},
            findings=((R.NO_MEMORIZATION, 4.0),),
        ),),
        present=frozenset({R.NO_MEMORIZATION}),
    )
    return table([*specs, *failed]), exp


NO_MEMORIZATION = Case(
    name="no_memorization",
    title="the clean study plus a cell whose runs never fit their training data",
    why=("A run whose train accuracy never reaches mem_threshold is a failed replication; "
         "read only as NO_GROK it looks like a late grokker. NO_MEMORIZATION is a finding "
         "of its own, naming the cell and the runs."),
    make=_no_memorization,
    options={"by": "rho"},
)


def _metric_missing(k: K) -> tuple[pd.DataFrame, Expect]:
    # the clean study with the metric missing (NaN) in seeds 1 and 2 of every cell
    df, _ = _clean(k)
    gone = df["seed"] != 0
    df.loc[gone, "emb_erank"] = np.nan
    exp = Expect(
        studies=(StudyExpect(
            verdict=LOW_POWER,
            cells={v: {"n_judged": 1, "n_transient": 1,
                       "gates": (R.COMPRESSION_NOT_ESTABLISHED,)} for v in (1.0, 2.0, 3.0)},
            findings=((R.SNAPSHOT_TRANSIENT, 1.0), (R.METRIC_MISSING, None)),
        ),),
        present=frozenset({R.METRIC_MISSING, R.SNAPSHOT_TRANSIENT, R.NOTHING_AUDITABLE}),
        exit_code=1,
    )
    return df, exp


METRIC_MISSING = Case(
    name="metric_missing",
    title="the clean study with the metric missing in two of three seeds",
    why=("Less evidence must not read better: the six runs without the metric are named "
         "(METRIC_MISSING), each cell's transient is still reported on the one run that has "
         "a ratio (n_judged 1), and since no cell can pass its gates the result is "
         "NOTHING_AUDITABLE (critical), never a green exit 0."),
    make=_metric_missing,
    options={"by": "rho"},
    reference_fails="v1.5's gates pass cells on one run with the metric",
)


# ------------------------------------------------------------------------------------------
# identity
# ------------------------------------------------------------------------------------------

_RHO = {1.0: 0.1, 2.0: 0.2, 3.0: 0.3}


def _float32_half(k: K) -> tuple[pd.DataFrame, Expect]:
    # the clean study along rho 0.1/0.2/0.3; seed 0's rows hold the float32 value (as a
    # float64: 0.10000000149011612), the others the float64 one
    df, _ = _clean(k)
    rho = df["rho"].map(_RHO).astype(np.float64)
    f32 = rho.map(lambda v: float(np.float32(v)))
    df["rho"] = np.where(df["seed"] == 0, f32, rho)
    exp = Expect(
        studies=(StudyExpect(
            verdict=OneOf(tuple(CLOCK_VERDICTS)),
            cells={v: {"n_runs": 3} for v in _RHO.values()},
        ),),
    )
    return df, exp


FLOAT32_SPELLING = Case(
    name="float32_spelling",
    title="the clean study along rho = 0.1/0.2/0.3, one seed's rho stored as float32",
    why=("0.1 and 0.10000000149011612 are one setting stored at two precisions: three cells "
         "of three runs, not six cells of one or two (which would gate every cell)."),
    make=_float32_half,
    options={"by": "rho"},
)


def _copy(k: K, run_id: str) -> pd.DataFrame:
    df, _ = _clean(k)
    copy: pd.DataFrame = df[df["run"] == _rid(1.0, 0)].copy()
    copy["run"] = run_id
    copy["seed"] = 9
    return pd.concat([df, copy], ignore_index=True)


def _duplicate_run(k: K) -> tuple[pd.DataFrame, Expect]:
    _, clean_exp = _clean(k)
    exp = replace(clean_exp, present=clean_exp.present | {R.DUPLICATE_RUN},
                  input={"duplicate_runs": [[_rid(1.0, 0), _rid(1.0, 9)]]})
    exp = replace(exp, studies=(replace(exp.studies[0], cells={1.0: {"n_runs": 4}}),))
    return _copy(k, _rid(1.0, 9)), exp


DUPLICATE_RUN = Case(
    name="duplicate_run",
    title="the clean study with one run copied under a second id",
    why=("A run logged twice under two ids counts twice as a replicate: the two are named "
         "(DUPLICATE_RUN) whatever else the study says."),
    make=_duplicate_run,
    options={"by": "rho"},
)


RUN_ID_SPELLING = Case(
    name="run_id_spelling",
    title="the clean study with one run copied under its id plus a trailing space",
    why=("'rho=1.0/s0 ' is 'rho=1.0/s0' once trimmed: one run under two spellings is refused "
         "(RUN_ID_AMBIGUOUS, exit 2), never audited as a fourth replicate."),
    make=lambda k: (_copy(k, _rid(1.0, 0) + " "), Expect(error="RUN_ID_AMBIGUOUS")),
    options={"by": "rho"},
)


EVIDENCE_CASES: tuple[Case, ...] = (
    GATED_TRANSIENT, FLOOR_NOT_REACHED, LOG_STARTS_AFTER_GROK, HORIZON_MISMATCH,
    NO_MEMORIZATION, METRIC_MISSING, FLOAT32_SPELLING, DUPLICATE_RUN, RUN_ID_SPELLING,
)
