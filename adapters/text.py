"""Header-less numeric text: ``.txt``, ``.dat``, ``.log`` files of numbers and nothing else.

Every non-blank line holds the same count of numbers, separated by whitespace or commas, and
there is no header line (``0<TAB>10.96`` / ``100<TAB>6.22`` …, as ``np.savetxt`` or a
``print(step, loss)`` writes). What the columns are is not in the file, so it is read only when
``--columns step,loss`` names them, in order; without it the file is refused with one line
saying how many columns of numbers it has and proposing ``--columns``. A file whose lines are
not all numbers of one count (a header, a console log, a word) is not such a file.

One file is one run, named by its file name (``loss_data.txt`` → ``loss_data``); a folder is
read when its ``.txt``/``.dat``/``.log`` files are all such files (and it holds no table).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow as pa
from grokaudit.errors import ConfigError, ErrorCode, LogFormatError
from grokaudit.text import DECIMAL, safe

from .files import files_under, find_step_column, melt_wide, table_files
from .merge import ReadOptions
from .points import Points
from .records import ROW_STEP, Loaded, rows_as_steps
from .registry import Reader

SUFFIXES = (".txt", ".dat", ".log")
_SPLIT = re.compile(r"[\s,]+")
#: Bytes read by detection (the whole file is checked when it is read).
_PROBE = 1 << 20


def _cells(line: str) -> list[str]:
    return [c for c in _SPLIT.split(line.strip()) if c]


#: A number as an ASCII decimal (``nan``/``inf`` words too): not Python's ``float()``, which
#: also reads ``3_0``, other scripts' digits and fullwidth forms.
_NUMBER = re.compile(rf"{DECIMAL}|[-+]?(?:nan|inf|infinity)", re.ASCII | re.IGNORECASE)
#: An integer written as one (read exactly, beyond 2**53 too; past 30 digits, beyond any
#: int64 and Python's digit limit for int(), it is read as a float).
_INTEGER = re.compile(r"[-+]?\d{1,30}", re.ASCII)


def _number(cell: str) -> bool:
    return _NUMBER.fullmatch(cell) is not None


def numeric_width(text: str, *, whole: bool) -> int | None:
    """The count of numbers on every non-blank line of ``text``, or None when a line holds
    something else or another count (``whole``: ``text`` is the whole file, else its last
    line may be cut by the probe and is not judged)."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not whole and len(lines) > 1:
        lines = lines[:-1]
    width: int | None = None
    for ln in lines:
        cells = _cells(ln)
        if not cells or not all(_number(c) for c in cells):
            return None
        if width is None:
            width = len(cells)
        elif len(cells) != width:
            return None
    return width


def _probe(path: Path) -> int | None:
    if path.suffix.lower() not in SUFFIXES or not path.is_file():
        return None
    with path.open("rb") as fh:
        raw = fh.read(_PROBE + 1)
    try:
        text = raw[:_PROBE].decode("utf-8")
    except UnicodeDecodeError:
        return None
    return numeric_width(text, whole=len(raw) <= _PROBE)


def _text_files(path: Path) -> list[Path]:
    return files_under(path, SUFFIXES)


def _detect(path: Path) -> bool:
    if path.is_file():
        return _probe(path) is not None
    files = _text_files(path)
    return bool(files) and not table_files(path) and all(_probe(f) is not None for f in files)


def _read_numbers(path: Path) -> tuple[np.ndarray, list[list[int] | None]]:
    """The file's numbers, one row per non-blank line, and for each column written wholly as
    integers its exact values (None for another column); refused (``UNKNOWN_FORMAT``) when a
    line is not numbers of the first line's count."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise LogFormatError("not UTF-8 text; not a header-less numeric file", path=str(path),
                             code=ErrorCode.UNKNOWN_FORMAT) from None
    rows: list[list[float]] = []
    texts: list[list[str]] = []
    for i, ln in enumerate(text.splitlines(), start=1):
        if not ln.strip():
            continue
        cells = _cells(ln)
        if not all(_number(c) for c in cells) or (rows and len(cells) != len(rows[0])):
            raise LogFormatError(
                f"line {i} ({safe(ln.strip())[:40]!r}) is not {len(rows[0]) if rows else 'a'} "
                "number(s) like the lines before it: not a header-less numeric file",
                path=str(path), code=ErrorCode.UNKNOWN_FORMAT)
        rows.append([float(c) for c in cells])
        texts.append(cells)
    if not rows:
        raise LogFormatError("no line of numbers; there is nothing to read", path=str(path),
                             code=ErrorCode.NO_ROWS)
    exact = [[int(t[k]) for t in texts] if all(_INTEGER.fullmatch(t[k]) for t in texts)
             else None for k in range(len(texts[0]))]
    return np.asarray(rows, dtype=np.float64), exact


def _table(path: Path, options: ReadOptions) -> Loaded:
    """The file as a table with the ``--columns`` names (``--map X=step`` applied)."""
    data, exact = _read_numbers(path)
    width = data.shape[1]
    names = list(options.columns or ())
    if not names:
        raise LogFormatError(
            f"header-less numeric text: {width} column(s) of numbers on every line and no "
            f"header naming them; name them in order with --columns (e.g. --columns "
            f"{','.join(['step', 'test_acc', 'train_acc', 'loss'][:width]) if width <= 4 else 'step,…'})",
            path=str(path), column="step", code=ErrorCode.MISSING_COLUMN)
    if len(names) != width:
        raise ConfigError(f"--columns names {len(names)} column(s), but {safe(path.name)} has "
                          f"{width} number(s) on every line; name each column once, in order",
                          option="--columns", code=ErrorCode.INVALID_OPTION)
    rename = {k: v for k, v in (options.mapping or {}).items() if v in ("step", "run")}
    names = [rename.get(n, n) for n in names]
    # a column written as integers is read as them, exactly (a step beyond 2**53 is then
    # refused by its range check, as in a CSV; beyond int64, floats); other whole numbers as
    # integers only where float64 held them exactly (≤ 2**53): 1e19 wrapped to −2**63
    def fits_int64(v: list[int] | None) -> bool:
        return v is not None and -(2**63) <= min(v) and max(v) < 2**63

    arrays = [pa.array(exact[i], pa.int64()) if fits_int64(exact[i])
              else pa.array(data[:, i].astype(np.int64)) if np.all(np.isfinite(data[:, i]))
              and np.all(data[:, i] == np.round(data[:, i]))
              and float(np.max(np.abs(data[:, i]), initial=0.0)) <= 2.0 ** 53
              else pa.array(data[:, i]) for i in range(width)]
    table = pa.table(dict(zip(names, arrays)))
    step = find_step_column(names)
    if options.step_from == "row" and step is None:  # each line one log point, in order
        return Loaded(table=rows_as_steps(table, path, None), step=ROW_STEP,
                      rows_numbered=True)
    return Loaded(table=table, step=step)


def _check_tail(path: Path, points: Points) -> None:
    """A last line without its newline may have been cut short (``SOURCE_TRUNCATED``)."""
    size = path.stat().st_size
    with path.open("rb") as fh:
        fh.seek(max(0, size - 1))
        last = fh.read(1)
    if last and last != b"\n":
        points.finding("SOURCE_TRUNCATED", "the last line has no newline: the file may have "
                       "been cut short while it was written; check that line", file=str(path))


def read(path: Path, options: ReadOptions) -> Points:
    """Read one header-less numeric text file, or a folder of them (one run per file)."""
    from .table import note_other_files, run_ids_from_paths

    files = [path] if path.is_file() else _text_files(path)
    points = Points()
    if path.is_dir():  # images, PDFs… beside the text logs: named, never dropped in silence
        note_other_files(points, path, files)
    numbered = False
    for f, rid in zip(files, run_ids_from_paths(files, path)):
        loaded = _table(f, options)
        numbered |= loaded.rows_numbered
        points.files.append(str(f))
        _check_tail(f, points)
        melt_wide(points, loaded, path=f, origin=rid if path.is_dir() else str(f), run=rid,
                  run_column=None)
    points.extra["columns_named"] = list(options.columns or ())
    if options.step_from == "row" and not numbered:  # an option that changed nothing
        raise LogFormatError("--step-from row numbers the lines of a file with no step "
                             "column, but --columns names one; leave --step-from out",
                             path=str(path), column="step", code=ErrorCode.INVALID_OPTION)
    return points


READER = Reader(
    name="text",
    description="Header-less numeric text (.txt, .dat, .log), read with --columns naming "
                "the columns",
    read=read, detect=_detect, version="1", priority=95,
)
