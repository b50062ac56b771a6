"""The trail's sha256 of the input is computed on a thread that yields the CPU to the audit it
overlaps (issue 44): on Linux that thread runs on idle CPU only (``SCHED_IDLE``, and nicer),
and the thread that made it does not; when the audit needs the hashes, its own thread hashes
whatever the background thread has not."""

from __future__ import annotations

import hashlib
import os
import sys
import threading
from pathlib import Path

import pytest
from grokaudit import trail


def _digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a thread's own priority is Linux's")
def test_the_hashing_thread_runs_on_idle_cpu_only(tmp_path: Path, monkeypatch) -> None:
    f = tmp_path / "log.csv"
    f.write_text("run,step,test_acc\na,0,0.5\n")
    seen: list[tuple[int, int]] = []
    step = trail._Hashing.step

    def spy(self):
        if threading.current_thread().name == "grokaudit-sha256":
            tid = threading.get_native_id()
            seen.append((os.getpriority(os.PRIO_PROCESS, tid), os.sched_getscheduler(tid)))
        return step(self)

    monkeypatch.setattr(trail._Hashing, "step", spy)
    me = threading.get_native_id()
    before = (os.getpriority(os.PRIO_PROCESS, me), os.sched_getscheduler(me))
    with trail.HashAhead([str(f)]) as h:
        h._thread.join()  # let the thread hash it all
        files = h.files()
    assert [x.sha256 for x in files] == [_digest(f)]  # still hashed
    assert seen, "the background thread hashed nothing"
    nice, policy = seen[0]
    assert nice >= min(19, before[0] + trail.HASH_NICENESS)
    assert policy == os.SCHED_IDLE
    assert (os.getpriority(os.PRIO_PROCESS, me), os.sched_getscheduler(me)) == before


def test_the_audit_takes_over_what_the_thread_has_not_hashed(tmp_path: Path,
                                                             monkeypatch) -> None:
    """A thread that gets no CPU (a busy machine: ``SCHED_IDLE`` waits) is stopped after its
    current chunk when the hashes are needed; the caller hashes the rest of that file and
    the files after it from where the thread stopped, and the hashes are the files' own."""
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    a.write_bytes(os.urandom(5 * trail._CHUNK + 17))
    b.write_bytes(os.urandom(2 * trail._CHUNK))
    by_thread: dict[str, int] = {}
    step = trail._Hashing.step
    stalled = threading.Event()
    go_on = threading.Event()

    def spy(self):
        name = threading.current_thread().name
        by_thread[name] = by_thread.get(name, 0) + 1
        if name == "grokaudit-sha256" and by_thread[name] == 3:  # a.bin opened, 2 chunks
            stalled.set()
            go_on.wait(10)  # starved until the audit asks for the hashes
        return step(self)

    monkeypatch.setattr(trail._Hashing, "step", spy)
    h = trail.HashAhead([str(a), str(b)])
    assert stalled.wait(10)
    taker = threading.Timer(0.2, go_on.set)  # released once files() has asked
    taker.start()
    files = h.files()
    taker.join()
    assert [(f.path, f.size, f.sha256) for f in files] == [
        (str(p), p.stat().st_size, _digest(p)) for p in (a, b)]
    assert by_thread["grokaudit-sha256"] == 3  # it stopped after the chunk it was on
    assert by_thread[threading.current_thread().name] > 5  # the caller hashed the rest


def test_hashes_asked_for_again_are_the_same(tmp_path: Path) -> None:
    p = tmp_path / "f.bin"
    p.write_bytes(os.urandom(3 * trail._CHUNK))
    with trail.HashAhead([str(p)]) as h:
        first = h.files()
        assert h.files() == first
    assert [f.sha256 for f in first] == [_digest(p)]
