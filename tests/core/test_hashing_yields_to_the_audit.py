"""The trail's sha256 of the input is computed on a thread that yields the CPU to the audit it
overlaps (issue 44): on Linux that thread runs nicer, and the thread that made it does not."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest
from grokaudit import trail


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a thread's own priority is Linux's")
def test_the_hashing_thread_runs_nicer_than_the_audit(tmp_path: Path, monkeypatch) -> None:
    f = tmp_path / "log.csv"
    f.write_text("run,step,test_acc\na,0,0.5\n")
    seen: list[int] = []
    hashed = trail.input_files

    def spy(paths, stop=None):
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        return hashed(paths, stop)

    monkeypatch.setattr(trail, "input_files", spy)
    before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    with trail.HashAhead([str(f)]) as h:
        files = h.files()
    assert files and files[0].sha256  # still hashed
    assert seen and seen[0] >= min(19, before + trail.HASH_NICENESS)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == before
