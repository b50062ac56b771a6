"""The layout of a folder written by :class:`~grokaudit.RunLogger`, and reading it back.

The file names and the segment metadata are the contract between the writer
(``logger.RunLogger``) and the readers (``schema.read_arrow``, which hands such a folder here,
and ``loader``); they live here so that the readers never import the writer (which imports the
live audit, which imports the canonical table). :func:`read_run_folder` is also
``grokaudit.read_run_folder`` and ``grokaudit.logger.read_run_folder``.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from .errors import ErrorCode, LogFormatError
from .shards import PROVENANCE_KEY, join_tables, provenance_of, read_shard
from .text import safe

__all__ = ["CLAIM_SUFFIX", "SEGMENT_KEY", "TMP_SUFFIX", "is_run_folder", "read_run_folder"]

#: A run's claim file: ``<stem>.claim``, created when its logger opens.
CLAIM_SUFFIX = ".claim"
#: Schema metadata key of a segment's state (run, segment number, closed, rows, last step, ±inf
#: counts), read by :func:`read_run_folder`; beside it, the provenance every reader keeps
#: (``PROVENANCE_KEY``, from :mod:`grokaudit.shards`).
SEGMENT_KEY = b"grokaudit.runlogger"
#: The end of a segment's temporary name during a flush (``.<segment>.<pid>.<random>.tmp``).
TMP_SUFFIX = ".tmp"



#: A segment's file name: ``<stem>.<seq>.parquet``, the stem ending in a 12-digit hash.
_SEGMENT_NAME = re.compile(r"(?P<stem>.+\.[0-9a-f]{12})\.(?P<seq>[0-9]{6,})\.parquet")


def is_run_folder(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a folder written by :class:`RunLogger`: it holds a claim file,
    or (its claims lost: a partial copy, a cleanup) a segment file that says it is one. Such
    a folder is read by :func:`read_run_folder`, which checks each run's segments."""
    p = Path(path)
    try:
        if not p.is_dir():
            return False
        entries = list(p.iterdir())
    except OSError:
        return False
    if any(q.suffix == CLAIM_SUFFIX for q in entries):
        return True
    named = sorted(q for q in entries if _SEGMENT_NAME.fullmatch(q.name))
    return bool(named) and _is_segment(named[0])


def _is_segment(q: Path) -> bool:
    """The file's footer carries a RunLogger segment's state (read from the footer only)."""
    try:
        return _segment_state(pq.read_schema(q)) is not None
    except (OSError, pa.ArrowException):
        return False  # unreadable: the reader of the folder names it


def _segment_state(schema: pa.Schema) -> dict[str, Any] | None:
    raw = (schema.metadata or {}).get(SEGMENT_KEY)
    if not raw:
        return None
    try:
        state = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(state, dict) or not isinstance(state.get("run"), str):
        return None
    seq = state.get("segment")
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
        return None  # no segment number: not a segment this reader can place
    return state


def _finding(detail: str, *, run: str | None = None, file: str | None = None,
             count: int | None = None) -> dict[str, Any]:
    return {"code": "SOURCE_TRUNCATED", "severity": "warning", "run": run, "detail": detail,
            "file": file, "offset": None, "count": count}


def read_run_folder(folder: str | os.PathLike[str]) -> pa.Table:
    """Read a folder written by :class:`RunLogger` (processes killed or not) as one canonical
    Arrow table, reporting what a kill cut short.

    Reads every ``.parquet``/``.pq`` shard of the folder (as ``grokaudit check FOLDER`` does,
    RunLogger's or not; column types promoted, ``wd=1`` and ``wd=1.5`` give one float column).
    The provenance (schema metadata ``grokaudit``) lists the shards and carries, as
    ``SOURCE_TRUNCATED`` findings: each run whose logger was not closed (its process was killed,
    or is still running: rows logged after its last flush are not in the log), each run that
    started but flushed no row, and each interrupted flush (a temporary file left by a kill
    during a flush). ±inf values written as NaN are counted in its ``warnings``. Raises
    :class:`LogFormatError` when the folder holds no shard, and when a run lacks a segment
    below its last one or one its close record counts (``SEGMENT_MISSING``: its rows would be
    left out in silence), with or without the claim files.
    """
    p = Path(folder)
    if not p.is_dir():
        raise LogFormatError("not a folder; read_run_folder reads the folder a RunLogger "
                             "writes", path=str(p), code=ErrorCode.FILE_NOT_FOUND)
    entries = sorted(p.iterdir())
    shards = [q for q in entries if q.suffix in (".parquet", ".pq")]
    report = _FolderReport()
    claims = _read_claims(entries, report)
    read = _read_segments(shards, report)
    _check_interrupted_flushes(entries, claims, report)
    claim_of = {info["run"]: (stem, info) for stem, info in claims.items()}
    _refuse_segment_gaps(p, claim_of, read.segments)
    for run in sorted(set(claim_of) | set(read.segments)):
        stem, info = claim_of.get(run, ("", {}))
        _check_run(run, stem, info, read.segments.get(run, []), report)
    if not read.tables:
        started = len(claims)
        raise LogFormatError(
            "folder holds no .parquet shard" + (f": {started} run(s) started, none has flushed "
                                                 "a row yet" if started else ""),
            path=str(p), code=ErrorCode.NO_SHARDS)
    return _with_provenance(_concat_shards(read.tables, p), read, shards, report)


@dataclass
class _FolderReport:
    """What reading a RunLogger folder found, in the order it was found."""

    findings: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass
class _Segments:
    """The shards of a folder as read: their tables, each run's segment states (with the file
    each came from), the runs their sources downsampled, the first shard's provenance."""

    tables: list[pa.Table] = field(default_factory=list)
    segments: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    downsampled: set[Any] = field(default_factory=set)
    first_prov: dict[str, Any] | None = None


def _read_claims(entries: list[Path], report: _FolderReport) -> dict[str, dict[str, Any]]:
    """Each claim file's content by its stem; an unreadable claim is a warning, not a run."""
    claims: dict[str, dict[str, Any]] = {}
    for q in entries:
        if q.suffix != CLAIM_SUFFIX:
            continue
        try:
            info = json.loads(q.read_text(encoding="utf-8"))
            if not isinstance(info, dict) or not isinstance(info.get("run"), str):
                raise ValueError("not a claim")
        except (OSError, ValueError):
            report.warnings.append(f"{q.name}: unreadable claim file (not written by RunLogger, "
                                   "or cut by a crash); ignored")
            continue
        claims[q.name[: -len(CLAIM_SUFFIX)]] = info
    return claims


def _read_segments(shards: list[Path], report: _FolderReport) -> _Segments:
    """Every shard read, with the findings and warnings its provenance carries and the ±inf
    values its segment state counts."""
    read = _Segments()
    for q in shards:
        t = read_shard(q)
        prov = provenance_of(t.schema, str(q))
        if read.first_prov is None:
            read.first_prov = prov
        report.findings.extend(prov.get("findings") or [])
        read.downsampled.update(prov.get("downsampled_runs") or [])
        report.warnings.extend(str(w) for w in prov.get("warnings") or [])
        lg = _segment_state(t.schema)
        if lg is not None:
            read.segments.setdefault(lg["run"], []).append({**lg, "file": q.name})
            for col, n in sorted((lg.get("nonfinite") or {}).items()):
                report.warnings.append(f"run {lg['run']!r}: {n} ±inf value(s) of {col!r} "
                                       f"written as NaN ({q.name})")
        read.tables.append(t)
    return read


def _check_interrupted_flushes(entries: list[Path], claims: dict[str, dict[str, Any]],
                               report: _FolderReport) -> None:
    """A temporary segment file left in the folder: a flush killed (or still running)."""
    for q in entries:
        if not (q.name.startswith(".") and q.name.endswith(TMP_SUFFIX) and ".parquet." in q.name):
            continue
        try:
            size = q.stat().st_size
        except OSError:
            continue  # renamed meanwhile: a flush of a live writer, now complete
        run = next((c["run"] for s, c in claims.items() if q.name[1:].startswith(s + ".")), None)
        report.findings.append(_finding(
            f"a flush was interrupted (the process was killed while writing {q.name}, "
            f"{size} bytes) or is in progress: the rows of that flush are not read; every "
            "earlier flush is", run=run, file=q.name, count=size))


def _check_run(run: str, stem: str, info: dict[str, Any], found: list[dict[str, Any]],
               report: _FolderReport) -> None:
    """One run's claim against its segments: started without a row, segments missing, not
    closed, ended with an error."""
    segs = sorted(found, key=lambda d: int(d["segment"]))
    closed = bool(info.get("closed")) or bool(segs and segs[-1].get("closed"))
    if not segs:
        if closed:
            report.warnings.append(f"run {run!r} was closed without logging a row")
        else:
            report.findings.append(_finding(
                f"run {run!r} was started (pid {info.get('pid')} on {info.get('host')}) but "
                "has flushed no row (killed early, or still running): none of its rows is "
                "in the log", run=run, file=f"{stem}{CLAIM_SUFFIX}", count=0))
        return
    _check_continuity(run, stem, info, segs, closed, report)
    if not closed:
        rows = sum(int(d.get("rows") or 0) for d in segs)
        last = segs[-1].get("last_step")
        report.findings.append(_finding(
            f"run {run!r}: the logger was not closed (the process was killed, or is still "
            f"running): its {rows} flushed row(s), up to step {last}, are read; rows logged "
            "after its last flush are not in the log", run=run, file=segs[-1]["file"],
            count=rows))
    if info.get("error"):
        report.warnings.append(f"run {run!r} ended with {info['error']}")


def _missing_segments(info: dict[str, Any], segs: list[dict[str, Any]]) -> list[int]:
    """The segment numbers of a run that are not in the folder: every number below the
    highest present (segments are written 0, 1, 2… and never deleted, so a gap is a file
    lost after it was written), and, once the run's claim records its close, the numbers up
    to the count it records. A run still being written has no gap: its next segment is
    simply not there yet."""
    have = {int(d["segment"]) for d in segs}
    expected = max(have) + 1
    said = info.get("segments")
    if info.get("closed") and isinstance(said, int) and not isinstance(said, bool):
        expected = max(expected, said)
    return sorted(set(range(expected)) - have)


def _refuse_segment_gaps(folder: Path, claim_of: dict[str, tuple[str, dict[str, Any]]],
                         segments: dict[str, list[dict[str, Any]]]) -> None:
    """Refuse (``SEGMENT_MISSING``) a folder in which a run lacks a segment below its last
    one, or one its close record counts, with or without its claim file: the rows of that
    segment would be missing from the audit without a word (a partial copy of the folder,
    files removed after the run)."""
    gaps: list[tuple[str, str, list[int], list[int]]] = []
    for run in sorted(segments):
        segs = segments[run]
        missing = _missing_segments(claim_of.get(run, ("", {}))[1], segs)
        if missing:
            named = _SEGMENT_NAME.fullmatch(segs[0]["file"])
            gaps.append((run, named.group("stem") if named else segs[0]["file"], missing,
                         sorted(int(d["segment"]) for d in segs)))
    # a closed run whose claim counts segments (or rows) of which none is left: every one
    # of them missing (it read as "closed without logging a row", and its rows were gone)
    for run in sorted(set(claim_of) - set(segments)):
        stem, info = claim_of[run]
        said, rows = info.get("segments"), info.get("rows")
        count = said if isinstance(said, int) and not isinstance(said, bool) else 0
        if info.get("closed") and (count > 0 or (isinstance(rows, int) and rows > 0)):
            gaps.append((run, stem, list(range(max(count, 1))), []))
    if not gaps:
        return
    run, stem, missing, have = gaps[0]
    more = f"; {len(gaps) - 1} other run(s) lack segments too" if len(gaps) > 1 else ""
    raise LogFormatError(
        f"run {safe(run)!r} (files {safe(stem)}.*.parquet) lacks segment(s) "
        f"{', '.join(map(str, missing[:10]))}{', …' if len(missing) > 10 else ''} (the "
        f"folder holds {', '.join(map(str, have[:10])) or 'none of them'}"
        f"{', …' if len(have) > 10 else ''}): "
        f"the rows of the missing segments would be left out of the audit{more}; copy the "
        "folder again in full (or restore the missing files), or move that run's files out "
        "of the folder to audit the other runs", path=str(folder),
        code=ErrorCode.SEGMENT_MISSING)


def _check_continuity(run: str, stem: str, info: dict[str, Any], segs: list[dict[str, Any]],
                      closed: bool, report: _FolderReport) -> None:
    """The close record counts the run's rows: a run that holds fewer (every segment present,
    since :func:`_refuse_segment_gaps` refused any gap) had a segment replaced by an older
    copy of it."""
    rows_have = sum(int(d.get("rows") or 0) for d in segs)
    rows_said = info.get("rows") if closed else None
    if not (isinstance(rows_said, int) and rows_have < rows_said):
        return
    report.findings.append(_finding(
        f"run {run!r} holds fewer rows than its close record says; its close record says "
        f"{rows_said} row(s) in {len(segs)} segment(s), the folder holds {rows_have}: the "
        "rows missing are not in the log (a segment file replaced by an older copy)", run=run,
        file=f"{stem}{CLAIM_SUFFIX}" if stem else segs[-1]["file"],
        count=rows_said - rows_have))


def _concat_shards(tables: list[pa.Table], p: Path) -> pa.Table:
    """The shards as one table, column types promoted (``SHARDS_INCOMPATIBLE`` if they cannot
    be)."""
    try:
        return join_tables(tables)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise LogFormatError(f"shards have incompatible columns ({exc}); convert them to one "
                             "schema", path=str(p), code=ErrorCode.SHARDS_INCOMPATIBLE) from None


def _with_provenance(merged: pa.Table, read: _Segments, shards: list[Path],
                     report: _FolderReport) -> pa.Table:
    """``merged`` with the folder's provenance in place of the segments' metadata."""
    prov_out = dict(read.first_prov or {})
    prov_out.update(
        schema_version=1, reader="grokaudit.logger.read_run_folder",
        shards=[q.name for q in shards], runs_logged=sorted(set(read.segments)),
        findings=report.findings, downsampled_runs=sorted(read.downsampled, key=str),
        warnings=report.warnings)
    meta = dict(merged.schema.metadata or {})
    meta.pop(b"pandas", None)
    meta.pop(SEGMENT_KEY, None)
    meta[PROVENANCE_KEY] = json.dumps(prov_out, sort_keys=True, default=str).encode("utf-8")
    return merged.replace_schema_metadata(meta)
