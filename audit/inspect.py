"""What the loader sees, before any audit: ``grokaudit inspect PATH...``.

For each input: the format and reader, the runs, the steps and their cadence, each column with
its role (step, accuracy, metric, series, condition, seed, outcome) and why, the percent
decisions, the records set aside, the config files read, the reader's notes — and the flags that
would make a different reading. Computing is here; :func:`render_inspection` prints.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .config import AuditConfig
from .errors import GrokauditError
from .roles import STEP_NAMES, accuracy_rank, is_epoch_name, name_tokens, nearly_unique
from .schema import (
    ACCURACY_COLUMNS,
    SEED_COLUMNS,
    LogTable,
    _provenance_of,
    is_known_series,
)
from .text import format_value, safe
from .trail import Trail
from .version import __version__

SCHEMA = "grokaudit.inspect/1"


@dataclass(frozen=True)
class ColumnRole:
    """One column of the log as the audit will read it."""

    name: str
    role: str  #: test_acc, train_acc, metric, series, condition, seed, outcome
    why: str
    values: int | None = None  #: distinct values (conditions) or logged points (series)
    example: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "role": self.role, "why": self.why, "values": self.values,
                "example": _as_stored(self.example)}


@dataclass(frozen=True)
class Inspection:
    """Everything ``grokaudit inspect`` reports (see the module docstring)."""

    source: str
    adapters: tuple[str, ...]
    source_files: tuple[str, ...]
    runs: tuple[str, ...]
    rows: int
    step_column: str
    step_unit: str
    steps: Mapping[str, Any]  #: first, last, gaps (median, min, max), points per run
    columns: tuple[ColumnRole, ...]
    percent: Mapping[str, Any]
    set_aside: Mapping[str, int]
    config_files: tuple[str, ...]
    notes: tuple[str, ...]
    findings: tuple[Mapping[str, Any], ...]  #: what the reader raised (truncated, downsampled…)
    axis: str | None
    axis_why: str
    refused: Mapping[str, str] | None  #: what the audit would refuse, with its code
    flags: tuple[tuple[str, str], ...]  #: (flag, what it would change)
    #: runs the audit sets aside, by why (``run_without_accuracy``, ``run_too_short``)
    runs_set_aside: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: how the description was made: the config file read (or where discovery looked), the
    #: ones passed over, the settings changed, the command (:class:`~grokaudit.trail.Trail`)
    trail: Trail | None = None
    #: how the reader shaped the files: ``long_table`` (a long table pivoted: its name, value
    #: and key columns, the series made, the flag that changes it), ``files_set_aside``
    #: (files of a folder that are no run log, and why), ``conditions_table`` (a one-row-per-
    #: run table joined onto the runs, or one that could be)
    shape: Mapping[str, Any] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA, "grokaudit_version": __version__, "source": self.source,
            "adapters": list(self.adapters), "source_files": list(self.source_files),
            "runs": {"n": len(self.runs), "ids": list(self.runs)}, "rows": self.rows,
            "step": {"column": self.step_column, "unit": self.step_unit, **dict(self.steps)},
            "columns": [c.to_dict() for c in self.columns],
            "percent": _as_stored(dict(self.percent)), "set_aside": dict(self.set_aside),
            "config_files": list(self.config_files), "notes": list(self.notes),
            "findings": _as_stored(list(self.findings)),
            "axis": {"column": self.axis, "why": self.axis_why},
            "refused": dict(self.refused) if self.refused else None,
            "flags": [{"flag": f, "effect": e} for f, e in self.flags],
            "runs_set_aside": {k: list(v) for k, v in self.runs_set_aside.items()},
            "trail": self.trail.to_dict() if self.trail is not None else None,
            "shape": _as_stored(dict(self.shape)),
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False,
                          ensure_ascii=False) + "\n"

    def json_chunks(self, indent: int | None = 2) -> Iterator[str]:
        """:meth:`to_json` as the command line writes a result (a description is small)."""
        yield self.to_json(indent)


def _accuracy_named(name: str) -> bool:
    """A column named as an accuracy (``train_acc_step``, ``test_acc_logged``)."""
    return any(accuracy_rank(name, t) is not None for t in ("test_acc", "train_acc"))


def _acc_target(name: str) -> str:
    """The accuracy an accuracy-named column could be read as: the test accuracy unless its
    name says train."""
    return "test_acc" if accuracy_rank(name, "test_acc") is not None else "train_acc"


def _as_stored(x: Any) -> Any:
    """A value read from the log as JSON, as stored: unlike :func:`grokaudit.results.plain`
    a whole float stays a float (``1.0``: the column is float), so that ``inspect`` shows what
    the file holds. NaN and ±inf become None."""
    if isinstance(x, Mapping):
        return {str(k): _as_stored(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_as_stored(v) for v in x]
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def inspect_paths(paths: Sequence[str | os.PathLike[str]], cfg: AuditConfig, *,
                  fmt: str | None = None, mapping: Mapping[str, str] | None = None,
                  run_from: str | None = None, cond: Mapping[str, str] | None = None,
                  named_by: Mapping[str, str] | None = None, trail: Trail | None = None,
                  layout: Mapping[str, Any] | None = None) -> Inspection:
    """Read ``paths`` as every command reads them and describe what was read.

    ``named_by``: where the config's ``by`` and ``metrics`` came from, as the description
    says it (``{"by": "grokaudit.toml"}``; default the flags ``--by``, ``--metric``).
    ``trail``: how the description was made (the command line's config files and settings).
    ``layout``: the shape options (``--long``, ``--columns``, ``--conditions-from``, ``--on``).

    Raises :class:`~grokaudit.errors.GrokauditError` when the log cannot be read at all; a
    log that reads but that the audit would refuse (no test accuracy, several candidate axes)
    is described, with the refusal and its code in :attr:`Inspection.refused`."""
    from .api import infer_axis, validated_log
    from .limits import Limits
    from .loader import read_any

    source = ", ".join(str(p) for p in paths)
    table = read_any(list(paths), fmt, mapping=mapping, run_from=run_from, cond=cond,
                     on_duplicate=cfg.on_duplicate, partial=True, limits=Limits.of(cfg),
                     layout=layout)
    prov = _provenance_of(table.schema, source)
    refused: dict[str, str] | None = None
    log: LogTable | None = None
    try:
        log = validated_log(table, cfg, source)
    except GrokauditError as exc:
        refused = {"code": exc.code.value, "message": str(exc)}
    axis: str | None = None
    axis_why = ""
    if log is not None:
        try:
            axis = cfg.by or infer_axis(log.conditions, cfg.cell, source,
                                        [o for o in log.summary.outcomes if o != cfg.by])
            axis_why = (f"named by {(named_by or {}).get('by', '--by')}" if cfg.by else
                        "the one numeric condition that varies" if axis else
                        "no condition varies: each run is audited, no orderings")
        except GrokauditError as exc:
            axis_why = f"not inferred: {exc}"
            refused = refused or {"code": exc.code.value, "message": str(exc)}
    columns = _roles(table, log, prov, cfg, axis, (named_by or {}).get("metrics", "--metric"))
    runs, steps = _runs_and_steps(table, log)
    if log is None:  # the audit refuses the log: its steps may be anything, never summarized
        steps = {}
    steps = {**steps, **_step_cadence(prov)}
    step_col = str(prov.get("step_column") or "step")
    unit = str(prov.get("step_unit") or ("epoch" if is_epoch_name(step_col) else "steps"))
    percent = dict(log.summary.accuracy_scale) if log is not None else dict(
        prov.get("accuracy_scale") or {})
    return Inspection(
        source=source,
        adapters=tuple(prov.get("adapters") or [prov.get("adapter") or "canonical"]),
        source_files=tuple(str(f) for f in prov.get("source_files") or [str(p) for p in paths]),
        runs=tuple(runs), rows=int(table.num_rows), step_column=step_col, step_unit=unit,
        steps=steps, columns=tuple(columns), percent=percent,
        set_aside={**dict(prov.get("set_aside") or {}),
                   **(dict(log.summary.set_aside) if log is not None else {})},
        runs_set_aside={k: v for k, v in (
            ("run_without_accuracy", log.summary.runs_without_accuracy if log else ()),
            ("run_too_short", log.summary.runs_too_short if log else ())) if v},
        config_files=tuple(prov.get("config_files") or ()),
        notes=tuple(str(w) for w in prov.get("warnings") or ()
                    if not _said_in_shape(str(w), prov)),
        findings=tuple(dict(f) for f in prov.get("findings") or ()),
        axis=axis, axis_why=axis_why, refused=refused,
        flags=tuple(_shape_flags(prov) + _cadence_flags(steps)
                    + _flags(columns, prov, log, cfg, axis, percent)),
        trail=trail, shape=_shape(prov))


#: The provenance keys that say how the reader shaped the files (``Inspection.shape``).
_SHAPE_KEYS = ("long_table", "files_set_aside", "conditions_table")


def _said_in_shape(note: str, prov: Mapping[str, Any]) -> bool:
    """A reader's note that a file was set aside, which the shape lists already."""
    aside = prov.get("files_set_aside")
    return isinstance(aside, Mapping) and any(note.startswith(f"{safe(str(rel))}: set aside: ")
                                              for rel in aside)


def _step_cadence(prov: Mapping[str, Any]) -> dict[str, Any]:
    """What the readers found of the step column against the cadence the runs' configs
    declare: ``counts_log_events`` (each ``STEP_CADENCE_MISMATCH``: its runs, the declared
    length and cadence, the column's last step), ``scaled`` (``--step-scale`` applied)."""
    out: dict[str, Any] = {}
    found = [f for f in prov.get("findings") or ()
             if isinstance(f, Mapping) and f.get("code") == "STEP_CADENCE_MISMATCH"]
    if found:
        out["counts_log_events"] = [
            {k: f.get(k) for k in ("runs", "step_column", "step_max", "total_key", "total",
                                   "cadence_key", "cadence", "unit")} for f in found]
    if isinstance(prov.get("step_scale"), Mapping):
        out["scaled"] = dict(prov["step_scale"])
    return out


def _cadence_flags(steps: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``--step-scale cadence`` where a step column counts log events."""
    found = steps.get("counts_log_events") or []
    if not found:
        return []
    n = sum(len(f.get("runs") or ()) for f in found)
    by = sorted({f["cadence"] for f in found if isinstance(f.get("cadence"), int)})
    return [("--step-scale cadence", f"multiply the steps of the {n} run(s) whose step column "
             f"counts log events by the cadence their config declares "
             f"({', '.join(f'×{c}' for c in by)})")]


def _shape(prov: Mapping[str, Any]) -> dict[str, Any]:
    return {k: prov[k] for k in _SHAPE_KEYS if prov.get(k)}


def _shape_flags(prov: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The flags that change how the files were shaped: ``--long`` (a long table's columns),
    ``--conditions-from`` (a one-row-per-run table beside the runs)."""
    out: list[tuple[str, str]] = []
    lt = prov.get("long_table")
    if isinstance(lt, Mapping) and lt.get("flag"):
        out.append((str(lt["flag"]), "the long table's name, value and key columns (change "
                    "them to pivot it differently)"))
    ct = prov.get("conditions_table")
    if isinstance(ct, Mapping) and ct.get("flag") and not ct.get("joined"):
        out.append((str(ct["flag"]), f"join {ct.get('file')!r} (one row per run) onto the "
                    "runs as their conditions"))
    return out


def _roles(table: pa.Table, log: LogTable | None, prov: Mapping[str, Any], cfg: AuditConfig,
           axis: str | None, metrics_by: str = "--metric") -> list[ColumnRole]:
    chosen = prov.get("accuracy_columns") or {}
    out: list[ColumnRole] = []
    by_name = {n: c for n, c in zip(table.column_names, table.columns)}  # first of duplicates
    for name in ACCURACY_COLUMNS:
        if name not in by_name:
            continue
        src = chosen.get(name)
        why = (f"from column {src['column']!r} (the best-fitting name, {src['points']} points)"
               if isinstance(src, Mapping) else "as logged")
        out.append(ColumnRole(name, name, why, _logged(by_name[name])))
    if "test_acc" not in table.column_names:
        out.append(ColumnRole("test_acc", "missing", "no column was read as the test accuracy: "
                              "name one with --map NAME=test_acc"))
    if log is None:
        for name, col in zip(table.column_names, table.columns):
            if name in ("run", "step", *ACCURACY_COLUMNS):
                continue
            n = _logged(col)
            out.append(ColumnRole(name, "unclassified", "the audit would refuse the log (see "
                                  "refused): roles are decided when it reads", n))
        return out
    summary = log.summary
    metrics = set(cfg.metrics) or set(summary.metrics)
    for name, col in sorted(log.series.items()):
        n = int(np.count_nonzero(~np.isnan(col)))
        if name in metrics:
            why = (f"named by {metrics_by}" if cfg.metrics else
                   "a representation metric by its name: audited by default")
            out.append(ColumnRole(name, "metric", why, n))
        else:
            absent = summary.not_logged.get(name)
            why = ("a second step counter (its name is a step's): per-step values, no "
                   "representation metric" if name in STEP_NAMES else
                   "another accuracy: per-step values, no representation metric (--map "
                   f"{safe(name)}={_acc_target(name)} reads it as the "
                   f"{_acc_target(name).split('_')[0]} accuracy)"
                   if _accuracy_named(name) else
                   "per-step values: audited only with --metric") + (
                f"; {absent} run(s) never logged it" if absent else "")
            out.append(ColumnRole(name, "series", why, n))
    cond = log.conditions
    outcomes = set(summary.outcomes)
    for name in cond.columns:
        vals = cond[name].tolist()
        distinct = len({json.dumps(_as_stored(v), default=str) for v in vals})
        ex = vals[0] if vals else None
        if name in SEED_COLUMNS or "seed" in str(name).lower():
            out.append(ColumnRole(name, "seed", "a replicate id: never an axis or a cell",
                                  distinct, ex))
        elif name in outcomes and name != axis:
            out.append(ColumnRole(name, "outcome", "a result of the run (its name, or a summary "
                                  "record): never proposed as an axis or a cell", distinct, ex))
        else:
            if name == axis:
                why = "the axis"
            elif distinct <= 1:
                why = "constant in every run: the same for all"
            elif nearly_unique(vals):
                why = "differs in (nearly) every run: not a cell of replicates"
            else:
                why = f"constant in each run, {distinct} values"
            out.append(ColumnRole(name, "condition", why, distinct, ex))
    return out


def _logged(col: pa.ChunkedArray) -> int:
    """Logged points of a column: not null, and not NaN where it holds numbers."""
    if pa.types.is_floating(col.type) and len(col):
        n_nan = pc.sum(pc.is_nan(col).fill_null(True)).as_py() or 0
        return int(len(col) - n_nan)
    return int(len(col) - col.null_count)


def _runs_and_steps(table: pa.Table, log: LogTable | None) -> tuple[list[str], dict[str, Any]]:
    if log is not None:
        runs = [str(r) for r in log.run_ids]
        step, offsets = log.step, log.offsets
    else:  # a log the audit refuses: its run ids, nothing computed from its steps
        try:
            col = table.columns[table.column_names.index("run")]
            runs = sorted({str(r) for r in col.to_pylist() if r is not None})
        except (ValueError, pa.ArrowInvalid):
            runs = []
        return runs, {}
    if step.size == 0:
        return runs, {}
    pts = np.diff(offsets)
    run_of = np.repeat(np.arange(pts.size), pts)
    gaps = np.diff(step)[run_of[1:] == run_of[:-1]]
    return runs, {
        "first": int(step.min()), "last": int(step.max()),
        "gap_median": float(np.median(gaps)) if gaps.size else None,
        "gap_min": int(gaps.min()) if gaps.size else None,
        "gap_max": int(gaps.max()) if gaps.size else None,
        "points_per_run_min": int(pts.min()), "points_per_run_max": int(pts.max()),
    }


def _known_for_every_run(log: LogTable | None, name: str) -> bool:
    """Whether every run has a value of the condition ``name``: an axis needs one per run
    (``check --by`` refuses a missing one: ``CONDITION_MISSING``), so only then is it
    offered."""
    return log is not None and name in log.conditions.columns and \
        not bool(log.conditions[name].isna().any())


def _flags(columns: Sequence[ColumnRole], prov: Mapping[str, Any], log: LogTable | None,
           cfg: AuditConfig, axis: str | None, percent: Mapping[str, Any]
           ) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for target, d in sorted((prov.get("accuracy_columns") or {}).items()):
        for alt, n in (d.get("alternatives") or [])[:3] if isinstance(d, Mapping) else []:
            out.append((f"--map {alt}={target}", f"read {alt!r} ({n} points) as {target}"))
    if percent:
        out.append(("--acc-scale 1", "read every accuracy column as fractions"))
    elif log is not None:
        out.append(("--acc-scale 100", "read every accuracy column as percent"))
    conds = [c for c in columns if c.role == "condition" and (c.values or 0) > 1]
    for c in conds:
        if c.name != axis and _numeric(log, c.name) and _known_for_every_run(log, c.name):
            out.append((f"--by {c.name}", f"audit along {c.name} ({c.values} values)"))
    for c in conds:
        if c.name != axis and not (c.values and log is not None
                                   and nearly_unique(log.conditions[c.name].tolist())):
            out.append((f"--cell {c.name}", f"one study per value of {c.name}"))
    for c in columns:
        if c.role == "outcome" and (c.values or 0) > 1 and log is not None \
                and _numeric(log, c.name) and _known_for_every_run(log, c.name) \
                and not nearly_unique(log.conditions[c.name].tolist()) \
                and not _accuracy_named(c.name) and not is_known_series(c.name):
            # (a result logged under a per-step name, a final train_loss, is no setting)
            out.append((f"--by {c.name}", f"if {c.name} is a setting, not a result: audit "
                        f"along it ({c.values} values)"))
    for c in columns:  # (a second step counter, an epoch beside the step, is no metric; nor
        # is an accuracy not read as one: --map offers it as that accuracy)
        if c.role == "series" and c.name not in STEP_NAMES and not _accuracy_named(c.name):
            out.append((f"--metric {c.name}", f"audit {c.name} as the representation metric"))
    runs = [str(r) for r in log.run_ids] if log is not None else []
    for t in name_tokens(runs):
        if t.key not in (log.conditions.columns if log is not None else ()):
            out.append((f"--cond {t.option}", f"take {t.key} from the run names "
                        f"({', '.join(t.values[:4])}{', …' if len(t.values) > 4 else ''})"))
    if prov.get("adapter") in (None, "table") and log is not None:
        out.append(("--run-from NAME", "take run ids from column NAME (a table holding "
                    "several runs)"))
    return out


def _numeric(log: LogTable | None, name: str) -> bool:
    if log is None:
        return False
    import pandas as pd

    return bool(pd.api.types.is_numeric_dtype(log.conditions[name]))


# ------------------------------------------------------------------------------------------
# printing
# ------------------------------------------------------------------------------------------

def render_inspection(ins: Inspection) -> str:
    """The inspection as text for a terminal (every string from the log escaped)."""
    from .report import text_table

    lines = [f"grokaudit {__version__} · inspect {ins.source}"]
    if ins.trail is not None:
        lines += ins.trail.lines()
    lines.append(f"read by: {', '.join(ins.adapters)} · {len(ins.source_files)} file(s)")
    if ins.config_files:
        lines.append(f"config files: {', '.join(ins.config_files)}")
    shown = ", ".join(ins.runs[:4]) + (", …" if len(ins.runs) > 4 else "")
    lines.append(f"runs: {len(ins.runs)} ({shown}); {ins.rows} rows")
    st = ins.steps
    if "first" in st:
        gap = ("—" if st.get("gap_median") is None else
               f"median {format_value(st['gap_median'])} (from {st['gap_min']} to {st['gap_max']})")
        lines.append(f"steps: column {ins.step_column!r} counting {ins.step_unit}; "
                     f"{st['first']} … {st['last']}; apart: {gap}; "
                     f"{st['points_per_run_min']}–{st['points_per_run_max']} points per run")
    lines += _cadence_lines(st)
    lines += ["", "columns:"]
    rows = [("role", "column", "values", "why")]
    constant = [c.name for c in ins.columns if c.role == "condition" and c.values == 1]
    for c in ins.columns:
        if c.role == "condition" and c.values == 1 and len(constant) > 3:
            continue  # listed together below
        vals = "" if c.values is None else str(c.values)
        rows.append((c.role, c.name, vals, c.why))
    lines += text_table(rows, indent="  ")
    if len(constant) > 3:
        lines.append(f"  and {len(constant)} conditions the same in every run: "
                     f"{', '.join(constant[:8])}{', …' if len(constant) > 8 else ''}")
    if ins.percent:
        lines.append("percent:")
        for col, d in sorted(ins.percent.items()):
            lines.append(f"  {col}: divided by {format_value(d.get('scale'))} ({d.get('why')}, "
                         f"max {format_value(d.get('max'))}); "
                         f"{d.get('n_runs_at_most_1', 0)} run(s) never exceed 1")
    if ins.set_aside:
        lines.append("set aside (rows): "
                     + ", ".join(f"{k} {v}" for k, v in ins.set_aside.items()))
    for why, rs in ins.runs_set_aside.items():
        lines.append(f"runs set aside ({why}): {len(rs)} ({', '.join(safe(r) for r in rs[:5])}"
                     f"{', …' if len(rs) > 5 else ''}): the audit reads no clock from them")
    lines += _shape_lines(ins.shape)
    if ins.findings:
        lines.append("reader findings:")
        lines += [f"  {f.get('code')}: {f.get('detail')}" for f in ins.findings]
    if ins.notes:
        lines.append("notes:")
        lines += [f"  {n}" for n in ins.notes]
    lines.append("")
    lines.append(f"axis: {ins.axis or '—'} ({ins.axis_why})" if ins.axis_why else
                 f"axis: {ins.axis or '—'}")
    if ins.refused:
        lines.append(f"check would refuse: {ins.refused['message']} [{ins.refused['code']}]")
    if ins.flags:
        lines.append("flags that would read it differently:")
        metric = [f.split(" ", 1)[1] for f, _ in ins.flags if f.startswith("--metric ")]
        rows2 = [(f, e) for f, e in ins.flags if not (f.startswith("--metric ")
                                                      and len(metric) > 3)]
        if len(metric) > 3:
            rows2.append(("--metric COL", f"audit a series as the representation metric: "
                          f"{', '.join(metric[:6])}{', …' if len(metric) > 6 else ''}"))
        lines += text_table(rows2, indent="  ")
    return "\n".join(safe(line) for line in lines) + "\n"


def _cadence_lines(steps: Mapping[str, Any]) -> list[str]:
    """The step column against the runs' declared cadence, as text: the runs whose column
    counts log events, the steps rescaled by ``--step-scale``."""
    lines: list[str] = []
    for f in steps.get("counts_log_events") or []:
        runs = list(f.get("runs") or ())
        lines.append(f"  counts log events, not {f.get('unit')}, in {len(runs)} run(s) "
                     f"({', '.join(runs[:2])}{', …' if len(runs) > 2 else ''}): it ends at "
                     f"{f.get('step_max')} while their config declares {f.get('total_key')} "
                     f"{f.get('total')} and {f.get('cadence_key')} {f.get('cadence')} "
                     "[STEP_CADENCE_MISMATCH]; --step-scale cadence rescales them")
    sc = steps.get("scaled")
    if isinstance(sc, Mapping):
        by = sc.get("factors")
        how = (", ".join(f"×{c}: {n}" for c, n in by.items()) if isinstance(by, Mapping)
               and by else f"×{sc.get('scale')}")
        lines.append(f"  multiplied by --step-scale {sc.get('scale')}: {sc.get('runs')} run(s)"
                     + (f" ({how})" if sc.get("runs") else ""))
    return lines


def _shape_lines(shape: Mapping[str, Any]) -> list[str]:
    """How the reader shaped the files, as text: the long table pivoted, the files set aside,
    the conditions table."""
    lines: list[str] = []
    lt = shape.get("long_table")
    if isinstance(lt, Mapping):
        keys = ", ".join(repr(k) for k in lt.get("keys") or []) or "none"
        names = list(lt.get("series_names") or [])
        lines.append(f"long table pivoted ({'--long' if lt.get('forced') else 'detected'}): "
                     f"name column {lt.get('name')!r}, value column {lt.get('value')!r}, keys "
                     f"{keys} (joined to the name by '/', in file order); {lt.get('series')} "
                     f"series from {lt.get('files')} file(s): {', '.join(names[:4])}"
                     f"{', …' if len(names) > 4 else ''}; change with {lt.get('flag')}")
    aside = shape.get("files_set_aside")
    if isinstance(aside, Mapping) and aside:
        lines.append(f"files set aside (not run logs): {len(aside)}")
        lines += [f"  {f}: {why}" for f, why in list(aside.items())[:10]]
    ct = shape.get("conditions_table")
    if isinstance(ct, Mapping):
        if ct.get("joined"):
            lines.append(f"conditions from {ct.get('file')} on column {ct.get('on')!r}: "
                         f"{ct.get('joined')} run(s) matched, columns "
                         f"{', '.join(ct.get('columns') or [])}")
        else:
            lines.append(f"a one-row-per-run table: {ct.get('file')}: {ct.get('flag')} "
                         "joins it onto the runs as their conditions")
    return lines


__all__ = ["ColumnRole", "Inspection", "inspect_paths", "render_inspection"]
