"""The report is an optional extra: the core never imports matplotlib, and a missing
matplotlib is a one-line error naming the fix (these tests need no matplotlib)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grokaudit
import pytest
from click.testing import CliRunner
from grokaudit.errors import MissingExtraError
from helpers import report_builders as rb


def test_core_and_report_module_do_not_import_matplotlib() -> None:
    code = ("import sys, grokaudit, grokaudit.cli, grokaudit.report, grokaudit.html_report, "
            "grokaudit.figures; bad = [m for m in sys.modules if m.split('.')[0] == "
            "'matplotlib']; assert not bad, bad")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def _hide_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m.split(".")[0] == "matplotlib"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError


def test_missing_matplotlib_is_missing_extra_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from grokaudit.figures import require_matplotlib

    _hide_matplotlib(monkeypatch)
    with pytest.raises(MissingExtraError, match=r"pip install 'grokaudit\[report\]'"):
        require_matplotlib()


def test_report_command_without_matplotlib_exits_2(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    from grokaudit.cli import cli

    log = tmp_path / "log.parquet"
    grokaudit.write_table(rb.study([{"rho": 1.0, "t_grok": 1500, "tau": 500, "floor": 12.0},
                                    {"rho": 2.0, "t_grok": 2500, "tau": 900, "floor": 13.0}],
                                   seeds=2), log)
    _hide_matplotlib(monkeypatch)
    res = CliRunner().invoke(cli, ["report", str(log), "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 2
    assert "grokaudit[report]" in res.output
    assert res.output.rstrip().endswith("[MISSING_EXTRA]")
    assert not (tmp_path / "r.html").exists()


def test_report_command_bad_input_exits_2(tmp_path: Path) -> None:
    # without the extra, the missing extra is said first (before the input is read)
    pytest.importorskip("matplotlib", reason="the report needs the [report] extra")
    from grokaudit.cli import cli

    res = CliRunner().invoke(cli, ["report", str(tmp_path / "missing.parquet"), "-o",
                                   str(tmp_path / "r.html")])
    assert res.exit_code == 2
    assert "no such file" in res.output
    assert res.output.rstrip().endswith("[FILE_NOT_FOUND]")
    assert not (tmp_path / "r.html").exists()


def test_report_is_a_grokaudit_command() -> None:
    from grokaudit.cli import cli

    res = CliRunner().invoke(cli, ["report", "--help"])
    assert res.exit_code == 0
    for flag in ("--output", "--png", "--log-steps", "--by", "--cell", "--metric", "--profile",
                 "--fail-on", "--grok-threshold"):
        assert flag in res.output


def test_report_takes_the_check_options_its_help_promises(tmp_path: Path) -> None:
    """``report --help`` promised every ``check`` option, but ``--engine`` and ``-q`` were
    unknown (issue 38): each flag ``check`` takes and the help names is accepted."""
    pytest.importorskip("matplotlib", reason="the report needs the [report] extra")
    from grokaudit.cli import cli

    log = tmp_path / "log.parquet"
    rb.healthy_study().to_parquet(log)
    res = CliRunner().invoke(cli, ["report", str(log), "-o", str(tmp_path / "r.html"), "-q",
                                   "--engine", "threads"])
    assert res.exit_code in (0, 1), res.output
    assert (tmp_path / "r.html").stat().st_size > 0
    assert len(res.stdout.strip().splitlines()) == 1  # -q: the one result line
    assert res.exit_code == CliRunner().invoke(cli, ["check", str(log), "-q"]).exit_code
