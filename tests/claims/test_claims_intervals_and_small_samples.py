"""Intervals and small samples (issue 20): every interval as wide as the data allow, every law
checked against what it left out, small samples refused, never crashed. Each number the commands
print here is recomputed independently (scipy's distributions, brute-force grids, binomial
counts)."""

from __future__ import annotations

import math
import random

import numpy as np
import pandas as pd
import pytest
from grokaudit import Reason, make_config
from grokaudit.claims.compare import run_compare
from grokaudit.claims.dose import run_dose
from grokaudit.claims.onset import run_onset
from grokaudit.claims.precursor import run_precursor
from grokaudit.claims.render import outward, render_text
from grokaudit.claims.transition import run_transition
from scipy import stats

R = Reason


def _runs(times: dict[str, float], steps: np.ndarray, conds: dict[str, dict]) -> pd.DataFrame:
    """One row per logged step: test_acc 0.05 until the run's grok time (inf: never), 1.0
    after; train_acc 1 from step 20."""
    parts = []
    for rid, t in times.items():
        s = steps
        parts.append(pd.DataFrame({
            "run": rid, "step": s, "test_acc": np.where(s >= t, 1.0, 0.05),
            "train_acc": np.where(s >= 20, 1.0, 0.5), **conds[rid]}))
    return pd.concat(parts, ignore_index=True)


def _onset_log(extra_cell: str = "never", seed: int = 0, sigma: float = 0.3,
               budget: int = 20000) -> pd.DataFrame:
    """log t = log 300 + log H + σZ for H = 1, 2, 4, 8 (10 seeds); H = 16: ``never`` groks
    (a cell beyond the horizon), or follows the law."""
    rng = np.random.default_rng(seed)
    times, conds = {}, {}
    for H in (1, 2, 4, 8, 16):
        for s in range(10):
            t = math.exp(math.log(300) + math.log(H) + sigma * rng.standard_normal())
            if H == 16 and extra_cell == "never":
                t = math.inf
            times[f"H{H}_s{s}"] = t
            conds[f"H{H}_s{s}"] = {"H": H, "seed": s}
    return _runs(times, np.arange(0, budget + 1, 20), conds)


# ------------------------------------------------------------------------------------------
# onset
# ------------------------------------------------------------------------------------------

def test_onset_checks_its_law_against_a_cell_beyond_the_horizon() -> None:
    r = run_onset(_onset_log(), make_config(), by=["H"], n_resamples=19)
    b = r.studies[0].body
    assert R.LAW_CONTRADICTED in r.codes and r.exit_code == 1
    chk = next(c for c in b.law_checks if c.cell == {"H": 16})
    assert chk.situation == "beyond_horizon" and (chk.n_censored, chk.n_runs) == (10, 10)
    assert chk.contradicted and chk.horizon == 20000
    # independently: the fitted law's P(T > 20000) at H = 16, from scipy's distribution of W
    fit = b.aft.fit
    eta = fit.get("intercept")[0] + fit.get("log_H")[0] * math.log(16)
    z = (math.log(20000) - eta) / fit.sigma
    surv = {"lognormal": stats.norm.sf(z), "loglogistic": 1 / (1 + math.exp(z)),
            "weibull": math.exp(-math.exp(z))}[fit.family]
    assert chk.p_beyond == pytest.approx(surv, rel=1e-9)
    assert chk.p_value == pytest.approx(surv ** 10, rel=1e-6)  # every run censored
    assert chk.p_value < chk.alpha
    assert b.left_out.beyond_horizon == 10 and b.left_out.inside_cells == 0


def test_onset_law_holds_where_the_censoring_follows_it() -> None:
    # the same law, a budget that censors part of the slowest cell: consistent everywhere
    r = run_onset(_onset_log("law", budget=5200), make_config(), by=["H"], n_resamples=19)
    b = r.studies[0].body
    assert R.LAW_CONTRADICTED not in r.codes
    chk = next(c for c in b.law_checks if c.cell == {"H": 16})
    assert chk.situation == "inside_cell" and 0 < chk.n_censored < 10
    # every run of the cell has the same horizon and covariates: P(K ≥ k) is binomial
    p = chk.p_beyond
    assert chk.p_value == pytest.approx(stats.binom.sf(chk.n_censored - 1, 10, p), rel=1e-9)


def test_onset_refuses_exponents_the_log_cannot_identify() -> None:
    # only the H = 1 cell groks: censored runs bound a slope on one side only
    df = _onset_log("law")
    df.loc[df["H"] != 1, "test_acc"] = 0.05
    r = run_onset(df, make_config(), by=["H"], n_resamples=19)
    b = r.studies[0].body
    assert b.aft.fit is None and b.aft.refused is R.NOT_IDENTIFIED
    assert all(tc.aft is None for tc in b.comparison)
    assert R.NOT_IDENTIFIED in r.codes
    text = render_text(r)
    assert "e+0" not in text and "NOT_IDENTIFIED" in text


@pytest.mark.parametrize("how", ["rows_cut", "evaluations_stop"])
def test_onset_runs_stopped_early_are_not_failures(how: str) -> None:
    """A run crashed at step 200, before grokking: its rows end there (``rows_cut``), or go
    on with test_acc NaN (``evaluations_stop``: the evaluation stopped, the logging did not;
    the grok rate counted that run as a failure, 9/10, and transition raised a critical
    boundary from it). Either way its outcome is unknown: left out of the rate."""
    df = _onset_log("law")
    dead = (df["run"] == "H2_s0") & (df["step"] > 200)
    df.loc[df["run"] == "H2_s0", "test_acc"] = 0.05
    if how == "rows_cut":
        df = df[~dead]
    else:
        df.loc[dead, "test_acc"] = np.nan
    r = run_onset(df, make_config(), by=["H"], n_resamples=19)
    c = next(c for c in r.studies[0].body.cells if c.cell == {"H": 2})
    assert c.n_stopped_early == 1 and c.grok_rate.n == 9 and c.grok_rate.k == 9
    f = next(f for f in r.findings if f.code is R.INSUFFICIENT_BUDGET)
    assert f.runs == ("H2_s0",)


def test_a_grok_at_step_zero_is_not_fitted_as_log_t_zero() -> None:
    """A cell already at the threshold at step 0: dose fitted its median as ln T = 0 (the
    law then followed that one cell: power, beta 1.84 where the other cells give 0.45);
    onset read the runs at t = 1 without a word."""
    df = _onset_log("law")
    df.loc[df["H"] == 1, "test_acc"] = 1.0
    r = run_onset(df, make_config(), by=["H"], n_resamples=19)
    f = next(f for f in r.findings if f.code is R.GROKKED_AT_START)
    assert len(f.runs) == int((df.groupby("run")["H"].first() == 1).sum())
    assert all(x.startswith("H1_") for x in f.runs)
    d = run_dose(df.assign(x=df["H"].astype(float)), make_config(), by="x", n_resamples=19)
    cell = next(c for c in d.body.cells if c.x == 1.0)
    assert cell.left_out == "at_start" and not cell.in_fit and cell.median_ci is None
    assert R.GROKKED_AT_START in d.codes


def test_onset_names_runs_that_grokked_before_logging_began() -> None:
    df = _onset_log("law")
    df = df[df["step"] >= 400].reset_index(drop=True)  # H = 1 runs grok around 300
    r = run_onset(df, make_config(), by=["H"], n_resamples=19)
    f = next(f for f in r.findings if f.code is R.LEFT_CENSORED)
    assert f.evidence["n_runs"] >= 5 and all(x.startswith("H1_") for x in f.runs[:5])
    # the H = 1 cell's median is decided by runs known only as t_grok ≤ 400: an interval, no
    # value (it printed "400 (…, 400]": a point read at the first logged step)
    c = next(c for c in r.studies[0].body.cells if c.cell == {"H": 1})
    left = sum(x.startswith("H1_") for x in f.runs)
    assert 2 * left > c.n_runs
    assert c.t_grok_median.value is None and c.t_grok_median.upper == 400
    assert c.gap_median.value is None
    row = next(ln.split() for ln in render_text(r).splitlines() if ln.split()[:2] == ["1", "10"])
    assert "≤400" in row and "400" not in [x for x in row if x[0].isdigit()]
    # every run memorized before step 400: no cell's gap is a value, each is its interval
    assert all(c.gap_median.value is None and c.gap_median.lower is not None
               for c in r.studies[0].body.cells)


# ------------------------------------------------------------------------------------------
# dose
# ------------------------------------------------------------------------------------------

def test_dose_counts_the_resamples_that_turn_a_fitted_cell_censored() -> None:
    # ln T = 8 − 0.4·x, x = 1…6, 5 seeds; at x = 1 two of the five runs stop before grokking
    rng = np.random.default_rng(2)
    times, conds = {}, {}
    for x in (1, 2, 3, 4, 5, 6):
        for s in range(5):
            t = math.exp(8 - 0.4 * x + 0.05 * rng.standard_normal())
            if x == 1 and s < 2:
                t = math.inf
            times[f"x{x}_s{s}"] = t
            conds[f"x{x}_s{s}"] = {"x": float(x), "seed": s}
    df = _runs(times, np.arange(0, 6001, 10), conds)
    B = 199
    r = run_dose(df, make_config(), by="x", n_resamples=B)
    kp = r.studies[0].body.key_parameter
    # a resample of the cell's 5 runs has a censored median when ≥ 3 of 5 draws are censored
    p = stats.binom.sf(2, 5, 2 / 5)
    sd = math.sqrt(B * p * (1 - p))
    assert abs(kp.n_resamples_censored - B * p) < 5 * sd
    # far more than the 2.5 % tail: that end of the interval is open, never closed
    assert kp.ci.low_unbounded or kp.ci.high_unbounded
    assert "resamples turned a fitted cell's median censored" in render_text(r)


# ------------------------------------------------------------------------------------------
# intervals
# ------------------------------------------------------------------------------------------

def test_every_printed_end_is_rounded_outwards() -> None:
    rnd = random.Random(0)
    for _ in range(2000):
        x = rnd.choice([-1, 1]) * 10 ** rnd.uniform(-4, 6)
        for digits in (2, 3, 4):
            assert float(outward(x, digits, down=True)) <= x
            assert float(outward(x, digits, down=False)) >= x


def test_compare_with_two_pairs_is_refused_not_crashed() -> None:
    times = {"a_s0": 1000, "a_s1": 1200, "b_s0": 800, "b_s1": 900}
    conds = {k: {"method": k[0], "seed": int(k[-1])} for k in times}
    r = run_compare(_runs(times, np.arange(0, 3001, 10), conds), make_config(), by="method",
                    pair="seed")
    b = r.studies[0].body
    assert R.UNDERPOWERED in r.codes and r.exit_code == 1
    assert b.power.min_detectable_dz is None


# ------------------------------------------------------------------------------------------
# transition
# ------------------------------------------------------------------------------------------

def _levels_log(counts: dict[float, tuple[int, int]], t_of=lambda lv: 500.0) -> pd.DataFrame:
    times, conds = {}, {}
    for lv, (k, n) in counts.items():
        for s in range(n):
            rid = f"wd{lv}_s{s}"
            times[rid] = t_of(lv) * (1 + 0.01 * s) if s < k else math.inf
            conds[rid] = {"wd": lv, "seed": s}
    return _runs(times, np.arange(0, 4001, 10), conds)


def _deviance_brute(u: np.ndarray, y: np.ndarray, u_c: float) -> float:
    """The profile deviance by a plain grid over the slope (and its step limit)."""
    best = math.inf
    for b in np.geomspace(1e-3, 1e4, 4000):
        eta = b * (u - u_c)
        p = 1 / (1 + np.exp(-np.clip(eta, -700, 700)))
        with np.errstate(divide="ignore"):
            d = -2 * np.sum(np.where(y == 1, np.log(p), np.log1p(-p)))
        best = min(best, float(d))
    d = u - u_c
    if not np.any(((d > 0) & (y == 0)) | ((d < 0) & (y == 1))):
        best = min(best, 2 * math.log(2) * float(np.sum(d == 0)))
    return best


def test_quasi_separation_gives_the_profile_likelihood_set() -> None:
    counts = {0.1: (0, 20), 0.15: (0, 20), 0.2: (19, 20), 0.25: (20, 20), 0.3: (20, 20),
              0.35: (20, 20)}
    r = run_transition(_levels_log(counts), make_config(), by="wd", n_resamples=19)
    bd = r.studies[0].body.boundary
    assert bd.separation == "quasi" and bd.lambda_c is None
    # printed: the χ² set widened to the bracket (its cut is not calibrated under separation)
    assert bd.profile.widened and (bd.profile.low, bd.profile.high) == (0.15, 0.25)
    assert bd.profile.low_open and bd.profile.high_open
    from grokaudit.claims.transition import profile_set

    lv = np.array(sorted(counts), dtype=float)
    lam0 = np.repeat(list(counts), [n for _, n in counts.values()])
    y0 = np.concatenate([[1] * k + [0] * (n - k) for k, n in counts.values()]).astype(float)
    ps = profile_set(lv, np.log(lam0), y0, True, 0.95)
    assert ps is not None and not ps.widened
    assert 0.15 < ps.low < ps.best < ps.high <= 0.2 and ps.low_open and ps.high_open
    # the defining property, with an independent deviance: the reported ends lie outside the
    # χ²₁ set, the best point and a point between it and each end inside
    lam = np.repeat(list(counts), [n for _, n in counts.values()])
    y = np.concatenate([[1] * k + [0] * (n - k) for k, n in counts.values()]).astype(float)
    u = np.log(lam)
    d_best = _deviance_brute(u, y, math.log(ps.best))
    cut = stats.chi2.ppf(0.95, 1)
    assert _deviance_brute(u, y, math.log(ps.low)) - d_best > cut - 1e-3
    assert _deviance_brute(u, y, math.log(ps.high)) - d_best > cut - 1e-3
    mid = math.sqrt(ps.low * ps.best) * 1.01
    assert _deviance_brute(u, y, math.log(mid)) - d_best <= cut + 1e-3
    text = render_text(r)
    assert "profile-likelihood 95% set" in text and "λ_c =" not in text


def test_an_extrapolated_boundary_has_no_interval() -> None:
    # every level groks more than half the time: the 50 % point lies below them all
    counts = {0.5: (7, 10), 0.7: (8, 10), 1.0: (9, 10), 1.4: (9, 10), 2.0: (10, 10)}
    r = run_transition(_levels_log(counts), make_config(), by="wd", n_resamples=49)
    bd = r.studies[0].body.boundary
    assert bd.extrapolated and bd.lambda_c < 0.5
    assert not bd.ci.identified and "extrapolation" in bd.ci.note
    assert "an extrapolation" in render_text(r)


def test_nu_below_zero_contradicts_critical_slowing_down() -> None:
    # a clean logistic boundary near 0.35, and a time to grok that grows away from it
    counts = {0.2: (0, 12), 0.25: (1, 12), 0.3: (4, 12), 0.4: (9, 12), 0.5: (11, 12),
              0.7: (12, 12), 1.0: (12, 12)}
    r = run_transition(_levels_log(counts, t_of=lambda lv: 300 * lv ** 2), make_config(),
                       by="wd", n_resamples=49)
    p = r.studies[0].body.power_law
    assert p.nu is not None and p.nu < 0
    f = next(f for f in r.findings if f.code is R.LAW_CONTRADICTED)
    assert f.evidence["nu"] < 0


# ------------------------------------------------------------------------------------------
# precursor under geometric logging
# ------------------------------------------------------------------------------------------

def _precursor_log(kind: str, n: int = 24, seed: int = 0) -> pd.DataFrame:
    """Geometric logging (dense early), grok at step 20 000 of 60 000: ``noise`` (a signal
    whose peak falls at a random logged point), ``smooth`` (one bump at a uniformly random
    time), ``genuine`` (a bump 2 000 steps before grokking)."""
    rng = np.random.default_rng(seed)
    steps = np.unique(np.round(np.geomspace(1, 60000, 300)).astype(np.int64))
    parts = []
    for s in range(n):
        if kind == "noise":
            sig = rng.random(steps.size)
        else:
            c = 18000.0 if kind == "genuine" else float(rng.uniform(100, 60000))
            sig = np.exp(-0.5 * ((steps - c) / 1500.0) ** 2)
        parts.append(pd.DataFrame({
            "run": f"r{s}", "step": steps, "test_acc": np.where(steps >= 20000, 1.0, 0.05),
            "train_acc": np.where(steps >= 20, 1.0, 0.5), "attn_cv": sig, "seed": s}))
    return pd.concat(parts, ignore_index=True)


@pytest.mark.parametrize("kind, beaten", [("noise", "time"), ("smooth", "permutation"),
                                          ("genuine", None)])
def test_a_precursor_must_beat_both_nulls(kind: str, beaten: str | None) -> None:
    """Under geometric logging a noise signal's peak falls early (most points are early) and
    beats the time-uniform null; a smooth bump at a random time beats the permutation null
    (whose peaks fall early): neither is specific. A bump before grokking beats both."""
    r = run_precursor(_precursor_log(kind), make_config(), signal="attn_cv", n_perm=199)
    b = r.studies[0].body
    if beaten is None:
        assert R.PRECURSOR_NOT_SPECIFIC not in r.codes
        assert b.null_permuted.p_value < 0.05 and b.null_time.p_value < 0.05
    else:
        f = next(f for f in r.findings if f.code is R.PRECURSOR_NOT_SPECIFIC)
        other = {"time": "permutation", "permutation": "time"}[beaten]
        assert other in f.evidence["failed"]


def test_every_claim_names_the_runs_check_sets_aside() -> None:
    """One run with no test accuracy at all: check says RUN_WITHOUT_ACCURACY; the claims
    audited the other runs and printed their count with no word of it (the run was only in
    the JSON's input summary)."""
    df = _onset_log("law")
    df.loc[df["run"] == "H2_s3", "test_acc"] = np.nan
    df["x"] = df["H"].astype(float)
    results = [run_onset(df, make_config(), by=["H"], n_resamples=19),
               run_dose(df, make_config(), by="x", n_resamples=19)]
    for r in results:
        f = next(f for f in r.findings if f.code is R.RUN_WITHOUT_ACCURACY)
        assert f.runs == ("H2_s3",), r.command
