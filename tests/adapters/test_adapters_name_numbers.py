"""Numbers written in file and folder names (``lr_1em3_wd_0p1_seed_0.csv``): one documented
rule reads them (``--cond KEY=REGEX:num``), a pattern that captures a fragment of a number is
refused, and ``inspect`` proposes patterns that capture whole tokens (issue 39, item 3)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from grokaudit.cli import cli
from grokaudit.roles import name_number


@pytest.mark.parametrize(("text", "plain"), [
    ("1em3", "1e-3"), ("1e-3", "1e-3"), ("2e4", "2e4"), ("2e+4", "2e4"), ("0p1", "0.1"),
    ("3p0", "3.0"), ("1_5", "1.5"), ("0.25", "0.25"), ("m0p5", "-0.5"), ("7", "7"),
])
def test_a_name_number_is_the_number_written_plainly(text: str, plain: str) -> None:
    assert name_number(text) == float(plain)


@pytest.mark.parametrize("text", ["abc", "0p", "p1", "1e", "1em", "0p1_", "", "1.2.3"])
def test_a_name_token_that_is_no_number_reads_as_none(text: str) -> None:
    assert name_number(text) is None


WDS = {"0p1": 0.1, "1p0": 1.0, "3p0": 3.0}


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    d = tmp_path / "runs"
    d.mkdir()
    s = np.arange(0, 6001, 100)
    for name, wd in WDS.items():
        for seed in (0, 1):
            tg = 1500 / wd ** 0.25 + 50 * seed
            pd.DataFrame({"step": s, "train_acc": 1.0,
                          "test_acc": 1 / (1 + np.exp(-(s - tg) / 100)),
                          "emb": 10 + 20 / (1 + np.exp((s - tg - 600) / 150))}).to_csv(
                d / f"lr_1em3_wd_{name}_seed_{seed}.csv", index=False)
    return d


def _run(*args: Any) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_cond_num_reads_encoded_names(runs: Path) -> None:
    r = _run("check", runs, "--cond", "wd=wd_([0-9pme]+):num", "--cond", "lr=lr_([0-9pme]+):num",
             "--by", "wd", "--metric", "emb", "--json", "-")
    assert r.exit_code in (0, 1), r.output
    doc = json.loads(r.stdout)
    assert [c["axis_value"] for c in doc["studies"][0]["cells"]] == sorted(WDS.values())


@pytest.mark.parametrize("cond", ["wd=wd_([0-9]+)", "wd=wd_([0-9]+)p", "wd=wd_(0)"])
def test_a_pattern_capturing_a_fragment_of_a_number_is_refused(runs: Path, cond: str) -> None:
    # wd_([0-9]+) on wd_0p1 read wd = 0, 1 and 3 without a word
    r = _run("check", runs, "--cond", cond, "--by", "wd", "--metric", "emb")
    assert r.exit_code == 2 and r.stderr.rstrip().endswith("[INVALID_OPTION]"), r.output


def test_inspect_proposes_a_whole_token_pattern_that_reads_the_names(runs: Path) -> None:
    r = _run("inspect", runs, "--json", "-")
    assert r.exit_code == 0, r.output
    flags = [f["flag"] for f in json.loads(r.stdout)["flags"] if f["flag"].startswith("--cond")]
    assert len(flags) == 1 and flags[0].startswith("--cond wd=")  # lr is the same in every run
    used = _run("check", runs, *shlex.split(flags[0]), "--by", "wd", "--metric", "emb",
                "--json", "-")
    assert used.exit_code in (0, 1), used.output
    cells = json.loads(used.stdout)["studies"][0]["cells"]
    assert [c["axis_value"] for c in cells] == sorted(WDS.values())
