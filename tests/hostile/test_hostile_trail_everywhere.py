"""The trail in every command: a ``grokaudit.toml`` in the working folder that changes a
setting is said by ``watch`` (its header, the first line of ``--jsonl``) and ``inspect`` (text
and JSON), which names the file that set the axis, not ``--by``; a config file passed over (a
``pyproject.toml [tool.grokaudit]`` beside the ``grokaudit.toml`` that wins, or the file
discovery finds when ``--config`` names another) is noted, never silently ignored."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.hostile import cli, sweep_df


def _folder(tmp_path: Path, toml: str) -> Path:
    d = tmp_path / "work"
    d.mkdir()
    sweep_df().to_csv(d / "log.csv", index=False)
    (d / "grokaudit.toml").write_text(toml, encoding="utf-8")
    return d


def _first_run_line(lines: list[str]) -> int:
    return next(k for k, x in enumerate(lines) if x.startswith("run "))


def test_watch_says_the_config_file_and_the_settings_it_changed(tmp_path: Path) -> None:
    d = _folder(tmp_path, "grok_threshold = 0.8\n")
    out = cli(["watch", "log.csv", "--once", "--jsonl"], cwd=d)
    assert out.exit_code == 0, out
    first = json.loads(out.stdout.splitlines()[0])
    assert first["event"] == "trail"
    assert first["config_file"] == "grokaudit.toml"
    assert first["changed_settings"] == {"grok_threshold": 0.8}
    text = cli(["watch", "log.csv", "--once"], cwd=d)
    assert text.exit_code == 0, text
    lines = text.stdout.splitlines()
    header = "\n".join(lines[:_first_run_line(lines)])  # said before the first run's line
    assert "grok_threshold=0.8" in header and "grokaudit.toml" in header, text


def test_inspect_names_the_config_file_that_set_the_axis(tmp_path: Path) -> None:
    d = _folder(tmp_path, 'by = "wd"\n')
    ins = cli(["inspect", "log.csv", "--json", "-"], cwd=d)
    assert ins.exit_code == 0, ins
    got = json.loads(ins.stdout)
    assert got["axis"]["column"] == "wd"
    assert "grokaudit.toml" in got["axis"]["why"] and "--by" not in got["axis"]["why"]
    assert got["trail"]["config_file"] == "grokaudit.toml"
    assert got["trail"]["changed_settings"] == {"by": "wd"}
    text = cli(["inspect", "log.csv"], cwd=d)
    assert "grokaudit.toml" in text.stdout and "by=wd" in text.stdout, text
    # named on the command line, the flag is what named it
    flag = json.loads(cli(["inspect", "log.csv", "--by", "wd", "--json", "-"], cwd=d).stdout)
    assert "--by" in flag["axis"]["why"]


def test_a_pyproject_beside_the_winning_grokaudit_toml_is_noted(tmp_path: Path) -> None:
    d = _folder(tmp_path, "grok_threshold = 0.8\n")
    (d / "pyproject.toml").write_text("[tool.grokaudit]\nsmooth = 5\n", encoding="utf-8")
    check = json.loads(cli(["check", "log.csv", "--json", "-"], cwd=d).stdout)["trail"]
    watch = json.loads(cli(["watch", "log.csv", "--once", "--jsonl"], cwd=d)
                       .stdout.splitlines()[0])
    inspect = json.loads(cli(["inspect", "log.csv", "--json", "-"], cwd=d).stdout)["trail"]
    for trail in (check, watch, inspect):
        assert trail["config_file"] == "grokaudit.toml"
        assert "smooth" not in trail["changed_settings"]  # the pyproject was not read
        assert any("pyproject.toml" in n for n in trail["notes"]), trail


def test_the_discovered_file_passed_over_for_config_is_noted(tmp_path: Path) -> None:
    d = _folder(tmp_path, "grok_threshold = 0.8\n")
    (d / "other.toml").write_text("smooth = 5\n", encoding="utf-8")
    trail = json.loads(cli(["check", "log.csv", "--config", "other.toml", "--json", "-"],
                           cwd=d).stdout)["trail"]
    assert trail["config_file"] == "other.toml"
    assert "grok_threshold" not in trail["changed_settings"]
    assert any("grokaudit.toml" in n for n in trail["notes"]), trail
