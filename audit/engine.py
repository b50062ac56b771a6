"""Where the per-run clocks are computed: an :class:`Engine`, passed to the audit as a parameter.

The clocks are row-wise (run ``r``'s results depend on row ``r`` of the packed matrices alone),
so the audit cuts the runs into blocks and maps a function over them; an engine decides both
the blocks and where the function runs:

* :class:`ThreadEngine` (the default, :data:`THREADS`): a pool of threads of this process
  (:mod:`grokaudit.blocks`, ``GROKAUDIT_THREADS``);
* :class:`RayEngine`: one Ray task per group of runs, on the cluster at ``RAY_ADDRESS`` or a
  local Ray instance started for the purpose (:func:`start_ray`).

The output is the same on either, byte for byte: only where the work runs changes.
``grokaudit check --engine NAME`` builds its engine with :func:`engine_named` and hands it to
:func:`grokaudit.api.audit_log` (or :func:`grokaudit.stream.audit_stream_with_trajectories`),
which hand it down to :func:`grokaudit.clocks.accuracy_clocks` and
:func:`grokaudit.clocks.metric_clocks`, where the blocks are mapped: the engine is a parameter
of every function on the way, never process state.

This module is also the one place that starts Ray (:func:`start_ray`, shared with
``grokaudit train --engine ray``) and counts the CPUs this process may use
(:func:`usable_cpus`).
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar

from .blocks import BLOCK_ELEMENTS, map_blocks, row_blocks, slices, threads
from .blocks import usable_cpus as usable_cpus  # the one CPU count, offered here
from .errors import ConfigError, ErrorCode, MissingExtraError

T = TypeVar("T")

#: The engines :func:`engine_named` knows: ``threads`` (this process) or ``ray`` (Ray tasks).
ENGINES = ("threads", "ray")
#: What a missing Ray extra says (``MISSING_EXTRA``).
RAY_MISSING = "--engine ray needs Ray: pip install 'grokaudit[ray]'"


class Engine(Protocol):
    """What the audit asks of an engine: how to cut ``n_rows`` runs into blocks, and
    ``[fn(b) for b in blocks]`` computed somewhere, results in block order (an exception in any
    block raised to the caller). A block's results must not depend on the blocking."""

    def blocks(self, n_rows: int, n_cols: int) -> list[slice]:
        """Consecutive row slices covering ``range(n_rows)`` of an ``(n_rows, n_cols)``
        matrix."""
        ...

    def map(self, fn: Callable[[slice], T], blocks: Sequence[slice]) -> list[T]:
        """``[fn(b) for b in blocks]``, in block order."""
        ...


@dataclass(frozen=True)
class ThreadEngine:
    """The blocks on a pool of threads of this process (:func:`grokaudit.blocks.map_blocks`;
    ``GROKAUDIT_THREADS`` threads, read at each call), numpy releasing the GIL inside its
    array loops. Blocks of about :data:`grokaudit.blocks.BLOCK_ELEMENTS` elements, which bounds
    the memory of the temporaries."""

    name: ClassVar[str] = "threads"

    def blocks(self, n_rows: int, n_cols: int) -> list[slice]:
        """:func:`grokaudit.blocks.row_blocks`."""
        return row_blocks(n_rows, n_cols)

    def map(self, fn: Callable[[slice], T], blocks: Sequence[slice]) -> list[T]:
        """:func:`grokaudit.blocks.map_blocks`."""
        return map_blocks(fn, blocks)


#: The default engine of every function that takes one.
THREADS = ThreadEngine()


@dataclass(frozen=True)
class RayEngine:
    """One Ray task per group of runs, on the cluster at ``RAY_ADDRESS`` or a local Ray
    instance of ``num_cpus`` CPUs (default: the thread engine's thread count,
    :func:`grokaudit.blocks.threads`), started on first use (:meth:`start`)."""

    name: ClassVar[str] = "ray"
    num_cpus: int | None = None

    def start(self) -> Any:
        """Ray, started (or reached) once per process: the ``ray`` module."""
        return start_ray(threads() if self.num_cpus is None else self.num_cpus)

    def cpus(self) -> int:
        """The CPUs of the cluster."""
        return max(1, int(self.start().cluster_resources().get("CPU", 1)))

    def blocks(self, n_rows: int, n_cols: int) -> list[slice]:
        """At least two groups of runs per CPU of the cluster, so that every worker has work,
        none larger than the thread engine's blocks (their temporaries fit a worker as they fit
        this process); several runs make several groups however small the matrix."""
        if n_rows <= 1:
            return [slice(0, n_rows)]
        return slices(n_rows, max(1, min(BLOCK_ELEMENTS // max(n_cols, 1),
                                         -(-n_rows // (2 * self.cpus())))))

    def map(self, fn: Callable[[slice], T], blocks: Sequence[slice]) -> list[T]:
        """One Ray task per block; ``fn`` (with the matrices it closes over) is put in the
        object store once and shared by the tasks (numpy arrays are read there without
        copies). A task whose worker dies is retried by Ray (``max_retries``); results come
        back in block order."""
        ray = self.start()
        remote = ray.remote(max_retries=3)(_ray_call)
        ref = ray.put(fn)
        out: list[T] = ray.get([remote.remote(ref, b) for b in blocks])
        return out


def _ray_call(fn: Callable[[slice], T], block: slice) -> T:
    """One block, in a Ray worker (a module-level function: Ray pickles it by reference)."""
    return fn(block)


def engine_named(name: str) -> Engine:
    """The engine ``--engine NAME`` names, ready to run: for ``ray``, Ray is started (or its
    cluster reached) now, so that a missing extra or an unreachable cluster fails before any
    work. Raises :class:`ConfigError` (``INVALID_OPTION``) for a name not in
    :data:`ENGINES`, :class:`MissingExtraError` without Ray."""
    if name == ThreadEngine.name:
        return THREADS
    if name == RayEngine.name:
        eng = RayEngine()
        eng.start()
        return eng
    raise ConfigError(f"engine {name!r}: choose one of {', '.join(ENGINES)}",
                      code=ErrorCode.INVALID_OPTION, option="--engine")


def start_ray(num_cpus: int | None = None, *, object_store_memory: int | None = None,
              configure_logging: bool = False) -> Any:
    """The ``ray`` module, connected: this process's Ray if it already has one (Python
    callers, tests), else the cluster ``RAY_ADDRESS`` names, else a new local instance of
    ``num_cpus`` CPUs (default :func:`usable_cpus`) and ``object_store_memory`` bytes — never
    a cluster that merely happens to run on this machine. Quiet: no dashboard, the workers'
    output kept in Ray's session logs; with ``configure_logging`` Ray's own logger is set up to
    show errors only, else Python's logging is left to the host. The command line's SIGTERM
    handler is kept while the command runs (:func:`_init_keeping_sigterm`). Raises
    :class:`MissingExtraError` without Ray; Ray's own errors (an unreachable cluster)
    propagate."""
    try:
        ray: Any = importlib.import_module("ray")
    except ImportError:
        raise MissingExtraError(RAY_MISSING) from None
    if ray.is_initialized():
        return ray
    address = os.environ.get("RAY_ADDRESS", "").strip()
    kw: dict[str, Any] = {"address": address or "local", "include_dashboard": False,
                          "log_to_driver": False, "logging_level": logging.ERROR,
                          "configure_logging": configure_logging}
    if not address:  # Ray refuses sizes for a cluster it only connects to
        kw["num_cpus"] = usable_cpus() if num_cpus is None else num_cpus
        if object_store_memory is not None:
            kw["object_store_memory"] = object_store_memory
    _init_keeping_sigterm(ray, kw)
    return ray


def _init_keeping_sigterm(ray: Any, kw: dict[str, Any]) -> None:
    """``ray.init(**kw)``, the command's SIGTERM handler kept: Ray's init replaces it with its
    own (exit 15, nothing said, a temporary file left to chance). While the command runs,
    SIGTERM stays the command's (:func:`grokaudit.signals.sigterm_raises`: what is written is
    removed, exit 143; Ray still shuts down at exit); Ray's handler is stored in the command's
    ``grokaudit_after`` and put back when the command ends."""
    import signal
    import threading

    main = threading.current_thread() is threading.main_thread()
    before = signal.getsignal(signal.SIGTERM) if main else None
    ray.init(**kw)
    if before is not None and hasattr(before, "grokaudit_after"):
        setattr(before, "grokaudit_after", signal.getsignal(signal.SIGTERM))  # noqa: B010
        signal.signal(signal.SIGTERM, before)
