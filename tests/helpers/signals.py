"""Children that are sent Ctrl-C start as a command typed at a terminal does."""

from __future__ import annotations

import signal


def as_from_a_terminal() -> None:
    """``preexec_fn`` of a child that a test sends SIGINT: Ctrl-C's default action, as a
    command typed at a terminal starts with. A child inherits an ignored SIGINT (pytest-xdist's
    workers ignore it), and a process started so keeps ignoring it, as it should (a script's
    background job): the signal would do nothing, and the test would depend on whether an
    earlier test in its worker had set a handler."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
