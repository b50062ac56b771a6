"""Ctrl-C on ``grokaudit watch`` in every phase: exit 130 after the summary line, never lost,
never ``Aborted!`` (exit 1, which means something else), never a traceback.

Each test runs the command in a child process whose code presses Ctrl-C itself at one chosen
moment (a SIGINT sent to its own main thread), so the moment is chosen, not left to timing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers.signals import as_from_a_terminal

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process")

CHILD = r'''
import os, signal, sys, threading

mode, log = sys.argv[1], sys.argv[2]


def press():
    """Ctrl-C now: delivered to this thread before pthread_kill returns; Python runs its handler
    at the next instructions."""
    signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
    for _ in range(1000):
        pass


import click
import grokaudit.config
import grokaudit.watch
from grokaudit.cli import main

if mode == "swallowed":  # code the watch calls swallows the KeyboardInterrupt (as CPython
    real_poll = grokaudit.watch.Watcher.poll  # does when it closes a collected file object)
    polls = []

    def poll(self):
        polls.append(1)
        if len(polls) == 2:
            try:
                press()
            except KeyboardInterrupt:
                pass
        return real_poll(self)

    grokaudit.watch.Watcher.poll = poll
elif mode == "config":  # before the first read
    real_build = grokaudit.config.build_config

    def build_config(*a, **k):
        press()
        return real_build(*a, **k)

    grokaudit.config.build_config = build_config
elif mode == "twice":  # pressed again while the summary is written
    real_poll = grokaudit.watch.Watcher.poll
    polls = []

    def poll(self):
        polls.append(1)
        if len(polls) == 2:
            press()
        return real_poll(self)

    real_echo = click.echo

    def echo(message=None, *a, **k):
        if '"summary"' in str(message):
            press()
        return real_echo(message, *a, **k)

    grokaudit.watch.Watcher.poll = poll
    click.echo = echo
elif mode == "sigterm":  # a job's time limit: SIGTERM while watching
    real_poll = grokaudit.watch.Watcher.poll
    polls = []

    def poll(self):
        polls.append(1)
        if len(polls) == 2:
            os.kill(os.getpid(), signal.SIGTERM)
        return real_poll(self)

    grokaudit.watch.Watcher.poll = poll
elif mode == "csv-read":  # who holds SIGINT while the CSV is read (pyarrow can take it)
    import ctypes
    import io

    import grokaudit.schema as schema

    libc = ctypes.CDLL(None)

    class Sigaction(ctypes.Structure):  # Linux: the handler is the first member
        _fields_ = [("handler", ctypes.c_void_p), ("rest", ctypes.c_byte * 512)]

    def handler():
        sa = Sigaction()
        assert libc.sigaction(signal.SIGINT, None, ctypes.byref(sa)) == 0
        return sa.handler

    real_read = schema.pacsv.read_csv
    polls = []

    def read_csv(path, **k):
        python = handler()
        during = []

        class Reading(io.BytesIO):
            def read(self, n=-1):
                during.append(handler())
                return super().read(n)

        # a path, or the bytes grokaudit.csvread read once
        data = path.read() if hasattr(path, "read") else open(path, "rb").read()
        table = real_read(Reading(bytes(data)), **k)
        if any(h != python for h in during):
            sys.stderr.write("SIGINT TAKEN FROM PYTHON DURING THE READ\n")
        polls.append(1)
        if len(polls) == 2:
            press()
        return table

    schema.pacsv.read_csv = read_csv
main(["watch", log, "--interval", "0.05", "--idle", "20", "--jsonl", "--metric", "emb_erank",
      "--margin", "100"])  # a run that is never settled: the watch goes on
'''


def _log(tmp_path: Path) -> Path:
    steps = np.arange(0, 20001, 100)
    s = steps.astype(float)
    p = tmp_path / "log.csv"
    pd.DataFrame({"run": "r", "step": steps, "test_acc": 1 / (1 + np.exp(-(s - 2000) / 150)),
                  "train_acc": 1 / (1 + np.exp(-(s - 300) / 60)),
                  "emb_erank": 10 + 30 / (1 + np.exp((s - 5000) / 300))}).to_csv(p, index=False)
    return p


def _run(tmp_path: Path, mode: str) -> tuple[int, list[str], str]:
    child = tmp_path / "child.py"
    child.write_text(CHILD, encoding="utf-8")
    proc = subprocess.Popen([sys.executable, str(child), mode, str(_log(tmp_path))],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=as_from_a_terminal)
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out.splitlines(), err


@pytest.mark.parametrize("mode", ["swallowed", "config", "twice"])
def test_ctrl_c_in_every_phase_exits_130_after_the_summary(tmp_path: Path, mode: str) -> None:
    """``swallowed``: a KeyboardInterrupt swallowed by code the watch calls is still acted on
    (the runs would otherwise be watched until they are idle, exit 0); ``config``: Ctrl-C before
    the first read; ``twice``: a second Ctrl-C while the summary is written cannot cut it
    short (``Aborted!``, exit 1)."""
    code, out, err = _run(tmp_path, mode)
    assert code == 130, (code, out[-2:], err)
    assert out and json.loads(out[-1])["event"] == "summary", (out, err)
    assert "Traceback" not in err and "Aborted" not in err, err


def test_sigterm_while_watching_exits_143_after_the_summary(tmp_path: Path) -> None:
    """SIGTERM (a scheduler's time limit, ``timeout``): the summary of what was seen, then exit
    143 (128 + SIGTERM), as Ctrl-C gives its summary then 130."""
    code, out, err = _run(tmp_path, "sigterm")
    assert code == 143, (code, out[-2:], err)
    assert out and json.loads(out[-1])["event"] == "summary", (out, err)
    assert "Traceback" not in err, err


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads sigaction via ctypes")
def test_pyarrow_does_not_take_ctrl_c_while_a_csv_is_read(tmp_path: Path) -> None:
    """pyarrow's CSV reader takes SIGINT from Python for the read and hands it on from a
    thread of its own: a press near the end of the read was lost, and watch polled on (2 in
    60 Ctrl-C at random moments). While watch reads, SIGINT stays Python's."""
    code, out, err = _run(tmp_path, "csv-read")
    assert "SIGINT TAKEN" not in err, err
    assert code == 130 and json.loads(out[-1])["event"] == "summary", (code, out[-2:], err)


def test_watch_piped_to_a_reader_that_left_exits_130_on_ctrl_c(tmp_path: Path) -> None:
    """``grokaudit watch LOG --jsonl | head -1`` then Ctrl-C (the terminal's SIGINT ends head
    too): the summary cannot be written, and the exit is still 130, not 2."""
    import signal
    import time

    proc = subprocess.Popen([sys.executable, "-m", "grokaudit", "watch", str(_log(tmp_path)),
                             "--interval", "0.2", "--idle", "60", "--jsonl", "--metric",
                             "emb_erank", "--margin", "100"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=as_from_a_terminal)
    try:
        assert proc.stdout is not None and proc.stdout.readline()  # head -1 read its line
        proc.stdout.close()  # and left
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert b"Traceback" not in err


def test_a_watch_started_with_ctrl_c_ignored_keeps_ignoring_it(tmp_path: Path) -> None:
    """A script's background job (``grokaudit watch LOG &``) starts with SIGINT ignored, so
    that a Ctrl-C at the terminal leaves it running: watch keeps it ignored, as `check` and
    every Python program do (it installed its own handler over it)."""
    import signal
    import time

    proc = subprocess.Popen([sys.executable, "-m", "grokaudit", "watch", str(_log(tmp_path)),
                             "--interval", "0.2", "--idle", "60", "--jsonl", "--metric",
                             "emb_erank", "--margin", "100"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        assert proc.stdout is not None and proc.stdout.readline()  # the watch is under way
        proc.send_signal(signal.SIGINT)
        time.sleep(1.0)
        assert proc.poll() is None  # still watching
    finally:
        proc.terminate()
        proc.communicate(timeout=60)
