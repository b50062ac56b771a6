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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from .errors import ErrorCode, LogFormatError
from .shards import PROVENANCE_KEY, provenance_of, read_shard

__all__ = ["CLAIM_SUFFIX", "SEGMENT_KEY", "TMP_SUFFIX", "is_run_folder", "read_run_folder"]

#: A run's claim file: ``<stem>.claim``, created when its logger opens.
CLAIM_SUFFIX = ".claim"
#: Schema metadata key of a segment's state (run, segment number, closed, rows, last step, ±inf
#: counts), read by :func:`read_run_folder`; beside it, the provenance every reader keeps
#: (``PROVENANCE_KEY``, from :mod:`grokaudit.shards`).
SEGMENT_KEY = b"grokaudit.runlogger"
#: The end of a segment's temporary name during a flush (``.<segment>.<pid>.tmp``).
TMP_SUFFIX = ".tmp"



def is_run_folder(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a folder holding a :class:`RunLogger` claim file."""
    p = Path(path)
    try:
        return p.is_dir() and any(q.suffix == CLAIM_SUFFIX for q in p.iterdir())
    except OSError:
        return False


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
    :class:`LogFormatError` when the folder holds no shard.
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
    segs = sorted(found, key=lambda d: int(d.get("segment") or 0))
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


def _check_continuity(run: str, stem: str, info: dict[str, Any], segs: list[dict[str, Any]],
                      closed: bool, report: _FolderReport) -> None:
    """Segments are numbered 0, 1, 2… and the close record counts them and their rows: a
    segment file lost after the run (a partial copy, a cleanup) is a gap."""
    have = {int(d.get("segment") or 0) for d in segs}
    expected = int(info["segments"]) if closed and isinstance(info.get("segments"), int) \
        else max(have) + 1
    missing = sorted(set(range(expected)) - have)
    rows_have = sum(int(d.get("rows") or 0) for d in segs)
    rows_said = info.get("rows") if closed else None
    if not (missing or (isinstance(rows_said, int) and rows_have < rows_said)):
        return
    what = (f"segment(s) {', '.join(str(m) for m in missing)} of run {run!r} are "
            f"missing from the folder" if missing else
            f"run {run!r} holds fewer rows than its close record says")
    told = (f"; its close record says {rows_said} row(s) in {expected} segment(s), the "
            f"folder holds {rows_have} in {len(have)}" if isinstance(rows_said, int)
            else "")
    report.findings.append(_finding(
        f"{what}{told}: the rows of the missing segments are not in the log (a partial "
        "copy of the folder, or files removed after the run)", run=run,
        file=f"{stem}{CLAIM_SUFFIX}" if stem else segs[-1]["file"],
        count=(rows_said - rows_have) if isinstance(rows_said, int) else len(missing)))


def _concat_shards(tables: list[pa.Table], p: Path) -> pa.Table:
    """The shards as one table, column types promoted (``SHARDS_INCOMPATIBLE`` if they cannot
    be)."""
    try:
        return pa.concat_tables(tables, promote_options="permissive")
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
