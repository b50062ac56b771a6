"""Follow a log folder while it is written: each run's live state, and when it is settled.

:class:`Watcher` reads the folder with the same loader as ``check`` (a RunLogger folder,
TensorBoard event files, JSONL, any readable format), feeds each run's new rows to its
:class:`~grokaudit.live.LiveRun`, and returns the runs whose state changed. A run is *done*
when it is settled (its numbers defined and held over the margin: what ``stop_when="settled"``
stops on) or stopped (its RunLogger closed it, or it logged nothing new for ``idle``
seconds). ``grokaudit watch`` prints the changes, as text or JSON lines, until every run is
done.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from .config import AuditConfig
from .errors import ErrorCode, LogFormatError
from .live import DEFAULT_GROK_MULTIPLE, DEFAULT_MARGIN, LiveRun, LiveState
from .refusals import refuse_table, refuse_unseen
from .results import format_number, number
from .shards import run_id_text, spelled_as_python
from .text import safe
from .trail import file_stamps


@dataclass(frozen=True)
class RunWatch:
    """One run's line: its live state, whether it is settled, stopped, and why it is done."""

    state: LiveState
    settled: bool  #: defined and held over the margin
    stopped: bool  #: closed by its logger, or idle
    why_stopped: str | None = None  #: ``closed`` or ``idle``

    @property
    def done(self) -> bool:
        return self.settled or self.stopped

    def to_dict(self) -> dict[str, Any]:
        return {"event": "run", **self.state.to_dict(), "settled": self.settled,
                "stopped": self.stopped, "why_stopped": self.why_stopped}

    def describe(self) -> str:
        tail = ("; settled" if self.settled else
                f"; stopped ({self.why_stopped}) with numbers not defined"
                if self.stopped and not self.state.defined else
                f"; stopped ({self.why_stopped})" if self.stopped else "")
        return self.state.describe() + tail


@dataclass
class Watcher:
    """Poll ``paths`` (see the module's docstring). ``read`` reads the paths as one canonical
    table (default: the loader of ``check``, partial logs allowed). ``final``: nothing more
    will be logged (``--once``): a column the config names that is not there yet is refused as
    ``check`` refuses it, not waited for."""

    paths: Sequence[str]
    config: AuditConfig
    margin: float = DEFAULT_MARGIN
    idle: float = 600.0
    grok_multiple: float = DEFAULT_GROK_MULTIPLE
    read: Callable[[], pa.Table] | None = None
    clock: Callable[[], float] = time.monotonic
    #: how the paths are read (``check``'s ``--format``, ``--map``, ``--run-from``, ``--cond``)
    read_options: Mapping[str, Any] = field(default_factory=dict)
    final: bool = False
    runs: dict[str, LiveRun] = field(default_factory=dict)
    last: dict[str, RunWatch] = field(default_factory=dict)
    columns: set[str] = field(default_factory=set)  #: every column seen in any read
    #: what a read showed that the run lines do not: rows that vanished (a log truncated or
    #: rewritten), runs whose log went; drained by :func:`watch`, which says each
    notes: list[dict[str, Any]] = field(default_factory=list)
    #: the watched paths that were there once and went (deleted, moved away)
    vanished: list[str] = field(default_factory=list)
    _types: dict[str, pa.DataType] = field(default_factory=dict)
    _grew: dict[str, float] = field(default_factory=dict)
    _seen: dict[str, int] = field(default_factory=dict)
    _extent: dict[str, tuple[int, float]] = field(default_factory=dict)

    @property
    def where(self) -> str:
        """The watched paths as messages name them."""
        paths = self.paths or self.vanished  # every watched path went: named as they were
        return str(paths[0]) if len(paths) == 1 else ", ".join(map(str, paths))

    def poll(self) -> list[RunWatch]:
        """Read the paths once; the runs whose line changed (a new run, rows that change its
        state, settled, stopped). Each run is audited on all of its rows as read — late rows
        at an earlier step included — exactly as ``check`` reads them. What ``check`` refuses
        is refused first (:func:`~grokaudit.refusals.refuse_table`)."""
        table = self._read()
        now = self.clock()
        closed = closed_runs(self.paths)
        changed: list[RunWatch] = []
        df = table.to_pandas()
        if "run" in df.columns and spelled_as_python(table.schema.field("run").type):
            # float or boolean ids spelled as check spells them (a float32 1.1 is "1.1";
            # -0.0 and 0.0 two runs)
            df["run"] = np.asarray(run_id_text(table.column("run")).to_pylist(), dtype=object)
        self.columns |= {str(c) for c in df.columns}
        self._types.update({str(f.name): f.type for f in table.schema})
        refuse_table(table, self.config, path=self.where, partial=True,
                     waiting=not self.final)
        if "run" not in df.columns or "step" not in df.columns:
            return changed
        num = [c for c in df.columns if c not in ("run", "step")
               and df[c].dtype.kind in "fiub"]
        read: set[str] = set()
        for run, g in df.groupby("run", sort=True):
            rid = str(run)
            read.add(rid)
            live = self.runs.get(rid)
            if live is None:
                live = self.runs[rid] = LiveRun(rid, config=self.config, margin=self.margin,
                                                grok_multiple=self.grok_multiple)
                self._grew[rid] = now
            rows = g[["step", *num]].sort_values("step", kind="stable")
            self._shrunk(rid, rows)
            mark = int(pd.util.hash_pandas_object(rows, index=False).sum())
            grew = self._seen.get(rid) != mark
            if grew:
                live.observe(rows)
                self._seen[rid] = mark
                self._grew[rid] = now
            old = self.last.get(rid)
            if old is not None and old.done:
                continue  # done once is done: nothing more is printed for it
            if not grew and old is not None and not self._idle(rid, now, closed):
                continue
            st = live.state()
            settled = st.settled
            why = "closed" if closed is not None and rid in closed else (
                "idle" if now - self._grew[rid] >= self.idle else None)
            rw = RunWatch(st, settled, why is not None and not settled, why if not settled
                          else None)
            if old is None or _line(old) != _line(rw):
                changed.append(rw)
            self.last[rid] = rw
        return changed + self._absent(read, now)

    def _shrunk(self, rid: str, rows: pd.DataFrame) -> None:
        """Note a run with fewer rows, or a lower last step, than the last read gave it (its
        log truncated or rewritten): rows vanished, said, never a silent rewind."""
        n = len(rows)
        last = float(rows["step"].max()) if n else float("nan")
        before = self._extent.get(rid)
        self._extent[rid] = (n, last)
        if before is None or (n >= before[0] and not last < before[1]):
            return
        self.notes.append({
            "event": "rows_vanished", "run": rid, "rows_before": before[0], "rows": n,
            "last_step_before": number(before[1]), "last_step": number(last),
            "message": f"rows vanished: run {safe(rid)} had {before[0]} row(s) up to step "
                       f"{format_number(before[1])}, now {n} up to step "
                       f"{format_number(last)} (its log was truncated or rewritten)"})

    def _absent(self, read: set[str], now: float) -> list[RunWatch]:
        """Runs seen before and missing from this read: noted once; stopped (``vanished``)
        when a watched path went, else once idle, as a run that logs nothing new."""
        out: list[RunWatch] = []
        for rid, old in list(self.last.items()):
            if rid in read or old.done:
                continue
            if self._extent.get(rid, (0, 0.0))[0]:
                self._shrunk(rid, pd.DataFrame({"step": pd.Series([], dtype=float)}))
            why = ("vanished" if self.vanished else
                   "idle" if now - self._grew[rid] >= self.idle else None)
            if why is None:
                continue
            rw = RunWatch(old.state, False, True, why)
            self.last[rid] = rw
            out.append(rw)
        return out

    def forget(self, path: str) -> None:
        """``path`` went (deleted or moved away): it is no longer read."""
        self.vanished.append(path)
        self.paths = [p for p in self.paths if p != path]

    def refuse_what_check_refuses(self) -> None:
        """Nothing more will be logged (``--once``, every run done): a column the config
        names (``--metric``, ``--grok-on``) that no read has seen is refused as ``check``
        refuses it (``METRIC_NOT_FOUND``, ``MISSING_COLUMN``), not waited for."""
        refuse_unseen(self._types, self.config, self.where)

    def _idle(self, rid: str, now: float, closed: set[str] | None) -> bool:
        return (closed is not None and rid in closed) or now - self._grew[rid] >= self.idle

    @property
    def done(self) -> bool:
        """Every run seen is settled or stopped (and at least one run was seen)."""
        return bool(self.last) and all(w.done for w in self.last.values())

    def _read(self) -> pa.Table:
        if self.read is not None:
            return self.read()
        from .limits import Limits
        from .loader import read_any

        o = self.read_options
        return read_any(list(self.paths), o.get("fmt"), mapping=o.get("mapping"),
                        run_from=o.get("run_from"), cond=o.get("cond"),
                        on_duplicate=self.config.on_duplicate, partial=True,
                        limits=Limits.of(self.config), layout=o.get("layout"))

def _line(w: RunWatch) -> tuple[Any, ...]:
    s = w.state
    return (s.defined, s.defined_from, tuple(g.code for g in s.missing), w.settled, w.stopped,
            s.grokked)


def closed_runs(paths: Sequence[str | os.PathLike[str]]) -> set[str] | None:
    """The runs a RunLogger folder marks closed (``None`` when no path is such a folder: the
    format says nothing of when a run ends)."""
    import json

    from .logger import is_run_folder

    out: set[str] | None = None
    for p in map(Path, paths):
        if not p.is_dir() or not is_run_folder(p):
            continue
        out = out if out is not None else set()
        for claim in p.glob("*.claim"):
            try:
                info = json.loads(claim.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(info, Mapping) and info.get("closed") and "run" in info:
                out.add(str(info["run"]))
    return out


class CtrlC:
    """Ctrl-C for ``grokaudit watch``, as a context: it is acted on whenever it is pressed,
    however busy the watch is. The first press raises :class:`KeyboardInterrupt` (as Python's
    own handler does) and is recorded; if code that the watch calls swallows that exception
    (CPython drops one raised while it closes a file object that is being garbage collected),
    the next :meth:`sleep` raises it again. Once the first has been raised, or once
    :meth:`disarm` is called (the summary is being printed), a press is only recorded: a
    second Ctrl-C cannot cut the summary short. pyarrow's own Ctrl-C handling is turned off
    inside the context: during a CSV read it takes SIGINT from Python and, when the read ends
    before its signal thread has passed the signal on, the press is lost (the watch would go
    on polling). Outside the main thread (where Python cannot set a signal handler), and in a
    process started with SIGINT ignored, it does nothing."""

    def __init__(self) -> None:
        self.pressed = False  #: Ctrl-C was pressed at least once
        self._armed = True
        self._old: Any = None
        self._installed = False

    def __enter__(self) -> CtrlC:
        # a process started with Ctrl-C ignored (a script's background job) keeps ignoring it,
        # as every other command does: Python leaves an inherited SIG_IGN in place
        if threading.current_thread() is threading.main_thread() \
                and signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
            self._old = signal.signal(signal.SIGINT, self._handle)
            self._installed = True
            pa.enable_signal_handlers(False)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._installed:
            self._installed = False
            pa.enable_signal_handlers(True)  # pyarrow's default (it cannot say its setting)
            signal.signal(signal.SIGINT, signal.default_int_handler if self._old is None
                          else self._old)

    def _handle(self, signum: int, frame: object) -> None:
        self.pressed = True
        if self._armed:
            self._armed = False
            raise KeyboardInterrupt

    def disarm(self) -> None:
        """From now on a Ctrl-C is only recorded (:attr:`pressed`)."""
        self._armed = False

    def sleep(self, seconds: float) -> None:
        """``time.sleep``, raising :class:`KeyboardInterrupt` if Ctrl-C has been pressed (its
        first exception swallowed by code the watch called)."""
        if self.pressed:
            raise KeyboardInterrupt
        time.sleep(seconds)


def watch(paths: Sequence[str], config: AuditConfig, *, margin: float = DEFAULT_MARGIN,
          interval: float = 5.0, idle: float = 600.0, once: bool = False,
          emit: Callable[[RunWatch], None], note: Callable[[str], None] | None = None,
          sleep: Callable[[float], None] = time.sleep, max_polls: int | None = None,
          read_options: Mapping[str, Any] | None = None,
          started: Callable[[Watcher], None] | None = None,
          event: Callable[[Mapping[str, Any]], None] | None = None,
          grok_multiple: float = DEFAULT_GROK_MULTIPLE) -> Watcher:
    """Poll until every run is done (``once``: a single pass). ``emit`` receives every changed
    line; ``note`` a line about the wait (nothing written yet) or a read that failed midway (a
    file being written), retried at the next poll until ``idle`` seconds of failed reads;
    ``event`` (and ``note``, as a line) what the run lines do not show: a watched path that
    went (``vanished``), rows that vanished from a run (``rows_vanished``). When no watched
    path remains the watch ends: with the runs seen (stopped, ``vanished``), or, when none
    was ever read, ``FILE_NOT_FOUND``. Once nothing more will be logged (``once``, every run
    done) a column the config names that never appeared is refused as ``check`` refuses it.
    Returns the watcher (its ``last`` lines are the final state). A ``KeyboardInterrupt``
    propagates; the caller prints what was seen."""
    w = Watcher(list(paths), config, margin=margin, idle=idle,
                read_options=dict(read_options or {}), final=once,
                grok_multiple=grok_multiple)
    if started is not None:  # the caller keeps it: an interrupt still shows what was seen
        started(w)
    polls = 0
    failing_since: float | None = None
    failing_stamps: dict[str, tuple[int, int]] = {}
    said: set[str] = set()
    there: set[str] = set()  # the watched paths seen on disk at least once

    def say(line: str) -> None:
        if note is not None and line not in said:
            said.add(line)
            note(line)

    def tell(ev: Mapping[str, Any]) -> None:
        if event is not None:
            event(ev)
        if note is not None:
            note(str(ev["message"]))

    while True:
        polls += 1
        for ev in _vanished(w, there):
            tell(ev)
        if not w.paths:  # every watched path went: nothing more can be read
            if not w.last:
                raise LogFormatError(
                    "went (deleted or moved away) before any run was read: nothing left to "
                    "watch; watch the log where it is now", path=", ".join(w.vanished),
                    code=ErrorCode.FILE_NOT_FOUND)
            for rw in w._absent(set(), w.clock()):
                emit(rw)
            return w
        try:
            for rw in w.poll():
                emit(rw)
            failing_since = None
        except LogFormatError as exc:
            waiting = exc.code in (ErrorCode.FILE_NOT_FOUND, ErrorCode.NO_SHARDS,
                                   ErrorCode.NO_ROWS, ErrorCode.FILE_EMPTY,
                                   ErrorCode.FORMAT_MISMATCH)
            if once:
                raise _named(exc, w.paths) from None
            gone = ([p for p in w.paths if not os.path.lexists(p)
                     and not os.path.isdir(os.path.dirname(os.path.abspath(p)))]
                    if exc.code == ErrorCode.FILE_NOT_FOUND and polls == 1 else [])
            if gone:
                # neither the path nor its folder exists: a typo, not a log yet to be made
                raise LogFormatError("neither it nor its folder exists; check the path (a "
                                     "log not yet written is waited for when its folder "
                                     "exists)", path=", ".join(map(str, gone)),
                                     code=ErrorCode.FILE_NOT_FOUND) from None
            now = w.clock()
            # a log that still grows is retried from its last change (an early percent run
            # is refused until three values pass 1.5%: its training goes on meanwhile);
            # ``idle`` seconds without a change end the wait, with check's refusal
            stamps = file_stamps(w.paths)
            if failing_since is None or stamps != failing_stamps:
                failing_since, failing_stamps = now, stamps
            if now - failing_since >= max(idle, interval):
                # nothing appeared or changed for ``idle`` seconds: a wait has an end
                raise _named(exc, w.paths) from None
            say(f"waiting for {', '.join(safe(p) for p in w.paths)}: {safe(str(exc))} "
                f"(for at most {max(idle, interval):g} s without a change)"
                if waiting else f"read failed ({safe(str(exc))}); retrying every {interval:g} s")
        while w.notes:
            tell(w.notes.pop(0))
        if once or w.done or (max_polls is not None and polls >= max_polls):
            if once or w.done:  # nothing more will be logged: refused, not waited for
                w.refuse_what_check_refuses()
            return w
        sleep(interval)


def _named(exc: LogFormatError, paths: Sequence[str]) -> LogFormatError:
    """``exc`` naming the watched file(s) when the reader did not (its message names the
    file, as ``check``'s does)."""
    if exc.path is not None or not paths:
        return exc
    return LogFormatError(str(exc), code=exc.code, path=", ".join(map(str, paths)),
                          column=exc.column, param=exc.param)


def _vanished(w: Watcher, there: set[str]) -> list[dict[str, Any]]:
    """The watched paths that were there at an earlier poll and are gone now: forgotten by
    ``w``, each as an event. (A path never there yet is waited for: a log not started.)"""
    out: list[dict[str, Any]] = []
    for p in list(w.paths):
        if os.path.lexists(p):
            there.add(p)
        elif p in there:
            w.forget(p)
            left = len(w.paths)
            out.append({"event": "vanished", "path": str(p), "paths_left": left,
                        "message": f"{safe(str(p))} went (deleted or moved away): no longer "
                                   "read" + (f"; {left} watched path(s) left" if left else
                                             "; no watched path left")})
    return out
