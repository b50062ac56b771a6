"""Task ceilings (issue 18): when no run reaches the absolute grok threshold but the test
accuracy settles below it, the audit says the threshold decided (ACCURACY_CEILING), and
``--grok-relative study`` reads the thresholds against the study's best sustained accuracy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from grokaudit import Reason, audit_table
from grokaudit.errors import ConfigError

STEPS = np.arange(0, 8000, 50)


def sweep(ceiling: float, wds: tuple[float, ...] = (1.0, 2.0, 4.0)) -> pd.DataFrame:
    rows = []
    for wd in wds:
        for seed in range(3):
            t = 3000.0 / wd + 40 * seed
            acc = ceiling / (1.0 + np.exp(-(STEPS - t) / 60.0))
            rank = 10.0 + 20.0 / (1.0 + np.exp((STEPS - t - 1500.0) / 200.0))
            rows.append(pd.DataFrame({"run": f"wd{wd}_s{seed}", "step": STEPS, "wd": wd,
                                      "seed": seed, "test_acc": acc, "train_acc": 1.0,
                                      "emb_erank": rank}))
    return pd.concat(rows, ignore_index=True)


def first_crossing(df: pd.DataFrame, run: str, level: float) -> int:
    g = df[df["run"] == run]
    return int(g["step"][g["test_acc"] >= level].iloc[0])


def test_no_run_reaches_the_threshold_but_accuracy_settles_below_it() -> None:
    res = audit_table(sweep(0.895), by="wd")
    (f,) = [f for f in res.findings if f.code is Reason.ACCURACY_CEILING]
    assert f.severity.value == "warning"
    assert f.evidence["best_final_test_acc"] == pytest.approx(0.895, abs=1e-3)
    assert Reason.NO_GROK in res.codes


def test_no_ceiling_finding_when_the_threshold_is_reached_or_accuracy_is_at_chance() -> None:
    assert Reason.ACCURACY_CEILING not in audit_table(sweep(1.0), by="wd").codes
    assert Reason.ACCURACY_CEILING not in audit_table(sweep(0.3), by="wd").codes


def test_relative_thresholds_read_against_the_study_ceiling() -> None:
    df = sweep(0.895)
    res = audit_table(df, by="wd", grok_relative="study")
    (f,) = [f for f in res.findings if f.code is Reason.ACCURACY_CEILING]
    c = f.evidence["ceiling"]
    assert f.severity.value == "info" and f.evidence["grok_level"] == pytest.approx(0.9 * c)
    run = res.studies[0].runs[0]
    assert run.t_grok.value == first_crossing(df, run.run, 0.9 * c)
    assert Reason.NO_GROK not in res.codes


def test_relative_thresholds_change_nothing_when_the_ceiling_is_one() -> None:
    df = sweep(1.0)
    a = audit_table(df, by="wd").studies[0]
    b = audit_table(df, by="wd", grok_relative="study").studies[0]
    assert [r.t_grok for r in a.runs] == [r.t_grok for r in b.runs]


def test_a_study_at_chance_keeps_the_absolute_thresholds() -> None:
    res = audit_table(sweep(0.3), by="wd", grok_relative="study")
    (f,) = [f for f in res.findings if f.code is Reason.ACCURACY_CEILING]
    assert f.evidence["relative"] is False
    assert all(r.t_grok.censored for r in res.studies[0].runs)


def test_relative_thresholds_refused_with_a_loss_criterion_and_in_claims() -> None:
    with pytest.raises(ConfigError):
        audit_table(sweep(1.0).assign(test_loss=0.1), by="wd", grok_relative="study",
                    grok_on="test_loss", grok_below=0.2)
