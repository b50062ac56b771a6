"""``grokaudit transition``: the logistic boundary, bracketing, budgets and phases."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from grokaudit import LogFormatError, Reason, make_config
from grokaudit.claims.render import render_text
from grokaudit.claims.simulate import make_log
from grokaudit.claims.transition import (
    logistic_fit,
    run_transition,
    separation,
)
from grokaudit.errors import ErrorCode

LAMBDA_C = 1e-3


def _log(levels: np.ndarray, per_level: int = 12, seed: int = 0, budget: int = 10000
         ) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    lam = np.repeat(levels, per_level)
    p = 1 / (1 + np.exp(-3.0 * (np.log(lam) - np.log(LAMBDA_C))))
    grok = rng.random(lam.size) < p
    with np.errstate(divide="ignore"):
        T = 300 * (np.abs(lam - LAMBDA_C) / LAMBDA_C) ** -0.5 + 200
    T = np.where(grok, np.minimum(np.round(T), budget - 500), np.inf)
    runs = pd.DataFrame({"run": [f"l{i}" for i in range(lam.size)], "wd": lam,
                         "seed": np.tile(np.arange(per_level), levels.size), "t_grok": T,
                         "budget": budget})
    return make_log(runs, every=50)


def test_logistic_recovers_a_known_transition() -> None:
    r = run_transition(_log(np.geomspace(1e-4, 1e-2, 9)), make_config(), by="wd",
                       n_resamples=99)
    bd = r.body.boundary
    assert bd.separation == "none" and bd.bracket is None
    ci = bd.ci
    assert ci.low < LAMBDA_C < ci.high  # never a zero-width interval
    assert Reason.TOO_FEW_LEVELS not in {f.code for f in r.findings
                                         if f.evidence.get("what") == "transition"}
    phases = [c.phase for c in r.body.levels]
    assert phases[0] == "memorization" and phases[-1] == "grokking"


def test_logistic_fit_exact_on_a_noiseless_curve() -> None:
    u = np.repeat(np.linspace(-3, 3, 13), 400)
    p = 1 / (1 + np.exp(-(0.5 + 2.0 * u)))
    y = (np.tile(np.arange(400) + 0.5, 13) / 400 < p).astype(float)  # quantized, no noise
    a, b = logistic_fit(u, y)
    assert -a / b == pytest.approx(-0.25, abs=0.02)


def test_three_levels_are_too_few() -> None:
    r = run_transition(_log(np.array([3e-4, 1e-3, 3e-3]), per_level=20), make_config(),
                       by="wd", n_resamples=30)
    assert Reason.TOO_FEW_LEVELS in r.codes
    assert r.exit_code == 1


def test_short_budget_is_not_a_failure() -> None:
    log = _log(np.geomspace(1e-4, 1e-2, 7), per_level=6)
    # one run at the largest level cut short at step 150, long before its neighbours grok
    short = pd.DataFrame({"run": "short", "step": [0, 50, 100, 150], "test_acc": 0.1,
                          "train_acc": 1.0, "wd": 1e-2, "seed": 99})
    r = run_transition(pd.concat([log, short], ignore_index=True), make_config(), by="wd",
                       n_resamples=30)
    f = next(f for f in r.findings if f.code is Reason.INSUFFICIENT_BUDGET)
    assert f.runs == ("short",)
    top = r.body.levels[-1]
    assert top.n_insufficient_budget == 1 and top.grok_rate.n == top.n_runs - 1


def test_no_transition_when_every_run_groks() -> None:
    runs = pd.DataFrame({"run": [f"r{i}" for i in range(8)], "wd": np.repeat([1, 2, 3, 4], 2),
                         "t_grok": 500, "budget": 2000})
    r = run_transition(make_log(runs), make_config(), by="wd", n_resamples=10)
    assert Reason.NO_TRANSITION in r.codes
    assert r.body.boundary is None


def _separated(levels: list[float], first_grokking: float, per_level: int = 6) -> pd.DataFrame:
    """Every run at or above ``first_grokking`` groks (t_grok = 500·wd^−½), none below."""
    rows = []
    for wd in levels:
        for s in range(per_level):
            t = round(500 * wd ** -0.5 * (1 + 0.03 * s)) if wd >= first_grokking else np.inf
            rows.append({"run": f"wd{wd}s{s}", "wd": wd, "seed": s, "t_grok": t,
                         "budget": 8000})
    return make_log(pd.DataFrame(rows), every=10)


def test_perfect_separation_gives_the_bracket_no_point_no_interval_no_nu() -> None:
    """The issue's case: 1 level below, 7 above. The old audit printed the ridge artefact
    λ_c = 0.1732 [0.173, 0.173] (the geometric mean of 0.1 and 0.3) and ν with a CI."""
    levels = [0.1, 0.3, 0.5, 0.8, 1.2, 2.0, 3.0, 5.0]
    r = run_transition(_separated(levels, 0.3), make_config(), by="wd", n_resamples=50)
    bd = r.body.boundary
    assert bd.separation == "complete"
    assert bd.bracket == (0.1, 0.3) and bd.grok_side == "above"
    assert bd.lambda_c is None and bd.ci is None
    assert (bd.levels_below, bd.levels_above) == (1, 7)
    assert Reason.TOO_FEW_LEVELS in r.codes and Reason.TRANSITION_SEPARATED in r.codes
    p = r.body.power_law
    assert p.nu is None and p.nu_ci is None and p.nu_range[0] < p.nu_range[1]
    # under complete separation the profile-likelihood set is the open bracket itself: any
    # λ_c strictly between the levels fits with deviance 0, the levels do not
    assert (bd.profile.low, bd.profile.high) == (0.1, 0.3)
    assert bd.profile.low_open and bd.profile.high_open
    text = render_text(r)
    assert "λ_c: profile-likelihood 95% set (0.1, 0.3)" in text
    assert "λ_c =" not in text and "ν =" not in text and "ν not identified" in text
    assert not re.search(r"\[([-0-9.e]+), \1\]", text)  # no zero-width interval
    d = json.loads(r.to_json())
    assert d["studies"][0]["boundary"]["lambda_c"] is None
    assert d["studies"][0]["boundary"]["bracket"] == [0.1, 0.3]


def test_separation_well_bracketed_is_only_a_bracket() -> None:
    levels = [0.1, 0.2, 0.3, 0.5, 0.8, 1.2, 2.0]
    r = run_transition(_separated(levels, 0.5), make_config(), by="wd", n_resamples=50)
    bd = r.body.boundary
    assert bd.bracket == (0.3, 0.5) and bd.lambda_c is None
    assert Reason.TOO_FEW_LEVELS not in r.codes and Reason.TRANSITION_SEPARATED in r.codes


def test_quasi_separation_brackets_by_the_neighbours_of_the_mixed_level() -> None:
    u = np.log(np.repeat([1.0, 2.0, 3.0, 4.0], 4))
    y = np.array([0] * 4 + [0] * 4 + [0, 0, 1, 1] + [1] * 4, dtype=float)
    assert separation(u, y) == "quasi"
    assert separation(u, np.r_[y[:7], 1.0, y[8:]]) == "none"
    assert separation(u, np.ones(16)) == "constant"


def test_levels_shared_by_two_arms_are_refused_unless_split() -> None:
    a = _separated([0.1, 0.3, 0.5, 0.8, 1.2], 0.3)
    b = a.copy()
    a["arch"], b["arch"] = "mlp", "tf"
    b["run"] = b["run"] + "tf"
    log = pd.concat([a, b], ignore_index=True)
    with pytest.raises(LogFormatError) as exc:
        run_transition(log, make_config(), by="wd", n_resamples=20)
    assert exc.value.code is ErrorCode.DUPLICATE_AXIS_VALUES
    r = run_transition(log, make_config(), by="wd", cell=["arch"], n_resamples=20)
    assert len(r.studies) == 2


def test_the_profile_set_is_cut_from_the_off_grid_minimum() -> None:
    """The set was cut at χ²₁ above the grid's least deviance; the maximum-likelihood λ_c lies
    between grid points, lower (issue 42: 14.509 on the grid, 14.187 off it): a set too wide."""
    import math

    from grokaudit.claims.transition import _deviance, profile_set

    levels = np.array([0.05, 0.1, 0.3, 0.5])
    u = np.log(np.repeat(levels, 6))
    rng = np.random.default_rng(0)
    y = (rng.random(u.size) < 1 / (1 + np.exp(-3 * (u - math.log(0.147))))).astype(float)
    prof = profile_set(levels, u, y, True, 0.95, n_grid=41)
    dense = np.geomspace(0.05, 0.5, 20001)
    dev = np.array([_deviance(u, y, math.log(g), 1.0) for g in dense])
    assert prof.min_deviance <= dev.min() + 1e-6
    inside = dense[dev - dev.min() <= 3.841458820694124]  # χ²₁(0.95)
    # the reported open set holds the whole set, and each end lies within one grid step of it
    assert prof.low < inside.min() and inside.max() < prof.high
    step = (0.5 / 0.05) ** (1 / 40)
    assert prof.low * step >= inside.min() * (1 - 1e-3) and prof.high / step <= inside.max() * (1 + 1e-3)


def test_nu_runs_to_zero_at_the_grokking_sides_level() -> None:
    """Under separation ν → 0 as λ_c approaches the first grokking level (its ln|λ − λ_c| →
    −∞ pulls the slope to 0): the range is (0, …), not cut 10⁻⁶ of the span short (issue 42)."""
    levels = [0.1, 0.3, 0.5, 0.8, 1.2, 2.0, 3.0, 5.0]
    r = run_transition(_separated(levels, 0.3), make_config(), by="wd", n_resamples=50)
    assert r.body.power_law.nu_range[0] == 0.0 < r.body.power_law.nu_range[1]


def test_the_bootstrap_interval_is_open_where_the_profile_set_is() -> None:
    """4 levels × 6 runs whose profile-likelihood set of λ_c runs past both outer levels: a
    closed bootstrap CI ([0.12, 0.63]) was printed beside it (issue 42: 22 of 200 replicates)."""
    import math

    rng = np.random.default_rng(0)
    rows = []
    for wd in [0.1, 0.2, 0.4, 0.8]:
        p = 1 / (1 + np.exp(-2 * (math.log(wd) - math.log(0.3))))
        for s in range(6):
            g = rng.random() < p
            t = round(500 * wd ** -0.5 * (1 + 0.1 * rng.random())) if g else np.inf
            rows.append({"run": f"wd{wd}s{s}", "wd": wd, "seed": s, "t_grok": t,
                         "budget": 8000})
    r = run_transition(make_log(pd.DataFrame(rows), every=10), make_config(), by="wd",
                       n_resamples=99)
    bd = r.body.boundary
    assert bd.profile.low is None and bd.profile.high is None  # past both outer levels
    assert bd.ci.low is None and bd.ci.low_unbounded
    assert bd.ci.high is None and bd.ci.high_unbounded
    line = next(x for x in render_text(r).splitlines() if "λ_c =" in x)
    assert " (0, ∞) " in line  # λ_c is positive: unbounded below is 0, never −∞
