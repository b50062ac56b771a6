"""The study design of a log: the axis (or axes) runs are compared along, the ``cell`` columns
that split them into separate studies, the pairing column of a paired comparison, and the
conditions that are neither (replicate ids such as seeds, per-run outcomes).

One :class:`Design` is made and validated by :meth:`Design.validate` for ``check`` and for
every claim, so that every command refuses the same logs with the same codes (``NO_AXIS``,
``AMBIGUOUS_AXIS``, ``NOT_A_CONDITION``, ``NOT_NUMERIC``, ``CONDITION_MISSING``,
``NOT_POSITIVE``); :meth:`Design.refuse_pooling` refuses runs that one cell would pool
(``DUPLICATE_AXIS_VALUES``). Messages name the parameter (``by=``), or its flag on the
command line (:func:`grokaudit.errors.param_name`); :func:`cell_value` is the one way a cell's
value leaves a table.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .errors import ErrorCode, LogFormatError, param_name, param_value
from .roles import nearly_unique
from .schema import SEED_COLUMNS, LogTable
from .text import format_value, safe


def is_replicate_id(name: str) -> bool:
    """A seed-like condition (``seed``, ``data_seed``): it names a replicate, not a setting."""
    return name in SEED_COLUMNS or "seed" in name.lower()


#: Last words of a column name that make it an identifier (``model_id``, ``run_id``,
#: ``trial_idx``): it names runs or models, it is no setting to order runs along.
_ID_WORDS = frozenset({"id", "ids", "idx", "index", "uid", "uuid"})


def is_id_name(name: str) -> bool:
    """A condition named as an identifier (``model_id``, ``run_id``, ``trial_idx``, ``id``):
    it names runs or models, it is no setting to order runs along (never inferred as the
    axis; ``--by`` still orders along it when asked)."""
    words = [w for w in re.split(r"[^a-z0-9]+", name.lower()) if w]
    return bool(words) and words[-1] in _ID_WORDS


#: A column that names runs themselves (``run_id``, ``trial_number``, ``uuid``, ``id``), not
#: a model or a dataset (``model_id``, ``dataset_id``: arms, even one run per value).
_ID_ALTERNATIVES = "|".join(sorted(_ID_WORDS))
_RUN_IDENTITY = re.compile(rf"(run|trial|job|experiment|exp|replicate|rep)[ _./-]?"
                           rf"({_ID_ALTERNATIVES}|no|num|number)|{_ID_ALTERNATIVES}",
                           re.IGNORECASE)


def run_identities(conditions: pd.DataFrame) -> list[str]:
    """The conditions that name the runs themselves (``run_id``, ``trial_id``, ``uuid``) and
    differ in (nearly) every run: the runs' identities, no arm of the design, so that no cell
    is refused for pooling runs that differ in them and none is taken as an axis. An id of
    something else (``model_id``, ``dataset_id``) is an arm, never an identity."""
    return [str(c) for c in conditions.columns
            if _RUN_IDENTITY.fullmatch(str(c).rsplit(".", 1)[-1])
            and nearly_unique(conditions[c].tolist())]


def design_columns(conditions: pd.DataFrame, outcomes: Iterable[str] = ()) -> list[str]:
    """The conditions a run was trained under: not seeds (replicate ids), not outcomes."""
    out = set(outcomes)
    return [str(c) for c in conditions.columns if not is_replicate_id(str(c)) and c not in out]


def cell_value(v: Any) -> Any:
    """A cell's value as it leaves a table: a numpy scalar as a Python value, except a
    float32/float16 or boolean, which keeps its type so that it is shown as stored (``0.85``,
    ``true``; JSON still gets the full value)."""
    if isinstance(v, (np.float32, np.float16, np.bool_)):
        return v
    return v.item() if hasattr(v, "item") else v


def infer_axis(conditions: pd.DataFrame, exclude: Iterable[str], source: str | None,
               outcomes: Iterable[str] = ()) -> str | None:
    """The single numeric design condition with more than one value (besides seeds, outcomes
    and ``exclude``); None when no design condition varies (every run was trained under the
    same conditions: replicates, or one run). Several candidates: ``AMBIGUOUS_AXIS``; only
    non-numeric ones: ``NO_AXIS`` (both with ``param="by"``)."""
    skip = set(exclude) | set(run_identities(conditions))  # each run its own id: replicates
    design = [c for c in design_columns(conditions, outcomes) if c not in skip]
    varying = [c for c in design if conditions[c].nunique(dropna=True) > 1]
    ids = [c for c in varying if is_id_name(c)]
    cands = [c for c in varying if pd.api.types.is_numeric_dtype(conditions[c]) and c not in ids]
    cands = _one_of_each(conditions, cands)
    if len(cands) == 1:
        return str(cands[0])
    if not varying:
        return None
    if not cands and ids:
        numeric = sorted(c for c in ids if pd.api.types.is_numeric_dtype(conditions[c]))
        anyway = (f", or order along one anyway with {param_value('by', numeric[0])}"
                  if numeric else "")
        raise LogFormatError(
            f"no axis: the condition(s) {sorted(ids)} that vary across runs are identifiers "
            "(they name models, datasets or runs), not a setting to order them along; audit "
            f"each value as its own study with {param_value('cell', ','.join(sorted(ids)))}"
            f"{anyway}", path=source, param="by", code=ErrorCode.NO_AXIS)
    if not cands:
        raise LogFormatError(
            f"no axis: no numeric condition varies across runs, but {sorted(varying)} do; audit "
            f"each value as its own study with {param_value('cell', ','.join(sorted(varying)))}"
            f", or pass {param_value('by', 'COLUMN')}", path=source, param="by",
            code=ErrorCode.NO_AXIS)
    raise LogFormatError(
        f"several condition columns vary across runs: {sorted(cands)}; choose the axis with "
        f"{param_value('by', 'COLUMN')} and split the others with {param_name('cell')}",
        path=source, param="by", code=ErrorCode.AMBIGUOUS_AXIS)


#: The name a setting's second copy gets beside the first: the config's ``lr`` beside a logged
#: ``lr`` is read as ``lr_cond`` (``lr_cond2``…).
_SECOND_COPY = re.compile(r"_cond[0-9]*$")


def _setting(name: str) -> str:
    """The setting a condition column holds: its name less a second copy's suffix and any
    object prefix (``config.lr``, ``lr_cond``: ``lr``)."""
    return _SECOND_COPY.sub("", name.rsplit(".", 1)[-1])


def _one_of_each(conditions: pd.DataFrame, cands: list[str]) -> list[str]:
    """``cands`` (sorted by name) less each copy of an earlier one: the same setting by its
    name (:func:`_setting`: a W&B run's ``learning_rate`` logged as a metric, and its
    config's beside it as ``learning_rate_cond``) holding the same value in every run. Two
    settings that merely agree in every run (``width`` = ``depth``) stay two: the log cannot
    tell which one the orderings follow."""
    def same(x: str, y: str) -> bool:
        a, b = conditions[x], conditions[y]
        if pd.api.types.is_integer_dtype(a) and pd.api.types.is_integer_dtype(b):
            # as integers (beyond 2**53 too), int32 beside int64 alike, missing where missing
            na_a, na_b = a.isna().to_numpy(dtype=bool), b.isna().to_numpy(dtype=bool)
            return bool(np.array_equal(na_a, na_b)) and \
                [int(v) for v in a[~na_a]] == [int(v) for v in b[~na_b]]
        return bool(np.array_equal(a.to_numpy(dtype=np.float64, na_value=np.nan),
                                   b.to_numpy(dtype=np.float64, na_value=np.nan),
                                   equal_nan=True))

    kept: list[str] = []
    for c in sorted(cands):
        if not any(_setting(c) == _setting(k) and same(c, k) for k in kept):
            kept.append(c)
    return kept


@dataclass(frozen=True)
class Axis:
    """A column the design is laid along, the parameter that named it, and what it must be."""

    column: str
    #: named in messages: ``by=`` (``--by`` on the command line); None for an axis the audit
    #: inferred (no parameter named it: messages say "the axis column", with how to choose)
    param: str | None = "by"
    numeric: bool = True  #: ordered: numeric, and known for every run
    positive: bool = False  #: > 0 (a log-scale fit)


@dataclass(frozen=True)
class Design:
    """A validated study design. Cells are the runs sharing a value of every ``axes`` column,
    within a study (the runs sharing a value of every ``cell`` column).

    ``axes`` is empty when nothing varies (check without an axis) or the command pools runs
    (``pooled``: the precursor statistic); ``pair`` is the paired comparison's pairing column
    (also one of ``axes``). ``replicates`` are the seed-like conditions, ``outcomes`` the
    per-run outcomes, ``design`` the conditions runs were trained under (neither).
    """

    axes: tuple[str, ...]
    cell: tuple[str, ...]
    pair: str | None
    replicates: tuple[str, ...]
    outcomes: tuple[str, ...]
    design: tuple[str, ...]
    pooled: bool
    source: str | None
    what: str  #: what would pool runs, named in DUPLICATE_AXIS_VALUES: "the scaling fit"…

    @property
    def axis(self) -> str | None:
        """The single axis of ``check`` (None: no condition varies)."""
        return self.axes[0] if self.axes else None

    @classmethod
    def validate(cls, log: LogTable, *, axes: Sequence[Axis] | None, cell: Sequence[str] = (),
                 infer: bool = False, pair: str | None = None, what: str = "the audit"
                 ) -> Design:
        """The design of ``log``, or :class:`LogFormatError`: every ``cell`` column is a
        condition (``NOT_A_CONDITION``, ``param="cell"``); with ``infer`` and no ``axes``, the
        axis is the one varying numeric design condition (:func:`infer_axis`); every axis is a
        condition, numeric and known for every run where it must be ordered, positive where a
        log is taken (``NOT_NUMERIC``, ``CONDITION_MISSING``, ``NOT_POSITIVE``, each naming
        the axis's parameter). ``axes=None``: the command pools runs and has no axis."""
        cond = log.conditions
        src = log.summary.source
        for c in cell:
            _require(log, Axis(c, "cell", numeric=False))
        given = list(axes or ())
        named = {a.column for a in given}
        outcomes = tuple(o for o in log.summary.outcomes if o not in cell and o not in named)
        if axes is not None and not given and infer:
            found = infer_axis(cond, cell, src, outcomes)
            given = [Axis(found, param=None)] if found is not None else []
        for a in given:
            if a.column in cell:  # a study would hold one value of its own axis
                raise LogFormatError(
                    f"{param_name(a.param or 'by')} {safe(a.column)!r} is also a "
                    f"{param_name('cell')} column: the axis varies within a study, the cell "
                    "columns split studies; drop it from one", path=src, column=a.column,
                    param="cell", code=ErrorCode.INVALID_OPTION)
            _require(log, a)
        cols = tuple(dict.fromkeys(a.column for a in given))
        outcomes = tuple(o for o in outcomes if o not in cols)
        return cls(axes=cols, cell=tuple(cell), pair=pair,
                   replicates=tuple(str(c) for c in cond.columns if is_replicate_id(str(c))),
                   outcomes=outcomes, design=tuple(design_columns(cond, outcomes)),
                   pooled=axes is None, source=src, what=what)

    def refuse_pooling(self, conditions: pd.DataFrame) -> None:
        """Refuse to pool arms: two runs of ``conditions`` (one row per run) that share every
        ``cell`` and axis value but differ in another design condition would be merged into
        one cell of ``what``. Raises ``DUPLICATE_AXIS_VALUES`` naming the columns to split
        with ``cell``; a value that differs in (nearly) every run (a per-run id, a measured
        quantity) cannot split runs into cells of replicates and is not proposed."""
        if self.pooled or not self.axes:  # no axis: no cell is taken along one
            return
        keys = [*self.cell, *self.axes]
        ids = set(run_identities(conditions))  # each run its own: no arm to pool
        others = [c for c in self.design if c not in keys and c in conditions.columns
                  and c not in ids]
        if not others or conditions.empty:
            return
        nun = conditions.groupby(keys, dropna=False, sort=True)[others].nunique(dropna=False)
        bad = nun[(nun > 1).any(axis=1)]
        if not len(bad):
            return
        cols = sorted(c for c in others if (bad[c] > 1).any())
        where = bad.index[0] if isinstance(bad.index[0], tuple) else (bad.index[0],)
        at = ", ".join(f"{k}={format_value(v)}" for k, v in zip(keys, where))
        unique = [c for c in cols if nearly_unique(conditions[c].tolist())]
        split = [c for c in cols if c not in unique]
        fix = (f"pass {param_value('cell', ','.join(split))} to audit them as separate studies"
               if split else
               f"{', '.join(unique)} differ in (nearly) every run (a random search?): the runs "
               f"of a cell are not replicates; audit along {param_value('by', unique[0])}, or "
               "drop the column from the log")
        raise LogFormatError(
            f"DUPLICATE_AXIS_VALUES: runs with {at} differ in {cols}; {self.what} would pool "
            f"them into one cell: {fix}", path=self.source, column=cols[0],
            param="cell" if split else "by", code=ErrorCode.DUPLICATE_AXIS_VALUES)


def not_a_condition(name: str, column: str, per_step: bool, listing: str, path: str | None,
                    param: str | None = None) -> LogFormatError:
    """The refusal of a column named as a condition (``--by``, ``--cell``, ``--pair``) that is
    none (``NOT_A_CONDITION``); ``listing`` says what there is (``conditions: [...]``)."""
    hint = " (it varies within runs: it is a per-step column)" if per_step else ""
    return LogFormatError(f"{name} column {safe(column)!r} is not a condition column (constant "
                          f"within each run){hint}; {listing}", path=path, column=column,
                          param=param, code=ErrorCode.NOT_A_CONDITION)


def _spelled_twice(col: pd.Series) -> str:
    """For a text column whose values all read as numbers, two that read as one (a CSV
    column is kept as text when they do: ``grokaudit.csvread``), said with the fix."""
    texts = [str(v) for v in pd.unique(col.dropna())][:100_000]
    seen: dict[float, str] = {}
    for t in texts:
        try:
            x = float(t)
        except ValueError:
            return ""
        if x in seen:
            return (f" (its cells are text: {safe(seen[x])!r} and {safe(t)!r} spell one number, "
                    "so their runs are kept apart; write each value one way to use it as an axis)")
        seen[x] = t
    return ""


def _require(log: LogTable, a: Axis) -> None:
    """Raise :class:`LogFormatError` unless ``a.column`` is a condition (numeric, known for
    every run and positive where ``a`` asks)."""
    cond = log.conditions
    src = log.summary.source
    c = a.column
    name = (param_name(a.param) if a.param is not None
            else f"the axis (inferred; choose one with {param_name('by')})")
    if c not in cond.columns:
        raise not_a_condition(name, c, c in log.series,
                              f"conditions: {sorted(cond.columns) or 'none'}", src, a.param)
    # integers beyond 2**53 beside missing values are kept as Python integers (float64 would
    # round them): numbers, refused below for the values they lack
    wide_ints = cond[c].dtype == object and bool(cond[c].isna().any()) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in cond[c].dropna())
    if a.numeric and not pd.api.types.is_numeric_dtype(cond[c]) and not wide_ints:
        raise LogFormatError(f"{name} column {c!r} is not numeric; an axis must be ordered"
                             f"{_spelled_twice(cond[c])}", path=src, column=c, param=a.param,
                             code=ErrorCode.NOT_NUMERIC)
    missing = cond[c].isna()
    # an axis, an arm or a pair (compare) too: a run with no value belongs to none; a --cell
    # column may be missing (the runs without the setting are a study of their own)
    if missing.any() and (a.numeric or a.param != "cell"):
        raise LogFormatError(f"{name} column {c!r} is missing for run "
                             f"{safe(cond.index[missing][0])!r}", path=src, column=c,
                             param=a.param, code=ErrorCode.CONDITION_MISSING)
    if not a.numeric:
        return
    if a.positive and (cond[c] <= 0).any():
        raise LogFormatError(f"{name} column {c!r} has values ≤ 0; its log is undefined "
                             "(choose a positive parametrization)", path=src, column=c,
                             param=a.param, code=ErrorCode.NOT_POSITIVE)
