"""The canonical log table (schema v1): reading, validation, and an atomic writer.

One row per (run, step); required columns ``run``, ``step``, ``test_acc``; optional
``train_acc``, metric columns and condition columns (ARCHITECTURE.md). Validation follows
AUDIT_SPEC §6: every problem is a :class:`LogFormatError` naming the file, the column and the fix,
and nothing is dropped silently — rows set aside are counted by reason in :class:`InputSummary`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import re
import warnings
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast, overload

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from .errors import ErrorCode, LogFormatError
from .identity import (
    accuracy_prints,
    accuracy_twins,
    canonical_values,
    check_run_ids,
    duplicate_runs,
    fingerprints,
    logged_points,
    refuse_missing_run_ids,
    runs_of,
)
from .kernels import NUMPY, Kernel
from .kernels import count_above as nb_count_above
from .kernels import first_change as nb_first_change
from .kernels import float_steps as nb_float_steps
from .kernels import group_steps as nb_group_steps
from .kernels import int_range as nb_int_range
from .kernels import missing_and_absent as nb_missing_and_absent
from .roles import (
    FRACTION_MAX,
    PERCENT_MIN,
    PERCENT_MIN_POINTS,
    decide_percent,
    is_measured_accuracy,
    is_outcome_name,
)
from .shards import PROVENANCE_KEY as PROVENANCE_KEY
from .shards import (
    empty_file,
    files_provenance,
    join_tables,
    parquet_columns,
    provenance_of,
    read_parquet,
    refuse_nested_run,
    refuse_unread_beside_shards,
    release_arrow_memory,
    run_id_text,
    run_type_refusal,
    shard_files,
    spelled_as_python,
    unreadable,
)
from .text import format_value, safe

SCHEMA_VERSION = 1
#: The provenance reader under its older name (loader, inspect and the tests import it here).
_provenance_of = provenance_of
REQUIRED = ("run", "step", "test_acc")
ACCURACY_COLUMNS = ("test_acc", "train_acc")
SEED_COLUMNS = ("seed",)
#: Columns that look like representation metrics: the default set ``check`` audits.
KNOWN_METRIC_PATTERN = re.compile(
    r"(erank|eff_rank|effective_rank|_pr$|^pr_|participation|srank|stable_rank|spec_entropy)",
    re.IGNORECASE,
)
#: Other per-step quantities that are series, never conditions, even if constant in a run.
KNOWN_SERIES = frozenset({
    "train_loss", "test_loss", "weight_norm", "logit_scale", "softmax_collapse", "attn_cv",
    "attn_head_cos", "attn_entropy_std",
})
_ACC_ALIASES = ("val_acc", "valid_acc", "eval_acc", "acc", "test_accuracy", "accuracy")
TOO_SHORT_POINTS = 3
SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "tsv",
            ".jsonl": "jsonl", ".ndjson": "jsonl"}


def is_known_metric(name: str) -> bool:
    """True when ``name`` looks like a representation metric (``emb_erank``, ``eff_rank_E``…)."""
    return bool(KNOWN_METRIC_PATTERN.search(name))


def is_known_series(name: str) -> bool:
    """True when ``name`` is a per-step quantity by its name: a representation metric or a
    known series (a loss, a learning rate)."""
    return is_known_metric(name) or name in KNOWN_SERIES


# ------------------------------------------------------------------------------------------
# reading and writing files
# ------------------------------------------------------------------------------------------

@overload
def read_arrow(path: str | Path, lazy: Literal[False] = False) -> pa.Table: ...


@overload
def read_arrow(path: str | Path, lazy: bool) -> pa.Table | ParquetSource: ...


def read_arrow(path: str | Path, lazy: bool = False) -> pa.Table | ParquetSource:
    """Read a canonical table file (Parquet, CSV, TSV, JSONL) or a directory of Parquet shards.

    Returns an Arrow table; provenance, when present, is in the schema metadata under
    ``grokaudit``. With ``lazy``, a single Parquet file is returned as a
    :class:`ParquetSource` instead, read column by column by :func:`build_log_table`. Raises
    :class:`LogFormatError` (a missing, empty or unreadable file).
    """
    p = Path(path)
    if not p.exists():
        raise LogFormatError("no such file or directory; check the path", path=str(p),
                             code=ErrorCode.FILE_NOT_FOUND)
    if p.is_dir():
        from .runfolder import is_run_folder, read_run_folder

        if is_run_folder(p):  # a RunLogger folder: also reports what a kill cut short
            return read_run_folder(p)
        shards = shard_files(p)
        if not shards:
            raise LogFormatError(
                "directory holds no .parquet files; pass a file, or convert the logs with "
                "`grokaudit convert`", path=str(p), code=ErrorCode.NO_SHARDS)
        refuse_unread_beside_shards(p)
        tables = [read_arrow(q) for q in shards]
        try:
            merged = join_tables(tables)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise LogFormatError(f"shards have incompatible columns ({exc}); convert them to one "
                                 "schema", path=str(p),
                                 code=ErrorCode.SHARDS_INCOMPATIBLE) from None
        meta = dict(tables[0].schema.metadata or {})
        prov = files_provenance([t.schema for t in tables], [str(q) for q in shards])
        prov["shards"] = [q.name for q in shards]
        meta[PROVENANCE_KEY] = json.dumps(prov, sort_keys=True).encode()
        return merged.replace_schema_metadata(meta)
    kind = SUFFIXES.get(p.suffix.lower())
    if kind is None:
        raise LogFormatError(
            f"unknown file type {p.suffix!r}; the canonical table is .parquet, .csv, .tsv or "
            ".jsonl (other formats: `grokaudit convert`)", path=str(p),
            code=ErrorCode.UNKNOWN_FILE_TYPE)
    if p.stat().st_size == 0:
        raise empty_file(p)
    try:
        if kind == "parquet":
            names = parquet_columns(p)
            if lazy and not any("." in n for n in names):  # dotted names: nested paths
                return ParquetSource(p, names)
            return read_parquet(p, names)
        if kind in ("csv", "tsv"):
            from .csvread import read_csv_arrow

            return read_csv_arrow(p, tsv=kind == "tsv")
        df = pd.read_json(p, lines=True, dtype={"run": str})
        return pa.Table.from_pandas(df, preserve_index=False)
    except LogFormatError:
        raise
    except (pa.ArrowInvalid, ValueError, OSError, TypeError) as exc:
        raise unreadable(p, kind, exc) from None


def read_table(path: str | Path) -> pd.DataFrame:
    """Read a canonical table as a DataFrame; provenance is in ``df.attrs['grokaudit']``."""
    t = read_arrow(path)
    df: pd.DataFrame = t.to_pandas()
    df.attrs["grokaudit"] = _provenance_of(t.schema, str(path))
    return df


def write_table(df: pd.DataFrame, path: str | Path,
                provenance: Mapping[str, Any] | None = None) -> Path:
    """Write ``df`` as a canonical table, atomically (:func:`grokaudit.outputs.atomic_write_with`:
    a temporary file in the same folder, then a rename; permissions from the umask).

    The format follows the suffix (``.parquet`` or ``.csv``). The Parquet file carries
    ``provenance`` (plus the schema version) in its Arrow metadata under ``grokaudit``.
    ``df`` must have the required columns; ``run`` is written as a string and ``step`` as
    int64. Returns the path written.
    """
    p = Path(path)
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise LogFormatError(f"cannot write: missing required column(s) {missing}", path=str(p),
                             column=missing[0], code=ErrorCode.MISSING_COLUMN)
    out = df.copy()
    out["run"] = out["run"].astype(str)
    if out["step"].isna().any():
        raise LogFormatError("cannot write: column 'step' has missing values", path=str(p),
                             column="step", code=ErrorCode.MISSING_VALUES)
    out["step"] = out["step"].astype("int64")
    prov = {"schema_version": SCHEMA_VERSION, **dict(provenance or {})}
    prov.setdefault("producer", f"grokaudit {_version()}")
    table = pa.Table.from_pandas(out, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta.pop(b"pandas", None)
    meta[PROVENANCE_KEY] = json.dumps(prov, sort_keys=True, default=str).encode()
    table = table.replace_schema_metadata(meta)
    from .outputs import atomic_write_with

    if p.suffix.lower() == ".csv":
        atomic_write_with(p, lambda tmp: pacsv.write_csv(table, tmp))
    else:
        atomic_write_with(p, lambda tmp: pq.write_table(table, tmp))
    return p


def _version() -> str:
    from .version import __version__

    return __version__


# ------------------------------------------------------------------------------------------
# the validated, sorted in-memory form
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class InputSummary:
    """What was read and what was kept: every row is accounted for."""

    source: str | None
    rows_read: int
    rows_kept: int
    set_aside: dict[str, int]  #: rows set aside, by reason code
    runs_read: int
    runs_kept: int
    runs_too_short: tuple[str, ...]
    missing_values: dict[str, int]  #: NaN (missing) values per column among kept rows
    sorted_input: bool
    metrics: tuple[str, ...]
    conditions: tuple[str, ...]
    provenance: dict[str, Any] = field(default_factory=dict)
    #: conditions that are results of the run (``final_test_acc``): never an axis or a cell
    outcomes: tuple[str, ...] = ()
    #: per-step columns some runs never logged: column -> runs without it (not "missing")
    not_logged: dict[str, int] = field(default_factory=dict)
    #: accuracy columns read as percent: column -> {scale, max, why, runs that stay ≤ 1}
    accuracy_scale: dict[str, Any] = field(default_factory=dict)
    #: runs that never logged the grok criterion (test_acc): set aside, no clock to read
    runs_without_accuracy: tuple[str, ...] = ()
    #: groups of runs identical at every logged step in every column (DUPLICATE_RUN)
    duplicate_runs: tuple[tuple[str, ...], ...] = ()
    #: groups of runs identical in their test accuracy at every point it was logged, not in
    #: every column (DUPLICATE_RUN: one run read twice; :func:`~grokaudit.identity.accuracy_twins`)
    accuracy_twins: tuple[tuple[str, ...], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        if self.duplicate_runs:
            extra["duplicate_runs"] = [list(g) for g in self.duplicate_runs]
        if self.accuracy_twins:
            extra["accuracy_twins"] = [list(g) for g in self.accuracy_twins]
        if self.outcomes:
            extra["outcomes"] = list(self.outcomes)
        if self.not_logged:
            extra["not_logged"] = dict(sorted(self.not_logged.items()))
        if self.accuracy_scale:
            extra["accuracy_scale"] = dict(sorted(self.accuracy_scale.items()))
        if self.runs_without_accuracy:
            extra["runs_without_accuracy"] = list(self.runs_without_accuracy)
        return extra | {
            "source": self.source,
            "rows_read": self.rows_read,
            "rows_kept": self.rows_kept,
            "set_aside": dict(sorted(self.set_aside.items())),
            "runs_read": self.runs_read,
            "runs_kept": self.runs_kept,
            "runs_too_short": list(self.runs_too_short),
            "missing_values": dict(sorted(self.missing_values.items())),
            "sorted_input": self.sorted_input,
            "metrics": list(self.metrics),
            "conditions": list(self.conditions),
            "provenance": self.provenance,
        }


#: Rows cast at a time by :attr:`LogTable.step_f64` (the blocks share the thread pool).
_CAST_BLOCK = 1 << 20


@dataclass(frozen=True, eq=False)
class LogTable:
    """The validated log: rows grouped by run (contiguous) and sorted by step within a run.

    Run ``r`` owns rows ``offsets[r]:offsets[r+1]``. Missing values are NaN.
    """

    run_ids: np.ndarray  #: (R,) object array of run ids
    offsets: np.ndarray  #: (R+1,) int64 row offsets
    step: np.ndarray  #: (N,) int64
    #: The per-step columns are float64, or float32 where the log stores float32 (kept as
    #: stored: half the memory). Widen before computing with them (``np.asarray(a, float)``):
    #: float32 arithmetic or a comparison with a Python float would round differently.
    test_acc: np.ndarray  #: (N,) float64 or float32
    train_acc: np.ndarray | None  #: (N,) float64 or float32; None when not logged
    series: dict[str, np.ndarray]  #: metric and other per-step columns, (N,) each
    conditions: pd.DataFrame  #: (R,) rows in run order; one column per condition
    summary: InputSummary
    #: The per-step columns (``test_acc``, ``train_acc``, a series' name) the validation found
    #: holding no NaN, each with the very array it checked (read-only): the clocks reshape
    #: that array without scanning it again. Not an argument: a table built or changed any
    #: other way (``dataclasses.replace``, a column swapped in) knows nothing, and every
    #: column is scanned.
    nan_free: Mapping[str, np.ndarray] = field(default_factory=dict, init=False, repr=False)

    def holds_no_nan(self, name: str, values: np.ndarray) -> bool:
        """Whether ``values`` is the array of column ``name`` the validation found NaN-free."""
        checked = self.nan_free.get(name)
        return checked is not None and checked is values and not values.flags.writeable

    @property
    def n_runs(self) -> int:
        return int(self.run_ids.shape[0])

    @functools.cached_property
    def run_index(self) -> np.ndarray:
        """(N,) the run number of each row (computed once)."""
        return np.repeat(np.arange(self.n_runs), np.diff(self.offsets))

    @property
    def step_f64(self) -> np.ndarray:
        """(N,) the steps as float64, made once (read-only), for callers that compare the
        whole column with float thresholds (the blocked clocks widen each block's steps
        themselves, in cache: no copy of the whole column). Kept in the instance by
        hand, not by ``functools.cached_property``, whose lock (Python < 3.12, one for every
        table) would be held while the cast waits on the thread pool: two threads making it
        at once each make it, and the same array values win."""
        got: np.ndarray | None = self.__dict__.get("_step_f64")
        if got is None:
            from .blocks import map_blocks, slices

            got = np.empty(self.step.shape, dtype=np.float64)
            out = got

            def cast(sl: slice) -> None:  # numpy's cast releases the GIL: on the threads
                out[sl] = self.step[sl]

            map_blocks(cast, slices(int(self.step.size), _CAST_BLOCK))
            got.flags.writeable = False
            self.__dict__["_step_f64"] = got
        return got

    @functools.cached_property
    def equal_lengths(self) -> bool:
        """True when every run has the same number of rows (then columns reshape to (R, T))."""
        c = np.diff(self.offsets)
        return bool(c.size and (c == c[0]).all())



def _first_examples(values: Sequence[Any], k: int = 3) -> str:
    vals = list(values)[:k]
    return ", ".join(repr(v) for v in vals) + (", …" if len(values) > k else "")


#: What each required numeric column holds: the words of its type refusal.
MUST_HOLD = {"step": "integer optimizer steps",
             **{a: "accuracies in [0, 1] (or percent)" for a in ACCURACY_COLUMNS}}


def bad_column_type(name: str, t: pa.DataType, path: str | Path | None) -> LogFormatError:
    """The refusal of the required column ``name`` (``step``, an accuracy) stored as type
    ``t``, which cannot hold it (``BAD_COLUMN_TYPE``)."""
    return LogFormatError(f"column {name!r} has type {t}; it must hold {MUST_HOLD[name]}",
                          path=None if path is None else str(path), column=name,
                          code=ErrorCode.BAD_COLUMN_TYPE)


def _numeric(col: pa.ChunkedArray) -> bool:
    return _numeric_type(col.type)


def _numeric_type(t: pa.DataType) -> bool:
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
                or pa.types.is_null(t))


def _float_array(col: pa.ChunkedArray) -> np.ndarray:
    """The column as one numpy float array, nulls as NaN: float32 columns stay float32 (an
    exact subset of float64: every consumer widens them where it computes, never in bulk),
    every other numeric type becomes float64."""
    if pa.types.is_null(col.type):
        return np.full(len(col), np.nan)
    if pa.types.is_float32(col.type) or (pa.types.is_floating(col.type) and not (
            pa.types.is_float64(col.type) and col.num_chunks == 1)):
        # one array filled chunk by chunk (float16 -> float64 is exact, nulls -> NaN): no
        # converted copy of the column in Arrow's memory and no concatenation beside it
        if pa.types.is_float32(col.type) and col.num_chunks == 1 and not col.null_count:
            # one chunk and no null: its buffer as it is (read-only), as float64 columns are
            return np.asarray(col.chunk(0).to_numpy(zero_copy_only=True))
        dtype = np.float32 if pa.types.is_float32(col.type) else np.float64
        out = np.empty(len(col), dtype=dtype)
        o = 0
        for chunk in col.chunks:
            n = len(chunk)
            out[o:o + n] = chunk.to_numpy(zero_copy_only=False)
            o += n
        return out
    if not pa.types.is_float64(col.type):
        # integers beyond ±2**53 (64-bit random seeds) round to the nearest float64: a per-step
        # value that large is no metric, and conditions are compared as stored (never here)
        col = col.cast(pa.float64(), safe=not pa.types.is_integer(col.type))
    return np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.float64)


def _nan_extremes(a: np.ndarray) -> tuple[float, float]:
    """``(max, min)`` ignoring NaN; ``(nan, nan)`` for an all-NaN or empty column."""
    if a.size == 0:
        return math.nan, math.nan
    with np.errstate(invalid="ignore"):
        return float(np.fmax.reduce(a)), float(np.fmin.reduce(a))


#: The column pandas writes for a DataFrame's index (``df.to_parquet`` without ``index=False``).
_PANDAS_INDEX = re.compile(r"__index_level_\d+__")

#: Largest step accepted: steps are compared as float64, exact up to 2**53.
STEP_MAX = 2**53


def _out_of_range(v: Any, path: str | None) -> LogFormatError:
    return LogFormatError(
        f"column 'step' holds {v}, beyond the largest supported step {STEP_MAX}; steps are "
        "optimizer steps (a corrupted or mis-typed column?)", path=path, column="step",
        code=ErrorCode.STEP_OUT_OF_RANGE)


def _refuse_int_step_range(a: np.ndarray, lowest: int, highest: int, path: str | None) -> None:
    """The range check of integer steps whose smallest and largest values are known: beyond
    :data:`STEP_MAX` either way is refused (``STEP_OUT_OF_RANGE``)."""
    # |a| without an (N,) temporary where no step is negative (the usual log)
    hi = highest if lowest >= 0 else int(np.abs(a).max())
    if hi > STEP_MAX:
        raise _out_of_range(hi, path)


def _step_array(col: pa.ChunkedArray, path: str | None, kernel: Kernel = NUMPY,
                int_range: bool = True) -> tuple[np.ndarray, int | None]:
    """The step column as int64, refusing non-integer, non-finite and out-of-range values with
    one error each (no numpy cast warnings, no wrapped negative values), and its smallest
    value where the checks computed it (else None): the caller's test for negative steps
    reads it instead of a pass of its own. ``kernel``: the passes' kernel
    (:mod:`grokaudit.kernels`; numba fuses them into one). ``int_range`` False: integer steps
    are returned without their range check, which the caller makes once it knows their
    extremes (:func:`_refuse_int_step_range`)."""
    if pa.types.is_floating(col.type):
        sf = _float_array(col)
        fused = nb_float_steps(sf) if kernel.numba else None
        if not (np.all(np.isfinite(sf)) if fused is None else fused[0]):
            raise LogFormatError("column 'step' holds NaN or ±inf; every row needs a finite "
                                 "integer step", path=path, column="step",
                                 code=ErrorCode.NON_INTEGER_STEP)
        top = (float(np.abs(sf).max()) if sf.size else 0.0) if fused is None else fused[1]
        if sf.size and top > STEP_MAX:
            raise _out_of_range(f"{top:g}", path)
        if np.any(sf != np.round(sf)) if fused is None else fused[2]:
            raise LogFormatError("column 'step' holds non-integer values; steps are integer "
                                 "optimizer steps (for epochs, convert them first)", path=path,
                                 column="step", code=ErrorCode.NON_INTEGER_STEP)
        return sf.astype(np.int64), None
    if pa.types.is_boolean(col.type) or pa.types.is_null(col.type):
        raise bad_column_type("step", col.type, path)
    if len(col) and pa.types.is_unsigned_integer(col.type):
        hi = pc.max(col).as_py()
        if hi is not None and hi > STEP_MAX:
            raise _out_of_range(hi, path)
    a = np.asarray(col.cast(pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64)
    lowest: int | None = None
    if a.size and int_range:
        both = nb_int_range(a) if kernel.numba else None
        lowest = int(a.min()) if both is None else both[0]
        _refuse_int_step_range(a, lowest, int(a.max()) if both is None else both[1], path)
    return a, lowest


@dataclass
class LogPart:
    """The validation of one part of a log read in parts (:mod:`grokaudit.stream`): what
    needs the whole log is decided before and passed in, and what only the whole log can judge
    is recorded here, judged once every part has been read.

    ``accuracy``: per accuracy column, ``(max, min, values above 1.5, values above 1)`` over
    the whole log (the percent decision and its range check). ``series``: columns some part
    reads as per-step series (a column constant in this part's runs is still a series).
    """

    accuracy: Mapping[str, tuple[float, float, int, int]]
    series: frozenset[str] = frozenset()
    #: recorded: per ``--metric`` column, (it changes within some run of this part, its
    #: values that are not missing, this part's runs)
    metric_changes: dict[str, tuple[bool, int, int]] = field(default_factory=dict)
    #: recorded: the ``--grok-on`` column's smallest and largest value (a loss constant in
    #: every run and different between runs is a condition, judged over the whole log)
    loss_range: tuple[float, float] | None = None
    #: recorded: the kept runs' conditions as stored (one identity per value is given to
    #: the whole log's columns at once) and their fingerprints (duplicates across parts)
    conditions: dict[str, np.ndarray] = field(default_factory=dict)
    fingerprints: np.ndarray | None = None
    #: their fingerprints of the test accuracy's logged points (accuracy twins across parts)
    accuracy_prints: np.ndarray | None = None


def build_log_table(table: pa.Table | pd.DataFrame | Owned, *, path: str | None = None,
                    acc_scale: float | None = None, on_duplicate: str = "error",
                    column_scales: Mapping[str, float] | None = None,
                    metrics: Sequence[str] = (), grok_on: str = "test_acc",
                    part: LogPart | None = None, growing: bool = False,
                    kernel: Kernel = NUMPY) -> LogTable:
    """Validate a canonical table and return it grouped by run and sorted by step.

    Applies every input rule of ``docs/architecture.md`` (the canonical table) in five stages:
    the columns, the rows grouped by run and step, the accuracies, the other columns split into
    series and conditions, and the rows set aside (duplicates, empty rows, runs too short).
    ``metrics`` names metric columns that must exist. ``grok_on`` is the grok criterion's
    column: ``test_acc``, or a held-out loss (then ``test_acc`` is optional and the loss column
    is required, numeric and kept as a series). An :class:`Owned` table is freed column by
    column as it is read. Raises :class:`LogFormatError`.

    ``growing``: the log is still being written (``grokaudit watch``), so two rules wait for
    more rows instead of refusing: a ``--metric`` column flat in every run and equal between
    runs is a metric logged as a constant so far (set per run and different between runs, it
    is still a condition: ``NOT_A_SERIES``), and a log whose runs are all too short so far
    keeps no run instead of ``TOO_FEW_POINTS``.

    ``kernel``: what runs the passes over the rows (:mod:`grokaudit.kernels`): numpy, the
    reference, or numba's compiled twins (extra ``fast``), which give the same answer;
    ``auto`` is resolved here for the rows read (:meth:`~grokaudit.kernels.Kernel.for_rows`).
    """
    owned = isinstance(table, Owned)
    table = _as_arrow(table.take() if isinstance(table, Owned) else table, path)
    kernel = kernel.for_rows(table.num_rows)
    prov = _provenance_of(table.schema, path)
    names = _check_columns(table, metrics, path, grok_on)
    # pandas' stored index (a DataFrame written with its index): row labels, not a quantity
    index_cols = [n for n in names if _PANDAS_INDEX.fullmatch(n) and n not in metrics]
    if index_cols:
        names = [n for n in names if n not in index_cols]
        prov = dict(prov)
        prov["notes"] = [*(prov.get("notes") or []),
                         *(f"{n}: the pandas index stored with the table, not read as a column"
                           for n in index_cols)]
    # the order the stages read the columns in: run and step, the accuracies, the others
    order = ["run", "step", *(a for a in ACCURACY_COLUMNS if a in names),
             *(n for n in names if n not in REQUIRED and n not in ACCURACY_COLUMNS)]
    columns = _Columns(table, owned, order)
    del table  # an owned input now lives only in `columns`, which frees what it has read
    # a refusal part way: the columns planned after it are not read for nothing
    with contextlib.closing(columns):
        g = _group_rows(columns, path, kernel)
        accs, scales = _accuracies(names, g, acc_scale, path, column_scales or {},
                                   None if part is None else part.accuracy)
        if "test_acc" not in accs:  # a loss criterion on a log without accuracy
            accs["test_acc"] = np.full(g.n_read, np.nan)
        forced = (*metrics, grok_on) if grok_on != "test_acc" else tuple(metrics)
        series, cond = _classify_columns(names, forced, g, path, named=forced, part=part,
                                         grok_on=grok_on, growing=growing,
                                         outcomes={str(o) for o in prov.get("outcomes") or []})
        criterion = accs["test_acc"] if grok_on == "test_acc" else series.get(grok_on)
        keep, set_aside, too_short, no_acc = _rows_to_keep(g, accs, series, on_duplicate, path,
                                                           criterion,
                                                           part is not None or growing,
                                                           criterion_name=grok_on,
                                                           a_part=part is not None)
        log = _assemble(g, accs, series, cond, keep, set_aside, too_short, prov, metrics, path,
                        has_test_acc="test_acc" in names, scales=scales, no_accuracy=no_acc,
                        part=part)
    # the Arrow temporaries of the stages (encodings, casts) and, with an owned input, its
    # last buffers (the run codes): freed, and their pages handed back to the OS
    del g, columns
    release_arrow_memory()
    return log


def _as_arrow(table: pa.Table | pd.DataFrame | ParquetSource, path: str | None
              ) -> pa.Table | ParquetSource:
    if not isinstance(table, pd.DataFrame):
        return table
    df = table
    if "run" in df.columns:
        df = df.assign(run=df["run"].astype(str).where(df["run"].notna(), None))
    try:
        return pa.Table.from_pandas(df, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise LogFormatError(f"cannot convert the table ({exc})", path=path,
                             code=ErrorCode.BAD_COLUMN_TYPE) from None


def _empty_columns(table: pa.Table | ParquetSource) -> list[str]:
    """The columns a reader found with no value at all (its provenance's ``empty_columns``):
    not in the table, but not absent from the log either."""
    schema = getattr(table, "schema", None)
    meta = getattr(schema, "metadata", None) or {}
    raw = meta.get(PROVENANCE_KEY)
    if not raw:
        return []
    try:
        got = json.loads(raw).get("empty_columns") or []
    except (ValueError, AttributeError):
        return []
    return [str(c) for c in got] if isinstance(got, list) else []


def _check_columns(table: pa.Table | ParquetSource, metrics: Sequence[str], path: str | None,
                   grok_on: str = "test_acc") -> list[str]:
    """Stage 1: unique names, the required columns (with a loss criterion, the loss column
    instead of ``test_acc``), the ``--metric`` columns, some rows."""
    names = list(table.column_names)
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise LogFormatError(f"column(s) {twice} appear more than once; rename one", path=path,
                             column=twice[0], code=ErrorCode.DUPLICATE_COLUMN)
    required = REQUIRED if grok_on == "test_acc" else (*REQUIRED[:2], grok_on)
    for c in required:
        if c not in names:
            hint = ""
            if c == "test_acc":
                alias = next((a for a in _ACC_ALIASES if a in names), None)
                if alias:
                    hint = (f"; found {alias!r}: rename it "
                            f"(`grokaudit convert --map {alias}=test_acc`)")
            if c == "step":
                alias = next((a for a in ("_step", "global_step", "Step", "epoch")
                              if a in names), None)
                if alias:
                    hint = (f"; found {alias!r}: convert the log with `grokaudit convert PATH "
                            "-o logs.parquet`, which reads it as the step")
            if c == "test_acc" and not hint:
                loss = next((n for n in ("test_loss", "val_loss", "eval_loss") if n in names),
                            None)
                if loss:
                    hint = (f"; the log has {loss!r}: audit grokking as the loss falling "
                            f"below a level with --grok-on {loss} --grok-below LEVEL")
            if c == grok_on and c != "test_acc":
                hint = f"; --grok-on names it (columns present: {_first_examples(names, 12)})"
            raise LogFormatError(
                f"missing required column {c!r}"
                f"{hint or '; the canonical table needs run, step, test_acc'}",
                path=path, column=c, code=ErrorCode.MISSING_COLUMN)
    refusal = run_type_refusal(table.schema.field("run").type, path)
    if refusal is not None:
        raise refusal
    if grok_on != "test_acc" and not _numeric_type(table.schema.field(grok_on).type):
        raise LogFormatError(f"--grok-on column {safe(grok_on)!r} has type "
                             f"{table.schema.field(grok_on).type}; a loss is a number per step",
                             path=path, column=grok_on, code=ErrorCode.BAD_COLUMN_TYPE)
    for m in metrics:
        if m in REQUIRED or m in ACCURACY_COLUMNS:
            raise LogFormatError(
                f"--metric {m!r} is a required column of the log, not a representation metric; "
                "name a metric column (e.g. emb_erank)", path=path, column=m,
                code=ErrorCode.RESERVED_COLUMN)
        if m in SEED_COLUMNS:
            raise LogFormatError(
                f"--metric {m!r} is the seed, not a representation metric; name a metric "
                "column (e.g. emb_erank)", path=path, column=m, code=ErrorCode.RESERVED_COLUMN)
        if m in names and not _numeric_type(table.schema.field(m).type):
            raise LogFormatError(
                f"--metric {safe(m)!r} has type {table.schema.field(m).type}; a metric is a number "
                "per step: name a numeric metric column", path=path, column=m,
                code=ErrorCode.BAD_COLUMN_TYPE)
        if m not in names:
            cands = [n for n in names if n not in REQUIRED and n != "train_acc"]
            empty = m in _empty_columns(table)
            raise LogFormatError(
                f"metric column {safe(m)!r} " + (
                    "is in the log but holds no value (every cell is empty); name a metric "
                    "the run logged" if empty else
                    f"not found; columns present: {_first_examples(cands, 12)}"),
                path=path, column=m, code=ErrorCode.METRIC_NOT_FOUND)
    if table.num_rows == 0:
        raise LogFormatError("the table has no rows; there is nothing to audit", path=path,
                             code=ErrorCode.NO_ROWS)
    return names


class Owned:
    """An Arrow table (or a :class:`ParquetSource`) handed over to :func:`build_log_table`,
    which takes the only reference and frees each input column as soon as it has read it:
    the validated log and the input are then never both whole in memory. ``take()`` once;
    the holder is empty afterwards."""

    def __init__(self, table: pa.Table | ParquetSource) -> None:
        self._table: pa.Table | ParquetSource | None = table

    def take(self) -> pa.Table | ParquetSource:
        t, self._table = self._table, None
        if t is None:
            raise ValueError("Owned.take(): the table was already taken")
        return t


class ParquetSource:
    """A Parquet file read one column at a time, when validation asks for it (see
    :func:`read_arrow`'s ``lazy``): with :class:`Owned`, no more than the columns being
    validated are ever in memory beside the validated log. Given the order in which the
    columns will be asked for (:meth:`plan`), the next ones are read on two background
    threads while the current one is validated, as many as fit :meth:`read_ahead_budget`."""

    def __init__(self, path: Path, names: Sequence[str]) -> None:
        self.path = path
        try:
            self._file = pq.ParquetFile(path, read_dictionary=["run"] if "run" in names
                                        else None, pre_buffer=False)
        except KeyError as err:  # a nested run column: not readable as a dictionary
            refuse_nested_run(path, err)
            raise
        self.schema: pa.Schema = self._file.schema_arrow
        self.column_names: list[str] = list(self.schema.names)
        self.num_rows: int = self._file.metadata.num_rows
        self._order: list[str] = []
        self._next = 0  #: index in ``_order`` of the first column not yet started
        self._ahead: dict[str, Future[pa.ChunkedArray]] = {}
        self._pool: ThreadPoolExecutor | None = None

    def plan(self, order: Sequence[str]) -> None:
        """The columns in the order they will be read: the first two (run ids and steps, read
        together by the first stage) start reading now, and taking a column starts the next
        ones that fit :meth:`read_ahead_budget` beside those already read ahead."""
        self._order = [n for n in order if n in self.column_names]
        for name in self._order[:2]:
            self._start(name)
        self._next = min(2, len(self._order))

    def column_bytes(self, name: str) -> int | None:
        """The bytes column ``name`` takes once read, from its type: the width of a value (of
        a dictionary's indices) times the rows; None for a type of no fixed width (text,
        whose size once decoded the file does not tell: a dictionary-encoded text column
        can take a hundred times its footer's uncompressed size)."""
        t = self.schema.field(name).type
        if pa.types.is_dictionary(t):
            t = t.index_type
        try:
            return self.num_rows * max(1, int(t.bit_width) // 8)
        except ValueError:  # no fixed width
            return None

    def read_ahead_budget(self) -> int:
        """The bytes the columns read ahead and not yet taken may hold together: the largest
        planned fixed-width column's times :data:`READ_AHEAD_COLUMNS` (one column is always
        in flight; a column of unknown size is only ever read alone)."""
        sizes = [b for b in map(self.column_bytes, self._order) if b is not None]
        return int(READ_AHEAD_COLUMNS * max(sizes, default=0))

    def _read_ahead(self) -> None:
        """Start the next planned columns while those read ahead and not yet taken, with
        them, fit :meth:`read_ahead_budget` (one always starts when none is in flight); a
        column of unknown size (text) starts only when none is in flight, and none beside
        it."""
        budget = self.read_ahead_budget()
        sizes = [self.column_bytes(n) for n in self._ahead]
        held = None if None in sizes else sum(b for b in sizes if b is not None)
        while self._next < len(self._order):
            name = self._order[self._next]
            size = self.column_bytes(name)
            if self._ahead and (held is None or size is None or held + size > budget):
                break
            self._start(name)
            held = None if size is None or held is None else held + size
            self._next += 1

    def in_flight(self) -> list[str]:
        """The columns read ahead (or being read) and not yet taken."""
        return list(self._ahead)

    def _start(self, name: str) -> None:
        if name not in self._ahead:
            if self._pool is None:
                from .blocks import leave_ctrl_c_to_the_main_thread

                self._pool = ThreadPoolExecutor(2, thread_name_prefix="grokaudit-read",
                                                initializer=leave_ctrl_c_to_the_main_thread)
            self._ahead[name] = self._pool.submit(self._read, name)

    def _read(self, name: str) -> pa.ChunkedArray:
        t = self.schema.field(name).type
        n = self._file.num_row_groups
        if pa.types.is_dictionary(t) and n > 1:
            # a column read as a dictionary (the run ids), row group by row group: the same
            # chunks, one per row group, as ``read`` gives, for less than half its CPU on
            # large files (pyarrow 26, 50 M rows in 50 row groups: 0.25 s against 0.67 s;
            # ``read`` grows faster than the rows, reading them row group by row group does
            # not: docs/performance.md)
            return pa.chunked_array(
                [c for i in range(n)
                 for c in self._file.read_row_group(i, columns=[name]).column(0).chunks],
                type=t)
        return self._file.read(columns=[name]).column(0)

    def close(self) -> None:
        """Stop reading ahead (validation ended early, on a refusal): the columns not yet
        being read are never read, those being read are dropped when they end, and the
        reading threads end."""
        self._next = len(self._order)
        ahead, self._ahead = self._ahead, {}
        for fut in ahead.values():
            fut.cancel()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def column(self, name: str) -> pa.ChunkedArray:
        try:
            fut = self._ahead.pop(name, None)
            col = fut.result() if fut is not None else self._read(name)
        except (pa.ArrowInvalid, ValueError, OSError, TypeError) as exc:
            msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise LogFormatError(f"cannot read column {safe(name)!r} as parquet: {msg}",
                                 path=str(self.path), column=name,
                                 code=ErrorCode.FILE_UNREADABLE) from None
        if name in self._order:
            self._read_ahead()
            if self._next >= len(self._order) and not self._ahead:
                self.close()  # every planned column taken: the reading threads end
        return col


#: The read-ahead budget of a :class:`ParquetSource`, in its largest column's bytes: a large
#: column and a narrow one read while one is validated (the peak resident set of a 10 M-row
#: audit stays under 1.5× the Arrow size of the columns it reads: ``docs/performance.md``).
READ_AHEAD_COLUMNS = 1.5


class _Columns:
    """The input's columns by name. With an owned input, :meth:`done` drops a column that
    has been read (its buffers are freed when nothing else holds them); a
    :class:`ParquetSource` is read column by column on first use."""

    def __init__(self, table: pa.Table | ParquetSource, owned: bool,
                 order: Sequence[str] = ()) -> None:
        self._source = table if isinstance(table, ParquetSource) else None
        if self._source is not None:
            self._source.plan(order)
        self._cols: dict[str, pa.ChunkedArray] = (
            {} if self._source is not None else {n: table.column(n) for n in table.column_names})
        self.num_rows = table.num_rows
        self.owned = owned

    def column(self, name: str) -> pa.ChunkedArray:
        col = self._cols.get(name)
        if col is None:
            if self._source is None:
                raise KeyError(name)
            col = self._cols[name] = self._source.column(name)
        return col

    def done(self, name: str) -> None:
        if self.owned and self._cols.pop(name, None) is not None:
            release_arrow_memory()  # Arrow's allocator would keep the freed pages

    def close(self) -> None:
        """Stop the source's reading ahead (:meth:`ParquetSource.close`)."""
        if self._source is not None:
            self._source.close()


#: Rows compared at a time by :func:`_first_change_in`.
_CHANGE_BLOCK = 1 << 18


def _first_change_in(v: np.ndarray, same_run: np.ndarray, nan_equal: bool,
                     kernel: Kernel = NUMPY) -> int:
    """Index in ``v`` of the first row whose value differs from the row before where
    ``same_run`` (``len(v) − 1`` flags: row i+1 is in row i's run) says they share a run
    (NaN equal to NaN with ``nan_equal``); −1 when none. Read in blocks of rows, stopping at
    the first block with a change (the temporaries stay small; a per-step series usually
    changes in its first block). ``kernel``: numba's twin, one compiled pass, when asked."""
    if kernel.numba:
        got = nb_first_change(v, same_run, nan_equal)
        if got is not None:
            return got
    n = int(v.shape[0])
    for lo in range(1, n, _CHANGE_BLOCK):
        hi = min(n, lo + _CHANGE_BLOCK)
        a, b = v[lo:hi], v[lo - 1:hi - 1]
        neq = (a != b) & same_run[lo - 1:hi - 1]
        if nan_equal and neq.any():
            neq &= ~(np.isnan(a) & np.isnan(b))
        if neq.any():
            return lo + int(np.argmax(neq))
    return -1


@dataclass(eq=False)
class _Rows:
    """The rows grouped by run (contiguous) and sorted by step, before anything is set aside.

    ``order`` is the permutation that sorts the input rows (None when they already were);
    ``col(name)`` reads a column in that order."""

    columns: _Columns
    n_read: int
    step: np.ndarray  #: (N,) int64, sorted
    order: np.ndarray | None
    run_ids: np.ndarray  #: (R,) object, in run order
    counts: np.ndarray  #: (R,) rows per run
    offsets: np.ndarray  #: (R+1,)
    same_run: np.ndarray  #: (N-1,) row i+1 belongs to the run of row i
    sorted_input: bool
    strictly: bool  #: steps strictly increase within each run (no duplicate (run, step))
    #: the kernel of the validation's passes over these rows (:mod:`grokaudit.kernels`)
    kernel: Kernel = NUMPY
    #: ``run_ids`` as an Arrow string array (the conditions' index is made from it)
    run_texts: pa.Array | None = None

    @property
    def n_runs(self) -> int:
        return int(self.run_ids.shape[0])

    def col(self, name: str) -> np.ndarray:
        a = _float_array(self.columns.column(name))
        return a if self.order is None else a[self.order]

    @functools.cached_property
    def row_run(self) -> np.ndarray:
        """(N,) run number of each row: built only when a rule needs it."""
        return np.repeat(np.arange(self.n_runs), self.counts)

    def run_at(self, i: int) -> Any:
        return self.run_ids[int(np.searchsorted(self.offsets, i, side="right")) - 1]

    def first_change(self, v: np.ndarray, nan_equal: bool) -> int:
        """Index of the first row whose value differs from the row before in the same run;
        −1 when every run is constant (:func:`_first_change_in`)."""
        return _first_change_in(v, self.same_run, nan_equal, self.kernel)


def _first_change_stored(col: pa.ChunkedArray, g: _Rows) -> int | None:
    """:meth:`_Rows.first_change` (NaN equal to NaN) of a numeric column in input order, on its
    stored values chunk by chunk: the same answer as on its float64 copy, without the copy.

    Only where comparing the stored values is comparing their float64 values: floats, and
    integers within ±2**53 (beyond, the float64 cast refuses them); None otherwise (booleans,
    sorted copies, wide integers), and the caller takes the float64 path."""
    if g.order is not None:
        return None
    t = col.type
    if pa.types.is_integer(t):
        if t.bit_width > 32 and len(col):
            mm = pc.min_max(col).as_py()
            if mm["min"] is not None and (mm["min"] < -STEP_MAX or mm["max"] > STEP_MAX):
                return None
    elif not pa.types.is_floating(t):
        return None
    same_run = g.same_run
    o = 0
    prev: Any = None
    for chunk in col.chunks:
        n = len(chunk)
        if n == 0:
            continue
        v = np.asarray(chunk.to_numpy(zero_copy_only=False))  # nulls: NaN
        if prev is not None and same_run[o - 1] and prev != v[0] \
                and not (prev != prev and v[0] != v[0]):
            return o
        k = _first_change_in(v, same_run[o:o + n - 1], v.dtype.kind == "f", g.kernel)
        if k >= 0:
            return o + k
        prev = v[-1]
        o += n
    return -1


def _first_change_int(col: pa.ChunkedArray, g: _Rows) -> int:
    """:meth:`_Rows.first_change` of an integer column compared as integers (exact beyond
    2**53, where a float64 copy would merge neighbours); a null differs from any integer."""
    vals = np.asarray(pc.fill_null(col, 0).to_numpy(zero_copy_only=False))
    nulls = np.asarray(pc.is_null(col).to_numpy(zero_copy_only=False), dtype=bool)
    if g.order is not None:
        vals, nulls = vals[g.order], nulls[g.order]
    if vals.size < 2:
        return -1
    neq = ((vals[1:] != vals[:-1]) | (nulls[1:] != nulls[:-1])) & g.same_run
    return int(np.argmax(neq)) + 1 if neq.any() else -1


def one_id_per_entry(col: pa.ChunkedArray, enc: pa.DictionaryArray) -> pa.DictionaryArray:
    """``enc`` (``col`` dictionary-encoded and its chunks combined) with a dictionary that
    lists each value once. Arrow does not forbid a dictionary column listing a value twice
    (``["r0", "r0"]``): its codes would then tell one value apart from itself -- one run read
    as two under one id, one condition read as changing. Combining chunks of different
    dictionaries unifies them (each value once); a single chunk, or chunks sharing one
    dictionary, keep theirs, which is checked (one hashing pass over the dictionary) and
    encoded again when a value repeats."""
    if not pa.types.is_dictionary(col.type) or len(enc.dictionary) < 2:
        return enc
    chunks = col.chunks
    if len(chunks) > 1 and not all(c.dictionary.equals(chunks[0].dictionary)
                                   for c in chunks[1:]):
        return enc  # unified by combine_chunks
    if len(pc.unique(enc.dictionary)) == len(enc.dictionary):
        return enc
    again = pc.dictionary_encode(enc.dictionary, null_encoding="encode")
    return pa.DictionaryArray.from_arrays(pc.take(again.indices, enc.indices),
                                          again.dictionary)


def _python_spelled_ids(run_col: pa.ChunkedArray, path: str | Path | None
                        ) -> tuple[pa.DictionaryArray, pa.Array]:
    """Float or boolean run ids as text spelled as a DataFrame's ``run.astype(str)`` spells
    them (``1.0``, ``True``: the id a run has in every reader, whichever it was handed to:
    :func:`grokaudit.shards.run_id_text`), then encoded as text ids are; a NaN (or null) id is
    a missing one (``MISSING_VALUES``), as pandas reads it. Distinct numbers have distinct
    shortest spellings: -0.0 and 0.0 are two ids, as in pandas."""
    text = cast(pa.ChunkedArray, run_id_text(run_col))
    refuse_missing_run_ids(text.null_count, None if path is None else str(path))
    enc = pc.dictionary_encode(text).combine_chunks()
    return enc, enc.dictionary


def encode_run_ids(run_col: pa.ChunkedArray, path: str | Path | None
                   ) -> tuple[pa.DictionaryArray, pa.Array]:
    """The run ids as one dictionary array, and its dictionary as text. Ids that are no text
    (bytes that are not UTF-8, in a binary column) are ``BAD_COLUMN_TYPE``, never Arrow's
    own error."""
    try:
        if spelled_as_python(run_col.type):
            return _python_spelled_ids(run_col, path)
        if not (pa.types.is_string(run_col.type) or pa.types.is_large_string(run_col.type)
                or pa.types.is_dictionary(run_col.type)):
            run_col = run_col.cast(pa.string())
        enc = one_id_per_entry(run_col, pc.dictionary_encode(run_col).combine_chunks())
        return enc, enc.dictionary.cast(pa.string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
        raise LogFormatError(
            f"column 'run' has type {run_col.type} and holds values that are no text ("
            f"{safe(str(err).splitlines()[0])}); write each run's id as UTF-8 text",
            path=None if path is None else str(path), column="run",
            code=ErrorCode.BAD_COLUMN_TYPE) from None


def _group_rows(table: _Columns, path: str | None, kernel: Kernel = NUMPY) -> _Rows:
    """Stage 2: run ids and steps validated; rows grouped by run and sorted by step.
    ``kernel``: the kernel of its passes (numba fuses the steps' checks into one pass)."""
    n_read = table.num_rows
    run_col = table.column("run")
    refuse_missing_run_ids(run_col.null_count, path)  # the rule every command shares
    enc, texts = encode_run_ids(run_col, path)
    # the codes as stored (int32): an int64 copy would be one more (N,) array
    codes = np.asarray(enc.indices.to_numpy(zero_copy_only=False))
    if codes.dtype.kind != "i":
        codes = codes.astype(np.int64)
    dictionary = np.asarray(texts.to_numpy(zero_copy_only=False), dtype=object)
    del run_col, enc
    # blank ids: nothing left once whitespace is trimmed (Arrow's trim removes what Python's
    # str.strip() does, code point for code point), one pass in Arrow instead of one per id
    blank = np.asarray(pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(texts)), 0)
                       .fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
    if texts.null_count:  # a null in an Arrow dictionary (its indices valid): no run id
        nulls = np.flatnonzero(np.asarray(texts.is_null().to_numpy(zero_copy_only=False)))
        refuse_missing_run_ids(int(np.isin(codes, nulls).sum()), path)
    if blank.any():  # a CSV's empty cell is "" (not null): the same missing run id
        refuse_missing_run_ids(int(np.isin(codes, np.flatnonzero(blank)).sum()), path,
                               empty=True)
    table.done("run")  # the codes and the dictionary are what the stages read of it
    step_col = table.column("step")
    if not _numeric(step_col):
        raise bad_column_type("step", step_col.type, path)
    if step_col.null_count:
        raise LogFormatError(f"column 'step' has {step_col.null_count} missing values; every row "
                             "needs a step (drop those rows or fill them)", path=path,
                             column="step", code=ErrorCode.MISSING_VALUES)
    # integer steps: their range is checked below from the runs' first and last steps once
    # the runs are known to be sorted (a pass over the steps saved on either kernel)
    deferred = pa.types.is_integer(step_col.type)
    step, lowest = _step_array(step_col, path, kernel, int_range=not deferred)
    del step_col
    table.done("step")

    def refuse_negative(lowest: int | None) -> None:
        if step.size and (step.min() if lowest is None else lowest) < 0:
            bad = dictionary[codes[np.argmax(step < 0)]]
            raise LogFormatError(f"column 'step' has negative values (first in run "
                                 f"{safe(bad)!r}); steps must be ≥ 0", path=path,
                                 column="step", code=ErrorCode.NEGATIVE_STEP)

    if not deferred:
        refuse_negative(lowest)
    R = dictionary.shape[0]
    sorted_input = True
    strictly = True
    fused = nb_group_steps(codes, step) if kernel.numba else None
    if fused is not None:  # the neighbours' comparisons below, in one compiled pass
        same_run, n_same = fused[0], fused[1]
    else:
        # comparisons of neighbours (boolean), not differences (two more (N,) int64 arrays)
        same_run = codes[1:] == codes[:-1] if n_read > 1 else np.zeros(0, dtype=bool)
        n_same = int(np.count_nonzero(same_run))
    n_blocks = n_read - n_same
    # each run one block of consecutive rows: as many blocks as ids, each block's id its own.
    # As many blocks as ids alone does not say it: an id no row uses (a pandas Categorical's
    # unused category) can make up for a run split in two blocks
    block_first: np.ndarray | None = None
    block_runs: np.ndarray | None = None
    contiguous = n_read > 1 and n_blocks == R
    if contiguous:
        block_first = np.concatenate(([0], np.flatnonzero(~same_run) + 1))
        block_runs = codes[block_first]
        contiguous = int(np.bincount(block_runs, minlength=R).max()) == 1
    if n_blocks != R or (n_read > 1 and not contiguous):
        present = np.bincount(codes, minlength=R) > 0
        if not present.all():  # a dictionary with unused entries (a pandas Categorical)
            codes = (np.cumsum(present) - 1)[codes].astype(codes.dtype)
            dictionary = dictionary[present]
            texts = texts.filter(pa.array(present))
            R = dictionary.shape[0]
            block_first = block_runs = None
        contiguous = n_read > 1 and n_blocks == R  # every id now used by a row
    if n_read > 1:
        sorted_input = strictly = False
        if contiguous and fused is not None:
            sorted_input, strictly = not fused[3], not fused[2]
        elif contiguous:  # one pass for the common case: steps strictly increase in each run
            back = step[1:] <= step[:-1]
            back &= same_run
            if back.any():  # a repeated or a decreasing step
                sorted_input = not np.any(same_run & (step[1:] < step[:-1]))
            else:
                sorted_input = strictly = True
    if not sorted_input:
        block_first = block_runs = None
    elif block_first is None:
        block_first = np.concatenate(([0], np.flatnonzero(~same_run) + 1))
    if deferred and step.size:  # the checks of _step_array and the negative steps', now
        if block_first is not None:  # the runs sorted: their ends hold the extremes
            lowest = int(step[block_first].min())
            highest = int(step[np.append(block_first[1:] - 1, n_read - 1)].max())
        else:
            both = nb_int_range(step) if kernel.numba else None
            lowest, highest = (int(step.min()), int(step.max())) if both is None else both
        _refuse_int_step_range(step, lowest, highest, path)
        refuse_negative(lowest)
    order: np.ndarray | None = None
    if block_first is not None:  # each run one block of rows: its length is its block's
        run_order = codes[block_first] if block_runs is None else block_runs
        counts = np.diff(np.append(block_first, n_read))
    else:
        order = np.lexsort((step, codes))
        codes = codes[order]
        step = step[order]
        run_order = np.arange(R)
        same_run = codes[1:] == codes[:-1]
        counts = np.bincount(codes, minlength=R)[run_order]
    offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    check_run_ids(dictionary, path, texts)  # one run under two spellings: refused
    in_order = run_order.size == 0 or bool(
        run_order[0] == 0 and (np.diff(run_order) == 1).all())
    run_texts = texts if in_order else texts.take(pa.array(run_order))
    del texts
    return _Rows(columns=table, n_read=n_read, step=step, order=order,
                 run_ids=dictionary[run_order], counts=counts, offsets=offsets,
                 same_run=same_run, sorted_input=sorted_input, strictly=strictly,
                 kernel=kernel, run_texts=run_texts)


def _accuracies(names: Sequence[str], g: _Rows, acc_scale: float | None, path: str | None,
                column_scales: Mapping[str, float] | None = None,
                whole: Mapping[str, tuple[float, float, int, int]] | None = None
                ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Stage 3: the accuracy columns, read as fractions in [0, 1].

    Percent or fraction is decided per column by :func:`grokaudit.roles.decide_percent` (the
    one rule of every command): ``acc_scale`` when given, else percent for a column with a
    value above 1 and for its sibling logged beside it. Returns the columns and, for each
    column divided, what was decided and which runs never exceed 1 (they are read as percent
    with the rest of their column). ``whole``: the extremes and counts of the whole log when
    this is one part of it (:class:`LogPart`): they decide, and the range check reads them."""
    raws: dict[str, tuple[np.ndarray, float, float]] = {}
    for name in ACCURACY_COLUMNS:
        if name not in names:
            continue
        c = g.columns.column(name)
        if not _numeric(c):
            raise bad_column_type(name, c.type, path)
        raw = g.col(name)
        del c
        g.columns.done(name)
        hi, lo = _nan_extremes(raw)
        if math.isinf(hi) or math.isinf(lo):
            raise LogFormatError(f"column {name!r} holds ±inf; accuracies are in [0, 1]",
                                 path=path, column=name, code=ErrorCode.INFINITE_VALUE)
        raws[name] = (raw, hi, lo) if whole is None else (raw, whole[name][0], whole[name][1])
    # (no value can lie above PERCENT_MIN when the column's maximum does not)
    above = {n: (whole[n][2] if whole is not None else 0 if not hi > PERCENT_MIN
                 else _count_above(raw, PERCENT_MIN, g.kernel))
             for n, (raw, hi, _) in raws.items()}
    decided = decide_percent({n: (hi, above[n]) for n, (_, hi, _) in raws.items()}, acc_scale,
                             column_scales)
    out: dict[str, np.ndarray] = {}
    scales: dict[str, Any] = {}
    for name, (raw, hi, lo) in raws.items():
        d = decided[name]
        if d.why == "option" and d.scale >= 1.5 and not math.isnan(hi) and all(
                math.isnan(m) or m <= FRACTION_MAX for _, m, _ in raws.values()):
            raise LogFormatError(
                f"column {name!r} already holds fractions (max {hi:g}); --acc-scale "
                f"{d.scale:g} would make every run look like it never learned: drop "
                "--acc-scale", path=path, column=name, code=ErrorCode.ACCURACY_OUT_OF_RANGE)
        a = raw.astype(np.float64) / d.scale if d.scale != 1.0 else raw
        h, lw = hi / d.scale, lo / d.scale
        if h > FRACTION_MAX or lw < -1e-9:
            if d.why == "fraction" and lw >= -1e-9 and (hi <= PERCENT_MIN
                                                       or above[name] < PERCENT_MIN_POINTS):
                n_above = (_count_above(raw, FRACTION_MAX, g.kernel) if whole is None
                           else whole[name][3])
                # printed as the column's type reads it back (a float32 1.0000001 with
                # ``:g`` read "max 1", beside "value(s) above 1")
                why = (f"max {format_value(raw.dtype.type(hi))} ({n_above} value(s) above "
                       "1): not a fraction, and not "
                       "clearly percent; if it is percent, pass --acc-scale 100, else fix "
                       "the logger")
            else:
                unit = ("percent (0-100)" if d.scale == 100.0 else "fractions (--acc-scale 1)"
                    if d.scale == 1.0 else f"units of {d.scale:g}")
                why = (f"values outside [0, 1] read as {unit} (min "
                       f"{format_value(raw.dtype.type(lo))}, max "
                       f"{format_value(raw.dtype.type(hi))}); fix "
                       "the logger or the --acc-scale")
            raise LogFormatError(f"column {name!r} has {why}", path=path, column=name,
                                 code=ErrorCode.ACCURACY_OUT_OF_RANGE)
        if d.scale != 1.0:
            with np.errstate(invalid="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                run_max = np.fmax.reduceat(raw, g.offsets[:-1]) if raw.size else raw
            low = g.run_ids[~np.isnan(run_max) & (run_max <= FRACTION_MAX)]
            scales[name] = {"scale": d.scale, "max": hi, "why": d.why,
                            "n_runs_at_most_1": int(low.size),
                            "runs_at_most_1": [str(r) for r in low[:20]]}
        out[name] = a
    if "test_acc" in names and "test_acc" not in out:  # pragma: no cover - defensive
        raise AssertionError("test_acc not read")
    return out, scales


def _count_above(raw: np.ndarray, t: float, kernel: Kernel = NUMPY) -> int:
    """How many values of an accuracy column exceed ``t`` (NaN never does); ``kernel``:
    numba's twin, one compiled pass, when asked."""
    got = nb_count_above(raw, t) if kernel.numba else None
    if got is not None:
        return got
    with np.errstate(invalid="ignore"):
        return int(np.count_nonzero(raw > t))


def _classify_columns(names: Sequence[str], metrics: Sequence[str], g: _Rows,
                      path: str | None, *, named: Sequence[str] = (),
                      part: LogPart | None = None, grok_on: str = "test_acc",
                      growing: bool = False, outcomes: Collection[str] = ()
                      ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Stage 4: every other column is a per-step series or a condition (constant within each
    run). Known metrics and series are series whatever they do, except a per-run result the
    reader declared (``outcomes``: a ``test_loss`` logged once, at the final test, written in
    every row of its run), which is tested as any condition; a text column or ``seed`` that
    changes within a run is an error. In a ``part`` of a log, the columns another part reads
    as series are series here too, and whether a ``--metric`` column changes is recorded
    (judged over the whole log), not refused."""
    starts = g.offsets[:-1]
    series: dict[str, np.ndarray] = {}
    cond: dict[str, np.ndarray] = {}
    for name in names:
        if name in REQUIRED or name in ACCURACY_COLUMNS:
            continue
        c = g.columns.column(name)
        if _numeric(c):
            # an accuracy measured on a split or at a top-k (metrics/accuracy_top5 at 1.0
            # throughout) is a series too: never a condition, which could become the axis
            known = name in metrics or (name not in outcomes and (
                is_known_series(name) or is_measured_accuracy(name))) or (
                part is not None and name in part.series)
            # a known series is a series whatever it does: skip the constancy test
            a: np.ndarray | None = None
            if name in named and part is not None:  # judged once every part is read
                a = g.col(name)
                part.metric_changes[name] = (g.first_change(a, True) >= 0,
                                             int(np.count_nonzero(~np.isnan(a))), g.n_runs)
                if name == grok_on:
                    part.loss_range = _nan_extremes(a)[::-1]
                change = -1
            elif name in named:  # named by --metric: it must change over steps (wd is no metric)
                a = g.col(name)
                if g.first_change(a, True) < 0 and np.count_nonzero(~np.isnan(a)) > g.n_runs \
                        and ((name != grok_on and not growing) or _differ(_nan_extremes(a))):
                    # a --grok-on loss may be flat (a run that never learned), and so may a
                    # metric of a log still growing (logged as a constant so far), but not
                    # set per run and different between runs: that is a condition (wd, seed)
                    raise metric_not_a_series(name, path, grok_on=name == grok_on,
                                              outcome=name in outcomes)
                change = -1
            elif (known or name in metrics) and name not in SEED_COLUMNS:
                change = -1
            else:  # a condition is tested on its stored values: no float64 copy of it
                raw_change = _first_change_stored(c, g)
                if raw_change is None and pa.types.is_integer(c.type):
                    change = _first_change_int(c, g)  # beyond 2**53: compared as integers
                elif raw_change is None:
                    a = g.col(name)
                    change = g.first_change(a, True)
                else:
                    change = raw_change
            if known or change >= 0:
                if a is None:
                    a = g.col(name)
                if any(math.isinf(v) for v in _nan_extremes(a)):
                    r = g.run_at(int(np.argmax(np.isinf(a))))
                    raise LogFormatError(
                        f"column {safe(name)!r} holds ±inf (first in run {safe(r)!r}); replace "
                        "it with NaN (missing) or fix the logger", path=path, column=name,
                        code=ErrorCode.INFINITE_VALUE)
                if name in SEED_COLUMNS and change >= 0:
                    raise LogFormatError(
                        f"condition column {safe(name)!r} is not constant within run "
                        f"{safe(g.run_at(change))!r}; a run is one seed of one condition",
                        path=path, column=name, code=ErrorCode.NOT_CONSTANT_IN_RUN)
                series[name] = a
            else:
                # a condition keeps its stored type (float32, integer, boolean), so that it is
                # shown and matched as logged: 0.85, not 0.8500000238418579; true, not 1.0
                rows = starts if g.order is None else g.order[starts]
                cond[name] = _condition_values(_take_rows(c, rows))
        else:
            if pa.types.is_nested(c.type) or pa.types.is_union(c.type):
                raise LogFormatError(
                    f"column {safe(name)!r} has type {c.type}; a column of the log holds one "
                    "number (a per-step value or a condition) or one text per row: drop it "
                    "or flatten it into columns", path=path, column=name,
                    code=ErrorCode.BAD_COLUMN_TYPE)
            enc_c = one_id_per_entry(c, pc.dictionary_encode(c).combine_chunks())
            idx = np.asarray(enc_c.indices.fill_null(-1).to_numpy(zero_copy_only=False),
                             dtype=np.int64)
            idx = idx if g.order is None else idx[g.order]
            change = g.first_change(idx, False)
            if change >= 0:
                _refuse_text_among_numbers(name, enc_c.dictionary, idx, g, path,
                                           known=name in metrics or is_known_series(name))
                raise LogFormatError(
                    f"condition column {safe(name)!r} is not constant within run "
                    f"{safe(g.run_at(change))!r}; split the run or drop the column", path=path,
                    column=name, code=ErrorCode.NOT_CONSTANT_IN_RUN)
            vals = _take_rows(c, starts if g.order is None else g.order[starts])
            cond[name] = np.asarray(vals.to_numpy(zero_copy_only=False), dtype=object)
        if name not in metrics:
            del c
            g.columns.done(name)
    for m in metrics:
        if m in cond:  # constant metric: still a series
            series[m] = g.col(m)
            del cond[m]
        g.columns.done(m)
    return series, cond


def _condition_values(a: pa.Array) -> np.ndarray:
    """A numeric condition's values, one per run, as numpy holds them: its own type, float64
    with NaN for an integer column with missing values -- except integers beyond ±2**53,
    which float64 would round (two settings merged into one): those stay Python integers,
    None where missing."""
    if pa.types.is_integer(a.type) and a.null_count and len(a) > a.null_count:
        lo, hi = pc.min_max(a).as_py().values()
        if lo < -STEP_MAX or hi > STEP_MAX:
            return np.asarray(a.to_pylist(), dtype=object)
    return np.asarray(a.to_numpy(zero_copy_only=False))


def _take_rows(c: pa.ChunkedArray, rows: np.ndarray) -> pa.Array:
    """``c.take(rows)`` (one value per run, its conditions), chunk by chunk: a take from a
    ChunkedArray by row number locates each row among the chunks again (about 4× slower on a
    10 M-row column read in row groups). The same values, type and order; a dictionary
    column, whose chunks may hold different dictionaries, is taken as a whole."""
    if c.num_chunks == 1:
        return c.chunk(0).take(pa.array(rows))
    if c.num_chunks == 0 or pa.types.is_dictionary(c.type):
        return c.take(pa.array(rows)).combine_chunks()
    bounds = np.cumsum([0, *(len(ch) for ch in c.chunks)])
    which = np.searchsorted(bounds, rows, side="right") - 1
    order = np.argsort(which, kind="stable")
    parts = [c.chunk(k).take(pa.array(rows[order[lo:hi]] - bounds[k]))
             for k, lo, hi in runs_of(which[order])]
    taken = pa.concat_arrays(parts) if parts else pa.array([], type=c.type)
    back = np.empty_like(order)
    back[order] = np.arange(order.size)
    return taken.take(pa.array(back))


def parses_as_number(x: Any) -> bool:
    """Whether a logged text reads as a number (``"0.5"``, ``"1e-3"``, ``"nan"``)."""
    try:
        float(str(x))
    except ValueError:
        return False
    return True


def mostly_numbers(values: Collection[Any]) -> bool:
    """Whether more than half of the distinct logged texts read as numbers: a text column
    that is a per-step series written as text, not words."""
    return sum(1 for x in values if parses_as_number(x)) * 2 > len(values)


def _first_logged(idx: np.ndarray) -> int:
    """The first row holding a value (dictionary index ≥ 0; −1 is a missing cell)."""
    return int(np.argmax(idx >= 0))


def _refuse_text_among_numbers(name: str, values: pa.Array, idx: np.ndarray, g: _Rows,
                               path: str | None, *, known: bool) -> None:
    """A text column that changes within a run because it is a per-step series written with a
    stray text cell (a CSV metric with one ``oops``, ``n/a`` or ``-`` in it: the whole column
    reads as text): ``BAD_COLUMN_TYPE`` naming the first such cell's run and step, where the
    constancy error would name the first run in which the numbers change. The column counts as
    numbers when it is a known metric or series or most of its distinct values parse as
    numbers."""
    distinct = values.to_pylist()
    if not known and not mostly_numbers([x for x in distinct if x is not None]):
        return
    numeric = np.array([x is not None and parses_as_number(x) for x in distinct], dtype=bool)
    text = np.flatnonzero(~numeric & np.array([x is not None for x in distinct], dtype=bool))
    if text.size == 0:  # every value a number, stored as text: "0.5" where 0.5 belongs
        row = _first_logged(idx)
        raise LogFormatError(
            f"column {safe(name)!r} holds numbers stored as text (first "
            f"{safe(str(distinct[int(idx[row])]))[:40]!r} in run {safe(g.run_at(row))!r} at "
            f"step {int(g.step[row])}) that change within runs: a per-step series; write the "
            "column as numbers", path=path, column=name, code=ErrorCode.BAD_COLUMN_TYPE)
    row = int(np.flatnonzero(np.isin(idx, text))[0])
    bad = distinct[int(idx[row])]
    raise LogFormatError(
        f"column {safe(name)!r} holds numbers and text: {safe(str(bad))[:40]!r} in run "
        f"{safe(g.run_at(row))!r} at step {int(g.step[row])} is the first text; a per-step "
        "value is a number: write it as a number, or leave the cell empty (missing)",
        path=path, column=name, code=ErrorCode.BAD_COLUMN_TYPE)


def _fill_from_duplicates(dup: np.ndarray, first: bool,
                          columns: Sequence[dict[str, np.ndarray]]) -> dict[int, np.ndarray]:
    """Under ``--on-duplicate first|last``: in each group of rows of one (run, step), the row
    kept takes, in each column where it holds nothing, the first (last) value of its group,
    as every reader resolves duplicates (:func:`grokaudit.loader.join_duplicate_rows`). The
    columns filled are replaced (copies: a column may be Arrow's read-only memory) in
    ``columns``; returns them by the identity of the array each replaces."""
    idx = np.flatnonzero(dup | np.r_[dup[1:], False])
    group = np.cumsum(~dup[idx])
    out: dict[int, np.ndarray] = {}
    for cols in columns:
        for name, a in list(cols.items()):
            sub = a[idx]
            gaps = np.isnan(sub)
            if not gaps.any():
                continue
            pick = pd.Series(sub).groupby(group).transform("first" if first else "last")
            filled = a.copy()
            filled[idx] = np.where(gaps, pick.to_numpy(dtype=a.dtype), sub)
            cols[name] = out[id(a)] = filled
    return out


def _rows_to_keep(g: _Rows, accs: dict[str, np.ndarray], series: dict[str, np.ndarray],
                  on_duplicate: str, path: str | None, criterion: np.ndarray | None = None,
                  may_keep_none: bool = False, criterion_name: str = "test_acc",
                  a_part: bool = False
                  ) -> tuple[np.ndarray, dict[str, int], tuple[str, ...], tuple[str, ...]]:
    """Stage 5: rows set aside, counted by reason — duplicate (run, step) rows (identical ones,
    or the losers under ``on_duplicate``), rows with nothing in them, runs too short. A part
    of a log, or a log still being written (``may_keep_none``), may keep no row: the whole log
    is judged. ``a_part``: these are one part's rows, so a count of them is a lower bound."""
    n_read, step, same_run = g.n_read, g.step, g.same_run
    test_acc = accs["test_acc"]
    train_acc = accs.get("train_acc")
    set_aside: dict[str, int] = {}
    dup = np.zeros(n_read, dtype=bool)
    if n_read > 1 and not (g.strictly and g.order is None):
        dup[1:] = same_run & (step[1:] == step[:-1])
    keep = np.ones(n_read, dtype=bool)
    if dup.any():
        cols_all = [test_acc] + ([train_acc] if train_acc is not None else []) \
            + list(series.values())
        idx = np.flatnonzero(dup)
        same_vals = np.ones(idx.size, dtype=bool)
        for a in cols_all:
            x, y = a[idx], a[idx - 1]
            same_vals &= (x == y) | (np.isnan(x) & np.isnan(y))
        identical = idx[same_vals]
        conflicting = idx[~same_vals]
        keep[identical] = False
        if identical.size:
            set_aside["duplicate_identical"] = int(identical.size)
        if conflicting.size:
            if on_duplicate == "error":
                ex = [f"{g.run_at(int(i))}@{step[i]}" for i in conflicting[:3]]
                # a part of a log read in parts counts its own rows only: a lower bound
                count = f"at least {conflicting.size}" if a_part else conflicting.size
                raise LogFormatError(
                    f"{count} duplicate (run, step) rows with different values "
                    f"(first: {safe(', '.join(ex))}); pass --on-duplicate first|last to choose",
                    path=path, column="step", code=ErrorCode.DUPLICATE_ROWS)
            # rows of one (run, step) are consecutive: keep the first or the last of each group
            if on_duplicate == "first":
                keep &= ~dup
            else:  # the last row of each group, whether or not it repeats the row before it
                keep = ~np.r_[dup[1:], False]
            set_aside[f"duplicate_{on_duplicate}_wins"] = int(conflicting.size)
            # ... its gaps filled from its group, column by column (the rule of every reader)
            new = _fill_from_duplicates(dup, on_duplicate == "first", (accs, series))
            test_acc, train_acc = accs["test_acc"], accs.get("train_acc")
            criterion = new.get(id(criterion), criterion)

    # rows with nothing in them (only possible where test_acc is missing)
    empty = np.isnan(test_acc)
    acc_has_nan = bool(empty.any())
    if acc_has_nan:
        if train_acc is not None:
            empty &= np.isnan(train_acc)
        for a in series.values():
            empty &= np.isnan(a)
        empty &= keep
        if empty.any():
            set_aside["empty_row"] = int(empty.sum())
            keep &= ~empty

    # runs that never logged the grok criterion: no clock can be read from them (a file of one
    # metric of a run, read as a run of its own) -- set aside, never "censored at step 0"
    no_acc: tuple[str, ...] = ()
    without = np.zeros(g.n_runs, dtype=bool)
    all_kept = bool(keep.all())
    # (the accuracy's NaN were counted above: not scanned again when it is the criterion)
    criterion_has_nan = acc_has_nan if criterion is test_acc else \
        criterion is not None and bool(np.isnan(criterion).any())
    if criterion is not None and g.n_runs and not (all_kept and not criterion_has_nan):
        # (a log whose every row is kept and holds the criterion has no such run)
        logged = np.add.reduceat(~np.isnan(criterion) & keep, g.offsets[:-1])
        without = (logged == 0) & (g.counts > 0)
        if without.any():
            no_acc = tuple(sorted(str(r) for r in g.run_ids[without]))
            rows_out = keep & without[g.row_run]
            set_aside["run_without_accuracy"] = int(rows_out.sum())
            keep &= ~without[g.row_run]
    # runs too short
    all_kept = all_kept and not without.any()
    kept_per_run = g.counts if all_kept else np.bincount(g.row_run[keep], minlength=g.n_runs)
    short = (kept_per_run < TOO_SHORT_POINTS) & ~without
    too_short = tuple(sorted(str(r) for r in g.run_ids[short]))
    if short.any():
        rows_short = keep & short[g.row_run]
        set_aside["run_too_short"] = int(rows_short.sum())
        keep &= ~short[g.row_run]
    if not keep.any() and not may_keep_none:
        if without.any() and bool(without[g.counts > 0].all()):
            # every run was set aside for never logging the criterion: the column is there
            # and empty, not the runs short
            raise LogFormatError(
                f"column {criterion_name!r} (the grok criterion) holds no value in any run: "
                "no clock can be read; log it (or name the criterion with --grok-on)",
                path=path, column=criterion_name, code=ErrorCode.MISSING_COLUMN)
        raise no_run_long_enough(path)
    return keep, set_aside, too_short, no_acc


def _differ(extremes: tuple[float, float]) -> bool:
    """The largest and smallest value of a column differ (NaN: no value, no difference)."""
    hi, lo = extremes
    return bool(hi > lo)


def metric_not_a_series(name: str, path: str | None, grok_on: bool = False,
                        outcome: bool = False) -> LogFormatError:
    """The refusal of a ``--metric`` column (or, with ``grok_on``, the ``--grok-on`` column)
    constant within every run (``NOT_A_SERIES``); ``outcome``: the reader read it as a result
    logged once per run (a final ``test_loss``), written in every row of its run."""
    what = ("--grok-on", "held-out loss") if grok_on else ("--metric", "metric")
    kind = ("a result logged once per run (an outcome)" if outcome
            else "a condition (set per run)")
    return LogFormatError(
        f"{what[0]} {safe(name)!r} is constant within every run: {kind}, "
        f"not a per-step {what[1]}; name a column that changes over steps", path=path,
        column=name, code=ErrorCode.NOT_A_SERIES)


def no_run_long_enough(path: str | None) -> LogFormatError:
    """The refusal of a log with no run long enough to audit (``TOO_FEW_POINTS``)."""
    return LogFormatError(f"no run has {TOO_SHORT_POINTS} or more logged points; nothing to "
                          "audit", path=path, code=ErrorCode.TOO_FEW_POINTS)


def _assemble(g: _Rows, accs: Mapping[str, np.ndarray], series: dict[str, np.ndarray],
              cond: dict[str, np.ndarray], keep: np.ndarray, set_aside: dict[str, int],
              too_short: tuple[str, ...], prov: dict[str, Any], metrics: Sequence[str],
              path: str | None, *, has_test_acc: bool = True,
              scales: Mapping[str, Any] | None = None,
              no_accuracy: tuple[str, ...] = (), part: LogPart | None = None) -> LogTable:
    """The kept rows as a :class:`LogTable`, with the input accounting."""
    step, run_ids, offsets, run_texts = g.step, g.run_ids, g.offsets, g.run_texts
    test_acc = accs["test_acc"]
    train_acc = accs.get("train_acc")
    if not keep.all():
        step = step[keep]
        test_acc = test_acc[keep]
        train_acc = train_acc[keep] if train_acc is not None else None
        series = {k: v[keep] for k, v in series.items()}
        new_counts = np.bincount(g.row_run[keep], minlength=g.n_runs)
        live = new_counts > 0
        run_ids = run_ids[live]
        run_texts = None if run_texts is None else run_texts.filter(pa.array(live))
        cond = {k: v[live] for k, v in cond.items()}
        offsets = np.concatenate(([0], np.cumsum(new_counts[live]))).astype(np.int64)
    # a log audited on a loss may have no test_acc: nothing of it is then "missing"
    columns = ({"test_acc": test_acc} if has_test_acc else {}) | (
        {"train_acc": train_acc} if train_acc is not None else {}) | dict(series)
    missing: dict[str, int] = {}
    not_logged: dict[str, int] = {}
    nan_free: dict[str, np.ndarray] = {}
    for k, v in columns.items():
        v.flags.writeable = False  # the validated log is read, never written
        missing[k], absent = _missing_and_absent(v, offsets, g.kernel)
        if absent:
            not_logged[k] = absent
        elif not missing[k]:
            nan_free[k] = v
    if part is not None:
        part.conditions = dict(cond)
    # one identity per value: float32 and float64 spellings of one number, 0.1 and "0.10"
    cond = {k: canonical_values(v) for k, v in cond.items()}
    conditions = pd.DataFrame(cond, index=_conditions_index(run_ids, run_texts))
    per_step = [test_acc] + ([train_acc] if train_acc is not None else []) + list(series.values())
    # a part's are weighted: the candidates among runs of different parts, one pass
    prints, head = fingerprints(offsets, step, per_step, weighted=part is not None, prefix=1)
    nan_acc = missing.get("test_acc", 0) > 0
    logged = logged_points(offsets, step, test_acc, nan_acc)
    acc_prints = accuracy_prints(logged, nan_acc, head)
    if part is not None:
        part.fingerprints, part.accuracy_prints = prints, acc_prints
    dups = duplicate_runs(run_ids, offsets, step, per_step, prints)
    twins = accuracy_twins(run_ids, logged, acc_prints, dups)
    metric_names = tuple(metrics) if metrics else tuple(sorted(n for n in series
                                                               if is_known_metric(n)))
    declared = {str(o) for o in prov.get("outcomes") or []}
    outcomes = tuple(sorted(c for c in cond if c in declared or is_outcome_name(c)))
    # rows that several inputs held for one (run, step) were read once per input and joined
    joined = int(prov.get("rows_joined") or 0)
    if joined > 0:
        set_aside = {**set_aside, "joined_across_inputs": joined}
    # rows a reader resolved by --on-duplicate before this table: counted as if resolved here
    resolved = {str(k): int(v) for k, v in (prov.get("duplicates_resolved") or {}).items()}
    for k, n in resolved.items():
        set_aside = {**set_aside, k: set_aside.get(k, 0) + n}
    joined += sum(resolved.values())
    summary = InputSummary(
        source=path, rows_read=int(g.n_read) + max(joined, 0), rows_kept=int(step.size),
        set_aside=set_aside,
        runs_read=g.n_runs, runs_kept=int(run_ids.size), runs_too_short=too_short,
        missing_values=missing, sorted_input=g.sorted_input, metrics=metric_names,
        conditions=tuple(sorted(cond)), provenance=prov, outcomes=outcomes,
        not_logged=not_logged, runs_without_accuracy=no_accuracy,
        accuracy_scale=dict(prov.get("accuracy_scale") or {}) | dict(scales or {}),
        duplicate_runs=tuple(dups), accuracy_twins=tuple(twins),
    )
    log = LogTable(run_ids=run_ids, offsets=offsets, step=step, test_acc=test_acc,
                   train_acc=train_acc, series=series, conditions=conditions, summary=summary)
    object.__setattr__(log, "nan_free", nan_free)  # what this validation checked, by array
    return log


def _inferred_text_dtype() -> Any:
    """The dtype pandas now gives an index of Python strings: its Arrow-backed ``str``
    (pandas 3), ``object`` (pandas 2), or what pandas' string options say (asked at each call:
    a user may set them between two audits)."""
    return pd.Index(np.array(["x"], dtype=object)).dtype


def _conditions_index(run_ids: np.ndarray, texts: pa.Array | None = None) -> pd.Index:
    """The index ``run`` of the runs' conditions: ``pd.Index(run_ids)``, the dtype pandas
    infers for them. ``texts``: the same ids as an Arrow string array; where pandas stores
    text in Arrow, the index is made from it (a million ids: 1 ms, where pandas reading the
    Python strings takes 75-110 ms), the same index."""
    dtype = _inferred_text_dtype()
    if (texts is not None and 0 < run_ids.size == len(texts)  # no id: pandas says object
            and isinstance(dtype, pd.StringDtype)
            and dtype.storage == "pyarrow" and texts.null_count == 0
            and (pa.types.is_string(texts.type) or pa.types.is_large_string(texts.type))):
        index: pd.Index = pd.Index(pd.array(texts, dtype=dtype), name="run")
        return index
    plain: pd.Index = pd.Index(run_ids, name="run")
    return plain


def _missing_and_absent(v: np.ndarray, offsets: np.ndarray, kernel: Kernel = NUMPY
                        ) -> tuple[int, int]:
    """``(missing, absent)`` of one per-step column: NaN rows of the runs that logged it at
    least once, and the number of runs that never logged it (a column a file never had is
    not thousands of missing values). ``kernel``: numba's twin, one compiled pass over the
    runs, when asked."""
    got = nb_missing_and_absent(v, offsets) if kernel.numba else None
    if got is not None:
        return got
    if v.size and v.dtype.kind == "f" and not np.isnan(np.min(v)):
        return 0, 0  # no NaN (a minimum over any NaN is NaN): one reduction, no mask
    nan = np.isnan(v)
    n_nan = int(np.count_nonzero(nan))
    if n_nan == 0 or offsets.size < 2:
        return n_nan, 0
    counts = np.diff(offsets)
    nan_per_run = np.add.reduceat(nan, offsets[:-1]) if v.size else np.zeros(0, int)
    never = nan_per_run == counts
    return n_nan - int(counts[never].sum()), int(never.sum())
