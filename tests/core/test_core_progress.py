"""Progress of a long ``check`` on stderr: the stages (read and validated, audited) and the
JSON as it is written, with their seconds; only when progress is shown (a terminal or
``GROKAUDIT_PROGRESS=1``) and the work has run for a few seconds; never on stdout, never in
the JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from grokaudit import progress
from grokaudit.cli import cli

LOG = Path(__file__).resolve().parents[2] / "reference_runs" / "data" / "mlp_wd_sweep_p59.parquet"
ARGS = ["check", str(LOG), "--by", "wd", "--cell", "arch", "--metric", "emb_erank"]
LINE = re.compile(r"^(check|json): .+ \(\d+\.\d s\)$")


def _check(tmp_path: Path, progress: str, *extra: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(cli, [*ARGS, *extra], env={"GROKAUDIT_PROGRESS": progress})


def test_a_long_check_says_its_stages_on_stderr_only(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    quiet = _check(tmp_path, "0", "--json", str(tmp_path / "q.json"))
    assert quiet.stderr == ""
    monkeypatch.setattr(progress, "DELAY_S", 0.0)  # every stage is "long"
    shown = _check(tmp_path, "1", "--json", str(tmp_path / "s.json"))
    lines = shown.stderr.splitlines()
    assert all(LINE.match(x) for x in lines), lines
    doc = json.loads((tmp_path / "q.json").read_text())
    runs, studies = doc["input"]["runs_kept"], len(doc["studies"])
    assert [x.split(" (")[0] for x in lines] == [
        "check: log read and validated",
        f"check: audited: {runs:,} runs, {studies} stud{'y' if studies == 1 else 'ies'}",
        "json: written, 0 MiB"]
    # the same text and JSON (the command line in the trail aside, which names the file)
    assert shown.exit_code == quiet.exit_code
    assert shown.stdout == quiet.stdout.replace("q.json", "s.json")
    assert (tmp_path / "s.json").read_bytes() == (tmp_path / "q.json").read_bytes().replace(
        b"q.json", b"s.json")
    # the JSON on stdout: the document alone, and no line about writing it
    piped = _check(tmp_path, "1", "--json", "-")
    assert not any(x.startswith("json:") for x in piped.stderr.splitlines())


def test_a_fast_check_prints_no_progress_even_when_asked(tmp_path: Path) -> None:
    assert _check(tmp_path, "1", "--json", str(tmp_path / "a.json")).stderr == ""
