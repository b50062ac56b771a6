"""``grokaudit transition``: the logistic boundary, bracketing, budgets and phases."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from grokaudit import Reason, make_config
from grokaudit.claims.simulate import make_log
from grokaudit.claims.transition import logistic_fit, run_transition

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
    ci = r["lambda_c_ci"]
    assert ci.low <= LAMBDA_C <= ci.high
    assert Reason.TOO_FEW_LEVELS not in {f.code for f in r.findings
                                         if f.evidence.get("what") == "transition"}
    phases = [c["phase"] for c in r["levels"]]
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
    top = r["levels"][-1]
    assert top["n_insufficient_budget"] == 1 and top["grok_rate"].n == top["n_runs"] - 1


def test_no_transition_when_every_run_groks() -> None:
    runs = pd.DataFrame({"run": [f"r{i}" for i in range(8)], "wd": np.repeat([1, 2, 3, 4], 2),
                         "t_grok": 500, "budget": 2000})
    r = run_transition(make_log(runs), make_config(), by="wd", n_resamples=10)
    assert Reason.NO_TRANSITION in r.codes
    assert r["lambda_c"] is None
