"""Progress reporting: a bar with steps/s and ETA on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
import time
from typing import TextIO


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
