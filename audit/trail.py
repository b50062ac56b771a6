"""The audit trail: how a result was made, in every output.

A result is evidence: a reviewer must see the grokaudit version, the config file it read (path
and sha256) or where it looked and found none, every setting that differs from the profile's
defaults (a profile whose switches were changed is not printed as that profile), the input
mapping (``--map``, ``--cond``, ``--run-from``, ``--format``, ``--on-duplicate``,
``--acc-scale``), each input file with its size and sha256 (streamed), the command line, and
the kernel that validated the log when it was not numpy (``kernel``: ``numba``, the extra
``fast``; absent on numpy, the reference, so a numpy run's trail is the one it always was).
Nothing else in it depends on the time or the machine: identical inputs and settings give an
identical trail, but for that record (with ``--kernel auto``, a log of 250 M rows or more is
validated on numba where the extra is installed, and its trail says so).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .config import (
    PROFILE_SWITCHES,
    REFERENCE_OVERRIDES,
    AuditConfig,
    find_config_file,
    ignored_config_files,
    make_config,
)
from .text import safe

#: Bytes read at a time when hashing an input (the file is never held whole).
_CHUNK = 1 << 20


def sha256_of(path: str | Path) -> str:
    """The sha256 of a file, streamed."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while True:
            b = fh.read(_CHUNK)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


@dataclass(frozen=True)
class InputFile:
    """One file a command read: its path as given (or found in a folder), size and sha256."""

    path: str
    size: int
    sha256: str

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "size": self.size, "sha256": self.sha256}


def _listed(paths: Sequence[str]) -> list[Path]:
    """Every regular file under ``paths`` (a file, or each file of a folder, recursively, in
    sorted order, leaving out the checkpoints and pickles no reader opens); a path that is not
    there is skipped (the reader has refused it already)."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_file():
            out.append(p)
        elif p.is_dir():
            from .shards import NEVER_READ_SUFFIXES, walk_files

            # what the readers read: linked files and folders included (loops left out)
            out += [q for q in walk_files(p) if q.suffix.lower() not in NEVER_READ_SUFFIXES]
    return out


class _Hashing:
    """:func:`input_files` of ``paths``, one chunk at a time: the work of whichever thread
    calls :meth:`step` (the hashing thread ahead of the audit, then the audit's own thread for
    whatever is left when it needs the hashes, :meth:`HashAhead.files`). One thread at a
    time."""

    def __init__(self, paths: Sequence[str]) -> None:
        self._todo = _listed(paths)
        self._k = 0  #: the file being hashed (or next to open)
        self._fh: Any = None
        self._hash: Any = None
        self._size = 0
        self.out: list[InputFile] = []

    def step(self) -> bool:
        """Open the next file or hash one chunk of it; False once every file is hashed. A
        file that cannot be read is skipped (the reader has refused it already)."""
        if self._fh is None:
            if self._k >= len(self._todo):
                return False
            q = self._todo[self._k]
            try:
                self._size = q.stat().st_size
                self._fh = open(q, "rb")  # noqa: SIM115 - held across steps, closed in close()
            except OSError:
                self._k += 1
                return True
            self._hash = hashlib.sha256()
            return True
        try:
            b = self._fh.read(_CHUNK)
        except OSError:
            self._next()
            return True
        if b:
            self._hash.update(b)
            return True
        self.out.append(InputFile(str(self._todo[self._k]), self._size, self._hash.hexdigest()))
        self._next()
        return True

    def _next(self) -> None:
        self.close()
        self._k += 1

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def input_files(paths: Sequence[str]) -> tuple[InputFile, ...]:
    """Every regular file under ``paths`` (a file, or each file of a folder, recursively, in
    sorted order), with its size and sha256. A path that is not there is skipped (the reader
    has refused it already)."""
    work = _Hashing(paths)
    try:
        while work.step():
            pass
    finally:
        work.close()
    return tuple(work.out)


def file_stamps(paths: Sequence[str]) -> dict[str, tuple[int, int]]:
    """Each file :func:`input_files` lists, with its size and modification time (ns): what
    tells that a file changed, appeared or went between two moments."""
    out: dict[str, tuple[int, int]] = {}
    for q in _listed(paths):
        try:
            st = q.stat()
        except OSError:
            continue
        out[str(q)] = (st.st_size, st.st_mtime_ns)
    return out


def changed_since(before: Mapping[str, tuple[int, int]], paths: Sequence[str]
                  ) -> tuple[str, ...]:
    """The files under ``paths`` that changed, appeared or went since ``before``
    (:func:`file_stamps`), sorted."""
    now = file_stamps(paths)
    return tuple(sorted(p for p in before.keys() | now.keys() if before.get(p) != now.get(p)))


#: Seconds :meth:`HashAhead.files` waits for the hashing thread to finish the chunk it is on.
#: A thread that gets no CPU (every core busy at normal priority) is left behind past it, and
#: the caller hashes every file again itself: the most a starved thread costs is this wait.
HANDOVER_WAIT = 0.1

#: How much nicer than the audit the hashing thread runs (Linux: a thread's own priority),
#: where it cannot run only on idle CPUs (:func:`run_when_idle`).
HASH_NICENESS = 5


def lower_thread_priority(by: int = HASH_NICENESS) -> None:
    """Make the calling thread ``by`` nicer (Linux, where a thread has its own priority).
    Elsewhere, or where it is refused, nothing changes."""
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + by)
    except (AttributeError, OSError):  # not Linux-like, or not allowed: the hash still runs
        pass


def run_when_idle() -> bool:
    """Run the calling thread only on CPUs nothing else wants (Linux ``SCHED_IDLE``; nicer
    by :data:`HASH_NICENESS` where that is refused or unknown). True when ``SCHED_IDLE`` was
    set. Such a thread may wait long on a busy machine, and cannot raise its priority back:
    :class:`HashAhead` hands what it has not hashed to the thread that needs the hashes."""
    lower_thread_priority()
    try:
        os.sched_setscheduler(threading.get_native_id(), os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        return False
    return True


class HashAhead:
    """:func:`input_files` of ``paths``, computed on a background thread from the moment this
    is made, so that hashing a large input overlaps the audit that reads it (hashlib and file
    reads release the GIL). The thread runs on idle CPU only (:func:`run_when_idle`): the
    audit's own threads keep both cores of a small machine (the sha256 of a 234 MB log is
    0.16 s of CPU, which took 0.1-0.2 s of a 3 s audit on 2 cores when it competed).
    :meth:`files` takes over: the thread stops after its current chunk and the audit's thread
    hashes what is left at its own priority, so a machine too busy to leave idle CPU costs no
    more than hashing after the audit (and :data:`HANDOVER_WAIT`, where the thread cannot
    even finish its chunk). As a context manager, leaving it calls the hashing off: a command
    that failed needs no hashes, and its thread stops at the next chunk. The hashes are those
    of the files as they are while the audit reads them, as the trail has always given
    them."""

    def __init__(self, paths: Sequence[str]) -> None:
        self.paths = tuple(str(p) for p in paths)
        #: the files as they are before the audit reads them (:meth:`changed`)
        self.before = file_stamps(self.paths)
        self._stop = threading.Event()  #: called off: the work is dropped
        self._take = threading.Event()  #: taken over by :meth:`files`: the work is kept
        self._work: _Hashing | None = None
        self._error: BaseException | None = None
        self._result: tuple[InputFile, ...] | None = None
        self._files_lock = threading.Lock()  #: one caller of files() at a time
        self._thread = threading.Thread(target=self._run, name="grokaudit-sha256",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from .blocks import leave_ctrl_c_to_the_main_thread

        leave_ctrl_c_to_the_main_thread()
        run_when_idle()
        try:
            work = self._work = _Hashing(self.paths)
            while not (self._take.is_set() or self._stop.is_set()) and work.step():
                pass
        except BaseException as exc:  # noqa: BLE001 - handed to the caller in files()
            self._error = exc
            if self._work is not None:
                self._work.close()
            return
        if self._stop.is_set():
            work.close()

    def files(self) -> tuple[InputFile, ...]:
        """The inputs with their sizes and sha256 (the same tuple at every call): what the
        thread has not hashed yet is hashed here -- all of it again if the hashing was
        called off, or if the thread did not finish its chunk within :data:`HANDOVER_WAIT`
        (it gets no CPU: it is left to stop when it does)."""
        with self._files_lock:
            if self._result is None:
                self._result = self._take_over()
            return self._result

    def _take_over(self) -> tuple[InputFile, ...]:
        self._take.set()
        self._thread.join(HANDOVER_WAIT)
        if self._thread.is_alive():
            self._stop.set()  # it closes its own file when it next runs
            return input_files(self.paths)
        if self._error is not None:
            raise self._error
        work = self._work
        if work is None or self._stop.is_set():
            return input_files(self.paths)
        try:
            while work.step():
                pass
        finally:
            work.close()
        return tuple(work.out)

    def stop(self) -> None:
        self._stop.set()

    def changed(self) -> tuple[str, ...]:
        """The input files that changed, appeared or went since the audit began (a log still
        being written): for them the sha256, taken as the audit read, may not be of the bytes
        it read."""
        return changed_since(self.before, self.paths)

    def __enter__(self) -> HashAhead:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _values(cfg: AuditConfig) -> dict[str, Any]:
    """Every setting of ``cfg`` (``extra`` aside) as a JSON value, in field order."""
    out: dict[str, Any] = {}
    for f in fields(cfg):
        if f.name != "extra":
            v = getattr(cfg, f.name)
            out[f.name] = list(v) if isinstance(v, tuple) else v
    return out


def changed_settings(cfg: AuditConfig) -> dict[str, Any]:
    """Every setting of ``cfg`` whose value differs from its profile's defaults (JSON
    values), in field order — all of them, whichever option they belong to."""
    base = _values(make_config(profile=cfg.profile))
    return {k: v for k, v in _values(cfg).items() if k != "profile" and base.get(k) != v}


def profile_label(cfg: AuditConfig) -> str:
    """The profile as it ran: ``default``, or ``default (modified: stability_check=false)``
    when a value that defines the profile was changed (a switch, or, for ``reference``, any
    setting the profile sets)."""
    base = _values(make_config(profile=cfg.profile))
    now = _values(cfg)
    keys = list(PROFILE_SWITCHES)
    if cfg.profile == "reference":
        keys += [k for k in REFERENCE_OVERRIDES if k not in keys]
    mods = [f"{k}={_txt(now[k])}" for k in keys if now.get(k) != base.get(k)]
    return cfg.profile + (f" (modified: {', '.join(mods)})" if mods else "")


def _txt(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ",".join(_txt(x) for x in v) or "[]"
    return "none" if v is None else str(v)


@dataclass(frozen=True)
class Trail:
    """How one result was made (see the module doc)."""

    version: str
    profile: str
    changed: Mapping[str, Any]
    config_file: str | None
    config_sha256: str | None
    config_searched: tuple[str, ...]  #: where discovery looked when it found no file
    mapping: Mapping[str, Any]
    inputs: tuple[InputFile, ...]
    command: tuple[str, ...] | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    #: the kernel that validated the log when not numpy (``numba``); None on numpy
    kernel: str | None = None

    def to_dict(self) -> dict[str, Any]:
        # the kernel only when it is not numpy: a numpy run's trail keeps its bytes
        kernel = {} if self.kernel is None else {"kernel": self.kernel}
        return {
            "grokaudit_version": self.version, "profile": self.profile,
            "changed_settings": dict(self.changed), "config_file": self.config_file,
            "config_sha256": self.config_sha256,
            "config_searched": list(self.config_searched),
            "input_mapping": dict(self.mapping),
            "inputs": [f.to_dict() for f in self.inputs],
            "command": None if self.command is None else list(self.command),
            "notes": list(self.notes),
        } | kernel

    def lines(self) -> list[str]:
        """The trail as text lines (the header of every text report)."""
        out = []
        changed = ", ".join(f"{k}={_txt(v)}" for k, v in self.changed.items())
        out.append(f"settings changed from the {self.profile.split(' ')[0]} profile: "
                   f"{changed or 'none'}")
        if self.config_file:
            out.append(f"config file: {safe(self.config_file)} (sha256 "
                       f"{(self.config_sha256 or '')[:16]})")
        elif self.config_searched:
            where = (safe(self.config_searched[0]) if len(self.config_searched) == 1 else
                     f"{safe(self.config_searched[0])} up to {safe(self.config_searched[-1])}")
            out.append(f"config file: none (looked in {where})")
        else:
            out.append("config file: none")
        if self.mapping:
            out.append("input mapping: " + " ".join(
                f"{k}={_txt(v)}" for k, v in self.mapping.items()))
        if self.inputs:
            shown = ", ".join(f"{safe(f.path)} ({f.size} B, sha256 {f.sha256[:16]})"
                              for f in self.inputs[:3])
            more = f", … ({len(self.inputs)} files)" if len(self.inputs) > 3 else ""
            out.append(f"inputs: {shown}{more}")
        if self.command is not None:
            out.append("command: " + " ".join(safe(a) for a in self.command))
        if self.kernel is not None:
            out.append(f"kernel: {safe(self.kernel)} (extra `fast`: the same result as numpy)")
        out += [f"note: {n}" for n in self.notes]
        return out


def config_source(config_file: str | None) -> tuple[str | None, str | None, tuple[str, ...]]:
    """``(path, sha256, searched)`` of the config file a command reads: the one named, else
    the one discovery finds (``searched``: the folders it looked in, when it found none)."""
    if config_file:
        try:
            return str(config_file), sha256_of(config_file), ()
        except OSError:
            return str(config_file), None, ()
    found, searched = find_config_file()
    if found is None:
        return None, None, tuple(_rel(p) for p in searched)
    return _rel(str(found)), sha256_of(found), ()


def config_notes(config_file: str | None, found: str | None) -> tuple[str, ...]:
    """The trail's notes on the config files not read (:func:`~grokaudit.config.
    ignored_config_files`): which file won, and the one discovery saw but passed over."""
    winner = Path(found) if found is not None and not config_file else None
    return tuple(f"config file {safe(_rel(str(p)))} ignored ({why}): its settings are not "
                 f"used; merge it into {safe(config_file or found or 'the file read')} or "
                 "delete one" for p, why in ignored_config_files(winner, config_file))


def _rel(path: str) -> str:
    """``path`` relative to the working directory (``.``, ``..``, ``../grokaudit.toml``), so
    that a trail does not depend on where the project sits on the machine."""
    try:
        return os.path.relpath(path, Path.cwd())
    except ValueError:  # another drive (Windows)
        return path


def make_trail(cfg: AuditConfig, *, version: str, inputs: Sequence[str] | HashAhead = (),
               mapping: Mapping[str, Any] | None = None, config_file: str | None = None,
               discover: bool = False, command: Sequence[str] | None = None,
               kernel: str | None = None) -> Trail:
    """The trail of one result: ``config_file`` (a path named), else, with ``discover``, the
    file discovery finds (the CLI's rule), else none (the Python API reads no config file).
    ``inputs``: the input paths, or a :class:`HashAhead` already hashing them. ``kernel``:
    the kernel that validated the log (:mod:`grokaudit.kernels`), recorded when it is not
    numpy (the reference leaves the trail as it always was)."""
    if config_file or discover:
        path, digest, searched = config_source(config_file)
    else:
        path, digest, searched = None, None, ()
    given = {k: v for k, v in (mapping or {}).items() if v not in (None, (), [], {}, "")}
    notes: tuple[str, ...] = config_notes(config_file, path) if discover else ()
    if isinstance(inputs, HashAhead):
        files = inputs.files()
        changed = inputs.changed()
        if changed:  # said in the trail, never silently: the hashes may be of other bytes
            shown = ", ".join(safe(c) for c in changed[:3])
            notes = (f"{len(changed)} input file(s) changed, appeared or went while the audit "
                     f"ran ({shown}{', …' if len(changed) > 3 else ''}): the sha256 and size "
                     "of each are of the file as it was hashed, which may not be the bytes the "
                     "audit read; if it is part of the log (still being written), audit it "
                     "again once it is complete", *notes)
    else:
        files = input_files(inputs)
    return Trail(version=version, profile=profile_label(cfg), changed=changed_settings(cfg),
                 config_file=path, config_sha256=digest, config_searched=searched,
                 mapping=given, inputs=files,
                 command=None if command is None else tuple(command), notes=notes,
                 kernel=None if kernel in (None, "numpy") else kernel)


def command_line(argv: Sequence[str] | None = None) -> tuple[str, ...]:
    """The command as typed: ``grokaudit`` and its arguments (the program's own path left
    out, so that the trail does not depend on where it is installed)."""
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    return ("grokaudit", *args)


__all__ = ["HashAhead", "InputFile", "Trail", "changed_settings", "changed_since", "command_line",
           "config_notes", "config_source", "file_stamps", "input_files", "make_trail", "profile_label",
           "sha256_of"]
