"""The audit of a log read in parts, with bounded memory: a Parquet file larger than memory,
or a hive-partitioned dataset folder (:mod:`grokaudit.dataset`), part by part.

Every clock of a run reads that run alone, so each part — consecutive row groups or files
holding whole runs — is validated and clocked, and only its per-run results are kept; the
points are dropped before the next part is read. What needs the whole log is taken apart:

* decided **before** the parts, in one pass over the ``run`` and accuracy columns only: which
  rows form each run (a run split over row groups or files keeps them in one part), a run id
  spelt two ways, and percent or fraction for each accuracy column (its largest value and
  counts over the whole log);
* **merged** after: the row accounting, the runs' conditions (one identity per value over the
  whole column), a column one part reads as a per-step series is a series in every part (the
  parts that read it as a condition are read again), a ``--metric`` column constant in every
  run, a log with no run long enough;
* **read again**, only for the runs concerned: runs of different parts with one fingerprint
  (compared exactly for ``DUPLICATE_RUN``), and the horizon check (a short run's longest
  sibling; its floors recomputed when the sibling still moved).

Two settings compare runs before their clocks: the ``grid`` floor window (a cell's step
grid) and ``grok_relative = study`` (a study's ceiling). With them the parts are read once to
validate (and, for the ceilings, to take each run's best sustained accuracy), once more for
the cells' grids (``grid``), and once more for the clocks.

The result is the in-memory audit's, byte for byte (``tests/core/test_core_stream.py``,
``benchmarks/identity.py --stream N``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .clocks import (
    AccuracyClocks,
    Ceilings,
    Event,
    MetricClocks,
    accuracy_clocks,
    best_sustained,
    ceiling_unsettled,
    grid_starts,
    grid_steps,
    metric_clocks,
    pack,
    relative_use,
    study_ceilings,
)
from .config import AuditConfig, column_scales, grok_levels
from .dataset import ParquetDataset, open_dataset
from .engine import THREADS, Engine
from .errors import ConfigError, ErrorCode, LogFormatError, param_name
from .horizons import HorizonCheck, horizon_check, horizon_references, references_compared
from .identity import (
    MAX_TWIN_GROUP,
    accuracy_twins,
    canonical_values,
    check_run_ids,
    duplicate_runs,
    logged_points,
    without_duplicates,
)
from .results import AuditResult
from .roles import FRACTION_MAX, PERCENT_MIN
from .schema import (
    ACCURACY_COLUMNS,
    InputSummary,
    LogPart,
    LogTable,
    Owned,
    build_log_table,
    encode_run_ids,
    metric_not_a_series,
    no_run_long_enough,
)
from .shards import refuse_special_file, refuse_unreadable_entries, run_id_text, spelled_as_python

if TYPE_CHECKING:
    from .figures import DashboardData

#: Rows per part (the default of ``part_rows``): a part is validated and clocked in memory.
PART_ROWS = 2_000_000

Progress = Callable[[str], None]
_T = TypeVar("_T")


@dataclass
class _Part:
    """What is kept of one part once its points are dropped."""

    rows: tuple[int, int]  #: rows ``first:stop`` of the whole log
    run_ids: np.ndarray
    run_rows: np.ndarray  #: each run's rows, as validated
    summary: InputSummary
    record: LogPart
    series: tuple[str, ...]
    acc: AccuracyClocks | None = None
    best: np.ndarray | None = None  #: ``grok_relative = study``: each run's best sustained
    clocks: dict[str, MetricClocks] = field(default_factory=dict)
    duplicates: list[tuple[str, ...]] = field(default_factory=list)
    twins: list[tuple[str, ...]] = field(default_factory=list)  #: its accuracy twins


def audit_stream(path: str | Path, config: AuditConfig | None = None, *,
                 part_rows: int = PART_ROWS, progress: Progress | None = None,
                 engine: Engine = THREADS, **options: Any) -> AuditResult:
    """Audit the canonical Parquet file or hive dataset folder at ``path`` part by part, with
    memory bounded by the part (about ``part_rows`` rows, more where one run is longer) and the
    per-run results: the same result as :func:`~grokaudit.api.audit_path`. ``progress`` gets
    one line per part; each part's clocks are computed on ``engine``
    (:mod:`grokaudit.engine`). Raises :class:`LogFormatError`."""
    return audit_stream_with_trajectories(path, config, part_rows=part_rows,
                                          progress=progress, engine=engine, **options)[0]


def audit_stream_with_trajectories(path: str | Path, config: AuditConfig | None = None, *,
                                   part_rows: int = PART_ROWS,
                                   progress: Progress | None = None,
                                   engine: Engine = THREADS, **options: Any
                                   ) -> tuple[AuditResult, StreamTrajectories]:
    """:func:`audit_stream`, and the log's trajectories for the report's figures
    (:class:`StreamTrajectories`: the runs read again, cells batch by batch, when drawn).
    ``engine`` computes every part's clocks (:mod:`grokaudit.engine`)."""
    from . import __version__
    from .api import _config, audit_plan, reduce_audit
    from .trail import make_trail

    cfg = _config(config, options)
    s = _read_stream(path, cfg, part_rows, progress, clocks=True, engine=engine)
    log = s.merged_log()
    plan = audit_plan(log, cfg)
    if s.deferred:  # the clocks need the cells' grids or the studies' ceilings first
        if cfg.floor_window == "grid":
            s.grid = s.grid_starts(plan.cell_ids)
        s.clock_parts(plan.metrics, s.ceilings(plan.study_ids) if s.relative else None)
    # the parts' per-run results become the whole log's, field by field (never both whole)
    live = [p for p in s.parts if p.acc is not None]
    # a metric's clocks use the accuracy's t_grok itself (unless grok_point = usable): joined
    # once and shared, as in memory
    shared = {m: all(p.clocks[m].grok is p.acc.t_grok for p in live if p.acc is not None)
              for m in plan.metrics}
    accs = [p.acc for p in live if p.acc is not None]
    for p in live:
        p.acc = None
    acc = _consume(accs)
    mclocks: dict[str, MetricClocks] = {}
    horizons: dict[str, HorizonCheck | None] = {}
    for m in plan.metrics:
        mc = _consume([p.clocks.pop(m) for p in live])
        if shared[m]:
            mc = dataclasses.replace(mc, grok=acc.t_grok)
        mclocks[m], horizons[m] = s.horizon(m, mc, acc, plan.cell_ids)
        del mc
    acc = _reduced(acc)
    for m in plan.metrics:
        mclocks[m] = _reduced(mclocks[m], acc.t_grok if shared[m] else None)
    s.drop_records()
    result = reduce_audit(log, cfg, plan, acc, mclocks, horizons)
    return (dataclasses.replace(result, trail=make_trail(cfg, version=__version__,
                                                         inputs=[str(path)])),
            StreamTrajectories(s, part_rows))


class StreamTrajectories:
    """The trajectories of a log audited in parts, for the report's figures
    (:func:`grokaudit.figures.dashboard_data`'s, byte for byte): the runs of the studies'
    cells are read again, a batch of cells of about ``part_rows`` rows at a time, and only each
    cell's median and seed band is kept. A cell is never split, so a batch is larger than
    ``part_rows`` only where one cell is. Cells whose runs lie in one part (a dataset
    partitioned by condition) cost about one more read of the log; cells spread over every
    part (runs of all cells interleaved in one file) cost one read of the log per batch."""

    def __init__(self, stream: _Stream, part_rows: int) -> None:
        self._s, self._part_rows = stream, part_rows

    def dashboard_data(self, result: AuditResult, *, log_steps: bool = False
                       ) -> list[DashboardData]:
        """Each study's :class:`~grokaudit.figures.DashboardData`, in ``result.studies``
        order."""
        from .figures import CellData, StepRange, assembled, cell_band, drawn_metric, step_range

        s = self._s
        _trim()  # what the audit freed, handed back before the cells are read again
        per_run = np.concatenate([p.run_rows for p in s.parts])
        cells = [(i, j, c) for i, st in enumerate(result.studies)
                 for j, c in enumerate(st.cells)]
        numbered = s.numbers([x for _, _, c in cells for x in c.runs])
        # the cells of every study, each set of runs read once (a cell is in one study per
        # metric): keyed by its runs' numbers as bytes (8 a run, not a tuple of Python ints)
        sets: dict[bytes, tuple[np.ndarray, list[tuple[int, int]]]] = {}
        at_cell = 0
        for i, j, c in cells:
            these = numbered[at_cell:at_cell + len(c.runs)]
            at_cell += len(c.runs)
            these = these[these >= 0]
            sets.setdefault(these.tobytes(), (these, []))[1].append((i, j))
        del numbered, cells
        _trim()
        found: dict[tuple[int, int], CellData] = {}
        # the accuracy bands of a set of runs, computed once for the studies of every metric
        shared: dict[bytes, tuple[Any, Any]] = {}
        ranges = [StepRange() for _ in result.studies]
        batches: list[list[bytes]] = [[]]
        size = 0.0
        for key, (nums, _) in sets.items():
            rows = float(per_run[nums].sum())
            if batches[-1] and size + rows > self._part_rows:
                batches.append([])
                size = 0.0
            batches[-1].append(key)
            size += rows
        # the columns the bands read (an accuracy-only result never reaches here: the report
        # refuses it first)
        metrics = sorted({drawn_metric(st) for st in result.studies})
        for b, batch in enumerate(batches):
            wanted = np.unique(np.concatenate([np.zeros(0, dtype=np.int64)]
                                              + [sets[key][0] for key in batch]))
            log, where = (s.fetch(wanted, metrics) if wanted.size else (None, wanted))
            by_number = np.argsort(where, kind="stable")
            numbers = where[by_number]
            for key in batch:
                nums, members = sets[key]
                rows_ = _rows_of(nums, numbers, by_number)
                for i, j in members:
                    st = result.studies[i]
                    c = st.cells[j]
                    if log is None or not rows_.size:
                        found[i, j] = CellData(c, None, None, None)
                        continue
                    if key not in shared:
                        shared[key] = (cell_band(log, rows_, "test_acc"),
                                       cell_band(log, rows_, "train_acc"))
                    found[i, j] = CellData(c, cell_band(log, rows_, drawn_metric(st)),
                                           *shared[key])
                    ranges[i] = ranges[i].joined(step_range(log, rows_))
            del log
            _trim()
            s.say(f"figures: cells read again, batch {b + 1}/{len(batches)} "
                  f"({wanted.size:,} runs)")
        return [assembled(st, [found[i, j] for j in range(len(st.cells))], ranges[i], result,
                          log_steps=log_steps)
                for i, st in enumerate(result.studies)]


def _rows_of(nums: np.ndarray, numbers: np.ndarray, by_number: np.ndarray) -> np.ndarray:
    """The rows of a read log holding the runs ``nums`` (whole-log numbers), in that order,
    those not read left out; ``numbers`` are the read runs' numbers sorted, ``by_number``
    their rows in that order."""
    k = np.searchsorted(numbers, nums)
    inside = k < numbers.size
    k, nums = k[inside], nums[inside]
    there = numbers[k] == nums
    rows: np.ndarray = by_number[k[there]]
    return rows


def open_log_parts(path: str | Path, config: AuditConfig, *, part_rows: int = PART_ROWS,
                   progress: Progress | None = None) -> LogParts:
    """The canonical Parquet file or hive dataset folder at ``path``, validated part by part
    under ``config`` as the claim commands validate a log (no metric columns required): its
    runs, conditions and summary, and its points left on disk (:class:`LogParts`). Raises
    :class:`LogFormatError` as the in-memory validation does."""
    return LogParts(_read_stream(path, dataclasses.replace(config, metrics=()), part_rows,
                                 progress, clocks=False))


def _read_stream(path: str | Path, cfg: AuditConfig, part_rows: int,
                 progress: Progress | None, *, clocks: bool, engine: Engine = THREADS
                 ) -> _Stream:
    """The log at ``path`` planned into parts of about ``part_rows`` rows and each part read
    and validated (and clocked on ``engine``, with ``clocks``): what the audit and the claims
    share."""
    from .limits import Limits, check_declared

    if isinstance(part_rows, bool) or not isinstance(part_rows, int) or part_rows < 1:
        raise ConfigError(f"{param_name('part_rows')} must be at least 1 (got {part_rows})",
                          option=param_name("part_rows"), code=ErrorCode.OPTION_OUT_OF_RANGE)
    refuse_special_file(Path(path))  # before any open: a FIFO would block it forever
    # the row cap guards memory, which parts bound; the column cap still holds for each part
    check_declared(path, dataclasses.replace(Limits.of(cfg), max_rows=2**62))
    if Path(path).is_dir():  # (the in-memory reads check in the loader)
        refuse_unreadable_entries(Path(path))
    s = _Stream(open_dataset(path), cfg, str(path), progress, engine)
    s.clocks = clocks
    s.plan_parts(part_rows)
    s.read_parts()
    return s


class LogParts:
    """A log validated part by part, for the claim commands: :attr:`log` holds the whole
    log's runs, conditions and summary (the in-memory validation's, without the points), and
    :meth:`map` computes something per run part by part, each part read and validated again.
    Memory is bounded by the part and the per-run results."""

    def __init__(self, stream: _Stream) -> None:
        self._s = stream
        self.log = stream.merged_log()
        stream.drop_records()

    @property
    def source(self) -> str:
        return self._s.source

    def map(self, fn: Callable[[LogTable, slice], _T], what: str = "") -> _T:
        """``fn(part, runs)`` for each part (``runs``: the part's runs in the whole log's
        numbering), joined: arrays concatenated, per-run dataclasses field by field."""
        s = self._s
        out: list[Any] = []
        for k, p in enumerate(s.parts):
            if not p.run_ids.size:
                continue
            log = s._validated(k)
            out.append(fn(log, s._runs_of(k)))
            del log
            _trim()
            s.say(f"part {k + 1}/{len(s.parts)}: {what or 'read again'}")
        if isinstance(out[0], np.ndarray):
            joined: _T = np.concatenate(out)  # type: ignore[assignment]
            return joined
        consumed: _T = _consume(out)
        return consumed


class _Stream:
    """One streamed audit: the dataset, its parts and what the whole log decided."""

    def __init__(self, ds: ParquetDataset, cfg: AuditConfig, source: str,
                 progress: Progress | None, engine: Engine = THREADS) -> None:
        self.ds, self.cfg, self.source, self.progress = ds, cfg, source, progress
        #: where the parts' clocks are computed (:mod:`grokaudit.engine`)
        self.engine = engine
        self.accuracy: dict[str, tuple[float, float, int, int]] = {}
        self.series: frozenset[str] = frozenset()
        self.bounds: list[tuple[int, int]] = []
        self.parts: list[_Part] = []
        #: the run ids' object addresses, sorted, and their numbers (:meth:`numbers`)
        self._ids: tuple[np.ndarray, np.ndarray] | None = None
        self._run_part: np.ndarray | None = None
        self._bases: list[int] = []  #: each part's first run in the whole log's numbering
        self.run_ids = np.zeros(0, dtype=object)
        #: ``grok_relative = study`` on the accuracy: thresholds against the study's ceiling
        self.relative = cfg.grok_relative == "study" and grok_levels(cfg)[0] == "test_acc"
        #: the clocks wait for the whole log's cells (``grid``) or ceilings
        self.deferred = self.relative or cfg.floor_window == "grid"
        self.grid: np.ndarray | None = None  #: ``grid``: each run's floor window start
        #: refusals met so far: (rank, part, error); the in-memory audit's first is raised
        self.errors: list[tuple[tuple[float, ...], int, LogFormatError]] = []
        #: clock each part as it is read (the audit); off for :class:`LogParts`
        self.clocks = True

    def say(self, line: str) -> None:
        if self.progress is not None:
            self.progress(line)

    # -- before the parts: runs and accuracies over the whole log -----------------------------

    def plan_parts(self, part_rows: int) -> None:
        """One pass over ``run`` and the accuracy columns: the parts (ranges of rows, cut
        where no run continues past the cut), run ids spelt two ways, the accuracy columns'
        extremes over the whole log."""
        ds = self.ds
        accs = [a for a in ACCURACY_COLUMNS if a in ds.columns]
        stats = {a: _Extremes() for a in accs}
        block_ids: list[np.ndarray] = []
        block_starts: list[np.ndarray] = []
        for i in range(len(ds.units)):
            t = ds.read([i], ["run", *accs])
            ids, starts = _run_blocks(t.column("run"), ds.files[ds.units[i].file])
            block_ids.append(ids)
            block_starts.append(starts + int(ds.starts[i]))
            for a in accs:
                stats[a].add(t.column(a))
            del t
        self.accuracy = {a: st.whole() for a, st in stats.items()}
        ids = np.concatenate(block_ids)
        starts = np.concatenate(block_starts)
        # a run that goes on in the next unit is one block
        new = np.r_[True, ids[1:] != ids[:-1]] if ids.size else np.zeros(0, dtype=bool)
        ids, starts = ids[new], starts[new]
        codes, runs = pd.factorize(ids)
        last_of = np.full(runs.size, -1, dtype=np.int64)
        np.maximum.at(last_of, codes, np.arange(ids.size))
        last = last_of[codes]  # per block, the last block of its run
        try:
            check_run_ids(np.asarray(runs, dtype=object), self.source)
        except LogFormatError as exc:  # refused in its turn, after the parts' own checks
            self.errors.append((_rank(exc, ()), -1, exc))
        # a cut may follow block k when no run seen so far has a block after k
        free = np.maximum.accumulate(last) == np.arange(ids.size)
        ends = np.r_[starts[1:], ds.rows]
        cuts = ends[free]
        first = 0
        while first < ds.rows:
            j = int(np.searchsorted(cuts, first + part_rows, side="left"))
            stop = int(cuts[min(j, cuts.size - 1)])
            self.bounds.append((first, stop))
            first = stop
        _trim()
        self.say(f"{ds.rows:,} rows, {runs.size:,} runs in {len(ds.units)} unit(s): "
                 f"{len(self.bounds)} part(s)")

    # -- the parts --------------------------------------------------------------------------

    def _validate(self, table: Owned, record: LogPart) -> LogTable:
        """The part handed over (``table`` the only reference to it: validation frees each
        column once read), validated as the whole log is."""
        cfg = self.cfg
        return build_log_table(table, path=self.source, acc_scale=cfg.acc_scale,
                               column_scales=column_scales(cfg),
                               on_duplicate=cfg.on_duplicate, metrics=cfg.metrics,
                               grok_on=cfg.grok_on, part=record)

    def _part(self, rows: tuple[int, int]) -> _Part:
        record = LogPart(self.accuracy, self.series)
        log = self._validate(Owned(self.ds.read_rows(*rows)), record)
        p = _Part(rows, log.run_ids, np.diff(log.offsets), log.summary, record,
                  tuple(log.series))
        metrics = list(self.cfg.metrics) or list(log.summary.metrics)
        if self.relative and log.n_runs:
            p.best = best_sustained(pack(log.test_acc, log), self.cfg.sustain)
        if log.n_runs and self.clocks and not self.deferred and not self.errors \
                and all(m in log.series for m in metrics):
            p.acc = accuracy_clocks(log, self.cfg, engine=self.engine)
            p.clocks = {m: metric_clocks(log, p.acc, m, self.cfg, engine=self.engine)
                        for m in metrics}
        p.duplicates = list(log.summary.duplicate_runs)
        p.twins = list(log.summary.accuracy_twins)
        del log
        return p

    def read_parts(self) -> None:
        """Every part validated and clocked; then the parts that read a column another part
        reads as a series are read again with it as a series."""
        names = (*self.ds.columns, *self.ds.partition_keys)
        for k, rows in enumerate(self.bounds):
            try:
                self.parts.append(self._part(rows))
            except LogFormatError as exc:
                # the in-memory validation checks stage by stage over the whole log: a later
                # part may hold what it refuses first
                self.errors.append((_rank(exc, names), k, exc))
                self.say(f"part {k + 1}/{len(self.bounds)}: refused ({exc.code})")
                continue
            self.series |= set(self.parts[-1].series)
            _trim()  # the part's points and temporaries, freed
            self.say(f"part {k + 1}/{len(self.bounds)}: {self.parts[-1].summary.rows_read:,} "
                     f"rows, {self.parts[-1].run_ids.size:,} runs")
        if self.errors:
            raise min(self.errors, key=lambda e: (e[0], e[1]))[2]
        again = [k for k, p in enumerate(self.parts) if not self.series <= set(p.series)]
        for k in again:
            self.parts[k] = self._part(self.parts[k].rows)
            self.say(f"part {k + 1}/{len(self.bounds)} read again: a column varies in "
                     "another part")

    # -- clocks that wait for the whole log ------------------------------------------------

    def _runs_of(self, k: int) -> slice:
        """Part ``k``'s runs in the whole log's numbering."""
        if len(self._bases) != len(self.parts) + 1:
            self._bases = np.r_[0, np.cumsum([p.run_ids.size for p in self.parts])].tolist()
        return slice(self._bases[k], self._bases[k + 1])

    def _validated(self, k: int) -> LogTable:
        return self._validate(Owned(self.ds.read_rows(*self.parts[k].rows)),
                              LogPart(self.accuracy, self.series))

    def grid_starts(self, cells: np.ndarray) -> np.ndarray:
        """Per run, the first step of its cell's floor window (``grid``): the cells' step
        grids gathered part by part (each part read again)."""
        pieces: list[tuple[np.ndarray, np.ndarray]] = []
        for k, p in enumerate(self.parts):
            if not p.run_ids.size:
                continue
            log = self._validated(k)
            pieces.append(grid_steps(cells[self._runs_of(k)][log.run_index], log.step))
            del log
            self.say(f"part {k + 1}/{len(self.parts)}: step grid read")
        ug, us = grid_steps(np.concatenate([g for g, _ in pieces]),
                            np.concatenate([u for _, u in pieces]))
        return grid_starts(ug, us.astype(np.float64), cells, self.cfg.floor_frac)

    def ceilings(self, studies: np.ndarray | None) -> Ceilings:
        """``grok_relative = study``: each study's ceiling over the whole log, and whether
        its best run settled (the best runs read again)."""
        best = np.concatenate([p.best for p in self.parts if p.best is not None])
        groups = np.zeros(best.size, dtype=np.int64) if studies is None else studies
        ceiling = study_ceilings(best, studies)
        heads: dict[int, int] = {}
        for g in np.unique(groups).tolist():
            rows = np.flatnonzero(groups == g)
            if not np.isnan(best[rows]).all():
                heads[g] = int(rows[int(np.nanargmax(best[rows]))])
        unsettled = np.zeros(best.size, dtype=bool)
        if heads:
            log, where = self.fetch(np.asarray(sorted(set(heads.values()))))
            A = pack(log.test_acc, log)
            at = {k: j for j, k in enumerate(where.tolist())}
            for g, k in heads.items():
                n = int(A.counts[at[k]])
                unsettled[groups == g] = ceiling_unsettled(
                    A.raw_values[at[k], :n], A.raw_steps[at[k], :n], float(best[k]),
                    self.cfg.floor_frac)
        c = Ceilings(best, ceiling, unsettled, False)
        return dataclasses.replace(c, any_used=bool(relative_use(c).any()))

    def clock_parts(self, metrics: Sequence[str], ceilings: Ceilings | None) -> None:
        """The clocks of every part (read again), with the whole log's grids and ceilings."""
        for k, p in enumerate(self.parts):
            if not p.run_ids.size:
                continue
            sl = self._runs_of(k)
            log = self._validated(k)
            p.acc = accuracy_clocks(log, self.cfg,
                                    ceilings=None if ceilings is None else ceilings.rows(sl),
                                    engine=self.engine)
            p.clocks = {m: metric_clocks(log, p.acc, m, self.cfg,
                                         grid_start=None if self.grid is None
                                         else self.grid[sl], engine=self.engine)
                        for m in metrics}
            del log
            self.say(f"part {k + 1}/{len(self.parts)}: clocks")

    # -- merged ------------------------------------------------------------------------------

    def merged_log(self) -> LogTable:
        """The whole log's runs, conditions and summary, without its points."""
        parts = self.parts
        loss = () if self.cfg.grok_on == "test_acc" else (self.cfg.grok_on,)
        ranges = [r for p in parts if (r := p.record.loss_range) is not None
                  and not math.isnan(r[0])]
        loss_differs = bool(ranges) and max(r[1] for r in ranges) > min(r[0] for r in ranges)
        for m in (*self.cfg.metrics, *loss):  # a --metric or --grok-on column set per run
            seen = [p.record.metric_changes[m] for p in parts if m in p.record.metric_changes]
            if seen and not any(c for c, _, _ in seen) and \
                    sum(n for _, n, _ in seen) > sum(r for _, _, r in seen) and \
                    (m not in loss or loss_differs):
                raise metric_not_a_series(m, self.source, grok_on=m in loss)
        if not any(p.run_ids.size for p in parts):
            raise no_run_long_enough(self.source)
        self.run_ids = np.concatenate([p.run_ids for p in parts])
        self._run_part = np.concatenate([np.full(p.run_ids.size, k, dtype=np.int64)
                                         for k, p in enumerate(parts)])
        names = sorted(parts[0].record.conditions)
        cond = {n: canonical_values(np.concatenate([p.record.conditions[n] for p in parts]))
                for n in names}
        conditions = pd.DataFrame(cond, index=pd.Index(self.run_ids, name="run"))
        dups = self._duplicates()
        summary = self._summary(dups, self._twins(dups))
        empty = np.zeros(0)
        first = parts[0].summary
        return LogTable(run_ids=self.run_ids, offsets=np.zeros(self.run_ids.size + 1,
                                                                dtype=np.int64),
                        step=np.zeros(0, dtype=np.int64), test_acc=empty,
                        train_acc=empty if "train_acc" in first.missing_values else None,
                        series={n: empty for n in parts[0].series}, conditions=conditions,
                        summary=summary)

    def _summary(self, duplicates: tuple[tuple[str, ...], ...],
                 twins: tuple[tuple[str, ...], ...] = ()) -> InputSummary:
        parts = [p.summary for p in self.parts]
        first = parts[0]
        joined = int(first.provenance.get("rows_joined") or 0)
        set_aside: dict[str, int] = {}
        for s in parts:
            for k, v in s.set_aside.items():
                if k != "joined_across_inputs":
                    set_aside[k] = set_aside.get(k, 0) + v
        if joined > 0:
            set_aside["joined_across_inputs"] = joined

        def total(key: str) -> dict[str, int]:
            out: dict[str, int] = {}
            for s in parts:
                for k, v in getattr(s, key).items():
                    out[k] = out.get(k, 0) + v
            return out

        scales: dict[str, Any] = {}
        given = first.provenance.get("accuracy_scale") or {}
        for s in parts:
            for k, v in s.accuracy_scale.items():
                if k not in scales:
                    scales[k] = dict(v)
                elif v == given.get(k):  # the provenance's, in every part: said once
                    continue
                elif "n_runs_at_most_1" in v:
                    w = scales[k]
                    w["n_runs_at_most_1"] += v["n_runs_at_most_1"]
                    w["runs_at_most_1"] = (w["runs_at_most_1"] + v["runs_at_most_1"])[:20]
        prov = first.provenance if self.ds.root.is_file() else self.ds.provenance
        return dataclasses.replace(
            first, source=self.source,
            rows_read=sum(s.rows_read - max(joined, 0) for s in parts) + max(joined, 0),
            rows_kept=sum(s.rows_kept for s in parts), set_aside=set_aside,
            runs_read=sum(s.runs_read for s in parts), runs_kept=sum(s.runs_kept for s in parts),
            runs_too_short=tuple(sorted(r for s in parts for r in s.runs_too_short)),
            missing_values=total("missing_values"),
            sorted_input=all(s.sorted_input for s in parts),
            conditions=tuple(sorted(self.parts[0].record.conditions)), provenance=prov,
            not_logged=total("not_logged"), accuracy_scale=scales,
            runs_without_accuracy=tuple(sorted(r for s in parts
                                               for r in s.runs_without_accuracy)),
            duplicate_runs=duplicates, accuracy_twins=twins)

    def drop_records(self) -> None:
        """The parts' records (conditions, fingerprints), dropped once merged and checked."""
        for p in self.parts:
            p.record = LogPart(p.record.accuracy)
        _trim()

    # -- read again: only the runs concerned --------------------------------------------------

    def fetch(self, runs: np.ndarray, columns: Sequence[str] | None = None
              ) -> tuple[LogTable, np.ndarray]:
        """The runs numbered ``runs`` (whole-log numbers), read again and validated as
        before; with each of the returned log's runs' whole-log number. ``columns``: only
        these per-step columns besides the run, step and accuracy columns, the grok
        criterion's and the audited metrics (the others, conditions included, are not read:
        the log returned has none)."""
        assert self._run_part is not None
        wanted = np.unique(np.asarray(runs, dtype=np.int64))
        names = [str(r) for r in self.run_ids[wanted]]
        ids = pa.array(names, type=pa.string())
        read = None if columns is None else list(dict.fromkeys(
            ["run", "step", *ACCURACY_COLUMNS, self.cfg.grok_on, *self.cfg.metrics, *columns]))
        tables = []
        for k in np.unique(self._run_part[wanted]).tolist():
            first, stop = self.parts[k].rows
            tables.append(self.ds.read_rows(first, stop, columns=read, runs=ids))
        table = Owned(pa.concat_tables(tables))
        tables.clear()  # the concatenated table holds the only reference to their columns
        _trim()  # the reader's buffers (the parts' whole row groups, before the filter)
        log = self._validate(table, LogPart(self.accuracy, self.series))
        number = dict(zip(names, wanted.tolist()))  # the runs read, not the whole log's
        return log, np.fromiter((number[str(r)] for r in log.run_ids.tolist()),
                                dtype=np.int64, count=log.n_runs)

    def numbers(self, ids: Sequence[Any]) -> np.ndarray:
        """Each run id's number in the whole log (int64), −1 for an id not in it.

        The audit names runs by the log's own id objects (the results' run ids are
        :attr:`run_ids`' objects), so they are found by identity first: a sorted array of
        the objects' addresses (8 bytes a run; a dict of a million ids held about 100 MiB
        while the figures were drawn). Ids that are other objects (a result made elsewhere)
        are found by value."""
        if self._ids is None:
            keys = np.fromiter(map(id, self.run_ids.tolist()), dtype=np.uint64,
                               count=self.run_ids.size)
            order = np.argsort(keys, kind="stable")
            self._ids = (keys[order], order.astype(np.int64))
        keys, order = self._ids
        ids = list(ids)
        q = np.fromiter(map(id, ids), dtype=np.uint64, count=len(ids))
        k = np.minimum(np.searchsorted(keys, q), max(keys.size - 1, 0))
        hit = (keys[k] == q) if keys.size else np.zeros(q.size, dtype=bool)
        out = np.where(hit, order[k] if keys.size else -1, -1).astype(np.int64)
        miss = np.flatnonzero(~hit)
        if miss.size:  # other objects (a result made elsewhere): by value, only these
            wanted = {str(ids[i]) for i in miss.tolist()}
            found = {str(r): n for n, r in enumerate(self.run_ids.tolist()) if str(r) in wanted}
            out[miss] = [found.get(str(ids[i]), -1) for i in miss.tolist()]
        return out

    def _duplicates(self) -> tuple[tuple[str, ...], ...]:
        """``DUPLICATE_RUN`` over the whole log: each part's own, and the runs of different
        parts with one fingerprint (:func:`~grokaudit.identity.run_fingerprints`, weighted),
        read again and compared exactly."""
        return self._across([p.record.fingerprints for p in self.parts],
                            {g for p in self.parts for g in p.duplicates},
                            lambda log: duplicate_runs(log.run_ids, log.offsets, log.step,
                                                       _per_step(log)))

    def _twins(self, duplicates: tuple[tuple[str, ...], ...]) -> tuple[tuple[str, ...], ...]:
        """The accuracy twins over the whole log (:func:`~grokaudit.identity.accuracy_twins`),
        as :meth:`_duplicates` finds the duplicates; none that the duplicates hold."""
        def find(log: LogTable) -> list[tuple[str, ...]]:
            return accuracy_twins(log.run_ids,
                                  logged_points(log.offsets, log.step, log.test_acc), None,
                                  duplicates)

        found = self._across([p.record.accuracy_prints for p in self.parts],
                             {g for p in self.parts for g in p.twins}, find,
                             max_group=MAX_TWIN_GROUP)
        return tuple(without_duplicates(found, duplicates))

    def _across(self, prints: list[np.ndarray | None], own: set[tuple[str, ...]],
                find: Callable[[LogTable], list[tuple[str, ...]]],
                max_group: int | None = None) -> tuple[tuple[str, ...], ...]:
        """Groups over the whole log: each part's own (``own``), and ``find`` on the runs of
        different parts that share a fingerprint (``prints``, per part), read again. With
        ``max_group``, runs sharing a fingerprint with more than that many are neither read
        again nor kept in a part's own group (as :func:`accuracy_twins` sets them aside over
        the whole log)."""
        if not all(f is not None for f in prints) or self.run_ids.size < 2:
            return tuple(sorted(own))
        h = np.concatenate([f for f in prints if f is not None])
        _, inv, cnt = np.unique(h, return_inverse=True, return_counts=True)
        inv = inv.ravel()
        assert self._run_part is not None
        order = np.argsort(inv, kind="stable")
        bounds = np.r_[0, np.cumsum(cnt)]
        across: list[int] = []
        if max_group is not None and own and (cnt > max_group).any():
            crowded = {str(r) for r in self.run_ids[cnt[inv] > max_group].tolist()}
            own = {g for g in own if not crowded & set(g)}
        for grp in np.flatnonzero(cnt > 1).tolist():
            if max_group is not None and cnt[grp] > max_group:
                continue
            members = order[bounds[grp]:bounds[grp + 1]]
            if np.unique(self._run_part[members]).size > 1:
                across += members.tolist()
        if not across:
            return tuple(sorted(own))
        log, _ = self.fetch(np.asarray(across))
        found = find(log)
        again = {str(r) for r in self.run_ids[np.asarray(across)]}
        own = {g for g in own if not again & set(g)}
        self.say(f"{len(set(across))} run(s) of different parts with one fingerprint "
                 "compared exactly")
        return tuple(sorted(own | set(found)))

    def horizon(self, metric: str, mc: MetricClocks, acc: AccuracyClocks,
                cells: np.ndarray) -> tuple[MetricClocks, HorizonCheck | None]:
        """The horizon check of ``metric``: the reference runs read again; the floors of runs
        it finds not converged recomputed from their points, read again."""
        ref = horizon_references(mc, cells, self.cfg)
        if ref is None:
            return mc, None
        need = references_compared(mc, *ref)
        pts: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        if need.size:
            log, where = self.fetch(need)
            for j, k in enumerate(where.tolist()):
                a, b = int(log.offsets[j]), int(log.offsets[j + 1])
                pts[k] = (log.step[a:b], log.series[metric][a:b])
        hc = horizon_check(None, mc, cells, self.cfg, points=lambda k: pts[k])
        if hc is None or not hc.not_converged.any():
            return mc, hc
        log, where = self.fetch(np.flatnonzero(hc.not_converged))
        again = metric_clocks(log, _take(acc, where), metric, self.cfg,
                              not_converged=hc.not_converged[where],
                              grid_start=None if self.grid is None else self.grid[where],
                              engine=self.engine)
        self.say(f"{metric}: {where.size} short run(s) recomputed against a longer sibling")
        return _put(mc, where, again), hc


#: The order of the validation's checks (:func:`~grokaudit.schema.build_log_table`): run ids
#: and steps, the accuracies' types and infinities column by column, their ranges, the other
#: columns one by one, duplicate rows.
_STEP_CHECKS: dict[tuple[ErrorCode, str | None], int] = {
    (ErrorCode.MISSING_VALUES, "run"): 0, (ErrorCode.BAD_COLUMN_TYPE, "step"): 1,
    (ErrorCode.MISSING_VALUES, "step"): 2, (ErrorCode.NON_INTEGER_STEP, "step"): 3,
    (ErrorCode.STEP_OUT_OF_RANGE, "step"): 3, (ErrorCode.NEGATIVE_STEP, "step"): 4}


def _rank(exc: LogFormatError, names: Sequence[str]) -> tuple[float, ...]:
    """Where the in-memory validation would raise ``exc`` in its order of checks."""
    code, col = exc.code, exc.column
    if (code, col) in _STEP_CHECKS:
        return (2, _STEP_CHECKS[(code, col)])
    if code is ErrorCode.RUN_ID_AMBIGUOUS:
        return (2, 9)
    if col in ACCURACY_COLUMNS:
        i = ACCURACY_COLUMNS.index(col)
        return (4, i) if code is ErrorCode.ACCURACY_OUT_OF_RANGE else (
            3, i, 0 if code is ErrorCode.BAD_COLUMN_TYPE else 1)
    if code is ErrorCode.DUPLICATE_ROWS:
        return (6,)
    if col is not None and col in names:
        return (5, list(names).index(col))
    return (1,)  # the columns themselves: every part refuses them alike


class _Extremes:
    """An accuracy column's largest and smallest value and its counts above 1.5 and 1, added
    up unit by unit (as :func:`~grokaudit.schema.build_log_table` reads them whole)."""

    def __init__(self) -> None:
        self.hi, self.lo, self.pct, self.frac, self.any = -math.inf, math.inf, 0, 0, False

    def add(self, col: pa.ChunkedArray) -> None:
        t = col.type
        if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)):
            return  # all missing (null type), or refused with its type by the validation
        if pa.types.is_boolean(t) or pa.types.is_float16(t):
            col = col.cast(pa.float64())
        # as the validation reads them (NaN and missing ignored; an all-NaN column has none)
        mm = pc.min_max(col).as_py()
        lo, hi = mm["min"], mm["max"]
        if hi is None or math.isnan(hi):
            return
        self.hi, self.lo, self.any = max(self.hi, float(hi)), min(self.lo, float(lo)), True
        if hi > FRACTION_MAX:  # counted only where a value exceeds them
            self.frac += int(pc.sum(pc.greater(col, FRACTION_MAX)).as_py() or 0)
        if hi > PERCENT_MIN:
            self.pct += int(pc.sum(pc.greater(col, PERCENT_MIN)).as_py() or 0)

    def whole(self) -> tuple[float, float, int, int]:
        if not self.any:
            return math.nan, math.nan, self.pct, self.frac
        return self.hi, self.lo, self.pct, self.frac


def _run_blocks(run: pa.ChunkedArray, path: Path | str | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """The blocks of consecutive rows of one run in a unit (of file ``path``): their run ids
    (text) and first rows. Missing ids are left to the validation of the part (which refuses
    them)."""
    if run.null_count:
        if spelled_as_python(run.type):  # "" is no float: the ids as text first
            run = run_id_text(run)
        run = run.fill_null("")
    enc, texts = encode_run_ids(run, path)
    codes = np.asarray(enc.indices.to_numpy(zero_copy_only=False))
    if codes.size == 0:
        return np.zeros(0, dtype=object), np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    names = np.asarray(texts.to_numpy(zero_copy_only=False), dtype=object)
    return names[codes[starts]], starts.astype(np.int64)


# -- per-run results: concatenated, taken, put back --------------------------------------------

def _consume(objs: list[_T]) -> _T:
    """Per-run result dataclasses (clocks) of consecutive runs, as one; ``objs`` is emptied
    and each field's parts are dropped once joined (the caller holds no other reference)."""
    first = objs[0]
    if len(objs) == 1:
        return first
    kind = type(first)
    names = [f.name for f in dataclasses.fields(first)]  # type: ignore[arg-type]
    rows = [{n: getattr(o, n) for n in names} for o in objs]
    objs.clear()
    del first
    out: dict[str, Any] = {}
    for name in names:
        vals = [r.pop(name) for r in rows]
        v0 = vals[0]
        if isinstance(v0, np.ndarray):
            out[name] = np.concatenate(vals)
        elif isinstance(v0, Event):
            out[name] = Event.concat(vals)
        elif isinstance(v0, tuple):  # (grok, full) levels
            out[name] = tuple(np.concatenate([v[i] for v in vals]) for i in range(len(v0)))
        elif v0 is None or isinstance(v0, str):
            out[name] = v0
        else:  # pragma: no cover - a per-run field of a type not handled above
            raise TypeError(f"cannot join field {name} of {kind.__name__}")
        del vals, v0
        _trim()  # the parts' arrays of this field, freed: their pages back to the OS
    return kind(**out)


def _per_step(log: LogTable) -> list[np.ndarray]:
    """A log's per-step columns as the duplicate search reads them: the test accuracy, the
    train accuracy when logged, the series."""
    return [log.test_acc] + ([log.train_acc] if log.train_acc is not None else []) + list(
        log.series.values())


#: Per-run arrays the clocks and the horizon check work with and no reduction reads
#: (cells, verdicts, findings, the run table): dropped before the reduction (emptied), so
#: that the run table is built beside the clocks it reads and not beside these too.
_WORKING = {"index", "w2_lower", "w2_points", "w1_points", "m_grok_step", "span_first",
            "span_last"}


def _reduced(obj: _T, grok: Event | None = None) -> _T:
    """Clocks without their working arrays (:data:`_WORKING`, emptied); ``grok``: the
    Event the metric clocks share with the accuracy clocks (as in memory)."""
    empty = np.zeros(0, dtype=np.int64)
    out: dict[str, Any] = {}
    for f in dataclasses.fields(obj):  # type: ignore[arg-type]
        v = getattr(obj, f.name)
        if f.name == "grok" and grok is not None:
            v = grok
        elif f.name in _WORKING and isinstance(v, np.ndarray):
            v = empty
        elif isinstance(v, Event):
            v = dataclasses.replace(v, index=empty)
        out[f.name] = v
    return type(obj)(**out)


def _trim() -> None:
    """Return freed memory to the OS: Arrow's pool (a part's columns) and the C heap's free
    pages (glibc; the parts' per-run arrays are small enough to live in the heap, where freed
    space is otherwise kept)."""
    pa.default_memory_pool().release_unused()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, looked up once; None elsewhere."""
    import ctypes
    import ctypes.util

    try:
        fn: Callable[[int], int] = ctypes.CDLL(ctypes.util.find_library("c")
                                               or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None  # not glibc: nothing to do
    return fn


def _map_fields(obj: _T, fn: Callable[[np.ndarray, str], np.ndarray]) -> _T:
    out: dict[str, Any] = {}
    for f in dataclasses.fields(obj):  # type: ignore[arg-type]
        v = getattr(obj, f.name)
        if isinstance(v, np.ndarray):
            out[f.name] = fn(v, f.name)
        elif isinstance(v, Event):
            out[f.name] = Event(*(fn(getattr(v, g), f"{f.name}.{g}")
                                  for g in ("value", "lower", "upper", "index")))
        elif isinstance(v, tuple):
            out[f.name] = tuple(fn(a, f"{f.name}.{i}") for i, a in enumerate(v))
        else:
            out[f.name] = v
    return type(obj)(**out)


def _take(obj: _T, idx: np.ndarray) -> _T:
    """The runs ``idx`` of a per-run result."""
    return _map_fields(obj, lambda a, _: a[idx])


def _put(obj: _T, idx: np.ndarray, sub: Any) -> _T:
    """``obj`` with runs ``idx`` replaced by the runs of ``sub`` (same fields), in place
    where its arrays are writeable (``obj`` is not to be read again)."""
    flat: dict[str, np.ndarray] = {}

    def collect(a: np.ndarray, name: str) -> np.ndarray:
        flat[name] = a
        return a

    _map_fields(sub, collect)

    def put(a: np.ndarray, name: str) -> np.ndarray:
        # in place: the whole log's arrays were made here (no second copy of the clocks)
        b: np.ndarray = a if a.flags.writeable else a.copy()
        b[idx] = flat[name]
        return b

    return _map_fields(obj, put)
