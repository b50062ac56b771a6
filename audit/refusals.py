"""One refusal stage for a table: what ``check`` refuses in a log, for every command that
reads one.

:func:`validated_log` is the stage: check's five stages over the table
(:func:`grokaudit.schema.build_log_table`: the columns, the rows grouped by run, the
accuracies, the other columns split into series and conditions, the rows set aside), under the
config's accuracy scales, duplicate rule, metrics and grok criterion. ``check``, ``report``,
the live audit, ``inspect`` and the claim commands call it (through
:func:`grokaudit.api.validated_log`, the same function); :func:`refuse_table` is the same
stage for ``grokaudit watch`` followed by the design's refusal of a ``--by``/``--cell``
column that is no condition (:meth:`grokaudit.design.Design.validate`, as ``check`` refuses
it). No command keeps a copy of a rule that can drift.

A log being written (``waiting``) may not hold every named column yet: a ``--metric`` or
``--grok-on`` column not seen so far is waited for while the log grows, and refused as
``check`` refuses it (``METRIC_NOT_FOUND``, ``MISSING_COLUMN``) once nothing more will come
(``watch --once``, every run done: :func:`refuse_unseen`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
import pyarrow as pa

from .config import AuditConfig, column_scales
from .design import Axis, Design, not_a_condition
from .errors import ErrorCode, LogFormatError, param_name
from .kernels import NUMPY, Kernel
from .schema import REQUIRED, LogTable, Owned, _check_columns, build_log_table
from .text import safe


def _required(cfg: AuditConfig) -> tuple[str, ...]:
    """The columns ``check`` requires: run, step and the grok criterion's column."""
    return REQUIRED if cfg.grok_on == "test_acc" else (*REQUIRED[:2], cfg.grok_on)


def validated_log(table: pd.DataFrame | pa.Table | Owned, cfg: AuditConfig,
                  source: str | None = None, *, metrics: Sequence[str] | None = None,
                  growing: bool = False, kernel: Kernel = NUMPY) -> LogTable:
    """The canonical table validated under ``cfg`` (accuracy scale, duplicates, the metric
    columns, the grok criterion's column): the one refusal stage every command calls.
    ``metrics`` overrides ``cfg.metrics`` (the claim commands name none); ``growing``: the log
    is still being written (see :func:`~grokaudit.schema.build_log_table`); ``kernel``: what
    runs its passes over the rows (:mod:`grokaudit.kernels`; numpy by default, the same
    answer on any). Raises :class:`~grokaudit.errors.LogFormatError`."""
    return build_log_table(table, path=source, acc_scale=cfg.acc_scale,
                           column_scales=column_scales(cfg),
                           on_duplicate=cfg.on_duplicate,
                           metrics=cfg.metrics if metrics is None else metrics,
                           grok_on=cfg.grok_on, growing=growing, kernel=kernel)


def refuse_table(table: pa.Table, cfg: AuditConfig, *, path: str | None,
                 partial: bool = False, waiting: bool = False) -> LogTable | None:
    """Raise what ``check`` raises on this table: :func:`validated_log`, then a
    ``--by``/``--cell`` column that is no condition (``NOT_A_CONDITION``, ``NOT_NUMERIC``,
    ``CONDITION_MISSING``, as ``check``'s design refuses it). Returns the validated log, or
    None while a required column is still awaited.

    ``partial``: the log may still grow (``growing`` of :func:`validated_log`): a named column
    flat in every run and equal between runs is not refused, nor a log with no run long enough
    yet. ``waiting``: a named or required column not there yet is waited for, not refused.
    Raises :class:`~grokaudit.errors.LogFormatError`."""
    names = [str(c) for c in table.column_names]
    metrics: Sequence[str] = cfg.metrics
    if waiting:
        if not all(c in names for c in _required(cfg)):
            _refuse_absent_conditions(names, cfg, path)  # a typo is no column to wait for
            return None
        metrics = [m for m in cfg.metrics if m in names]
    log = validated_log(table, cfg, path, metrics=metrics, growing=partial)
    refuse_grok_on_clash(log, cfg)
    Design.validate(log, axes=[Axis(cfg.by)] if cfg.by else [], cell=cfg.cell)
    return log


def refuse_grok_on_clash(log: LogTable, cfg: AuditConfig) -> None:
    """A loss criterion (``--grok-on test_loss``) that is also the metric audited (named, or
    found when none is named), the ``--by`` axis or a ``--cell`` column: ``INVALID_OPTION``
    (the grok criterion is a held-out loss, distinct from each of them), as ``check`` and
    ``watch`` both refuse it."""
    if cfg.grok_on == "test_acc":
        return
    metrics = list(cfg.metrics) or list(log.summary.metrics)
    used = {"metrics": cfg.grok_on in metrics, "by": cfg.grok_on == cfg.by,
            "cell": cfg.grok_on in cfg.cell}
    clash = next((param for param, hit in used.items() if hit), None)
    if clash is not None:
        raise LogFormatError(
            f"{param_name('grok_on')} {cfg.grok_on!r} is also the {param_name(clash)} "
            "column: the grok criterion is a held-out loss, distinct from the metric "
            "audited, the axis and the study split",
            path=log.summary.source, column=cfg.grok_on, param="grok_on",
            code=ErrorCode.INVALID_OPTION)


def _refuse_absent_conditions(names: Sequence[str], cfg: AuditConfig, path: str | None
                              ) -> None:
    """A ``--by``/``--cell`` column absent from a log whose required columns are still
    awaited: ``NOT_A_CONDITION`` at once, as ``check`` refuses it (a condition is written
    with a run's first row: absent, it is misspelt, not late)."""
    for c in dict.fromkeys(x for x in (cfg.by, *cfg.cell) if x):
        if c not in names:
            raise not_a_condition("--by" if c == cfg.by else "--cell", c, False,
                                  f"columns read: {', '.join(sorted(map(safe, names)))}",
                                  path)


def refuse_unseen(columns: Mapping[str, pa.DataType], cfg: AuditConfig, path: str | None
                  ) -> None:
    """Nothing more will be logged (``watch --once``, every run done): a column ``cfg`` names
    or requires that no read has seen (``columns``: every column seen, with its type) is
    refused as ``check`` refuses it — ``METRIC_NOT_FOUND`` for a ``--metric``,
    ``MISSING_COLUMN`` for a required column or the ``--grok-on`` column."""
    if not columns or all(c in columns for c in (*_required(cfg), *cfg.metrics)):
        return
    # check's first stage on the columns seen: it names the first one missing (its
    # column checks come before its check of the rows, which an empty table would fail)
    _check_columns(pa.schema(list(columns.items())).empty_table(), cfg.metrics, path,
                   cfg.grok_on)


__all__ = ["refuse_grok_on_clash", "refuse_table", "refuse_unseen", "validated_log"]
