"""Header-less numeric text (``.txt``, ``.dat``, ``.log``): read when ``--columns`` names the
columns, refused with a proposal without it, never read when a line is not numbers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from grokaudit.adapters import read_log
from grokaudit.cli import cli
from grokaudit.errors import ConfigError, ErrorCode, LogFormatError

COLUMNS = ("step", "train_acc", "test_acc", "emb_erank")


def _savetxt(path: Path, sweep: pd.DataFrame, delimiter: str) -> pd.DataFrame:
    run = str(sweep["run"].iloc[0])
    g = sweep[sweep["run"] == run][list(COLUMNS)]
    np.savetxt(path, g.to_numpy(), delimiter=delimiter, fmt=["%d", "%.17g", "%.17g", "%.17g"])
    out: pd.DataFrame = g.reset_index(drop=True)
    return out


@pytest.mark.parametrize(("suffix", "delimiter"), [(".txt", "\t"), (".dat", " "),
                                                   (".log", ",")])
def test_columns_names_a_headerless_file(tmp_path: Path, sweep: pd.DataFrame, suffix: str,
                                         delimiter: str) -> None:
    p = tmp_path / f"curve{suffix}"
    ref = _savetxt(p, sweep, delimiter)
    t = read_log(p, layout={"columns": COLUMNS}).to_pandas()
    assert list(t["run"].unique()) == ["curve"]
    np.testing.assert_array_equal(t["step"].to_numpy(), ref["step"].to_numpy())
    np.testing.assert_array_equal(t["test_acc"].to_numpy(), ref["test_acc"].to_numpy())
    np.testing.assert_array_equal(t["train_acc"].to_numpy(), ref["train_acc"].to_numpy())


def test_without_columns_it_is_refused_with_the_count(tmp_path: Path,
                                                      sweep: pd.DataFrame) -> None:
    p = tmp_path / "curve.txt"
    _savetxt(p, sweep, "\t")
    with pytest.raises(LogFormatError) as e:
        read_log(p)
    assert e.value.code is ErrorCode.MISSING_COLUMN
    r = CliRunner().invoke(cli, ["inspect", str(p)])
    assert r.exit_code == 2 and "--columns" in r.stderr and "[MISSING_COLUMN]" in r.stderr
    r = CliRunner().invoke(cli, ["check", str(p), "--columns", ",".join(COLUMNS),
                                 "--metric", "emb_erank", "--json", "-"])
    assert r.exit_code in (0, 1), r.output
    assert json.loads(r.stdout)["summary"]["exit_code"] == r.exit_code


def test_a_wrong_count_of_names_is_refused(tmp_path: Path, sweep: pd.DataFrame) -> None:
    p = tmp_path / "curve.txt"
    _savetxt(p, sweep, "\t")
    with pytest.raises(ConfigError) as e:
        read_log(p, layout={"columns": ("step", "test_acc")})
    assert e.value.code is ErrorCode.INVALID_OPTION


@pytest.mark.parametrize("text", ["step loss\n0 1.0\n1 0.5\n",      # a header
                                  "0 1.0\n1 0.5 0.2\n",             # another count
                                  "0 1.0\nepoch done\n",            # a word
                                  "[0] 1.0\n[1] 0.5\n"])            # not numbers
def test_lines_that_are_not_all_numbers_are_no_such_file(tmp_path: Path, text: str) -> None:
    p = tmp_path / "curve.txt"
    p.write_text(text)
    for layout in (None, {"columns": ("step", "loss")}):
        with pytest.raises(LogFormatError) as e:
            read_log(p, layout=layout)
        assert e.value.code is ErrorCode.UNKNOWN_FORMAT


def test_whole_numbers_beyond_int64_stay_numbers(tmp_path: Path) -> None:
    """A column of 1e19 read as int64 wrapped to −2**63: an internal error (the review)."""
    p = tmp_path / "big.txt"
    p.write_text("0 0.1 0.1 1e19\n100 0.5 0.9 2e19\n200 0.9 1.0 3e19\n300 1.0 1.0 3e19\n")
    r = CliRunner().invoke(cli, ["inspect", str(p), "--columns", "step,test_acc,train_acc,nbytes",
                                 "--json", "-"])
    assert r.exit_code == 0, r.output  # read (an internal error, exit 2, before)
    assert "nbytes" in {c["name"] for c in json.loads(r.stdout)["columns"]}
