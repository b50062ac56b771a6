"""``grokaudit precursor``: edge peaks, the permutation and placebo nulls, runs counted apart."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from grokaudit import LogFormatError, Reason, make_config
from grokaudit.claims.precursor import run_precursor
from grokaudit.claims.render import render_text
from grokaudit.claims.simulate import make_log
from grokaudit.cli import cli
from grokaudit.errors import ErrorCode
from grokaudit.schema import read_arrow, write_table


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
    assert all(x.peak_at_edge for x in r.body.runs)
    assert Reason.PRECURSOR_NOT_SPECIFIC in r.codes  # the last point never precedes grokking


def test_a_peak_between_two_accuracy_evaluations_is_not_known_to_precede() -> None:
    """The accuracy is evaluated every 500 steps, the signal every 10: each run groks between
    step 1000 and 1500 (first seen at 1500), and its signal peaks 100 steps after grokking.
    Compared with 1500, every peak "preceded" grokking (p = 0.001 against both nulls); the log
    only says that grokking happened somewhere in (1000, 1500], as the peak did."""
    frames = []
    for i in range(12):
        tg, s = 1010 + 30 * i, np.arange(0, 5001, 10)
        evaluated = (s % 500 == 0) | (s <= 100)
        frames.append(pd.DataFrame({
            "run": f"r{i:02d}", "seed": i, "step": s,
            "train_acc": np.where(evaluated, np.where(s >= 100, 1.0, 0.5), np.nan),
            "test_acc": np.where(evaluated, np.where(s >= tg, 1.0, 0.05), np.nan),
            "attn_cv": np.exp(-(((s - tg - 100) / 300.0) ** 2)) + 0.3 * np.exp(-s / 2000)}))
    r = run_precursor(pd.concat(frames, ignore_index=True), make_config(), signal="attn_cv",
                      n_perm=199)
    b = r.body
    assert b.n_scored == 12 and b.fraction_preceding_interior == 0.0
    assert all(x.precedes is None and 1000 < x.peak_step < 1500 for x in b.runs)
    assert Reason.PRECURSOR_NOT_SPECIFIC in r.codes
    assert "unknown" in render_text(r)
    # the lead to the first-seen step (1500 − peak = 60…390) says "100 steps ahead" where the
    # peak came 100 steps after grokking: no run's lead is a value, each is its range
    assert all(x.lead is None for x in b.runs)
    assert all((x.lead_range.low, x.lead_range.high) == (1000 - x.peak_step, 1500 - x.peak_step)
               for x in b.runs)
    assert b.lead_median is None and b.lead_ci is None
    assert b.lead_range.low < 0 < b.lead_range.high
    # the reference profile reads the first-seen step as t_grok, and so the lead as a value
    ref = run_precursor(pd.concat(frames, ignore_index=True), make_config("reference"),
                        signal="attn_cv", n_perm=19).body
    assert ref.lead_median is not None and all(x.lead is not None for x in ref.runs)


def test_a_real_precursor_beats_both_nulls() -> None:
    log = make_log(_runs(), every=50, series={"attn_cv": _bump, "weight_norm": _monotone})
    r = run_precursor(log, make_config(), signal="attn_cv", n_perm=199)
    b = r.body
    assert b.fraction_preceding == 1.0
    assert Reason.PRECURSOR_NOT_SPECIFIC not in r.codes
    assert Reason.PEAK_AT_WINDOW_EDGE not in r.codes
    assert b.placebo.signal == "weight_norm"
    assert b.placebo.n_signal_only == 12 and b.placebo.test.p_value == pytest.approx(0.5**12)
    assert b.lead_ci.low <= 600 <= b.lead_ci.high
    # peaks 600 before grokking, accuracy every 50 steps: each lead is known to be positive
    assert all(x.lead is not None and x.lead_range.low < x.lead <= x.lead_range.high
               for x in b.runs)
    # the cadence bounds each lead: the median is its range, never the first-seen point
    # (biased by about half the cadence, issue 42), and the interval covers the range
    assert b.lead_range.low > 0 and b.lead_median is None
    assert b.lead_ci.low <= b.lead_range.low and b.lead_range.high <= b.lead_ci.high


def test_noise_is_not_a_precursor() -> None:
    log = make_log(_runs(), every=50, series={"attn_cv": _noise})
    r = run_precursor(log, make_config(), signal="attn_cv", n_perm=199)
    assert Reason.PRECURSOR_NOT_SPECIFIC in r.codes


def test_never_grokked_runs_are_counted_apart() -> None:
    log = make_log(_runs(never=3), every=50, series={"attn_cv": _bump})
    r = run_precursor(log, make_config(), signal="attn_cv", n_perm=99)
    assert r.body.n_no_grok == 3 and r.body.n_scored == 9
    assert Reason.NO_GROK in r.codes
    assert sum(x.precedes is None for x in r.body.runs) == 3


def test_precursor_needs_train_acc_and_the_signal() -> None:
    log = make_log(_runs(), every=50, series={"attn_cv": _bump})
    with pytest.raises(LogFormatError):
        run_precursor(log.drop(columns="train_acc"), make_config(), signal="attn_cv")
    with pytest.raises(LogFormatError):
        run_precursor(log, make_config(), signal="nope")


def _bump_at(offset: dict[int, float], default: float):
    """A bump ``default`` steps before grokking, ``offset[i]`` for run ``i`` (negative: after)."""
    def fn(r: pd.Series, s: np.ndarray) -> np.ndarray:
        lead = offset.get(int(r["seed"]), default)
        return np.exp(-(((s - (r["t_grok"] - lead)) / 150) ** 2))
    return fn


def test_a_placebo_as_good_as_the_signal_is_not_specific_by_a_test() -> None:
    """The signal precedes in 11 of 12 runs, the placebo in 10 of 12: the old rule (placebo
    ≥ signal) stayed silent; the exact McNemar test on the 3 discordant runs cannot tell them
    apart (p = 0.5)."""
    log = make_log(_runs(), every=50, series={
        "attn_cv": _bump_at({0: -400}, 600), "smooth": _bump_at({1: -400, 2: -400}, 500)})
    r = run_precursor(log, make_config(), signal="attn_cv", placebo="smooth", n_perm=199)
    b = r.body
    assert b.fraction_preceding_interior == pytest.approx(11 / 12)
    assert b.placebo.fraction_preceding_interior == pytest.approx(10 / 12)
    assert (b.placebo.n_signal_only, b.placebo.n_placebo_only) == (2, 1)
    assert b.placebo.test.p_value == pytest.approx(0.5)
    assert b.null_permuted.p_value < 0.05  # it does beat its own permutation null
    f = next(f for f in r.findings if f.code is Reason.PRECURSOR_NOT_SPECIFIC)
    assert f.evidence["failed"] == ["placebo"]
    assert "McNemar" in render_text(r)


def test_epochs_recorded_by_the_adapter_are_the_unit(tmp_path: Path) -> None:
    log = make_log(_runs(), every=50, series={"attn_cv": _bump})
    p = write_table(log, tmp_path / "e.parquet", provenance={"step_unit": "epoch"})
    r = run_precursor(read_arrow(p), make_config(), signal="attn_cv", n_perm=99)
    assert r.body.step_unit == "epochs"
    assert "times in epochs" in render_text(r).splitlines()[0]
    r2 = run_precursor(read_arrow(p), make_config(), signal="attn_cv", n_perm=99,
                       step_unit="steps")
    assert r2.body.step_unit == "steps"  # --step-unit overrides the provenance


def test_a_single_csv_with_run_from_column_and_epochs(tmp_path: Path) -> None:
    """One CSV holding every run, counted in epochs (as many trainers log): read through the
    adapters with ``--run-from column``; the unit comes from the adapter."""
    log = make_log(_runs(6), every=50, series={"attn_cv": _bump})
    p = tmp_path / "all_runs.csv"
    log.rename(columns={"step": "epoch"}).to_csv(p, index=False)
    res = CliRunner().invoke(cli, ["precursor", str(p), "--signal", "attn_cv", "--run-from",
                                   "column", "--n-perm", "99"])
    assert res.exit_code in (0, 1), res.output
    assert "6 runs · times in epochs" in res.stdout.splitlines()[0]
    res = CliRunner().invoke(cli, ["precursor", str(p), "--signal", "attn_cv", "--run-from",
                                   "column", "--n-perm", "99", "--json", "-"])
    d = json.loads(res.stdout)
    assert d["studies"][0]["step_unit"] == "epochs" and d["params"]["step_unit"] == "epochs"


def test_a_test_that_cannot_reach_alpha_is_said_to_be_untestable() -> None:
    """With 10 permutation draws the smallest p is 1/11 = 0.091: a real precursor that beats
    every draw was reported as doing "no better than its own values permuted"."""
    log = make_log(_runs(), every=50, series={"attn_cv": _bump, "weight_norm": _monotone})
    r = run_precursor(log, make_config(), signal="attn_cv", n_perm=10)
    f = next(f for f in r.findings if f.code is Reason.PRECURSOR_NOT_SPECIFIC)
    assert sorted(f.evidence["untestable"]) == ["permutation", "time"]
    assert "placebo" not in f.evidence["failed"]  # 12 of 12 against 0: p = 2^-12
    ok = run_precursor(log, make_config(), signal="attn_cv", n_perm=199)
    assert Reason.PRECURSOR_NOT_SPECIFIC not in ok.codes


def test_the_signal_is_not_its_own_placebo() -> None:
    log = make_log(_runs(), every=50, series={"attn_cv": _bump})
    with pytest.raises(LogFormatError) as exc:
        run_precursor(log, make_config(), signal="attn_cv", placebo="attn_cv", n_perm=19)
    assert exc.value.code is ErrorCode.INVALID_OPTION


def test_a_lead_the_cadence_only_bounds_is_its_range_never_a_point() -> None:
    """Accuracy every 250 steps, each signal peaking 400 steps before grokking: the first-seen
    leads are 420–640 (biased by about half the cadence); the median was printed as a point
    where the log only bounds it (issue 42). The range and its interval hold the true 400; no
    point value is printed."""
    frames = []
    for i in range(12):
        tg, s = 2010 + 20 * i, np.arange(0, 5001, 10)
        evaluated = s % 250 == 0
        frames.append(pd.DataFrame({
            "run": f"r{i:02d}", "step": s, "seed": i,
            "test_acc": np.where(evaluated, (s >= tg).astype(float), np.nan),
            "train_acc": np.where(evaluated, (s >= 300).astype(float), np.nan),
            "attn_cv": np.exp(-(((s - (tg - 400)) / 150) ** 2))}))
    r = run_precursor(pd.concat(frames, ignore_index=True), make_config(), signal="attn_cv",
                      n_perm=99)
    b = r.body
    assert b.lead_median is None
    assert 0 < b.lead_range.low < 400 < b.lead_range.high  # the truth inside the log's range
    assert b.lead_ci.low <= b.lead_range.low and b.lead_range.high <= b.lead_ci.high
    assert json.loads(r.to_json())["studies"][0]["lead_median"] is None
