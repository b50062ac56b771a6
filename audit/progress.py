"""Progress on stderr, for every command, reader and the trainer: one rule for when it shows.

Three kinds of long work say how far they are, and all of them follow :func:`enabled` (stderr
is a terminal, or ``GROKAUDIT_PROGRESS=1``; ``GROKAUDIT_PROGRESS=0``: never) and never write to
stdout, so that ``--json -`` stays one clean JSON document:

* a command's stages (``check: log read and validated (4.1 s)``): :func:`printer`,
  :func:`stopwatch` (shown once the command has run :data:`DELAY_S` seconds) and
  :func:`counted` (a JSON output as it is written);
* a long read (``reading sweep/: 120 files, 3,200,000 points (4 s)…``): :func:`reading`
  around it, :func:`tick` from every reader's points (``grokaudit.adapters.points.Points``)
  and :func:`stage` for what follows the files; shown once the read has taken
  :data:`DELAY_S` seconds, then at most every :data:`INTERVAL_S` seconds, plus one last line;
* the trainer's run-steps (:class:`Progress`: a bar on a terminal, plain lines in logs, CI
  and SLURM).

So a fast command prints nothing.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TextIO

from .text import safe

#: Seconds of work before the first progress line (of a command's stages or of a read).
DELAY_S = 3.0
#: Seconds between two lines of a read's progress.
INTERVAL_S = 2.0


def enabled() -> bool:
    """Whether progress lines may go to stderr: stderr is a terminal, or
    ``GROKAUDIT_PROGRESS=1`` (``GROKAUDIT_PROGRESS=0``: never). Progress never goes to stdout.
    The one rule for every command, reader and the trainer's ``auto`` mode."""
    wanted = os.environ.get("GROKAUDIT_PROGRESS")
    if wanted == "0":
        return False
    if wanted == "1":
        return True
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stderr
        return False


def _write(line: str) -> None:
    """One line on stderr; a closed stderr must not fail the work it reports on."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


# -- a command's stages -----------------------------------------------------------------------

def printer(what: str) -> Callable[[str], None] | None:
    """A function that prints one progress line on stderr (``report: figure 3/8 …``) when
    progress is shown (:func:`enabled`); None otherwise."""
    if not enabled():
        return None

    def show(line: str) -> None:
        _write(f"{what}: {safe(line)}")

    return show


def stopwatch(what: str) -> Callable[[str], None]:
    """A progress line with the seconds since the last (``check: log read and validated
    (4.1 s)``) when progress is shown and the command has run for :data:`DELAY_S`; else
    nothing."""
    show = printer(what)
    start = last = time.perf_counter()

    def say(line: str) -> None:
        nonlocal last
        now = time.perf_counter()
        if show is not None and now - start >= DELAY_S:
            show(f"{line} ({now - last:.1f} s)")
        last = now

    return say


def counted(chunks: Iterator[str], say: Callable[[str], None], every: int = 1 << 28
            ) -> Iterator[str]:
    """``chunks``, saying every ``every`` characters (256 Mi) how much of the JSON is
    written, and when it is whole."""
    n, next_at = 0, every
    for c in chunks:
        n += len(c)
        yield c
        if n >= next_at:
            say(f"{n >> 20:,} MiB written")
            next_at = n + every
    say(f"written, {n >> 20:,} MiB")


# -- a long read ------------------------------------------------------------------------------

class _Reading:
    """The progress of one read: points and files so far, when the next line is due."""

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
        _write(f"reading {safe(self.label)}: {text}")


_current: ContextVar[_Reading | None] = ContextVar("grokaudit_read_progress", default=None)


@contextmanager
def reading(label: str) -> Iterator[None]:
    """Report the progress of the read of ``label`` (a path) while the block runs."""
    if not enabled():
        yield
        return
    progress = _Reading(label)
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


# -- the trainer's run-steps ------------------------------------------------------------------

class Progress:
    """Reports run-steps done out of a total. ``mode``: ``bar``, ``lines`` or ``none``;
    ``auto`` picks ``bar`` on a TTY and ``lines`` elsewhere (logs, CI, SLURM)."""

    def __init__(self, total: int, mode: str = "auto", stream: TextIO | None = None,
                 line_seconds: float = 30.0) -> None:
        self.stream = stream or sys.stderr
        if mode == "auto":
            mode = "bar" if self.stream.isatty() else "lines"
        self.mode, self.total, self.done = mode, max(total, 1), 0
        self.t0 = self.last = time.monotonic()
        self.line_seconds = line_seconds
        self.label = ""

    def advance(self, n: int, label: str = "") -> None:
        if n <= 0:
            return
        self.done += n
        self.label = label or self.label
        now = time.monotonic()
        every = 0.25 if self.mode == "bar" else self.line_seconds
        if self.mode != "none" and (now - self.last >= every or self.done >= self.total):
            self.last = now
            self._show(now)

    def _show(self, now: float) -> None:
        el = max(now - self.t0, 1e-9)
        rate = self.done / el
        eta = (self.total - self.done) / rate if rate > 0 else float("inf")
        frac = self.done / self.total
        text = (f"{self.label} {self.done}/{self.total} run-steps ({100 * frac:.0f}%) "
                f"{rate:.0f} run-steps/s, elapsed {el:.0f}s, ETA {eta:.0f}s")
        if self.mode == "bar":
            n = int(30 * frac)
            self.stream.write("\r[" + "#" * n + "." * (30 - n) + "] " + text)
            if self.done >= self.total:
                self.stream.write("\n")
        else:
            self.stream.write("progress: " + text + "\n")
        self.stream.flush()

    def message(self, text: str) -> None:
        if self.mode == "bar":
            self.stream.write("\r\033[K")
        # Messages (resume, per-run summaries, a stop) print even with mode "none".
        self.stream.write(text + "\n")
        self.stream.flush()


__all__ = ["DELAY_S", "INTERVAL_S", "Progress", "counted", "enabled", "printer", "reading",
           "stage", "stopwatch", "tick"]
