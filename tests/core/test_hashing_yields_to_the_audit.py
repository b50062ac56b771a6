"""The trail's sha256 of the input is computed on a thread that yields the CPU to the audit it
overlaps (issue 44): on Linux that thread runs on idle CPU only (``SCHED_IDLE``, and nicer),
and the thread that made it does not; when the audit needs the hashes, its own thread hashes
whatever the background thread has not."""

from __future__ import annotations

import hashlib
import os
import sys
import threading
import time
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


def _two_files(tmp_path: Path) -> list[Path]:
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    a.write_bytes(os.urandom(5 * trail._CHUNK + 17))
    b.write_bytes(os.urandom(2 * trail._CHUNK))
    return [a, b]


def _stalling_spy(monkeypatch, at: int, hold: float):
    """Count each thread's steps; the hashing thread's step ``at`` waits until ``go_on`` is
    set (or ``hold`` seconds): a thread the scheduler leaves without CPU."""
    by_thread: dict[str, int] = {}
    step = trail._Hashing.step
    stalled, go_on = threading.Event(), threading.Event()

    def spy(self):
        name = threading.current_thread().name
        by_thread[name] = by_thread.get(name, 0) + 1
        if name == "grokaudit-sha256" and by_thread[name] == at:
            stalled.set()
            go_on.wait(hold)
        return step(self)

    monkeypatch.setattr(trail._Hashing, "step", spy)
    return by_thread, stalled, go_on


def test_the_audit_takes_over_what_the_thread_has_not_hashed(tmp_path: Path,
                                                             monkeypatch) -> None:
    """When the hashes are needed the thread stops after its current chunk; the caller
    hashes the rest of that file and the files after it from where the thread stopped (not
    from the start), and the hashes are the files' own."""
    files_in = _two_files(tmp_path)
    me = threading.current_thread().name
    by_thread, stalled, go_on = _stalling_spy(monkeypatch, at=3, hold=10)  # a opened, 2 chunks
    trail.input_files([str(p) for p in files_in])
    every_step = by_thread.pop(me)  # the steps of hashing both files from the start
    monkeypatch.setattr(trail, "HANDOVER_WAIT", 30.0)  # the thread is waited for here
    h = trail.HashAhead([str(p) for p in files_in])
    assert stalled.wait(10)
    releaser = threading.Timer(0.2, go_on.set)  # released once files() has asked
    releaser.start()
    files = h.files()
    releaser.join()
    assert [(f.path, f.size, f.sha256) for f in files] == [
        (str(p), p.stat().st_size, _digest(p)) for p in files_in]
    assert by_thread["grokaudit-sha256"] == 3  # it stopped after the chunk it was on
    assert by_thread[me] == every_step - 3  # the caller hashed the rest, and only the rest


def test_a_thread_that_gets_no_cpu_is_left_behind(tmp_path: Path, monkeypatch) -> None:
    """A hashing thread that cannot finish its chunk (no idle CPU for it) is not waited for
    past HANDOVER_WAIT: the caller hashes the files itself and the hashes are the files'
    own; the thread closes its file when it runs again."""
    files_in = _two_files(tmp_path)
    by_thread, stalled, go_on = _stalling_spy(monkeypatch, at=2, hold=30)
    monkeypatch.setattr(trail, "HANDOVER_WAIT", 0.05)
    h = trail.HashAhead([str(p) for p in files_in])
    assert stalled.wait(10)
    t0 = time.perf_counter()
    files = h.files()
    waited = time.perf_counter() - t0
    assert [(f.path, f.sha256) for f in files] == [(str(p), _digest(p)) for p in files_in]
    assert waited < 10  # not the 30 s the thread is held for
    assert h._thread.is_alive()
    go_on.set()
    h._thread.join(10)
    assert not h._thread.is_alive() and h._work is not None and h._work._fh is None


def test_the_hashes_are_taken_once(tmp_path: Path) -> None:
    """files() gives the same tuple at every call -- after the hashing was called off, from
    several threads at once, and after the file changed (the hashes are of the bytes read
    while the audit ran)."""
    p = tmp_path / "f.bin"
    p.write_bytes(os.urandom(3 * trail._CHUNK))
    want = _digest(p)
    with trail.HashAhead([str(p)]) as h:
        got: list[tuple[trail.InputFile, ...]] = []
        threads = [threading.Thread(target=lambda: got.append(h.files())) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(got) == 4 and all(g is got[0] for g in got)
    assert [f.sha256 for f in got[0]] == [want]
    with p.open("ab") as fh:
        fh.write(b"more")
    assert h.files() is got[0]
