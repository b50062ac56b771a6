"""``grokaudit onset``: survivorship bias, threshold sensitivity, censoring kept honest."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from grokaudit import LogFormatError, Reason, make_config
from grokaudit.claims.onset import run_onset
from grokaudit.claims.simulate import make_log, weibull_times


def _design(budget: float, seed: int) -> pd.DataFrame:
    """t_grok ∝ H¹ (Weibull AFT, σ = 0.5); runs beyond ``budget`` never grok in the log."""
    rng = np.random.default_rng(seed)
    H = np.repeat([1, 2, 4, 8, 16], 16)
    s = np.tile(np.arange(16), 5)
    T = weibull_times(np.log(100) + np.log(H), 0.5, rng)
    T = np.where(T > budget, np.inf, np.ceil(T))
    runs = pd.DataFrame({"run": [f"h{h}s{x}" for h, x in zip(H, s)], "H": H, "seed": s,
                         "t_grok": T, "budget": budget})
    return make_log(runs, every=10)


def test_survivorship_bias_fires_when_censoring_biases_ols() -> None:
    r = run_onset(_design(600, seed=1), make_config(), by=["H"], n_resamples=99)
    assert Reason.SURVIVORSHIP_BIAS in r.codes
    assert r.exit_code == 1
    row = r["comparison"][0]
    # the known answer: the exponent is 1; the AFT's CI covers it, OLS on survivors is attenuated
    assert row["aft"]["low"] <= 1.0 <= row["aft"]["high"]
    assert row["ols"]["estimate"] < row["aft"]["estimate"]
    assert r["ols"]["n_left_out"] == int(r["aft"]["fit"].n_right) > 0


def test_no_survivorship_bias_without_censoring() -> None:
    r = run_onset(_design(8000, seed=1), make_config(), by=["H"], n_resamples=99)
    assert Reason.SURVIVORSHIP_BIAS not in r.codes
    assert r["aft"]["fit"].n_right == 0
    assert r["aft"]["fit"].ci_low[1] <= 1.0 <= r["aft"]["fit"].ci_high[1]


def _ramp_log() -> pd.DataFrame:
    """Cell H=1 reaches 0.9 early and 0.99 late; cell H=2 the other way round."""
    rows = []
    steps = np.arange(0, 6001, 50)
    for H, (t90, t99) in {1: (1000, 5000), 2: (2000, 2500)}.items():
        for s in range(4):
            acc = np.interp(steps, [0, t90 + 10 * s, t99 + 10 * s, 6000], [0.1, 0.9, 0.995, 0.995])
            rows.append(pd.DataFrame({"run": f"H{H}s{s}", "step": steps, "test_acc": acc,
                                      "train_acc": 1.0, "H": H, "seed": s}))
    return pd.concat(rows, ignore_index=True)


def test_threshold_sensitive_when_the_ordering_flips() -> None:
    r = run_onset(_ramp_log(), make_config(), by=["H"], thresholds=[0.9, 0.99],
                  n_resamples=20)
    assert Reason.THRESHOLD_SENSITIVE in r.codes
    ev = next(f for f in r.findings if f.code is Reason.THRESHOLD_SENSITIVE).evidence
    assert ev["ordering_flips"] and "log_H" in ev["exponent_sign_changes"]


def test_cells_keep_censored_runs_and_wilson_rates() -> None:
    runs = pd.DataFrame({"run": ["a", "b", "c", "d"], "H": [1, 1, 2, 2], "seed": [0, 1, 0, 1],
                         "t_grok": [300, np.inf, 500, 700], "budget": 1000})
    r = run_onset(make_log(runs, every=50), make_config(), by=["H"], n_resamples=10)
    c1 = r["cells"][0]
    assert (c1["n_runs"], c1["n_grokked"]) == (2, 1)
    assert c1["grok_rate"].low < 0.5 < c1["grok_rate"].high
    assert c1["t_grok_median"]["censored"]  # half censored: only a lower bound
    assert r["step_unit"] == "steps"
    # too few runs for either fit: refused with a reason, never a number
    assert Reason.TOO_FEW_RUNS in r.codes


def test_bad_by_column_is_an_input_error() -> None:
    runs = pd.DataFrame({"run": ["a", "b"], "H": [0, 1], "t_grok": [100, 200], "budget": 500})
    with pytest.raises(LogFormatError):
        run_onset(make_log(runs), make_config(), by=["H"])  # log 0
    with pytest.raises(LogFormatError):
        run_onset(make_log(runs), make_config(), by=["nope"])


def test_phase_map_over_two_axes() -> None:
    runs = pd.DataFrame({"run": [f"r{i}" for i in range(8)], "H": [1, 1, 2, 2] * 2,
                         "lr": [1] * 4 + [3] * 4, "seed": [0, 1] * 4,
                         "t_grok": [100, 200, np.inf, np.inf, 150, 250, 300, np.inf],
                         "budget": 1000})
    r = run_onset(make_log(runs, every=50), make_config(), by=["H", "lr"], n_resamples=10)
    pm = r["phase_map"]
    assert (pm["rows"], pm["columns"]) == ("H", "lr")
    rates = {(c["H"], c["lr"]): c["grok_rate"].rate for c in pm["cells"]}
    assert rates == {(1, 1): 1.0, (2, 1): 0.0, (1, 3): 1.0, (2, 3): 0.5}


def test_without_train_acc_there_is_no_gap_but_the_fits_run() -> None:
    runs = pd.DataFrame({"run": [f"r{i}" for i in range(12)], "H": np.repeat([1, 2, 4], 4),
                         "seed": np.tile(np.arange(4), 3),
                         "t_grok": np.repeat([200.0, 400.0, 800.0], 4) + np.tile([0, 50, 100, 150], 3),
                         "budget": 2000})
    log = make_log(runs, every=10).drop(columns="train_acc")
    r = run_onset(log, make_config(), by=["H"], n_resamples=20)
    assert all(run["gap"] is None and run["t_mem"] is None for run in r["runs"])
    assert r["aft"]["fit"] is not None and r["aft"]["refused"] is None


def test_interactions_add_the_pairwise_product() -> None:
    rng = np.random.default_rng(4)
    H = np.repeat([1, 2, 4], 8)
    lr = np.tile(np.repeat([1.0, 2.0], 4), 3)
    T = weibull_times(np.log(100) + 0.5 * np.log(H) - 0.5 * np.log(lr), 0.2, rng)
    runs = pd.DataFrame({"run": [f"r{i}" for i in range(24)], "H": H, "lr": lr,
                         "seed": np.tile(np.arange(4), 6), "t_grok": np.ceil(T),
                         "budget": 5000})
    r = run_onset(make_log(runs, every=5), make_config(), by=["H", "lr"], interactions=True,
                  n_resamples=20)
    assert [c["term"] for c in r["comparison"]] == ["log_H", "log_lr", "log_H:log_lr"]
