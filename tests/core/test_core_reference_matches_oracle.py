"""``--profile reference`` equals the public v1.5 analyzer, per seed, per cell and in its verdict.

The oracle is ``benchmarks/v15_loop.py``, the project's clean-room re-implementation of v1.5
(checked against the public script on 1 100 random studies; ``benchmarks/v15_spec.md``). Each
hand-built study below is made so that one v1.5 rule decides its outcome (the spec's item is
named in the test); the last tests draw random studies. Every comparison is exact float
equality.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import grokaudit
import numpy as np
import pandas as pd
import pytest
import v15_loop as v15  # benchmarks/, on the tests' path (pyproject pythonpath)
from grokaudit import Reason

ROOT = Path(__file__).resolve().parents[2]

METRIC = "emb_erank"
VERDICT = {
    v15.LOW_POWER: None,
    v15.INCONCLUSIVE: Reason.INCONCLUSIVE_CENSORING,
    v15.LARGE_LAG_UNDETERMINED: Reason.LARGE_LAG_ORDERING_UNDETERMINED,
    v15.TWO_CLOCKS: Reason.TWO_CLOCKS,
    v15.PARTIALLY_SEPARATED: Reason.PARTIALLY_SEPARATED,
    v15.ONE_CLOCK_LARGE_LAG: Reason.ONE_CLOCK_LARGE_LAG,
    v15.SINGLE_CLOCK_SMALL_LAG: Reason.SINGLE_CLOCK_SMALL_LAG,
}


# ------------------------------------------------------------------------------------------
# comparison
# ------------------------------------------------------------------------------------------

def same(a: Any, b: Any) -> bool:
    """Exact equality, None and NaN alike (both say "no value")."""
    na = a is None or (isinstance(a, float) and math.isnan(a))
    nb = b is None or (isinstance(b, float) and math.isnan(b))
    if na or nb:
        return na and nb
    return bool(a == b)


def _get(obj: Any, name: str) -> Any:
    """``obj.name``, or a marker that equals nothing when ``obj`` is None."""
    return "<missing>" if obj is None else getattr(obj, name)


def audit_both(df: pd.DataFrame, by: str = "rho") -> tuple[Any, list[Any], dict[str, Any]]:
    res = grokaudit.audit_table(df, by=by, metrics=[METRIC], profile="reference")
    cells, summary = v15.audit_frame(df, by, METRIC)
    return res.studies[0], cells, summary


def mismatches(study: Any, cells: list[Any], summary: dict[str, Any]) -> list[str]:
    """Every per-seed, per-cell and study number where grokaudit and v1.5 differ."""
    bad: list[str] = []

    def check(where: str, ours: Any, theirs: Any) -> None:
        if not same(ours, theirs):
            bad.append(f"{where}: grokaudit {ours!r} != v1.5 {theirs!r}")

    runs = {r.run: r for r in study.runs}
    ours_cells = {float(c.axis_value): c for c in study.cells}
    assert sorted(ours_cells) == sorted(c.axis_value for c in cells)
    for row in cells:
        c = ours_cells[row.axis_value]
        ref = c.reference
        at = f"cell {row.axis_value}"
        kept = {s.run for s in row.seeds}
        for name in c.runs:
            check(f"{at} run {name} kept", runs[name].reference.kept, name in kept)
        for sd in row.seeds:  # §S
            r = runs[sd.run]
            w = f"{at} seed {sd.run}"
            check(f"{w} t_grok", r.t_grok.value, sd.t_grok)
            if r.reference is None:
                bad.append(f"{w}: no reference block")
                continue
            check(f"{w} m_grok", r.m_grok, sd.m_grok)
            check(f"{w} floor", r.floor, sd.floor)
            for k in ("drop", "t_compress", "m_compress", "gap", "rel_gap", "rate", "censored"):
                check(f"{w} {k}", getattr(r.reference, k), getattr(sd, k))
            check(f"{w} valid_comp", r.reference.valid_comp, sd.valid_comp)
            if sd.valid_comp:  # the run's own fields say the same
                check(f"{w} t_compress.lower", _get(r.t_compress, "lower"), sd.t_compress)
                check(f"{w} lag.lower", _get(r.lag, "lower"), sd.gap)
                check(f"{w} rel_lag", r.rel_lag, sd.rel_gap)
                check(f"{w} t_compress censored", _get(r.t_compress, "censored"),
                      sd.censored)
        # §C
        for k in ("n", "n_valid", "n_censored", "censor_frac", "amp_invalid_frac", "drop",
                  "rate", "comp_ratio", "high_floor", "tiny_drop", "boundary"):
            check(f"{at} {k}", _get(ref, k), getattr(row, k))
        check(f"{at} t_grok", c.t_grok and c.t_grok.value, row.t_grok)
        check(f"{at} m_grok", c.m_grok, row.m_grok)
        check(f"{at} floor", c.floor, row.floor)
        check(f"{at} t_compress", c.t_compress and c.t_compress.value, row.t_compress)
        check(f"{at} lag", c.lag and c.lag.value, row.gap)
        check(f"{at} rel_lag", c.rel_lag, row.rel_gap)
        check(f"{at} n_tc_censored", c.n_tc_censored, row.n_censored)
        check(f"{at} notes", c.notes, ())  # v1.5 has no censored median
    # §B4: the cells that reach the verdict are the passing cells
    check("used cells", [float(c.axis_value) for c in study.cells if c.passes],
          summary["used_cells"])
    # §B, §Q, §V
    ev = study.verdict_evidence
    check("verdict", study.verdict, VERDICT[summary["verdict"]])
    pairs = {"reference_floor": "floor_median_all", "total_valid": "total_valid",
             "total_censored": "total_censored", "overall_censor_frac": "overall_censor_frac",
             "gap_median": "gap_median", "gap_span": "gap_span",
             "spearman_t_grok": "spearman_t_grok", "spearman_t_compress": "spearman_t_compress",
             "spearman_lag": "spearman_gap", "axis_earliest_grok": "axis_fastest_grok",
             "axis_earliest_compress": "axis_earliest_compress",
             "axis_fastest_rate": "axis_fastest_rate", "floor_span": "floor_span",
             "floor_cv": "floor_cv"}
    for ours, theirs in pairs.items():
        v = ev[ours]
        check(f"study {ours}", float(v) if isinstance(v, (np.floating, int)) and not
              isinstance(v, bool) else v, summary[theirs])
    check("study boundary cells", [float(a) for a in ev["boundary_cells"]],
          summary["boundary"])
    if "median_cell_rel_lag" in ev:
        check("study rel_gap median", ev["median_cell_rel_lag"], summary["rel_gap_median"])
    return bad


def assert_equal_to_v15(df: pd.DataFrame, by: str = "rho") -> tuple[Any, list[Any], dict]:
    study, cells, summary = audit_both(df, by)
    bad = mismatches(study, cells, summary)
    assert not bad, "\n".join(bad[:20])
    return study, cells, summary


# ------------------------------------------------------------------------------------------
# hand-built studies: one v1.5 rule decides each
# ------------------------------------------------------------------------------------------

STEPS = np.arange(0, 20_000, 100, dtype=np.int64)  # 200 points: the floor window is 20


def run(name: str, rho: float, t_grok: int | None, levels: list[tuple[int, float]],
        steps: np.ndarray = STEPS, acc: np.ndarray | None = None,
        metric: np.ndarray | None = None) -> pd.DataFrame:
    """One run: test_acc 0.1 → 1.0 at ``t_grok`` (never when None); the metric holds each
    ``(from_step, value)`` level from its step on."""
    if metric is None:
        metric = np.full(steps.shape, np.nan)
        for start, v in levels:
            metric[steps >= start] = v
    if acc is None:
        acc = np.where(steps >= (t_grok if t_grok is not None else 10**12), 1.0, 0.1)
    return pd.DataFrame({"run": name, "step": steps, "test_acc": acc, "train_acc": 1.0,
                         METRIC: metric, "rho": rho})


def cell(rho: float, specs: list[tuple[int | None, list[tuple[int, float]]]]) -> list:
    return [run(f"r{rho}_s{i}", rho, tg, lv) for i, (tg, lv) in enumerate(specs)]


def study_of(*cells_: list) -> pd.DataFrame:
    return pd.concat([f for c in cells_ for f in c], ignore_index=True)


def clean(rho: float, t_grok: int, t_comp: int, peak: float = 40.0, floor: float = 10.0,
          seeds: int = 3) -> list:
    return cell(rho, [(t_grok, [(0, peak), (t_comp, floor)])] * seeds)


def by_run(study: Any) -> dict[str, Any]:
    return {r.run: r for r in study.runs}


def test_s6_no_per_run_relative_rule():
    """§S6: a run whose drop is only 1.5 (< 25 % of m_grok 40, but ≥ 1.0) has a t_compress
    and counts in the cell's medians; grokaudit's per-run 25 % rule would have dropped it."""
    c1 = cell(1.0, [(2000, [(0, 40), (3000, 38.5)])] + [(2000, [(0, 40), (5000, 10)])] * 2)
    c1[0]["run"] = "r1.0_small"
    study, cells, _ = assert_equal_to_v15(study_of(c1, clean(2.0, 1000, 9000)))
    r = by_run(study)["r1.0_small"]
    assert r.reference.valid_comp and r.t_compress.value == 3000
    assert Reason.NO_COMPRESSION not in r.reasons
    # the cell median is over the three valid seeds: {3000, 5000, 5000}
    assert study.cells[0].t_compress.value == 5000 == cells[0].t_compress


def test_s6_absolute_rule_per_run():
    """§S6: a drop below min_drop 1.0 leaves the seed without a t_compress (but kept)."""
    df = study_of(cell(1.0, [(2000, [(0, 10.0), (3000, 9.5)])]
                       + [(2000, [(0, 40), (4000, 10)])] * 2), clean(2.0, 1000, 9000))
    study, cells, _ = assert_equal_to_v15(df)
    r = by_run(study)["r1.0_s0"]
    assert r.reference.kept and not r.reference.valid_comp and r.t_compress is None
    assert Reason.NO_COMPRESSION in r.reasons
    assert study.cells[0].reference.n == 3 and study.cells[0].reference.n_valid == 2


def test_b3_relative_rule_on_the_cell_medians():
    """§B1/§B3: the 25 % rule applies to median drop / median m_grok. Spec study C: seeds
    (m_grok, drop) = (10, 2), (10, 2), (10, 9), (50, 10), (50, 10): ratio 9/10 passes although
    four seeds are below 25 % each; a cell whose medians give 0.2 is a boundary cell."""
    seeds = [(10, 8), (10, 8), (10, 1), (50, 40), (50, 40)]
    c1 = cell(1.0, [(2000, [(0, m), (3000, m - d)]) for m, d in
                    [(a, a - f) for a, f in seeds]])
    tiny = cell(2.0, [(1000, [(0, 12), (4000, 10)])] * 3)  # ratio 2/12 < 0.25
    df = study_of(c1, tiny, clean(3.0, 1000, 6000), clean(4.0, 800, 7000))
    study, cells, _ = assert_equal_to_v15(df)
    c = study.cells
    assert c[0].passes and c[0].reference.comp_ratio == 0.9 and not c[0].reference.boundary
    assert c[0].reference.n_valid == 5
    assert c[1].reference.tiny_drop and c[1].reference.boundary
    assert c[1].gates == (Reason.BOUNDARY_NO_COMPRESSION,)


def test_s8_censored_seed_kept_at_its_last_step():
    """§S8/§C5: a seed that groks inside the floor window and never crosses keeps its last
    step as t_compress and enters the cell's medians (spec study A: 14500, not 9050)."""
    # grok at 19 000, inside the floor window 18 000..19 900 (floor 25, threshold 25.5),
    # never below 30 after it: censored at the last step 19 900
    late = [(19_000, [(0, 40), (18_000, 20), (19_000, 30)])] * 2
    df = study_of(cell(1.0, late + [(2000, [(0, 40), (8000, 10)])] * 2),
                  clean(2.0, 1000, 9000))
    study, cells, _ = assert_equal_to_v15(df)
    c = study.cells[0]
    assert c.reference.n_censored == 2 and c.n_tc_censored == 2
    # median of {8000, 8000, 19 900, 19 900}
    assert c.t_compress.value == 13_950 == cells[0].t_compress
    r = by_run(study)["r1.0_s0"]
    assert r.t_compress.censored and r.t_compress.lower == 19_900
    assert r.reference.t_compress == 19_900 and r.reference.censored


def test_q0_censoring_fraction_over_every_cell():
    """§Q0: the censored seeds of a gated (high-floor) cell count too; 5 of 19 is above 0.25,
    so the verdict is INCONCLUSIVE although the passing cells alone have 2 of 16."""
    high = cell(9.0, [(19_000, [(0, 400), (18_000, 200), (19_000, 300)])] * 3)  # floor 250
    late = [(19_000, [(0, 40), (18_000, 20), (19_000, 30)])] * 2
    df = study_of(cell(1.0, late + [(2000, [(0, 40), (8000, 10)])] * 3), clean(2.0, 1000, 9000, seeds=4),
                  clean(3.0, 1500, 9000, seeds=4), clean(4.0, 1700, 9000), high)
    study, _, summary = assert_equal_to_v15(df)
    assert Reason.HIGH_FLOOR_OUTLIER in study.cells[-1].gates
    assert (summary["total_censored"], summary["total_valid"]) == (5, 19)
    assert study.verdict is Reason.INCONCLUSIVE_CENSORING
    assert study.verdict_evidence["censored_fraction"] == 5 / 19


def test_s2_grok_moves_on_when_the_metric_is_missing():
    """§S2/§S3: acc ≥ 0.9 at 1000 where the metric is NaN: T_grok is 1100 and m_grok the
    metric there (spec study D)."""
    frames = []
    for rho in (1.0, 2.0, 3.0):
        for s in range(2):
            f = run(f"r{rho}_s{s}", rho, 1000, [(0, 40), (1100, 50), (1200, 45), (6000, 10)])
            f.loc[f["step"] == 1000, METRIC] = np.nan
            frames.append(f)
    study, _, _ = assert_equal_to_v15(pd.concat(frames, ignore_index=True))
    r = study.runs[0]
    assert r.t_grok.value == 1100 and r.m_grok == 50
    assert Reason.METRIC_NOT_AT_GROK not in r.reasons


def test_s4_floor_window_from_the_cells_grid():
    """§S4: the window is the last int(0.1·T) positions of the cell's grid (T counts the steps
    any run of the cell logs), not the run's own last 10 % of points."""
    dense = run("r1.0_dense", 1.0, 1000, [(0, 40), (3000, 10)])
    # a run logged every 200 steps up to 15 000, then every 100 (125 points): its own last
    # 10 % is 12 points (18 800 .. 19 900: 4 at 20, 8 at 10, median 10); the cell's grid has
    # 200 steps, so its window is the 20 from 18 000 (12 at 20, 8 at 10, median 20)
    st = np.r_[np.arange(0, 15_000, 200), np.arange(15_000, 20_000, 100)]
    lv = np.where(st >= 19_200, 10.0, np.where(st >= 3000, 20.0, 40.0))
    sparse = run("r1.0_sparse", 1.0, 1000, [], steps=st, metric=lv)
    df = study_of([dense, sparse], clean(2.0, 1000, 9000))
    study, cells, _ = assert_equal_to_v15(df)
    r = by_run(study)["r1.0_sparse"]
    assert r.floor == 20.0 and r.reference.drop == 20.0


def test_s10_seeds_without_a_floor_window_are_dropped():
    """§S10/§C3: a run that stops before its cell's floor window has no floor: v1.5 drops it
    from n and every median (grokaudit keeps it as a run, with FLOOR_TOO_FEW_POINTS)."""
    short = run("r1.0_short", 1.0, 1000, [(0, 40), (3000, 10)], steps=STEPS[:100])
    df = study_of([short] + clean(1.0, 2000, 5000, seeds=2), clean(2.0, 1000, 9000))
    study, cells, _ = assert_equal_to_v15(df)
    r = by_run(study)["r1.0_short"]
    assert not r.reference.kept and r.floor is None
    assert study.cells[0].reference.n == 2 and study.cells[0].n_runs == 3


def test_c4_cell_floor_over_grokked_seeds_only():
    """§C4: the cell floor is the median over the kept seeds; a non-grokked run's floor (80)
    does not enter it."""
    df = study_of(cell(1.0, [(None, [(0, 80)])] + [(2000, [(0, 40), (4000, 10)])] * 2),
                  clean(2.0, 1000, 9000))
    study, _, _ = assert_equal_to_v15(df)
    assert study.cells[0].floor == 10.0


def test_b2_high_floor_reference_over_finite_cell_floors():
    """§B2: the reference floor is the median of the cell floors that exist; a no-grok cell
    has none (its runs' floors of 100 do not count), so the 35 cell is 3.5 × the reference
    10 and is a boundary cell."""
    df = study_of(clean(1.0, 1000, 5000), clean(2.0, 1000, 6000),
                  clean(3.0, 1000, 7000, peak=120, floor=35),
                  cell(4.0, [(None, [(0, 100)])] * 3), cell(5.0, [(None, [(0, 100)])] * 3))
    study, _, summary = assert_equal_to_v15(df)
    assert summary["floor_median_all"] == 10.0 == study.verdict_evidence["reference_floor"]
    assert Reason.HIGH_FLOOR_OUTLIER in study.cells[2].gates
    # the no-grok cells: v1.5 leaves them out silently, grokaudit gates them
    assert not study.cells[3].reference.boundary
    assert study.cells[3].gates == (Reason.BOUNDARY_NO_COMPRESSION,)


def test_q1_lag_class_from_the_median_of_cell_medians():
    """§Q1: the lag is large when the median of the cells' median rel_gap exceeds 0.5; here
    the cell medians are 0.4, 0.45, 0.6 and 0.8 (median 0.525, large) while the pooled runs'
    median would be 0.45 (small)."""
    specs = {1.0: [0.4, 0.4, 0.4], 2.0: [0.45, 0.45, 0.45], 3.0: [0.6, 0.1, 0.1, 0.6, 0.6],
             4.0: [0.8, 0.1, 0.1, 0.8, 0.8]}
    frames = []
    for rho, rels in specs.items():
        tg = int(2000 * rho)
        for s, rel in enumerate(rels):
            frames.append(run(f"r{rho}_s{s}", rho, tg, [(0, 40), (int(tg * (1 + rel)), 10)]))
    study, _, summary = assert_equal_to_v15(pd.concat(frames, ignore_index=True))
    assert summary["rel_gap_median"] == pytest.approx(0.525)
    assert study.verdict_evidence["large"] is True
    assert study.verdict is not Reason.SINGLE_CLOCK_SMALL_LAG


def test_v_opposite_signs_of_any_magnitude_are_two_clocks():
    """§V: Spearman(ρ, T_grok) = +1 and Spearman(ρ, T_compress) < 0 of small magnitude: TWO
    CLOCKS (spec study B), whatever the monotone threshold."""
    tcs = {1.0: 13_000, 2.0: 9000, 3.0: 12_000, 4.0: 10_000}  # Spearman -0.4
    df = study_of(*[clean(rho, int(500 * rho), tcs[rho]) for rho in tcs])
    study, _, summary = assert_equal_to_v15(df)
    assert summary["spearman_t_grok"] == 1.0 and -0.6 < summary["spearman_t_compress"] < 0
    assert study.verdict is Reason.TWO_CLOCKS


def test_v_earliest_cells_differ_is_partially_separated():
    """§V: same signs, but the cell with the earliest t_grok is not the one with the earliest
    t_compress: PARTIALLY SEPARATED."""
    tg = {1.0: 4000, 2.0: 3000, 3.0: 2000, 4.0: 1000}
    tc = {1.0: 16_000, 2.0: 12_000, 3.0: 9_000, 4.0: 9_500}
    df = study_of(*[clean(rho, tg[rho], tc[rho]) for rho in tg])
    study, _, summary = assert_equal_to_v15(df)
    assert summary["spearman_t_grok"] < 0 and summary["spearman_t_compress"] < 0
    assert study.verdict is Reason.PARTIALLY_SEPARATED


def test_v_same_signs_and_same_earliest_cell_is_one_clock():
    tg = {1.0: 4000, 2.0: 3000, 3.0: 2000, 4.0: 1000}
    df = study_of(*[clean(rho, tg[rho], 4 * tg[rho]) for rho in tg])
    study, _, _ = assert_equal_to_v15(df)
    assert study.verdict is Reason.ONE_CLOCK_LARGE_LAG


def test_v_tied_t_compress_is_ordering_undetermined():
    """§E7: every cell compresses at the same step: Spearman is undefined, the lag is large:
    LARGE LAG, ORDERING UNDETERMINED."""
    df = study_of(*[clean(rho, 1000 * int(rho), 9000) for rho in (1.0, 2.0, 3.0)])
    study, _, _ = assert_equal_to_v15(df)
    assert study.verdict is Reason.LARGE_LAG_ORDERING_UNDETERMINED


def test_v_small_lag():
    df = study_of(*[clean(rho, 4000 * int(rho), 4000 * int(rho) + 400) for rho in (1.0, 2.0)])
    study, _, _ = assert_equal_to_v15(df)
    assert study.verdict is Reason.SINGLE_CLOCK_SMALL_LAG


def test_v_low_power():
    """§V line 1: fewer than two cells reach the verdict: no verdict (LOW_POWER_DESCRIPTIVE)."""
    df = study_of(clean(1.0, 1000, 5000), cell(2.0, [(None, [(0, 40)])] * 3))
    study, _, _ = assert_equal_to_v15(df)
    assert study.verdict is None
    assert any(f.code is Reason.LOW_POWER_DESCRIPTIVE for f in study.findings)


def test_floor_stability_is_not_labelled():
    """v1.5 computes no floor stability: runs say ``unchecked``, cells count no label and no
    FLOOR_STABLE code is raised."""
    study, _, _ = assert_equal_to_v15(study_of(clean(1.0, 1000, 5000), clean(2.0, 900, 6000)))
    assert {r.floor_stability for r in study.runs} == {"unchecked"}
    assert all(not c.floor_stability for c in study.cells)
    assert all(Reason.FLOOR_STABLE not in r.reasons for r in study.runs)


def test_the_bundled_alpha_sweep():
    """The spec's real log: every number equal; cell 0.25 at 38210 (its small-drop seed
    s3 counts), verdict ONE CLOCK + LARGE LAG."""
    df = pd.read_parquet(ROOT / "reference_runs" / "data" / "external_alpha_sweep.parquet")
    res = grokaudit.audit_table(df, by="alpha", metrics=["eff_rank_E"], profile="reference")
    cells, summary = v15.audit_frame(df, "alpha", "eff_rank_E")
    bad = mismatches(res.studies[0], cells, summary)
    assert not bad, "\n".join(bad[:20])
    s = res.studies[0]
    assert s.cell(0.25).t_compress.value == 38210 and s.cell(0.25).lag.value == 14591
    assert s.verdict is Reason.ONE_CLOCK_LARGE_LAG


# ------------------------------------------------------------------------------------------
# random studies
# ------------------------------------------------------------------------------------------

def random_study(rng: np.random.Generator) -> pd.DataFrame:
    """1–8 cells of 1–5 runs, 3–60 points each on a per-cell grid (runs may skip points or
    stop early), NaN holes in the accuracy and the metric, rounded metrics (ties), offset
    steps. Each run compresses some time after its grok (most), stays flat, never groks, or
    groks inside the floor window with the metric rising there (a censored seed)."""
    frames = []
    n_cells = int(rng.integers(1, 9))
    axis = np.round(np.sort(rng.choice(np.arange(1, 40), n_cells, replace=False)) * 0.05, 2)
    for rho in axis:
        T = int(rng.integers(3, 61))
        cad = int(rng.choice([1, 10, 100]))
        grid = int(rng.integers(0, 500)) + cad * np.arange(T, dtype=np.int64)
        cell_tg, cell_lag = rng.uniform(0.02, 0.4), rng.uniform(0, 0.45)
        floor = rng.uniform(0, 30)
        peak = floor * rng.uniform(1.1, 4) + rng.uniform(0, 10)
        for s in range(int(rng.integers(1, 6))):
            keep = rng.random(T) > rng.choice([0.0, 0.1, 0.3])
            if rng.random() < 0.1:
                keep[int(rng.integers(3, T + 1)):] = False
            st = grid[keep]
            if st.size < 3:
                st = grid[:3]
            n = st.size
            i = np.arange(n)
            shape = rng.choice(["compress", "late_rise", "flat", "never"],
                               p=[0.7, 0.15, 0.1, 0.05])
            if shape == "late_rise":  # grok in the last third of the floor window
                tg = n - max(1, (n // 10) // 3)
                m = np.where(i < tg, floor, peak)
            else:
                tg = int(np.clip(cell_tg + rng.normal(0, 0.05), 0, 1) * n)
                tc = tg + int((cell_lag + rng.uniform(0, 0.1)) * n)
                m = np.where(i < tc, peak, floor) if shape != "flat" else np.full(n, peak)
                tg = n if shape == "never" else tg
            acc = np.where(i >= tg, rng.uniform(0.88, 1.0, n), rng.uniform(0, 0.5, n))
            m = m + rng.normal(0, rng.choice([0, 0.5, 3]), n)
            m = np.round(m, int(rng.choice([0, 1, 6])))
            acc[rng.random(n) < 0.06] = np.nan
            m[rng.random(n) < 0.06] = np.nan
            frames.append(pd.DataFrame({"run": f"c{rho}_s{s}", "step": st, "test_acc": acc,
                                        "train_acc": 1.0, METRIC: m, "rho": float(rho)}))
    return pd.concat(frames, ignore_index=True)


@pytest.mark.parametrize("seed", range(4))
def test_random_studies_equal_v15(seed: int):
    rng = np.random.default_rng(1500 + seed)
    verdicts = set()
    for i in range(40):
        df = random_study(rng)
        try:
            study, cells, summary = audit_both(df)
        except grokaudit.LogFormatError:  # e.g. every run's metric missing: nothing to audit
            continue
        bad = mismatches(study, cells, summary)
        assert not bad, f"study {seed}/{i}:\n" + "\n".join(bad[:20])
        verdicts.add(summary["verdict"])
    assert len(verdicts) >= 2


@pytest.mark.parametrize("seed", range(2))
def test_numpy_seed_loop_equals_the_plain_one(seed: int):
    """The benchmark times v1.5's rules as v1.5 runs them (numpy per seed, ``cell_row_np``);
    they must give the oracle's values exactly, on the random studies' cell grids."""
    rng = np.random.default_rng(2500 + seed)
    p = v15.Params()
    n_seeds = 0
    for _ in range(30):
        df = random_study(rng)
        for rho, g in df.groupby("rho"):
            steps, names, acc_rows, metric_rows = v15.cell_grid(g, METRIC)
            plain = v15.cell_row(float(rho), steps, acc_rows, metric_rows, p, names)
            fast = v15.cell_row_np(float(rho), np.asarray(steps), np.asarray(acc_rows),
                                   np.asarray(metric_rows), p, names)
            a, b = v15.asdict(plain), v15.asdict(fast)
            assert a.keys() == b.keys()
            for k in a:
                if k == "seeds":
                    assert len(a[k]) == len(b[k])
                    for sa, sb in zip(a[k], b[k]):
                        bad = [f for f in sa if not same(sa[f], sb[f])]
                        assert not bad, (rho, sa["run"], bad)
                    n_seeds += len(a[k])
                else:
                    assert same(a[k], b[k]), (rho, k, a[k], b[k])
    assert n_seeds > 100
    # a point exactly at the compression threshold (floor + eps·drop = 10 + 0.1·10) is a hit
    steps = np.arange(100.0)
    acc = np.where(steps >= 20, 1.0, 0.0)
    m = np.where(steps < 50, 20.0, 10.0)
    m[50] = 11.0
    for fn in (v15.seed_clock, v15.seed_clock_np):
        c = fn(steps, acc, m, 10, p)
        assert c is not None and not c.censored and c.t_compress == 50.0
