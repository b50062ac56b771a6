"""Weights & Biases logs: panel CSV exports, history exports, and offline run directories.

Panel "Export CSV" (wide, bucketed by the chart: read, but every run is flagged downsampled);
one file per chart, and a folder of such files is one log (the charts merged by run on Step)::

    "Step","wd1.5_s0 - test/acc","wd1.5_s0 - test/acc__MIN","wd1.5_s0 - test/acc__MAX",...
    charts/wandb_export_2026-01-01T12_00_00.000+01_00.csv, ...  ->  one log

History exports (``run.scan_history()`` / ``run.history()`` saved as CSV, JSON(L) or Parquet;
one run per file, named by the file; columns ``_step``, ``_runtime``, ``_timestamp`` and one
per metric)::

    wd1.5_s0-history.csv   ->  run "wd1.5_s0"

Offline run directories (``wandb.init(mode="offline")``; a resumed run is a second directory
with the same id, merged)::

    wandb/offline-run-20260101_120000-abc123/run-abc123.wandb

The ``.wandb`` file: a 7-byte header (``b":W&B"``, ``0xBEE1``, version), then LevelDB log
framing (32 KiB blocks; records ``<uint32 crc, uint16 length, uint8 type>``, the CRC being
zlib's CRC-32 of the type byte and the data), whose payloads are wandb ``Record`` protobufs
decoded with wandb's own protobuf module (extra ``[wandb]``).
"""

from __future__ import annotations

import json
import math
import re
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from grokaudit.errors import ErrorCode, LogFormatError
from grokaudit.text import safe

from ._wandb_decode import Fast as _Fast
from ._wandb_decode import _windows
from ._wandb_decode import decode_fast as _decode_fast
from ._wandb_values import _checked_step, _json_value, _step_value, _value
from .files import check_tail, header_of, melt_wide, read_file, table_files
from .merge import ReadOptions
from .points import Points, as_steps
from .records import TABLE_SUFFIXES, load
from .registry import Reader, import_extra

# ------------------------------------------------------------------------------------------
# panel CSV exports
# ------------------------------------------------------------------------------------------

STEP_AXES = ("Step", "step", "_step", "global_step")
TIME_AXES = ("Relative Time (Process)", "Relative Time (Wall)", "Wall Time", "_runtime",
             "_timestamp")
_BAND = re.compile(r"__(MIN|MAX)$")


def _is_panel(path: Path) -> bool:
    """True for a CSV file whose header is a chart export's: an x-axis, ``<run> - <metric>``."""
    if not (path.is_file() and path.suffix.lower() == ".csv"):
        return False
    cols = header_of(path)
    return (len(cols) > 1 and cols[0] in STEP_AXES + TIME_AXES
            and any(" - " in c for c in cols[1:]))


def _detect_panel(path: Path) -> bool:
    """A panel CSV, or a folder whose table files are all panel CSVs (a folder is classified
    by all its files: one chart export among plain tables does not make it a folder of
    charts; the table reader then refuses that chart, naming it)."""
    if path.is_dir():
        files = [f for f in table_files(path) if f.stat().st_size]  # empty: refused later
        return bool(files) and all(_is_panel(f) for f in files)
    return _is_panel(path)


def is_panel(path: Path) -> bool:
    """True for a W&B panel 'Export CSV' file (its header: an x-axis, ``<run> - <metric>``)."""
    return _is_panel(path)


def panel_files(path: Path) -> tuple[list[Path], list[Path]]:
    """The chart exports at ``path`` (the file itself, or the CSV files under the folder,
    sorted, recursive, hidden ones skipped) and the folder's other files (not tables: a PNG of
    the chart, notes), which are not read.

    Raises :class:`LogFormatError` for a table file in the folder that is not a panel export
    (``FORMAT_MISMATCH``) or is empty (``FILE_EMPTY``): grokaudit drops nothing silently.
    """
    if path.is_file():
        return [path], []
    tables = table_files(path)
    charts: list[Path] = []
    for f in tables:
        if f.stat().st_size == 0:
            raise LogFormatError("file is empty; there is nothing to read (remove it from the "
                                 "folder of charts)", path=str(f), code=ErrorCode.FILE_EMPTY)
        if not _is_panel(f):
            raise LogFormatError(
                f"in a folder of W&B panel exports, {safe(f.name)!r} is not one (its first line "
                "is not 'Step,\"<run> - <metric>\",…'); move it out of the folder, or give the "
                "charts and this file as separate paths (grokaudit check charts/*.csv "
                f"{safe(f.name)})", path=str(f), code=ErrorCode.FORMAT_MISMATCH)
        charts.append(f)
    if not charts:
        raise LogFormatError("no W&B panel exports (.csv) here; check the path or the --format",
                             path=str(path), code=ErrorCode.FORMAT_MISMATCH)
    shown = set(tables)
    others = sorted(q for q in path.rglob("*") if q.is_file() and q not in shown
                    and not any(p.startswith(".") for p in q.relative_to(path).parts))
    return charts, others


def _panel_floats(table: pa.Table, k: int, path: Path) -> np.ndarray:
    col = table.column(k)
    name = table.column_names[k]
    t = col.type
    if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_null(t)
            or pa.types.is_decimal(t)):
        raise LogFormatError(f"column {safe(name)!r} holds {t} values, not numbers; a W&B panel "
                             "export holds one number per step and run", path=str(path),
                             column=name, code=ErrorCode.BAD_COLUMN_TYPE)
    return np.asarray(col.cast(pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)


_Series = tuple[str, np.ndarray, np.ndarray]  #: (chart file, steps, values)


def _read_chart(path: Path, points: Points, seen: dict[tuple[str, str], list[_Series]]) -> int:
    """Add the lines of one chart export to ``points``; returns its number of band columns.

    A (run, metric) line that an earlier chart already held is added only at the steps that
    chart lacked; at the steps both hold, the values must be equal (``DUPLICATE_ROWS`` else),
    as when the charts are given as separate paths.
    """
    table = read_file(path)
    names = table.column_names
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise LogFormatError(f"column {safe(twice[0])!r} appears more than once; a W&B panel "
                             "export names each line once", path=str(path), column=twice[0],
                             code=ErrorCode.DUPLICATE_COLUMN)
    axis = names[0]
    if axis not in STEP_AXES:
        raise LogFormatError(f"panel exported against {safe(axis)!r}, not steps; set the "
                             "chart's x-axis to Step and export again", path=str(path),
                             column=axis, code=ErrorCode.MISSING_COLUMN)
    points.files.append(str(path))
    sf = _panel_floats(table, 0, path)
    rows = ~np.isnan(sf)
    step = np.zeros(sf.size, dtype=np.int64)
    step[rows] = as_steps(np.round(sf[rows]), what=f"column {safe(axis)!r}", path=str(path),
                          column=axis)
    check_tail(path, points)
    if np.any(sf[rows] != step[rows]):
        points.warnings.append(f"{safe(path.name)}: non-integer bucket steps rounded to the "
                               "nearest step")
    bands = 0
    counts: dict[str, int] = {}
    for k, name in enumerate(names[1:], start=1):
        if _BAND.search(name):
            bands += 1
            continue
        run, sep, metric = name.rpartition(" - ")
        if not sep:
            raise LogFormatError(f"column {safe(name)!r} is not '<run> - <metric>', so this is "
                                 "not a W&B panel export as it was written; read it as a plain "
                                 "table with --format table", path=str(path), column=name,
                                 code=ErrorCode.FORMAT_MISMATCH)
        if run.startswith("Group: "):
            run = run[len("Group: "):]
            if run not in points.extra.setdefault("grouped_runs", []):
                points.extra["grouped_runs"].append(run)
        v = _panel_floats(table, k, path)
        lost = ~rows & ~np.isnan(v)
        if lost.any():
            raise LogFormatError(f"column {safe(name)!r} has {int(lost.sum())} value(s) in rows "
                                 f"without a {safe(axis)!r}; every exported value needs its "
                                 "step: export the panel again", path=str(path), column=axis,
                                 code=ErrorCode.MISSING_VALUES)
        ok = rows & ~np.isnan(v)
        st, val = step[ok], v[ok]
        counts[run] = counts.get(run, 0) + int(st.size)
        earlier = seen.setdefault((run, metric), [])
        keep = np.ones(st.size, dtype=bool)
        for other, ost, oval in earlier:
            common, i, j = np.intersect1d(st, ost, assume_unique=False, return_indices=True)
            if common.size == 0:
                continue
            differ = val[i] != oval[j]
            if differ.any():
                at = int(np.flatnonzero(differ)[0])
                raise LogFormatError(
                    f"line {safe(run)!r} - {safe(metric)!r} is in two charts with different "
                    f"values ({int(differ.sum())} step(s), first: step {int(common[at])}: "
                    f"{val[i][at]:g} here, {oval[j][at]:g} in {safe(Path(other).name)!r}); "
                    "remove one chart from the folder, or give the charts as separate paths "
                    "with --on-duplicate first|last", path=str(path), column=metric,
                    code=ErrorCode.DUPLICATE_ROWS)
            keep[i] = False
        earlier.append((str(path), st, val))
        points.add(run, metric, st[keep], val[keep])
    runs = sorted(r for r, n in counts.items() if n)
    if runs:  # one finding per chart (each is bucketed on its own), naming its runs
        points.downsampled_runs.update(runs)
        shown = ", ".join(safe(r) for r in runs[:4]) + (", …" if len(runs) > 4 else "")
        points.finding("SOURCE_DOWNSAMPLED",
                       f"W&B panel CSV export: values are chart buckets (at most ~1500 points, "
                       f"min/max per bucket), not every logged step; {len(runs)} run(s): "
                       f"{shown}", runs=tuple(runs), file=str(path),
                       count=sum(counts[r] for r in runs))
    return bands


def read_panel_csv(path: Path, options: ReadOptions) -> Points:
    """Read a W&B panel CSV export, or a folder of them (one chart per file), merged by run.

    The charts' lines are joined on Step without interpolation (a chart with no bucket at a
    step leaves NaN there); every run is marked downsampled (``SOURCE_DOWNSAMPLED``, one
    finding per run and chart, as when the charts are given as separate paths).
    """
    charts, others = panel_files(path)
    points = Points()
    seen: dict[tuple[str, str], list[_Series]] = {}
    bands = sum(_read_chart(f, points, seen) for f in charts)
    if bands:
        points.warnings.append(f"{bands} __MIN/__MAX bucket-band columns not read (the bucket "
                               "values are)")
    if others:
        shown = ", ".join(repr(safe(q.relative_to(path).as_posix())) for q in others[:5])
        points.warnings.append(f"{len(others)} file(s) in the folder that are not CSV not read: "
                               f"{shown}{', …' if len(others) > 5 else ''}")
    if "grouped_runs" in points.extra:
        points.warnings.append("grouped chart: each 'run' is a group aggregate, not one run")
    return points


# ------------------------------------------------------------------------------------------
# history exports
# ------------------------------------------------------------------------------------------

SAMPLED_ROW_COUNTS = (500, 1500)


def _columns(path: Path) -> list[str]:
    kind = TABLE_SUFFIXES.get(path.suffix.lower())
    if kind in ("csv", "tsv"):
        return header_of(path)
    if kind == "parquet":
        import pyarrow.parquet as pq

        return list(pq.read_schema(path).names)
    with path.open("r", encoding="utf-8", errors="replace") as fh:
        head = fh.read(65536).lstrip()
    if kind == "jsonl":
        try:
            first = json.loads(head.splitlines()[0])
        except (ValueError, IndexError):
            return []
        # a JSON line that is not an object (null, 1, a list) has no column names
        return list(first) if isinstance(first, dict) else []
    return ["_step"] if '"_step"' in head else []


def _detect_history(path: Path) -> bool:
    files = table_files(path) if path.exists() else []
    if not files or (path.is_dir() and len(files) > 1000):
        return False
    try:
        return all("_step" in _columns(f) for f in files if f.stat().st_size)
    except (OSError, ValueError):
        return False


def read_history(path: Path, options: ReadOptions) -> Points:
    """Read W&B history exports (one run per file); warns when a history may be sampled."""
    files = table_files(path)
    if not files:
        raise LogFormatError("no history export files (.csv, .json, .jsonl, .parquet) here; "
                             "check the path or the --format", path=str(path),
                             code=ErrorCode.FORMAT_MISMATCH)
    points = Points()
    for f in files:
        points.files.append(str(f))
        loaded = load(f)
        table = loaded.table
        if table.num_rows == 0:
            raise LogFormatError("history export has no rows; there is nothing to read",
                                 path=str(f), code=ErrorCode.NO_ROWS)
        run = re.sub(r"[-_]history$", "", f.stem)
        if path.is_dir():
            rel = f.relative_to(path).with_suffix("").as_posix()
            run = re.sub(r"[-_]history$", "", rel)
        run_column = None
        if options.run_from not in (None, "path", "column"):
            run_column = options.run_from
        elif options.run_from == "column" or (options.run_from is None
                                               and "run" in table.column_names):
            run_column = "run"
        check_tail(f, points)
        # a history holds per-step values only (the config is elsewhere): no conditions
        melt_wide(points, loaded, path=f, origin=run, run=run, run_column=run_column,
                  numeric_conditions=False)
        if run_column is None:
            rows_per_run = {run: table.num_rows}
        else:
            ids = table.column(run_column).to_pandas().astype(str)
            rows_per_run = {str(k): int(v) for k, v in ids.value_counts().items()}
        for r, n_rows in sorted(rows_per_run.items()):
            if n_rows in SAMPLED_ROW_COUNTS:
                points.finding("POSSIBLY_SAMPLED",
                               f"history has exactly {n_rows} rows, the size of W&B's sampled "
                               "run.history(); export with run.scan_history() to get every "
                               "step", run=r, file=str(f), count=n_rows)
    return points


# ------------------------------------------------------------------------------------------
# offline run directories (.wandb)
# ------------------------------------------------------------------------------------------

HEADER = struct.Struct("<4sHB")
MAGIC = (b":W&B", 0xBEE1)
BLOCK = 32768
REC = struct.Struct("<IHB")
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def wandb_files(path: Path) -> list[Path]:
    """``.wandb`` files at ``path``, ordered by directory name (which starts with the date)."""
    if path.is_file():
        return [path]
    found = {q.resolve(): q for q in path.rglob("*.wandb")
             if q.is_file() and "latest-run" not in q.parts}
    return sorted(found.values(), key=lambda q: (q.parent.name, q.name))


def _detect_offline(path: Path) -> bool:
    if path.is_file():
        if path.suffix != ".wandb":
            return False
        with path.open("rb") as fh:
            return fh.read(4) == MAGIC[0]
    return bool(wandb_files(path))


def records(data: bytes, file: str, points: Points) -> list[bytes]:
    """Payloads of the complete records of one ``.wandb`` file, CRC-checked.

    A record failing its CRC skips to the next 32 KiB block (LevelDB's recovery) and a short
    tail ends the file; both are reported as ``SOURCE_TRUNCATED`` with the byte offset.
    """
    _check_header(data, file)
    out: list[bytes] = []
    pos = HEADER.size
    n = len(data)
    pending: list[bytes] | None = None
    pending_at = 0
    crc32 = zlib.crc32
    unpack = REC.unpack_from
    while pos < n:
        room = BLOCK - pos % BLOCK
        if room < REC.size:
            pos += room  # block trailer
            continue
        if n - pos < REC.size:
            if any(data[pos:]):
                points.finding("SOURCE_TRUNCATED", f"file ends inside a record header; "
                               f"{len(out)} records read", file=file, offset=pos, count=n - pos)
            break
        crc, length, kind = unpack(data, pos)
        if kind == 0 and length == 0:
            pos += room  # zero padding to the block end
            continue
        end = pos + REC.size + length
        if end > n:
            points.finding("SOURCE_TRUNCATED", f"file ends inside a record (truncated write); "
                           f"{len(out)} records read", file=file, offset=pos, count=n - pos)
            break
        body = data[pos + REC.size:end]
        if crc32(body, crc32(bytes((kind,)))) != crc or kind > LAST:
            skip_to = pos + room
            points.finding("SOURCE_TRUNCATED", f"record fails its CRC (corrupt byte); skipped to "
                           f"the next block, {min(skip_to, n) - pos} bytes unread", file=file,
                           offset=pos, count=min(skip_to, n) - pos)
            pending = None
            pos = skip_to
            continue
        if kind == FULL:
            out.append(body)
        elif kind == FIRST:
            pending, pending_at = [body], pos
        elif kind == MIDDLE and pending is not None:
            pending.append(body)
        elif kind == LAST and pending is not None:
            pending.append(body)
            out.append(b"".join(pending))
            pending = None
        pos = end
    if pending is not None:
        points.finding("SOURCE_TRUNCATED", "file ends inside a fragmented record", file=file,
                       offset=pending_at, count=n - pending_at)
    return out


_Rows = tuple[list[int], list[str], list[int], list[float], list[float]]  #: rec, key, step, value, wall


class _Slow:
    """What protobuf read of the records the numpy pass left (see :func:`_read_slow`)."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id  #: the run's id (from its run record, else the file name)
        self.names: dict[str, str] = {}  #: run id -> display name
        self.rows: _Rows = ([], [], [], [], [])
        self.config: dict[str, Any] = {}
        self.skipped = 0  #: non-numeric history values
        self.error: tuple[int, LogFormatError] | None = None  #: the first bad record


def _history_rows(k: int, history: Any, slow: _Slow, file: str) -> None:
    """Add the values of history record ``k`` (a protobuf) to ``slow.rows``."""
    step = None
    wall = math.nan
    vals: list[tuple[str, float]] = []
    for item in history.item:
        key = item.key or ".".join(item.nested_key)
        if key == "_step":
            step = _step_value(item.value_json)
        elif key == "_timestamp":
            w = _value(item.value_json)
            wall = float(w) if isinstance(w, (int, float)) else math.nan
        elif key.startswith("_"):
            continue
        else:
            v = _value(item.value_json)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                vals.append((key, float(v)))
            else:
                slow.skipped += 1
    if step is None and history.HasField("step"):
        step = history.step.num
    if not vals:
        return
    istep = _checked_step(k, step, vals[0][0], file)  # raises for a record without a step
    for key, v in vals:
        for col, x in zip(slow.rows, (k, key, istep, v, wall)):
            col.append(x)  # type: ignore[attr-defined]


def _read_slow(pb: Any, bufx: bytes, starts: np.ndarray, ends: np.ndarray, fast: _Fast,
               slow: _Slow, file: str) -> None:
    """Read the records ``fast.slow`` with wandb's ``Record`` protobuf, in file order, up to
    the first bad one (``slow.error``), or the numpy pass's first error."""
    for k in fast.slow.tolist():
        if fast.error is not None and k > fast.error[0]:
            break
        try:
            rec = pb.Record.FromString(bufx[int(starts[k]):int(ends[k])])
        except Exception:  # noqa: BLE001 - protobuf's DecodeError
            slow.error = (k, LogFormatError(f"record {k} passes its CRC but is not a wandb "
                                            "Record protobuf (a damaged file, or a newer W&B "
                                            "format?)", path=file,
                                            code=ErrorCode.CORRUPT_RECORD))
            return
        kind = rec.WhichOneof("record_type")
        if kind == "history":
            try:
                _history_rows(k, rec.history, slow, file)
            except LogFormatError as exc:
                slow.error = (k, exc)
                return
        elif kind == "run":
            if rec.run.run_id:
                slow.run_id = rec.run.run_id
            if rec.run.display_name:
                slow.names.setdefault(slow.run_id, rec.run.display_name)
            for item in rec.run.config.update:
                slow.config[item.key or ".".join(item.nested_key)] = _json_value(item.value_json)
        elif kind == "config":
            for item in rec.config.update:
                slow.config[item.key or ".".join(item.nested_key)] = _json_value(item.value_json)


def _framed(data: bytes, file: str, points: Points) -> tuple[bytes, np.ndarray, np.ndarray, int]:
    """The records of one file: (buffer, starts, ends, bytes of the file in the buffer);
    an intact file is framed at once, a damaged one walked record by record, with findings."""
    _check_header(data, file)
    framed = _records_fast(data)
    if framed is not None:
        return (*framed, len(data))
    payloads = records(data, file, points)
    lens = np.array([len(b) for b in payloads], dtype=np.int64)
    return (b"".join(payloads) + bytes(16), np.cumsum(lens) - lens, np.cumsum(lens),
            int(lens.sum()))


def read_offline(path: Path, options: ReadOptions) -> Points:
    """Read offline run directories; a resumed run (same id, second directory) is merged.

    The history records of the usual layout are read with numpy (:func:`_decode_fast`), every
    other record with wandb's ``Record`` protobuf, record by record, in file order."""
    pb = import_extra("wandb.proto.wandb_internal_pb2", "wandb")
    files = wandb_files(path)
    if not files:
        raise LogFormatError("no .wandb files (wandb/offline-run-*/run-*.wandb) here; check "
                             "the path or the --format", path=str(path),
                             code=ErrorCode.FORMAT_MISMATCH)
    points = Points()
    names: dict[str, str] = {}
    skipped = 0
    for f in files:
        points.files.append(str(f))
        data = f.read_bytes()
        if not data:
            raise LogFormatError("file is empty; there is nothing to read", path=str(f),
                                 code=ErrorCode.FILE_EMPTY)
        bufx, starts, ends, n_main = _framed(data, str(f), points)
        del data
        fast = _decode_fast(bufx, starts, ends, str(f), n_main)
        slow = _Slow(re.sub(r"^run-", "", f.stem))
        slow.names = names
        _read_slow(pb, bufx, starts, ends, fast, slow, str(f))
        skipped += fast.skipped + slow.skipped
        if fast.error is not None and (slow.error is None or fast.error[0] < slow.error[0]):
            raise fast.error[1]
        if slow.error is not None:
            raise slow.error[1]
        run = slow.run_id  # named once every file is read (two runs may share a name)
        _add_series(points, run, fast, slow.rows)
        for key, v in slow.config.items():
            if key.startswith("_") or isinstance(v, (dict, list)) or v is None:
                continue
            points.add_condition(run, key, v)
        points.origins[run] = f.parent.name
    if skipped:
        points.warnings.append(f"{skipped} non-numeric history value(s) (media, tables, "
                               "histograms) ignored")
    # the runs with history (a directory of a run that logged nothing names no run)
    points.rename_runs(run_names(sorted({c.run for c in points.chunks}), names))
    return points


def run_names(ids: list[str], display: dict[str, str]) -> dict[str, str]:
    """Each run id's name: its display name, or ``<display name>/<run id>`` where runs of
    different ids share a display name (W&B gives every new run a random name only when none
    is set: a script that sets one names every run of a sweep alike) or a name is another
    run's id. A resumed run (one id in two directories) is one run."""
    want = {i: display.get(i, i) for i in ids}
    users: dict[str, set[str]] = {}
    for i, n in want.items():
        users.setdefault(n, set()).add(i)
    out = {}
    for i, n in want.items():
        shared = len(users[n]) > 1 or (n != i and n in want)
        out[i] = f"{n}/{i}" if shared else n
    return {i: n for i, n in out.items() if n != i}


def _add_series(points: Points, run: str, fast: _Fast, rows: _Rows) -> None:
    """One chunk per metric, in order of first appearance, from the values read by numpy and
    by protobuf (merged back into record order)."""
    ids: dict[str, int] = {k: i for i, k in enumerate(fast.key)}
    rec = [fast.rec, np.array(rows[0], dtype=np.int64)]
    key = [fast.key_code, np.array([ids.setdefault(k, len(ids)) for k in rows[1]],
                                   dtype=np.int64)]
    step = [fast.step, np.array(rows[2], dtype=np.int64)]
    value = [fast.value, np.array(rows[3], dtype=np.float64)]
    wall = [fast.wall, np.array(rows[4], dtype=np.float64)]
    r, kc, st, val, wt = (np.concatenate(x) for x in (rec, key, step, value, wall))
    if rows[0] and fast.rec.size:
        order = np.argsort(r, kind="stable")  # a record's values are all on one side
        kc, st, val, wt = kc[order], st[order], val[order], wt[order]
    if not kc.size:
        return
    names = {i: k for k, i in ids.items()}
    codes, first = pd.factorize(kc)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(first) + 1))
    for i, kid in enumerate(first.tolist()):
        sel = order[bounds[i]:bounds[i + 1]]
        points.add(run, names[kid], st[sel], val[sel], wt[sel])


def _check_header(data: bytes, file: str) -> None:
    if len(data) < HEADER.size:
        raise LogFormatError("file is shorter than the W&B header: it is truncated or not a "
                             ".wandb file", path=file, code=ErrorCode.FILE_UNREADABLE)
    ident, magic, _version = HEADER.unpack_from(data, 0)
    if (ident, magic) != MAGIC:
        raise LogFormatError("not a W&B .wandb file (bad header); check the path or the "
                             "--format", path=file, code=ErrorCode.FILE_UNREADABLE)


def _records_fast(data: bytes) -> tuple[bytes, np.ndarray, np.ndarray] | None:
    """The records of an intact ``.wandb`` file without walking it record by record: (buffer,
    starts, ends) of each record's payload, in file order; None for anything else (a record
    failing its CRC, a truncated tail, a fragment crossing its block, fragments out of order),
    for :func:`records` to walk and report.

    Every 32 KiB block starts with a record header, so the blocks are walked side by side, one
    record of each per numpy step; all CRCs are then computed by zlib, one call per record.
    """
    n = len(data)
    nblocks = -(-n // BLOCK)
    full_end = (np.arange(nblocks, dtype=np.int64) + 1) * BLOCK
    pos = full_end - BLOCK
    pos[0] = HEADER.size
    bufp = np.frombuffer(data, dtype=np.uint8)  # reads stay below p + 7 <= n
    found_block: list[np.ndarray] = []
    found_pos: list[np.ndarray] = []
    found_step: list[np.ndarray] = []
    live = np.arange(nblocks, dtype=np.int64)
    step = 0
    while live.size:
        p = pos[live]
        room = full_end[live] - p
        tail = (room >= REC.size) & (n - p < REC.size)
        if tail.any():  # a file ending less than a header after the last record
            for q in p[tail].tolist():
                if any(data[q:]):
                    return None
        go = (room >= REC.size) & ~tail
        live, p = live[go], p[go]
        if not live.size:
            break
        length = bufp[p + 4].astype(np.int64) | (bufp[p + 5].astype(np.int64) << 8)
        kind = bufp[p + 6]
        pad = (kind == 0) & (length == 0)
        live, p, length, kind = live[~pad], p[~pad], length[~pad], kind[~pad]
        end = p + REC.size + length
        if np.any(end > full_end[live]) or np.any(end > n) or np.any((kind == 0) | (kind > LAST)):
            return None
        found_block.append(live)
        found_pos.append(p)
        found_step.append(np.full(live.size, step, dtype=np.int64))
        pos[live] = end
        step += 1
    if not found_pos:
        return data + bytes(16), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    # a block gives one record per step until it ends: file order is (block, step)
    blk = np.concatenate(found_block)
    per_block = np.bincount(blk, minlength=nblocks)
    first_of_block = np.concatenate(([0], np.cumsum(per_block)[:-1]))
    at = np.empty(blk.size, dtype=np.int64)
    at[first_of_block[blk] + np.concatenate(found_step)] = np.concatenate(found_pos)
    length = bufp[at + 4].astype(np.int64) | (bufp[at + 5].astype(np.int64) << 8)
    kind = bufp[at + 6]
    want = _windows(bufp, 4)[at]
    crc32 = zlib.crc32
    got = np.array([crc32(data[a:b]) for a, b in zip((at + 6).tolist(),
                                                      (at + REC.size + length).tolist())],
                   dtype=np.uint32)
    if not np.array_equal(got, want):
        return None
    # fragments: (FULL | FIRST MIDDLE* LAST)* exactly, else the walk decides what is kept
    prev = np.concatenate(([LAST], kind[:-1]))
    inside = (prev == FIRST) | (prev == MIDDLE)
    opens = (kind == FULL) | (kind == FIRST)
    if np.any(opens == inside) or kind[-1] not in (FULL, LAST):
        return None
    starts = at + REC.size
    ends = starts + length
    frag = np.flatnonzero(kind != FULL)  # runs FIRST MIDDLE* LAST, one per joined record
    if not frag.size:
        return data + bytes(16), starts, ends
    joined = b"".join(map(data.__getitem__, map(slice, starts[frag].tolist(),
                                                  ends[frag].tolist())))
    size = np.add.reduceat(length[frag], np.flatnonzero(kind[frag] == FIRST))
    rec_starts = starts[opens]
    rec_ends = ends[opens]
    which = np.flatnonzero(kind[opens] == FIRST)
    rec_ends[which] = n + np.cumsum(size)
    rec_starts[which] = rec_ends[which] - size
    return b"".join([data, joined, bytes(16)]), rec_starts, rec_ends  # one copy


PANEL_CSV_READER = Reader(
    name="wandb-csv",
    description="W&B panel 'Export CSV' (bucketed by the chart: flagged SOURCE_DOWNSAMPLED)",
    read=read_panel_csv, detect=_detect_panel, version="1", priority=30, partial=True,
)
HISTORY_READER = Reader(
    name="wandb-history",
    description="W&B history exports (scan_history / history, as CSV, JSON(L) or Parquet)",
    read=read_history, detect=_detect_history, version="1", priority=35,
)
OFFLINE_READER = Reader(
    name="wandb-offline",
    description="W&B offline run directories (run-<id>.wandb, CRC-checked, every step)",
    read=read_offline, detect=_detect_offline, version="1", extra="wandb",
    extra_module="wandb", priority=20,
)
