"""Runs that are one run resumed: a file that repeats another run's rows exactly and goes on.

A log folder may hold a run and its own continuation (a 20 000-step file and a 50 000-step file
identical on every shared step; a Hugging Face ``checkpoint-500`` whose ``trainer_state.json`` is
the start of ``checkpoint-1000``'s). Read as two runs they would be pooled as two replicates of
one condition. :func:`continued_runs` finds them; :mod:`.merge` keeps the longer one and says so
(``RUN_CONTINUED``, naming both runs and their files).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from grokaudit.text import safe

from .points import Finding, Points

#: per run, metric (its name or number) -> (steps, values), one point per step, increasing
Series = Sequence[dict[Any, tuple[np.ndarray, np.ndarray]]]

#: The fields of a Hugging Face ``TrainerState`` (``trainer_state.json``) that say how far a
#: run got, not how it was set up: two checkpoints of one run differ in them and in nothing
#: else. Every other condition must agree for two runs to be one.
TRAINER_STATE = frozenset({
    "global_step", "epoch", "total_flos", "num_input_tokens_seen", "best_metric",
    "best_global_step", "best_model_checkpoint", "should_training_stop", "should_epoch_stop",
    "should_save", "should_evaluate", "should_log", "is_local_process_zero",
    "is_world_process_zero", "trial_name", "trial_params"})

#: Runs sharing their first rows beyond this count are not compared pairwise (the check would
#: cost their number squared); they are named in the result's ``skipped`` instead.
MAX_GROUP = 64


def _head(d: dict[Any, tuple[np.ndarray, np.ndarray]]) -> tuple[object, ...] | None:
    """What any run a continuation of this one must share: its metrics' first two points.
    None for a run none of whose metrics changes (two runs stuck at one accuracy are alike
    without being one run: a constant says nothing of which run it is)."""
    if not any(np.unique(v[~np.isnan(v)]).size > 1 for _, v in d.values()):
        return None
    key: list[object] = []
    for m in sorted(d):
        st, v = d[m]
        if st.size < 2:
            return None  # a metric with one point: too little to call a run the start of another
        key.append((m, int(st[0]), int(st[1]), v[:2].tobytes()))
    return tuple(key) if key else None


def _starts(a: dict[Any, tuple[np.ndarray, np.ndarray]],
            b: dict[Any, tuple[np.ndarray, np.ndarray]], *, equal: bool = False) -> bool:
    """Whether ``a`` is exactly the start of ``b``: every metric of ``a`` is one of ``b``'s with
    ``a``'s steps and values (NaN equal to NaN) as ``b``'s first points, and ``b`` goes on
    (``equal``: or holds exactly ``a``'s points)."""
    longer = False
    for m, (st, v) in a.items():
        if m not in b:
            return False
        sb, vb = b[m]
        n = st.size
        if sb.size < n or not np.array_equal(sb[:n], st) or \
                not np.array_equal(vb[:n], v, equal_nan=True):
            return False
        longer |= sb.size > n
    return longer or (equal and a.keys() == b.keys())


def continued_runs(per_run: Series, conditions: Sequence[object] | None = None,
                   saved_at: Sequence[int | None] | None = None
                   ) -> tuple[list[tuple[int, int]], list[int]]:
    """``(shorter, longer)`` index pairs of runs whose rows are the start of another run's,
    each shorter run paired with the longest run it starts (chains are followed: 500 ⊂ 1000 ⊂
    1200 gives 500 → 1200 and 1000 → 1200); and the runs not compared (groups larger than
    :data:`MAX_GROUP` sharing their first rows). ``saved_at``: per run, the ``global_step`` of
    the Hugging Face checkpoint it was read from (None: no checkpoint). A checkpoint whose
    history equals a later checkpoint's (saved after the last logging step) is that
    checkpoint's start too; two logs that are merely equal are not (``DUPLICATE_RUN`` says
    so)."""
    groups: dict[tuple[object, ...], list[int]] = {}
    for i, d in enumerate(per_run):
        key = _head(d)
        if key is not None:
            # runs set apart by a condition (wd 0.1 and wd 1.0) are never one run, however
            # alike their first rows: a run that stopped early is not its neighbour's start
            cond = conditions[i] if conditions is not None else None
            groups.setdefault((key, cond), []).append(i)
    pairs: list[tuple[int, int]] = []
    skipped: list[int] = []
    for members in groups.values():
        if len(members) < 2:
            continue
        if len(members) > MAX_GROUP:
            skipped.extend(members)
            continue
        length = {i: max(st.size for st, _ in per_run[i].values()) for i in members}
        by_len = sorted(members, key=lambda i: (-length[i], i))
        at = saved_at or [None] * len(per_run)
        for a in members:
            target = next((b for b in by_len if b != a and length[b] > length[a]
                           and _starts(per_run[a], per_run[b])), None)
            if target is None and at[a] is not None:  # a checkpoint saved later, same rows
                target = next((b for b in by_len if b != a and length[b] == length[a]
                               and at[b] is not None and at[b] > at[a]  # type: ignore[operator]
                               and _starts(per_run[a], per_run[b], equal=True)), None)
            if target is not None:
                pairs.append((a, target))
    # chains followed to their end (a checkpoint equal to a later one hands its runs on)
    to = dict(pairs)
    for a in list(to):
        seen = {a}
        while to[a] in to and to[a] not in seen:
            seen.add(to[a])
            to[a] = to[to[a]]
    return sorted(to.items()), sorted(skipped)


def merge_continued(points: Points, runs: Sequence[str],
                    per_run: list[dict[Any, tuple[np.ndarray, np.ndarray]]]) -> None:
    """Keep only the longer run of each continuation found in ``per_run`` (the shorter run's
    series are emptied: its rows are the longer run's own), each one a ``RUN_CONTINUED``
    finding naming both runs and where they came from; runs not compared are a warning."""
    conds = [tuple(sorted((str(k), repr(v)) for k, v in points.conditions.get(r, {}).items()
                          if k not in points.outcomes and str(k) not in TRAINER_STATE))
             for r in runs]
    def saved_at(r: str) -> int | None:  # a Hugging Face checkpoint's global_step
        v = points.conditions.get(r, {}).get("global_step")
        return int(v) if isinstance(v, (int, np.integer)) and not isinstance(v, bool) else None

    pairs, skipped = continued_runs(per_run, conds, [saved_at(r) for r in runs])
    for a, b in pairs:
        ra, rb = runs[a], runs[b]
        end_a = max(int(st[-1]) for st, _ in per_run[a].values())
        end_b = max(int(st[-1]) for st, _ in per_run[b].values())
        points.findings.append(Finding(
            "RUN_CONTINUED",
            f"run {safe(ra)!r} ({safe(points.origins.get(ra, ra))}, to step {end_a}) is the "
            f"start of run {safe(rb)!r} ({safe(points.origins.get(rb, rb))}, to step {end_b}), "
            "row for row: one run resumed, read once as the longer (not two replicates)",
            run=rb, runs=(ra, rb), file=points.origins.get(ra, ra)))
    for a, _ in pairs:
        per_run[a] = {}
    _note_segments(points, runs, per_run, conds)
    if skipped:
        points.warnings.append(
            f"{len(skipped)} runs share their first rows with more than {MAX_GROUP} others: "
            "not compared for continuations (a run resumed in another file would be read as "
            f"two runs); first: {safe(runs[skipped[0]])!r}")


def _span(d: dict[Any, tuple[np.ndarray, np.ndarray]]) -> tuple[int, int, float] | None:
    """A run's first and last step over all its series, and its cadence (the median gap
    between its steps); None for a run of fewer than three steps."""
    steps = np.unique(np.concatenate([st for st, _ in d.values()])) if d else np.zeros(0)
    if steps.size < 3:  # two points: no cadence to tell a gap by
        return None
    return int(steps[0]), int(steps[-1]), float(np.median(np.diff(steps)))


def _note_segments(points: Points, runs: Sequence[str], per_run: Series,
                   conds: Sequence[tuple[tuple[str, str], ...]]) -> None:
    """``RUN_SEGMENTS``: the runs of one setting whose steps follow one another along one
    axis, each starting in the second half of the one before (a resume from a checkpoint
    taken before a crash) or no later than two cadences after it ended, and ending later -- pieces of one run resumed under new ids (a ``run_id`` that changes at each
    resume), which the audit would pool as replicates: a run that never grokked, a run that
    starts after the grok, and the real one. Only where every run of that setting is in the
    chain (replicates start together; they never follow one another)."""
    groups: dict[tuple[tuple[str, str], ...], list[int]] = {}
    for i, c in enumerate(conds):
        if per_run[i]:
            groups.setdefault(c, []).append(i)
    for members in groups.values():
        if len(members) < 2:
            continue
        spans: list[tuple[int, int, float]] = []
        for i in members:
            sp = _span(per_run[i])
            if sp is None:
                break
            spans.append(sp)
        if len(spans) < len(members):
            continue
        chain = sorted(zip(members, spans), key=lambda m: (m[1][0], m[1][1]))
        # each starts in the second half of the one before or after it (a resume from a
        # late checkpoint; runs that start together and overlap are replicates or arms)
        if not all(a[0] + (a[1] - a[0]) / 2 < b[0] <= a[1] + 2 * min(a[2], b[2])
                   and b[1] > a[1] for (_, a), (_, b) in zip(chain[:-1], chain[1:])):
            continue
        shown = ", ".join(f"{safe(runs[i])!r} ({sp[0]}–{sp[1]})" for i, sp in chain[:4]) + (
            ", …" if len(chain) > 4 else "")
        points.findings.append(Finding(
            "RUN_SEGMENTS",
            f"{len(chain)} runs of one setting follow one another along one step axis, each "
            f"starting where the one before ended: {shown}; pieces of one run resumed under "
            "new ids look so, and are audited here as replicates (a run that never grokked "
            "beside one that starts after the grok); if they are one run, give its rows one "
            "run id in the file",
            runs=tuple(runs[i] for i, _ in chain),
            evidence=(("steps", {runs[i]: [sp[0], sp[1]] for i, sp in chain}),)))
