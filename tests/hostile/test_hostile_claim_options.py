"""Hostile command lines and logs for the claim commands (issue 22's review): each is one
coded refusal, exit 2, never read as something else and audited."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from grokaudit.claims.simulate import make_log
from helpers.hostile import cli, expect_error


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(0)
    wd = np.repeat([0.1, 0.2, 0.4, 0.8], 4)
    runs = pd.DataFrame({"run": [f"r{i}" for i in range(wd.size)], "wd": wd,
                         "seed": np.tile(np.arange(4), 4),
                         "t_grok": np.round(np.exp(np.log(300) + 2 * wd
                                                   + rng.normal(0, 0.05, wd.size))),
                         "budget": 4000})
    path = tmp_path_factory.mktemp("claims") / "log.csv"
    make_log(runs, every=20, series={
        "sig": lambda r, s: np.exp(-(((s - r["t_grok"] + 300) / 100) ** 2)),
        "med": lambda r, s: np.full(s.size, r["wd"])}).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("args", [
    ["onset", "{log}", "--by", "wd,wd"],
    ["onset", "{log}", "--by", "wd", "--phase-map", "wd,wd"],
    ["onset", "{log}", "--by", "wd", "--thresholds", " , "],
    ["dose", "{log}", "--by", "wd", "--fit-range", ","],
    ["precursor", "{log}", "--signal", "sig", "--placebo", "sig"],
    ["dose", "{log}", "--by", "wd", "--mediator", "med", "--baseline", "wd=0.1",
     "--raised", "wd=0.8", "--sweep", "wd"],
    ["check", "{log}", "--metric", "sig", "--metric", "sig"],
    ["onset", "{log}", "--by", "wd", "--nope"],
])
def test_a_hostile_option_is_one_coded_refusal(log: Path, args: list[str]) -> None:
    expect_error(cli([a.format(log=log) for a in args]), "INVALID_OPTION", "UNKNOWN_OPTION")


def test_an_empty_run_id_is_a_missing_value(log: Path, tmp_path: Path) -> None:
    df = pd.read_csv(log)
    df.loc[5, "run"] = None
    df.to_csv(tmp_path / "holed.csv", index=False)
    for cmd in (["check"], ["onset", "--by", "wd"], ["watch", "--once"]):
        expect_error(cli([cmd[0], tmp_path / "holed.csv", *cmd[1:]]), "MISSING_VALUES")


def test_huge_doses_print_as_numbers_without_a_raw_warning(log: Path, tmp_path: Path) -> None:
    """Doses of 1e300 (an axis in other units) printed a raw numpy RuntimeWarning (a float32
    cast overflowing) and every level as a 301-digit integer."""
    import re
    import warnings

    df = pd.read_csv(log)
    df["wd"] = df["wd"] * 1e300
    df.to_csv(tmp_path / "huge.csv", index=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = cli(["dose", tmp_path / "huge.csv", "--by", "wd"])
    assert out.exit_code in (0, 1), out
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert "Warning" not in out.stderr
    assert not re.search(r"\d{17,}", out.stdout), out.stdout  # no number past 1e16 in digits
    assert "8e+299" in out.stdout  # the level 0.8 * 1e300, printed as a number


@pytest.mark.parametrize(("args", "code"), [
    # the accuracy is the clock a precursor is timed against ("not a per-step column" before)
    (["precursor", "{log}", "--signal", "test_acc"], "RESERVED_COLUMN"),
    # a misspelt signal or mediator is named as check names a misspelt --metric
    (["precursor", "{log}", "--signal", "sgi"], "METRIC_NOT_FOUND"),
    (["dose", "{log}", "--by", "wd", "--mediator", "mde", "--baseline", "wd=0.1",
      "--raised", "wd=0.8", "--sweep", "seed"], "METRIC_NOT_FOUND"),
    # one column as both arms and pairs ("several runs with the same conditions" before)
    (["compare", "{log}", "--by", "wd", "--pair", "wd", "--arms", "0.1,0.8"], "INVALID_OPTION"),
])
def test_a_claim_column_in_the_wrong_role_is_named_for_its_role(log: Path, args: list[str],
                                                                  code: str) -> None:
    expect_error(cli([a.format(log=log) for a in args]), code)
