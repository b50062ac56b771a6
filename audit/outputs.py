"""Outputs that cannot hurt: every path a command writes is checked before any work starts,
and written atomically.

:func:`resolve_output` refuses (``OutputError``, exit 2) an output that is one of the inputs
(the same file after symbolic and hard links), lies inside an input folder, is a directory, a
device, a FIFO, a socket or a symbolic link, or cannot be written; ``-`` means standard
output. :func:`atomic_write` writes a temporary file beside the target and renames it over the
target, with the permissions the umask gives a new file, and never leaves the temporary file
behind. This is the one writer of the project: the JSON result, the HTML report, PNG figures,
converted logs, the trainer's checkpoint and MANIFEST and the RunLogger's files all go through
it (:func:`atomic_write_with`).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from .errors import ErrorCode, OutputError

STDOUT = "-"


@dataclass(frozen=True)
class Output:
    """A checked output: a file path, or standard output (``path is None``)."""

    flag: str  #: the option that named it, for messages (``--json``, ``-o``)
    path: Path | None
    #: (device, inode) of the folder that held the file when it was checked; ``None`` when
    #: that folder did not exist yet. The write refuses a folder that is no longer this one.
    parent_id: tuple[int, int] | None = None

    @property
    def is_stdout(self) -> bool:
        return self.path is None

    def write_text(self, text: str) -> None:
        """Write ``text`` (UTF-8) to the file atomically, or to standard output."""
        self.write_bytes(text.encode("utf-8"))

    def write_chunks(self, chunks: Iterable[str], transform: Callable[[str], str] | None = None,
                     batch: int = 1 << 16) -> None:
        """Write the text ``chunks`` (UTF-8) as :meth:`write_text` writes their join, without
        holding the whole text: ``batch`` chunks (or 4 Mi characters) at a time, each batch's
        text passed through ``transform`` (a character-wise rewrite, such as
        :func:`~grokaudit.text.safe_json`: applied per chunk it cost more than the encoding),
        into the temporary file (renamed once complete: an error part-way leaves no file) or
        to standard output."""
        def text(buf: list[str]) -> bytes:
            joined = "".join(buf)
            return (joined if transform is None else transform(joined)).encode("utf-8")

        def pieces() -> Iterator[bytes]:
            buf: list[str] = []
            size = 0
            for c in chunks:
                buf.append(c)
                size += len(c)
                # a batch is also cut at 4 Mi characters: a chunk may be thousands of runs
                if len(buf) >= batch or size >= 1 << 22:
                    yield text(buf)
                    buf.clear()
                    size = 0
            if buf:
                yield text(buf)

        if self.path is None:
            for data in pieces():
                sys.stdout.buffer.write(data)
            sys.stdout.flush()
            return

        def write(tmp: str) -> None:
            with open(tmp, "wb") as fh:
                for data in pieces():
                    fh.write(data)

        atomic_write_with(self.path, write, flag=self.flag, pinned=self.parent_id or True)

    def write_bytes(self, data: bytes) -> None:
        if self.path is None:
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
            return
        atomic_write(self.path, data, flag=self.flag, pinned=self.parent_id or True)

    def write_with(self, writer: Callable[[str], object]) -> Path:
        """Write the file with ``writer(tmp_path)`` (:func:`atomic_write_with`), into the
        folder that was checked."""
        if self.path is None:
            raise OutputError(f"{self.flag} -: this output cannot go to standard output; "
                              "name a file", code=ErrorCode.OUTPUT_NOT_REGULAR, path="-")
        return atomic_write_with(self.path, writer, flag=self.flag,
                                 pinned=self.parent_id or True)


def _file_id(p: Path) -> tuple[int, int] | None:
    try:
        st = p.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _linked_folders(root: Path) -> list[Path]:
    """The real folders that folders linked from inside ``root`` lead to: the readers walk
    them as part of the log (``ds/more -> /elsewhere``), so an output there would be read
    next time. Loops are walked once."""
    out: list[Path] = []
    seen = {root.resolve()}
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            try:
                if not e.is_dir(follow_symlinks=True):
                    continue
                real = Path(os.path.realpath(e.path))
                linked = e.is_symlink()
            except OSError:
                continue
            if real in seen:
                continue
            seen.add(real)
            if linked:
                out.append(real)
            stack.append(Path(e.path))
    return out


def _input_ids(inputs: Iterable[str | os.PathLike[str]]
               ) -> tuple[set[tuple[int, int]], list[Path], set[Path]]:
    """The (device, inode) of every input file; the resolved input folders and the folders
    linked from inside them; and the paths of inputs not there yet (a log's config file,
    read when it appears: an output may not be written there)."""
    ids: set[tuple[int, int]] = set()
    dirs: list[Path] = []
    names: set[Path] = set()
    for raw in inputs:
        p = Path(raw)
        if p.is_dir():
            dirs.append(p.resolve())
            dirs += _linked_folders(p)
            continue
        fid = _file_id(p)
        if fid is not None:
            ids.add(fid)
        elif not os.path.lexists(p):
            names.add(p.parent.resolve() / p.name)
    return ids, dirs, names


def resolve_output(value: str | os.PathLike[str], *, flag: str,
                   inputs: Sequence[str | os.PathLike[str]] = (), allow_stdout: bool = True,
                   suffixes: Sequence[str] | None = None, others: Sequence[Output] = ()
                   ) -> Output:
    """Check an output path before any work starts; returns the :class:`Output` to write.

    ``inputs`` are the paths the command reads; ``suffixes`` (lower case, with the dot) are the
    extensions the output may have; ``others`` are outputs of the same command already resolved
    (two outputs may not name one file). Raises :class:`OutputError` with an ``ErrorCode``.
    """
    raw = os.fspath(value)
    if raw == STDOUT:
        if not allow_stdout:
            raise OutputError(f"{flag} -: this output cannot go to standard output; name a file",
                              code=ErrorCode.OUTPUT_NOT_REGULAR, path=raw)
        return Output(flag, None)
    if not raw.strip():
        raise OutputError(f"{flag}: the output path is empty; name a file",
                          code=ErrorCode.OUTPUT_NOT_WRITABLE, path=raw)
    given = Path(raw)
    # the path the OS would write: ``..`` and linked folders resolved, the last part kept (a
    # symbolic link there is refused below, not followed)
    p = given.parent.resolve() / given.name
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise OutputError(f"{raw}: cannot check {flag} ({exc.strerror}); choose another path",
                          code=ErrorCode.OUTPUT_NOT_WRITABLE, path=raw) from None
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            raise OutputError(f"{raw}: {flag} is a symbolic link; grokaudit writes only regular "
                              "files it can replace: name the real file",
                              code=ErrorCode.OUTPUT_NOT_REGULAR, path=raw)
        if stat.S_ISDIR(st.st_mode):
            raise OutputError(f"{raw}: {flag} is a directory; name a file inside it",
                              code=ErrorCode.OUTPUT_IS_DIRECTORY, path=raw)
        if not stat.S_ISREG(st.st_mode):
            raise OutputError(f"{raw}: {flag} is not a regular file (a device, FIFO or socket); "
                              "name a regular file", code=ErrorCode.OUTPUT_NOT_REGULAR, path=raw)
    ids, dirs, names = _input_ids(inputs)
    if st is not None and (st.st_dev, st.st_ino) in ids:
        raise OutputError(f"{raw}: {flag} is one of the inputs; writing it would destroy the log "
                          "it reads: choose another path", code=ErrorCode.OUTPUT_IS_INPUT,
                          path=raw)
    parent = p.parent
    target = p
    if target in names:
        raise OutputError(f"{raw}: {flag} names a file the command reads with the log (its "
                          "same-stem JSON or YAML, or a config file beside it): the next run "
                          "would read it, or refuse to overwrite it; choose another name",
                          code=ErrorCode.OUTPUT_IS_INPUT, path=raw)
    for d in dirs:
        if target == d or d in target.parents:
            raise OutputError(f"{raw}: {flag} lies inside the input folder {d}; it would be read "
                              "as part of the log next time: write it elsewhere",
                              code=ErrorCode.OUTPUT_IN_INPUT_DIR, path=raw)
    for o in others:
        if o.path is not None and o.path == target:
            raise OutputError(f"{raw}: {flag} and {o.flag} name the same file; choose two paths",
                              code=ErrorCode.OUTPUT_CLASH, path=raw)
    # after the checks that name a more specific danger (an input, a folder, a device)
    if suffixes is not None and p.suffix.lower() not in suffixes:
        raise OutputError(
            f"{raw}: {flag} writes {'/'.join(suffixes)} files, but this path ends in "
            f"{p.suffix or '(no extension)'!r}; choose a name ending in {suffixes[0]}",
            code=ErrorCode.OUTPUT_EXTENSION, path=raw)
    _check_parent(parent, raw, flag)
    if st is not None and not os.access(p, os.W_OK):
        raise OutputError(f"{raw}: {flag} exists and is not writable; choose another path",
                          code=ErrorCode.OUTPUT_NOT_WRITABLE, path=raw)
    return Output(flag, p, _file_id(parent))


def resolve_output_dir(value: str | os.PathLike[str], *, flag: str,
                       inputs: Sequence[str | os.PathLike[str]] = ()) -> Path:
    """Check a folder that a command writes files into (``report --png DIR``): it is not an
    input, not inside an input folder, and is (or can be made) a writable folder."""
    raw = os.fspath(value)
    p = Path(raw)
    if p.is_symlink() or (p.exists() and not p.is_dir()):
        raise OutputError(f"{raw}: {flag} is not a folder; name a folder (it is created if "
                          "missing)", code=ErrorCode.OUTPUT_NOT_REGULAR, path=raw)
    ids, dirs, _ = _input_ids(inputs)
    target = p.resolve()
    for d in dirs:
        if target == d or d in target.parents:
            raise OutputError(f"{raw}: {flag} lies inside the input folder {d}: write it "
                              "elsewhere", code=ErrorCode.OUTPUT_IN_INPUT_DIR, path=raw)
    existing = target
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise OutputError(f"{raw}: {flag} cannot be created or written; choose another folder",
                          code=ErrorCode.OUTPUT_NOT_WRITABLE, path=raw)
    return p


def _check_parent(parent: Path, raw: str, flag: str) -> None:
    """The folder that will hold the output: an existing writable folder, or creatable."""
    existing = parent
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        raise OutputError(f"{raw}: {flag} cannot be created: {existing} is not a folder; choose "
                          "another path", code=ErrorCode.OUTPUT_NOT_WRITABLE, path=raw)
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OutputError(f"{raw}: {flag} cannot be written: no permission in {existing}; "
                          "choose another path", code=ErrorCode.OUTPUT_NOT_WRITABLE, path=raw)


def atomic_write(path: str | os.PathLike[str], data: bytes, *, flag: str = "output",
                 pinned: tuple[int, int] | bool = False) -> Path:
    """Write ``data`` to ``path`` atomically: a temporary file in the same folder, renamed over
    the target. The file gets the permissions the umask gives a new file (not mkstemp's 0600);
    the temporary file is removed on any failure. ``pinned``: see :func:`atomic_write_with`.
    Returns the path written."""
    def write(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            fh.write(data)

    return atomic_write_with(path, write, flag=flag, pinned=pinned)


def open_temp(folder: str | os.PathLike[str], prefix: str, suffix: str,
              names: list[str], mode: int = 0o600) -> int:
    """A new file ``folder/prefix<random>suffix`` opened for writing (``mode`` less the umask;
    0600 by default, as ``tempfile.mkstemp`` makes it), its path appended to ``names``
    *before* it is created: a
    Ctrl-C or SIGTERM at any moment leaves either no file or one whose name the caller's
    cleanup holds (inside ``mkstemp`` it could land after the file was made and before its
    name was returned)."""
    import secrets

    for _ in range(100):
        names.append(os.path.join(folder, f"{prefix}{secrets.token_hex(4)}{suffix}"))
        try:
            return os.open(names[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL
                           | getattr(os, "O_CLOEXEC", 0), mode)
        except FileExistsError:  # another's file: never the caller's to remove
            names.pop()
    raise FileExistsError(f"no free temporary name in {folder}")


def atomic_write_with(path: str | os.PathLike[str], writer: Callable[[str], object], *,
                      flag: str = "output", pinned: tuple[int, int] | bool = False,
                      fsync: bool = False, mode: int | None = None, mkdir: bool = True,
                      temp_prefix: str | None = None, temp_suffix: str | None = None,
                      hint: str = "choose another path") -> Path:
    """Like :func:`atomic_write` for writers that want a file name (``pq.write_table``,
    ``savefig``, ``torch.save``): ``writer(tmp_path)`` writes the temporary file, which is then
    renamed. The one atomic writer of the project: outputs, the trainer's checkpoint and
    manifest and the :class:`~grokaudit.RunLogger`'s segments and claim all come here, so
    crash safety, permissions and cleanup are decided once.

    The folder is opened once, and the rename happens through that handle, so the file lands
    in the folder that was opened whatever its path names by then. ``pinned`` (a path checked
    by :func:`resolve_output`, whose folder part is already resolved): the folder must still be
    the one checked — ``(device, inode)`` as recorded, or ``True`` when it did not exist then —
    and its path must not lead through a symbolic link, both before the temporary file is made
    and again before the rename; a folder swapped in between is refused
    (``OUTPUT_NOT_WRITABLE``) and nothing is written.

    The temporary file, ``<folder>/<temp_prefix><random><temp_suffix>`` (by default
    ``.<name>.<random>.tmp<suffix>``), has its name recorded before it exists, so any error, a
    Ctrl-C or a SIGTERM (raised as an exception by the CLI) removes it, and the target is
    either its old or its new complete version. ``fsync``: the file is flushed to disk before
    the rename and the folder after it, so the new version survives a power loss too (a log
    being written; not worth its cost for a report). ``mode``: the new file's permission bits
    (default: what the umask gives a new file, not ``mkstemp``'s 0600). ``mkdir``: create the
    folder when missing (a logger's folder that vanished is an error instead). An ``OSError``
    becomes ``OutputError`` (``OUTPUT_NOT_WRITABLE``): ``"<path>: cannot write <flag>
    (<reason>); <hint>"``."""
    p = Path(path)

    def refused(exc: OSError) -> OutputError:
        return OutputError(f"{p}: cannot write {flag} ({exc.strerror}); {hint}",
                           code=ErrorCode.OUTPUT_NOT_WRITABLE, path=str(p))

    try:
        if mkdir:
            p.parent.mkdir(parents=True, exist_ok=True)
        # O_PATH where there is one: a folder one may write but not list opens too
        dfd = os.open(p.parent, getattr(os, "O_PATH", os.O_RDONLY)
                      | getattr(os, "O_DIRECTORY", 0))
    except OSError as exc:
        raise refused(exc) from None
    made: list[str] = []  # the temporary file's name, known before the file exists
    try:
        if pinned:
            _same_folder(p, dfd, pinned, flag)
        try:
            # created 0666 less the umask (what any new file gets, decided by the kernel: no
            # os.umask() call, which would race with another thread creating a file), or `mode`
            os.close(open_temp(p.parent, f".{p.name}." if temp_prefix is None else temp_prefix,
                               ".tmp" + p.suffix if temp_suffix is None else temp_suffix,
                               made, 0o666 if mode is None else mode))
            tmp = made[-1]
            writer(tmp)
            if mode is not None:  # exactly these bits, whatever the umask
                os.chmod(tmp, mode)
            if fsync:
                _fsync_file(tmp)
            if pinned:
                _same_folder(p, dfd, pinned, flag)
            if os.replace in os.supports_dir_fd:
                os.replace(os.path.basename(tmp), p.name, src_dir_fd=dfd, dst_dir_fd=dfd)
            else:  # pragma: no cover - every POSIX system grokaudit runs on has renameat
                os.replace(tmp, p)
            if fsync:
                fsync_folder(p.parent, dfd)
        except OSError as exc:
            raise refused(exc) from None
    finally:
        for name in made:  # each name tried (one file at most): gone, or renamed already
            _remove(os.path.basename(name), dfd)
            _remove(name, None)
        os.close(dfd)
    return p


def _fsync_file(name: str) -> None:
    """Flush a written file's data to disk (the writer closed its own handle)."""
    fd = os.open(name, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_folder(folder: str | os.PathLike[str], dfd: int | None = None) -> None:
    """Make a rename or a new file in ``folder`` durable: ``fsync`` of the folder itself
    (through ``dfd``, a handle on it, when given). A no-op where a folder cannot be opened for
    reading (Windows, a folder one may write but not list): nothing more can be done there."""
    try:
        if dfd is not None and os.open in os.supports_dir_fd:
            fd = os.open(".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0), dir_fd=dfd)
        else:
            fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove(name: str, dfd: int | None) -> None:
    try:
        if dfd is not None:
            os.unlink(name, dir_fd=dfd)
        else:
            os.unlink(name)
    except (OSError, NotImplementedError):  # gone already, or the error reported matters more
        pass


def _same_folder(p: Path, dfd: int, pinned: tuple[int, int] | bool, flag: str) -> None:
    """Refuse to write when the output's folder is no longer the one checked: another folder
    (or a symbolic link) put in its place after the check."""
    st = os.fstat(dfd)
    here = (st.st_dev, st.st_ino)
    try:
        now = _file_id(p.parent) if os.path.realpath(p.parent) == str(p.parent) else None
    except OSError:
        now = None
    if now != here or (isinstance(pinned, tuple) and here != pinned):
        raise OutputError(f"{p}: the folder of {flag} changed after it was checked (another "
                          "folder or a symbolic link was put in its place); nothing was "
                          "written: check the folder and run again",
                          code=ErrorCode.OUTPUT_NOT_WRITABLE, path=str(p))
