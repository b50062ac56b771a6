"""Never lose a run: SIGKILL a real training process mid-sweep; --resume finishes it, and the
final log is identical to an uninterrupted run's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

pytestmark = pytest.mark.slow  # ./scripts/test --quick leaves it out

torch = pytest.importorskip("torch")

SWEEP = """
name = "resume"
[base]
p = 11
alpha = 0.5
d_emb = 8
lr = 0.01
steps = 600
log_every = 100
[grid]
hidden = [16, 24]   # two shapes: two groups, so resume crosses a finished group
seed = [0, 1]
"""

MAIN = "import sys; from grokaudit.cli import main; sys.exit(main())"


def _cmd(cfg: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-c", MAIN, "train", str(cfg), "-o", str(out), "--threads", "1",
            "--device", "cpu", "--progress", "none", *extra]


def _checkpoint_state(ckpt: Path) -> tuple[int, int] | None:
    """(finished groups, step of the running group) or None while unreadable."""
    try:
        payload = torch.load(ckpt, map_location="cpu", weights_only=False)
    except Exception:  # noqa: BLE001 - not written yet
        return None
    cur = payload["current"]
    return len(payload["done"]), (cur[1]["step"] if cur is not None else -1)


def test_sigkill_then_resume_equals_uninterrupted(tmp_path: Path) -> None:
    cfg = tmp_path / "sweep.toml"
    cfg.write_text(SWEEP)
    out = tmp_path / "killed.parquet"
    ckpt = tmp_path / "killed.parquet.ckpt"
    proc = subprocess.Popen(_cmd(cfg, out, "--checkpoint-minutes", "0"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    killed_at = None
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            st = _checkpoint_state(ckpt) if ckpt.exists() else None
            # Kill inside the second group, past a few checkpoints: both the finished-group
            # and the mid-group paths of resume are then exercised.
            if st is not None and st[0] == 1 and st[1] >= 300:
                os.kill(proc.pid, signal.SIGKILL)
                killed_at = st
                break
            time.sleep(0.02)
    finally:
        if proc.poll() is None and killed_at is None:
            proc.kill()
        proc.wait()
    assert killed_at is not None, "the run finished or stalled before it could be killed"
    assert proc.returncode == -signal.SIGKILL
    assert not out.exists()  # no half-written log
    assert not any(p.name.endswith(".tmp") and p.name.startswith(".killed.parquet.parquet")
                   for p in tmp_path.iterdir())

    resumed = subprocess.run(_cmd(cfg, out, "--resume"), capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert "resumed from" in resumed.stderr

    ref = tmp_path / "uninterrupted.parquet"
    full = subprocess.run(_cmd(cfg, ref), capture_output=True, text=True)
    assert full.returncode == 0, full.stderr

    a, b = pd.read_parquet(out), pd.read_parquet(ref)
    assert len(a) == 4 * len(a[a.run == a.run.iloc[0]])
    pd.testing.assert_frame_equal(a, b, check_exact=True)
