"""Write an auditable log from your own training loop: :class:`RunLogger`.

::

    with grokaudit.RunLogger("runs", run=f"wd{wd}_s{seed}", conditions={"wd": wd, "seed": seed}) as log:
        for step in range(steps):
            ...
            if step % 100 == 0:
                log.log(step, test_acc=acc, **{f"emb_{k}": v for k, v in
                                               grokaudit.spectral_metrics(model.embed.weight).items()})

then ``grokaudit check runs --by wd``. Many processes may write one folder at once: each run
owns its own files, named by its run id.

**Layout of the folder** (one run ``R``; ``<stem>`` is ``R`` escaped to a safe file name plus a
short hash of ``R``):

* ``<stem>.claim`` — created exclusively when the logger opens: a second logger with the same
  run id is refused, in this process or another. JSON (run, conditions, pid, host, start time);
  rewritten with ``"closed": true`` when the logger closes.
* ``<stem>.<seq>.parquet`` — the rows, in *segments*: canonical Parquet shards (``run``,
  ``step``, ``test_acc``, the logged values, the conditions on every row) that
  ``grokaudit check FOLDER`` reads as it reads any folder of shards.
* ``.<stem>.<seq>.parquet.<pid>.<random>.tmp`` — exists only during a flush.

**Crash safety.** A flush writes the live segment — every row logged since the segment began —
to the temporary file, ``fsync``\\ s it (``fsync=True``, the default), and renames it over the
segment (``os.replace``: atomic on POSIX and Windows), then ``fsync``\\ s the folder. So at every
instant each segment file is either its previous complete version or its new complete version:
a process killed at any point (``SIGKILL``, out of memory, node lost) leaves every row of every
completed :meth:`RunLogger.flush` in a readable Parquet file, and never a torn file under a
``.parquet`` name (the temporary name does not end in ``.parquet``, so no folder reader picks it
up). Without ``fsync`` the same holds for a killed *process* (the page cache survives it) but
not for a machine that loses power. A segment is rewritten at most ``segment_flushes`` times
(or until it holds ``segment_rows`` rows); then the next segment starts, so a flush costs at
most one segment's rows, never the whole run's. No file is ever deleted or merged, so no state
of the folder holds a row twice or not at all.

What a kill loses is what was logged after the last completed flush: at most ``flush_every``
rows or ``flush_secs`` seconds. :func:`read_run_folder` reports it: every run whose logger was
not closed and every interrupted flush is a ``SOURCE_TRUNCATED`` finding in the provenance,
which the audit shows. A segment lost after it was written (a partial copy of the folder, a
cleanup; with or without the claim files) is refused: ``SEGMENT_MISSING``, naming the run and
the missing segment numbers.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import math
import os
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .errors import ConfigError, ErrorCode, LogFormatError, OutputError
from .outputs import atomic_write_with, fsync_folder
from .runfolder import CLAIM_SUFFIX, SEGMENT_KEY, TMP_SUFFIX, is_run_folder, read_run_folder
from .shards import PROVENANCE_KEY
from .values import metric_value, step_value

__all__ = ["LOGGER_FORMAT", "RunLogger", "is_run_folder", "read_run_folder", "run_file_stem"]

#: The ``format`` of claim files and of a segment's state (its ``grokaudit.runlogger`` metadata).
LOGGER_FORMAT = "grokaudit-runlogger/1"
_RESERVED = ("run", "step")
_ACCURACY = ("test_acc", "train_acc")
#: Largest step and largest integer condition written: both are compared as float64 downstream.
STEP_MAX = 2**53
_ESCAPED_MAX = 64


def run_file_stem(run: str) -> str:
    """The file-name stem of run ``run``: the id percent-escaped to ``[A-Za-z0-9._~%-]`` (at
    most 64 characters, never a leading dot) and a hash of the whole id, so two run ids never
    share a file, even truncated or on a case-insensitive file system."""
    esc = urllib.parse.quote(run, safe="-_.~")
    if esc.startswith("."):
        esc = "%2E" + esc[1:]
    digest = hashlib.sha256(run.encode("utf-8")).hexdigest()[:12]
    return f"{esc[:_ESCAPED_MAX]}.{digest}"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _condition_value(name: str, value: Any) -> str | float | bool:
    """A condition as written: text, a bool, or a float64 (ints too, so that ``wd=1`` in one
    process and ``wd=1.5`` in another give one column type)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, str):
        return value
    if isinstance(value, (int, np.integer)):
        if abs(int(value)) > STEP_MAX:
            raise ConfigError(f"condition {name!r} = {value} is beyond ±2**53; conditions are "
                              "compared as float64: pass it as a string",
                              code=ErrorCode.OPTION_OUT_OF_RANGE, option=name)
        return float(value)
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(float(value)):
            raise ConfigError(f"condition {name!r} is {value}; a condition must be finite",
                              code=ErrorCode.INFINITE_VALUE, option=name)
        return float(value)
    raise ConfigError(f"condition {name!r} has type {type(value).__name__}; a condition is a "
                      "number, a bool or a string, constant within the run",
                      code=ErrorCode.BAD_COLUMN_TYPE, option=name)


class RunLogger:
    """Append one run's rows to a folder that ``grokaudit check FOLDER`` audits, crash-safely.

    ``folder``: created if missing; many processes may write it at once, one run each.
    ``run``: the run id, unique in the folder (a second logger for it is refused, exit 2).
    ``conditions``: ``{"wd": 1.0, "seed": 0, "arch": "mlp"}``, written on every row (numbers as
    float64). ``flush_every`` rows / ``flush_secs`` seconds: when :meth:`log` flushes (checked
    at each call); also :meth:`flush`, :meth:`close` and leaving the ``with`` block.
    ``fsync``: make each flush durable against power loss, not only against a killed process.
    ``segment_flushes`` / ``segment_rows``: when a segment file is sealed and the next begins.
    ``live``: also audit the run as it is logged (:mod:`grokaudit.live`): ``True``, or the
    audit's options as a mapping; then :meth:`state`, :meth:`should_stop` and
    :meth:`budget_warning` answer from the rows logged so far.

    A row is ``log(step, test_acc=..., train_acc=..., emb_erank=..., train_loss=...)``. Steps
    are integers ≥ 0 that never decrease; calls at the same step fill one row (a name given
    twice at one step with two values is refused). Values are numbers (a float, an int, a numpy
    or 0-d tensor scalar); ``None`` or NaN means not logged; ±inf is written as NaN and counted
    in the provenance. ``test_acc`` is always a column (NaN where not logged).
    """

    def __init__(self, folder: str | os.PathLike[str], *, run: str,
                 conditions: Mapping[str, Any] | None = None, flush_every: int = 100,
                 flush_secs: float = 10.0, fsync: bool = True, segment_flushes: int = 32,
                 segment_rows: int = 100_000, live: bool | Mapping[str, Any] = False) -> None:
        if not isinstance(run, str) or not run.strip():
            raise ConfigError(f"run must be a non-empty string, got {run!r}",
                              code=ErrorCode.INVALID_OPTION, option="run")
        try:
            run.encode("utf-8")
        except UnicodeEncodeError:
            raise ConfigError(f"run {run!r} is not valid text (lone surrogates)",
                              code=ErrorCode.INVALID_OPTION, option="run") from None
        for opt, val, lo in (("flush_every", flush_every, 1), ("segment_flushes", segment_flushes, 1),
                             ("segment_rows", segment_rows, 1)):
            if isinstance(val, bool) or not isinstance(val, int) or val < lo:
                raise ConfigError(f"{opt} must be an integer ≥ {lo}, got {val!r}",
                                  code=ErrorCode.OPTION_OUT_OF_RANGE, option=opt)
        if isinstance(flush_secs, bool) or not isinstance(flush_secs, (int, float)) \
                or not flush_secs >= 0:
            raise ConfigError(f"flush_secs must be a number ≥ 0, got {flush_secs!r}",
                              code=ErrorCode.OPTION_OUT_OF_RANGE, option="flush_secs")
        conds: dict[str, str | float | bool] = {}
        for key, value in dict(conditions or {}).items():
            if not isinstance(key, str) or not key:
                raise ConfigError(f"condition names are non-empty strings, got {key!r}",
                                  code=ErrorCode.INVALID_OPTION, option="conditions")
            if key in _RESERVED or key in _ACCURACY:
                raise ConfigError(f"condition {key!r} is a column of every log; name the "
                                  "condition otherwise", code=ErrorCode.RESERVED_COLUMN,
                                  option=key)
            conds[key] = _condition_value(key, value)
        self.folder = Path(folder)
        self.run = run
        self.conditions: dict[str, str | float | bool] = conds
        self.flush_every = flush_every
        self.flush_secs = float(flush_secs)
        self.fsync = bool(fsync)
        self.segment_flushes = segment_flushes
        self.segment_rows = segment_rows
        self.stem = run_file_stem(run)
        self._pid = os.getpid()
        self._lock = threading.RLock()
        self._columns: list[str] = ["test_acc"]  # value columns, in first-logged order
        self._steps: list[int] = []  # the live segment's rows
        self._rows: list[dict[str, float]] = []
        self._seq = 0
        self._segment_writes = 0
        self._seal = False
        self._dirty = False
        self._new_rows = 0  # rows added since the last flush
        self._last_flush = time.monotonic()
        self._last_step = -1
        self._nonfinite: dict[str, int] = {}
        self.rows_logged = 0
        self.rows_flushed = 0
        self.files: list[Path] = []
        self.closed = False
        #: the live audit of this run (``live=True``, or the audit's options as a mapping:
        #: ``live={"metrics": ["emb_erank"], "grok_threshold": 0.95}``); see :meth:`state`
        self.live: Any = None
        if live:
            from .live import LiveRun

            opts = dict(live) if isinstance(live, Mapping) else {}
            self.live = LiveRun(run, **opts)
        self._started = _now()
        self._claim()
        atexit.register(self._at_exit)

    # -- files ------------------------------------------------------------------------------

    @property
    def claim_path(self) -> Path:
        return self.folder / f"{self.stem}{CLAIM_SUFFIX}"

    def segment_path(self, seq: int) -> Path:
        return self.folder / f"{self.stem}.{seq:06d}.parquet"

    def _claim(self) -> None:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"{self.folder}: cannot create the log folder ({exc.strerror})",
                              code=ErrorCode.OUTPUT_NOT_WRITABLE, path=str(self.folder)) from None
        if not self.folder.is_dir():
            raise OutputError(f"{self.folder}: not a folder; RunLogger writes a folder of files",
                              code=ErrorCode.OUTPUT_NOT_WRITABLE, path=str(self.folder))
        taken = OutputError(
            f"{self.folder}: run id {self.run!r} is already logged in this folder (its claim or "
            "shards exist); every run needs its own id (add the seed, a restart counter…) or "
            "another folder", code=ErrorCode.RUN_ID_TAKEN, path=str(self.claim_path))
        if any(self.folder.glob(f"{_glob_escape(self.stem)}.*.parquet")):
            raise taken
        try:
            fd = os.open(self.claim_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            raise taken from None
        except OSError as exc:
            raise OutputError(f"{self.claim_path}: cannot create ({exc.strerror})",
                              code=ErrorCode.OUTPUT_NOT_WRITABLE, path=str(self.claim_path)
                              ) from None
        with os.fdopen(fd, "wb") as fh:
            fh.write(self._claim_bytes(closed=False))
            if self.fsync:
                fh.flush()
                os.fsync(fh.fileno())
        if self.fsync:
            fsync_folder(self.folder)

    def _claim_bytes(self, *, closed: bool, error: str | None = None) -> bytes:
        info: dict[str, Any] = {
            "format": LOGGER_FORMAT, "run": self.run, "conditions": self.conditions,
            "pid": self._pid, "host": socket.gethostname(), "started": self._started,
            "closed": closed,
        }
        if closed:
            info.update(ended=_now(), rows=self.rows_flushed, segments=len(self.files),
                        last_step=self._last_step if self.rows_flushed else None)
            if error:
                info["error"] = error
        return (json.dumps(info, sort_keys=True) + "\n").encode("utf-8")

    def _replace(self, target: Path, write: Callable[[str], object]) -> None:
        """Write ``target`` through a temporary file renamed over it (see the module doc):
        :func:`~grokaudit.outputs.atomic_write_with`, the project's one atomic writer, with the
        temporary name the folder's readers know (``.<file>.<pid>.<random>.tmp``: never a
        ``.parquet`` name, so never read as a segment; an interrupted flush is reported), the
        umask's permissions, ``fsync`` as asked, and no folder recreated."""
        atomic_write_with(target, write, flag="the log", fsync=self.fsync, mkdir=False,
                          temp_prefix=f".{target.name}.{self._pid}.", temp_suffix=TMP_SUFFIX,
                          hint="the rows stay in memory: free space and call flush() again")

    # -- logging ----------------------------------------------------------------------------

    def _own(self) -> None:
        if self.closed:
            raise ConfigError(f"the RunLogger of run {self.run!r} is closed",
                              code=ErrorCode.INVALID_OPTION, option="log")
        if os.getpid() != self._pid:
            raise ConfigError(f"the RunLogger of run {self.run!r} belongs to process "
                              f"{self._pid}; open one logger (with its own run id) per process",
                              code=ErrorCode.INVALID_OPTION, option="log")

    def log(self, step: int, **values: Any) -> None:
        """Log ``values`` (name → number) at ``step``; flushes every ``flush_every`` new rows or
        ``flush_secs`` seconds."""
        s = step_value(step)
        row: dict[str, float] = {}
        infinite: list[str] = []
        for name, value in values.items():
            if name in _RESERVED or name in self.conditions:
                raise LogFormatError(f"value name {name!r} is the run id, the step or a "
                                     "condition; name the value otherwise", column=name,
                                     code=ErrorCode.RESERVED_COLUMN)
            v = metric_value(name, value)
            if math.isinf(v):
                infinite.append(name)
                v = math.nan
            row[name] = v
        with self._lock:
            self._own()
            if s < self._last_step:
                raise LogFormatError(f"step {s} comes after step {self._last_step}; steps never "
                                     "decrease within a run (a restarted run needs a new run id)",
                                     column="step", code=ErrorCode.STEP_DECREASING)
            finite = {k: v for k, v in row.items() if not math.isnan(v)}
            # every check before anything is kept: the file and the live state take the row
            # together or neither does (a value the live audit refuses raised after the row
            # was stored)
            if self.live is not None:
                self.live.validate(s, **finite)
            if s == self._last_step:
                last = self._rows[-1]
                for name, v in finite.items():
                    old = last.get(name, math.nan)
                    if not math.isnan(old) and v != old:
                        raise LogFormatError(
                            f"{name!r} logged twice at step {s} ({old!r}, then {v!r}); log each "
                            "name once per step", column=name, code=ErrorCode.DUPLICATE_ROWS)
            for name in infinite:
                self._nonfinite[name] = self._nonfinite.get(name, 0) + 1
            for name in row:
                if name not in self._columns:
                    self._columns.append(name)
            if s == self._last_step:
                last.update(finite)
                self._dirty = True
            else:
                if self._seal:  # the last flush filled the segment: start the next one
                    self._seq += 1
                    self._steps, self._rows = [], []
                    self._segment_writes = 0
                    self._seal = False
                self._steps.append(s)
                self._rows.append(row)
                self._last_step = s
                self._new_rows += 1
                self.rows_logged += 1
                self._dirty = True
            if self.live is not None:
                self.live.log(s, **finite)
            if (self._new_rows >= self.flush_every
                    or time.monotonic() - self._last_flush >= self.flush_secs):
                self._flush(closed=False)

    # -- the live audit (``live=True``) -----------------------------------------------------

    def _live(self) -> Any:
        if self.live is None:
            raise ConfigError(f"the RunLogger of run {self.run!r} was opened without live=True: "
                              "open it with RunLogger(..., live=True) to ask for its live state",
                              code=ErrorCode.INVALID_OPTION, option="live")
        return self.live

    def state(self) -> Any:
        """The run's live state (:class:`grokaudit.live.LiveState`): grokked, floors,
        compression clocks, what is missing, and ``defined_from``."""
        return self._live().state()

    def should_stop(self, margin: float | None = None) -> bool:
        """True once the run's numbers are defined and have held over ``margin``
        (:meth:`grokaudit.live.LiveRun.should_stop`; None: the live audit's own, set with
        ``live={"margin": …}``, default :data:`grokaudit.live.DEFAULT_MARGIN`): the plain
        loop's ``stop_when="settled"``."""
        return bool(self._live().should_stop(margin))

    def budget_warning(self, budget: float) -> str | None:
        """A warning when the run's last floor window before ``budget`` has begun and its numbers
        are not defined (:meth:`grokaudit.live.LiveRun.budget_warning`)."""
        out: str | None = self._live().budget_warning(budget)
        return out

    def flush(self) -> None:
        """Write every row logged so far; when it returns, they survive a kill of the process."""
        with self._lock:
            self._own()
            self._flush(closed=False)

    def _table(self, closed: bool) -> pa.Table:
        n = len(self._steps)
        cols: dict[str, pa.Array] = {
            "run": pa.array([self.run] * n, type=pa.string()),
            "step": pa.array(self._steps, type=pa.int64()),
        }
        order = [c for c in _ACCURACY if c in self._columns]
        order += [c for c in self._columns if c not in _ACCURACY]
        for c in order:
            cols[c] = pa.array([r.get(c, math.nan) for r in self._rows], type=pa.float64())
        for k, v in self.conditions.items():
            typ = pa.string() if isinstance(v, str) else pa.bool_() if isinstance(v, bool) \
                else pa.float64()
            cols[k] = pa.array([v] * n, type=typ)
        from .version import __version__

        prov = {"schema_version": 1, "producer": f"grokaudit {__version__} RunLogger"}
        state = {"format": LOGGER_FORMAT, "run": self.run, "segment": self._seq,
                 "closed": closed, "rows": n, "last_step": self._steps[-1] if n else None,
                 "nonfinite": dict(sorted(self._nonfinite.items()))}
        table = pa.table(cols)
        return table.replace_schema_metadata({
            PROVENANCE_KEY: json.dumps(prov, sort_keys=True).encode("utf-8"),
            SEGMENT_KEY: json.dumps(state, sort_keys=True).encode("utf-8")})

    def _flush(self, *, closed: bool) -> None:
        if not self._steps or not (self._dirty or closed):
            self._last_flush = time.monotonic()
            return
        table = self._table(closed)
        target = self.segment_path(self._seq)
        self._replace(target, lambda tmp: pq.write_table(table, tmp))
        if target not in self.files:
            self.files.append(target)
        self._segment_writes += 1
        self.rows_flushed = self.rows_logged
        self._dirty = False
        self._new_rows = 0
        self._last_flush = time.monotonic()
        if self._segment_writes >= self.segment_flushes or len(self._steps) >= self.segment_rows:
            self._seal = True

    def close(self, error: str | None = None) -> None:
        """Flush every row, mark the segment and the claim closed. Idempotent."""
        with self._lock:
            if self.closed or os.getpid() != self._pid:
                return
            try:
                self._flush(closed=True)
                self._replace(self.claim_path,
                              lambda tmp: Path(tmp).write_bytes(
                                  self._claim_bytes(closed=True, error=error)))
            finally:
                self.closed = True
                atexit.unregister(self._at_exit)

    def _at_exit(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - nothing can be raised at exit; the rows stay flushed
            pass

    def __enter__(self) -> RunLogger:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        err = None if exc_type is None else f"{exc_type.__name__}: {exc}"[:500]
        self.close(error=err)

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return (f"RunLogger({str(self.folder)!r}, run={self.run!r}, {state}, "
                f"{self.rows_flushed}/{self.rows_logged} rows flushed)")


def _glob_escape(s: str) -> str:
    return "".join(f"[{c}]" if c in "*?[]" else c for c in s)
