"""Progress of a long read, on stderr: ``reading sweep/: 120 files, 3,200,000 points (4 s)…``.

One place for every reader: :func:`grokaudit.adapters.read_log` opens the read with
:func:`reading`, and :meth:`Points.add <grokaudit.adapters.points.Points.add>` — which every
reader's points pass through — calls :func:`tick`. A line is printed only once the read has
taken :data:`DELAY_S` seconds, then at most every :data:`INTERVAL_S` seconds, plus one last line
when it ends (so a fast read prints nothing); and only when stderr is a terminal or
``GROKAUDIT_PROGRESS=1`` (``GROKAUDIT_PROGRESS=0``: never) — the rule of ``grokaudit report``'s
progress. Never on stdout, so ``--json -`` stays a clean JSON document.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from grokaudit.text import progress_enabled, safe

#: seconds of reading before the first line
DELAY_S = 3.0
#: seconds between two lines
INTERVAL_S = 2.0


def enabled() -> bool:
    """True when progress may be shown (:func:`grokaudit.text.progress_enabled`)."""
    shown: bool = progress_enabled()
    return shown


class _Progress:
    def __init__(self, label: str) -> None:
        self.label = label
        self.start = time.monotonic()
        self.next = self.start + DELAY_S
        self.points = 0
        self.files = 0
        self.shown = False

    def tick(self, n_points: int, n_files: int) -> None:
        self.points += n_points
        self.files = max(self.files, n_files)
        now = time.monotonic()
        if now >= self.next:
            self.next = now + INTERVAL_S
            self._show(f"{self._counts()} ({now - self.start:.0f} s)…")

    def stage(self, what: str) -> None:
        now = time.monotonic()
        if self.shown or now >= self.start + DELAY_S:
            self.next = now + INTERVAL_S
            self._show(f"{what}: {self._counts()} ({now - self.start:.0f} s)…")

    def done(self) -> None:
        if self.shown:
            self._show(f"done: {self._counts()} in {time.monotonic() - self.start:.1f} s")

    def _counts(self) -> str:
        files = f"{self.files} file{'' if self.files == 1 else 's'}, " if self.files else ""
        return f"{files}{self.points:,} points"

    def _show(self, text: str) -> None:
        self.shown = True
        try:
            sys.stderr.write(f"reading {safe(self.label)}: {text}\n")
            sys.stderr.flush()
        except (OSError, ValueError):  # a closed stderr must not fail the read
            pass


_current: ContextVar[_Progress | None] = ContextVar("grokaudit_read_progress", default=None)


@contextmanager
def reading(label: str) -> Iterator[None]:
    """Report the progress of the read of ``label`` (a path) while the block runs."""
    if not enabled():
        yield
        return
    progress = _Progress(label)
    token = _current.set(progress)
    try:
        yield
    finally:
        _current.reset(token)
    progress.done()


def tick(n_points: int, n_files: int) -> None:
    """``n_points`` more points read, ``n_files`` files opened so far (from ``Points.add``)."""
    progress = _current.get()
    if progress is not None:
        progress.tick(n_points, n_files)


def stage(what: str) -> None:
    """A step of the read after the files (``joining by run and step``); shown only once the
    read has taken long enough to show progress."""
    progress = _current.get()
    if progress is not None:
        progress.stage(what)
