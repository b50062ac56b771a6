"""Generic tables: Parquet, CSV, TSV, JSONL — one file, or a directory of files.

One run per file (the run id is the file's path, ``--run-from path``), or many runs per file with
a ``run`` column (``--run-from column``, the default when the column exists; ``--run-from NAME``
takes run ids from column ``NAME``). ``--cond key=regex`` takes condition values from the path::

    sweep/wd1.5_s0/metrics.jsonl  ->  run "wd1.5_s0", with --cond wd='wd([0-9.]+)' -> wd=1.5
"""

from __future__ import annotations

from pathlib import Path

from grokaudit.errors import ErrorCode, LogFormatError

from .files import TABLE_SUFFIXES, check_tail, melt_wide, read_file, table_files
from .merge import ReadOptions
from .points import Points
from .registry import Reader


def _detect(path: Path) -> bool:
    if path.is_file():
        return path.suffix.lower() in TABLE_SUFFIXES
    return any(True for _ in table_files(path))


def run_ids_from_paths(files: list[Path], root: Path) -> list[str]:
    """Run ids for one-run-per-file layouts: the path relative to ``root`` without suffix.

    When every file has the same name (``*/metrics.jsonl``), the file name is dropped and the
    directory names the run.
    """
    if root.is_file():
        return [root.stem]
    rels = [f.relative_to(root).with_suffix("") for f in files]
    if len({r.name for r in rels}) == 1 and all(len(r.parts) > 1 for r in rels):
        rels = [r.parent for r in rels]
    return [r.as_posix() for r in rels]


def read(path: Path, options: ReadOptions) -> Points:
    """Read one table file or a directory of them (see the module docstring)."""
    files = table_files(path)
    if not files:
        raise LogFormatError("directory holds no .parquet, .csv, .tsv or .jsonl files; check "
                             "the path or the --format", path=str(path),
                             code=ErrorCode.FORMAT_MISMATCH)
    points = Points()
    ids = run_ids_from_paths(files, path)
    for f, rid in zip(files, ids):
        table = read_file(f)
        points.files.append(str(f))
        if table.num_rows == 0:
            raise LogFormatError("table has a header but no rows; there is nothing to read",
                                 path=str(f), code=ErrorCode.NO_ROWS)
        names = table.column_names
        if options.run_from in (None, "column"):
            run_column = "run" if "run" in names else None
            if options.run_from == "column" and run_column is None:
                raise LogFormatError("no 'run' column (asked for by --run-from column); name "
                                     "the column with --run-from NAME, or use --run-from path",
                                     path=str(f), column="run", code=ErrorCode.MISSING_COLUMN)
        elif options.run_from == "path":
            run_column = None
        else:
            run_column = options.run_from
        origin = rid if path.is_dir() else str(f)
        check_tail(f, points)
        melt_wide(points, table, path=f, origin=origin, run=rid, run_column=run_column)
    return points


READER = Reader(
    name="table",
    description="Canonical or generic tables: Parquet, CSV, TSV, JSONL (a file or a directory)",
    read=read, detect=_detect, version="1", priority=90,
)
