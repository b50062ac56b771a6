"""Hostile options and config files: every invalid threshold or fail_on is exit 2 with its
ErrorCode — never a green gate. The log used has critical findings (exit 1), so an invalid
value that were silently ignored or read as "none" would show as exit 0 here."""

from __future__ import annotations

import json
import math
from pathlib import Path

import grokaudit
import numpy as np
import pytest

# hypothesis (the `test` extra) drives some tests here and its profiles are imported: without it
# the whole module skips, with this reason (issue 23: a venv with no extra skips, never fails)
pytest.importorskip("hypothesis", reason="hypothesis is not installed (the `test` extra)")

from grokaudit.adversarial_suite import profiles
from grokaudit.config import INT_MAX, RANGES, AuditConfig, make_config
from grokaudit.errors import ConfigError, ErrorCode
from grokaudit.options import THRESHOLD_FLAGS
from grokaudit.reasons import Reason
from helpers.hostile import (
    FAILING_ARGS,
    cli,
    expect_audit,
    expect_error,
    expect_error_or_usage,
    sub,
    sweep_df,
    write_parquet,
)
from hypothesis import assume, example, given
from hypothesis import strategies as st

OOR = ErrorCode.OPTION_OUT_OF_RANGE
#: flag -> (config field, is integer) for every numeric option the CLI has
FLAGS: dict[str, tuple[str, bool]] = {flag: (field, typ is int)
                                      for flag, field, typ, _ in THRESHOLD_FLAGS}
FLAGS["--acc-scale"] = ("acc_scale", False)
DEFAULTS = AuditConfig()
REASONS = sorted(r.value for r in Reason)
MODES = ("default", "none", "warning")


def _is_int(field: str) -> bool:
    return isinstance(getattr(DEFAULTS, field), int) and not isinstance(
        getattr(DEFAULTS, field), bool)


def _cross_ok(field: str, v: float) -> bool:
    """A value valid alone that also keeps the two cross-field rules with the defaults."""
    if field == "floor_frac":
        return v <= DEFAULTS.max_floor_frac
    if field == "max_floor_frac":
        return v >= DEFAULTS.floor_frac
    if field == "flat_threshold":
        return v < DEFAULTS.mono_threshold
    if field == "mono_threshold":
        return v > DEFAULTS.flat_threshold
    return True


@st.composite
def invalid_numbers(draw: st.DrawFn, field: str) -> float | int:
    rng = RANGES[field]
    if _is_int(field):
        pool = [st.integers(min_value=-(10**40), max_value=int(rng.lo) - 1),
                st.integers(min_value=int(rng.hi) + 1, max_value=10**40)]
        return draw(st.one_of(*pool))
    special = [math.nan, math.inf, -math.inf]
    if rng.lo_open:
        special.append(rng.lo)
    if rng.hi_open and math.isfinite(rng.hi):
        special.append(rng.hi)
    if math.isfinite(rng.hi):
        special.append(rng.hi * 10 + 1)
    v = draw(st.one_of(st.sampled_from(special),
                       st.floats(allow_nan=False, allow_infinity=False, width=64)))
    assume(not rng.contains(v))
    return v


@st.composite
def valid_numbers(draw: st.DrawFn, field: str) -> float | int:
    rng = RANGES[field]
    if _is_int(field):
        v: float = draw(st.integers(min_value=int(rng.lo), max_value=int(rng.hi)))
    else:
        hi = rng.hi if math.isfinite(rng.hi) else 1e12
        v = draw(st.floats(min_value=rng.lo, max_value=hi, exclude_min=rng.lo_open,
                           exclude_max=rng.hi_open and math.isfinite(rng.hi),
                           allow_nan=False, allow_infinity=False))
    assume(rng.contains(float(v)) and _cross_ok(field, v))
    return v


def _fmt(v: float | int) -> str:
    return str(v) if isinstance(v, int) else repr(float(v))


# ------------------------------------------------------------------------------------------
# flags
# ------------------------------------------------------------------------------------------

def test_reference_log_fails_without_options(failing_log: Path, clean_dir: Path) -> None:
    """The premise of this module: the log has critical findings."""
    expect_audit(cli(["check", failing_log, *FAILING_ARGS], cwd=clean_dir), 1)


@profiles.scaled(0.5)
@given(data=st.data(), flag=st.sampled_from(sorted(FLAGS)))
@example(data=None, flag="--sustain")  # 10**30 below
def test_invalid_threshold_flag_is_exit_2_never_green(failing_log: Path, clean_dir: Path,
                                                      data: st.DataObject | None,
                                                      flag: str) -> None:
    field, is_int = FLAGS[flag]
    v = 10**30 if data is None else data.draw(invalid_numbers(field), label="value")
    out = cli(["check", failing_log, *FAILING_ARGS, f"{flag}={_fmt(v)}"], cwd=clean_dir)
    assert out.exit_code == 2, f"{flag}={v!r} did not exit 2:\n{out}"
    if not is_int or isinstance(v, int):
        want = (OOR,) if isinstance(v, int) or math.isfinite(v) else (
            OOR, ErrorCode.INVALID_OPTION)
        expect_error_or_usage(out, *want)


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "+inf", "1e309", "-1e309",
                                   "Infinity"])
@pytest.mark.parametrize("flag", ["--grok-threshold", "--mem-threshold", "--rel-tol",
                                  "--abs-tol", "--acc-scale", "--large-lag", "--eps",
                                  "--transient-threshold", "--min-abs-drop"])
def test_non_finite_float_flags(failing_log: Path, clean_dir: Path, flag: str,
                                value: str) -> None:
    out = cli(["check", failing_log, *FAILING_ARGS, f"{flag}={value}"], cwd=clean_dir)
    expect_error(out, OOR, ErrorCode.INVALID_OPTION)


@pytest.mark.parametrize("value", [str(10**30), str(INT_MAX + 1), "-1", "0",
                                   str(2**63), str(-(2**63) - 1)])
@pytest.mark.parametrize("flag", ["--sustain", "--smooth", "--min-floor-points"])
def test_out_of_range_integer_flags(failing_log: Path, clean_dir: Path, flag: str,
                                    value: str) -> None:
    out = cli(["check", failing_log, *FAILING_ARGS, f"{flag}={value}"], cwd=clean_dir)
    expect_error(out, OOR)


def test_sustain_10_pow_30_real_process(failing_log: Path, clean_dir: Path) -> None:
    out = sub(["check", failing_log, *FAILING_ARGS, "--sustain", str(10**30)], cwd=clean_dir)
    expect_error(out, OOR)


@profiles.scaled(0.2)
@given(data=st.data(), flag=st.sampled_from(sorted(set(FLAGS) - {"--acc-scale"})))
def test_valid_threshold_flag_is_an_audit(failing_log: Path, clean_dir: Path,
                                         data: st.DataObject, flag: str) -> None:
    field, _ = FLAGS[flag]
    v = data.draw(valid_numbers(field), label="value")
    out = cli(["check", failing_log, *FAILING_ARGS, f"{flag}={_fmt(v)}"], cwd=clean_dir)
    expect_audit(out)


# ------------------------------------------------------------------------------------------
# fail_on
# ------------------------------------------------------------------------------------------

def _fail_on_valid(value: str) -> bool:
    tokens = [t.strip() for t in value.split(",") if t.strip()]
    if not tokens:
        return False
    if any(t.lower() in MODES for t in tokens):
        return len(tokens) == 1
    return all(t.upper() in REASONS for t in tokens)


_token = st.one_of(
    st.sampled_from(REASONS + list(MODES)),
    st.sampled_from(REASONS + list(MODES)).map(str.lower),
    st.sampled_from(REASONS).map(lambda r: r[:-1] or "X"),  # a typo: one letter short
    st.sampled_from(REASONS).map(lambda r: r.replace("_", "-")),
    st.text(min_size=0, max_size=12),
)
fail_on_values = st.lists(_token, min_size=0, max_size=4).flatmap(
    lambda ts: st.sampled_from([",", ", ", " ,", ",,"]).map(lambda sep: sep.join(ts)))


@profiles.scaled(0.5)
@given(value=fail_on_values)
@example(value="SNAPSHOT_TRANSIET")
@example(value="none,warning")
@example(value="")
@example(value=" , ")
@example(value="none,SNAPSHOT_TRANSIENT")
@example(value="snapshot_transient")
@example(value="NONE")
def test_fail_on_flag(failing_log: Path, clean_dir: Path, value: str) -> None:
    assume("\x00" not in value)
    out = cli(["check", failing_log, *FAILING_ARGS, f"--fail-on={value}"], cwd=clean_dir)
    if not _fail_on_valid(value):
        expect_error(out, ErrorCode.INVALID_FAIL_ON)
        return
    expect_audit(out)
    tokens = [t.strip() for t in value.split(",") if t.strip()]
    if tokens[0].lower() == "none":
        assert out.exit_code == 0, str(out)
    elif tokens[0].lower() in ("default", "warning") or "SNAPSHOT_TRANSIENT" in {
            t.upper() for t in tokens}:
        assert out.exit_code == 1, str(out)


@pytest.mark.parametrize("value", ["SNAPSHOT_TRANSIET", "none,warning", "", ",",
                                   "default,SNAPSHOT_TRANSIENT", "warnings", "critical",
                                   "SNAPSHOT_TRANSIENT,\x1b[32mOK"])
@pytest.mark.parametrize("command", ["onset", "transition", "precursor", "compare", "dose"])
def test_fail_on_on_claim_commands(failing_log: Path, clean_dir: Path, command: str,
                                   value: str) -> None:
    extra = {"precursor": ["--signal", "emb_pr"], "compare": ["--by", "arch", "--pair",
                                                             "seed"]}.get(command,
                                                                          ["--by", "wd"])
    out = cli([command, failing_log, *extra, f"--fail-on={value}"], cwd=clean_dir)
    expect_error(out, ErrorCode.INVALID_FAIL_ON)


@pytest.mark.parametrize("args", [
    ["--grok-threshold=nan"], ["--mem-threshold=inf"], ["--grok-threshold=0"],
    ["--grok-threshold=1.5"], ["--thresholds", "0.9,nan"], ["--thresholds", "0.9,inf"],
    ["--thresholds", "0.9,abc"], ["--acc-scale=-100"],
])
def test_invalid_numbers_on_onset(failing_log: Path, clean_dir: Path, args: list[str]) -> None:
    out = cli(["onset", failing_log, "--by", "wd", *args], cwd=clean_dir)
    expect_error(out, OOR, ErrorCode.INVALID_OPTION)


@pytest.mark.parametrize("args", [["--level", "1.5"], ["--level", "nan"], ["--seed", "-1"],
                                  ["--n-resamples", "0"], ["--n-resamples", str(10**30)]])
def test_click_ranges_on_claims(failing_log: Path, clean_dir: Path, args: list[str]) -> None:
    out = cli(["transition", failing_log, "--by", "wd", *args], cwd=clean_dir)
    expect_error_or_usage(out, OOR, ErrorCode.INVALID_OPTION)


@pytest.mark.parametrize("value", ["", " ", ",", " , "])
@pytest.mark.parametrize("command,args", [
    ("check", ["--by"]), ("check", ["--cell"]), ("check", ["--metric"]),
    ("inspect", ["--metric"]), ("watch", ["--once", "--by"]),
    ("transition", ["--by"]), ("transition", ["--by", "wd", "--cell"]),
    ("onset", ["--by"]), ("onset", ["--by", "wd", "--phase-map"]),
    ("dose", ["--by", "wd", "--sweep"]), ("dose", ["--by", "wd", "--mediator"]),
    ("precursor", ["--signal"]), ("precursor", ["--signal", "emb_pr", "--placebo"]),
    ("compare", ["--by", "arch", "--pair"]),
    ("compare", ["--by", "arch", "--pair", "seed", "--arms"]),
])
def test_blank_column_option_is_an_error_not_its_default(failing_log: Path, clean_dir: Path,
                                                         command: str, args: list[str],
                                                         value: str) -> None:
    """``--metric "$METRIC"`` with the variable unset: read as not given, it would audit every
    metric (or the detected axis, or no cell split) without a word."""
    extra = FAILING_ARGS if command == "check" else []
    out = cli([command, failing_log, *extra, *args, value], cwd=clean_dir)
    expect_error(out, ErrorCode.INVALID_OPTION)


@pytest.mark.parametrize("flag", ["--step-from", "--columns", "--long", "--conditions-from",
                                  "--on", "--step-scale"])
@pytest.mark.parametrize("value", ["", "  "])
def test_a_blank_shape_option_is_an_error_not_the_option_left_out(
        failing_log: Path, clean_dir: Path, flag: str, value: str) -> None:
    """``--step-from "$MODE"`` with the variable unset was read as the option left out (only
    ``--step-scale`` refused a blank): on a log with steps the audit ran as if nothing had
    been asked. Every shape option refuses a blank value."""
    out = cli(["check", failing_log, *FAILING_ARGS, flag, value], cwd=clean_dir)
    expect_error(out, ErrorCode.INVALID_OPTION)


def test_a_trailing_comma_in_a_column_list_is_still_the_list(failing_log: Path,
                                                             clean_dir: Path) -> None:
    """Only a value that names no column at all is refused: ``--cell arch,`` is ``--cell
    arch``."""
    base = ["check", failing_log, "--by", "wd", "--metric", "emb_pr", "--json", "-"]
    a = cli([*base, "--cell", "arch,"], cwd=clean_dir)
    b = cli([*base, "--cell", "arch"], cwd=clean_dir)
    assert a.exit_code == b.exit_code == 1, f"{a}\n{b}"
    ja, jb = json.loads(a.stdout), json.loads(b.stdout)
    assert ja["config"]["cell"] == jb["config"]["cell"] == ["arch"]
    for key in ("summary", "studies", "findings"):  # the trail records each argv as typed
        assert ja[key] == jb[key], key


# ------------------------------------------------------------------------------------------
# config files
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("body, codes", [
    ('fail_on = "SNAPSHOT_TRANSIET"\n', [ErrorCode.INVALID_FAIL_ON]),
    ('fail_on = "none,warning"\n', [ErrorCode.INVALID_FAIL_ON]),
    ('fail_on = ""\n', [ErrorCode.INVALID_FAIL_ON]),
    ("fail_on = []\n", [ErrorCode.INVALID_FAIL_ON]),
    ('fail_on = ["none", "SNAPSHOT_TRANSIENT"]\n', [ErrorCode.INVALID_FAIL_ON]),
    ("fail_on = 0\n", [ErrorCode.INVALID_FAIL_ON, ErrorCode.INVALID_OPTION]),
    ("fail_on = false\n", [ErrorCode.INVALID_FAIL_ON, ErrorCode.INVALID_OPTION]),
    ("fail-on = 'SNAPSHOT_TRANSIET'\n", [ErrorCode.INVALID_FAIL_ON]),
    ("grok_treshold = 0.5\n", [ErrorCode.UNKNOWN_OPTION]),
    ("failon = 'none'\n", [ErrorCode.UNKNOWN_OPTION]),
    ("grok_threshold = nan\n", [OOR]),
    ("grok_threshold = inf\n", [OOR]),
    ("grok_threshold = -0.5\n", [OOR]),
    ("mem_threshold = 0\n", [OOR]),
    ("acc_scale = 0\n", [OOR]),
    ("acc_scale = -inf\n", [OOR]),
    ("sustain = 1e30\n", [OOR, ErrorCode.INVALID_OPTION]),
    (f"sustain = {2**63 - 1}\n", [OOR]),
    ("sustain = 3.5\n", [ErrorCode.INVALID_OPTION]),
    ("sustain = 'three'\n", [ErrorCode.INVALID_OPTION]),
    ("sustain = true\n", [ErrorCode.INVALID_OPTION]),
    ("smooth = 0\n", [OOR]),
    ("max_slope_bins = 2\n", [OOR]),
    ("max_slope_bins = 100000\n", [OOR]),
    ("drift_level = 1\n", [OOR]),
    ("endpoint_cv = 0\n", [OOR]),
    ("floor_frac = 0.5\nmax_floor_frac = 0.2\n", [OOR]),
    ("flat_threshold = 0.7\n", [OOR]),
    ("grok_threshold = '0.5; rm -rf /'\n", [ErrorCode.INVALID_OPTION]),
    ("grok_threshold = [0.5]\n", [ErrorCode.INVALID_OPTION]),
    ("grok_threshold = {x = 1}\n", [ErrorCode.INVALID_OPTION]),
    ("rule = 'crosing'\n", [ErrorCode.INVALID_OPTION]),
    ("profile = 'referenc'\n", [ErrorCode.INVALID_OPTION]),
    ("on_duplicate = 'ignore'\n", [ErrorCode.INVALID_OPTION]),
    ("stability_check = 'maybe'\n", [ErrorCode.INVALID_OPTION]),
    ("metrics = [1, [2]]\n", [ErrorCode.INVALID_OPTION]),
    ("by = 3\n", [ErrorCode.INVALID_OPTION]),
    ("extra = {}\n", [ErrorCode.UNKNOWN_OPTION]),
    ("[grokaudit]\nsustain = 3\n[other]\nx = 1\n", [ErrorCode.UNKNOWN_OPTION]),
    ("grok_threshold = 0.5\ngrok_threshold = 0.6\n", [ErrorCode.CONFIG_SYNTAX]),
    # one key in two spellings: the last one silently won (fail-on = none turned 53 critical
    # findings into exit 0)
    ("fail_on = 'default'\nfail-on = 'none'\n", [ErrorCode.INVALID_OPTION]),
    ("grok-threshold = 0.5\ngrok_threshold = 0.6\n", [ErrorCode.INVALID_OPTION]),
    ("grok_threshold = \n", [ErrorCode.CONFIG_SYNTAX]),
    ("[grokaudit\nsustain = 3\n", [ErrorCode.CONFIG_SYNTAX]),
    ("fail_on = 'SNAPSHOT_TRANSIENT\n", [ErrorCode.CONFIG_SYNTAX]),
])
def test_grokaudit_toml_in_working_dir(failing_log: Path, tmp_path: Path, body: str,
                                       codes: list[ErrorCode]) -> None:
    (tmp_path / "grokaudit.toml").write_text(body, encoding="utf-8")
    out = cli(["check", failing_log, *FAILING_ARGS], cwd=tmp_path)
    code, msg = expect_error(out, *codes)
    assert "grokaudit.toml" in msg, f"the message does not name the file: {msg!r}"


@pytest.mark.parametrize("body", [
    b"\xff\xfe not utf-8 \x00\n",
    b"[project\nname = 'x'\n",
    b"[tool.grokaudit]\nsustain = 3\n[tool.grokaudit]\nsustain = 4\n",
])
def test_unparsable_pyproject_in_working_dir(failing_log: Path, tmp_path: Path,
                                             body: bytes) -> None:
    """An unparsable pyproject.toml is exit 2 naming the file (its settings would be
    silently ignored otherwise)."""
    (tmp_path / "pyproject.toml").write_bytes(body)
    out = cli(["check", failing_log, *FAILING_ARGS], cwd=tmp_path)
    _, msg = expect_error(out, ErrorCode.CONFIG_SYNTAX)
    assert "pyproject.toml" in msg


def test_unparsable_config_names_the_line(failing_log: Path, tmp_path: Path) -> None:
    (tmp_path / "grokaudit.toml").write_text("sustain = 3\nrel_tol = 0.05\ngrok_threshold = = 1\n")
    out = sub(["check", failing_log, *FAILING_ARGS], cwd=tmp_path)
    _, msg = expect_error(out, ErrorCode.CONFIG_SYNTAX)
    assert "grokaudit.toml" in msg and "3" in msg.replace(str(tmp_path), "")


@pytest.mark.parametrize("table, codes", [
    ('[tool.grokaudit]\nfail_on = "SNAPSHOT_TRANSIET"\n', [ErrorCode.INVALID_FAIL_ON]),
    ("[tool.grokaudit]\ngrok-treshold = 0.5\n", [ErrorCode.UNKNOWN_OPTION]),
    ("[tool.grokaudit]\nsustain = 1e30\n", [OOR, ErrorCode.INVALID_OPTION]),
    ('[tool]\ngrokaudit = "fail_on=none"\n', [ErrorCode.CONFIG_SYNTAX]),
])
def test_pyproject_tool_table(failing_log: Path, tmp_path: Path, table: str,
                              codes: list[ErrorCode]) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n" + table)
    out = cli(["check", failing_log, *FAILING_ARGS], cwd=tmp_path)
    expect_error(out, *codes)


def test_broken_config_in_a_parent_folder(failing_log: Path, tmp_path: Path) -> None:
    (tmp_path / "grokaudit.toml").write_text("fail_on = 'nonee'\n")
    (tmp_path / "a" / "b").mkdir(parents=True)
    out = cli(["check", failing_log, *FAILING_ARGS], cwd=tmp_path / "a" / "b")
    expect_error(out, ErrorCode.INVALID_FAIL_ON)


@pytest.mark.parametrize("how", ["missing", "directory", "binary"])
def test_explicit_config_option(failing_log: Path, tmp_path: Path, how: str) -> None:
    p = tmp_path / "conf.toml"
    if how == "directory":
        p.mkdir()
    elif how == "binary":
        p.write_bytes(b"\x00\x01\x02PK\x03\x04")
    out = cli(["check", failing_log, *FAILING_ARGS, "--config", p], cwd=tmp_path)
    expect_error_or_usage(out, ErrorCode.CONFIG_NOT_FOUND, ErrorCode.CONFIG_SYNTAX)


def test_valid_config_file_is_applied(failing_log: Path, tmp_path: Path) -> None:
    (tmp_path / "grokaudit.toml").write_text("fail_on = 'none'\n")
    expect_audit(cli(["check", failing_log, *FAILING_ARGS], cwd=tmp_path), 0)
    (tmp_path / "grokaudit.toml").write_text("fail_on = ['snapshot_transient']\n")
    expect_audit(cli(["check", failing_log, *FAILING_ARGS], cwd=tmp_path), 1)


@profiles.scaled(0.3)
@given(data=st.data(), field=st.sampled_from(sorted(RANGES)))
def test_invalid_value_in_config_file(failing_log: Path, tmp_path_factory: pytest.TempPathFactory,
                                      data: st.DataObject, field: str) -> None:
    v = data.draw(invalid_numbers(field), label="value")
    lit = str(v) if isinstance(v, int) else (
        "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v))
    d = tmp_path_factory.mktemp("cfg")
    (d / "grokaudit.toml").write_text(f"{field} = {lit}\n")
    out = cli(["check", failing_log, *FAILING_ARGS], cwd=d)
    expect_error(out, OOR, ErrorCode.INVALID_OPTION)


def test_suite_with_a_broken_config(tmp_path: Path) -> None:
    p = tmp_path / "grokaudit.toml"
    p.write_text("fail_on = 'SNAPSHOT_TRANSIET'\n")
    out = cli(["suite", "--config", p, "--max-examples", "0"], cwd=tmp_path)
    expect_error(out, ErrorCode.INVALID_FAIL_ON)
    p.write_text("sustain = \n")
    out = cli(["suite", "--config", p, "--max-examples", "0"], cwd=tmp_path)
    expect_error(out, ErrorCode.CONFIG_SYNTAX)


# ------------------------------------------------------------------------------------------
# the Python API: one validator
# ------------------------------------------------------------------------------------------

@profiles.scaled(0.5)
@given(data=st.data(), field=st.sampled_from(sorted(RANGES)))
def test_api_invalid_numbers_raise_config_error(data: st.DataObject, field: str) -> None:
    v = data.draw(invalid_numbers(field), label="value")
    for build in (lambda: make_config(**{field: v}), lambda: AuditConfig(**{field: v})):
        with pytest.raises(ConfigError) as exc:
            build()
        assert exc.value.code in (OOR, ErrorCode.INVALID_OPTION), exc.value


@profiles.scaled(0.3)
@given(data=st.data(), field=st.sampled_from(sorted(RANGES)))
def test_api_valid_numbers_accepted(data: st.DataObject, field: str) -> None:
    v = data.draw(valid_numbers(field), label="value")
    # the loss levels are valid only with a loss criterion (and full_below ≤ grok_below)
    extra = ({"grok_on": "test_loss", "grok_below": v} if field in ("grok_below", "full_below")
             else {})
    assert getattr(make_config(**{**extra, field: v}), field) == v


@pytest.mark.parametrize("kw, code", [
    ({"fail_on": "SNAPSHOT_TRANSIET"}, ErrorCode.INVALID_FAIL_ON),
    ({"fail_on": ("none", "warning")}, ErrorCode.INVALID_FAIL_ON),
    ({"fail_on": ()}, ErrorCode.INVALID_FAIL_ON),
    ({"sustain": 10**30}, OOR),
    ({"sustain": True}, ErrorCode.INVALID_OPTION),
    ({"sustain": 2.5}, ErrorCode.INVALID_OPTION),
    ({"grok_threshold": "0.9"}, ErrorCode.INVALID_OPTION),
    ({"grok_threshold": float("nan")}, OOR),
    ({"rule": "cross"}, ErrorCode.INVALID_OPTION),
    ({"metrics": "emb_pr"}, ErrorCode.INVALID_OPTION),
    ({"cell": ("",)}, ErrorCode.INVALID_OPTION),
])
def test_api_auditconfig_direct(kw: dict, code: ErrorCode) -> None:
    with pytest.raises(ConfigError) as exc:
        AuditConfig(**kw)
    assert exc.value.code == code, exc.value


@pytest.mark.parametrize("kw, code", [
    ({"fail_on": "SNAPSHOT_TRANSIET"}, ErrorCode.INVALID_FAIL_ON),
    ({"grok_threshold": float("inf")}, OOR),
    ({"sustain": 10**30}, OOR),
    ({"grok_treshold": 0.5}, ErrorCode.UNKNOWN_OPTION),
])
def test_api_audit_path_and_table(failing_log: Path, kw: dict, code: ErrorCode) -> None:
    import pandas as pd

    with pytest.raises(ConfigError) as exc:
        grokaudit.audit_path(failing_log, by="wd", metrics=["emb_pr"], cell=["arch"], **kw)
    assert exc.value.code == code
    with pytest.raises(ConfigError) as exc:
        grokaudit.audit_table(pd.read_parquet(failing_log), by="wd", metrics=["emb_pr"],
                              cell=["arch"], **kw)
    assert exc.value.code == code
    cfg = make_config(by="wd", metrics=["emb_pr"], cell=["arch"])
    with pytest.raises(ConfigError) as exc:
        grokaudit.audit_path(failing_log, cfg, **kw)
    assert exc.value.code == code


def test_api_file_values_typo() -> None:
    with pytest.raises(ConfigError) as exc:
        make_config(file_values={"grok_treshold": 0.5})
    assert exc.value.code == ErrorCode.UNKNOWN_OPTION
    with pytest.raises(ConfigError) as exc:
        make_config(file_values={"fail_on": "SNAPSHOT_TRANSIET"})
    assert exc.value.code == ErrorCode.INVALID_FAIL_ON


@pytest.mark.parametrize("cell", [("wd",), ("arch", "wd")])
def test_the_axis_is_never_also_a_cell_column(cell: tuple[str, ...]) -> None:
    # found by a hostile hunt: --by wd --cell wd was accepted, each study held one value of
    # its own axis, and check exited 1 with nothing to order
    with pytest.raises(ConfigError) as exc:
        make_config(by="wd", cell=list(cell))
    assert exc.value.code is ErrorCode.INVALID_OPTION and exc.value.option == "cell"
    assert make_config(by="wd", cell=["arch"]).cell == ("arch",)


@pytest.mark.parametrize("cmd", ["onset", "dose", "transition", "compare"])
def test_a_claim_axis_is_never_also_a_cell_column(tmp_path: Path, cmd: str) -> None:
    # the claims take --by and --cell outside the audit's config: the design refuses it
    log = tmp_path / "log.parquet"
    write_parquet(sweep_df(), log)
    args = [cmd, str(log), "--by", "wd", "--cell", "wd",
            *(["--pair", "seed"] if cmd == "compare" else [])]
    expect_error(cli(args, cwd=tmp_path), ErrorCode.INVALID_OPTION)


def test_a_smoothing_wider_than_the_runs_is_the_smoothing_of_their_length(tmp_path: Path):
    """``--smooth 1000000`` on runs of a few hundred points: each point's median of every
    point so far, the audit ``--smooth`` of the runs' length gives (the width past them adds
    only padding), in the time of that audit; and a metric near the float range's edge (two
    middle values of 1.5e308) is not read as ``inf``."""
    df = sweep_df()
    m = df["emb_erank"].to_numpy()
    df["emb_erank"] = m * (1.5e308 / np.nanmax(np.abs(m)))  # the largest value 1.5e308
    p = write_parquet(df, tmp_path / "log.parquet")
    longest = int(df.groupby("run").size().max())
    outs = []
    for width in (1_000_000, longest):
        got = cli(["check", p, "--by", "wd", "--metric", "emb_erank", "--smooth", width,
                   "--json", "-"])
        assert got.exit_code in (0, 1), got.stdout + got.stderr
        outs.append(json.loads(got.stdout))
    for out in outs:
        out.pop("trail")
        out["config"].pop("smooth")
    assert outs[0] == outs[1]
    peaks = [r["m_peak"] for s in outs[0]["studies"] for r in s["runs"]
             if r["m_peak"] is not None]
    assert peaks and all(isinstance(v, float) and math.isfinite(v) for v in peaks)
