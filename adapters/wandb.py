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
import pyarrow as pa
from grokaudit.errors import ErrorCode, LogFormatError
from grokaudit.schema import STEP_MAX
from grokaudit.text import safe

from .files import TABLE_SUFFIXES, check_tail, header_of, melt_wide, read_file, table_files
from .merge import ReadOptions
from .points import Points, as_steps
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
    """A panel CSV, or a folder holding at least one (its other files are refused on reading,
    so that a folder of charts with a stray CSV is never read as a generic table)."""
    if path.is_dir():
        return any(_is_panel(f) for f in table_files(path) if f.suffix.lower() == ".csv")
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
    for run in sorted(r for r, n in counts.items() if n):
        points.downsampled_runs.add(run)
        points.finding("SOURCE_DOWNSAMPLED",
                       "W&B panel CSV export: values are chart buckets (at most ~1500 points, "
                       "min/max per bucket), not every logged step", run=run, file=str(path),
                       count=counts[run])
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
        table = read_file(f)
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
        melt_wide(points, table, path=f, origin=run, run=run, run_column=run_column,
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
_SPECIAL = {"NaN": math.nan, "nan": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


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
    if len(data) < HEADER.size:
        raise LogFormatError("file is shorter than the W&B header: it is truncated or not a "
                             ".wandb file", path=file, code=ErrorCode.FILE_UNREADABLE)
    ident, magic, _version = HEADER.unpack_from(data, 0)
    if (ident, magic) != MAGIC:
        raise LogFormatError("not a W&B .wandb file (bad header); check the path or the "
                             "--format", path=file, code=ErrorCode.FILE_UNREADABLE)
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


def _value(text: str) -> Any:
    """A history value: float fast path (also reads NaN and Infinity), else JSON."""
    try:
        return float(text)
    except ValueError:
        return _json_value(text)


def _step_value(text: str) -> int | float | str | None:
    """A ``_step`` value_json: an int (read exactly, whatever its size), an integral float
    (``2.0``), None for ``null``, else the text itself (refused by the caller)."""
    t = text.strip()
    try:
        return int(t)
    except ValueError:
        pass
    try:
        return float(t)  # non-finite and fractional steps are refused by the caller
    except ValueError:
        pass
    return None if t == "null" else t


def _json_value(text: str) -> Any:
    try:
        v = json.loads(text)
    except ValueError:
        return None
    if isinstance(v, str):
        return _SPECIAL.get(v)
    return v


def read_offline(path: Path, options: ReadOptions) -> Points:
    """Read offline run directories; a resumed run (same id, second directory) is merged."""
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
        payloads = records(data, str(f), points)
        run_id = re.sub(r"^run-", "", f.stem)
        series: dict[str, tuple[list[int], list[float], list[float]]] = {}
        config: dict[str, Any] = {}
        for k, body in enumerate(payloads):
            try:
                rec = pb.Record.FromString(body)
            except Exception:  # noqa: BLE001 - protobuf's DecodeError
                raise LogFormatError(f"record {k} passes its CRC but is not a wandb Record "
                                     "protobuf (a damaged file, or a newer W&B format?)",
                                     path=str(f), code=ErrorCode.CORRUPT_RECORD) from None
            kind = rec.WhichOneof("record_type")
            if kind == "history":
                step = None
                wall = math.nan
                vals: list[tuple[str, float]] = []
                for item in rec.history.item:
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
                            skipped += 1
                if step is None and rec.history.HasField("step"):
                    step = rec.history.step.num
                if not vals:
                    continue
                if step is None:
                    raise LogFormatError(
                        f"history record {k} ({safe(vals[0][0])!r}, …) has no step; every "
                        "logged value needs its step", path=str(f), column="_step",
                        code=ErrorCode.MISSING_VALUES)
                if isinstance(step, str) or (isinstance(step, float)
                                             and not step.is_integer()):
                    raise LogFormatError(
                        f"history record {k} has the step {safe(step)[:40]!r}, which is not an "
                        "integer", path=str(f), column="_step",
                        code=ErrorCode.NON_INTEGER_STEP)
                istep = int(step)
                if not 0 <= istep <= STEP_MAX:
                    raise LogFormatError(
                        f"history record {k} has the step {istep}, outside 0..2**53; a damaged "
                        "record?", path=str(f), column="_step",
                        code=ErrorCode.NEGATIVE_STEP if istep < 0
                        else ErrorCode.STEP_OUT_OF_RANGE)
                for key, v in vals:
                    s = series.get(key)
                    if s is None:
                        s = series[key] = ([], [], [])
                    s[0].append(istep)
                    s[1].append(v)
                    s[2].append(wall)
            elif kind == "run":
                if rec.run.run_id:
                    run_id = rec.run.run_id
                if rec.run.display_name:
                    names.setdefault(run_id, rec.run.display_name)
                for item in rec.run.config.update:
                    config[item.key or ".".join(item.nested_key)] = _json_value(item.value_json)
            elif kind == "config":
                for item in rec.config.update:
                    config[item.key or ".".join(item.nested_key)] = _json_value(item.value_json)
        run = names.get(run_id, run_id)
        for key, (st, val, wt) in series.items():
            points.add(run, key, st, val, wt)
        for key, v in config.items():
            if key.startswith("_") or isinstance(v, (dict, list)) or v is None:
                continue
            points.add_condition(run, key, v)
        points.origins[run] = f.parent.name
    if skipped:
        points.warnings.append(f"{skipped} non-numeric history value(s) (media, tables, "
                               "histograms) ignored")
    return points


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
