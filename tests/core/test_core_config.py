"""One validated configuration path: every threshold from flags, config files and the Python
API goes through one validator; fail_on accepts only known tokens."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from grokaudit import AuditConfig, ConfigError, make_config
from grokaudit.cli import cli
from grokaudit.config import RANGES, build_config, load_config_file, parse_fail_on, replace
from grokaudit.errors import ErrorCode

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "reference_runs" / "data" / "mlp_wd_sweep_p59.parquet"
ARGS = [str(LOG), "--by", "wd", "--metric", "emb_pr", "--cell", "arch"]


def _code(output: str) -> str | None:
    m = re.search(r"\[([A-Z_]+)\]\s*$", output.strip())
    return m.group(1) if m else None


@pytest.mark.parametrize("field", sorted(RANGES))
def test_every_range_rejects_nonfinite_and_outside_values(field: str) -> None:
    rng = RANGES[field]
    bad = [math.nan, math.inf, -math.inf, rng.lo - 1]
    if math.isfinite(rng.hi):
        bad.append(rng.hi + 1)
    if rng.lo_open:
        bad.append(rng.lo)
    is_int = isinstance(getattr(AuditConfig(), field), int)
    for v in bad:
        if is_int and not math.isfinite(v):
            v = 10**30 if v > 0 else -(10**30)
        with pytest.raises(ConfigError) as ei:
            make_config(**{field: v})
        assert ei.value.code in (ErrorCode.OPTION_OUT_OF_RANGE, ErrorCode.INVALID_OPTION)
        assert ei.value.option == field


def test_the_dataclass_and_replace_validate_too() -> None:
    with pytest.raises(ConfigError):
        AuditConfig(rel_tol=-0.1)
    with pytest.raises(ConfigError):
        replace(AuditConfig(), acc_scale=math.nan)
    with pytest.raises(ConfigError) as ei:
        AuditConfig(flat_threshold=0.7, mono_threshold=0.6)
    assert ei.value.code is ErrorCode.OPTION_OUT_OF_RANGE


@pytest.mark.parametrize("value,expected", [
    ("default", ("default",)), ("NONE", ("none",)), ("Warning", ("warning",)),
    ("snapshot_transient", ("SNAPSHOT_TRANSIENT",)),
    ("SNAPSHOT_TRANSIENT, floor_unstable", ("SNAPSHOT_TRANSIENT", "FLOOR_UNSTABLE")),
    (["NO_GROK", "no_grok"], ("NO_GROK",)),
])
def test_fail_on_accepts_modes_and_codes_case_insensitively(value, expected) -> None:
    assert parse_fail_on(value) == expected


@pytest.mark.parametrize("value", ["SNAPSHOT_TRANSIET", "none,warning", "default,NO_GROK", "",
                                   " , ", "critical", "warnings"])
def test_fail_on_refuses_anything_else(value: str) -> None:
    with pytest.raises(ConfigError) as ei:
        make_config(fail_on=value)
    assert ei.value.code is ErrorCode.INVALID_FAIL_ON


@pytest.mark.parametrize("flags", [
    ["--fail-on", "SNAPSHOT_TRANSIET"], ["--fail-on", "snapshot_transiet"],
    ["--fail-on", "none,warning"], ["--transient-threshold", "nan"], ["--acc-scale", "nan"],
    ["--acc-scale", "inf"], ["--rel-tol", "nan"], ["--rel-tol", "-0.05"],
    ["--mono-threshold", "2"], ["--sustain", str(10**30)], ["--abs-tol", "-1"],
])
def test_a_typo_never_turns_a_failing_gate_green(flags: list[str]) -> None:
    ok = CliRunner().invoke(cli, ["check", *ARGS])
    assert ok.exit_code == 1  # this log has critical findings
    r = CliRunner().invoke(cli, ["check", *ARGS, *flags])
    assert r.exit_code == 2
    assert _code(r.output) in {"INVALID_FAIL_ON", "OPTION_OUT_OF_RANGE", "INVALID_OPTION"}
    assert "Traceback" not in r.output


def test_lowercase_code_in_fail_on_still_fails_the_gate() -> None:
    r = CliRunner().invoke(cli, ["check", *ARGS, "--fail-on", "snapshot_transient"])
    assert r.exit_code == 1


@pytest.mark.parametrize("name,text,code", [
    ("grokaudit.toml", "fail_on = 'SNAPSHOT_TRANSIET'\n", "INVALID_FAIL_ON"),
    ("grokaudit.toml", "fail_onn = 'none'\n", "UNKNOWN_OPTION"),
    ("grokaudit.toml", "rel_tol = = 1\n", "CONFIG_SYNTAX"),
    ("grokaudit.toml", "transient_threshold = nan\n", "OPTION_OUT_OF_RANGE"),
    ("pyproject.toml", "[tool.grokaudit\nby = 'wd'\n", "CONFIG_SYNTAX"),
    ("pyproject.toml", "[project]\nname = 'x'\nversion = \n", "CONFIG_SYNTAX"),
    ("pyproject.toml", "[tool.grokaudit]\nfail_on = 'none,warning'\n", "INVALID_FAIL_ON"),
])
def test_config_files_go_through_the_same_validator(tmp_path: Path, monkeypatch, name, text,
                                                    code) -> None:
    (tmp_path / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["check", *ARGS])
    assert r.exit_code == 2, r.output
    assert _code(r.output) == code
    for cmd in (["onset", str(LOG), "--by", "wd"], ["suite", "--max-examples", "0"]):
        r = CliRunner().invoke(cli, cmd)
        assert r.exit_code == 2 and _code(r.output) == code, (cmd, r.output)


def test_the_readme_block_is_accepted_in_a_grokaudit_toml(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "grokaudit.toml").write_text(
        "[tool.grokaudit]\nby = 'rho'\nmetrics = ['emb_erank']\ngrok_threshold = 0.95\n"
        "fail_on = 'default'\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    cfg = build_config(None, None, {})
    assert (cfg.by, cfg.metrics, cfg.grok_threshold) == ("rho", ("emb_erank",), 0.95)


def test_docs_table_states_every_range() -> None:
    doc = (ROOT / "docs" / "config.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `(\w+)` \|[^|]*\|[^|]*\| ([^|]+) \|", doc, re.M))
    for field, rng in RANGES.items():
        assert rows.get(field, "").strip() == str(rng), field


def test_help_states_the_range_of_every_threshold() -> None:
    r = CliRunner().invoke(cli, ["check", "--help"], terminal_width=200)
    text = " ".join(r.output.split())
    for field in ("grok_threshold", "rel_tol", "transient_threshold", "sustain"):
        assert f"valid {RANGES[field]}" in text, field


@pytest.mark.parametrize("line", ['by = ""', 'by = "  "', 'metrics = ""', 'metrics = " , "',
                                  'cell = ""', 'cell = [" "]', 'metrics = ["emb_erank", ""]'])
def test_a_blank_column_name_in_a_config_file_is_refused(tmp_path, line):
    """`by = ""` (a template's placeholder left empty) read as `by` left out: the detected
    axis, every metric, no cell split, without a word — where the same blank flag on the
    command line is INVALID_OPTION."""
    (tmp_path / "grokaudit.toml").write_text(line + "\n")
    values, source = load_config_file(str(tmp_path / "grokaudit.toml")), "grokaudit.toml"
    with pytest.raises(ConfigError) as exc:
        make_config(None, values, source=source)
    assert exc.value.code is ErrorCode.INVALID_OPTION


@pytest.mark.parametrize("kw", [{"by": ""}, {"by": " "}, {"metrics": ""}, {"cell": ","}])
def test_a_blank_column_name_from_python_is_refused(kw):
    with pytest.raises(ConfigError) as exc:
        make_config(**kw)
    assert exc.value.code is ErrorCode.INVALID_OPTION
    # left out (None) is the automatic choice, as before
    assert make_config(by=None).by is None and make_config(metrics=None).metrics == ()


def test_a_metric_named_twice_is_refused_not_audited_twice():
    """`--metric m --metric m` (or metrics = ["m", "m"]) printed two identical studies and
    doubled the failing findings."""
    with pytest.raises(ConfigError) as exc:
        make_config(metrics=["emb_erank", "emb_erank"])
    assert exc.value.code is ErrorCode.INVALID_OPTION
    with pytest.raises(ConfigError):
        make_config(None, {"cell": ["arch", "arch"]}, source="grokaudit.toml")
