"""Injection: run ids, condition values, metric names, option values and file names that hold
ESC sequences, carriage returns, newlines, C1 controls, bidi overrides and a forged
``result: no critical finding (exit 0)`` line. The terminal shows them escaped (one logical
line per printed line), the JSON keeps them exactly, the HTML report escapes markup, and an
error that quotes them is one escaped line."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

# hypothesis (the `test` extra) drives some tests here and its profiles are imported: without it
# the whole module skips, with this reason (issue 23: a venv with no extra skips, never fails)
pytest.importorskip("hypothesis", reason="hypothesis is not installed (the `test` extra)")

from grokaudit.adversarial_suite import profiles
from grokaudit.errors import ErrorCode
from helpers.hostile import (
    FORGED,
    RAW_CONTROL,
    assert_unchanged,
    cli,
    expect_audit,
    expect_audit_verdict,
    expect_error,
    json_values,
    load_json,
    no_forged_lines,
    snapshot,
    sub,
    sweep_df,
    write_parquet,
)
from hypothesis import given
from hypothesis import strategies as st

E = ErrorCode
EVIL = "\x1b[2J\x1b[31mred\r\n" + FORGED + "\n\x9b1m\u202etxt\u2028x\x07"
METRIC = "emb_erank" + EVIL
ARCH = "mlp" + EVIL


def evil_run(wd: float, seed: int) -> str:
    return f"run{wd}_{seed}{EVIL}"


def evil_df() -> pd.DataFrame:
    df = sweep_df(run_name=evil_run, arch=ARCH).rename(columns={"emb_erank": METRIC})
    short = df[df.run == df.run.iloc[0]].head(2).assign(run="short" + EVIL)  # too short
    return pd.concat([df, short], ignore_index=True)


@pytest.fixture
def evil_log(tmp_path: Path) -> Path:
    return write_parquet(evil_df(), tmp_path / "evil.parquet")


def _check_json(doc: object) -> None:
    vals = json_values(doc)
    strings = [v for v in vals if isinstance(v, str)]
    assert ARCH in strings, "the condition value was not preserved in the JSON"
    assert METRIC in strings, "the metric name was not preserved in the JSON"
    assert evil_run(1.0, 0) in strings, "the run id was not preserved in the JSON"


@pytest.mark.parametrize("extra", [[], ["-v"], ["-q"], ["--sensitivity"]])
def test_check_terminal_output_escaped(evil_log: Path, tmp_path: Path, extra: list) -> None:
    out = cli(["check", evil_log, "--cell", "arch", *extra], cwd=tmp_path)
    expect_audit(out)
    no_forged_lines(out.stdout, out.exit_code)
    assert "\\x1b" in out.stdout or extra == ["-q"], "the hostile text was dropped, not escaped"


def test_check_real_process(evil_log: Path, tmp_path: Path) -> None:
    out = sub(["check", evil_log, "--cell", "arch", "-v", "--metric", METRIC], cwd=tmp_path)
    expect_audit(out)
    no_forged_lines(out.stdout, out.exit_code)


@pytest.mark.parametrize("to", ["-", "file"])
def test_check_json_keeps_values(evil_log: Path, tmp_path: Path, to: str) -> None:
    target = "-" if to == "-" else str(tmp_path / "r.json")
    out = cli(["check", evil_log, "--cell", "arch", "--json", target], cwd=tmp_path)
    assert out.exit_code in (0, 1) and out.exception is None and out.stderr == "", str(out)
    text = out.stdout if to == "-" else Path(target).read_text(encoding="utf-8")
    assert not RAW_CONTROL.search(text), "raw control characters in the JSON text"
    doc = json.loads(text)
    _check_json(doc)
    if to == "file":
        no_forged_lines(out.stdout, out.exit_code)


@pytest.mark.parametrize("command, expected", [
    # every run groks: no transition to locate; the short run is set aside and named
    (["transition", "--by", "wd", "--n-resamples", "20"],
     {"exit_code": 0, "findings": {"NO_TRANSITION", "TOO_SHORT"}}),
    # the sweep's metric settles after the grok: no specific precursor (critical for a claim)
    (["precursor", "--signal", METRIC, "--n-perm", "20"],
     {"exit_code": 1, "failing": {"PRECURSOR_NOT_SPECIFIC"},
      "findings": {"PEAK_AT_WINDOW_EDGE", "TOO_SHORT"}}),
])
def test_claim_commands_escape(evil_log: Path, tmp_path: Path, command: list,
                               expected: dict) -> None:
    name, *rest = command
    out = cli([name, evil_log, *rest, "-v"], cwd=tmp_path)
    expect_audit(out, expected["exit_code"])
    no_forged_lines(out.stdout, out.exit_code)
    out = cli([name, evil_log, *rest, "--json", "-"], cwd=tmp_path)
    assert not RAW_CONTROL.search(out.stdout)
    expect_audit_verdict(out, **expected)


def test_compare_with_hostile_arms(tmp_path: Path) -> None:
    df = sweep_df(wds=(1.0,), seeds=(0, 1, 2, 3, 4, 5))
    df["method"] = [("adamw" if s % 2 else "sgd" + EVIL) for s in df["seed"]]
    df["pair"] = df["seed"] // 2
    df["run"] = df["run"] + EVIL
    p = write_parquet(df.drop(columns=["seed"]), tmp_path / "c.parquet")
    out = cli(["compare", p, "--by", "method", "--pair", "pair", "-v"], cwd=tmp_path)
    expect_audit(out, 1)
    no_forged_lines(out.stdout, out.exit_code)
    # three pairs, two tied on the shared step grid: one usable pair, the exact test cannot
    # reach p < 0.05 (UNDERPOWERED, critical for a claim)
    out = cli(["compare", p, "--by", "method", "--pair", "pair", "--json", "-"], cwd=tmp_path)
    expect_audit_verdict(out, exit_code=1, failing={"UNDERPOWERED"},
                         findings={"PAIRS_WITHIN_RESOLUTION"})


def test_html_report_escapes_markup(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the report needs the [report] extra")
    xss = "<script>alert(1)</script>\"'><img src=x onerror=alert(2)>"
    df = sweep_df(run_name=lambda wd, s: f"r{wd}_{s}{xss}", arch="mlp" + xss + EVIL)
    df = df.rename(columns={"emb_erank": "emb_erank" + xss})
    p = write_parquet(df, tmp_path / "x.parquet")
    before = snapshot(tmp_path)
    out = cli(["report", p, "-o", "r.html", "--cell", "arch"], cwd=tmp_path)
    expect_audit(out)
    no_forged_lines(out.stdout, out.exit_code)
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "\x1b" not in html
    assert_unchanged(before, tmp_path, allow=[str(tmp_path / "r.html")])


def test_report_output_name_is_escaped(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the report needs the [report] extra")
    p = write_parquet(sweep_df(), tmp_path / "x.parquet")
    name = "r\x1b[2J\r\n" + FORGED + ".html"
    out = cli(["report", p, "-o", name], cwd=tmp_path)
    expect_audit(out)
    no_forged_lines(out.stdout, out.exit_code)
    out = cli(["check", p, "--report", "q" + name], cwd=tmp_path)
    expect_audit(out)
    no_forged_lines(out.stdout, out.exit_code)


def test_nul_in_run_ids_preserved(tmp_path: Path) -> None:
    """Run ids "r" and "r\\x00" are two runs; the JSON keeps both, distinct."""
    df = sweep_df(run_name=lambda wd, s: f"w{wd}" + "\x00" * s)
    p = write_parquet(df, tmp_path / "n.parquet")
    out = cli(["check", p, "--json", "-"], cwd=tmp_path)
    assert out.exit_code in (0, 1) and out.exception is None, str(out)
    strings = [v for v in json_values(json.loads(out.stdout)) if isinstance(v, str)]
    for name in df["run"].unique():
        assert name in strings, f"run id {name!r} not preserved in the JSON"


# -- errors that quote log content ------------------------------------------------------------

def _err(tmp_path: Path, df: pd.DataFrame, *codes: ErrorCode, args: tuple = ()) -> str:
    p = write_parquet(df, tmp_path / "e.parquet")
    out = cli(["check", p, *args], cwd=tmp_path)
    code, msg = expect_error(out, *codes)
    return msg


def test_condition_not_constant_in_a_hostile_run(tmp_path: Path) -> None:
    df = evil_df()
    df.loc[df.index[5], "arch"] = "other" + EVIL
    _err(tmp_path, df, E.NOT_CONSTANT_IN_RUN)


def test_seed_not_constant_in_a_hostile_run(tmp_path: Path) -> None:
    df = evil_df()
    df.loc[df.index[5], "seed"] = 99
    _err(tmp_path, df, E.NOT_CONSTANT_IN_RUN)


def test_duplicate_rows_in_a_hostile_run(tmp_path: Path) -> None:
    df = evil_df()
    dup = df.iloc[[3]].assign(test_acc=0.123)
    _err(tmp_path, pd.concat([df, dup], ignore_index=True), E.DUPLICATE_ROWS)


def test_negative_step_in_a_hostile_run(tmp_path: Path) -> None:
    df = evil_df()
    df.loc[df.index[3], "step"] = -5
    _err(tmp_path, df, E.NEGATIVE_STEP)


def test_inf_in_a_hostile_metric(tmp_path: Path) -> None:
    df = evil_df()
    df.loc[df.index[3], METRIC] = float("inf")
    _err(tmp_path, df, E.INFINITE_VALUE)


def test_mixed_scale_with_hostile_runs(tmp_path: Path) -> None:
    """A percent column with hostile run ids: read as percent, and the runs that never exceed
    1 are named in the warning, escaped."""
    df = evil_df()
    first = df.run == df.run.iloc[0]
    df.loc[first, "test_acc"] *= 100
    p = write_parquet(df, tmp_path / "e.parquet")
    out = cli(["check", p], cwd=tmp_path)
    expect_audit(out)
    no_forged_lines(out.stdout, out.exit_code)
    doc = load_json(cli(["check", p, "--json", "-"], cwd=tmp_path).stdout)
    (pct,) = [f for f in doc["findings"] if f["code"] == "ACCURACY_IN_PERCENT"
              and f["evidence"]["column"] == "test_acc"]
    assert pct["severity"] == "warning"
    assert pct["evidence"]["n_runs_at_most_1"] == df.run.nunique() - 1


def test_metric_not_found_lists_hostile_columns(tmp_path: Path) -> None:
    _err(tmp_path, evil_df(), E.METRIC_NOT_FOUND, args=("--metric", "nope"))


def test_hostile_option_values(evil_log: Path, tmp_path: Path) -> None:
    for args, codes in [
        (["--by", "wd" + EVIL], ()),
        (["--cell", "arch" + EVIL], ()),
        (["--metric", "x" + EVIL], (E.METRIC_NOT_FOUND,)),
        (["--fail-on", EVIL], (E.INVALID_FAIL_ON,)),
        (["--fail-on", "SNAPSHOT_TRANSIENT," + EVIL], (E.INVALID_FAIL_ON,)),
        (["--map", EVIL], (E.INVALID_OPTION,)),
        (["--cond", "wd=" + EVIL + "(("], (E.INVALID_OPTION,)),
        (["--format", EVIL], (E.UNKNOWN_FORMAT,)),
    ]:
        out = cli(["check", evil_log, *args], cwd=tmp_path)
        expect_error(out, *codes)


def test_hostile_file_names(tmp_path: Path) -> None:
    missing = tmp_path / ("no" + EVIL + ".parquet")
    expect_error(cli(["check", missing], cwd=tmp_path), E.FILE_NOT_FOUND)
    bad = tmp_path / ("bad" + EVIL.replace("/", "") + ".parquet")
    bad.write_bytes(b"not parquet at all")
    expect_error(cli(["check", bad], cwd=tmp_path), E.FILE_UNREADABLE)
    expect_error(sub(["check", bad], cwd=tmp_path), E.FILE_UNREADABLE)


def test_hostile_config_key(tmp_path: Path, evil_log: Path) -> None:
    (tmp_path / "grokaudit.toml").write_text('"a\\u001b[2J\\r\\nresult: ok" = 1\n')
    expect_error(cli(["check", evil_log], cwd=tmp_path), E.UNKNOWN_OPTION)
    (tmp_path / "grokaudit.toml").write_text('fail_on = "\\u001b[2J\\r\\nresult: ok"\n')
    expect_error(cli(["check", evil_log], cwd=tmp_path), E.INVALID_FAIL_ON)


# -- other formats ----------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl"])
def test_hostile_text_tables(tmp_path: Path, fmt: str) -> None:
    df = evil_df()
    p = tmp_path / f"e.{fmt}"
    if fmt == "jsonl":
        df.to_json(p, orient="records", lines=True)
    else:
        df.to_csv(p, index=False, sep="\t" if fmt == "tsv" else ",")
    out = cli(["check", p, "--cell", "arch", "-v", "--json", tmp_path / "r.json"], cwd=tmp_path)
    no_forged_lines(out.stdout, out.exit_code)
    # the audit of the Parquet log: the text readers keep the hostile values as they are. The
    # 2-row "short" run (the first rows of another run, under another id) is set aside as too
    # short by the CSV/TSV reader, read as that run's start (RUN_CONTINUED) by the JSONL one
    doc = expect_audit_verdict(
        out, json.loads((tmp_path / "r.json").read_text(encoding="utf-8")), exit_code=1,
        verdicts=["ONE_CLOCK_LARGE_LAG"], failing={"SNAPSHOT_TRANSIENT"},
        findings={"RUN_CONTINUED" if fmt == "jsonl" else "TOO_SHORT"})
    _check_json(doc)
    assert [s["study"] for s in doc["studies"]] == [{"arch": ARCH}]
    assert doc["input"]["metrics"] == [METRIC]


# -- generated run ids and condition values ------------------------------------------------------

_hostile_text = st.text(
    alphabet=st.one_of(st.characters(codec="utf-8", exclude_characters="\x00"),
                       st.sampled_from(list("\x1b\r\n\t\x07\x7f\x85\x9b\u2028\u202e\u2066"))),
    min_size=1, max_size=20)


@profiles.scaled(0.2)
@given(run_tag=_hostile_text, cond=_hostile_text)
def test_generated_hostile_names(tmp_path_factory: pytest.TempPathFactory, run_tag: str,
                                 cond: str) -> None:
    d = tmp_path_factory.mktemp("gen")
    df = sweep_df(seeds=(0, 1), run_name=lambda wd, s: f"{wd}/{s}/{run_tag}", arch=cond)
    p = write_parquet(df, d / "g.parquet")
    out = cli(["check", p, "--cell", "arch", "--json", d / "g.json"], cwd=d)
    expect_audit(out)
    no_forged_lines(out.stdout, out.exit_code)
    text = (d / "g.json").read_text(encoding="utf-8")
    assert not RAW_CONTROL.search(text)
    strings = [v for v in json_values(json.loads(text)) if isinstance(v, str)]
    assert cond in strings and f"1.0/0/{run_tag}" in strings


@pytest.mark.parametrize("batch", [1, 7, 1 << 16])
def test_json_written_in_pieces_escapes_as_the_whole_text(evil_log: Path, tmp_path: Path,
                                                          batch: int) -> None:
    """``--json`` is written batch by batch, each batch's text escaped on its own: with
    batches of one encoder chunk, of a few, or of many, the file is the whole text escaped
    (run ids, a metric and a condition carrying controls, U+2028 and bidi marks)."""
    import grokaudit
    from grokaudit.outputs import resolve_output
    from grokaudit.text import safe_json

    res = grokaudit.audit_path(evil_log, cell=["arch"])
    out = resolve_output(str(tmp_path / "r.json"), flag="--json")
    out.write_chunks(res.json_chunks(), transform=safe_json, batch=batch)
    text = (tmp_path / "r.json").read_text(encoding="utf-8")
    assert text == safe_json(res.to_json())
    assert not RAW_CONTROL.search(text) and "\u2028" not in text
    _check_json(json.loads(text))
