"""The signals a command handles while it runs, apart from the commands themselves.

Ctrl-C (SIGINT) stays Python's ``KeyboardInterrupt`` during reads (:func:`ctrl_c_kept`);
SIGTERM raises :class:`Terminated` and SIGHUP :class:`HungUp` in the main thread
(:func:`sigterm_raises`, :func:`sighup_raises`), so that what is being written is removed
before the exit code says what happened (130, 143, 129: ``grokaudit.cli`` maps them). A host
that set its own handler, or ignores a signal (``nohup``), keeps it; a process forked while a
command runs gets the default handlers back.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def ctrl_c_kept() -> Iterator[None]:
    """pyarrow's own Ctrl-C handling off while a command runs: during a read it takes SIGINT
    from Python and hands it on from a thread of its own, and a press near the end of a read
    was lost (the audit ran on to its exit code). Off, a press during a long read is acted on
    when the read returns. Back to pyarrow's default afterwards (it cannot say its setting)."""
    import pyarrow as pa

    pa.enable_signal_handlers(False)
    try:
        yield
    finally:
        pa.enable_signal_handlers(True)


class Terminated(BaseException):
    """SIGTERM (``kill``, ``timeout``, a scheduler or CI cancelling the job) while a command
    runs: raised in the main thread, as Ctrl-C raises KeyboardInterrupt, so that what is being
    written is removed (no temporary file left beside an output) before exit 143 (128 +
    SIGTERM). A BaseException: no ``except Exception`` on the way takes it for an error."""


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` while a command runs, where the process has no
    handler of its own for it (a host that set one, or ignores it, keeps it). When the command
    ends, SIGTERM goes back to what it was, or to the handler of what the command started
    (Ray's, ``grokaudit_after``: :func:`~grokaudit.engine.start_ray` keeps this one in place
    while the command runs)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    def handle(signum: int, frame: Any) -> None:
        raise Terminated()

    setattr(handle, "grokaudit_after", signal.SIG_DFL)  # noqa: B010 - read by start_ray
    signal.signal(signal.SIGTERM, handle)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGTERM) is handle:  # else a handler set since is kept
            signal.signal(signal.SIGTERM, getattr(handle, "grokaudit_after"))  # noqa: B009


class HungUp(Terminated):
    """SIGHUP (the terminal or the SSH session that started the command went away) while a
    command runs: handled as SIGTERM is (what is being written is removed), exit 129 (128 +
    SIGHUP)."""


@contextlib.contextmanager
def sighup_raises() -> Iterator[None]:
    """SIGHUP raises :class:`HungUp` while a command runs, where the process has no handler of
    its own for it (``nohup``, which ignores it, is kept); back to what it was afterwards."""
    import signal
    import threading

    hup = getattr(signal, "SIGHUP", None)
    if hup is None or threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(hup) is not signal.SIG_DFL:
        yield
        return

    def handle(signum: int, frame: Any) -> None:
        raise HungUp()

    setattr(handle, "grokaudit_hup", True)  # noqa: B010 - read by the child reset below
    signal.signal(hup, handle)
    try:
        yield
    finally:
        if signal.getsignal(hup) is handle:
            signal.signal(hup, signal.SIG_DFL)


def _default_handlers_in_child() -> None:
    """A process forked while a command runs (the report's figure workers) dies of SIGTERM as
    before: the command's handler (:func:`sigterm_raises`) is its parent's alone, never a
    worker's traceback."""
    import signal

    try:
        if hasattr(signal.getsignal(signal.SIGTERM), "grokaudit_after"):
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
        hup = getattr(signal, "SIGHUP", None)
        if hup is not None and hasattr(signal.getsignal(hup), "grokaudit_hup"):
            signal.signal(hup, signal.SIG_DFL)
    except ValueError:  # not the child's main thread: nothing Python could run there
        pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_default_handlers_in_child)


__all__ = ["HungUp", "Terminated", "ctrl_c_kept", "sighup_raises", "sigterm_raises"]
