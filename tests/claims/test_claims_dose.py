"""``grokaudit dose``: laws compared by AICc on the same cells, refusals, and mediation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from grokaudit import Reason, make_config
from grokaudit.claims.dose import fit_laws, run_dose
from grokaudit.claims.simulate import make_log


def _log(x_levels: np.ndarray, law: str, seeds: int = 5, noise: float = 0.05,
         seed: int = 0, budget: int = 40000) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = np.repeat(x_levels, seeds)
    s = np.tile(np.arange(seeds), x_levels.size)
    assert law == "exponential"
    lnT = np.log(300) + 2.0 * x
    T = np.round(np.exp(lnT + rng.normal(0, noise, x.size)))
    T = np.where(T > budget, np.inf, T)
    runs = pd.DataFrame({"run": [f"x{a:.3f}s{b}" for a, b in zip(x, s)], "rho": x, "seed": s,
                         "t_grok": T, "budget": budget})
    return make_log(runs, every=5)


def test_exponential_data_over_a_wide_range_pick_the_exponential_law() -> None:
    r = run_dose(_log(np.linspace(0.5, 2.5, 7), "exponential"), make_config(), by="rho",
                 n_resamples=99)
    assert r["best"] == "exponential"
    assert Reason.MODELS_INDISTINGUISHABLE not in r.codes
    ci = r["key_parameter"]["ci"]
    assert ci.low <= 2.0 <= ci.high
    assert len(r["delta_aicc"]) == 3


def test_one_model_over_a_narrow_range_is_indistinguishable() -> None:
    r = run_dose(_log(np.linspace(1.0, 1.1, 6), "exponential"), make_config(), by="rho",
                 n_resamples=50)
    assert Reason.MODELS_INDISTINGUISHABLE in r.codes
    assert not r["identified"]
    assert r.exit_code == 1


def test_saddle_node_law_recovers_its_divergence_point() -> None:
    x = np.array([0.5, 0.8, 1.0, 1.2, 1.3, 1.4, 1.45])
    fits = fit_laws(x, np.log(300) - 0.5 * np.log(1.5 - x))
    assert fits["saddle_node"]["params"]["x0"] == pytest.approx(1.5, abs=1e-4)
    assert fits["saddle_node"]["aicc"] < fits["power"]["aicc"]


def test_fit_range_and_censored_cells_are_listed_not_fitted() -> None:
    log = _log(np.linspace(0.5, 3.5, 7), "exponential", budget=150000)
    r = run_dose(log, make_config(), by="rho", fit_range=(0.5, 2.6), n_resamples=30)
    assert Reason.OUTSIDE_FIT_RANGE in r.codes
    assert Reason.MEDIAN_CENSORED in r.codes  # exp(ln 300 + 7) ≈ 330 000 > budget
    assert 3.5 not in r["fit_cells"] and 3.0 not in r["fit_cells"]


def test_too_few_cells_refuses_the_comparison() -> None:
    r = run_dose(_log(np.array([1.0, 1.5, 2.0]), "exponential"), make_config(), by="rho",
                 n_resamples=20)
    assert Reason.TOO_FEW_CELLS in r.codes
    assert r["best"] is None


def test_mediation_full_recovery_when_the_mediator_carries_the_effect() -> None:
    """ln T depends on the mediator M = rho/tau only: raising rho to 1.15 is undone at
    tau = 1.15, where M returns to its baseline value — recovery 1, and the dose adds nothing
    to the data collapse."""
    rows = []
    rng = np.random.default_rng(0)
    cells = [(1.0, 1.0)] + [(1.15, t) for t in (1.0, 1.05, 1.1, 1.2, 1.25)]
    for rho, tau in cells:
        for s in range(6):
            M = rho / tau
            T = float(np.round(np.exp(np.log(400) + 3.0 * (M - 1) + rng.normal(0, 0.01))))
            rows.append({"run": f"r{rho}t{tau}s{s}", "rho": rho, "tau": tau, "seed": s,
                         "t_grok": T, "budget": 3000, "M": M})
    runs = pd.DataFrame(rows)
    log = make_log(runs.drop(columns="M"), every=2,
                   series={"logit_scale": lambda r, st: np.full(st.size, r["rho"] / r["tau"])})
    r = run_dose(log, make_config(), by="rho", mediator="logit_scale",
                 baseline={"rho": 1.0, "tau": 1.0}, raised={"rho": 1.15, "tau": 1.0},
                 sweep="tau", n_resamples=60)
    m = r["mediation"]
    assert abs(m["recovery"] - 1.0) < 0.05
    assert m["recovery_ci"].low <= 1.0 <= m["recovery_ci"].high
    assert m["collapse"]["r2_mediator"] > 0.95
    assert abs(m["collapse"]["increment"]) < 0.02


def test_mediation_outside_the_sweep_is_refused() -> None:
    rows = []
    for rho, tau in [(1.0, 1.0), (1.15, 1.0), (1.15, 1.02), (1.15, 1.04)]:
        for s in range(3):
            rows.append({"run": f"r{rho}t{tau}s{s}", "rho": rho, "tau": tau, "seed": s,
                         "t_grok": 400 + 100 * (rho / tau), "budget": 2000})
    log = make_log(pd.DataFrame(rows), every=10,
                   series={"logit_scale": lambda r, st: np.full(st.size, r["rho"] / r["tau"])})
    r = run_dose(log, make_config(), by="rho", mediator="logit_scale",
                 baseline={"rho": 1.0, "tau": 1.0}, raised={"rho": 1.15, "tau": 1.0},
                 sweep="tau", n_resamples=20)
    assert Reason.MEDIATOR_OUT_OF_RANGE in r.codes
    assert r["mediation"]["recovery"] is None
