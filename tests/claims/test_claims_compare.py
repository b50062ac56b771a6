"""``grokaudit compare``: paired tests, censored differences, power."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from grokaudit import LogFormatError, Reason, make_config
from grokaudit.claims.compare import run_compare
from grokaudit.claims.simulate import make_log


def _log(base: list[float], new: list[float], budget: int = 5000) -> pd.DataFrame:
    n = len(base)
    runs = pd.DataFrame({"run": [f"b{i}" for i in range(n)] + [f"n{i}" for i in range(n)],
                         "method": ["baseline"] * n + ["cv_adamw"] * n,
                         "seed": list(range(n)) * 2, "t_grok": base + new, "budget": budget})
    return make_log(runs, every=50)


def test_five_pairs_are_underpowered() -> None:
    r = run_compare(_log([3000, 3200, 3400, 3600, 3800], [1000, 1100, 1200, 1300, 1400]),
                    make_config(), by="method", pair="seed", arms=["baseline", "cv_adamw"])
    assert Reason.UNDERPOWERED in r.codes
    assert r.exit_code == 1
    assert r["tests"]["wilcoxon"].p_value >= 0.05  # every pair agrees, still not < 0.05


def test_eight_pairs_with_a_clear_effect_reach_significance() -> None:
    base = [3000.0 + 100 * i for i in range(8)]
    new = [1000.0 + 150 * i for i in range(8)]
    r = run_compare(_log(base, new), make_config(), by="method", pair="seed",
                    arms=["baseline", "cv_adamw"])
    assert Reason.UNDERPOWERED not in r.codes
    t = r["tests"]
    assert t["wilcoxon"].p_value < 0.05 and t["sign_flip"].p_value < 0.05
    assert t["mean"] == pytest.approx(np.mean(np.array(base) - np.array(new)), abs=1e-9)
    assert t["mean_ci"].low > 0


def test_a_censored_arm_is_a_bound_shown_and_counted() -> None:
    base = [np.inf, 3200, 3400, 3600, 3800, np.inf, 3100]
    new = [1000, 1100, 1200, 1300, 1400, np.inf, 1500]
    r = run_compare(_log(base, new), make_config(), by="method", pair="seed",
                    arms=["baseline", "cv_adamw"])
    kinds = [p["kind"] for p in r["pairs"]]
    assert kinds.count("lower_bound") == 1 and kinds.count("both_censored") == 1
    assert Reason.CENSORED_PAIRS in r.codes
    assert r["tests"]["n"] == 6  # the bounded pair enters, the both-censored one cannot
    assert r["tests_complete_pairs_only"]["n"] == 5


def test_arms_must_be_chosen_among_several_and_pairs_unique() -> None:
    runs = pd.DataFrame({"run": list("abc"), "method": ["x", "y", "z"], "seed": [0, 0, 0],
                         "t_grok": [100, 200, 300], "budget": 1000})
    with pytest.raises(LogFormatError):
        run_compare(make_log(runs), make_config(), by="method", pair="seed")
    runs2 = pd.DataFrame({"run": list("abc"), "method": ["x", "x", "y"], "seed": [0, 0, 0],
                          "t_grok": [100, 200, 300], "budget": 1000})
    with pytest.raises(LogFormatError):
        run_compare(make_log(runs2), make_config(), by="method", pair="seed")
