"""One study's per-run results as columns: the output of the per-run stage (issue 22).

The clocks, floors and snapshots of every run are computed as arrays (:mod:`.clocks`); a
:class:`RunTable` keeps the arrays of one study's runs, in the study's order (cells in axis
order, runs by id within a cell), and is what :class:`~grokaudit.results.StudyResult` holds as
``runs``. Cells, findings and verdicts are reduced from the arrays; no per-run Python object is
made while auditing. A :class:`~grokaudit.results.RunResult` is made only when a row is asked
for (``table[i]``, iteration, the JSON), and :meth:`RunTable.to_arrow` gives the whole table as
an Arrow table (one row per run, intervals as ``<name>.value/.lower/.upper/.censored``).

A RunTable is a read-only sequence of RunResults: ``len``, indexing, slicing, iteration and
equality behave as on the tuple of RunResults it stands for.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np

from .reasons import Reason
from .results import Interval, ReferenceRun, RunResult

#: Columns of floats (NaN: None) in RunResult field order.
FLOAT_FIELDS = ("grok_fell_at", "final_test_acc", "m_start", "m_grok", "m_peak", "floor",
                "delta", "w1_median", "drift", "mad", "undershoot", "rel_lag", "frac_pre",
                "inflation")
#: Columns of booleans.
FLAG_FIELDS = ("grok_sustained", "fully_generalized", "inflation_is_lower_bound")
#: Columns of intervals (``Interval.make(value, lower, upper)``; None where not kept).
INTERVAL_FIELDS = ("t_mem", "t_grok", "t_compress", "lag")
#: Columns of words (a code per run into a tuple of names).
WORD_FIELDS = ("floor_stability", "compression", "snapshot")
#: :class:`ReferenceRun` columns (``--profile reference``): booleans, then floats.
REFERENCE_FLAGS = ("kept", "valid_comp", "censored")
REFERENCE_FLOATS = ("drop", "t_compress", "m_compress", "gap", "rel_gap", "rate")


@dataclass(frozen=True)
class Intervals:
    """An interval per run: ``Interval.make(value[i], lower[i], upper[i])``, None where
    ``kept`` is False (or for every run when the arrays are None: no such clock)."""

    value: np.ndarray | None
    lower: np.ndarray | None
    upper: np.ndarray | None
    kept: np.ndarray | None = None

    def at(self, i: int) -> Interval | None:
        if self.value is None or self.lower is None or self.upper is None:
            return None
        if self.kept is not None and not self.kept[i]:
            return None
        return Interval.make(float(self.value[i]), float(self.lower[i]), float(self.upper[i]))

    def take(self, idx: np.ndarray) -> Intervals:
        if self.value is None or self.lower is None or self.upper is None:
            return self
        return Intervals(self.value[idx], self.lower[idx], self.upper[idx],
                         None if self.kept is None else self.kept[idx])


@dataclass(frozen=True)
class Words:
    """A word per run: ``names[code[i]]`` (``code``: small integers, int8 as built)."""

    names: tuple[str, ...]
    code: np.ndarray

    def at(self, i: int) -> str:
        return self.names[int(self.code[i])]

    def take(self, idx: np.ndarray) -> Words:
        return Words(self.names, self.code[idx])


def _float(a: np.ndarray, i: int) -> float | None:
    v = float(a[i])
    return None if v != v else v


@dataclass(frozen=True, eq=False)
class RunTable(Sequence[RunResult]):
    """One study's runs as columns (see the module's docstring)."""

    run: np.ndarray  #: object array of run ids
    cell_values: tuple[Any, ...]  #: the cells' axis values, in the study's order
    cell: np.ndarray  #: int64: each run's cell, an index into ``cell_values``
    floats: Mapping[str, np.ndarray]  #: float64, NaN where a value is missing
    flags: Mapping[str, np.ndarray]  #: bool
    intervals: Mapping[str, Intervals]
    words: Mapping[str, Words]
    drift_interval: tuple[np.ndarray, np.ndarray]  #: float64 lower and upper ends
    reason_sets: tuple[tuple[Reason, ...], ...]  #: the distinct reason tuples
    reasons: np.ndarray  #: int64: each run's reason tuple, an index into ``reason_sets``
    #: ReferenceRun columns (``--profile reference``), else None
    reference: Mapping[str, np.ndarray] | None = None

    def __len__(self) -> int:
        return int(self.run.shape[0])

    @overload
    def __getitem__(self, i: int) -> RunResult: ...

    @overload
    def __getitem__(self, i: slice) -> RunTable: ...

    def __getitem__(self, i: int | slice) -> RunResult | RunTable:
        if isinstance(i, slice):
            return self.take(np.arange(len(self))[i])
        n = len(self)
        k = int(i)
        if k < 0:
            k += n
        if not 0 <= k < n:
            raise IndexError(f"run {i} of {n}")
        return self._row(k)

    def __iter__(self) -> Iterator[RunResult]:
        return (self._row(k) for k in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RunTable):
            return len(self) == len(other) and tuple(self) == tuple(other)
        if isinstance(other, tuple):
            return tuple(self) == other
        return NotImplemented

    def __add__(self, other: Sequence[RunResult]) -> tuple[RunResult, ...]:
        """The runs followed by ``other``'s, as a tuple (as a tuple of runs would give)."""
        return (*self, *other)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"RunTable({len(self)} runs)"

    def take(self, idx: np.ndarray) -> RunTable:
        """The runs ``idx`` (positions in this table), in that order."""
        idx = np.asarray(idx, dtype=np.int64)
        ref = None if self.reference is None else {k: v[idx] for k, v in self.reference.items()}
        return RunTable(
            run=self.run[idx], cell_values=self.cell_values, cell=self.cell[idx],
            floats={k: v[idx] for k, v in self.floats.items()},
            flags={k: v[idx] for k, v in self.flags.items()},
            intervals={k: v.take(idx) for k, v in self.intervals.items()},
            words={k: v.take(idx) for k, v in self.words.items()},
            drift_interval=(self.drift_interval[0][idx], self.drift_interval[1][idx]),
            reason_sets=self.reason_sets, reasons=self.reasons[idx], reference=ref)

    def _reference_row(self, k: int) -> ReferenceRun | None:
        if self.reference is None:
            return None
        ref = self.reference
        return ReferenceRun(
            kept=bool(ref["kept"][k]), drop=_float(ref["drop"], k),
            valid_comp=bool(ref["valid_comp"][k]), censored=bool(ref["censored"][k]),
            t_compress=_float(ref["t_compress"], k), m_compress=_float(ref["m_compress"], k),
            gap=_float(ref["gap"], k), rel_gap=_float(ref["rel_gap"], k),
            rate=_float(ref["rate"], k))

    def _row(self, k: int) -> RunResult:
        f, b, iv, w = self.floats, self.flags, self.intervals, self.words
        t_grok = iv["t_grok"].at(k)
        assert t_grok is not None
        return RunResult(
            run=self.run[k], cell=self.cell_values[int(self.cell[k])],
            t_mem=iv["t_mem"].at(k), t_grok=t_grok,
            grok_sustained=bool(b["grok_sustained"][k]),
            grok_fell_at=_float(f["grok_fell_at"], k),
            final_test_acc=_float(f["final_test_acc"], k),
            fully_generalized=bool(b["fully_generalized"][k]),
            m_start=_float(f["m_start"], k), m_grok=_float(f["m_grok"], k),
            m_peak=_float(f["m_peak"], k), floor=_float(f["floor"], k),
            delta=_float(f["delta"], k), floor_stability=w["floor_stability"].at(k),
            w1_median=_float(f["w1_median"], k), drift=_float(f["drift"], k),
            drift_interval=(_float(self.drift_interval[0], k),
                            _float(self.drift_interval[1], k)),
            mad=_float(f["mad"], k), compression=w["compression"].at(k),
            t_compress=iv["t_compress"].at(k), undershoot=_float(f["undershoot"], k),
            lag=iv["lag"].at(k), rel_lag=_float(f["rel_lag"], k),
            frac_pre=_float(f["frac_pre"], k), inflation=_float(f["inflation"], k),
            inflation_is_lower_bound=bool(b["inflation_is_lower_bound"][k]),
            snapshot=w["snapshot"].at(k), reasons=self.reason_sets[int(self.reasons[k])],
            reference=self._reference_row(k))

    def json_list(self, indent: str, level: int) -> Iterator[str]:
        """The runs as json's encoder writes the list of their :meth:`RunResult.to_dict` as a
        value at nesting ``level`` (indented by ``indent`` per level), in pieces: the same
        text, made from the columns :data:`JSON_BATCH` runs at a time, with no RunResult nor
        dict made (``--json`` of a million runs: 160 µs a run through the dicts)."""
        from .results import plain

        n = len(self)
        if not n:
            yield "[]"
            return
        cells = [_any_json(plain(v), indent, level + 2) for v in self.cell_values]
        reasons = [_any_json([r.value for r in s], indent, level + 2) for s in self.reason_sets]
        head = "[\n" + indent * (level + 1)
        sep = ",\n" + indent * (level + 1)
        for lo in range(0, n, JSON_BATCH):
            texts = _json_batch(self, lo, min(n, lo + JSON_BATCH), indent, level + 1, cells,
                                reasons)
            yield (head if lo == 0 else sep) + sep.join(texts)
        yield "\n" + indent * level + "]"

    def to_arrow(self) -> Any:
        """The table as a ``pyarrow.Table``, one row per run: ``run``, ``cell``, each float,
        flag and word column, each interval as ``<name>.value``, ``.lower``, ``.upper``,
        ``.censored`` (nulls where the run has no such interval or value), ``drift.lower``,
        ``drift.upper`` and ``reasons`` (a list of codes)."""
        import pyarrow as pa

        cols: dict[str, Any] = {"run": pa.array(self.run.tolist(), type=pa.string())}
        cells = [self.cell_values[i] for i in self.cell.tolist()]
        cols["cell"] = pa.array([None if c is None else c for c in _plain_list(cells)])
        for name, a in self.floats.items():
            cols[name] = pa.array(a, type=pa.float64(), from_pandas=True)
        for name, a in self.flags.items():
            cols[name] = pa.array(a, type=pa.bool_())
        for name, w in self.words.items():
            cols[name] = pa.DictionaryArray.from_arrays(
                pa.array(w.code.astype(np.int32)), pa.array(list(w.names), type=pa.string()))
        for name, iv in self.intervals.items():
            n = len(self)
            if iv.value is None or iv.lower is None or iv.upper is None:
                for part, typ in (("value", pa.float64()), ("lower", pa.float64()),
                                  ("upper", pa.float64()), ("censored", pa.bool_())):
                    cols[f"{name}.{part}"] = pa.nulls(n, type=typ)
                continue
            kept = np.ones(n, dtype=bool) if iv.kept is None else iv.kept
            missing = ~kept | (np.isnan(iv.lower) & np.isnan(iv.value))
            cens = np.isinf(iv.upper)
            for part, a in (("value", np.where(cens, np.nan, iv.value)),
                            ("lower", iv.lower), ("upper", np.where(cens, np.nan, iv.upper))):
                cols[f"{name}.{part}"] = pa.array(np.where(missing, np.nan, a),
                                                  type=pa.float64(), from_pandas=True)
            cols[f"{name}.censored"] = pa.array(cens, mask=missing, type=pa.bool_())
        cols["drift.lower"] = pa.array(self.drift_interval[0], from_pandas=True)
        cols["drift.upper"] = pa.array(self.drift_interval[1], from_pandas=True)
        sets = [[r.value for r in s] for s in self.reason_sets]
        cols["reasons"] = pa.array([sets[j] for j in self.reasons.tolist()],
                                   type=pa.list_(pa.string()))
        return pa.table(cols)


def _plain_list(values: Sequence[Any]) -> list[Any]:
    return [v.item() if hasattr(v, "item") else v for v in values]


# ------------------------------------------------------------------------------------------
# the runs' JSON, written from the columns
# ------------------------------------------------------------------------------------------

#: Runs rendered at once by :meth:`RunTable.json_list` (their texts, one list per field, are
#: what is held: a few MiB).
JSON_BATCH = 4096

_KEYS = ("run", "cell", "t_mem", "t_grok", "grok_sustained", "grok_fell_at", "final_test_acc",
         "fully_generalized", "m_start", "m_grok", "m_peak", "floor", "delta",
         "floor_stability", "w1_median", "drift", "drift_interval", "mad", "compression",
         "t_compress", "undershoot", "lag", "rel_lag", "frac_pre", "inflation",
         "inflation_is_lower_bound", "snapshot", "reasons")
_INTERVAL_KEYS = ("value", "lower", "upper", "censored", "left_censored")
_REFERENCE_KEYS = ("kept", "drop", "valid_comp", "censored", "t_compress", "m_compress", "gap",
                   "rel_gap", "rate")


def _numbers(a: np.ndarray) -> list[str]:
    """Each value as json writes :func:`~grokaudit.results.number` of it: NaN and ±inf
    ``null``, a whole float below 2⁵³ as an integer, any other float by its ``repr``."""
    a = np.asarray(a, dtype=np.float64)
    finite = np.isfinite(a)
    whole = np.zeros(a.shape, dtype=bool)
    np.equal(np.floor(a, where=finite, out=np.zeros_like(a)), a, out=whole, where=finite)
    whole &= np.abs(a) < 2.0**53
    out = list(map(float.__repr__, a.tolist()))
    at = np.flatnonzero(whole)
    for i, v in zip(at.tolist(), map(str, a[at].astype(np.int64).tolist())):
        out[i] = v
    for i in np.flatnonzero(~finite).tolist():
        out[i] = "null"
    return out


def _flags(a: np.ndarray) -> list[str]:
    return ["true" if x else "false" for x in a.tolist()]


def _any_json(value: Any, indent: str, level: int) -> str:
    """``value`` (a JSON-ready Python value) as json's encoder writes it at nesting ``level``:
    its text at level 0, every line after the first indented by ``level`` more (a newline in
    json's text is only ever indentation: newlines in strings are escaped)."""
    import json

    text = "".join(json.JSONEncoder(indent=indent, allow_nan=False,
                                    ensure_ascii=False).iterencode(value))
    return text.replace("\n", "\n" + indent * level)


def _object(keys: Sequence[str], indent: str, level: int) -> str:
    """A %-template of a JSON object of ``keys`` whose own line is at ``level``: one ``%s``
    per value, in order."""
    from json.encoder import encode_basestring

    inner = "\n" + indent * (level + 1)
    return ("{" + inner + ("," + inner).join(
        encode_basestring(k).replace("%", "%%") + ": %s" for k in keys)
        + "\n" + indent * level + "}")


def _interval_texts(iv: Intervals, n: int, template: str) -> list[str]:
    """Each run's interval as :meth:`~grokaudit.results.Interval.to_dict` writes it (the
    interval :meth:`Intervals.at` makes), ``null`` where there is none."""
    if iv.value is None or iv.lower is None or iv.upper is None:
        return ["null"] * n
    value = np.asarray(iv.value, dtype=np.float64)
    lower = np.asarray(iv.lower, dtype=np.float64)
    upper = np.asarray(iv.upper, dtype=np.float64)
    cens = np.isinf(upper)
    value_none = cens | np.isnan(value)
    upper_none = cens | np.isnan(upper)
    lower_none = np.isnan(lower)
    missing = lower_none & np.isnan(value)
    if iv.kept is not None:
        missing |= ~np.asarray(iv.kept, dtype=bool)
    left = value_none & ~cens & ~upper_none & ~lower_none
    parts = zip(_numbers(np.where(value_none, np.nan, value)), _numbers(lower),
                _numbers(np.where(upper_none, np.nan, upper)), _flags(cens), _flags(left))
    return ["null" if m else template % p for m, p in zip(missing.tolist(), parts)]


def _json_batch(t: RunTable, lo: int, hi: int, indent: str, level: int,
                cells: list[str], reasons: list[str]) -> list[str]:
    """Runs ``lo:hi`` of ``t``, each as json writes its :meth:`RunResult.to_dict` as an item at
    nesting ``level``."""
    from json.encoder import encode_basestring

    sl = slice(lo, hi)
    n = hi - lo
    f, b = t.floats, t.flags
    ivt = _object(_INTERVAL_KEYS, indent, level + 1)
    iv = {k: _interval_texts(v.take(np.arange(lo, hi)), n, ivt) for k, v in t.intervals.items()}
    words = {}
    for k, w in t.words.items():
        names = [encode_basestring(x) for x in w.names]
        words[k] = [names[c] for c in w.code[sl].tolist()]
    runs = [encode_basestring(r) if type(r) is str else _any_json(r, indent, level + 1)
            for r in t.run[sl].tolist()]
    pair = ("[\n" + indent * (level + 2) + "%s,\n" + indent * (level + 2) + "%s\n"
            + indent * (level + 1) + "]")
    drift = [pair % p for p in zip(_numbers(t.drift_interval[0][sl]),
                                   _numbers(t.drift_interval[1][sl]))]
    cols: list[list[str]] = [
        runs, [cells[c] for c in t.cell[sl].tolist()], iv["t_mem"], iv["t_grok"],
        _flags(b["grok_sustained"][sl]), _numbers(f["grok_fell_at"][sl]),
        _numbers(f["final_test_acc"][sl]), _flags(b["fully_generalized"][sl]),
        _numbers(f["m_start"][sl]), _numbers(f["m_grok"][sl]), _numbers(f["m_peak"][sl]),
        _numbers(f["floor"][sl]), _numbers(f["delta"][sl]), words["floor_stability"],
        _numbers(f["w1_median"][sl]), _numbers(f["drift"][sl]), drift, _numbers(f["mad"][sl]),
        words["compression"], iv["t_compress"], _numbers(f["undershoot"][sl]), iv["lag"],
        _numbers(f["rel_lag"][sl]), _numbers(f["frac_pre"][sl]), _numbers(f["inflation"][sl]),
        _flags(b["inflation_is_lower_bound"][sl]), words["snapshot"],
        [reasons[j] for j in t.reasons[sl].tolist()]]
    keys: tuple[str, ...] = _KEYS
    if t.reference is not None:
        ref = t.reference
        rt = _object(_REFERENCE_KEYS, indent, level + 1)
        cols.append([rt % p for p in zip(
            _flags(ref["kept"][sl]), _numbers(ref["drop"][sl]), _flags(ref["valid_comp"][sl]),
            _flags(ref["censored"][sl]), _numbers(ref["t_compress"][sl]),
            _numbers(ref["m_compress"][sl]), _numbers(ref["gap"][sl]),
            _numbers(ref["rel_gap"][sl]), _numbers(ref["rate"][sl]))])
        keys = (*keys, "reference")
    template = _object(keys, indent, level)
    return [template % p for p in zip(*cols)]
