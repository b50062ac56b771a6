"""From collected points to the canonical table: options, resumed runs, cadence joins, provenance.

The policy (ADAPTERS.md, "Resumed runs, duplicates and cadence"):

* a duplicated ``(run, step, metric)`` is resolved by *last writer wins* — the point with the
  latest wall time, then the one read last (file order, then position in the file) — and the
  number of points each run had replaced is reported as ``RESUMED_DUPLICATES``;
* metrics logged at different cadences are joined on step without interpolation: a row holds
  NaN where a metric was not logged at that step;
* accuracies are kept as logged: percent or fraction is the audit's decision, taken once over
  every input (``grokaudit.roles.decide_percent``).

Everything here is vectorized over points (one lexsort, one scatter per metric).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from grokaudit.errors import ConfigError, ErrorCode, LogFormatError
from grokaudit.roles import accuracy_candidates, choose_accuracy, name_number
from grokaudit.schema import PROVENANCE_KEY, SCHEMA_VERSION, STEP_MAX
from grokaudit.text import safe

from .continuations import merge_continued
from .points import Chunk, Finding, Points

#: Names tried, in order, when no ``test_acc`` (``train_acc``) metric was logged.


@dataclass(frozen=True)
class ReadOptions:
    """What the user asked for on top of the raw log (``--map``, ``--run-from``, ``--cond``,
    ``--on-duplicate``)."""

    mapping: Mapping[str, str] | None = None
    run_from: str | None = None  #: "path", "column", or the name of the column holding run ids
    cond: Mapping[str, str] | None = None  #: condition name -> regex over the run's path
    #: ``--on-duplicate``: rows of one (run, step) of a table with a run column that hold
    #: different values are refused (``error``) or resolved (``first``, ``last``)
    on_duplicate: str = "error"
    #: ``--long name=COL,value=COL[,keys=COL,COL]``: a long table's name, value and key
    #: columns (``{"name": …, "value": …, "keys": "a,b"}``); None: detected when unambiguous
    long: Mapping[str, str] | None = None
    #: ``--columns a,b,c``: the names of a header-less numeric text file's columns
    columns: tuple[str, ...] | None = None
    #: ``--conditions-from FILE --on COL``: a one-row-per-run table joined onto the runs
    conditions_from: str | None = None
    on: str | None = None
    #: ``--step-scale N|cadence``: every step times N, or each run whose step column counts
    #: log events times the cadence its config declares (:mod:`.cadence`)
    step_scale: int | str | None = None
    #: ``--step-from row``: a table with no step column has its rows numbered as its steps
    step_from: str | None = None


# ------------------------------------------------------------------------------------------
# options: renaming metrics and runs, conditions from paths
# ------------------------------------------------------------------------------------------

def apply_options(points: Points, options: ReadOptions, path: str, *, whole: bool = True
                  ) -> None:
    """Apply ``--map``, ``--run-from path`` and ``--cond`` to ``points`` in place.

    ``whole``: ``path`` is the whole log (not one of several inputs merged by run): a
    ``--cond`` that matches the path of none of its runs is then refused (a typo would pool
    the sweep's arms as replicates). A ``--map`` source the log does not hold is noted."""
    mapping = dict(options.mapping or {})
    if mapping:
        held = {c.metric for c in points.chunks} | {
            k for conds in points.conditions.values() for k in conds}
        # (a table reader has already read the columns mapped to ``step`` and ``run``)
        for src in sorted(k for k, v in mapping.items()
                          if k not in held and v not in ("step", "run")):
            points.warnings.append(f"--map {src}={mapping[src]}: the log has no column {src!r}; "
                                   "nothing was renamed")
        for c in points.chunks:
            c.metric = mapping.get(c.metric, c.metric)
        for run, conds in list(points.conditions.items()):
            points.conditions[run] = {mapping.get(k, k): v for k, v in conds.items()}
    if options.run_from == "path":
        rename = {r: points.origins.get(r, r) for r in _runs(points)}
        for c in points.chunks:
            c.run = rename[c.run]
        points.conditions = {rename.get(r, r): v for r, v in points.conditions.items()}
        points.origins = {rename.get(r, r): o for r, o in points.origins.items()}
        points.downsampled_runs = {rename.get(r, r) for r in points.downsampled_runs}
    for key, given in (options.cond or {}).items():
        # ``REGEX:num``: the captured token is a number as names write it (name_number)
        pattern, as_number = (given[:-4], True) if given.endswith(":num") else (given, False)
        try:
            rx = re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"--cond {safe(key)}={safe(pattern)!r} is not a valid regular "
                              f"expression ({exc}); fix the pattern", option="--cond",
                              code=ErrorCode.INVALID_OPTION) from None
        missed = []
        for run in _runs(points):
            m = rx.search(points.origins.get(run, run)) or rx.search(run)
            if m is None:
                missed.append(run)
                continue
            raw = m.group(1) if rx.groups else m.group(0)
            _refuse_fragment(key, given, m, rx.groups > 0)
            points.add_condition(run, key, _name_value(key, given, raw, run) if as_number
                                 else parse_scalar(raw))
        runs = _runs(points)
        if whole and runs and len(missed) == len(runs):
            raise ConfigError(
                f"--cond {safe(key)}={safe(pattern)!r} matches the path of none of the "
                f"{len(runs)} run(s) of {safe(path)} (first: "
                f"{safe(points.origins.get(runs[0], runs[0]))!r}); fix the pattern "
                "(`grokaudit inspect` shows the runs' paths)", option="--cond",
                code=ErrorCode.INVALID_OPTION)
        if missed:
            points.warnings.append(
                f"--cond {key}: no match in the path of {len(missed)} run(s) "
                f"(first: {missed[0]!r}); {key} is missing for them")
    _apply_aliases(points, {v for v in mapping.values() if v in ("test_acc", "train_acc")},
                   mapped_from={v: k for k, v in mapping.items() if v in ("test_acc", "train_acc")})


def _runs(points: Points) -> list[str]:
    return sorted({c.run for c in points.chunks})


def _apply_aliases(points: Points, forced: set[str] = frozenset(),  # type: ignore[assignment]
                   mapped_from: Mapping[str, str] | None = None) -> None:
    """Read the best-fitting columns as ``test_acc`` and ``train_acc``
    (:func:`grokaudit.roles.choose_accuracy`: a matching name, logged at no fewer than half the
    points of the most-logged candidate — the log's own ``test_acc`` counts as one, so a
    final test logged three times is not preferred to a validation curve), and say which,
    and what else could have been, in the warnings. A target named by ``--map`` (``forced``)
    is left as the user named it; ``mapped_from``: each such target's column as logged."""
    counts: dict[str, int] = {}
    for c in points.chunks:
        counts[c.metric] = counts.get(c.metric, 0) + int(c.step.size)
    read = dict(counts)  # the names as read: a twin renamed test_acc is still a twin,
    for target, source in (mapped_from or {}).items():  # also one renamed by --map
        if target in read:
            read.setdefault(source, read[target])
    for target in ("test_acc", "train_acc"):
        if target in forced:
            continue
        other = "train_acc" if target == "test_acc" else "test_acc"
        choice = choose_accuracy(counts, target, exclude=(other,), beside=read)
        if choice is None:
            cands = accuracy_candidates(counts, target, exclude=(other,), beside=read)
            if len(cands) > 1 and target not in counts:
                points.extra.setdefault("accuracy_ambiguous", {})[target] = [
                    n for n, _, _ in cands[:8]]
            continue
        if choice.chosen == target:
            continue
        kept = ""
        if target in counts:  # the log's own column, passed over: kept under another name
            keep_as = f"{target}_logged"
            k = 2
            while keep_as in counts:
                keep_as, k = f"{target}_logged{k}", k + 1
            for c in points.chunks:
                if c.metric == target:
                    c.metric = keep_as
            counts[keep_as] = counts.pop(target)
            kept = (f"; the log's own {target!r} ({counts[keep_as]} points) is kept as "
                    f"{keep_as!r} (--map {target}={target} reads it as {target})")
        for c in points.chunks:
            if c.metric == choice.chosen:
                c.metric = target
        counts[target] = counts.pop(choice.chosen)
        alts = [(a, n) for a, n in choice.alternatives if a != target]
        also = ""
        if alts:
            also = " (also a candidate: " + ", ".join(
                f"{a!r}, {n} points" for a, n in alts[:3]) + ")"
        note = (f"read metric {choice.chosen!r} as {target!r}, {choice.points} points{also}"
                f"{kept}; choose with --map NAME={target}")
        points.warnings.append(note)
        points.shown.add(note)
        points.extra.setdefault("accuracy_columns", {})[target] = {
            "column": choice.chosen, "points": choice.points,
            "alternatives": [list(a) for a in alts]}
    _note_runs_with_another_accuracy(points)


def _note_runs_with_another_accuracy(points: Points) -> None:
    """Runs without the column read as the test accuracy that logged another accuracy column
    (a folder mixing two loggers: ``test_acc`` in some files, ``val_accuracy`` in another):
    set aside by the audit (RUN_WITHOUT_ACCURACY) — said here with the column they logged,
    never as if they had logged no accuracy."""
    logged: dict[str, set[str]] = {}
    for c in points.chunks:
        logged.setdefault(c.run, set()).add(c.metric)
    if not any("test_acc" in m for m in logged.values()):
        return  # no test accuracy anywhere: refused as such
    for run, metrics in sorted(logged.items()):
        if "test_acc" in metrics:
            continue
        other = [n for n, _, _ in accuracy_candidates(dict.fromkeys(metrics, 1), "test_acc",
                                                      exclude=("train_acc",))]
        if other:
            points.extra.setdefault("runs_with_another_accuracy", {})[run] = other[0]
            points.warnings.append(
                f"run {safe(run)!r} logged {safe(other[0])!r}, not the column the other runs' "
                "test accuracy is read from: it is set aside (RUN_WITHOUT_ACCURACY); audit its "
                "file on its own to read it")


#: What continues a number in a name (``0|p1``, ``1|em3``, ``0|.1``): a group that ends
#: before it captured a fragment of the number. (``_`` is not among them: in names it
#: separates far more often than it is a decimal point, ``mnist_1000_2.0``.)
_MORE_NUMBER = re.compile(r"(?:[.p][0-9]|e[-+m]?[0-9])", re.IGNORECASE)


def _refuse_fragment(key: str, given: str, m: re.Match[str], grouped: bool) -> None:
    """Refuse a ``--cond`` group that captures the start of a number written on in the name
    (``wd_([0-9]+)`` on ``wd_0p1`` reads 0, not 0.1): never a number the name does not say."""
    end = m.end(1) if grouped else m.end(0)
    raw = m.group(1) if grouped else m.group(0)
    if raw and raw[-1].isdigit() and _MORE_NUMBER.match(m.string, end):
        token = m.string[m.start(1) if grouped else m.start(0):]
        whole = re.match(r"[0-9]+(?:[.p_][0-9]+)?(?:e[-+m]?[0-9]+)?", token, re.IGNORECASE)
        raise ConfigError(
            f"--cond {safe(key)}={safe(given)!r} captures {safe(raw)!r} of "
            f"{safe(whole.group(0) if whole else token)!r} in {safe(m.string)!r}: a fragment "
            f"of a number; capture it whole and read it with :num (--cond {safe(key)}="
            f"'...([0-9pme_.]+)':num)", option="--cond", code=ErrorCode.INVALID_OPTION)


def _name_value(key: str, given: str, raw: str, run: str) -> float:
    """A ``--cond KEY=REGEX:num`` token as its number (``1em3``, ``0p1``, ``1_5``), or the
    option refused naming the run and the token: a pattern that captures a fragment of a
    token, or text, never becomes a number it does not say."""
    x = name_number(raw)
    if x is None:
        raise ConfigError(
            f"--cond {safe(key)}={safe(given)!r}: {safe(raw)!r} in run {safe(run)!r} is not a "
            "number as names write them (1e-3, 1em3, 0p1, 3p0, 1_5); fix the pattern's group "
            "to capture the whole number", option="--cond", code=ErrorCode.INVALID_OPTION)
    return x


def parse_scalar(raw: str) -> Any:
    """A value read as text (a ``--cond`` capture, an MLflow param file) as the condition it
    names: an int, else a float, else the text itself. One rule for every reader, so ``wd``
    captured from a path and ``wd`` logged as a param compare equal."""
    for conv in (int, float):
        try:
            return conv(raw)
        except ValueError:
            pass
    return raw


# ------------------------------------------------------------------------------------------
# the canonical table
# ------------------------------------------------------------------------------------------

def build_table(points: Points, *, adapter: str, adapter_version: str, path: str,
                require_test_acc: bool = True, on_duplicate: str | None = None) -> pa.Table:
    """Merge ``points`` into the canonical Arrow table with provenance in its metadata.

    Rows are sorted by run, then step. Raises :class:`LogFormatError` when nothing was read or
    (unless ``require_test_acc`` is False: one part of a log split over paths) no ``test_acc``
    metric exists.
    """
    if not points.chunks:
        raise LogFormatError(f"no metric points found in this {adapter} log; check that it is "
                             "the right path and format (`--format`)", path=path,
                             code=ErrorCode.NO_ROWS)
    _labels_apart(points)
    _series_everywhere(points)
    runs = _runs(points)
    metric_names = sorted({c.metric for c in points.chunks})
    _check_metric_names(points, metric_names, require_test_acc, path)
    ordered: list[str] = [m for m in ("test_acc", "train_acc") if m in metric_names]
    ordered += [m for m in metric_names if m not in ordered]
    per_run, n_read, n_replaced, n_repeated = _last_writer_wins(points, runs, ordered,
                                                                on_duplicate)
    merge_continued(points, runs, per_run)  # a run and its own continuation: one run
    _check_step_range(per_run, path)
    row_step, row_run, columns = _join_on_steps(per_run, ordered)
    _infinities_as_missing(columns, points, path)
    # accuracies are kept as logged: percent or fraction is decided once, by the audit, over
    # every input and under --acc-scale (grokaudit.roles.decide_percent)
    table = _assemble(points, runs, row_run, row_step, columns)
    run_offsets = np.searchsorted(row_run, np.arange(len(runs) + 1))
    present = [r for r in range(len(runs)) if run_offsets[r + 1] > run_offsets[r]]
    provenance = _provenance(points, adapter=adapter, adapter_version=adapter_version,
                             n_read=n_read, n_replaced=n_replaced, n_repeated=n_repeated,
                             n_runs=len(present))
    meta = {PROVENANCE_KEY: json.dumps(provenance, sort_keys=True, default=str).encode()}
    return table.replace_schema_metadata(meta)


def _labels_apart(points: Points) -> None:
    """Conditions read from one-run CSV files as integers, where one file wrote the value with
    a leading zero (``007``, recorded by :mod:`grokaudit.csvread`) and another file's run has
    the same number spelled otherwise (``7``): no file saw both spellings, and the two arms
    would be pooled. Such a condition is kept as each run's text, as one CSV holding both
    keeps it."""
    for name, labelled in sorted((points.extra.pop("csv_labels", None) or {}).items()):
        spelled: dict[int, set[str]] = {}
        texts: dict[str, str] = {}
        for run, conds in points.conditions.items():
            v = conds.get(name)
            if isinstance(v, bool) or not isinstance(v, int):
                continue
            texts[run] = labelled.get(run, str(v))
            spelled.setdefault(v, set()).add(texts[run])
        twice = sorted(sorted(t) for t in spelled.values() if len(t) > 1)
        if not twice:
            continue
        for run, text in texts.items():
            points.conditions[run][name] = text
        points.warnings.append(
            f"condition {safe(name)!r} is written {safe(twice[0][0])!r} in some runs' files and "
            f"{safe(twice[0][1])!r} in others: one number, two labels; kept as text, so "
            "their runs stay apart")


def _series_everywhere(points: Points) -> None:
    """A column logged per step in one run is a series in every run: where a run's values of
    it were constant (read as a condition of that run), they become that run's series, at each
    step the run logged (it was split into ``X`` and ``X_cond`` and offered as an axis). Only a
    value read from the run's own column: a config file's or ``--cond``'s stays a condition
    (renamed ``X_cond`` beside the series, as before): a sweep's axis is never flattened."""
    series = {c.metric for c in points.chunks}
    steps: dict[str, list[np.ndarray]] = {}
    for c in points.chunks:
        steps.setdefault(c.run, []).append(c.step)
    own = {(c.run, c.metric) for c in points.chunks}
    moved: dict[str, int] = {}
    for run, conds in points.conditions.items():
        for key in [k for k in conds if k in series and (run, k) not in own
                    and (run, k) in points.constant_columns and k not in points.outcomes]:
            v = conds[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or run not in steps:
                continue
            st = np.unique(np.concatenate(steps[run]))
            points.chunks.append(Chunk(run, key, st, np.full(st.size, float(v)), None))
            del conds[key]
            moved[key] = moved.get(key, 0) + 1
    for key, n in sorted(moved.items()):
        points.warnings.append(
            f"{safe(key)!r} is logged per step in some runs and constant in {n} other(s): a "
            "series in every run (constant where it did not change), never a condition")


def _check_metric_names(points: Points, metric_names: list[str], require_test_acc: bool,
                        path: str) -> None:
    """A test accuracy among the metrics (unless a part of a log), none named like a canonical
    column (``run``, ``step``)."""
    if "test_acc" not in metric_names and require_test_acc:
        ambiguous = (points.extra.get("accuracy_ambiguous") or {}).get("test_acc")
        if ambiguous:
            shown = ", ".join(repr(safe(m)) for m in ambiguous[:6])
            raise LogFormatError(
                f"several columns could be the test accuracy, and nothing tells them apart "
                f"({shown}); name one with --map NAME=test_acc", path=path, column="test_acc",
                code=ErrorCode.MISSING_COLUMN)
        shown = ", ".join(repr(safe(m)) for m in metric_names[:8])
        more = f", … ({len(metric_names)} in all)" if len(metric_names) > 8 else ""
        raise LogFormatError(
            f"no test accuracy among the metrics read ({shown}{more}); name it with "
            f"--map NAME=test_acc", path=path, column="test_acc", code=ErrorCode.MISSING_COLUMN)
    reserved = [m for m in ("run", "step") if m in metric_names]
    if reserved:
        raise LogFormatError(
            f"a metric is called {reserved[0]!r}, the name of a column of the canonical table; "
            f"rename it with --map {reserved[0]}=logged_{reserved[0]}", path=path,
            column=reserved[0], code=ErrorCode.RESERVED_COLUMN)


#: Per run (in the order of ``runs``): metric index -> (steps, values), steps increasing.
_Series = list[dict[int, tuple[np.ndarray, np.ndarray]]]


def _last_writer_wins(points: Points, runs: list[str], ordered: list[str],
                      on_duplicate: str | None = None) -> tuple[_Series, int, int, int]:
    """Each (run, metric)'s points, one per step: the last written (by wall time, then read
    order) wins, and each run that repeated a step is a ``RESUMED_DUPLICATES`` finding.
    With ``on_duplicate`` ``first``/``last`` (table files, which hold no write times) a step
    given two values is a duplicate, as ``check`` reads two inputs: the one read first/last is
    kept and counted. Returns the series, the points read, the points replaced and the points
    that repeated a step with the value kept there (read once, replacing nothing)."""
    run_code = {r: i for i, r in enumerate(runs)}
    metric_code = {m: i for i, m in enumerate(ordered)}
    groups: dict[tuple[int, int], list[int]] = {}
    for k, c in enumerate(points.chunks):
        groups.setdefault((run_code[c.run], metric_code[c.metric]), []).append(k)
    per_run: _Series = [{} for _ in runs]
    n_read = 0
    n_replaced = np.zeros(len(runs), dtype=np.int64)
    n_repeated = 0
    for (r, m), ks in groups.items():
        cs = [points.chunks[k] for k in ks]
        n_read += sum(c.step.size for c in cs)
        if len(cs) == 1 and (cs[0].step.size < 2 or bool(np.all(np.diff(cs[0].step) > 0))):
            per_run[r][m] = (cs[0].step, cs[0].value)  # the common case: nothing to resolve
            continue
        st = np.concatenate([c.step for c in cs])
        val = np.concatenate([c.value for c in cs])
        wall = np.concatenate([c.wall_time if c.wall_time is not None
                               else np.full(c.step.size, np.nan) for c in cs])
        order = np.lexsort((np.arange(st.size), wall, st))
        st, val = st[order], val[order]
        last = np.ones(st.size, dtype=bool)
        last[:-1] = st[1:] != st[:-1]
        if on_duplicate is not None:  # table files: duplicates, not a resume
            keep = _duplicates(st, val, on_duplicate, points)
            per_run[r][m] = (st[last], val[last]) if keep is None else (st[keep], val[keep])
            continue
        # a point repeated with the value kept (Lightning writes its ``epoch`` tag twice at
        # one step) replaces nothing: only a different value says the run was resumed
        idx_kept = np.searchsorted(st[last], st)  # each point's step among the kept ones
        kv = val[last][idx_kept]
        same = (val == kv) | (np.isnan(val) & np.isnan(kv))
        n_replaced[r] += int(np.count_nonzero(~last & ~same))
        n_repeated += int(np.count_nonzero(~last & same))
        per_run[r][m] = (st[last], val[last])
    for r in np.flatnonzero(n_replaced).tolist():
        n = int(n_replaced[r])
        points.findings.append(Finding(
            "RESUMED_DUPLICATES",
            f"{n} logged point(s) repeated an earlier (step, metric) of this run (a resumed or "
            "rewound run); the last written value was kept", run=runs[r], count=n))
    return per_run, n_read, int(n_replaced.sum()), n_repeated


def _duplicates(st: np.ndarray, val: np.ndarray, on_duplicate: str, points: Points
                ) -> np.ndarray | None:
    """The points to keep, under ``--on-duplicate first|last``, of one (run, metric) of table
    files whose steps repeat (sorted by step, read order within a step), or None when every
    repeated step holds one value (the same row in two files: read once, as ``check`` reads
    two inputs)."""
    same = np.zeros(st.size, dtype=bool)
    same[1:] = st[1:] == st[:-1]
    equal = np.zeros(st.size, dtype=bool)
    equal[1:] = (val[1:] == val[:-1]) | (np.isnan(val[1:]) & np.isnan(val[:-1]))
    differs = same & ~equal
    if not differs.any():
        return None
    starts = ~same
    group = np.cumsum(starts) - 1
    if on_duplicate == "first":
        keep = starts
    else:
        keep = np.r_[starts[1:], True]
    from grokaudit.loader import add_resolved

    add_resolved(points.extra, on_duplicate, int(np.unique(group[differs]).size))
    return keep


def _check_step_range(per_run: _Series, path: str) -> None:
    """Steps are in [0, 2**53] (``NEGATIVE_STEP``, ``STEP_OUT_OF_RANGE``)."""
    lows = [int(st.min()) for d in per_run for st, _ in d.values() if st.size]
    highs = [int(st.max()) for d in per_run for st, _ in d.values() if st.size]
    if lows and min(lows) < 0:
        raise LogFormatError(f"negative step ({min(lows)}) in the log; steps must be >= 0",
                             path=path, column="step", code=ErrorCode.NEGATIVE_STEP)
    if highs and max(highs) > STEP_MAX:
        raise LogFormatError(f"step {max(highs)} in the log is beyond the largest supported "
                             f"step {STEP_MAX} (2**53); a corrupted or mis-typed step?",
                             path=path, column="step", code=ErrorCode.STEP_OUT_OF_RANGE)


def _join_on_steps(per_run: _Series, ordered: list[str]
                   ) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """The metrics joined on (run, step), no interpolation: the step and run index of every
    row, and each metric's column (NaN where a run did not log it at that step)."""
    step_parts: list[np.ndarray] = []
    col_parts: dict[str, list[np.ndarray]] = {name: [] for name in ordered}
    counts = np.zeros(len(per_run), dtype=np.int64)
    for r, metrics in enumerate(per_run):
        if not metrics:  # a run read as the start of another (continuations): no rows
            continue
        run_series = list(metrics.values())
        first = run_series[0][0]
        if all(a[0] is first or np.array_equal(a[0], first) for a in run_series[1:]):
            rows = first
        else:
            rows = np.unique(np.concatenate([a[0] for a in run_series]))
        counts[r] = rows.size
        step_parts.append(rows)
        for i, name in enumerate(ordered):
            col = np.full(rows.size, np.nan)
            if i in metrics:
                st, val = metrics[i]
                col[np.searchsorted(rows, st) if st is not rows else slice(None)] = val
            col_parts[name].append(col)
    row_step = np.concatenate(step_parts)
    row_run = np.repeat(np.arange(len(per_run)), counts)
    return row_step, row_run, {name: np.concatenate(parts) for name, parts in col_parts.items()}


def _infinities_as_missing(columns: dict[str, np.ndarray], points: Points, path: str) -> None:
    """±inf in a metric is read as missing (NaN, with a warning); in an accuracy it is refused
    (``INFINITE_VALUE``), as the canonical table refuses it (in place)."""
    inf_cols = [name for name, col in columns.items() if np.isinf(col).any()]
    for acc in ("test_acc", "train_acc"):  # as the canonical table: an accuracy is in [0, 1]
        if acc in inf_cols:
            raise LogFormatError(f"column {acc!r} holds ±inf; accuracies are in [0, 1]",
                                 path=path, column=acc, code=ErrorCode.INFINITE_VALUE)
    if inf_cols:
        n_inf = sum(int(np.isinf(columns[name]).sum()) for name in inf_cols)
        for name in inf_cols:
            columns[name][np.isinf(columns[name])] = np.nan
        points.warnings.append(f"{n_inf} infinite value(s) in {inf_cols} read as missing (NaN)")


def _assemble(points: Points, runs: list[str], row_run: np.ndarray, row_step: np.ndarray,
              columns: dict[str, np.ndarray]) -> pa.Table:
    """The canonical table: run, step, the metrics, then each condition on every row of its
    run (renamed, with a warning, where it has a metric's or a canonical column's name)."""
    run_dict = pa.array(runs, type=pa.string())
    arrays: dict[str, pa.Array] = {
        "run": pa.DictionaryArray.from_arrays(pa.array(row_run.astype(np.int32)), run_dict)
        .cast(pa.string()),
        "step": pa.array(row_step, type=pa.int64()),
    }
    for name, col in columns.items():
        arrays[name] = pa.array(col, type=pa.float64())
    for key, values in _condition_columns(points, runs).items():
        name = key
        if name in arrays:  # kept under another name: nothing is dropped
            name = f"{key}_cond"
            k = 2
            while name in arrays:
                name, k = f"{key}_cond{k}", k + 1
            points.warnings.append(f"condition {key!r} has the name of a logged metric or of a "
                                   f"canonical column; written as column {name!r}")
        arrays[name] = pa.array(values).take(pa.array(row_run))
    return pa.table(arrays)


def _provenance(points: Points, *, adapter: str, adapter_version: str, n_read: int,
                n_replaced: int, n_runs: int, n_repeated: int = 0) -> dict[str, Any]:
    """The table's provenance: the reader, its sources, warnings and findings, the points read
    and replaced, the runs present, what the reader noted (``points.extra``)."""
    provenance: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "adapter": adapter,
        "adapter_version": adapter_version,
        "source_files": list(points.files),
        "warnings": list(points.warnings),
        "findings": [f.to_dict() for f in points.findings],
        "downsampled_runs": sorted(points.downsampled_runs),
        "points_read": n_read,
        "points_replaced": n_replaced,
        "runs": n_runs,
        # points that repeated a step with the value kept there: read once, nothing replaced
        **({"points_repeated": n_repeated} if n_repeated else {}),
        **points.extra,
    }
    if points.outcomes:
        provenance["outcomes"] = sorted(points.outcomes)
    if points.set_aside:
        provenance["set_aside"] = dict(sorted(points.set_aside.items()))
    notes = [w for w in points.warnings if w not in points.shown]
    if notes:
        provenance["notes"] = notes
    return provenance


def _condition_columns(points: Points, runs: list[str]) -> dict[str, list[Any]]:
    keys = sorted({k for r in runs for k in points.conditions.get(r, {})})
    out: dict[str, list[Any]] = {}
    for k in keys:
        vals = [points.conditions.get(r, {}).get(k) for r in runs]
        if all(v is None or isinstance(v, (bool, np.bool_)) for v in vals) and \
                any(v is not None for v in vals):
            out[k] = [None if v is None else bool(v) for v in vals]
            continue
        numeric = all(v is None or (isinstance(v, (int, float, np.integer, np.floating))
                                    and not isinstance(v, (bool, np.bool_))) for v in vals)
        if numeric:
            if all(v is None or float(v).is_integer() and isinstance(v, (int, np.integer))
                   for v in vals) and all(v is not None for v in vals):
                out[k] = [int(v) for v in vals]  # type: ignore[arg-type]
            else:
                out[k] = [np.nan if v is None else float(v) for v in vals]
        else:
            out[k] = [None if v is None else str(v) for v in vals]
    return out
