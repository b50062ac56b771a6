"""Progress on stderr for work over a few seconds: `report` says which figure it draws."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("matplotlib", reason="the HTML report needs the `report` extra")
ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "reference_runs" / "data" / "mlp_wd_sweep_p59.parquet"
ARGS = [str(LOG), "--by", "wd", "--metric", "emb_pr", "--metric", "emb_erank", "--cell", "arch"]


def _run(tmp_path: Path, progress: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GROKAUDIT_PROGRESS": progress}
    return subprocess.run([sys.executable, "-m", "grokaudit", "report", *ARGS, "-o",
                           str(tmp_path / "r.html")], capture_output=True, text=True, env=env)


def test_report_prints_progress_on_stderr_only(tmp_path: Path) -> None:
    on = _run(tmp_path, "1")
    off = _run(tmp_path, "0")
    assert on.returncode == off.returncode == 1
    lines = on.stderr.splitlines()
    assert all(ln.startswith("report: ") for ln in lines), lines
    assert sum(ln.startswith("report: figure") for ln in lines) == 2  # one per study
    assert off.stderr == ""
    assert on.stdout == off.stdout  # progress never reaches stdout
