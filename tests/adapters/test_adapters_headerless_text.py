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


def _lines(n: int = 20) -> list[str]:
    return [f"{i * 10} {min(1, i / 5):.2f} {0.1 if i < 10 else 0.99}" for i in range(n)]


def test_a_step_beyond_2_53_is_refused_as_in_a_csv(tmp_path: Path) -> None:
    """Integers are read as integers, exactly: a step of 2**53 + 1 is out of range, as the
    same rows in a CSV are (found in round 6: rounded to 2**53 through float64, and kept)."""
    lines = _lines()
    lines[-1] = f"{2**53 + 1} 1.0 0.99"
    (tmp_path / "big.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "big.csv").write_text("step,train_acc,test_acc\n"
                                      + "\n".join(ln.replace(" ", ",") for ln in lines) + "\n")
    for name, extra in (("big.txt", ["--columns", "step,train_acc,test_acc"]), ("big.csv", [])):
        res = CliRunner().invoke(cli, ["check", str(tmp_path / name), *extra])
        assert res.exit_code == 2 and "[STEP_OUT_OF_RANGE]" in res.output, res.output


@pytest.mark.parametrize("cell", ["3_0", "\u0664\u0660", "\uff10.1", "1e", "0x10"])
def test_a_cell_that_is_no_ascii_number_makes_the_file_no_numeric_text(tmp_path: Path,
                                                                        cell: str) -> None:
    """Python's float() reads "3_0", Arabic-Indic and fullwidth digits: such a cell is no
    number of a header-less file (found in round 6: read as 30, 40, 0.1)."""
    lines = _lines()
    lines[4] = f"{cell} 0.8 0.1"
    p = tmp_path / "odd.txt"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(LogFormatError) as err:
        read_log(p, layout={"columns": ("step", "train_acc", "test_acc")})
    assert err.value.code == ErrorCode.UNKNOWN_FORMAT


def test_nan_and_inf_words_and_signed_exponents_stay_numbers(tmp_path: Path) -> None:
    lines = _lines()
    lines[3] = "30 nan 1E-1"
    lines[5] = "50 +1.0e+0 .99"
    p = tmp_path / "words.txt"
    p.write_text("\n".join(lines) + "\n")
    t = read_log(p, layout={"columns": ("step", "train_acc", "test_acc")}).to_pandas()
    got = t.sort_values("step").set_index("step")
    assert np.isnan(got.loc[30, "train_acc"]) and got.loc[30, "test_acc"] == 0.1
    assert got.loc[50, "train_acc"] == 1.0 and got.loc[50, "test_acc"] == 0.99
    lines[5] = "50 1.0 -Infinity"  # a number: refused for what it is, not as no number
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(LogFormatError) as err:
        read_log(p, layout={"columns": ("step", "train_acc", "test_acc")})
    assert err.value.code == ErrorCode.INFINITE_VALUE


def test_an_integer_of_thousands_of_digits_is_a_float_not_a_crash(tmp_path: Path) -> None:
    """Integers are read exactly up to 30 digits; a longer one (beyond int64, and beyond
    Python's digit limit for int()) is read as the float it rounds to, as before."""
    lines = [f"{i * 10} {0.1 if i < 10 else 0.99} {'1' * 5000 if i == 3 else 5}"
             for i in range(20)]
    p = tmp_path / "wide.txt"
    p.write_text("\n".join(lines) + "\n")
    t = read_log(p, layout={"columns": ("step", "test_acc", "big")})
    assert str(t.schema.field("big").type) == "double"
    assert str(t.schema.field("step").type) == "int64"


def test_other_files_of_a_folder_of_text_logs_are_named_not_dropped(tmp_path: Path,
                                                                    prov) -> None:  # type: ignore[no-untyped-def]
    """A folder of header-less logs beside their plots: the table reader names such files, the
    text reader dropped them without a word (found on a public log,
    LeoDreamer2004/Modular-Addition, whose result folder holds a PNG beside each run)."""
    for r in ("a", "b"):
        (tmp_path / f"{r}.txt").write_text("0 0.1 0.1\n10 0.9 0.2\n20 1.0 0.95\n")
    (tmp_path / "a.png").write_bytes(b"\x89PNG\r\n")
    t = read_log(tmp_path, layout={"columns": "step,train_acc,test_acc"})
    assert sorted(set(t.to_pandas().run)) == ["a", "b"]
    assert set(prov(t)["files_set_aside"]) == {"a.png"}


def test_a_shape_option_the_reader_does_not_read_is_refused_not_ignored(
        tmp_path: Path, sweep: pd.DataFrame) -> None:
    """``--columns`` on a CSV with a header changed nothing and passed silently; ``--step-from``
    on a format other than a table the same. Each is INVALID_OPTION. And ``--columns`` on a
    file no reader recognises gives the text reader's reason (its header line), where it gave
    the generic UNKNOWN_FORMAT."""
    csv_path = tmp_path / "log.csv"
    sweep.to_csv(csv_path, index=False)
    r = CliRunner().invoke(cli, ["check", str(csv_path), "--columns", "a,b,c"])
    assert r.exit_code == 2 and r.stderr.rstrip().endswith("[INVALID_OPTION]"), r.stderr
    with pytest.raises(ConfigError) as e:
        read_log(csv_path, layout={"columns": "a,b,c"})
    assert e.value.code is ErrorCode.INVALID_OPTION and e.value.option == "--columns"
    txt = tmp_path / "curve.txt"
    txt.write_text("0 0.1 0.1\n10 0.9 0.95\n")
    with pytest.raises(LogFormatError) as e2:  # --columns names a step: nothing to number
        read_log(txt, layout={"columns": "step,train_acc,test_acc", "step_from": "row"})
    assert e2.value.code is ErrorCode.INVALID_OPTION
    headed = tmp_path / "headed.txt"
    headed.write_text("Epoch Loss Acc\n0 1.0 0.1\n1 0.5 0.9\n")
    with pytest.raises(LogFormatError) as e3:
        read_log(headed, layout={"columns": "step,loss,test_acc"})
    assert e3.value.code is ErrorCode.UNKNOWN_FORMAT
    with pytest.raises(LogFormatError) as e4:
        read_log(headed, format="text", layout={"columns": "step,loss,test_acc"})
    assert str(e3.value) == str(e4.value)  # the text reader's own reason, not the generic one
