"""Row blocks of the per-run matrices, computed on a small pool of threads.

Every per-run definition of the clocks is row-wise: run ``r``'s results depend on row ``r`` of
the packed matrices alone. The clocks are therefore computed block by block of runs — a block
sized so that one ``(runs, points)`` float64 matrix stays near the processor's cache
(:data:`BLOCK_ELEMENTS`), which bounds the memory of the temporaries — and independent blocks
run on a thread pool (numpy releases the GIL inside its array loops). A block's results do not
depend on how the runs were blocked, so the output is the same for every block size and
thread count (``benchmarks/identity.py`` checks it byte for byte). A study's cells and its run
table, which read the clocks and write nothing shared, are computed side by side on the same
pool (:func:`run_each`) where the cells are large.

``GROKAUDIT_THREADS`` sets the number of threads (default: the CPUs this process may use, at
most 8; ``1`` computes several blocks in order on the pool's one thread, a single block on
the calling thread). This pool is the default engine, :class:`grokaudit.engine.ThreadEngine`;
the audit takes its engine as a parameter (:mod:`grokaudit.engine`).
"""

from __future__ import annotations

import contextvars
import os
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TypeVar

import numpy as np

#: Elements of one ``(runs, points)`` matrix per block (4 MiB of float64).
BLOCK_ELEMENTS = 1 << 19
#: Below this many elements in all, the runs are one block (blocking would only add calls).
MIN_BLOCKED = 1 << 18
#: The smallest block a matrix is cut into so that every thread has blocks to compute.
MIN_BLOCK_ELEMENTS = 1 << 16
MAX_THREADS = 8

T = TypeVar("T")

_pools: dict[int, ThreadPoolExecutor] = {}
#: The names of the pool's threads begin with it (``ThreadPoolExecutor`` adds ``_N``).
_POOL_PREFIX = "grokaudit-blocks"
_pool_lock = threading.Lock()
_warnings_lock = threading.RLock()


def leave_ctrl_c_to_the_main_thread() -> None:
    """Block SIGINT in the calling worker thread (a pool's initializer, a helper thread's first
    call). POSIX lets the kernel deliver a signal sent to the process to any thread that does
    not block it (Linux prefers the main thread, but not, for one, while it has another signal
    pending); delivered to a worker, Python acts on it only when the main thread next runs
    Python code, so a Ctrl-C during a blocking call in the main thread would go unheard until
    the call returned. Blocked here, it can only reach the main thread."""
    import signal

    if hasattr(signal, "pthread_sigmask"):  # POSIX
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


def _forget_pool_in_child() -> None:
    """A forked child has none of its parent's threads: it makes its own pool when needed."""
    global _pools, _pool_lock, _warnings_lock
    _pools = {}
    _pool_lock, _warnings_lock = threading.Lock(), threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


def usable_cpus() -> int:
    """The CPUs this process may use (its affinity mask where the platform has one, else every
    CPU of the machine; at least 1): what the thread pool and a local Ray instance are sized
    by, and what ``grokaudit train`` caps its threads at. A container or ``taskset`` limit is
    honoured, which ``os.cpu_count()`` alone is not."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # macOS, Windows
        return max(1, os.cpu_count() or 1)


def threads() -> int:
    """The number of threads the blocks run on (``GROKAUDIT_THREADS``, else the usable CPUs,
    at most :data:`MAX_THREADS`); an invalid value counts as unset."""
    env = os.environ.get("GROKAUDIT_THREADS", "").strip()
    # ASCII digits only: str.isdigit() is true for "²" or "٣", which int() refuses
    if env.isascii() and env.isdigit() and int(env) >= 1:
        return min(int(env), 64)
    return min(usable_cpus(), MAX_THREADS)


def row_blocks(n_rows: int, n_cols: int) -> list[slice]:
    """Consecutive row slices covering ``range(n_rows)``, about :data:`BLOCK_ELEMENTS`
    elements each; one slice when the matrix is small (the thread engine's blocks,
    :class:`grokaudit.engine.ThreadEngine`). On several threads, a matrix that would make
    fewer than two blocks per thread is cut into two per thread, none under
    :data:`MIN_BLOCK_ELEMENTS` elements: two blocks of unequal size on two threads leave one
    idle (200 000 runs of 3 points in blocks of 2¹⁹: 1.6× the time of four blocks)."""
    if n_rows * max(n_cols, 1) < MIN_BLOCKED or n_rows <= 1:
        return [slice(0, n_rows)]
    k = max(n_cols, 1)
    per = max(1, BLOCK_ELEMENTS // k)
    n = threads()
    want = 2 * n if n > 1 else 1
    if -(-n_rows // per) < want:
        per = max(1, MIN_BLOCK_ELEMENTS // k, -(-n_rows // want))
    return slices(n_rows, per)


def slices(n_rows: int, per: int) -> list[slice]:
    """Consecutive slices of ``per`` rows (the last one shorter) covering ``range(n_rows)``:
    the blocks of every engine, whatever sizes them."""
    return [slice(r, min(n_rows, r + per)) for r in range(0, n_rows, per)]


def _executor(n: int) -> ThreadPoolExecutor:
    """The pool of ``n`` threads (one per size ever asked for, never shut down while in use:
    two callers asking for different sizes at once each get theirs)."""
    with _pool_lock:
        pool = _pools.get(n)
        if pool is None:
            pool = _pools[n] = ThreadPoolExecutor(max_workers=n, thread_name_prefix=_POOL_PREFIX,
                                                  initializer=leave_ctrl_c_to_the_main_thread)
        return pool


def map_blocks(fn: Callable[[slice], T], blocks: Sequence[slice]) -> list[T]:
    """``[fn(b) for b in blocks]``, on the thread pool when there are several blocks; results
    in block order. An exception in any block is raised here. Called from one of the pool's
    own threads (a block that maps blocks), it runs them in that thread: waiting there on the
    pool could wait for itself.

    With one thread, the blocks run in order on the pool's one thread, not the caller's: on
    the main thread glibc's allocator hands each block's freed temporaries back to the OS and
    the next block faults them in again (A's metric clocks on one CPU: 93 727 page faults
    and 197 ms of system time, 493 ms against 284 ms on the pool's thread, which keeps them:
    ``docs/performance.md``, round 13)."""
    n = threads()
    if len(blocks) <= 1 or threading.current_thread().name.startswith(_POOL_PREFIX):
        return [fn(b) for b in blocks]
    # each block runs in a copy of the caller's context (its context variables, such as the
    # command line's flag spelling of messages), as it would in the caller's own thread
    parent = contextvars.copy_context()
    return list(_executor(n).map(lambda b: parent.copy().run(fn, b), blocks))


def run_each(calls: Sequence[Callable[[], T]]) -> list[T]:
    """``[call() for call in calls]``, on the thread pool as :func:`map_blocks` runs blocks
    (in order on its one thread with one thread); results in the order of ``calls``. The
    calls must not depend on each other: the first ones start first."""
    return map_blocks(lambda b: calls[b.start](), [slice(i, i + 1) for i in range(len(calls))])


def map_rows(fn: Callable[[slice], Sequence[np.ndarray]], blocks: Sequence[slice], n_rows: int,
             mapper: Callable[[Callable[[slice], None], Sequence[slice]], object] | None = None
             ) -> list[np.ndarray]:
    """For each position ``i`` of what ``fn(block)`` returns (arrays of one value per row of the
    block), the arrays of every block joined in block order: what
    ``np.concatenate([fn(b)[i] for b in blocks])`` gives, value for value and dtype for dtype.

    ``mapper`` computes the blocks (``map_blocks`` by default): each block's arrays are copied
    into arrays of ``n_rows`` rows as soon as that block is computed, on the thread that
    computed it, while they are still in its cache -- no list of every block's results is kept
    and joined afterwards (a second pass over all of them, through memory no longer cached:
    0.26–0.58 s of the clocks of a million 50-step runs). A position where a block's array has another
    dtype or shape than the first array computed there is joined by ``np.concatenate`` (the
    dtype it promotes to). One block: its arrays, as they are. ``mapper`` must run ``fn`` in
    this process (threads), where the arrays written are shared."""
    if len(blocks) == 1:
        return list(fn(blocks[0]))
    out: list[np.ndarray] = []
    odd: dict[tuple[int, int], np.ndarray] = {}  # (position, block start) -> its own array
    lock = threading.Lock()

    def run(b: slice) -> None:
        arrays = fn(b)
        with lock:  # the first block computed sets each position's dtype and shape
            if not out:
                out.extend(np.empty((n_rows, *np.shape(a)[1:]), dtype=np.asarray(a).dtype)
                           for a in arrays)
        rows = b.stop - b.start
        for i, a in enumerate(arrays):
            a = np.asarray(a)
            if a.dtype == out[i].dtype and a.shape == (rows, *out[i].shape[1:]):
                out[i][b] = a
            else:
                with lock:
                    odd[(i, b.start)] = a

    (mapper or map_blocks)(run, blocks)
    for i in sorted({i for i, _ in odd}):
        out[i] = np.concatenate([odd.get((i, b.start), out[i][b]) for b in blocks])
    return out


@contextmanager
def quiet_runtime_warnings() -> Iterator[None]:
    """``warnings.catch_warnings`` with RuntimeWarnings ignored, safe across the pool's
    threads: the warnings filters are process-wide, and two overlapping ``catch_warnings``
    blocks on two threads would restore each other's filters in the wrong order."""
    with _warnings_lock, warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield
