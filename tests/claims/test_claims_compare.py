"""``grokaudit compare``: paired tests, censored differences as bounds, power, pairing."""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from grokaudit import LogFormatError, Reason, make_config
from grokaudit.claims.compare import run_compare
from grokaudit.claims.render import render_text
from grokaudit.claims.simulate import make_log
from grokaudit.errors import ErrorCode


def _log(base: list[float], new: list[float], budget: int = 5000, extra: int = 0
         ) -> pd.DataFrame:
    n = len(base)
    runs = pd.DataFrame({"run": [f"b{i}" for i in range(n)] + [f"n{i}" for i in range(n)],
                         "method": ["baseline"] * n + ["cv_adamw"] * n,
                         "seed": list(range(n)) * 2, "t_grok": base + new, "budget": budget})
    if extra:  # a third arm the comparison leaves aside
        runs = pd.concat([runs, pd.DataFrame({
            "run": [f"x{i}" for i in range(extra)], "method": "sgd", "seed": range(extra),
            "t_grok": 2000.0, "budget": budget})], ignore_index=True)
    return make_log(runs, every=50)


def test_five_pairs_are_underpowered() -> None:
    r = run_compare(_log([3000, 3200, 3400, 3600, 3800], [1000, 1100, 1200, 1300, 1400]),
                    make_config(), by="method", pair="seed", arms=["baseline", "cv_adamw"])
    assert Reason.UNDERPOWERED in r.codes
    assert r.exit_code == 1
    b = r.body
    assert b.tests.wilcoxon.p_value >= 0.05  # every pair agrees, still not < 0.05
    assert b.power.min_attainable_p == pytest.approx(0.0625) and b.power.pairs_needed == 6
    assert b.power.min_detectable_dz == pytest.approx(1.676, abs=0.01)


def test_eight_pairs_with_a_clear_effect_reach_significance() -> None:
    base = [3000.0 + 100 * i for i in range(8)]
    new = [1000.0 + 150 * i for i in range(8)]
    r = run_compare(_log(base, new), make_config(), by="method", pair="seed",
                    arms=["baseline", "cv_adamw"])
    assert Reason.UNDERPOWERED not in r.codes
    t = r.body.tests
    assert t.wilcoxon.p_value < 0.05 and t.sign_flip.p_value < 0.05
    assert t.mean == pytest.approx(np.mean(np.array(base) - np.array(new)), abs=1e-9)
    assert t.mean_ci.low > 0 and t.mean_ci.low < t.mean_ci.high
    # the arms' times rise together over the seeds: the pairing correlates
    assert r.body.pairing.r == pytest.approx(1.0) and r.body.pairing.n == 8


def test_censored_pairs_give_bounds_not_estimates() -> None:
    """The issue's case: with censored pairs the old audit printed ``mean d 77268
    [75717, 78692] (BCa)`` and ``Cohen's d_z = 21.8`` computed on lower bounds."""
    base = [np.inf, 3200, 3400, 3600, 3800, np.inf, 3100, np.inf]
    new = [1000, 1100, 1200, 1300, 1400, np.inf, 1500, 900]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # was: a numpy RuntimeWarning
        r = run_compare(_log(base, new), make_config(), by="method", pair="seed",
                        arms=["baseline", "cv_adamw"])
    b = r.body
    kinds = [p.kind for p in b.pairs]
    assert kinds.count("lower_bound") == 2 and kinds.count("both_censored") == 1
    assert Reason.CENSORED_PAIRS in r.codes
    assert b.tests is None  # nothing is estimated over bounds
    c = b.censored
    # each bound: d > L_a − t_b with L_a = 5000 (the last logged step)
    assert [p.d.low for p in b.pairs if p.kind == "lower_bound"] == [4000, 4100]
    assert c.mean_d.value is None and c.mean_d.high is None  # a both-censored pair: unbounded
    # the median is bounded on both sides: the both-censored pair sits at either end
    assert (c.median_d.value, c.median_d.low, c.median_d.high) == (None, 2250, 2350)
    # both ends are medians of observed differences (2200, 2300 and 2300, 2400): attainable,
    # so closed (issue 20: the attainable set is printed as what it is)
    assert c.median_d.low_closed and c.median_d.high_closed
    assert c.sign.n == 7 and c.sign.statistic == 7  # the both-censored pair has no sign
    assert c.wilcoxon_p_at_most is None  # a pair with no bound at all: no Wilcoxon bound
    assert b.complete_pairs.n == 5
    assert b.power.test == "sign_exact" and b.power.n == 7
    text = render_text(r)
    assert ">4000" in text and ">4100" in text
    assert "d_z" not in text.split("power:")[0] and "BCa" not in text
    assert "mean d unknown, median d [2250, 2350]" in text
    d = json.loads(r.to_json())
    assert d["studies"][0]["tests"] is None


def test_an_arm_that_grokked_before_its_log_begins_gives_bounds() -> None:
    """The new arm grokked at step 200–270, but its logs begin at step 1000 (a resumed or
    trimmed run): t_grok ≤ 1000 only. Read at 1000 it would be slower than the baseline (600–
    950) in every pair, with p < 0.01; the log only says d > t_base − 1000, a bound below 0."""
    base = [600.0 + 50 * i for i in range(8)]
    new = [200.0 + 10 * i for i in range(8)]
    log = _log(base, new)
    log = log[(log["method"] == "baseline") | (log["step"] >= 1000)].reset_index(drop=True)
    r = run_compare(log, make_config(), by="method", pair="seed",
                    arms=["baseline", "cv_adamw"])
    b = r.body
    assert [p.kind for p in b.pairs] == ["lower_bound"] * 8
    # each baseline run grokked in (t − 50, t] (evaluated every 50 steps): d > t − 50 − 1000
    assert [p.d.low for p in b.pairs] == [t - 50 - 1000 for t in base]
    assert all(p.sign is None for p in b.pairs)  # every bound below 0: no sign known
    assert all(p.t_grok[1].left_censored and p.t_grok[1].value is None for p in b.pairs)
    assert b.tests is None and b.complete_pairs.n == 0
    assert Reason.CENSORED_PAIRS in r.codes and Reason.UNDERPOWERED in r.codes
    # the same arms the other way round: upper bounds, d < 1000 − t_base
    r2 = run_compare(log, make_config(), by="method", pair="seed",
                     arms=["cv_adamw", "baseline"])
    assert [p.kind for p in r2.body.pairs] == ["upper_bound"] * 8
    assert [p.d.high for p in r2.body.pairs] == [1000 - (t - 50) for t in base]


def test_one_sided_censoring_bounds_the_mean_and_the_wilcoxon_p() -> None:
    base = [np.inf, 3200, 3400, 3600, 3800, 3100, np.inf]
    new = [1000, 1100, 1200, 1300, 1400, 1500, 1600]
    r = run_compare(_log(base, new), make_config(), by="method", pair="seed",
                    arms=["baseline", "cv_adamw"])
    c = r.body.censored
    assert c.mean_d.value is None and c.mean_d.low is not None and c.mean_d.high is None
    assert c.wilcoxon_p_at_most == pytest.approx(2 / 2**7)
    text = render_text(r)
    assert re.search(r"mean d >\d+", text)
    # a printed bound never claims less than was computed: p ≤ 2/128 = 0.015625 is "≤ 0.0157"
    bound = float(re.search(r"p ≤ ([0-9.]+)", text).group(1))
    assert 2 / 2**7 <= bound < 2 / 2**7 + 1e-4


def test_header_counts_the_pairs_compared() -> None:
    r = run_compare(_log([3000, 3200, 3400], [1000, 1100, 1200], extra=4), make_config(),
                    by="method", pair="seed", arms=["baseline", "cv_adamw"])
    first = render_text(r).splitlines()[0]
    assert "3 pairs (6 runs) of 10 runs" in first


def test_arms_must_be_chosen_among_several_and_pairs_unique() -> None:
    runs = pd.DataFrame({"run": list("abc"), "method": ["x", "y", "z"], "seed": [0, 0, 0],
                         "t_grok": [100, 200, 300], "budget": 1000})
    with pytest.raises(LogFormatError):
        run_compare(make_log(runs), make_config(), by="method", pair="seed")
    runs2 = pd.DataFrame({"run": list("abc"), "method": ["x", "x", "y"], "seed": [0, 0, 0],
                          "t_grok": [100, 200, 300], "budget": 1000})
    with pytest.raises(LogFormatError) as exc:
        run_compare(make_log(runs2), make_config(), by="method", pair="seed")
    assert exc.value.code is ErrorCode.DUPLICATE_AXIS_VALUES


def test_pairs_across_two_tasks_are_refused_unless_split() -> None:
    a = _log([3000, 3200, 3400], [1000, 1100, 1200])
    b = a.copy()
    a["task"], b["task"] = "add", "mul"
    b["run"] = b["run"] + "_mul"
    log = pd.concat([a, b], ignore_index=True)
    with pytest.raises(LogFormatError) as exc:
        run_compare(log, make_config(), by="method", pair="seed")
    assert exc.value.code is ErrorCode.DUPLICATE_AXIS_VALUES
    assert "cell=task" in str(exc.value) and exc.value.param == "cell"
    r = run_compare(log, make_config(), by="method", pair="seed", cell=["task"])
    assert [s.study for s in r.studies] == [{"task": "add"}, {"task": "mul"}]
    assert all(s.body.n_pairs == 3 for s in r.studies)


def test_arms_named_as_shown_select_float32_and_boolean_values(tmp_path) -> None:
    from pathlib import Path

    import numpy as np
    from click.testing import CliRunner
    from grokaudit.cli import cli

    log = Path(__file__).resolve().parents[2] / "reference_runs" / "data" / "mlp_wd_sweep_p59.parquet"
    df = pd.read_parquet(log)
    df = df[df.wd.isin([3.0, 4.0])][["run", "step", "test_acc", "train_acc", "seed", "wd"]]
    df = df.assign(method=np.where(df.wd == 3.0, 0.3, 0.7).astype(np.float32),
                   flag=df.wd == 3.0).drop(columns="wd")
    p = tmp_path / "arms.parquet"
    df.drop(columns="flag").to_parquet(p)
    r = CliRunner().invoke(cli, ["compare", str(p), "--by", "method", "--pair", "seed",
                                 "--arms", "0.3,0.7", "--json", "-"])
    assert r.exit_code in (0, 1), r.output
    bad = CliRunner().invoke(cli, ["compare", str(p), "--by", "method", "--pair", "seed",
                                   "--arms", "0.3,0.5"])
    assert bad.exit_code == 2 and bad.output.strip().endswith("[UNKNOWN_VALUE]")
    assert "0.30000001" not in bad.output and "0.3, 0.7" in bad.output
    q = tmp_path / "flag.parquet"
    df.drop(columns="method").to_parquet(q)
    r = CliRunner().invoke(cli, ["compare", str(q), "--by", "flag", "--pair", "seed",
                                 "--arms", "true,false", "--json", "-"])
    assert r.exit_code in (0, 1), r.output


def _cadence_log(every_a: int, every_b: int, t_a: list[float], t_b: list[float]
                 ) -> pd.DataFrame:
    """Arm ``a`` evaluated every ``every_a`` steps, arm ``b`` every ``every_b``."""
    def arm(name: str, every: int, ts: list[float]) -> pd.DataFrame:
        n = len(ts)
        runs = pd.DataFrame({"run": [f"{name}{i}" for i in range(n)], "method": name,
                             "seed": range(n), "t_grok": ts, "budget": 3000})
        return make_log(runs, every=every)
    return pd.concat([arm("a", every_a, t_a), arm("b", every_b, t_b)], ignore_index=True)


def test_a_sign_the_evaluation_cadence_cannot_resolve_is_not_a_value() -> None:
    """Arm a evaluated every 500 steps and groks at 1010–1080, so it is first seen at 1500;
    arm b evaluated every 10 steps groks at 1100–1170. Read at the steps grokking was first
    seen, b looks 330–400 steps sooner in all 8 pairs (the old output: Wilcoxon p = 0.0078,
    exit 0) though a is sooner in every pair. The log says only that d lies in
    (1000 − t_b, 1500 − (t_b − 10)): a range across 0, no sign."""
    t_a = [1010.0 + 10 * i for i in range(8)]
    t_b = [1100.0 + 10 * i for i in range(8)]
    r = run_compare(_cadence_log(500, 10, t_a, t_b), make_config(), by="method", pair="seed",
                    arms=["a", "b"])
    b = r.body
    assert [p.kind for p in b.pairs] == ["unresolved"] * 8
    assert all(p.sign is None and p.d.value is None for p in b.pairs)
    assert [(p.d.low, p.d.high) for p in b.pairs] == [(1000 - t, 1500 - (t - 10)) for t in t_b]
    assert b.tests is None and b.censored.n_unresolved == 8
    assert b.censored.sign.n == 0 and b.censored.wilcoxon_p_at_most is None
    assert Reason.PAIRS_WITHIN_RESOLUTION in r.codes and Reason.UNDERPOWERED in r.codes
    assert Reason.CENSORED_PAIRS not in r.codes  # nothing is censored
    assert r.exit_code == 1
    # the first-seen steps are kept as what they are: the complete pairs' subset is empty
    assert b.power.n_unknown_sign == 8


def test_arms_evaluated_at_different_steps_are_ranges_of_known_sign() -> None:
    """The same cadences with a grokking at 1600–1670 (first seen at 2000) and b at 1010–1080:
    each pair's range of d, (1500 − t_b, 2000 − (t_b − 10)), lies above 0 — the log resolves
    who is sooner — but the first-seen difference (920…) is not what it measures (the true
    d is 590): the pairs are ranges and the test is the sign test."""
    t_a = [1010.0 + 10 * i for i in range(8)]
    t_b = [1600.0 + 10 * i for i in range(8)]
    r = run_compare(_cadence_log(500, 10, t_b, t_a), make_config(), by="method",
                    pair="seed", arms=["a", "b"])
    b = r.body
    assert [p.kind for p in b.pairs] == ["interval"] * 8
    assert all(p.sign == 1 and p.d.value is None and p.d.low >= 0 for p in b.pairs)
    assert b.tests is None and b.censored.n_interval == 8 and b.censored.n_unresolved == 0
    assert b.censored.sign.n == 8 and b.censored.sign.p_value == pytest.approx(2 / 2**8)
    assert b.censored.wilcoxon_p_at_most is None
    assert Reason.PAIRS_WITHIN_RESOLUTION in r.codes and Reason.UNDERPOWERED not in r.codes


def test_ranks_the_cadences_cannot_resolve_are_not_tested() -> None:
    """The reviewer's case: every sign resolved, but seven pairs truly +6 read as +500 and one
    truly −599 as −100: Wilcoxon p = 0.0156, mean d 425 [200, 500], exit 0, where the log
    allows a mean anywhere in (−75, 435). Now the sign test (7 of 8: p = 0.07)."""
    df = _cadence_log(500, 10, [1001.0] * 8, [995.0] * 7 + [1600.0])
    r = run_compare(df, make_config(), by="method", pair="seed", arms=["a", "b"])
    b = r.body
    assert b.tests is None and [p.kind for p in b.pairs].count("observed") == 0
    assert b.censored.sign.n == 8 and b.censored.sign.statistic == 7
    assert b.censored.sign.p_value > 0.05
    assert Reason.PAIRS_WITHIN_RESOLUTION in r.codes


def test_a_tie_across_cadences_is_unresolved_not_zero() -> None:
    """a grokked at 1010 (evaluated every 500: first seen 1500), b at 1495 (every 10: first
    seen 1500): the first-seen difference is 0, the log says d ∈ (−500, 10)."""
    r = run_compare(_cadence_log(500, 10, [1010.0] * 6, [1495.0] * 6), make_config(),
                    by="method", pair="seed", arms=["a", "b"])
    assert [p.kind for p in r.body.pairs] == ["unresolved"] * 6
    assert (r.body.pairs[0].d.low, r.body.pairs[0].d.high) == (-500, 10)


def test_a_bound_against_a_coarse_arm_uses_its_whole_interval() -> None:
    """The reviewer's case: a evaluated every 500 groks at 600 (first seen 1000); b's log
    starts at 900 and it grokked at 850 (t_b ≤ 900). The true d is −250; the bound read at
    a's first-seen step was d > 100 (sign test p = 0.0078, exit 0); a grokked after 500 only:
    d > 500 − 900 = −400, no sign."""
    df = _cadence_log(500, 10, [600.0] * 8, [850.0] * 8)
    df = df[(df["method"] == "a") | (df["step"] >= 900)].reset_index(drop=True)
    r = run_compare(df, make_config(), by="method", pair="seed", arms=["a", "b"])
    assert [p.kind for p in r.body.pairs] == ["lower_bound"] * 8
    assert all(p.d.low == -400 and p.sign is None for p in r.body.pairs)
    assert r.exit_code == 1 and Reason.UNDERPOWERED in r.codes


def test_without_interval_censoring_the_first_seen_steps_are_values() -> None:
    """The reference profile reads t_grok at the step it was first seen, as the papers do."""
    t_a = [1010.0 + 10 * i for i in range(8)]
    t_b = [1100.0 + 10 * i for i in range(8)]
    r = run_compare(_cadence_log(500, 10, t_a, t_b), make_config(interval_censoring=False),
                    by="method", pair="seed", arms=["a", "b"])
    assert [p.kind for p in r.body.pairs] == ["observed"] * 8
    assert Reason.PAIRS_WITHIN_RESOLUTION not in r.codes


def test_a_run_with_no_pair_value_is_refused_not_unpaired_nan() -> None:
    """A run whose --pair value is missing was listed as unpaired 'nan'."""
    log = _log([3000.0 + 100 * i for i in range(6)], [1000.0 + 100 * i for i in range(6)])
    log["seed"] = log["seed"].astype(float)
    log.loc[log["run"] == "n2", "seed"] = np.nan
    with pytest.raises(LogFormatError) as exc:
        run_compare(log, make_config(), by="method", pair="seed",
                    arms=["baseline", "cv_adamw"])
    assert exc.value.code is ErrorCode.CONDITION_MISSING and exc.value.column == "seed"


def test_a_tiny_p_value_is_never_written_as_zero() -> None:
    # 48 pairs, every one sooner in the second arm: exact two-sided Wilcoxon p = 2 / 2**48
    # (3.6e-15), which 12 decimals rounded to 0 in the JSON (issue 42)
    import json

    base = [3000.0 + 20 * i for i in range(48)]
    r = run_compare(_log(base, [t - 1000 - 5 * i for i, t in enumerate(base)]), make_config(),
                    by="method", pair="seed", arms=["baseline", "cv_adamw"])
    p = json.loads(r.to_json())["studies"][0]["tests"]["wilcoxon"]["p_value"]
    assert p == pytest.approx(2 / 2**48, rel=1e-9) and p > 0


@pytest.mark.parametrize(("p", "alpha", "text"), [
    (0.961, None, "0.96"),  # nearest, never rounded up (it read 0.97)
    (0.0496, 0.05, "0.0496"),  # 2 digits would print 0.05: as many as keep it below α
    (0.04996, 0.05, "0.04996"),
    (0.0504, 0.05, "0.0504"),  # and above it
    (0.05, 0.05, "0.05"),
    (3.6e-15, 0.05, "3.6e-15"),
])
def test_a_printed_p_value_never_crosses_its_level(p: float, alpha: float | None,
                                                    text: str) -> None:
    from grokaudit.claims.results import p_text

    assert p_text(p, alpha) == text
