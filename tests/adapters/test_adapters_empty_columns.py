"""A column every cell of which is empty is listed with its reason, never dropped without a
word: a --metric naming it said "not found" (issue 39, item 6)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner
from grokaudit.cli import cli
from helpers.hostile import cli as run_cli
from helpers.hostile import expect_error, sweep_df


def _one_run(tmp_path: Path) -> Path:
    d = sweep_df(wds=(1.0,), seeds=(0,)).drop(columns=["run"])
    d["emb_pr"] = np.nan
    p = tmp_path / "run.csv"
    d.to_csv(p, index=False)
    return p


def test_inspect_names_the_empty_column_and_why(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["inspect", str(_one_run(tmp_path)), "--json", "-"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    text = json.dumps(doc)
    assert "emb_pr" in text  # it was absent from inspect's output altogether


def test_a_metric_named_but_empty_is_refused_as_such(tmp_path: Path) -> None:
    code, message = expect_error(run_cli(["check", _one_run(tmp_path), "--metric", "emb_pr"]),
                                 "METRIC_NOT_FOUND")
    assert "emb_pr" in message
