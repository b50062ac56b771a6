"""SIGTERM (``kill``, ``timeout``, a CI job cancelled) while ``--json`` is written: exit 143
after one line, and neither the output nor its temporary file is left in the folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

CHILD = r'''
import os, signal, sys

import grokaudit.results as results
from grokaudit.cli import main

log, out, mode = sys.argv[1], sys.argv[2], sys.argv[3]
if mode == "ignored":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
real = results.Result.json_chunks


def json_chunks(self, indent=2):
    for i, c in enumerate(real(self, indent)):
        yield c
        if i == 20:  # the temporary file is open and being written
            os.kill(os.getpid(), signal.SIGTERM)


results.Result.json_chunks = json_chunks
main(["check", log, "--by", "wd", "--metric", "emb_erank", "--json", out])
'''


def _log(folder: Path) -> Path:
    steps = np.arange(0, 10001, 100)
    s = steps.astype(float)
    frames = []
    for wd in (0.1, 1.0):
        for seed in range(2):
            frames.append(pd.DataFrame({
                "run": f"wd{wd}_s{seed}", "step": steps, "wd": wd,
                "test_acc": 1 / (1 + np.exp(-(s - 2000 * (1 + wd)) / 150)),
                "train_acc": 1 / (1 + np.exp(-(s - 300) / 60)),
                "emb_erank": 10 + 30 / (1 + np.exp((s - 5000) / 300))}))
    p = folder / "log.parquet"
    pd.concat(frames).to_parquet(p, index=False)
    return p


def _run(tmp_path: Path, mode: str) -> tuple[int, str, list[str]]:
    logs, outs = tmp_path / "logs", tmp_path / "out"
    logs.mkdir()
    outs.mkdir()
    child = tmp_path / "child.py"
    child.write_text(CHILD, encoding="utf-8")
    proc = subprocess.run([sys.executable, str(child), str(_log(logs)), str(outs / "a.json"),
                           mode], capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stderr, sorted(p.name for p in outs.iterdir())


def test_sigterm_while_the_json_is_written_leaves_nothing_and_exits_143(tmp_path: Path) -> None:
    code, err, left = _run(tmp_path, "default")
    assert code == 143, err
    assert left == []  # neither a.json nor its temporary file
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_a_sigterm_the_host_ignores_stays_ignored(tmp_path: Path) -> None:
    """A process started with SIGTERM ignored (or given a handler of its own) keeps it: the
    command writes its JSON and exits with the audit's code."""
    code, err, left = _run(tmp_path, "ignored")
    assert code in (0, 1), err
    assert left == ["a.json"]


RAY_CHILD = r'''
import os, signal, sys

import grokaudit.results as results
from grokaudit.cli import main

log, out, mode = sys.argv[1], sys.argv[2], sys.argv[3]
real = results.Result.json_chunks


def json_chunks(self, indent=2):
    for i, c in enumerate(real(self, indent)):
        yield c
        if mode == "kill" and i == 20:
            os.kill(os.getpid(), signal.SIGTERM)


results.Result.json_chunks = json_chunks
try:
    main(["check", log, "--by", "wd", "--metric", "emb_erank", "--engine", "ray", "--json", out])
except SystemExit as exc:
    handler = signal.getsignal(signal.SIGTERM)
    # after the command: Ray's own handler (set by its init), not grokaudit's nor the default
    print("after:", "default" if handler is signal.SIG_DFL else
          "grokaudit" if hasattr(handler, "grokaudit_after") else "other", flush=True)
    raise
'''


@pytest.mark.slow
def test_sigterm_under_the_ray_engine_is_still_the_commands(tmp_path: Path) -> None:
    """Ray's init sets a SIGTERM handler of its own (exit 15, nothing said, the temporary file
    left to chance): while the command runs SIGTERM stays the command's (exit 143, nothing
    left), and Ray's is put back when the command ends."""
    pytest.importorskip("ray")
    logs, outs = tmp_path / "logs", tmp_path / "out"
    logs.mkdir()
    outs.mkdir()
    child = tmp_path / "child.py"
    child.write_text(RAY_CHILD, encoding="utf-8")
    env = {**__import__("os").environ, "RAY_ADDRESS": "", "GROKAUDIT_THREADS": "1"}
    for mode, code, left in (("kill", 143, []), ("calm", 1, ["a.json"])):
        proc = subprocess.run([sys.executable, str(child), str(_log(logs)),
                               str(outs / "a.json"), mode], capture_output=True, text=True,
                              timeout=300, env=env)
        assert proc.returncode in ((code,) if code == 143 else (0, 1)), proc.stderr[-2000:]
        assert sorted(p.name for p in outs.iterdir()) == left
        if mode == "calm":
            assert "after: other" in proc.stdout, proc.stdout


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="fork")
def test_a_process_forked_while_a_command_runs_keeps_the_default_sigterm() -> None:
    """The report's figure workers are forked from the command: SIGTERM ends them as it
    always did (no worker raising the command's exception, no traceback of theirs)."""
    import os
    import signal

    from grokaudit.signals import sigterm_raises

    # a command starts with the default SIGTERM (a test run in this process before may have
    # left another: ray.init installs its own)
    before = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        with sigterm_raises():
            assert hasattr(signal.getsignal(signal.SIGTERM), "grokaudit_after")
            pid = os.fork()
            if pid == 0:  # the child: exit 0 when SIGTERM is the default there
                os._exit(0 if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL else 3)
            _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the command's, taken back
    finally:
        signal.signal(signal.SIGTERM, before)
