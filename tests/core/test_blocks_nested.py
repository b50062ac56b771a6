"""A block that maps blocks itself (a validated log's float64 steps made on first use inside
one) runs them in its own thread: waiting on the pool from one of its threads could wait for
itself. Run in a child process with a timeout: a deadlock fails the test, never hangs the
suite."""

from __future__ import annotations

import os
import subprocess
import sys

CHILD = r"""
import threading
from grokaudit.blocks import map_blocks, slices

seen = []

def inner(sl):
    seen.append(threading.current_thread().name)
    return sl.stop - sl.start

def outer(sl):
    return sum(map_blocks(inner, slices(sl.stop - sl.start, 3)))

out = map_blocks(outer, slices(40, 10))
assert out == [10, 10, 10, 10], out
assert seen and all(n.startswith("grokaudit-blocks") for n in seen), seen
print("ok")
"""


def test_blocks_mapped_from_inside_a_block_never_wait_for_the_pool() -> None:
    env = dict(os.environ, GROKAUDIT_THREADS="2")
    try:
        done = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                              text=True, timeout=60)
    except subprocess.TimeoutExpired:
        raise AssertionError("map_blocks deadlocked inside its own pool") from None
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


CHILD_STEPS = r"""
import os, threading
import numpy as np
from grokaudit.blocks import map_blocks, slices
from grokaudit.schema import LogTable

N = 3_000_000  # more than one cast block

def table():
    return LogTable(run_ids=np.array(["a"], dtype=object), offsets=np.array([0, N]),
                    step=np.arange(N), test_acc=np.zeros(N), train_acc=None, series={},
                    conditions=None, summary=None)

tables = [table() for _ in range(8)]
started = threading.Event()

def block(sl):
    started.set()
    return [float(t.step_f64[-1]) for t in tables[sl]]

inner = threading.Thread(target=lambda: map_blocks(block, slices(8, 1)), daemon=True)
inner.start()
started.wait()
for _ in range(6):  # made here while the pool's threads make theirs
    assert float(table().step_f64[-1]) == N - 1
inner.join(30)
assert not inner.is_alive()
assert all(np.array_equal(t.step_f64, np.arange(N, dtype=float)) for t in tables)
print("ok")
os._exit(0)
"""


def test_float64_steps_made_at_once_in_several_threads_never_wait_for_each_other() -> None:
    """Review finding: made under ``functools.cached_property``'s lock (one for every table
    before Python 3.12), the cast could wait on the pool whose threads waited on that lock."""
    env = dict(os.environ, GROKAUDIT_THREADS="2")
    try:
        done = subprocess.run([sys.executable, "-c", CHILD_STEPS], env=env,
                              capture_output=True, text=True, timeout=90)
    except subprocess.TimeoutExpired:
        raise AssertionError("LogTable.step_f64 deadlocked") from None
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
