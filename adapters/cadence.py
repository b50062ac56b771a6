"""A step column checked against the length and logging cadence a run's config declares.

A training script that evaluates every ``log_frequency`` epochs may write, as the step of each
record, the index of the evaluation (0, 1, …, 19) instead of the epoch (0, 500, …, 9 500). Its
config says ``num_epochs 10000, log_frequency 500``; nothing in the log says which it wrote.
Read as it is, every time the audit reports (``t_grok``, ``t_compress``, a lag) is in log events
and printed as epochs. :func:`check_cadence` compares each run's steps with the length and the
cadence its conditions declare (:data:`DECLARED`: a config file beside the log, a config record,
``--cond``) and raises ``STEP_CADENCE_MISMATCH`` for the runs whose step column counts log
events. The steps are read as logged; ``--step-scale`` rescales them (:func:`parse_step_scale`).

The rule (:func:`counts_log_events`), for a run that declares a length ``T`` and a cadence ``c``
(positive integers, ``c >= 2`` and ``T >= 2c``) and whose steps end at ``M``:

* ``|M·c − T| <= c``: its last step times the cadence is the declared length, within one
  cadence (``0…19`` × 500 = 9 500 of 10 000; ``1…20`` × 500 = 10 000);
* ``M <= T/c + 1``: the column ends far below the declared length;
* some step is not a multiple of ``c``: a run that logs its real step every ``c`` steps (0, 10,
  …, 100 of a 1 000-step run stopped early) is no counter of its log events.

A run whose steps agree with its config (multiples of the cadence ending near the declared
length), or whose config declares no length or no cadence, is not named.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from grokaudit.errors import ConfigError, ErrorCode, LogFormatError
from grokaudit.schema import STEP_MAX
from grokaudit.text import safe

from .points import Finding, Points

#: The config keys that declare a run's length (``total``, in epochs or steps) and how often it
#: logs or evaluates (``cadence``, in the same unit). A key is matched by its last part
#: (``trainer.max_steps``, ``args/log_every``), case-insensitively; a value counts when it is a
#: positive integer (``500``, ``500.0``; never a bool, a fraction or text).
DECLARED: Mapping[str, tuple[str, ...]] = {
    "total": (
        # epochs
        "num_epochs", "epochs", "n_epochs", "max_epochs", "total_epochs", "train_epochs",
        "num_train_epochs", "training_epochs",
        # optimizer steps, iterations
        "num_steps", "steps", "n_steps", "max_steps", "total_steps", "train_steps",
        "training_steps", "num_training_steps", "num_iters", "n_iters", "max_iters", "iters",
        "total_iters", "max_iter", "num_iterations", "iterations", "max_iterations",
    ),
    "cadence": (
        # logging
        "log_frequency", "log_freq", "log_every", "log_interval", "log_steps",
        "logging_steps", "logging_interval", "log_every_n_steps",
        # evaluation
        "eval_every", "eval_interval", "eval_freq", "eval_frequency", "eval_steps",
        "eval_every_n_steps", "val_every", "val_interval", "validate_every",
        "check_val_every_n_epoch", "test_every", "test_interval",
        # printing, recording, checkpoints
        "print_every", "print_freq", "print_interval", "record_every", "metrics_every",
        "save_every", "save_steps", "save_interval",
    ),
}

_ROLE = {name: role for role, names in DECLARED.items() for name in names}


@dataclass(frozen=True)
class Declared:
    """The length and cadence a run's config declares, as read (key and value)."""

    total_key: str
    total: int
    cadence_key: str
    cadence: int


def parse_step_scale(raw: object) -> int | str | None:
    """``--step-scale`` as a positive integer (every step of every run is multiplied by it), or
    ``"cadence"`` (the steps of each run whose step column counts log events are multiplied by
    the cadence its config declares); None when not given. Anything else is a
    :class:`ConfigError` (``INVALID_OPTION``; ``OPTION_OUT_OF_RANGE`` beyond 2**53)."""
    if raw is None or raw == "":
        return None
    text = str(raw).strip()
    if text.lower() == "cadence":
        return "cadence"
    if isinstance(raw, bool) or not (isinstance(raw, (int, np.integer))
                                     or re.fullmatch(r"[0-9]+", text)):
        raise ConfigError(
            f"--step-scale {safe(text)!r} is not a positive integer or 'cadence': give the "
            "cadence the step column counts in (--step-scale 500: every step times 500), or "
            "'cadence' (each run whose step column counts log events, by the cadence its "
            "config declares)", option="--step-scale", code=ErrorCode.INVALID_OPTION)
    value = int(text)
    if value < 1:
        raise ConfigError(f"--step-scale {value}: the scale multiplies every step, so it is a "
                          "positive integer (1 leaves the steps as logged)",
                          option="--step-scale", code=ErrorCode.INVALID_OPTION)
    if value > STEP_MAX:
        raise ConfigError(f"--step-scale {value} is beyond the largest step {STEP_MAX} (2**53)",
                          option="--step-scale", code=ErrorCode.OPTION_OUT_OF_RANGE)
    return value


def _positive_int(v: Any) -> int | None:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer,
                                                             np.floating)):
        return None
    x = float(v)
    if not np.isfinite(x) or x < 1 or not x.is_integer() or x > STEP_MAX:
        return None
    return int(x)


def _declared(conditions: Mapping[str, Any], role: str) -> Iterator[tuple[str, int]]:
    for key, v in conditions.items():
        leaf = re.split(r"[./]", str(key))[-1].lower()
        n = _positive_int(v) if _ROLE.get(leaf) == role else None
        if n is not None:
            yield str(key), n


def _ends_at_events(m: int, total: int, cadence: int) -> bool:
    """The rule's conditions on the last step ``m`` alone (the module docstring)."""
    return (cadence >= 2 and total >= 2 * cadence and m >= 1
            and abs(m * cadence - total) <= cadence and m * cadence <= total + cadence)


def counts_log_events(steps: np.ndarray, total: int, cadence: int) -> bool:
    """Whether a run's ``steps`` (every step it logged, any order) count log events rather than
    the unit of ``total``, logged every ``cadence`` (the rule of the module docstring)."""
    return (steps.size > 0 and _ends_at_events(int(steps.max()), total, cadence)
            and bool(np.any(steps % cadence != 0)))


def mismatch(conditions: Mapping[str, Any], steps: Sequence[np.ndarray]) -> Declared | None:
    """The first declared (length, cadence) pair, in the order the conditions hold them,
    against which a run's ``steps`` (its arrays of steps: one per metric or file) count log
    events; None when none does (or none is declared)."""
    totals = list(_declared(conditions, "total"))
    if not totals or not any(a.size for a in steps):
        return None
    m = max(int(a.max()) for a in steps if a.size)
    for ck, c in _declared(conditions, "cadence"):
        for tk, t in totals:
            # the last step first: the whole column is read only for a run it fits
            if _ends_at_events(m, t, c) and any(bool(np.any(a % c != 0)) for a in steps):
                return Declared(tk, t, ck, c)
    return None


def check_cadence(points: Points, step_scale: int | str | None = None) -> None:
    """Check every run's steps against its declared length and cadence (in place).

    ``step_scale`` (``--step-scale``): an integer multiplies every step of every run first (the
    check then reads the scaled steps); ``"cadence"`` multiplies the steps of each run found
    counting log events by its declared cadence, and says so in a note. Without it each such
    run is named in a ``STEP_CADENCE_MISMATCH`` finding (one per declaration and last step,
    listing its runs), its steps read as logged."""
    if isinstance(step_scale, int):
        _scale_all(points, step_scale)
    keys = {k for conds in points.conditions.values() for k in conds
            if k not in points.outcomes}
    leaves = {_ROLE.get(re.split(r"[./]", str(k))[-1].lower()) for k in keys}
    if not {"total", "cadence"} <= leaves:
        if step_scale == "cadence":
            _note_nothing_scaled(points)
        return
    steps: dict[str, list[np.ndarray]] = {}
    for ch in points.chunks:
        steps.setdefault(ch.run, []).append(ch.step)
    found: dict[tuple[Declared, int], list[str]] = {}
    for run in sorted(steps):
        conds = {k: v for k, v in points.conditions.get(run, {}).items()
                 if k not in points.outcomes}
        d = mismatch(conds, steps[run])
        if d is not None:
            found.setdefault((d, max(int(a.max()) for a in steps[run] if a.size)),
                             []).append(run)
    if step_scale == "cadence":
        _scale_found(points, found)
        return
    col = str(points.extra.get("step_column") or "step")
    for (d, m), runs in found.items():
        unit = "epochs" if "epoch" in d.total_key.lower() else "steps"
        points.findings.append(Finding(
            "STEP_CADENCE_MISMATCH",
            f"the step column {safe(col)!r} of {len(runs)} run(s) counts log events, not "
            f"{unit}: it ends at {m}, and their config declares {safe(d.total_key)} {d.total} "
            f"logged every {d.cadence} ({safe(d.cadence_key)}); {m} × {d.cadence} = "
            f"{m * d.cadence}, within one cadence of {d.total}. Its steps are read as logged, "
            f"so t_grok and t_compress are in log events: --step-scale cadence multiplies each "
            f"such run's steps by its declared cadence (first: {safe(runs[0])!r})",
            run=runs[0], runs=tuple(runs), count=len(runs),
            evidence=(("step_column", col), ("step_max", m),
                      ("total_key", d.total_key), ("total", d.total),
                      ("cadence_key", d.cadence_key), ("cadence", d.cadence),
                      ("factor", d.cadence), ("unit", unit))))


def _scale_all(points: Points, scale: int) -> None:
    """Every step times ``scale`` (``--step-scale N``); a step beyond 2**53 is refused."""
    top = max((int(ch.step.max()) for ch in points.chunks if ch.step.size), default=0)
    if top * scale > STEP_MAX:
        raise LogFormatError(f"--step-scale {scale}: the step {top} becomes {top * scale}, "
                             f"beyond the largest supported step {STEP_MAX} (2**53)",
                             column="step", code=ErrorCode.STEP_OUT_OF_RANGE)
    if scale != 1:
        for ch in points.chunks:
            ch.step = ch.step * scale
    runs = {ch.run for ch in points.chunks}
    points.extra["step_scale"] = {"scale": scale, "runs": len(runs)}
    points.warnings.append(f"--step-scale {scale}: every step of the {len(runs)} run(s) "
                           f"multiplied by {scale} (the step column read as counting log "
                           f"events every {scale})")


def _scale_found(points: Points, found: Mapping[tuple[Declared, int], list[str]]) -> None:
    """``--step-scale cadence``: the runs ``found`` counting log events, rescaled by their
    declared cadence, and a note naming them."""
    if not found:
        _note_nothing_scaled(points)
        return
    factor = {r: d.cadence for (d, _), runs in found.items() for r in runs}
    for ch in points.chunks:
        if ch.run in factor:
            ch.step = ch.step * factor[ch.run]
    by: dict[str, int] = {}
    for (d, _), runs in found.items():
        by[str(d.cadence)] = by.get(str(d.cadence), 0) + len(runs)
    points.extra["step_scale"] = {"scale": "cadence", "runs": len(factor), "factors": by}
    first = sorted(factor)[0]
    points.warnings.append(
        f"--step-scale cadence: the steps of {len(factor)} run(s) whose step column counted "
        f"log events multiplied by the cadence their config declares ("
        + ", ".join(f"×{c}: {n} run(s)" for c, n in sorted(by.items(), key=lambda x: int(x[0])))
        + f"; first: {safe(first)!r})")


def _note_nothing_scaled(points: Points) -> None:
    points.extra["step_scale"] = {"scale": "cadence", "runs": 0, "factors": {}}
    points.warnings.append("--step-scale cadence: no run's step column counts log events "
                           "against a length and cadence its config declares; no step was "
                           "rescaled")
