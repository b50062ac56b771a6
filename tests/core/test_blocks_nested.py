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
