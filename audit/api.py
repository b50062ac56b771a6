"""The audit pipeline: canonical table → per-run clocks → cells → study verdicts → AuditResult.

``audit_table`` and ``audit_path`` are the Python API; ``grokaudit check`` is a thin shell over
``audit_path``. Each stage is one function with a typed input and output; no stage re-reads the
file.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, cast

import numpy as np
import pandas as pd
import pyarrow as pa

from .blocks import run_each
from .cells import (
    apply_high_floor_gate,
    build_accuracy_runs,
    run_table_parts,
    summarize_accuracy_cell,
    summarize_cell,
)
from .clocks import (
    TC_CENSORED,
    TC_LEFT_CENSORED,
    TC_OK,
    AccuracyClocks,
    Event,
    MetricClocks,
    accuracy_clocks,
    metric_clocks,
)
from .config import RELATIVE_MIN_CEILING, AuditConfig, make_config
from .design import Axis, Design, cell_value
from .design import infer_axis as infer_axis  # `inspect` reads the axis through the API
from .engine import THREADS, Engine
from .horizons import HorizonCheck, horizon_check
from .identity import describe_duplicates
from .kernels import NUMPY, Kernel
from .reasons import Reason, Severity
from .refusals import refuse_grok_on_clash
from .refusals import validated_log as validated_log  # the one refusal stage
from .results import (
    AuditResult,
    CellSummary,
    Finding,
    StudyResult,
    format_number,
    sort_findings,
)
from .roles import (
    PERCENT_MIN,
    PERCENT_MIN_POINTS,
    is_bare_accuracy,
    name_tokens,
    nearly_unique,
)
from .runtable import RunTable
from .schema import InputSummary, LogTable, Owned
from .study import (
    QUANTITIES,
    clock_verdict,
    endpoint_finding,
    make_finding,
    ordering,
    reference_evidence,
    snapshot_findings,
)
from .text import cell_label, safe
from .version import __version__

_CENSORED_TC = TC_CENSORED

#: Per-run codes that are summarized as one finding per cell.
_RUN_CODES = (Reason.NO_GROK, Reason.NO_MEMORIZATION, Reason.GROK_NOT_SUSTAINED,
              Reason.NOT_FULLY_GENERALIZED,
              Reason.FLOOR_TOO_FEW_POINTS, Reason.FLOOR_NOISY, Reason.FLOOR_INDETERMINATE,
              Reason.METRIC_NOT_AT_GROK, Reason.NO_COMPRESSION, Reason.COMPRESSION_UNKNOWN,
              Reason.COMPRESSION_NEVER_SETTLED, Reason.COMPRESSION_SETTLED_IN_FINAL_WINDOW,
              Reason.REBOUND, Reason.COMPRESSION_BEFORE_GROK, Reason.NONPOSITIVE_FLOOR)


def audit_path(path: str | Path, config: AuditConfig | None = None, *,
               engine: Engine | str = THREADS, kernel: Kernel | str = NUMPY,
               **options: Any) -> AuditResult:
    """Audit a log file or folder: a canonical table (Parquet, CSV, TSV, JSONL), a folder of
    Parquet shards, or any format an adapter reads (``grokaudit formats``).

    ``options`` are config fields (``by="rho"``, ``metrics=["emb_erank"]``, ``cell=["arch"]``,
    ``profile="reference"``…) applied over ``config``. ``engine`` is where the per-run clocks
    are computed (:mod:`grokaudit.engine`; the result is the same on any); ``kernel`` the
    validation passes' kernel (:mod:`grokaudit.kernels`: ``auto`` is decided from the log's
    rows; the result is the same on any). Returns the :class:`AuditResult`.
    """
    from .limits import Limits
    from .loader import read_source
    from .readers import ADAPTERS
    from .trail import HashAhead, make_trail

    cfg = _config(config, options)
    engine, kernel = _engine_and_kernel(engine, kernel)  # refused before any read
    # the input is handed over (Owned): validation frees each column once it has read it and
    # hands Arrow's freed pages back, so the log is never held twice
    limits = Limits.of(cfg)
    # the trail's sha256 of the input is computed while the audit runs
    with HashAhead([str(path)]) as hashes:
        # no local name holds the input (it would outlive its columns); the adapters'
        # registry reads every input that is not a canonical table
        source = read_source(path, limits=limits, readers=ADAPTERS)
        kernel = kernel.for_rows(source.num_rows)
        owned = Owned(source)
        del source  # the input lives only in `owned`, which hands it to validation
        result = audit_log(validated_log(owned, cfg, str(path), kernel=kernel), cfg,
                           engine=engine, kernel=kernel)
        return dataclasses.replace(result, trail=make_trail(cfg, version=__version__,
                                                            inputs=hashes,
                                                            kernel=kernel.name))


def audit_table(table: pd.DataFrame | pa.Table | LogTable, config: AuditConfig | None = None, *,
                source: str | None = None, engine: Engine | str = THREADS,
                kernel: Kernel | str = NUMPY, **options: Any) -> AuditResult:
    """Audit a canonical table (a DataFrame, an Arrow table, or an already validated
    :class:`LogTable`). See :func:`audit_path`."""
    cfg = _config(config, options)
    engine, kernel = _engine_and_kernel(engine, kernel)
    if isinstance(table, LogTable):
        return audit_log(table, cfg, engine=engine,
                         kernel=kernel.for_rows(int(table.offsets[-1])))
    kernel = kernel.for_rows(table.num_rows if isinstance(table, pa.Table) else len(table))
    return audit_log(validated_log(table, cfg, source, kernel=kernel), cfg, engine=engine,
                     kernel=kernel)


def _engine_and_kernel(engine: Engine | str, kernel: Kernel | str) -> tuple[Engine, Kernel]:
    """An engine and a kernel given by name (``engine="ray"``, ``kernel="numba"``) built as
    the command line builds them: an unknown name is ``INVALID_OPTION``, a missing extra
    ``MISSING_EXTRA``, before any work."""
    if isinstance(engine, str):
        from .engine import engine_named

        engine = engine_named(engine)
    if isinstance(kernel, str):
        from .kernels import kernel_named

        kernel = kernel_named(kernel)
    return engine, kernel


def _config(config: AuditConfig | None, options: Mapping[str, Any]) -> AuditConfig:
    if config is None:
        return make_config(**dict(options))
    if options:
        from .config import replace

        opts = {k: (tuple(v) if isinstance(v, list) else v) for k, v in options.items()}
        return replace(config, **opts)
    return config


def audit_log(log: LogTable, cfg: AuditConfig, *, engine: Engine = THREADS,
              kernel: Kernel = NUMPY) -> AuditResult:
    """Audit a validated :class:`LogTable`. Without a metric (none named, none found) the
    accuracy clocks alone are audited (``COMPRESSION_NOT_ASSESSED``). The per-run clocks are
    computed on ``engine`` (:mod:`grokaudit.engine`: threads of this process by default, or
    Ray tasks), their passes over the points by ``kernel`` (:mod:`grokaudit.clockloops` with
    numba; the same result on either); the rest of the audit runs here."""
    plan = audit_plan(log, cfg)
    acc = accuracy_clocks(log, cfg, plan.study_ids, engine=engine, kernel=kernel)
    # the runs of a cell share its step grid (v1.5)
    groups = plan.cell_ids if cfg.floor_window == "grid" else None
    mclocks: dict[str, MetricClocks] = {}
    horizons: dict[str, HorizonCheck | None] = {}
    for m in plan.metrics:
        mc = metric_clocks(log, acc, m, cfg, groups=groups, engine=engine, kernel=kernel)
        hc = horizon_check(log, mc, plan.cell_ids, cfg)
        if hc is not None and hc.not_converged.any():
            # a sibling shows the metric still moving after these runs stopped: their floors
            # are indeterminate, and every stage after the floor follows
            mc = metric_clocks(log, acc, m, cfg, groups=groups, not_converged=hc.not_converged,
                               engine=engine, kernel=kernel)
        mclocks[m], horizons[m] = mc, hc
    return reduce_audit(log, cfg, plan, acc, mclocks, horizons)


@dataclasses.dataclass(frozen=True)
class AuditPlan:
    """What an audit reads before any clock: the metrics, the design (axis, outcomes) and
    each run's study and cell."""

    metrics: tuple[str, ...]  #: empty: no metric, an accuracy-only audit
    axis: str | None
    outcomes: tuple[str, ...]
    study_ids: np.ndarray | None  #: per run, its study's number (None: one study)
    cell_ids: np.ndarray  #: per run, its cell's number


def audit_plan(log: LogTable, cfg: AuditConfig) -> AuditPlan:
    """The metrics, design and cells of ``log`` under ``cfg`` (refusals before any clock).
    Reads the runs' conditions and the summary only, never a point. No metric named and none
    found: no metric, an accuracy-only audit (a metric named but not in the log was refused
    as ``METRIC_NOT_FOUND`` when the log was validated)."""
    metrics = list(cfg.metrics) or list(log.summary.metrics)
    refuse_grok_on_clash(log, cfg)
    cond = log.conditions
    design = Design.validate(log, axes=[Axis(cfg.by)] if cfg.by else [], cell=cfg.cell,
                             infer=True)
    design.refuse_pooling(cond)
    axis, outcomes = design.axis, list(design.outcomes)

    study_ids = (cond.reset_index(drop=True).groupby(list(cfg.cell), sort=True, dropna=False)
                 .ngroup().to_numpy(dtype=np.int64) if cfg.cell else None)
    keys = [*cfg.cell, *([axis] if axis is not None else [])]
    cell_ids = (cond.reset_index(drop=True).groupby(
        keys, sort=False, dropna=False).ngroup().to_numpy(dtype=np.int64) if keys
        else np.zeros(log.n_runs, dtype=np.int64))
    return AuditPlan(tuple(metrics), axis, tuple(outcomes), study_ids, cell_ids)


def reduce_audit(log: LogTable, cfg: AuditConfig, plan: AuditPlan, acc: AccuracyClocks,
                 mclocks: Mapping[str, MetricClocks],
                 horizons: Mapping[str, HorizonCheck | None]) -> AuditResult:
    """The studies, cells, verdicts and findings, reduced from the per-run clocks (reads the
    runs' ids and conditions and the summary of ``log``, never a point)."""
    axis, outcomes, metrics = plan.axis, list(plan.outcomes), plan.metrics
    cond = log.conditions
    studies: list[StudyResult] = []
    extra: list[Finding] = []
    run_ids = np.asarray(log.run_ids, dtype=object)
    frame = cond.reset_index(drop=True)  # a new frame: the column added below is its own
    frame["__i"] = np.arange(log.n_runs)
    study_groups = (frame.groupby(list(cfg.cell), sort=True, dropna=False)
                    if cfg.cell else [((), frame)])
    for _, sframe in study_groups:
        # the study's values as its runs hold them (pandas may give a group of integers beyond
        # 2**53 beside a missing value a float key, which would print two studies alike)
        study_key = {c: cell_value(sframe[c].iloc[0]) for c in cfg.cell}
        if metrics:
            these = [_audit_study(study_key, m, axis, sframe, run_ids, acc, mclocks[m], cfg,
                                  outcomes, horizons[m]) for m in metrics]
            nothing = _nothing_auditable(study_key, these)
        else:  # no metric: the accuracy clocks only
            these = [_accuracy_study(study_key, axis, sframe, run_ids, acc, cfg, outcomes)]
            nothing = _nothing_timed(study_key, these[0])
        if nothing is not None:
            extra.append(nothing)
            these = [dataclasses.replace(
                st, verdict_evidence={**st.verdict_evidence, "nothing_auditable": True})
                for st in these]
        studies.extend(these)
        ceiling = _ceiling_finding(study_key, sframe, run_ids, acc, cfg)
        if ceiling is not None:
            extra.append(ceiling)

    if not metrics:
        extra.append(_compression_not_assessed(log, cfg))
    findings: list[Finding] = input_findings(log) + extra
    for s in studies:
        findings.extend(s.findings)
    findings_t = sort_findings(findings)
    return AuditResult(version=__version__, config=cfg.to_dict() | {"axis": axis},
                       input=log.summary.to_dict(), studies=tuple(studies), findings=findings_t,
                       fail_on=tuple(cfg.fail_on))


def _nothing_auditable(study_key: Mapping[str, Any], studies: Sequence[StudyResult]
                       ) -> Finding | None:
    """``NOTHING_AUDITABLE`` for one study (one group of ``--cell``): for every audited metric,
    no run grokked or no cell passes its gates -- no clock, ordering or verdict was assessed,
    so the result must not read as "the metric is fine"."""
    per: dict[str, dict[str, int]] = {}
    for s in studies:
        grokked = sum(c.n_grokked for c in s.cells)
        passing = sum(1 for c in s.cells if c.passes)
        if grokked and passing:
            return None
        per[str(s.metric)] = {"grokked_runs": grokked, "passing_cells": passing,
                              "cells": len(s.cells), "runs": sum(c.n_runs for c in s.cells)}
    if not per:
        return None
    if all(v["grokked_runs"] == 0 for v in per.values()):
        why = "no run grokked"
    else:
        why = "no cell passes its gates (" + ", ".join(
            f"{m}: 0 of {v['cells']}" for m, v in sorted(per.items())) + ")"
    return make_finding(
        Reason.NOTHING_AUDITABLE, "study", {"study": study_key, "metric": None},
        evidence={"metrics": per},
        message=(f"nothing could be audited: {why}; no clock, ordering or verdict was assessed, "
                 "so no finding here says the metric is sound (the gates and per-run findings "
                 "below say why)"))


def _nothing_timed(study_key: Mapping[str, Any], study: StudyResult) -> Finding | None:
    """``NOTHING_AUDITABLE`` for one study of an accuracy-only audit: no run grokked, or no
    cell passes its accuracy gates -- no t_grok ordering was assessed (and no metric was
    audited), so the result must not read as "the grok clock is sound"."""
    grokked = sum(c.n_grokked for c in study.cells)
    passing = sum(1 for c in study.cells if c.passes)
    if grokked and passing:
        return None
    why = ("no run grokked" if not grokked
           else f"no cell passes its gates (0 of {len(study.cells)})")
    counts = {"grokked_runs": grokked, "passing_cells": passing, "cells": len(study.cells),
              "runs": sum(c.n_runs for c in study.cells)}
    return make_finding(
        Reason.NOTHING_AUDITABLE, "study", {"study": study_key, "metric": None},
        evidence={"metrics": {}, "accuracy": counts},
        message=(f"nothing could be audited: {why}; no ordering was assessed and no metric was "
                 "audited (COMPRESSION_NOT_ASSESSED), so no finding here says the grok clock "
                 "is sound (the gates and per-run findings below say why)"))


#: The per-step columns a ``COMPRESSION_NOT_ASSESSED`` finding names (one line, never 15 000).
_SHOWN_COLUMNS = 20


def _compression_not_assessed(log: LogTable, cfg: AuditConfig) -> Finding:
    """``COMPRESSION_NOT_ASSESSED``: no metric was named and none was found, so only the
    accuracy clocks were audited; its evidence names the per-step columns present that
    ``--metric`` may name (all but a loss the grok is read on)."""
    cols = sorted(c for c in log.series if c != cfg.grok_on)
    shown = ", ".join(safe(c) for c in cols[:_SHOWN_COLUMNS]) or "none"
    if len(cols) > _SHOWN_COLUMNS:
        shown += f", … ({len(cols)} in all; `grokaudit inspect` lists them)"
    return make_finding(
        Reason.COMPRESSION_NOT_ASSESSED, "input", {"study": {}, "metric": None},
        evidence={"per_step_columns": cols[:_SHOWN_COLUMNS], "n_per_step_columns": len(cols),
                  "not_assessed": list(_NOT_ASSESSED), "fix": "--metric COLUMN"},
        message=("no representation metric column found: the accuracy clocks alone were "
                 "audited (t_mem, t_grok, sustained, full generalization, the t_grok "
                 "ordering); the compression part (" + ", ".join(_NOT_ASSESSED)
                 + ") was not assessed; pass --metric COLUMN to audit it (per-step columns "
                 f"present: {shown})"))


#: What an accuracy-only audit does not assess: every quantity a metric decides.
_NOT_ASSESSED = ("floor", "m_grok", "t_compress", "lag", "rel_lag", "frac_pre", "inflation",
                 "the snapshot findings", "the clock verdict")


def _ceiling_finding(study_key: Mapping[str, Any], sframe: pd.DataFrame, run_ids: np.ndarray,
                     acc: AccuracyClocks, cfg: AuditConfig) -> Finding | None:
    """``ACCURACY_CEILING`` for one study. Without ``grok_relative``: no run reaches the grok
    threshold but the test accuracy settles below it (the best final-window median is at
    least 0.5) — the threshold, not the runs, decides ``NO_GROK``. With it: which levels the
    study was judged at, or why it kept the absolute ones."""
    if cfg.grok_on != "test_acc":
        return None
    rows = sframe["__i"].to_numpy(dtype=np.int64)
    if rows.size == 0:
        return None
    names = run_ids[rows]
    base = {"study": study_key, "metric": None}
    if cfg.grok_relative == "study":
        best = acc.best_sustained[rows] if acc.best_sustained is not None else None
        if best is None or np.isnan(best).all():
            return None
        k = int(np.nanargmax(best))
        c = float(best[k])
        if c >= 1.0:
            return None
        ev = {"ceiling": c, "run": str(names[k]), "grok_threshold": cfg.grok_threshold,
              "full_threshold": cfg.full_threshold}
        if acc.ceiling_unsettled is not None and bool(acc.ceiling_unsettled[rows[0]]):
            return make_finding(
                Reason.ACCURACY_CEILING, "study", base,
                evidence=ev | {"relative": False, "unsettled": True},
                message=(f"the study's best test accuracy ({format_number(c)}, run "
                         f"{safe(names[k])}) has not settled at the end of the log: it is no "
                         "ceiling, only a lower bound of one; the absolute thresholds are "
                         "kept"))
        if acc.levels is not None and c >= RELATIVE_MIN_CEILING:
            g, f = float(acc.levels[0][rows[0]]), float(acc.levels[1][rows[0]])
            return make_finding(
                Reason.ACCURACY_CEILING, "study", base, severity=Severity.INFO,
                evidence=ev | {"grok_level": g, "full_level": f, "relative": True},
                message=(f"the study's best sustained test accuracy is {format_number(c)} "
                         f"(run {safe(names[k])}): t_grok is read at {format_number(g)} and "
                         f"full generalization at {format_number(f)} (--grok-relative study)"))
        return make_finding(
            Reason.ACCURACY_CEILING, "study", base,
            evidence=ev | {"relative": False},
            message=(f"the study's best sustained test accuracy is {format_number(c)}, below "
                     f"{RELATIVE_MIN_CEILING}: no ceiling to read the thresholds against; the "
                     "absolute thresholds are kept"))
    if not acc.t_grok.censored[rows].all():
        return None
    final = acc.final_test_acc[rows]
    if np.isnan(final).all():
        return None
    k = int(np.nanargmax(final))
    c = float(final[k])
    if not (RELATIVE_MIN_CEILING <= c < cfg.grok_threshold):
        return None
    return make_finding(
        Reason.ACCURACY_CEILING, "study", base,
        evidence={"best_final_test_acc": c, "run": str(names[k]),
                  "grok_threshold": cfg.grok_threshold, "n_runs": int(rows.size)},
        message=(f"no run reaches test_acc {format_number(cfg.grok_threshold)}, but the test "
                 f"accuracy settles below it (best final median {format_number(c)}, run "
                 f"{safe(names[k])}): the threshold, not the runs, decides NO_GROK; "
                 "--grok-relative study reads the thresholds against the study's ceiling, or "
                 "lower --grok-threshold"))


def _varying_outcomes(sframe: pd.DataFrame, outcomes: Sequence[str]) -> list[str]:
    """Outcomes that take more than one value but repeat across runs (3 values over 6 runs):
    what a setting looks like when its name reads like a result."""
    out = []
    for c in outcomes:
        if c in sframe.columns:
            vals = sframe[c].tolist()
            if sframe[c].nunique(dropna=True) > 1 and not nearly_unique(vals):
                out.append(str(c))
    return sorted(out)


#: The runs per cell, on average, from which a study's cells and run table are computed side
#: by side on the thread pool (:func:`_study_runs`): below it the cells' work is mostly
#: Python, and two threads contending for the interpreter are slower than one.
CELLS_SIDE_BY_SIDE_RUNS = 20_000


class _StudyRuns(NamedTuple):
    """A study's runs in its order (cells in axis order, runs by id within a cell)."""

    cells: tuple[CellSummary, ...]  #: with every gate (the high-floor one included)
    runs: RunTable
    bounds: np.ndarray  #: cell k holds runs ``bounds[k]:bounds[k+1]``
    rows: np.ndarray  #: each run's row in the clock arrays
    cell_rows: list[np.ndarray]  #: each cell's rows in the clock arrays
    run_names: np.ndarray  #: each run's id by its row in the clock arrays (object array)


def _study_runs(axis: str | None, sframe: pd.DataFrame, all_ids: np.ndarray,
                acc: AccuracyClocks, mc: MetricClocks | None, cfg: AuditConfig,
                horizon: HorizonCheck | None) -> _StudyRuns:
    """The study's cells and run table: one lexsort, no per-cell pandas work. ``all_ids``:
    the whole log's run ids, an object array of Python strings (the log's own objects: a
    pandas column of them would be copied as text and back). ``mc`` None: no metric, the
    cells and runs of an accuracy-only audit."""
    axis_vals = sframe[axis].to_numpy() if axis is not None else np.zeros(len(sframe))
    rows = sframe["__i"].to_numpy(dtype=np.int64)
    names = all_ids[rows]
    order = np.lexsort((names, axis_vals))
    av_sorted = axis_vals[order]
    bounds = np.flatnonzero(np.r_[True, av_sorted[1:] != av_sorted[:-1], True])
    run_rows = rows[order]
    sorted_names = names[order]  # the runs' own id objects, in the study's order
    run_ids = sorted_names.tolist()
    spans = list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))
    # the cells' axis values and rows, in order
    cell_values = [cell_value(av_sorted[lo]) if axis is not None else None for lo, _ in spans]
    cell_rows = [run_rows[lo:hi] for lo, hi in spans]
    cell_index = np.repeat(np.arange(bounds.size - 1), np.diff(bounds))

    # the run table's parts (a metric's: five, each gathering columns into the study's order)
    parts: Sequence[Callable[[], Any]]
    assemble: Callable[[Sequence[Any]], RunTable]
    if mc is None:
        parts = [functools.partial(build_accuracy_runs, sorted_names, cell_values, cell_index,
                                   acc, run_rows)]
        assemble = operator.itemgetter(0)
    else:
        parts, assemble = run_table_parts(sorted_names, cell_values, cell_index, acc, mc,
                                          run_rows, reference=cfg.profile == "reference")

    def cell(k: int) -> CellSummary:
        (lo, hi), rr = spans[k], cell_rows[k]
        return (summarize_accuracy_cell(cell_values[k], tuple(run_ids[lo:hi]), rr, acc, cfg)
                if mc is None else
                summarize_cell(cell_values[k], tuple(run_ids[lo:hi]), rr, acc, mc, cfg,
                               None if horizon is None else horizon.short[rr]))

    # the run table's parts and each cell read the clocks and write nothing shared: where the
    # cells are large, they run side by side on the thread pool (a million runs: the run
    # table's gathers beside the cells' medians), the run table's parts first, the longest of
    # them. Small cells are mostly Python, which two threads only slow down (5 000 cells of 4
    # runs: 1.3 -> 2.3 s)
    calls: list[Callable[[], Any]] = [*parts,
                                      *(functools.partial(cell, k) for k in range(len(spans)))]
    side_by_side = run_rows.size >= CELLS_SIDE_BY_SIDE_RUNS * max(len(spans), 1)
    done = run_each(calls) if side_by_side else [c() for c in calls]
    runs = assemble(done[:len(parts)])
    cells = [cast(CellSummary, c) for c in done[len(parts):]]
    run_names = np.empty(log_rows(mc) if mc is not None else acc.t_grok.upper.shape[0],
                         dtype=object)
    run_names[run_rows] = sorted_names
    # the high-floor gate compares the cells' floors: an accuracy-only cell has none
    return _StudyRuns(tuple(cells) if mc is None else apply_high_floor_gate(cells, cfg), runs,
                      bounds, run_rows, cell_rows, run_names)


def _audit_study(study_key: Mapping[str, Any], metric: str, axis: str | None,
                 sframe: pd.DataFrame, run_ids: np.ndarray, acc: AccuracyClocks,
                 mc: MetricClocks, cfg: AuditConfig, outcomes: Sequence[str] = (),
                 horizon: HorizonCheck | None = None) -> StudyResult:
    """One study: its cells along ``axis`` (None: no condition varies, one cell of every run),
    their gates, the orderings and the clock verdict, and the findings."""
    base = {"study": study_key, "metric": metric}
    sr = _study_runs(axis, sframe, run_ids, acc, mc, cfg, horizon)
    cells_t = sr.cells
    passing = [c for c in cells_t if c.passes]
    findings = _cell_findings(sr, axis, base, mc, horizon, acc.grok_late)
    missing = _metric_missing(sr.cell_rows, mc, base, sr.run_names)
    if missing is not None:
        findings.append(missing)
    orderings = ({q: ordering(passing, q, cfg) for q in QUANTITIES} if axis is not None
                 else {})
    evidence: dict[str, Any] = {"passing_cells": [c.axis_value for c in passing],
                                "gated_cells": [c.axis_value for c in cells_t if not c.passes]}
    verdict: Reason | None = None
    if axis is None:
        findings.append(_single_condition(base, cells_t, passing, sr, sframe, outcomes))
    elif len(passing) < 2:
        findings.append(_low_power(base, cells_t, passing))
    else:
        verdict, vev, found = _clock_verdict(base, axis, cells_t, passing, orderings, sr, mc,
                                             cfg)
        evidence.update(vev)
        findings.extend(found)
    if cfg.profile == "reference":  # v1.5's study numbers, with or without a verdict
        evidence.update(reference_evidence(cells_t, passing, orderings))
    findings.extend(snapshot_findings(cells_t, orderings, base, cfg))
    return StudyResult(study=dict(study_key), metric=metric, axis=axis, cells=cells_t,
                       runs=sr.runs, orderings=tuple(orderings.values()), verdict=verdict,
                       verdict_evidence=evidence, findings=tuple(findings))


def _accuracy_study(study_key: Mapping[str, Any], axis: str | None, sframe: pd.DataFrame,
                    run_ids: np.ndarray, acc: AccuracyClocks, cfg: AuditConfig,
                    outcomes: Sequence[str] = ()) -> StudyResult:
    """One study of an accuracy-only audit (no metric: ``COMPRESSION_NOT_ASSESSED``): its cells
    along ``axis`` with their accuracy gates, the ``t_grok`` ordering over the passing cells,
    and the findings that need no metric. No clock verdict: it compares ``t_grok`` with
    ``t_compress``, which was not assessed."""
    base = {"study": study_key, "metric": None}
    sr = _study_runs(axis, sframe, run_ids, acc, None, cfg, None)
    cells_t = sr.cells
    passing = [c for c in cells_t if c.passes]
    findings = _accuracy_cell_findings(sr, axis, base, acc.t_grok, acc.grok_late)
    orderings = {"t_grok": ordering(passing, "t_grok", cfg)} if axis is not None else {}
    evidence: dict[str, Any] = {"passing_cells": [c.axis_value for c in passing],
                                "gated_cells": [c.axis_value for c in cells_t if not c.passes],
                                "compression_assessed": False}
    if axis is None:
        findings.append(_single_condition(base, cells_t, passing, sr, sframe, outcomes,
                                          audited="accuracy clocks"))
    elif len(passing) < 2:
        findings.append(_low_power(base, cells_t, passing))
    else:
        findings.extend(_undefined_orderings(base, axis, orderings))
    return StudyResult(study=dict(study_key), metric=None, axis=axis, cells=cells_t,
                       runs=sr.runs, orderings=tuple(orderings.values()), verdict=None,
                       verdict_evidence=evidence, findings=tuple(findings))


def _low_power(base: Mapping[str, Any], cells_t: Sequence[CellSummary],
               passing: Sequence[CellSummary]) -> Finding:
    """``LOW_POWER_DESCRIPTIVE``: fewer than two cells pass every gate."""
    return make_finding(
        Reason.LOW_POWER_DESCRIPTIVE, "study", base,
        evidence={"passing_cells": len(passing), "cells": len(cells_t)},
        message=(f"{len(passing)} of {len(cells_t)} cells pass every gate: descriptive only,"
                 " nothing comparative"))


def _undefined_orderings(base: Mapping[str, Any], axis: str, orderings: Mapping[str, Any]
                         ) -> list[Finding]:
    """``ORDERING_UNDEFINED`` for each ordering that is not identified."""
    return [make_finding(
        Reason.ORDERING_UNDEFINED, "study", base,
        evidence={"quantity": o.quantity, "sub_reason": o.sub_reason,
                  "concordant": o.concordant, "discordant": o.discordant,
                  "unidentified": o.unidentified, "n_cells": o.n_cells},
        message=(f"the ordering of {o.quantity} along {axis} is undefined "
                 f"({o.sub_reason.value if o.sub_reason else ''})"))
        for o in orderings.values() if not o.identified]


def _run_code_finding(code: Reason, runs: Sequence[str], c: CellSummary, axis: str | None,
                      base: Mapping[str, Any]) -> Finding:
    """One run-scoped code of a cell, as one finding naming its runs."""
    return make_finding(
        code, "run", base, cell=c.axis_value, runs=runs,
        evidence={"n_runs": len(runs), "of": c.n_runs},
        message=f"{len(runs)}/{c.n_runs} runs of cell {cell_label(axis, c.axis_value)}")


def _accuracy_cell_findings(sr: _StudyRuns, axis: str | None, base: Mapping[str, Any],
                            grok: Event, grok_late: np.ndarray | None) -> list[Finding]:
    """Per cell of an accuracy-only study: one finding per run-scoped code, the gates, the
    runs that grokked before logging began (``LEFT_CENSORED``) and a censored median
    ``t_grok`` (``MEDIAN_CENSORED``)."""
    findings: list[Finding] = []
    by_cell, _ = _run_codes_by_cell(sr.runs, sr.bounds)
    for k_c, c in enumerate(sr.cells):
        label = cell_label(axis, c.axis_value)
        findings += [_run_code_finding(code, rs, c, axis, base)
                     for code, rs in by_cell[k_c].items()]
        findings += [make_finding(
            g, "cell", base, cell=c.axis_value, runs=c.runs,
            evidence={"n_runs": c.n_runs, "n_grokked": c.n_grokked,
                      "n_fully_generalized": c.n_fully_generalized},
            message=f"cell {label} is gated out of every ordering") for g in c.gates]
        rows = sr.cell_rows[k_c]
        left = rows[grok.left_censored[rows]]
        if left.size:
            findings.append(_grok_before_logging(c, left, axis, base, grok, sr.run_names,
                                                 grok_late))
        findings += [make_finding(
            note, "cell", base, cell=c.axis_value, runs=c.runs, evidence={"t_grok": c.t_grok},
            message=(f"cell {label}: half or more runs censored; only a lower bound of the "
                     "median t_grok is known")) for note in c.notes]
    return findings


def _grok_before_logging(c: CellSummary, rows: np.ndarray, axis: str | None,
                         base: Mapping[str, Any], grok: Event, names: np.ndarray,
                         grok_late: np.ndarray | None) -> Finding:
    """``LEFT_CENSORED`` of an accuracy-only cell: runs ``rows`` whose test accuracy is at the
    grok threshold at its first logged point, after step 0 -- t_grok is known only by its
    bounds: before logging began, or before the test accuracy was first logged where the
    run's log began earlier (:func:`_logged_late`)."""
    runs = [str(names[int(r)]) for r in rows.tolist()]
    first = sorted({float(v) for v in grok.upper[rows].tolist()})
    late = _logged_late(rows, grok_late, names)
    evidence: dict[str, Any] = {"n_runs": len(runs), "of": c.n_runs, "t_grok_runs": runs,
                                "first_logged_steps": first}
    steps = ", ".join(format_number(v) for v in first[:3])
    label = cell_label(axis, c.axis_value)
    if not late:
        message = (f"{len(runs)}/{c.n_runs} runs of cell {label} start after the grok, at step "
                   f"{steps}: test accuracy already at the grok threshold (t_grok before "
                   "logging began, known only by its bounds); an ordering that depends on "
                   "them is undefined")
    else:
        evidence["logged_late"] = late
        message = (f"{len(runs)}/{c.n_runs} runs of cell {label} have test accuracy already "
                   f"at the grok threshold at its first logged point, step {steps}: t_grok is "
                   f"known only by its bounds; {_late_words(late)}; an ordering that depends "
                   "on them is undefined")
    return make_finding(Reason.LEFT_CENSORED, "run", base, cell=c.axis_value,
                        runs=sorted(runs), evidence=evidence, message=message)


def _logged_late(rows: np.ndarray, late: np.ndarray | None, names: np.ndarray) -> list[str]:
    """The runs of ``rows`` whose clock's column was first logged after the run's log began
    (``late``, per run: :attr:`AccuracyClocks.grok_late`, :attr:`MetricClocks.late`): a test
    set evaluated only at the end of training (Lightning's ``trainer.test``), or a metric
    computed from some step on. A left-censored event of theirs happened before that
    column's first point, not before logging began."""
    if late is None:
        return []
    return [str(names[int(r)]) for r in rows[late[rows]].tolist()]


def _late_words(late: Sequence[str]) -> str:
    """How :func:`_logged_late`'s runs read in a message."""
    shown = ", ".join(safe(n) for n in late[:3]) + (", …" if len(late) > 3 else "")
    return (f"in {len(late)} ({shown}) that column was first logged after the run's log "
            "began, so the event happened before its first point, not necessarily before "
            "logging began (log it from the first steps to time it)")


def _cell_findings(sr: _StudyRuns, axis: str | None, base: Mapping[str, Any],
                   mc: MetricClocks, horizon: HorizonCheck | None,
                   grok_late: np.ndarray | None) -> list[Finding]:
    """Per cell: one finding per run-scoped code, unstable floors, gates, censored clocks and
    short horizons, and the notes (a censored median)."""
    findings: list[Finding] = []
    by_cell, unstable_by_cell = _run_codes_by_cell(sr.runs, sr.bounds)
    left_any = mc.grok.left_censored | (mc.tc_status == TC_LEFT_CENSORED)
    for k_c, c in enumerate(sr.cells):
        findings += [_run_code_finding(code, rs, c, axis, base)
                     for code, rs in by_cell[k_c].items()]
        unstable = unstable_by_cell[k_c]
        if unstable:
            sev = Severity.CRITICAL if c.passes else Severity.WARNING
            findings.append(make_finding(
                Reason.FLOOR_UNSTABLE, "cell", base, cell=c.axis_value, runs=unstable,
                severity=sev, evidence={"n_runs": len(unstable), "of": c.n_runs,
                                        "passing_cell": c.passes},
                message=(f"{len(unstable)}/{c.n_runs} runs of cell {cell_label(axis, c.axis_value)} have "
                         "a floor that is still moving at the end of the log")))
        for g in c.gates:
            findings.append(make_finding(
                g, "cell", base, cell=c.axis_value, runs=c.runs,
                evidence={"n_runs": c.n_runs, "n_grokked": c.n_grokked,
                          "n_fully_generalized": c.n_fully_generalized,
                          "n_no_compression": c.n_no_compression,
                          "n_established": c.n_established, "floor": c.floor},
                message=f"cell {cell_label(axis, c.axis_value)} is gated out of every ordering"))
        if c.short_horizon_runs or left_any[sr.cell_rows[k_c]].any():
            findings.extend(_cell_evidence_findings(c, sr.cell_rows[k_c], axis, base, mc,
                                                    horizon, sr.run_names, grok_late))
        for note in c.notes:
            findings.append(make_finding(
                note, "cell", base, cell=c.axis_value, runs=c.runs,
                evidence={"t_grok": c.t_grok, "t_compress": c.t_compress, "lag": c.lag},
                message=(f"cell {cell_label(axis, c.axis_value)}: half or more runs censored; only a "
                         "lower bound of the median is known")))
    return findings


def _single_condition(base: Mapping[str, Any], cells_t: Sequence[CellSummary],
                      passing: Sequence[CellSummary], sr: _StudyRuns, sframe: pd.DataFrame,
                      outcomes: Sequence[str], audited: str = "clocks, floor and snapshot"
                      ) -> Finding:
    """SINGLE_CONDITION: no axis; a warning when the run names or the outcomes hint at one.
    ``audited``: what was audited of each run (its accuracy clocks alone without a metric)."""
    n = cells_t[0].n_runs if cells_t else 0
    tokens = name_tokens(sr.runs.run.tolist())
    hint = ""
    if tokens:  # a condition the log may hold only in its run names
        t = tokens[0]
        hint = (f"; but the run names differ in {t.key} ({', '.join(t.values[:4])}): if it "
                f"is a condition, take it with --cond {t.key}='{t.regex}'")
    varying = _varying_outcomes(sframe, outcomes)
    if varying:  # a value kept as a result of the run may be a setting
        hint += (f"; the outcome(s) {', '.join(varying)} vary across the runs: if one is "
                 f"a setting, name it with --by {varying[0]}")
    return make_finding(
        Reason.SINGLE_CONDITION, "study", base,
        severity=Severity.WARNING if tokens or varying else None,
        evidence={"runs": n, "passing": bool(passing),
                  "name_tokens": {t.key: list(t.values) for t in tokens},
                  "varying_outcomes": varying},
        message=(f"no condition varies across the {n} run(s): each run's {audited} "
                 "are audited, the runs pooled as replicates; orderings and a "
                 f"clock verdict need an axis (--by){hint}"))


def _clock_verdict(base: Mapping[str, Any], axis: str, cells_t: Sequence[CellSummary],
                   passing: Sequence[CellSummary], orderings: Mapping[str, Any],
                   sr: _StudyRuns, mc: MetricClocks, cfg: AuditConfig
                   ) -> tuple[Reason, dict[str, Any], list[Finding]]:
    """The clock verdict of a study with two or more passing cells, its evidence, and its
    findings (undefined orderings, the verdict, the endpoint)."""
    findings = _undefined_orderings(base, axis, orderings)
    # the censoring fraction's runs: those of the passing cells, or of every cell (v1.5)
    scope = passing if cfg.censor_scope == "passing" else cells_t
    in_scope = np.array([any(c is d for d in scope) for c in cells_t], dtype=bool)
    elig = sr.rows[in_scope[sr.runs.cell] & ~mc.grok.censored[sr.rows]]
    tcs = mc.tc_status[elig]
    # a compression before logging began is a censored t_compress (known on one side of
    # the first logged step only); a grok before it widens rel_lag's bounds instead
    timed = np.isin(tcs, (TC_OK, TC_LEFT_CENSORED, *_CENSORED_TC))
    n_cens = int(np.isin(tcs, (TC_LEFT_CENSORED, *_CENSORED_TC)).sum())
    verdict, vev = clock_verdict(list(passing), orderings, mc.rel_lag_low[elig],
                                 mc.rel_lag_high[elig], int(timed.sum()), n_cens, cfg)
    text = _verdict_text(verdict, cfg)
    if verdict is Reason.INCONCLUSIVE_CENSORING and vev.get("lag_straddles_threshold"):
        text = (f"the runs' rel_lag bounds straddle large_lag = {cfg.large_lag} (median from "
                f"{format_number(vev.get('median_rel_lag_low'))} to "
                f"{format_number(vev.get('median_rel_lag_high'))}): censored t_compress, or "
                "evaluations too far apart around grokking to time the lag, leave its size "
                "undetermined")
    findings.append(make_finding(verdict, "study", base, evidence=vev, message=text))
    ep = endpoint_finding(list(passing), base, cfg)
    if ep:
        findings.append(ep)
    return verdict, vev, findings


def _run_codes_by_cell(runs: RunTable, bounds: np.ndarray
                       ) -> tuple[list[dict[Reason, list[str]]], list[list[str]]]:
    """Per cell (runs ``bounds[k]:bounds[k+1]`` of ``runs``): the runs of each run-scoped code
    (codes in order of first appearance, runs in table order), and the runs whose floor is
    unstable although they grokked."""
    codes_of = [tuple(c for c in s if c in _RUN_CODES) for s in runs.reason_sets]
    stab = runs.words["floor_stability"]
    unstable = np.array([n == "unstable" for n in stab.names], dtype=bool)[stab.code]
    t_grok = runs.intervals["t_grok"]
    assert t_grok.upper is not None
    unstable = unstable & ~np.isinf(t_grok.upper)
    names = runs.run
    by_cell: list[dict[Reason, list[str]]] = []
    unstable_by_cell: list[list[str]] = []
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        which = runs.reasons[lo:hi]
        seen, first = np.unique(which, return_index=True)
        per_code: dict[Reason, list[str]] = {}
        for j in seen[np.argsort(first)].tolist():
            for code in codes_of[j]:
                per_code.setdefault(code, [])
        for code in per_code:
            has = np.array([code in cs for cs in codes_of], dtype=bool)
            per_code[code] = names[lo:hi][has[which]].tolist()
        by_cell.append(per_code)
        unstable_by_cell.append(names[lo:hi][unstable[lo:hi]].tolist())
    return by_cell, unstable_by_cell


_VERDICT_TEXT = {
    Reason.INCONCLUSIVE_CENSORING: "too many censored t_compress for a clock verdict",
    Reason.LARGE_LAG_ORDERING_UNDETERMINED: "large lag, but an ordering is undefined",
    Reason.TWO_CLOCKS: "large lag; t_grok and t_compress ordered in opposite directions",
    Reason.ONE_CLOCK_LARGE_LAG: "large lag; t_grok and t_compress ordered the same way",
    Reason.PARTIALLY_SEPARATED: "large lag; orderings identified but not both monotone",
    Reason.SINGLE_CLOCK_SMALL_LAG: "compression follows generalization closely (small lag)",
}


_SIGN_RULE_TEXT = {
    Reason.TWO_CLOCKS: "large lag; Spearman signs of t_grok and t_compress are opposite",
    Reason.ONE_CLOCK_LARGE_LAG: ("large lag; t_grok and t_compress have the same Spearman "
                                 "sign and the same earliest cell"),
    Reason.PARTIALLY_SEPARATED: ("large lag; same Spearman sign, but the earliest t_grok and "
                                 "the earliest t_compress are in different cells"),
}


def _verdict_text(verdict: Reason, cfg: AuditConfig) -> str:
    if cfg.clock_rule == "sign" and verdict in _SIGN_RULE_TEXT:
        return _SIGN_RULE_TEXT[verdict]
    return _VERDICT_TEXT.get(verdict, verdict.value)


def log_rows(mc: MetricClocks) -> int:
    """The number of runs in the clock arrays of ``mc`` (every study's)."""
    return int(mc.n_points.shape[0])


def _cell_evidence_findings(c: CellSummary, rows: np.ndarray, axis: str | None,
                            base: Mapping[str, Any], mc: MetricClocks,
                            horizon: HorizonCheck | None, names: np.ndarray,
                            grok_late: np.ndarray | None) -> list[Finding]:
    """``LEFT_CENSORED`` (runs already past t_grok or compression at their first logged step;
    :func:`_logged_late` names those whose column was first logged after the run's log began)
    and ``HORIZON_MISMATCH`` (runs that stop before the floor window of the cell's longest
    run) for one cell, with the runs and steps behind them."""
    out: list[Finding] = []
    label = cell_label(axis, c.axis_value)
    lg = mc.grok.left_censored[rows]
    lc = mc.tc_status[rows] == TC_LEFT_CENSORED
    if lg.any() or lc.any():
        g_runs = [names[int(r)] for r in rows[lg].tolist()]
        c_runs = [names[int(r)] for r in rows[lc].tolist()]
        both = rows[lg | lc]
        first = sorted({format_number(float(v)) for v in np.concatenate(
            [mc.grok.upper[rows[lg]], mc.t_compress.upper[rows[lc]]]).tolist()})
        g_late = _logged_late(rows[lg], grok_late, names)
        c_late = _logged_late(rows[lc], mc.late, names)
        late = sorted({*g_late, *c_late})
        # "before logging began" only where no such run's column was logged late
        g_when = "its first logged point" if g_late else "logging began"
        c_when = "its first logged point" if c_late else "logging began"
        parts = []
        if g_runs:
            parts.append(f"test accuracy already at the grok threshold in {len(g_runs)} "
                         f"(t_grok before {g_when}: no value at grok, no frac_pre)")
        if c_runs:
            parts.append(f"the metric already on its floor in {len(c_runs)} (compressed "
                         f"before {c_when}, or never: not NO_COMPRESSION)")
        evidence: dict[str, Any] = {
            "n_runs": int(both.size), "of": c.n_runs, "t_grok_runs": g_runs,
            "t_compress_runs": c_runs, "first_logged_steps": [float(x) for x in first]}
        if late:
            evidence["logged_late"] = late
            parts.append(_late_words(late))
        lead = (f"start after an event, at step {', '.join(first[:3])}" if not late else
                f"were past an event at its column's first logged point, step "
                f"{', '.join(first[:3])}")
        out.append(make_finding(
            Reason.LEFT_CENSORED, "run", base, cell=c.axis_value,
            runs=sorted({names[int(r)] for r in both.tolist()}), evidence=evidence,
            message=(f"{int(both.size)}/{c.n_runs} runs of cell {label} {lead}: "
                     + "; ".join(parts) + "; the lag and rel_lag are only bounds, and an "
                     "ordering that depends on them is undefined")))
    if c.short_horizon_runs and horizon is not None:
        short_rows = rows[horizon.short[rows]]
        k = int(horizon.longest[short_rows[0]])
        ends = {names[int(r)]: float(mc.last_step[r]) for r in short_rows.tolist()}
        moved = [names[int(r)] for r in short_rows.tolist() if horizon.not_converged[r]]
        unseen = [names[int(r)] for r in short_rows.tolist() if not horizon.compared[r]]
        sib = {names[int(r)]: (None if np.isnan(horizon.sibling_value[r])
                               else float(horizon.sibling_value[r]))
               for r in short_rows.tolist()}
        long_end, long_floor = float(mc.last_step[k]), float(mc.floor[k])
        shown = ", ".join(f"{safe(n)} at {format_number(v)}"
                          for n, v in list(ends.items())[:3])
        msg = (f"{len(ends)}/{c.n_runs} runs of cell {label} stop before the floor window of "
               f"its longest run ({safe(names[k])}, to step {format_number(long_end)}): "
               f"{shown}{', …' if len(ends) > 3 else ''}")
        if moved:
            msg += (f"; the longest run was still moving after they stopped, toward another "
                    f"floor ({format_number(long_floor)}): {len(moved)} short floor(s) taken as "
                    "indeterminate, not stable")
        stand = len(ends) - len(moved) - len(unseen)
        if stand:
            msg += (f"; {stand} short floor(s) stand (the longest run did not move after they "
                    "stopped, or they already sit on its floor)")
        if unseen:
            msg += (f"; {len(unseen)} not compared (no floor window of their own, or no point "
                    "of the longest run in it)")
        if c.floor_rests_on_short_runs:
            msg += (f"; the cell floor {format_number(c.floor)} rests on the shorter runs")
        out.append(make_finding(
            Reason.HORIZON_MISMATCH, "cell", base, cell=c.axis_value,
            runs=tuple(ends),
            severity=None if (moved or unseen or c.floor_rests_on_short_runs)
            else Severity.INFO,
            evidence={"n_runs": len(ends), "of": c.n_runs, "last_steps": ends,
                      "longest_run": names[k], "longest_last_step": long_end,
                      "longest_floor": long_floor, "not_converged": moved,
                      "not_compared": unseen,
                      "longest_value_at_their_horizon": sib, "cell_floor": c.floor,
                      "floor_rests_on_short_runs": c.floor_rests_on_short_runs},
            message=msg))
    return out


def _metric_missing(rows: Sequence[np.ndarray], mc: MetricClocks, base: Mapping[str, Any],
                    names: np.ndarray) -> Finding | None:
    """``METRIC_MISSING``: runs that logged no value of the audited metric, or fewer than half
    the median number of points of their cell's runs that logged it. Their floors and values
    at grok are unknown, so the cell's findings rest on fewer runs (each says its n)."""
    none: list[str] = []
    few: dict[str, int] = {}
    n_all = 0
    for rr in rows:
        pts = mc.n_points[rr]
        n_all += int(rr.size)
        pos = pts[pts > 0]
        med = float(np.median(pos)) if pos.size else 0.0
        flagged = (pts == 0) | (pts < 0.5 * med)
        if not flagged.any():
            continue
        for r, p in zip(rr[flagged].tolist(), pts[flagged].tolist()):
            if p == 0:
                none.append(str(names[r]))
            else:
                few[str(names[r])] = int(p)
    if not none and not few:
        return None
    n = len(none) + len(few)
    listed = ", ".join(safe(r) for r in [*none, *few][:3]) + (", …" if n > 3 else "")
    return make_finding(
        Reason.METRIC_MISSING, "study", base, runs=sorted([*none, *few]),
        evidence={"n_runs": n, "of": n_all, "no_points": sorted(none), "few_points": few},
        message=(f"{base.get('metric')} is missing in {n} of {n_all} runs ({len(none)} with no "
                 f"value, {len(few)} with fewer than half their cell's points: {listed}): "
                 "their floors and values at grok are unknown, or rest on fewer points; each "
                 "finding says how many runs it rests on"))


def input_findings(log: LogTable) -> list[Finding]:
    """The findings about the input itself: what was set aside or repaired, how accuracy was
    read, and what the reader noted."""
    s = log.summary
    base: dict[str, Any] = {"study": {}, "metric": None}
    return (_set_aside_findings(s, base) + _accuracy_read_findings(s, base)
            + _reader_findings(s, base))


def _set_aside_findings(s: InputSummary, base: Mapping[str, Any]) -> list[Finding]:
    """Runs and rows set aside or repaired: too short, without accuracy, duplicated, empty,
    missing values, unsorted steps."""
    out: list[Finding] = []
    if s.runs_too_short:
        out.append(make_finding(
            Reason.TOO_SHORT, "input", base, runs=s.runs_too_short,
            evidence={"n_runs": len(s.runs_too_short), "rows": s.set_aside.get("run_too_short", 0)},
            message=f"{len(s.runs_too_short)} runs have fewer than 3 logged points: set aside"))
    if s.runs_without_accuracy:
        rs = s.runs_without_accuracy
        out.append(make_finding(
            Reason.RUN_WITHOUT_ACCURACY, "input", base, runs=rs,
            evidence={"n_runs": len(rs), "rows": s.set_aside.get("run_without_accuracy", 0)},
            message=(f"{len(rs)} run(s) hold no value in the column read as the test accuracy "
                     f"({', '.join(map(safe, rs[:3]))}{', …' if len(rs) > 3 else ''}): set "
                     "aside, no clock can be read from them (a file of one metric of a run? "
                     "give the run a run column; another accuracy column in their file? the "
                     "reader's notes name it)")))
    if s.duplicate_runs:
        groups = [list(g) for g in s.duplicate_runs]
        n = sum(len(g) for g in groups)
        out.append(make_finding(
            Reason.DUPLICATE_RUN, "input", base, runs=sorted(r for g in groups for r in g),
            evidence={"groups": groups, "n_runs": n},
            message=(f"{n} runs are copies of another at every logged step, in every column "
                     f"({describe_duplicates(s.duplicate_runs)}): one run under two ids counts "
                     "twice as a replicate, or a setting that separates them had no effect; "
                     "drop the copies, or check the sweep")))
    if s.accuracy_twins:
        groups = [list(g) for g in s.accuracy_twins]
        n = sum(len(g) for g in groups)
        out.append(make_finding(
            Reason.DUPLICATE_RUN, "input", base, runs=sorted(r for g in groups for r in g),
            evidence={"groups": groups, "n_runs": n, "identical_in": "accuracy"},
            message=(f"{n} runs share their test accuracy at every point it was logged, "
                     f"though not every column ({describe_duplicates(s.accuracy_twins)}): one "
                     "run read twice -- its files read as runs, or a copy with another column "
                     "-- counts twice as a replicate; give each run once (one file, or a run "
                     "column joining its files)")))
    if s.set_aside.get("empty_row"):
        out.append(make_finding(
            Reason.EMPTY_ROWS, "input", base, evidence={"rows": s.set_aside["empty_row"]},
            message=f"{s.set_aside['empty_row']} rows hold no accuracy and no metric: set aside"))
    dups = {k: v for k, v in s.set_aside.items() if k.startswith("duplicate")}
    if dups:
        out.append(make_finding(
            Reason.DUPLICATE_ROWS, "input", base, evidence=dups,
            message=f"duplicate (run, step) rows set aside: {dups}"))
    miss = {k: v for k, v in s.missing_values.items() if v}
    if miss:
        out.append(make_finding(
            Reason.MISSING_VALUES, "input", base, evidence=miss, severity=Severity.INFO,
            message=f"missing (NaN) values treated as not logged: {miss}"))
    if not s.sorted_input:
        out.append(make_finding(Reason.UNSORTED_STEPS, "input", base,
                                message="rows were not sorted by run and step: sorted"))
    return out


def _accuracy_read_findings(s: InputSummary, base: Mapping[str, Any]) -> list[Finding]:
    """How the accuracy columns were read: percent columns, the column chosen for a role."""
    out: list[Finding] = []
    for col, d in sorted(s.accuracy_scale.items()):
        low = int(d.get("n_runs_at_most_1") or 0)
        sibling = d.get("why") == "like_sibling"
        top = d.get("max")
        few = isinstance(top, (int, float)) and top > PERCENT_MIN  # 1 or 2 values above it
        why = ((f"max {format_number(top)} at fewer than {PERCENT_MIN_POINTS} values above "
                f"{PERCENT_MIN:g}" if few else "never above 1.5")
               + ", but logged beside a percent accuracy of the same log"
               if sibling else "as --acc-scale says" if d.get("why") == "option"
               else f"max {format_number(d.get('max'))}: a fraction cannot exceed 1")
        tail = ""
        if low and not sibling:
            ex = ", ".join(safe(r) for r in (d.get("runs_at_most_1") or [])[:3])
            tail = (f"; {low} run(s) never exceed 1 and are read as percent with the rest of "
                    f"the column ({ex}{', …' if low > 3 else ''})")
        out.append(make_finding(
            Reason.ACCURACY_IN_PERCENT, "input", base, evidence={"column": col, **d},
            severity=Severity.WARNING if (sibling or low) else Severity.INFO,
            message=(f"{col} read as percent ({why}), divided by 100{tail}"
                     + ("" if d.get("why") == "option" else
                        f"; --acc-scale {col}=1 reads it as fractions"))))
    for target, d in sorted((s.provenance.get("accuracy_columns") or {}).items()):
        if not isinstance(d, dict):
            continue
        alts = d.get("alternatives") or []
        also = ("; also a candidate: " + ", ".join(f"{safe(a)} ({n} points)" for a, n in alts[:3])
                if alts else "")
        # a bare accuracy read as the test accuracy: often the training batches' (detectron2's
        # metrics.json, MMPose's acc_pose, Keras without validation): said as a warning
        bare = target == "test_acc" and is_bare_accuracy(str(d.get("column") or ""))
        out.append(make_finding(
            Reason.ACCURACY_COLUMN_CHOSEN, "input", base,
            evidence={"target": target, **d, "no_split_word": bare},
            severity=Severity.WARNING if bare else None,
            message=(f"{target} read from the column {safe(d.get('column'))!r} "
                     f"({d.get('points')} points){also}"
                     + ("; its name holds no held-out split word (test, val…): if the logger "
                        "measures it on training batches, t_grok is no generalization time"
                        if bare else "") + f"; choose with --map NAME={target}")))
    return out


def _reader_findings(s: InputSummary, base: Mapping[str, Any]) -> list[Finding]:
    """What the reader noted, set aside, or found some runs never logged."""
    out: list[Finding] = []
    notes = s.provenance.get("notes") or []
    if notes:
        first = "; ".join(safe(n) for n in notes[:2])
        out.append(make_finding(
            Reason.READER_NOTES, "input", base, evidence={"notes": list(notes)},
            message=(f"the reader noted {len(notes)} thing(s) it did not read as values: {first}"
                     f"{'; …' if len(notes) > 2 else ''} (`grokaudit inspect` lists them)")))
    aside = s.provenance.get("set_aside") or {}
    if aside:
        n = sum(int(v) for v in aside.values())
        out.append(make_finding(
            Reason.RECORDS_SET_ASIDE, "input", base, evidence=dict(aside),
            message=(f"{n} record(s) of the source set aside by the reader ("
                     + ", ".join(f"{k} {v}" for k, v in sorted(aside.items()))
                     + "); `grokaudit inspect` shows where and what became run values")))
    if s.not_logged:
        parts = ", ".join(f"{safe(k)} ({v} of {s.runs_kept} runs)"
                          for k, v in sorted(s.not_logged.items()))
        out.append(make_finding(
            Reason.NOT_LOGGED_BY_EVERY_RUN, "input", base, evidence=dict(s.not_logged),
            message=f"columns some runs never logged (not counted as missing values): {parts}"))
    for f in s.provenance.get("findings", []) or []:
        try:
            code = Reason(f.get("code"))
        except ValueError:
            continue
        where = ""
        if f.get("file"):
            at = f" @ byte {f['offset']}" if f.get("offset") is not None else ""
            where = f" ({f['file']}{at})"
        runs = ([str(r) for r in f["runs"]] if isinstance(f.get("runs"), list)
                else [str(f["run"])] if f.get("run") else [])
        out.append(make_finding(
            code, "input", base, runs=runs,
            evidence={k: v for k, v in f.items()
                      if k not in ("code", "severity", "run", "runs")},
            message=str(f.get("detail") or code.value) + where))
    return out
