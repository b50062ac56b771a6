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

import pandas as pd
import pyarrow as pa

from .config import AuditConfig
from .design import not_a_condition
from .errors import ErrorCode, LogFormatError
from .identity import check_run_ids
from .live import DEFAULT_MARGIN, LiveRun, LiveState
from .schema import metric_not_a_series
from .text import safe


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
    table (default: the loader of ``check``, partial logs allowed)."""

    paths: Sequence[str]
    config: AuditConfig
    margin: float = DEFAULT_MARGIN
    idle: float = 600.0
    read: Callable[[], pa.Table] | None = None
    clock: Callable[[], float] = time.monotonic
    #: how the paths are read (``check``'s ``--format``, ``--map``, ``--run-from``, ``--cond``)
    read_options: Mapping[str, Any] = field(default_factory=dict)
    runs: dict[str, LiveRun] = field(default_factory=dict)
    last: dict[str, RunWatch] = field(default_factory=dict)
    columns: set[str] = field(default_factory=set)  #: every column seen in any read
    _grew: dict[str, float] = field(default_factory=dict)
    _seen: dict[str, int] = field(default_factory=dict)

    def poll(self) -> list[RunWatch]:
        """Read the paths once; the runs whose line changed (a new run, rows that change its
        state, settled, stopped). Each run is audited on all of its rows as read — late rows
        at an earlier step included — exactly as ``check`` reads them."""
        table = self._read()
        now = self.clock()
        closed = closed_runs(self.paths)
        changed: list[RunWatch] = []
        df = table.to_pandas()
        self.columns |= {str(c) for c in df.columns}
        if "run" not in df.columns or "step" not in df.columns:
            return changed
        num = [c for c in df.columns if c not in ("run", "step")
               and df[c].dtype.kind in "fiub"]
        self._refuse_what_check_refuses(df, num)
        for run, g in df.groupby("run", sort=True):
            rid = str(run)
            live = self.runs.get(rid)
            if live is None:
                live = self.runs[rid] = LiveRun(rid, config=self.config)
                self._grew[rid] = now
            rows = g[["step", *num]].sort_values("step", kind="stable")
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
            settled = live.should_stop(self.margin) if st.defined else False
            why = "closed" if closed is not None and rid in closed else (
                "idle" if now - self._grew[rid] >= self.idle else None)
            rw = RunWatch(st, settled, why is not None and not settled, why if not settled
                          else None)
            if old is None or _line(old) != _line(rw):
                changed.append(rw)
            self.last[rid] = rw
        return changed

    def _refuse_what_check_refuses(self, df: pd.DataFrame, num: Sequence[str]) -> None:
        """What ``check`` refuses, refused the same way (left out, it would leave a run, or a
        metric whose floor is still moving, out of the states without a word: a failing run
        read as defined): a read with no rows (``NO_ROWS``: a log just started is waited
        for, ``--once`` stops), rows without a run id, one run id under two spellings, a
        text column that changes within a run (a metric with a text cell, or text that is
        neither a series nor a condition), a ``--metric`` or ``--grok-on`` column set per
        run (a condition), and a ``--by``/``--cell`` column that is not a condition."""
        where = str(self.paths[0]) if len(self.paths) == 1 else ", ".join(map(str, self.paths))
        if not len(df):
            raise LogFormatError("the table has no rows; there is nothing to audit",
                                 path=where, code=ErrorCode.NO_ROWS)
        # an empty id (a CSV's empty cell, read as "") is as missing as a null one, as in check
        missing = int((df["run"].isna() | (df["run"].astype(str).str.strip() == "")).sum())
        if missing:
            raise LogFormatError(f"column 'run' has {missing} missing values: every row needs "
                                 "its run id", path=where, column="run",
                                 code=ErrorCode.MISSING_VALUES)
        check_run_ids(df["run"].astype(str).unique(), where)
        by_run = df.groupby("run", sort=False, observed=True)
        self._refuse_named_columns(df, by_run, num, where)
        text = [c for c in df.columns if c not in ("run", "step", *num)]
        if not text:
            return
        changes = by_run[text].nunique(dropna=False).max()
        for c in text:
            if int(changes[c]) > 1:
                raise LogFormatError(
                    f"column {safe(str(c))!r} holds text that changes within a run: neither a "
                    "per-step number nor a condition; write it as numbers (a text cell in a "
                    "metric?) or drop it (`grokaudit check` names the first text cell)",
                    path=where, column=str(c), code=ErrorCode.BAD_COLUMN_TYPE)

    def _refuse_named_columns(self, df: pd.DataFrame, by_run: Any, num: Sequence[str],
                              where: str) -> None:
        """``--metric``/``--grok-on`` naming a condition, ``--by``/``--cell`` naming a column
        that is absent or changes within a run: refused as ``check`` refuses them."""
        cfg = self.config
        loss = () if cfg.grok_on == "test_acc" else (cfg.grok_on,)
        named = list(dict.fromkeys(c for c in (*cfg.metrics, *loss) if c in num))
        if named:
            # a column set per run (constant within every run, with more values than runs,
            # NaN to a value counting as a change as in check) and different between runs is
            # a condition such as wd. A column flat in every run and equal between them is
            # waited for: a metric logged as a constant over a run's first evaluations
            # (check, reading the log whole, refuses it as a --metric)
            changes = by_run[named].nunique(dropna=False).max()
            for c in named:
                values = df[c].dropna()
                if int(changes[c]) <= 1 and len(values) > by_run.ngroups and \
                        values.max() > values.min():
                    raise metric_not_a_series(c, where, grok_on=c in loss)
        conditions = list(dict.fromkeys(c for c in (cfg.by, *cfg.cell) if c))
        if not conditions:
            return
        present = [c for c in conditions if c in df.columns]
        changes = by_run[present].nunique(dropna=False).max() if present else {}
        for c in conditions:
            if c not in df.columns or int(changes[c]) > 1:
                raise not_a_condition(
                    "--by" if c == cfg.by else "--cell", c, c in df.columns,
                    f"columns read: {', '.join(sorted(safe(str(x)) for x in df.columns))}",
                    where)

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
                        limits=Limits.of(self.config))

    def missing_columns(self) -> list[str]:
        """The columns named by the config (``--metric``, ``--grok-on``) that no read has seen:
        a name to fix, not a run to wait for, once every run is done."""
        named = [*self.config.metrics, self.config.grok_on]
        return [c for c in named if c not in self.columns]


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
          started: Callable[[Watcher], None] | None = None) -> Watcher:
    """Poll until every run is done (``once``: a single pass). ``emit`` receives every changed
    line; ``note`` a line about the wait (nothing written yet) or a read that failed midway (a
    file being written), retried at the next poll until ``idle`` seconds of failed reads.
    Returns the watcher (its ``last`` lines are the final state). A ``KeyboardInterrupt``
    propagates; the caller prints what was seen."""
    w = Watcher(list(paths), config, margin=margin, idle=idle,
                read_options=dict(read_options or {}))
    if started is not None:  # the caller keeps it: an interrupt still shows what was seen
        started(w)
    polls = 0
    failing_since: float | None = None
    said: set[str] = set()

    def say(line: str) -> None:
        if note is not None and line not in said:
            said.add(line)
            note(line)

    while True:
        polls += 1
        try:
            for rw in w.poll():
                emit(rw)
            failing_since = None
        except LogFormatError as exc:
            waiting = exc.code in (ErrorCode.FILE_NOT_FOUND, ErrorCode.NO_SHARDS,
                                   ErrorCode.NO_ROWS, ErrorCode.FILE_EMPTY,
                                   ErrorCode.FORMAT_MISMATCH)
            if once:
                raise
            now = w.clock()
            failing_since = now if failing_since is None else failing_since
            if not waiting and now - failing_since >= max(idle, interval):
                raise
            say(f"waiting for {', '.join(safe(p) for p in paths)}: {safe(str(exc))}" if waiting
                else f"read failed ({safe(str(exc))}); retrying every {interval:g} s")
        if once or w.done or (max_polls is not None and polls >= max_polls):
            missing = w.missing_columns() if w.done else []
            if missing:
                raise LogFormatError(
                    f"column(s) {', '.join(repr(safe(c)) for c in missing)} named by --metric "
                    f"or --grok-on never appeared; columns read: "
                    f"{', '.join(sorted(safe(c) for c in w.columns))}", column=missing[0],
                    path=", ".join(paths), code=ErrorCode.METRIC_NOT_FOUND)
            return w
        sleep(interval)
