"""One refusal stage for a read table: what ``check`` refuses in a log, for every command that
reads a log whole.

``check`` validates a log in stages as it reads it (:func:`grokaudit.schema.build_log_table`:
the columns, the rows grouped by run, the accuracies, the other columns split into series and
conditions), column by column, freeing each once read; then its design refuses a
``--by``/``--cell`` that is no condition. :func:`refuse_table` is those refusals for a table
read whole, built from the same rules — ``check``'s first stage itself
(``schema._check_columns``), the run-id rules of :mod:`grokaudit.identity`, the refusal
constructors of ``schema`` and ``design`` — so that no command keeps a copy that can drift:
``grokaudit watch`` calls it on every read, with ``check``'s codes.

A log being written (``waiting``) may not hold every named column yet: a ``--metric`` or
``--grok-on`` column not seen so far is waited for while the log grows, and refused as
``check`` refuses it (``METRIC_NOT_FOUND``, ``MISSING_COLUMN``) once nothing more will come
(``watch --once``, every run done: :func:`refuse_unseen`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import pyarrow as pa

from .config import AuditConfig
from .errors import ErrorCode, LogFormatError
from .identity import check_run_ids, refuse_missing_run_ids
from .text import safe


def _required(cfg: AuditConfig) -> tuple[str, ...]:
    """The columns ``check`` requires: run, step and the grok criterion's column."""
    from .schema import REQUIRED

    return REQUIRED if cfg.grok_on == "test_acc" else (*REQUIRED[:2], cfg.grok_on)


def refuse_table(table: pa.Table, cfg: AuditConfig, *, path: str | None,
                 partial: bool = False, waiting: bool = False,
                 frame: pd.DataFrame | None = None) -> None:
    """Raise what ``check`` raises on this table (see the module's docstring), in ``check``'s
    order: the columns (``check``'s first stage: a column twice, a required column missing,
    a ``--metric`` missing, reserved or not numeric, no rows), rows without a run id, one run
    id under two spellings, a ``--metric``/``--grok-on`` column that is a condition
    (``NOT_A_SERIES``), text that changes within a run (``BAD_COLUMN_TYPE`` when it is a
    series with a text cell, else ``NOT_CONSTANT_IN_RUN``), a ``--by``/``--cell`` column that
    is not a condition (``NOT_A_CONDITION``).

    ``partial``: the log may still grow: a named column flat in every run and equal between
    runs is not refused (a metric logged as a constant over a run's first evaluations).
    ``waiting``: a named or required column not there yet is waited for, not refused.
    ``frame``: the table already converted to pandas, when the caller has it.
    Raises :class:`~grokaudit.errors.LogFormatError`."""
    from .schema import _check_columns

    names = [str(c) for c in table.column_names]
    if not waiting:
        _check_columns(table, cfg.metrics, path, cfg.grok_on)
    elif all(c in names for c in _required(cfg)):
        _check_columns(table, [m for m in cfg.metrics if m in names], path, cfg.grok_on)
    df = table.to_pandas() if frame is None else frame
    if "run" not in df.columns:  # waited for: no run id written yet
        return
    refuse_missing_run_ids(int(df["run"].isna().sum()), path)
    refuse_missing_run_ids(int((df["run"].astype(str).str.strip() == "").sum()), path,
                           empty=True)
    check_run_ids(df["run"].astype(str).unique(), path)
    if "step" not in df.columns:
        return
    num = [c for c in df.columns if c not in ("run", "step") and df[c].dtype.kind in "fiub"]
    by_run = df.groupby("run", sort=False, observed=True)
    _refuse_named_conditions(df, by_run, num, cfg, path, partial)
    _refuse_changing_text(df, by_run, num, cfg, path)
    _refuse_not_conditions(df, by_run, cfg, path)


def refuse_unseen(columns: Mapping[str, pa.DataType], cfg: AuditConfig, path: str | None
                  ) -> None:
    """Nothing more will be logged (``watch --once``, every run done): a column ``cfg`` names
    or requires that no read has seen (``columns``: every column seen, with its type) is
    refused as ``check`` refuses it — ``METRIC_NOT_FOUND`` for a ``--metric``,
    ``MISSING_COLUMN`` for a required column or the ``--grok-on`` column."""
    from .schema import _check_columns

    if not columns or all(c in columns for c in (*_required(cfg), *cfg.metrics)):
        return
    # check's first stage on the columns seen: it names the first one missing (its
    # column checks come before its check of the rows, which an empty table would fail)
    _check_columns(pa.schema(list(columns.items())).empty_table(), cfg.metrics, path,
                   cfg.grok_on)


def _refuse_named_conditions(df: pd.DataFrame, by_run: Any, num: Sequence[str],
                             cfg: AuditConfig, path: str | None, partial: bool) -> None:
    """A ``--metric``/``--grok-on`` column set per run (constant within every run, with more
    values than runs, NaN to a value counting as a change): a condition, ``NOT_A_SERIES``.
    A ``--grok-on`` loss may be flat (a run that never learned) unless its runs differ; in a
    ``partial`` log so may a metric (flat so far, equal in every run)."""
    from .schema import metric_not_a_series

    loss = () if cfg.grok_on == "test_acc" else (cfg.grok_on,)
    named = list(dict.fromkeys(c for c in (*cfg.metrics, *loss) if c in num))
    if not named:
        return
    changes = by_run[named].nunique(dropna=False).max()
    for c in named:
        values = df[c].dropna()
        if int(changes[c]) <= 1 and len(values) > by_run.ngroups and (
                not (partial or c in loss) or values.max() > values.min()):
            raise metric_not_a_series(c, path, grok_on=c in loss)


def _refuse_changing_text(df: pd.DataFrame, by_run: Any, num: Sequence[str],
                          cfg: AuditConfig, path: str | None) -> None:
    """A text column that changes within a run: a series with a text cell (a known metric or
    series, or mostly numbers: ``BAD_COLUMN_TYPE``, as ``check``'s stage 4), else a condition
    that is not constant (``NOT_CONSTANT_IN_RUN``)."""
    from .schema import KNOWN_SERIES, is_known_metric, mostly_numbers

    text = [c for c in df.columns if c not in ("run", "step", *num)]
    if not text:
        return
    changes = by_run[text].nunique(dropna=False)
    for c in text:
        if int(changes[c].max()) <= 1:
            continue
        name = str(c)
        if name in cfg.metrics or is_known_metric(name) or name in KNOWN_SERIES \
                or mostly_numbers([str(x) for x in df[c].dropna().unique()]):
            raise LogFormatError(
                f"column {safe(name)!r} holds text that changes within a run: a per-step "
                "number with a text cell; write it as numbers, or leave the cell empty "
                "(`grokaudit check` names the first text cell)",
                path=path, column=name, code=ErrorCode.BAD_COLUMN_TYPE)
        run = str(changes[c].index[changes[c].to_numpy() > 1][0])
        raise LogFormatError(
            f"condition column {safe(name)!r} is not constant within run {safe(run)!r}; "
            "split the run or drop the column", path=path, column=name,
            code=ErrorCode.NOT_CONSTANT_IN_RUN)


def _refuse_not_conditions(df: pd.DataFrame, by_run: Any, cfg: AuditConfig,
                           path: str | None) -> None:
    """A ``--by``/``--cell`` column that is absent or changes within a run
    (``NOT_A_CONDITION``, as ``check``'s design refuses it)."""
    from .design import not_a_condition

    conditions = list(dict.fromkeys(c for c in (cfg.by, *cfg.cell) if c))
    if not conditions:
        return
    present = [c for c in conditions if c in df.columns]
    changes = by_run[present].nunique(dropna=False).max() if present else {}
    for c in conditions:
        if c not in df.columns or int(changes[c]) > 1:
            raise not_a_condition(
                "--by" if c == cfg.by else "--cell", c, c in df.columns,
                f"columns read: {', '.join(sorted(safe(str(x)) for x in df.columns))}",
                path)


__all__ = ["refuse_table", "refuse_unseen"]
