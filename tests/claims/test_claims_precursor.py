"""``grokaudit precursor``: edge peaks, the permutation and placebo nulls, runs counted apart."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from grokaudit import LogFormatError, Reason, make_config
from grokaudit.claims.precursor import run_precursor
from grokaudit.claims.simulate import make_log


def _runs(n: int = 12, never: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    tg = np.round(rng.uniform(2500, 4000, n), -1)
    tg[:never] = np.inf
    return pd.DataFrame({"run": [f"r{i:02d}" for i in range(n)], "seed": np.arange(n),
                         "t_grok": tg, "t_mem": 300, "budget": 6000})


def _bump(r: pd.Series, s: np.ndarray) -> np.ndarray:
    """A real precursor: a bump 600 steps before grokking (or mid-run when it never groks)."""
    centre = r["t_grok"] - 600 if np.isfinite(r["t_grok"]) else 3000
    return np.exp(-(((s - centre) / 200) ** 2))


def _monotone(r: pd.Series, s: np.ndarray) -> np.ndarray:
    return s / 1000.0


def _noise(r: pd.Series, s: np.ndarray) -> np.ndarray:
    return np.random.default_rng(int(r["seed"]) + 7).random(s.size)


def test_a_monotone_placebo_signal_peaks_at_the_window_edge() -> None:
    log = make_log(_runs(), every=50, series={"attn_cv": _monotone})
    r = run_precursor(log, make_config(), signal="attn_cv", n_perm=199)
    assert Reason.PEAK_AT_WINDOW_EDGE in r.codes
    assert all(x["peak_at_edge"] for x in r["runs"])
    assert Reason.PRECURSOR_NOT_SPECIFIC in r.codes  # the last point never precedes grokking


def test_a_real_precursor_beats_both_nulls() -> None:
    log = make_log(_runs(), every=50, series={"attn_cv": _bump, "weight_norm": _monotone})
    r = run_precursor(log, make_config(), signal="attn_cv", n_perm=199)
    assert r["fraction_preceding"] == 1.0
    assert Reason.PRECURSOR_NOT_SPECIFIC not in r.codes
    assert Reason.PEAK_AT_WINDOW_EDGE not in r.codes
    assert r["null_placebo"]["signal"] == "weight_norm"
    assert r["lead_ci"].low <= 600 <= r["lead_ci"].high


def test_noise_is_not_a_precursor() -> None:
    log = make_log(_runs(), every=50, series={"attn_cv": _noise})
    r = run_precursor(log, make_config(), signal="attn_cv", n_perm=199)
    assert Reason.PRECURSOR_NOT_SPECIFIC in r.codes


def test_never_grokked_runs_are_counted_apart() -> None:
    log = make_log(_runs(never=3), every=50, series={"attn_cv": _bump})
    r = run_precursor(log, make_config(), signal="attn_cv", n_perm=99)
    assert r["n_no_grok"] == 3 and r["n_scored"] == 9
    assert Reason.NO_GROK in r.codes
    assert sum(x["precedes"] is None for x in r["runs"]) == 3


def test_precursor_needs_train_acc_and_the_signal() -> None:
    log = make_log(_runs(), every=50, series={"attn_cv": _bump})
    with pytest.raises(LogFormatError):
        run_precursor(log.drop(columns="train_acc"), make_config(), signal="attn_cv")
    with pytest.raises(LogFormatError):
        run_precursor(log, make_config(), signal="nope")
