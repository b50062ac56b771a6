"""Mixed folders: run logs beside files that are no run log, and tables of one row per run.

A folder of run logs often holds other things: plots (PNG, SVG), PDFs, HTML pages, a summary
table of one row per run, a transposed sweep table. Read as a folder of tables:

* a file that is no table (an image, a PDF, an HTML page, another data file) is set aside with
  one note naming it and why — never read, never silently; documentation and code files
  (``README.md``, ``LICENSE``, ``*.py``, YAML) are not logs and are not named;
* a table with no step column (none by name, see ``docs/adapters.md``), which no column of
  could be one or which holds at most :data:`SUMMARY_ROWS` rows, is set aside with a note
  — a summary or sweep table, not a log — when other files of the folder are run logs; a
  folder whose every table is such a table is refused as before (the first one's
  ``MISSING_COLUMN``), never an empty audit;
* a set-aside table with a column whose values name runs read beside it is proposed as their
  conditions: ``--conditions-from FILE --on COL`` joins its other columns onto the runs whose
  id (or the last part of whose id) is in ``COL``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)
from grokaudit.errors import ConfigError, ErrorCode, LogFormatError
from grokaudit.roles import is_outcome_name
from grokaudit.shards import NEVER_READ_SUFFIXES
from grokaudit.text import safe

from .merge import ReadOptions
from .points import Points
from .records import Loaded, header_only_table, read_arrow_file, row_naming_column

#: A table without a step column and at most this many rows is a summary, not a log.
SUMMARY_ROWS = 16

_WHY = {
    **dict.fromkeys((".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".bmp", ".tif",
                     ".tiff", ".eps"), "an image"),
    ".pdf": "a PDF document",
    **dict.fromkeys((".html", ".htm"), "an HTML page"),
    **dict.fromkeys((".npz", ".npy"), "a NumPy file (give it as its own path to read it)"),
    **dict.fromkeys(NEVER_READ_SUFFIXES, "a checkpoint or pickle (never read)"),
    **dict.fromkeys((".txt", ".dat", ".log"),
                    "a text file (give it as its own path: one with a header line, as Keras's "
                    "CSVLogger writes, is read as a table; a header-less log with --columns)"),
}
#: Files that are plainly no log and are not named in the notes.
_QUIET_SUFFIXES = frozenset({".md", ".rst", ".py", ".sh", ".yaml", ".yml", ".toml", ".cfg",
                             ".ini", ".ipynb", ".gitignore"})
_QUIET_STEMS = ("license", "licence", "readme", "copying", "notice", "origin", "authors")


def other_files(path: Path, tables: list[Path]) -> dict[str, str]:
    """The files of the folder ``path`` that are no table and no documentation: relative path
    -> why they are not read."""
    out: dict[str, str] = {}
    listed = set(tables)
    for q in sorted(path.rglob("*")):
        rel = q.relative_to(path)
        if not q.is_file() or q in listed or any(p.startswith(".") for p in rel.parts):
            continue
        suffix = q.suffix.lower()
        if suffix in _QUIET_SUFFIXES or q.stem.lower().startswith(_QUIET_STEMS):
            continue
        if "tfevents" in q.name or suffix == ".wandb":
            continue  # another log format: the folder's detection refuses two formats
        out[rel.as_posix()] = ("a table's header with no rows (a run stopped before its "
                               "first epoch ended?): nothing to read" if header_only_table(q)
                               else _WHY.get(suffix, "not a table file"))
    return out


#: Names of columns that count runs, not steps (a sorted seed column of a summary table is
#: no step: 20 rows with seed 0…19 refused the whole folder).
_ID_COLUMN = re.compile(r"(^|[_./ -])(seed|run|id|idx|index|trial|rep|replicate|job)s?([_./ -]|$)",
                        re.IGNORECASE)


def _step_like(table: pa.Table) -> bool:
    """A column that could be a step: non-negative integers that never decrease, not named
    as a count of runs (``seed``, ``run_id``, ``trial``)."""
    for name in table.column_names:
        if _ID_COLUMN.search(name):
            continue
        col = table.column(name)
        if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)) \
                or col.null_count or table.num_rows < 2:
            continue
        a = np.asarray(col.cast(pa.float64()).to_numpy(zero_copy_only=False))
        if np.all(a >= 0) and np.all(a == np.round(a)) and np.all(np.diff(a) >= 0):
            return True
    return False


def summary_reason(loaded: Loaded) -> str | None:
    """Why a table of a folder is no run log (no step column, and no column could be one or
    it holds at most :data:`SUMMARY_ROWS` rows; or a step column holding one value in every
    row), or None when it may be one."""
    t = loaded.table
    if loaded.step is not None:
        col = t.column(loaded.step) if loaded.step in t.column_names else None
        if col is None or t.num_rows < 2 or col.null_count or \
                pa.compute.count_distinct(col).as_py() != 1 or row_naming_column(t) is None:
            return None  # (a run cut short: its rows at one step, and no column naming rows)
        # every row at one step (a manifest's total `steps`, one row per run): no log
        return (f"its step column {safe(loaded.step)!r} holds one value in all {t.num_rows} "
                f"rows ({safe(str(col[0].as_py()))}): a table of one row per run (a total "
                "number of steps?), not a run log")
    if t.num_rows > SUMMARY_ROWS and _step_like(t):
        return None
    return (f"no step column ({t.num_rows} row(s), columns "
            f"{', '.join(repr(safe(c)) for c in t.column_names[:4])}"
            f"{', …' if t.num_columns > 4 else ''}): a summary or sweep table, not a run log; "
            "name its step with --map COL=step if it is one")


def propose(points: Points, tables: dict[str, pa.Table]) -> None:
    """Name the first set-aside table one of whose columns holds the ids of runs read beside
    it: ``--conditions-from FILE --on COL`` (``points.extra["conditions_table"]``)."""
    runs = {c.run for c in points.chunks}
    keys = runs | {r.rsplit("/", 1)[-1] for r in runs}
    for rel, t in tables.items():
        for name in t.column_names:
            vals = {str(v) for v in t.column(name).to_pylist() if v is not None}
            if vals & keys:
                points.extra["conditions_table"] = {
                    "file": rel, "on": name, "matches": len(vals & keys),
                    "flag": f"--conditions-from {rel} --on {name}"}
                return


def resolve(options: ReadOptions, root: Path) -> Path | None:
    """The ``--conditions-from`` file: the path as given, else the same path inside the
    folder read."""
    if not options.conditions_from:
        return None
    given = Path(options.conditions_from)
    if given.is_file():
        return given
    inside = (root if root.is_dir() else root.parent) / given
    if inside.is_file():
        return inside
    raise LogFormatError("--conditions-from: no such file (looked as given and in the folder "
                         "read)", path=str(given), code=ErrorCode.FILE_NOT_FOUND)


def join_conditions(points: Points, options: ReadOptions, root: Path, *, whole: bool) -> None:
    """Join the ``--conditions-from`` table's columns onto the runs whose id is in its
    ``--on`` column (exactly, or the last ``/`` part of the run id), in place. Refused: no
    ``--on``, an ``--on`` column the table lacks (``MISSING_COLUMN``), an id given twice
    (``DUPLICATE_ROWS``), ids that match no run (``INVALID_OPTION``, naming a few of each)."""
    f = resolve(options, root)
    if f is None:
        return
    if not options.on:
        raise ConfigError("--conditions-from needs --on COL: the column of its run ids",
                          option="--on", code=ErrorCode.INVALID_OPTION)
    t = read_arrow_file(f)
    if options.on not in t.column_names:
        raise LogFormatError(f"--on {safe(options.on)!r}: the table has no such column "
                             f"(columns: {', '.join(map(repr, t.column_names[:8]))})",
                             path=str(f), column=options.on, code=ErrorCode.MISSING_COLUMN)
    rows = t.to_pylist()
    ids = [str(r[options.on]) for r in rows]
    seen: dict[str, int] = {}
    for i in ids:
        seen[i] = seen.get(i, 0) + 1
    twice = sorted(i for i, n in seen.items() if n > 1)
    if twice:
        raise LogFormatError(f"run id {safe(twice[0])!r} is in {safe(options.on)!r} twice; "
                             "one row per run", path=str(f), column=options.on,
                             code=ErrorCode.DUPLICATE_ROWS)
    runs = sorted({c.run for c in points.chunks})
    by_id = dict(zip(ids, rows))
    matched = _match(runs, by_id)
    if not matched and whole:
        raise ConfigError(
            f"--conditions-from {safe(f.name)} --on {safe(options.on)}: no id of the table "
            f"({', '.join(repr(safe(i)) for i in ids[:3])}{', …' if len(ids) > 3 else ''}) is "
            f"a run read ({', '.join(repr(safe(r)) for r in runs[:3])}"
            f"{', …' if len(runs) > 3 else ''}); choose the column with --on",
            option="--on", code=ErrorCode.INVALID_OPTION)
    columns = [c for c in t.column_names if c != options.on]
    for run, row in matched.items():
        for c in columns:
            _set(points, run, c, row[c], f)
    points.outcomes.update(c for c in columns if is_outcome_name(c))
    _note_unmatched(points, f, runs, matched, ids)
    points.files.append(str(f))
    points.extra["conditions_table"] = {"file": str(f), "on": options.on,
                                        "joined": len(matched), "columns": columns}


def _match(runs: list[str], by_id: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each run's row: by its id, else by the last part of its id (``sweep/run3`` → ``run3``)
    where that part names one run only (``lr0.1/seed0`` and ``lr1.0/seed0`` never both take
    a ``seed0`` row)."""
    leaves: dict[str, int] = {}
    for r in runs:
        leaf = r.rsplit("/", 1)[-1]
        leaves[leaf] = leaves.get(leaf, 0) + 1
    out: dict[str, dict[str, Any]] = {}
    for r in runs:
        leaf = r.rsplit("/", 1)[-1]
        row = by_id.get(r, by_id.get(leaf) if leaves[leaf] == 1 else None)
        if row is not None:
            out[r] = row
    return out


def _set(points: Points, run: str, key: str, value: Any, f: Path) -> None:
    """One joined value: the run's own value of the same name wins, with a note."""
    own = points.conditions.get(run, {})
    if key in own and own[key] != value:
        points.warnings.append(f"{safe(f.name)}: {key}={value!r} for run {safe(run)!r} not "
                               f"joined: the run's own value {own[key]!r} wins")
        return
    if isinstance(value, (dict, list)):
        points.warnings.append(f"{safe(f.name)}: {key} of run {safe(run)!r} is not a scalar; "
                               "not joined")
        return
    points.add_condition(run, key, None if isinstance(value, float) and np.isnan(value)
                         else value)


def _note_unmatched(points: Points, f: Path, runs: list[str],
                    matched: dict[str, dict[str, Any]], ids: list[str]) -> None:
    missing = [r for r in runs if r not in matched]
    if missing:
        points.warnings.append(f"{safe(f.name)}: no row for {len(missing)} run(s) (first: "
                               f"{safe(missing[0])!r}); their joined conditions are missing")
    used = {r.rsplit("/", 1)[-1] for r in matched} | set(matched)
    spare = [i for i in ids if i not in used]
    if spare:
        points.warnings.append(f"{safe(f.name)}: {len(spare)} row(s) name no run read (first: "
                               f"{safe(spare[0])!r}); not joined")
