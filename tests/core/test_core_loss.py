"""A grok criterion on a loss (issue 12): logs without accuracy are audited with t_grok the
first logged step at which a held-out loss is at or below a level, interval-censored like the
accuracy clock."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from grokaudit import ConfigError, LogFormatError, audit_table, make_config
from grokaudit.cli import cli
from grokaudit.errors import ErrorCode

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "reference_runs" / "data" / "mlp_wd_sweep_p59.parquet"


def _loss_log() -> pd.DataFrame:
    steps = np.arange(0, 2001, 100)
    rows = []
    for run, below_at in (("a", 700), ("b", 1200), ("never", None)):
        loss = np.where(steps < (below_at if below_at is not None else 10**9), 2.0, 0.01)
        rows.append(pd.DataFrame({"run": run, "step": steps, "test_loss": loss,
                                  "emb_erank": np.linspace(50, 20, steps.size), "wd": 1.0}))
    return pd.concat(rows, ignore_index=True)


def test_t_grok_is_the_first_logged_step_at_or_below_the_level() -> None:
    r = audit_table(_loss_log(), by="wd", metrics=["emb_erank"], grok_on="test_loss",
                    grok_below=0.1)
    runs = {x.run: x for x in r.studies[0].runs}
    assert (runs["a"].t_grok.value, runs["a"].t_grok.lower) == (700, 600)
    assert (runs["b"].t_grok.value, runs["b"].t_grok.lower) == (1200, 1100)
    assert runs["never"].t_grok.censored and runs["never"].t_grok.lower == 2000
    assert runs["a"].fully_generalized and not runs["never"].fully_generalized
    assert runs["a"].final_test_acc == pytest.approx(0.01)  # in the loss's own units
    doc = json.loads(r.to_json())
    assert doc["config"]["grok_on"] == "test_loss" and doc["config"]["grok_below"] == 0.1


def test_a_loss_that_rises_again_is_not_a_sustained_grok() -> None:
    df = _loss_log()
    bump = (df.run == "a") & df.step.between(1000, 1400)
    df.loc[bump, "test_loss"] = 1.0
    r = audit_table(df, by="wd", metrics=["emb_erank"], grok_on="test_loss", grok_below=0.1)
    a = next(x for x in r.studies[0].runs if x.run == "a")
    assert not a.grok_sustained and a.grok_fell_at == 1000


def test_the_accuracy_criterion_and_its_equivalent_loss_audit_alike() -> None:
    """1 − test_acc below 1 − threshold is the accuracy criterion itself: same audit."""
    df = pd.read_parquet(LOG)
    acc = audit_table(df, by="wd", cell=["arch"], metrics=["emb_pr"])
    as_loss = df.assign(err=1.0 - df.test_acc).drop(columns=["test_acc"])
    loss = audit_table(as_loss, by="wd", cell=["arch"], metrics=["emb_pr"], grok_on="err",
                       grok_below=1.0 - 0.9, full_below=1.0 - 0.98)
    assert sorted(c.value for c in loss.codes) == sorted(c.value for c in acc.codes)
    assert [c.t_grok for c in loss.studies[0].cells] == [c.t_grok for c in acc.studies[0].cells]
    assert loss.exit_code == acc.exit_code


@pytest.mark.parametrize("opts, code", [
    ({"grok_below": 0.1}, ErrorCode.INVALID_OPTION),  # a level without a loss column
    ({"grok_on": "test_loss"}, ErrorCode.INVALID_OPTION),  # a loss column without a level
    ({"grok_on": "test_loss", "grok_below": 0.1, "full_below": 0.5},
     ErrorCode.OPTION_OUT_OF_RANGE),
    ({"grok_on": "test_loss", "grok_below": -1.0}, ErrorCode.OPTION_OUT_OF_RANGE),
    ({"grok_on": "test_loss", "grok_below": float("nan")}, ErrorCode.OPTION_OUT_OF_RANGE),
    ({"grok_on": "step", "grok_below": 0.1}, ErrorCode.INVALID_OPTION),
])
def test_the_loss_criterion_is_validated(opts: dict, code: ErrorCode) -> None:
    with pytest.raises(ConfigError) as ei:
        make_config(**opts)
    assert ei.value.code is code


def test_a_log_without_accuracy_names_the_loss_option(tmp_path: Path) -> None:
    p = tmp_path / "loss.csv"
    _loss_log().to_csv(p, index=False)
    r = CliRunner().invoke(cli, ["check", str(p), "--by", "wd", "--metric", "emb_erank"])
    assert r.exit_code == 2 and r.output.strip().endswith("[MISSING_COLUMN]")
    assert "--grok-on test_loss" in r.output
    ok = CliRunner().invoke(cli, ["check", str(p), "--by", "wd", "--metric", "emb_erank",
                                  "--grok-on", "test_loss", "--grok-below", "0.1"])
    assert ok.exit_code in (0, 1), ok.output
    assert re.search(r"^config: grok_on=test_loss grok_below=0.1", ok.output, re.M)
    with pytest.raises(LogFormatError) as ei:
        audit_table(_loss_log(), by="wd", metrics=["emb_erank"], grok_on="val_loss",
                    grok_below=0.1)
    assert ei.value.code is ErrorCode.MISSING_COLUMN and ei.value.column == "val_loss"


def test_the_default_config_echo_is_unchanged() -> None:
    assert "grok_on" not in make_config().to_dict()


@pytest.mark.parametrize("extra", [{"metrics": ["test_loss"]}, {"by": "test_loss"},
                                   {"cell": ["test_loss"]}])
def test_the_loss_criterion_is_not_the_metric_the_axis_or_the_split(extra: dict) -> None:
    opts = {"by": "wd", "metrics": ["emb_erank"], **extra}
    with pytest.raises(LogFormatError) as ei:
        audit_table(_loss_log(), grok_on="test_loss", grok_below=0.1, **opts)
    assert ei.value.code is ErrorCode.INVALID_OPTION and ei.value.column == "test_loss"


def _sweep_with_loss() -> pd.DataFrame:
    """Two wd values × two seeds, each logging a held-out loss that falls, and a flat one."""
    steps = np.arange(0, 2001, 100)
    rows = []
    for wd in (1.0, 2.0):
        for seed in (0, 1):
            at = 700 if wd == 1.0 else 1200
            rows.append(pd.DataFrame({
                "run": f"wd{wd}_s{seed}", "step": steps,
                "test_loss": np.where(steps < at, 2.0, 0.01), "flat_loss": 2.0,
                "emb_erank": np.linspace(50, 20, steps.size), "wd": wd, "seed": seed}))
    return pd.concat(rows, ignore_index=True)


@pytest.mark.parametrize("column", ["wd", "seed"])
@pytest.mark.parametrize("streamed", [False, True])
def test_a_condition_is_no_loss_criterion(tmp_path: Path, column: str, streamed: bool
                                          ) -> None:
    # a found defect: --grok-on wd read the inferred axis as a loss, the design lost its axis
    # and the audit exited 1 (NOTHING_AUDITABLE) for what is a usage error
    from grokaudit.stream import audit_stream

    path = tmp_path / "log.parquet"
    _sweep_with_loss().to_parquet(path, index=False)
    opts = {"metrics": ["emb_erank"], "grok_on": column, "grok_below": 1.5}
    with pytest.raises(LogFormatError) as ei:
        if streamed:
            audit_stream(path, part_rows=30, **opts)
        else:
            audit_table(pd.read_parquet(path), **opts)
    assert ei.value.code is ErrorCode.NOT_A_SERIES and ei.value.column == column


def test_a_flat_loss_the_same_in_every_run_is_still_a_loss(tmp_path: Path) -> None:
    # a run that never learned logs a flat loss: no grok, never a refusal
    r = audit_table(_sweep_with_loss(), metrics=["emb_erank"], grok_on="flat_loss",
                    grok_below=1.5)
    assert r.studies[0].axis == "wd"
    assert all(x.t_grok.censored for s in r.studies for x in s.runs)
