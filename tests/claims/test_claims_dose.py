"""``grokaudit dose``: laws compared by AICc on the same cells, refusals, and mediation."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from grokaudit import LogFormatError, Reason, make_config
from grokaudit.claims.dose import fit_laws, run_dose
from grokaudit.claims.render import render_text
from grokaudit.claims.simulate import make_log
from grokaudit.errors import ErrorCode
from helpers.claim_logs import diverging_dose_log


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
    b = r.body
    assert b.best == "exponential" and b.identified
    assert Reason.MODELS_INDISTINGUISHABLE not in r.codes
    ci = b.key_parameter.ci
    assert ci.low <= 2.0 <= ci.high
    assert len(b.delta_aicc) == 3
    assert all(c.median_ci.low < c.median_ci.high for c in b.cells if c.in_fit)
    # the last cell (300·e⁵ ≈ 44 500 > the 40 000 budget) is censored; the law allows it
    assert b.cells[-1].left_out == "censored" and not b.fit("exponential").contradicted


def test_one_model_over_a_narrow_range_is_indistinguishable() -> None:
    r = run_dose(_log(np.linspace(1.0, 1.1, 6), "exponential"), make_config(), by="rho",
                 n_resamples=50)
    assert Reason.MODELS_INDISTINGUISHABLE in r.codes
    assert not r.body.identified
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
    b = r.body
    assert 3.5 not in b.fit_cells and 3.0 not in b.fit_cells
    top = b.cells[-1]
    assert top.median_t_grok.censored and top.median_ci is None  # a bound has no CI
    assert ">150000" in render_text(r)


def test_cells_that_grokked_before_their_logs_begin_are_not_fitted_at_the_first_step() -> None:
    """The two lowest doses grok at ≈ 300·e¹ and 300·e^1.4 steps, but their logs begin at step
    1500: their medians are only ≤1500. Fitted at 1500 they would bend the law (α = 2); they
    are listed as intervals and left out, and the law is fitted on the other cells."""
    x = np.array([0.5, 0.7, 1.0, 1.3, 1.6, 1.9, 2.2])
    log = _log(x, "exponential", noise=0.0)
    low = log["rho"] < 0.8
    log = log[~low | (log["step"] >= 1500)].reset_index(drop=True)
    r = run_dose(log, make_config(), by="rho", n_resamples=99)
    b = r.body
    for c in b.cells[:2]:
        assert c.left_out == "interval" and not c.in_fit and c.median_ci is None
        assert c.median_t_grok.value is None and c.median_t_grok.upper == 1500
    assert [c.in_fit for c in b.cells[2:]] == [True] * 5
    assert Reason.MEDIAN_CENSORED in r.codes
    assert b.fit("exponential").params["alpha"] == pytest.approx(2.0, abs=0.01)


def test_a_median_left_undetermined_by_short_runs_is_listed_not_a_crash() -> None:
    """Two of five seeds of one dose stopped before grokking, early: the cell's median lies
    between the grokked runs' times and unknown ends, an interval with no value. It was fitted
    at a value it does not have (an internal error)."""
    x = np.array([0.5, 0.8, 1.1, 1.4, 1.7, 2.0])
    log = _log(x, "exponential", noise=0.1)  # the seeds grok at different steps
    short = (log["rho"] == 1.1) & log["seed"].isin([0, 1]) & (log["step"] > 600)
    log = log[~short].reset_index(drop=True)
    r = run_dose(log, make_config(), by="rho", n_resamples=50)
    c = next(c for c in r.body.cells if c.x == 1.1)
    assert c.left_out == "interval" and c.median_t_grok.value is None
    assert Reason.MEDIAN_CENSORED in r.codes
    assert 1.1 not in r.body.fit_cells


def test_a_flat_response_identifies_no_law() -> None:
    """Every dose groks at the same median step (1010): the exponential and the power law both fit exactly
    (slope 0), their RSS rounding residue (≈ 1e-29) is no evidence, and no law is chosen."""
    x = np.repeat([1.0, 1.2, 1.4, 1.6, 1.8, 2.0], 3)
    seed = np.tile(np.arange(3), 6)
    runs = pd.DataFrame({"run": [f"r{i}" for i in range(x.size)], "rho": x, "seed": seed,
                         "t_grok": 1000.0 + 10 * seed, "budget": 3000})
    r = run_dose(make_log(runs, every=10), make_config(), by="rho", n_resamples=50)
    assert r.body.delta_aicc  # the laws were compared
    assert Reason.MODELS_INDISTINGUISHABLE in r.codes and not r.body.identified


def test_too_few_cells_refuses_the_comparison() -> None:
    r = run_dose(_log(np.array([1.0, 1.5, 2.0]), "exponential"), make_config(), by="rho",
                 n_resamples=20)
    assert Reason.TOO_FEW_CELLS in r.codes
    assert r.body.best is None


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
    m = r.body.mediation
    assert abs(m.recovery - 1.0) < 0.05
    assert m.recovery_ci.low <= 1.0 <= m.recovery_ci.high
    assert m.collapse.r2_mediator > 0.95
    assert abs(m.collapse.increment) < 0.02
    json.loads(r.to_json())


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
    assert r.body.mediation.recovery is None



def test_a_sweep_through_the_baseline_cell_is_refused() -> None:
    """--sweep rho with --baseline rho=1 --raised rho=1.15: the sweep passes through the
    baseline cell, where the mediator is its baseline value by definition: recovery 1."""
    rows = []
    for rho in (1.0, 1.05, 1.1, 1.15):
        for s in range(3):
            rows.append({"run": f"r{rho}s{s}", "rho": rho, "seed": s,
                         "t_grok": 400 + 300 * rho, "budget": 2000})
    log = make_log(pd.DataFrame(rows), every=10,
                   series={"logit_scale": lambda r, st: np.full(st.size, r["rho"])})
    with pytest.raises(LogFormatError) as exc:
        run_dose(log, make_config(), by="rho", mediator="logit_scale", baseline={"rho": 1.0},
                 raised={"rho": 1.15}, sweep="rho", n_resamples=20)
    assert exc.value.code is ErrorCode.INVALID_OPTION and exc.value.column == "rho"


def test_a_law_contradicted_by_a_censored_cell_is_a_finding() -> None:
    r = run_dose(diverging_dose_log(), make_config(), by="rho", n_resamples=99)
    b = r.body
    assert b.best == "exponential"
    assert Reason.LAW_CONTRADICTED in r.codes and r.exit_code == 1
    chk = b.fit("exponential").censored_checks
    assert len(chk) == 1 and chk[0].x == 2.5 and chk[0].bound == 100_000
    assert chk[0].contradicted and chk[0].predicted_high < 100_000
    assert not b.identified
    # the saddle-node diverges before 2.5 (x₀ beyond the last fitted cell): consistent
    assert not b.fit("saddle_node").contradicted
    assert "CONTRADICTED" in render_text(r)
    json.loads(r.to_json())


def test_a_censored_cell_the_law_allows_is_no_finding() -> None:
    r = run_dose(diverging_dose_log(budget=30_000), make_config(), by="rho", n_resamples=99)
    assert Reason.LAW_CONTRADICTED not in r.codes or not any(
        f.evidence.get("law") for f in r.findings if f.code is Reason.LAW_CONTRADICTED)
    assert not r.body.fit("exponential").contradicted


def test_two_arms_sharing_a_dose_are_refused_unless_cell_splits_them() -> None:
    a = _log(np.linspace(0.5, 2.5, 5), "exponential", seeds=3)
    b = a.copy()
    a["opt"], b["opt"] = "adamw", "sgd"
    b["run"] = b["run"] + "_sgd"
    log = pd.concat([a, b], ignore_index=True)
    with pytest.raises(LogFormatError) as exc:
        run_dose(log, make_config(), by="rho", n_resamples=20)
    assert exc.value.code is ErrorCode.DUPLICATE_AXIS_VALUES and "cell=opt" in str(exc.value) and exc.value.param == "cell"
    r = run_dose(log, make_config(), by="rho", cell=["opt"], n_resamples=20)
    assert [s.study for s in r.studies] == [{"opt": "adamw"}, {"opt": "sgd"}]
    assert all(s.body.cells[0].n_runs == 3 for s in r.studies)  # not pooled: 3 seeds each


def _trendless(scale: float) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    rho = np.repeat([-1.0, -2.0, -3.0, -4.0, -5.0], 3)
    runs = pd.DataFrame({"run": [f"r{i}" for i in range(rho.size)], "rho": rho * scale,
                         "seed": np.tile(range(3), 5),
                         "t_grok": np.round(rng.uniform(860, 940, rho.size)), "budget": 3000})
    return make_log(runs, every=10)


@pytest.mark.parametrize("scale", [1e300, 1e-300, 1e-3])
def test_the_laws_do_not_depend_on_the_dose_units(scale: float) -> None:
    """Doses of −1e300…−5e300: the exponential fit lost its intercept (alpha −1.9e−300, RSS
    41.9), a saddle-node 'law' was declared on trendless data, exit 0 (issue 38's review)."""
    import warnings

    one = run_dose(_trendless(1.0), make_config(), by="rho", n_resamples=50)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow on the way either
        other = run_dose(_trendless(scale), make_config(), by="rho", n_resamples=50)
    assert other.body.best == one.body.best and other.exit_code == one.exit_code
    assert other.codes == one.codes
    for a, b in zip(one.body.fits, other.body.fits):
        assert (a.aicc is None) == (b.aicc is None)
        if a.aicc is not None:
            assert b.aicc == pytest.approx(a.aicc, rel=1e-9, abs=1e-9)


def test_doses_spread_below_the_smallest_normal_float_are_refused() -> None:
    # subnormal doses: 'internal error (ValueError: math domain error)' before
    with pytest.raises(LogFormatError) as e:
        run_dose(_trendless(5e-324), make_config(), by="rho", n_resamples=50)
    assert e.value.code is ErrorCode.NOT_NUMERIC


def test_doses_spanning_beyond_the_largest_float_are_refused() -> None:
    # −1.5e308 … 1.5e308: the span overflowed to inf in the saddle-node fit (an internal error)
    rho = np.repeat([-1.5e308, -0.75e308, 0.0, 0.75e308, 1.5e308], 3)
    rng = np.random.default_rng(3)
    runs = pd.DataFrame({"run": [f"r{i}" for i in range(rho.size)], "rho": rho,
                         "seed": np.tile(range(3), 5),
                         "t_grok": np.round(rng.uniform(860, 940, rho.size)), "budget": 3000})
    with pytest.raises(LogFormatError) as e:
        run_dose(make_log(runs, every=10), make_config(), by="rho", n_resamples=50)
    assert e.value.code is ErrorCode.NOT_NUMERIC
