"""Generic tables: Parquet, CSV, TSV, JSONL — one file, or a directory of files.

One run per file (the run id is the file's path, ``--run-from path``), or many runs per file with
a ``run`` column (``--run-from column``, the default when the column exists; ``--run-from NAME``
takes run ids from column ``NAME``). ``--cond key=regex`` takes condition values from the path::

    sweep/wd1.5_s0/metrics.jsonl  ->  run "wd1.5_s0", with --cond wd='wd([0-9.]+)' -> wd=1.5

A hive-partitioned dataset (Spark, ``pyarrow.dataset``, ``pandas.to_parquet(partition_cols=…)``)
gives its conditions by folder names, with no flag::

    dataset/wd=0.1/seed=3/part-0.parquet  ->  wd 0.1, seed 3 for every run in the file
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
from grokaudit.dataset import column_contradicts, hive_partitions, refuse_partition_conflicts
from grokaudit.errors import ErrorCode, LogFormatError
from grokaudit.text import safe

from .files import (
    check_tail,
    melt_wide,
    no_step,
    resolve_duplicate_rows,
    table_files,
    text_log_tables,
)
from .merge import ReadOptions
from .mixed import other_files, propose, resolve, summary_reason
from .points import Points
from .records import (
    SIDECAR_NAMES,
    TABLE_SUFFIXES,
    Loaded,
    Sidecar,
    config_like,
    delimited_text,
    header_only_table,
    load,
    read_sidecar,
)
from .registry import Reader
from .shapes import detect_long, long_hint, pivot_long


def _detect(path: Path) -> bool:
    if path.is_file():  # a .log with a header line is a table (Keras's CSVLogger)
        return path.suffix.lower() in TABLE_SUFFIXES or delimited_text(path) is not None \
            or header_only_table(path)
    return any(True for _ in table_files(path)) or bool(text_log_tables(path))


def _files(path: Path) -> list[Path]:
    """The tables to read at ``path``: the file, or the folder's files with a table's suffix;
    a folder with none, its ``.log``/``.txt``/``.dat`` tables (Keras runs, one per
    subfolder). Beside files with a table's suffix those are named in the notes, not read."""
    return table_files(path) or text_log_tables(path)


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
    ids = [r.as_posix() for r in rels]
    if len(set(ids)) < len(ids):  # a.csv and a.jsonl: two runs, never one
        ids = [i if ids.count(i) == 1 else f.relative_to(root).as_posix()
               for i, f in zip(ids, files)]
    return ids


def _sidecar_paths(path: Path, files: list[Path]) -> set[Path]:
    """The config files beside the logs: well-known names (``hparams.yaml``, ``config.json``…)
    in the folders read, and the same-stem JSON or YAML of a log (``x.json`` beside
    ``x.csv``). Other YAML files (a sweep definition) are not config files."""
    logs = [path] if path.is_file() else files
    cands: set[Path] = set()
    for f in logs:
        cands |= {f.with_suffix(x) for x in (".json", ".yaml", ".yml")} - {f}
    if path.is_file():
        cands |= {path.parent / n for n in SIDECAR_NAMES}
    else:
        cands |= {q for q in path.rglob("*") if q.name in SIDECAR_NAMES
                  and not any(p.startswith(".") for p in q.relative_to(path).parts)}
    return {c for c in cands if c.is_file()}


def _read_sidecars(paths: set[Path], logs: set[Path]) -> tuple[dict[Path, Sidecar], list[str]]:
    """The config files that read as config files; the others are notes, never a refusal
    of the log (a tokenizer's config.json, a same-stem JSON that is a log of its own)."""
    known: dict[Path, Sidecar] = {}
    notes: list[str] = []
    for q in sorted(paths):
        if q.suffix.lower() == ".json" and q in logs and not config_like(q):
            continue  # a log of its own, read as one
        try:
            known[q] = read_sidecar(q)
        except LogFormatError as exc:
            notes.append(f"{safe(q.name)}: not read as a config file ({safe(exc)})")
    return known, notes


def _sidecars_of(log: Path, root: Path, known: dict[Path, Sidecar]) -> list[Sidecar]:
    """The config files of one log, farthest first: well-known names in each folder from the
    read root down to the log's, then the log's own same-stem file (``x.json`` beside
    ``x.csv``), which is nearest."""
    top = root if root.is_dir() else log.parent
    chain = [log.parent, *log.parent.parents]
    dirs = chain[: chain.index(top) + 1] if top in chain else [log.parent]
    out: list[Sidecar] = []
    for d in reversed(dirs):
        out += [known[d / n] for n in SIDECAR_NAMES if (d / n) in known]
    for x in (".json", ".yaml", ".yml"):
        same = log.with_suffix(x)
        if same != log and same in known and same.name not in SIDECAR_NAMES:
            out.append(known[same])
    return out


def _partitions_of(log: Path, root: Path) -> list[Sidecar]:
    """The conditions a hive-partitioned Parquet dataset writes in its folder names, from
    ``root`` down to the log (``wd=0.1/seed=3/part-0.parquet`` → ``wd`` 0.1, ``seed`` 3), by
    the dataset reader's rule (:func:`grokaudit.dataset.hive_partitions`: a key repeated
    with two values is ``HIVE_KEY_CONFLICT``)."""
    if not root.is_dir() or log.suffix.lower() not in (".parquet", ".pq"):
        return []  # a Parquet dataset's layout; other logs name folders as they like
    rel = log.parent.relative_to(root)
    return [Sidecar(root.joinpath(*rel.parts[:i + 1]), {key: value}, set(), partition=True)
            for i, key, value in hive_partitions(rel.parts, log)]


def _contradicted(log: Path, root: Path, partitions: list[Sidecar], table: pa.Table
                  ) -> list[tuple[str, str, Any, Any]]:
    """The partition values of ``log`` that its own column of the same name contradicts
    (``(file, key, folder's value, column's value)``)."""
    out = []
    for sc in partitions:
        for k, v in sc.values.items():
            if k in table.column_names:
                bad, cell = column_contradicts(v, table.column(k))
                if bad:
                    out.append((log.relative_to(root).as_posix(), k, v, cell))
    return out


def _refuse_charts_among_tables(path: Path, files: list[Path]) -> None:
    """A folder is classified by all its files: W&B chart exports (bucketed by the chart)
    beside plain tables are neither a folder of charts nor a folder of tables. Refused,
    naming both, never read one way or the other."""
    from .wandb import is_panel

    charts = [f for f in files if f.suffix.lower() == ".csv" and f.stat().st_size
              and is_panel(f)]
    if not charts:
        return
    others = [f for f in files if f not in charts]
    if not others:
        return

    def names(fs: list[Path]) -> str:
        shown = ", ".join(repr(safe(f.relative_to(path).as_posix())) for f in fs[:2])
        return shown + (", …" if len(fs) > 2 else "")

    raise LogFormatError(
        f"this folder mixes {len(charts)} W&B chart export(s) ({names(charts)}, bucketed by "
        f"the chart) with {len(others)} other table(s) ({names(others)}); give them as "
        "separate paths (move one kind out of the folder)", path=str(path),
        code=ErrorCode.FORMAT_MISMATCH)


_Load = tuple[list[Sidecar], list[Sidecar], Loaded]


def _load_log(f: Path, path: Path, known: dict[Path, Sidecar], rename: dict[str, str],
              options: ReadOptions) -> _Load:
    """One log file loaded with its config files: (hive partitions, every sidecar, loaded)."""
    # hive partitions (``wd=0.1/seed=3/part-0.parquet``) first: the farthest of all
    partitions = _partitions_of(f, path)
    sidecars = [*partitions, *_sidecars_of(f, path, known)]
    run_key = (options.run_from if options.run_from not in (None, "path", "column")
               else "run")
    # --run-from path: one run per file, its rows numbered as one run's whatever a run
    # column says
    return partitions, sidecars, load(f, rename, sidecars, run_key=run_key,
                                      step_from=options.step_from,
                                      row_runs=None if options.run_from == "path" else run_key)


def _set_aside_summaries(points: Points, path: Path, logs: list[Path],
                         known: dict[Path, Sidecar], rename: dict[str, str],
                         options: ReadOptions) -> dict[Path, _Load] | None:
    """In a folder, the tables that are no run log (no step column: a summary or sweep table,
    :func:`.mixed.summary_reason`) set aside with a note each, and the ``--conditions-from``
    table left to its join; returns the other logs, loaded (None for a file or a folder of
    one log: nothing to set aside). A folder whose every table is set aside is refused as a table without a step
    column (``MISSING_COLUMN``), never an empty audit."""
    if not path.is_dir() or len(logs) < 2:
        return None
    joined = resolve(options, path)
    kept: dict[Path, _Load] = {}
    aside: dict[str, pa.Table] = {}
    first: tuple[Path, Loaded] | None = None
    for f in logs:
        if joined is not None and f.resolve() == joined.resolve():
            continue  # read by --conditions-from
        got = _load_log(f, path, known, rename, options)
        why = summary_reason(got[2]) if got[2].table.num_rows else None
        if why is None:
            kept[f] = got
            continue
        rel = f.relative_to(path).as_posix()
        aside[rel] = got[2].table
        first = first or (f, got[2])
        points.extra.setdefault("files_set_aside", {})[rel] = why
        points.warnings.append(f"{safe(rel)}: set aside: {safe(why)}")
    if not kept and first is not None:
        if len(aside) == 1:
            raise no_step(first[1].table, first[0])
        shown = ", ".join(f"{safe(r)!r} ({t.num_rows} rows)" for r, t in list(aside.items())[:3])
        raise LogFormatError(
            f"no file of this folder is a run log: its {len(aside)} tables have no step column "
            f"(summary or sweep tables: {shown}{', …' if len(aside) > 3 else ''}); give a "
            "log's own path, or name a log's step with --map COL=step", path=str(path),
            column="step", code=ErrorCode.MISSING_COLUMN)
    if aside and joined is None:
        points.extra["_summary_tables"] = aside
    return kept


def note_other_files(points: Points, path: Path, files: list[Path]) -> None:
    """The files of the folder that are no table (images, PDFs, HTML pages, other data) named
    with why, one note each (at most 20, then a count)."""
    others = other_files(path, files)
    if not others:
        return
    points.extra.setdefault("files_set_aside", {}).update(others)
    for rel, why in list(others.items())[:20]:
        points.warnings.append(f"{safe(rel)}: set aside: {why}")
    if len(others) > 20:
        points.warnings.append(f"and {len(others) - 20} more file(s) set aside (no table)")


def _pivot_if_long(points: Points, loaded: Loaded, f: Path, run_column: str | None,
                   options: ReadOptions) -> str | None:
    """A long table (``step, metric, value``; :mod:`.shapes`) pivoted to one column per
    series, in place, when ``--long`` says so or its shape is unambiguous; what was pivoted
    is kept in ``points.extra["long_table"]`` for the provenance and ``inspect``. Returns,
    for a table not pivoted that has a name-like and a value-like column, the ``--long`` flag
    that would pivot it (named in a refusal), else None."""
    shape = options.long or detect_long(loaded.table, loaded.step, run_column)
    if shape is None:
        return long_hint(loaded.table)
    if loaded.rows_numbered:  # a long table's rows are (step, metric) pairs, no steps
        raise LogFormatError(
            "--step-from row: this is a long table (one row per step and metric, columns "
            f"{safe(shape['name'])!r} and {safe(shape['value'])!r}): its rows are no steps; "
            "name its step column with --map COLUMN=step", path=str(f), column="step",
            code=ErrorCode.INVALID_OPTION)
    done = pivot_long(loaded, shape, run_column, str(f), forced=options.long is not None)
    info = points.extra.setdefault("long_table", {
        "name": done["name"], "value": done["value"], "keys": [], "files": 0, "series": 0,
        "forced": done["forced"]})
    info["keys"] = [*info["keys"], *(k for k in done["keys"] if k not in info["keys"])]
    info["files"] += 1
    seen = points.extra.setdefault("_long_series", set())
    seen |= set(done["series"])
    info["series_names"] = sorted(seen)[:20]  # the first few, for inspect
    info["series"] = len(seen)
    info["flag"] = (f"--long name={done['name']},value={done['value']}"
                    + (f",keys={','.join(info['keys'])}" if info["keys"] else ""))
    if done["wall"]:
        points.warnings.append(f"{safe(f.name)}: wall-time column(s) {done['wall']} of the "
                               "long table not read (one row per series, not per step)")
    return None


def _melt_log(points: Points, loaded: Loaded, f: Path, origin: str, rid: str,
              run_column: str | None, options: ReadOptions) -> None:
    """One log file's points: a long table pivoted first, rows of one (run, step) resolved
    by ``--on-duplicate``, then melted; a refusal of a text column that changes within a run
    names the ``--long`` that would read the file when it looks like a long table."""
    hint = _pivot_if_long(points, loaded, f, run_column, options)
    if run_column is not None:  # --on-duplicate first|last: as a canonical table
        resolve_duplicate_rows(points, loaded, run_column, options.on_duplicate)
    check_tail(f, points)
    try:
        melt_wide(points, loaded, path=f, origin=origin, run=rid, run_column=run_column,
                  strict_duplicates=run_column is not None)
    except LogFormatError as exc:
        if hint is None or exc.code is not ErrorCode.NOT_CONSTANT_IN_RUN:
            raise
        said = str(exc).removeprefix(f"{exc.path}: " if exc.path else "")
        raise LogFormatError(f"{said}; or, if the file is a long table (one row per step "
                             f"and metric), read it with {hint}", path=exc.path,
                             column=exc.column, code=exc.code) from None


def read(path: Path, options: ReadOptions) -> Points:
    """Read one table file or a directory of them (see the module docstring).

    A JSON file holding only scalars and a YAML file are config files (sidecars): their
    scalars become the conditions of the runs whose logs sit beside or below them. A file of
    a folder with a header and no rows is left out with a warning (alone, it is refused)."""
    files = _files(path)
    if path.is_file() and header_only_table(path):  # a Keras log of a run that never logged
        raise LogFormatError("table has a header but no rows; there is nothing to read",
                             path=str(path), code=ErrorCode.NO_ROWS)
    if not files:
        raise LogFormatError("directory holds no .parquet, .csv, .tsv or .jsonl files; check "
                             "the path or the --format", path=str(path),
                             code=ErrorCode.FORMAT_MISMATCH)
    points = Points()
    # --map X=step / --map X=run name the step or run column: renamed before it is looked for
    rename = {k: v for k, v in (options.mapping or {}).items() if v in ("step", "run")}
    known, sidecar_notes = _read_sidecars(_sidecar_paths(path, files), set(files))
    points.warnings.extend(sidecar_notes)
    logs: list[Path] = []
    if path.is_dir():
        _refuse_charts_among_tables(path, [f for f in files if f not in known])
    for f in files:
        if f in known:
            continue
        if f.suffix.lower() == ".json" and path.is_dir():
            probe = load(f, rename)
            if probe.scalars_only:  # a summary or config file without a well-known name
                try:
                    known[f] = read_sidecar(f)
                except LogFormatError as exc:
                    points.warnings.append(f"{safe(f.name)}: not read ({safe(exc)})")
                continue
        logs.append(f)
    if not logs:
        raise LogFormatError("no log here: the files hold no per-step values (config files "
                             "only); check the path", path=str(path), code=ErrorCode.NO_ROWS)
    cache = _set_aside_summaries(points, path, logs, known, rename, options)
    logs = logs if cache is None else [f for f in logs if f in cache]
    ids = run_ids_from_paths(logs, path)
    used: set[Path] = set()
    empty: list[str] = []
    contradicted: list[tuple[str, str, Any, Any]] = []
    path_ids = True
    numbered = False  # --step-from row numbered some file's rows
    stepped: str | None = None  # a step column a file has
    for f, rid in zip(logs, ids):
        got = (cache or {}).get(f)
        partitions, sidecars, loaded = got or _load_log(f, path, known, rename, options)
        if cache:
            cache.pop(f, None)
        numbered |= loaded.rows_numbered
        if not loaded.rows_numbered and loaded.step is not None:
            stepped = stepped or loaded.step
        table = loaded.table
        contradicted += _contradicted(f, path, partitions, table)
        points.files.append(str(f))
        if table.num_rows == 0:
            if loaded.scalars_only:
                raise LogFormatError("the file holds no per-step values (only scalars: a "
                                     "config or a summary); give the log it belongs to",
                                     path=str(f), code=ErrorCode.NO_ROWS)
            if path.is_dir() and len(logs) > 1:
                empty.append(f.relative_to(path).as_posix())
                continue
            raise LogFormatError("table has a header but no rows; there is nothing to read",
                                 path=str(f), code=ErrorCode.NO_ROWS)
        used |= {sc.path for sc in sidecars if sc.path.is_file()}
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
        path_ids = path_ids and run_column is None
        _melt_log(points, loaded, f, rid if path.is_dir() else str(f), rid, run_column,
                  options)
    refuse_partition_conflicts(contradicted, path)
    if options.step_from == "row" and not numbered:  # an option that changed nothing
        raise LogFormatError(
            f"--step-from row numbers the rows of a table with no step column, but "
            f"{'every file here has' if len(logs) > 1 else 'this file has'} one "
            f"({safe(stepped or 'step')!r}); leave --step-from out to read the steps",
            path=str(path), column=stepped, code=ErrorCode.INVALID_OPTION)
    if path.is_dir():
        note_other_files(points, path, files)
    if not points.chunks and empty:
        raise LogFormatError(f"every log file has a header and no rows ({empty[0]}, …); there "
                             "is nothing to read", path=str(path), code=ErrorCode.NO_ROWS)
    if empty:
        points.warnings.append(f"{len(empty)} file(s) with a header and no rows: no run read "
                               f"from them ({', '.join(repr(e) for e in empty[:3])}"
                               f"{', …' if len(empty) > 3 else ''})")
    points.extra.pop("_long_series", None)
    summaries = points.extra.pop("_summary_tables", None)
    if summaries:
        propose(points, summaries)
    if path_ids:  # every run named by its file: merged with other inputs, names must differ
        points.extra["path_run_ids"] = True
    for q in sorted(used):
        points.files.append(str(q))
    if used:
        points.extra["config_files"] = sorted(str(q) for q in used)
    unused = sorted(q for q in known if q not in used)
    # a file of scalars beside a log but with a name no config file has (a run's events.json,
    # results.json): not the log's config, and not "with no log beside it"
    beside = [q for q in unused if any(f.parent == q.parent or q.parent in f.parents
                                       for f in logs)]
    alone = [q for q in unused if q not in beside]
    if alone:
        shown = ", ".join(repr(q.name) for q in alone[:3])
        points.warnings.append(f"{len(alone)} config file(s) with no log beside or below "
                               f"them not read: {shown}{', …' if len(alone) > 3 else ''}")
    if beside:
        shown = ", ".join(repr(q.name) for q in beside[:3])
        points.warnings.append(
            f"{len(beside)} JSON file(s) of scalars beside the logs not read as their config "
            f"(only a config file's name, {', '.join(SIDECAR_NAMES[:3])}…, or a log's own "
            f"name with .json is): {shown}{', …' if len(beside) > 3 else ''}")
    return points


READER = Reader(
    name="table",
    description="Canonical or generic tables: Parquet, CSV, TSV, JSONL (a file or a directory)",
    read=read, detect=_detect, version="1", priority=90,
)
