"""One identity per run and per value.

* Run ids that are equal once their Unicode form is normalized (NFC) and surrounding
  whitespace trimmed (``"wd1.0_s0 "``, the decomposed spelling of ``"é"``) name one run twice:
  the log is refused (``RUN_ID_AMBIGUOUS``), never counted as two replicates.
* Runs whose logs are identical at every logged step, in every column, under two ids are
  flagged (``DUPLICATE_RUN``): a copy counts twice as a replicate.
* Condition values that are one number stored at different precisions are one value: a
  float32 value (or a float64 holding one, as NPZ → pandas conversions produce) is read as its
  shortest float32 text (``0.85``, not ``0.8500000238418579``); other floats to 15 significant
  digits (``0.30000000000000004`` → ``0.3``), unless that would merge two values of the column;
  a column that mixes numbers and plain decimal text (``0.1`` from one file, ``"0.10"`` from
  another) is read as numbers; a column of text alone stays text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .blocks import map_blocks
from .errors import ErrorCode, LogFormatError
from .text import safe


def refuse_missing_run_ids(missing: int, path: str | None, *, empty: bool = False) -> None:
    """Rows without a run id (``MISSING_VALUES``): ``missing`` null ids, or with ``empty``
    ids that are blank text (a CSV's empty cell is ``""``, not null: as missing). Every
    command refuses them with this rule (``check`` as it groups the rows, ``watch`` on each
    read)."""
    if not missing:
        return
    what = "empty" if empty else "missing"
    raise LogFormatError(f"column 'run' has {missing} {what} values (in a CSV file, an empty "
                         "cell or one read as missing: NA, None, null, NaN…); every row needs "
                         "a run id", path=path, column="run", code=ErrorCode.MISSING_VALUES)


def check_run_ids(ids: np.ndarray, path: str | None, texts: pa.Array | None = None) -> None:
    """Refuse run ids that collide once normalized (NFC, surrounding whitespace trimmed).
    ``texts``: the same ids as an Arrow string array, when the caller holds one (not made
    again from the Python strings)."""
    if ids.size < 2:
        return
    arr = (texts if texts is not None and len(texts) == ids.size
           else pa.array(ids.tolist(), type=pa.string()))
    trimmed = pc.utf8_trim_whitespace(arr)
    if pc.all(pc.string_is_ascii(arr)).as_py() and pc.all(pc.equal(trimmed, arr)).as_py():
        return  # ASCII ids without surrounding blanks: distinct ids are distinct
    norm = pc.utf8_trim_whitespace(pc.utf8_normalize(arr, form="NFC"))
    if pc.count_distinct(norm).as_py() == ids.size:
        return
    seen: dict[str, str] = {}
    for raw, n in zip(ids.tolist(), norm.to_pylist()):
        if n in seen:
            raise LogFormatError(
                f"run ids {seen[n]!r} and {raw!r} are the same id once whitespace and Unicode "
                "form are normalized: one run logged under two spellings would count twice; "
                "fix the run column (trim it, write it in one Unicode form) or rename one run",
                path=path, column="run", code=ErrorCode.RUN_ID_AMBIGUOUS)
        seen[n] = raw


# ------------------------------------------------------------------------------------------
# values
# ------------------------------------------------------------------------------------------

F32_MAX = float(np.finfo(np.float32).max)


def _f32_text(v: float) -> float | None:
    """``v`` as its shortest float32 text, when ``v`` is exactly a float32 value and that text
    is shorter than its float64 one (None otherwise)."""
    if not math.isfinite(v) or abs(v) > F32_MAX:  # no float32 holds it (and no warning)
        return None
    f = np.float32(v)
    if float(f) != v:
        return None
    short = float(str(f))
    return short if len(repr(short)) < len(repr(v)) else None


def _short_floats(u: np.ndarray) -> np.ndarray:
    """The canonical value of each distinct float of ``u`` (see the module doc)."""
    vals = u.astype(np.float64).tolist()
    f32 = [_f32_text(v) for v in vals]
    # distinct float32 values have distinct texts: this step never merges two values
    out = [s if s is not None else v for v, s in zip(vals, f32)]
    rounded = [v if (s is not None or not math.isfinite(v)) else float(f"{v:.15g}")
               for v, s in zip(out, f32)]
    # rounding to 15 digits must never merge two values of the column: if it would, keep them
    if len(set(rounded)) == len(set(out)):
        out = rounded
    return np.asarray(out, dtype=np.float64)


#: A decimal number as text (no underscores, no ``inf``/``nan`` words, no hex).
_DECIMAL = re.compile(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*")


def _number(x: Any) -> float | None:
    """A real number (not a boolean) or a text that is a plain decimal; None otherwise."""
    if isinstance(x, (bool, np.bool_)):
        return None
    if isinstance(x, (int, float, np.integer, np.floating)):
        return float(x)
    if isinstance(x, str) and _DECIMAL.fullmatch(x):
        return float(x)
    return None


def canonical_values(a: np.ndarray) -> np.ndarray:
    """A condition column (one value per run) with one identity per value (module doc).
    Integers, booleans and ordinary text are returned as they are."""
    if a.dtype.kind == "f":
        if a.size == 0:
            return a.astype(np.float64)
        u, inv = np.unique(a, return_inverse=True)
        out: np.ndarray = _short_floats(u)[inv.ravel()]
        return out
    if a.dtype == object and a.size:
        vals = a.tolist()
        present = [x for x in vals if x is not None and not (isinstance(x, float) and x != x)]
        nums = [_number(x) for x in present]
        if present and all(n is not None for n in nums):
            texts = {x for x in present if isinstance(x, str)}
            # numbers beside numeric text: the same setting written by two files. A column
            # of text alone stays text ("1.1" and "1.10" may be two versions, not one number)
            if texts and any(not isinstance(x, str) for x in present):
                f = np.array([np.nan if (x is None or (isinstance(x, float) and x != x))
                              else _number(x) for x in vals], dtype=np.float64)
                return canonical_values(f)
    return a


# ------------------------------------------------------------------------------------------
# runs
# ------------------------------------------------------------------------------------------

_BLOCK_ROWS = 1 << 20  #: rows per block of the per-run sums (bounds the temporary arrays)


def _run_sums(a: np.ndarray, offsets: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """Per run, the float64 sum of a per-step column (NaN counted as 0), block by block; an
    integer column (the steps) summed as integers, exactly (wrapping past 2**63 as every
    run's sum does alike), then made float64: a tenth of the float64 sum's time."""
    R = offsets.size - 1
    out = np.empty(R, dtype=np.float64)
    for r0, r1 in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
        lo, hi = int(offsets[r0]), int(offsets[r1])
        seg = a[lo:hi]
        idx = offsets[r0:r1] - lo
        with np.errstate(over="ignore", invalid="ignore"):  # ±1e308 sums: inf, still equal
            if seg.dtype.kind == "i":
                sums = np.add.reduceat(seg, idx, dtype=np.int64).astype(np.float64)
            else:  # the block made float64 first: a float32 one summed in 0.7× the time of
                # reduceat's own casting, and every run summed alike whatever its column's type
                seg = np.asarray(seg, dtype=np.float64)
                sums = np.add.reduceat(seg, idx)
            if seg.dtype.kind == "f" and np.isnan(sums).any():
                # a run holds NaN (or +inf and -inf): the block again, NaN counted as 0. A sum
                # without NaN is the same either way (the same additions in the same order)
                sums = np.add.reduceat(np.where(np.isnan(seg), 0.0, seg), idx)
        out[r0:r1] = sums
    return out


def run_fingerprints(offsets: np.ndarray, step: np.ndarray, columns: list[np.ndarray],
                     weighted: bool = False) -> np.ndarray:
    """Per run, one 64-bit fingerprint of its length and the sums of its steps and of its
    first four ``columns`` (bit patterns, a sum of -0.0 read as 0.0: equal logs give equal
    sums bit for bit). Equal logs have equal fingerprints; runs sharing one are candidates,
    compared exactly (a chance agreement costs a comparison, never a wrong answer).
    ``weighted`` adds each column's sum weighted by the position in the run, so that runs
    whose sums agree by chance rarely agree in both: for runs not in memory together, whose
    comparison means reading them again."""
    return fingerprints(offsets, step, columns, weighted)[0]


def fingerprints(offsets: np.ndarray, step: np.ndarray, columns: list[np.ndarray],
                 weighted: bool = False, prefix: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """:func:`run_fingerprints`, and beside it the fingerprint of the runs' length, steps
    and first ``prefix`` columns alone (≤ 4: the accuracies, for :func:`accuracy_twins`),
    taken from the same sums on the way."""
    R = int(offsets.size - 1)
    counts = np.diff(offsets)
    n = int(offsets[-1]) if R else 0
    cuts = np.unique(np.r_[np.searchsorted(offsets, np.arange(0, n, _BLOCK_ROWS)), R])
    cuts = cuts[(cuts >= 0) & (cuts <= R)]
    if cuts[0] != 0:
        cuts = np.r_[0, cuts]
    summed: list[Any] = [step, *columns[:4]]
    if weighted and R:
        pos = (np.arange(n, dtype=np.int64) - np.repeat(offsets[:-1], counts)) + 1
        summed += [(c, pos) for c in columns[:4]]

    def sums(k: slice) -> np.ndarray:
        a = summed[k.start]
        if isinstance(a, tuple):  # a column weighted by the position in its run
            a = np.asarray(a[0], dtype=np.float64) * a[1]
        return _run_sums(a, offsets, cuts)

    # one column per task on the thread pool (numpy's sums release the GIL); each sum is the
    # same whichever thread computes it
    keys = [counts.astype(np.float64),
            *map_blocks(sums, [slice(i, i + 1) for i in range(len(summed))])]
    h = np.zeros(R, dtype=np.uint64)
    head = h
    with np.errstate(over="ignore"):
        for i, k in enumerate(keys):
            # + 0.0: a sum of -0.0 is the sum of 0.0 (equal logs, as array_equal compares)
            h = (h * np.uint64(0x9E3779B97F4A7C15)) ^ np.ascontiguousarray(
                k + 0.0).view(np.uint64)
            if i == 1 + min(prefix, 4):  # the length, the steps and the first columns
                head = h
    return h, head


def logged_points(offsets: np.ndarray, step: np.ndarray, values: np.ndarray,
                  has_nan: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(offsets, step, values)`` of each run's logged points of ``values`` alone (its NaN
    rows left out: rows where only another column was logged); the arrays themselves when
    ``values`` holds no NaN (``has_nan`` False: the caller counted)."""
    if not has_nan:
        return offsets, step, values
    keep = np.flatnonzero(~np.isnan(values))
    return np.searchsorted(keep, offsets).astype(np.int64), step[keep], values[keep]


def accuracy_prints(points: tuple[np.ndarray, np.ndarray, np.ndarray], has_nan: bool,
                    prefix: np.ndarray | None = None) -> np.ndarray:
    """Per run, the fingerprint of its test accuracy's logged points (``points``, from
    :func:`logged_points`), for :func:`accuracy_twins`: ``prefix`` (:func:`fingerprints`
    with ``prefix=1``, taken on the way over the whole rows) when the column holds no NaN --
    its logged points are then every row -- else computed on the points."""
    if not has_nan and prefix is not None:
        return prefix
    off, st, acc = points
    return fingerprints(off, st, [acc], prefix=1)[1]


def accuracy_twins(run_ids: np.ndarray, points: tuple[np.ndarray, np.ndarray, np.ndarray],
                   prints: np.ndarray | None, duplicates: Sequence[tuple[str, ...]]
                   ) -> list[tuple[str, ...]]:
    """Groups of runs whose test accuracy is identical at every point it was logged
    (``points``: its :func:`logged_points`; the same steps, the same values), where it takes
    at least :data:`TWIN_MIN_VALUES` values -- no two trainings give one such curve -- and
    that :func:`duplicate_runs` (``duplicates``) does not hold already: one run read twice
    (its files read as runs, a copy holding another column, a curve exported at the
    evaluations beside the log of every step), which would count as replicates. ``prints``:
    :func:`accuracy_prints`, or None."""
    off, st, acc = points
    if prints is None:
        prints = accuracy_prints(points, True)
    cand = np.flatnonzero(pd.Series(prints, copy=False).duplicated(keep=False).to_numpy())
    if not cand.size:
        return []
    # more than MAX_TWIN_GROUP runs on one curve: a coarse curve many runs share (a step
    # from chance to 0.99 at one of fifty evaluations), not one run read many times
    codes = pd.factorize(prints[cand])[0]
    cand = cand[np.bincount(codes)[codes] <= MAX_TWIN_GROUP]
    # a curve of fewer than TWIN_MIN_VALUES values may repeat: such runs are no candidates
    # (one pass counts each run's changes, a necessary condition; the survivors are sorted)
    cand = cand[_changes(off, acc, cand) >= TWIN_MIN_VALUES - 1]
    eligible = np.zeros(run_ids.size, dtype=bool)
    eligible[cand[_distinct_values(off, acc, cand) >= TWIN_MIN_VALUES]] = True
    if eligible.sum() < 2:
        return []
    mine = prints.copy()
    mine[~eligible] = np.uint64(0x5A17) + np.arange(run_ids.size, dtype=np.uint64)[~eligible]
    groups = duplicate_runs(run_ids, off, st, [acc], mine)
    # a sentinel may meet a real fingerprint by chance: groups of eligible runs only
    kept = {str(run_ids[i]) for i in np.flatnonzero(eligible).tolist()} if groups else set()
    groups = [g for g in groups if all(r in kept for r in g)]
    return without_duplicates(groups, duplicates)


def without_duplicates(groups: Sequence[tuple[str, ...]],
                       duplicates: Sequence[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """``groups`` but those whose runs all lie in one group of ``duplicates`` (one pass over
    each: a run's duplicate group looked up, never every pair of groups compared)."""
    where = {r: k for k, g in enumerate(duplicates) for r in g}
    return [g for g in groups
            if not (g[0] in where and all(where.get(r) == where[g[0]] for r in g))]


def _points_of(offsets: np.ndarray, values: np.ndarray, runs: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """The points of ``runs``, one after the other, and which of ``runs`` each belongs to."""
    lengths = (offsets[runs + 1] - offsets[runs]).astype(np.int64)
    total = int(lengths.sum())
    which = np.repeat(np.arange(runs.size), lengths)
    rows = np.repeat(offsets[runs], lengths) + (
        np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths))
    return values[rows], which


def _changes(offsets: np.ndarray, values: np.ndarray, runs: np.ndarray) -> np.ndarray:
    """Per run of ``runs``, how many times its value changes from one point to the next (at
    least its distinct values less one). Few runs: their points gathered; many (an eighth of
    the points or more): one pass over every point, no gather."""
    if not runs.size:
        return np.zeros(0, dtype=np.int64)
    lo, hi = offsets[runs].astype(np.int64), offsets[runs + 1].astype(np.int64)
    if int((hi - lo).sum()) * 8 < values.size:
        v, which = _points_of(offsets, values, runs)
        moved = (v[1:] != v[:-1]) & (which[1:] == which[:-1])
        return np.bincount(which[1:][moved], minlength=runs.size)
    # the changes between points k and k + 1, by run; those across two runs left out
    k = np.flatnonzero(values[1:] != values[:-1])
    run = np.searchsorted(offsets, k, side="right") - 1
    inside = k + 1 < offsets[run + 1]
    counts: np.ndarray = np.bincount(run[inside], minlength=offsets.size - 1)[runs]
    return counts


def _distinct_values(offsets: np.ndarray, values: np.ndarray, runs: np.ndarray) -> np.ndarray:
    """Per run of ``runs``, how many distinct finite values it holds (one sort of their
    points, whatever their number)."""
    v, which = _points_of(offsets, values, runs)
    ok = np.isfinite(v)
    which, v = which[ok], v[ok]
    order = np.lexsort((v, which))
    which, v = which[order], v[order]
    new = np.r_[True, (which[1:] != which[:-1]) | (v[1:] != v[:-1])] if v.size else \
        np.zeros(0, dtype=bool)
    return np.bincount(which[new], minlength=runs.size)


#: Distinct test accuracies a run's curve needs before an identical curve in another run
#: says it is the same run (:func:`accuracy_twins`): a flat or two-valued curve may repeat.
TWIN_MIN_VALUES = 5
#: Runs one accuracy curve may be shared by and still be one run read several times
#: (:func:`accuracy_twins`); more share a coarse curve.
MAX_TWIN_GROUP = 16


def duplicate_runs(run_ids: np.ndarray, offsets: np.ndarray, step: np.ndarray,
                   columns: list[np.ndarray], fingerprints: np.ndarray | None = None
                   ) -> list[tuple[str, ...]]:
    """Groups of runs (two or more ids each) whose logs are identical at every logged step in
    every column of ``columns`` (per-step arrays in run order; the first ones weigh most in the
    fingerprint). Each run's length and the sums of its steps and of its first four columns
    pick candidates (one pass over those columns, in blocks); every column of a candidate pair
    is then compared exactly. ``fingerprints``: the runs' :func:`run_fingerprints` when the
    caller has them (any equal logs have equal ones, weighted or not)."""
    R = int(run_ids.size)
    if R < 2 or not columns:
        return []
    h = run_fingerprints(offsets, step, columns) if fingerprints is None else fingerprints
    # the runs that share a fingerprint with another (one hashing pass), numbered by their
    # fingerprint in its order (np.unique's numbering of them: the same groups, batches and
    # answer as numbering every run)
    cand = np.flatnonzero(pd.Series(h, copy=False).duplicated(keep=False).to_numpy())
    if not cand.size:
        return []
    inv = np.full(R, -1, dtype=np.int64)
    inv[cand] = pd.factorize(h[cand], sort=True)[0]
    lengths = np.diff(offsets)[cand]
    arrays = [step, *columns]
    out: list[tuple[str, ...]] = []
    for length in np.unique(lengths).tolist():  # equal logs have equal lengths
        runs = cand[lengths == length]
        width = int(length) * len(arrays)
        if width <= _SHORT_WIDTH:  # short runs: every candidate's key row, one sort
            for batch in _batches(runs, inv[runs], width):
                out += _identical(run_ids, batch, inv[batch], offsets, int(length), arrays)
        else:  # long runs: each group against one of its runs at a time
            out += _identical_to_first(run_ids, runs, inv[runs], offsets, int(length), arrays)
    return sorted(out)


#: Elements of the key matrix compared at once (:func:`_identical`): 128 MiB of uint64.
_KEY_ELEMENTS = 1 << 24
#: Values per run up to which runs are compared as whole key rows sorted together: a sort
#: compares rows value by value, and rows of long identical runs would be compared in full
#: at every step of it (400 copies of a 10 000-step run: 30 s), where one comparison each
#: with the group's first run is enough.
_SHORT_WIDTH = 64


def _batches(runs: np.ndarray, group: np.ndarray, width: int) -> list[np.ndarray]:
    """``runs`` cut into batches of whole fingerprint groups (``group``), each about
    :data:`_KEY_ELEMENTS` / ``width`` runs, so that the key matrix of a batch stays bounded
    (a group larger than that is a batch of its own: ``width`` is small, its rows short)."""
    order = np.argsort(group, kind="stable")
    runs, group = runs[order], group[order]
    per = max(2, _KEY_ELEMENTS // max(width, 1))
    if runs.size <= per:
        return [runs]
    cuts = [0]
    for _, s, _ in runs_of(group):  # a new batch at a group's start once the batch is full
        if s - cuts[-1] >= per:
            cuts.append(s)
    cuts.append(runs.size)
    return [runs[a:b] for a, b in zip(cuts[:-1], cuts[1:]) if b > a]


def _value_bits(a: np.ndarray) -> np.ndarray:
    """The values of ``a`` as unsigned integers equal exactly when the values are equal as
    ``np.array_equal(..., equal_nan=True)`` compares them: ``-0.0`` read as ``0.0``, every NaN
    as one NaN."""
    if a.dtype.kind == "f":
        if a.itemsize not in (4, 8):
            a = a.astype(np.float64)
        a = np.where(np.isnan(a), np.nan, a + a.dtype.type(0))  # -0.0 + 0.0 is +0.0
        return a.view(np.uint64 if a.itemsize == 8 else np.uint32).astype(np.uint64)
    if a.dtype.kind in "iub":
        return a.astype(np.int64).view(np.uint64)
    return np.asarray(a, dtype=np.float64).view(np.uint64)


def _identical(run_ids: np.ndarray, runs: np.ndarray, group: np.ndarray,
               offsets: np.ndarray, length: int, arrays: list[np.ndarray]
               ) -> list[tuple[str, ...]]:
    """The groups of ``runs`` (all of ``length`` points; ``group``: their fingerprint group)
    equal at every point of every array: one key row per run (the group, then every value's
    bits), equal rows found by one sort."""
    rows = offsets[runs][:, None] + np.arange(length, dtype=np.int64)[None, :]
    keys = np.concatenate([group.astype(np.uint64)[:, None],
                           *(_value_bits(a[rows]) for a in arrays)], axis=1)
    _, which, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    order = np.argsort(which.ravel(), kind="stable")
    ends = np.cumsum(counts)
    return [tuple(sorted(str(run_ids[i]) for i in runs[order[e - c:e]]))
            for c, e in zip(counts.tolist(), ends.tolist()) if c > 1]


def runs_of(sorted_keys: np.ndarray) -> list[tuple[int, int, int]]:
    """``(key, start, end)`` of each run of equal values in ``sorted_keys``."""
    if sorted_keys.size == 0:
        return []
    starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
    ends = np.r_[starts[1:], sorted_keys.size]
    return [(int(sorted_keys[s]), int(s), int(e)) for s, e in zip(starts, ends)]


def _identical_to_first(run_ids: np.ndarray, runs: np.ndarray, group: np.ndarray,
                        offsets: np.ndarray, length: int, arrays: list[np.ndarray]
                        ) -> list[tuple[str, ...]]:
    """The groups of ``runs`` equal at every point of every array, found per fingerprint
    group by comparing every other run with the group's first, then the rest with the first
    of the rest, and so on (a group of copies: one comparison each). Every group takes its
    round at once: one gather and one comparison per array for all of them (thousands of
    groups of two, chance agreements of float32 sums: one call, not thousands)."""
    order = np.argsort(group, kind="stable")
    runs, group = runs[order], group[order]
    out: list[tuple[str, ...]] = []
    while runs.size > 1:
        starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
        sizes = np.diff(np.r_[starts, runs.size])
        firsts = np.repeat(runs[starts], sizes)
        same = _equal_rows(runs, firsts, offsets, length, arrays)
        same[starts] = True  # a run is itself (and each round leaves at least its first)
        matched = np.add.reduceat(same, starts)  # each group's runs like its first, itself too
        for s, n in zip(starts[matched > 1].tolist(), sizes[matched > 1].tolist()):
            members = runs[s:s + n][same[s:s + n]]
            out.append(tuple(sorted(str(run_ids[i]) for i in members.tolist())))
        rest = ~same  # the next round: each group's runs unlike its first (a run left alone
        runs, group = runs[rest], group[rest]  # is its own first there, and then done)
    return out


def _equal_rows(runs: np.ndarray, firsts: np.ndarray, offsets: np.ndarray, length: int,
                arrays: list[np.ndarray]) -> np.ndarray:
    """For each ``k``: run ``runs[k]`` equal to run ``firsts[k]`` at every point of every array
    (as ``np.array_equal(..., equal_nan=True)`` compares floats: NaN equal to NaN, ``-0.0`` to
    ``0.0``), compared :data:`_KEY_ELEMENTS` values of each array at a time."""
    out = np.ones(runs.size, dtype=bool)
    per = max(1, _KEY_ELEMENTS // max(length, 1))
    cols = np.arange(length, dtype=np.int64)[None, :]
    for lo in range(0, runs.size, per):
        r, f = runs[lo:lo + per], firsts[lo:lo + per]
        ra = offsets[r][:, None] + cols
        fa = offsets[f][:, None] + cols
        eq = out[lo:lo + per]
        for a in arrays:
            live = np.flatnonzero(eq)
            if not live.size:
                break
            x, y = a[ra[live]], a[fa[live]]
            same = x == y
            if a.dtype.kind in "fc":
                same |= np.isnan(x) & np.isnan(y)
            eq[live] = same.all(axis=1)
    return out


def describe_duplicates(groups: Sequence[tuple[str, ...]]) -> str:
    """``a = b; c = d = e`` (the first three groups)."""
    txt = "; ".join(" = ".join(safe(r) for r in g) for g in groups[:3])
    return txt + ("; …" if len(groups) > 3 else "")
