"""Progress of a long read on stderr (``reading PATH: 12 files, 3,400,000 points (5 s)…``):
only when stderr is a terminal or ``GROKAUDIT_PROGRESS=1``, only once the read takes more than
a few seconds, never on stdout (``--json -`` stays the same document)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from grokaudit import progress
from grokaudit.adapters import read_log
from grokaudit.cli import cli

LINE = re.compile(r"^reading .+: (\d+ files?, )?[\d,]+ points \(\d+ s\)…$")
STAGE = re.compile(r"^(check|json): .+ \(\d+\.\d s\)$")
DONE = re.compile(r"^reading .+: done: \d+ files?, [\d,]+ points in [\d.]+ s$")


@pytest.fixture
def history_dir(tmp_path: Path, sweep: pd.DataFrame) -> Path:
    # history/wd1.5_s0-history.csv …: one W&B history export per run (4 files)
    d = tmp_path / "history"
    d.mkdir()
    for run, g in sweep.groupby("run"):
        pd.DataFrame({"_step": g.step, "_runtime": g.step / 100.0, "test/acc": g.test_acc,
                      "train/acc": g.train_acc, "emb_erank": g.emb_erank}).to_csv(
            d / f"{run}-history.csv", index=False)
    return d


def _check(d: Path, env: dict[str, str | None]):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(cli, ["check", str(d), "--metric", "emb_erank", "--cond",
                                    r"wd=wd([0-9.]+)", "--json", "-"], env=env)


def test_progress_on_stderr_only_stdout_unchanged(history_dir: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    quiet = _check(history_dir, {"GROKAUDIT_PROGRESS": "0"})
    assert quiet.exit_code in (0, 1), quiet.output
    assert quiet.stderr == ""
    monkeypatch.setattr(progress, "DELAY_S", 0.0)  # a "long" read: every point shows
    monkeypatch.setattr(progress, "INTERVAL_S", 0.0)
    shown = _check(history_dir, {"GROKAUDIT_PROGRESS": "1"})
    assert shown.exit_code == quiet.exit_code
    # the read's lines, and the command's stage lines (one delay for both: every line shows)
    stages = [x for x in shown.stderr.splitlines() if STAGE.match(x)]
    lines = [x for x in shown.stderr.splitlines() if not STAGE.match(x)]
    assert stages  # check: log read and validated (0.0 s), …
    assert len(lines) >= 5 and all(LINE.match(x) or DONE.match(x) or "joining" in x
                                   for x in lines), lines
    assert str(history_dir) in lines[0]
    assert any("joining by run and step" in x for x in lines)
    assert DONE.match(lines[-1]) and "4 files, 2,892 points" in lines[-1]
    # stdout: the same JSON document, byte for byte
    assert shown.stdout == quiet.stdout
    json.loads(shown.stdout)


def test_no_progress_when_off_not_a_terminal_or_fast(history_dir: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # a fast read prints nothing, even when asked for
    assert _check(history_dir, {"GROKAUDIT_PROGRESS": "1"}).stderr == ""
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    monkeypatch.setattr(progress, "INTERVAL_S", 0.0)
    # stderr is not a terminal here: nothing unless GROKAUDIT_PROGRESS=1; =0 wins over a terminal
    assert _check(history_dir, {"GROKAUDIT_PROGRESS": None}).stderr == ""
    assert _check(history_dir, {"GROKAUDIT_PROGRESS": "0"}).stderr == ""
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    monkeypatch.setenv("GROKAUDIT_PROGRESS", "0")
    assert not progress.enabled()
    monkeypatch.delenv("GROKAUDIT_PROGRESS")
    assert progress.enabled()


def test_progress_of_the_library_read(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # read_log itself (any adapter: here a generic table) reports, on stderr only
    p = tmp_path / "logs.csv"
    pd.DataFrame({"run": "r", "step": np.arange(100), "test_acc": np.linspace(0, 1, 100)}).to_csv(
        p, index=False)
    monkeypatch.setenv("GROKAUDIT_PROGRESS", "1")
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    read_log(p, "table")
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines()[0] == f"reading {p}: 1 file, 100 points (0 s)…"
    assert DONE.match(err.splitlines()[-1])
