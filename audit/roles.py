"""What a column of a log is, decided by its name and values: the step, an accuracy, an outcome.

One module so that every reader, the canonical table's validation and ``grokaudit inspect``
decide the same way:

* **the step** — the first of :data:`STEP_NAMES` a table has (``epoch`` only when nothing
  else counts steps);
* **the accuracies** — ``test_acc``/``train_acc``, or the best candidate among the names
  loggers use (:func:`choose_accuracy`): a name that matches, logged at the most steps;
* **percent or fraction** — decided per column from what its values can be
  (:func:`decide_percent`);
* **outcomes** — per-run values that are results of the run (``final_test_acc``,
  ``first_grok_step``), never design conditions (:func:`is_outcome_name`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: Step columns, in order of preference: optimizer steps first, epochs only when nothing else
#: counts steps (the table then says ``step_unit: epoch``).
STEP_NAMES: tuple[str, ...] = (
    "step", "_step", "global_step", "Step", "steps", "trainer/global_step",
    "train/global_step", "iteration", "iter", "iters", "iterations", "it", "epoch", "Epoch",
    "epochs",
)
#: Step names that count epochs, not optimizer steps.
EPOCH_NAMES = frozenset({"epoch", "Epoch", "epochs"})


def is_epoch_name(name: str) -> bool:
    """True for a step column that counts epochs (``epoch``, ``history.eval_epochs``)."""
    leaf = name.rsplit(".", 1)[-1]
    return leaf in EPOCH_NAMES or bool(re.search(r"(^|_)epochs?$", leaf, re.IGNORECASE))

_SEP = r"[/_. -]?"
_KERAS = r"(?:epoch_|batch_)?"  # Keras' TensorBoard callback: validation/epoch_accuracy
_TEST = re.compile(
    rf"^(?:(?P<p>test|val|valid|validation|eval|heldout|held_out){_SEP}{_KERAS}(?:acc|accuracy)"
    rf"(?P<s>{_SEP}(?:epoch|step))?|(?:acc|accuracy)[/_.](?P<p2>test|val|valid|validation|eval)"
    r"|(?P<bare>acc|accuracy))$", re.IGNORECASE)
_TRAIN = re.compile(
    rf"^(?:(?P<p>train|training|full_train|train_full){_SEP}{_KERAS}(?:acc|accuracy)"
    rf"(?P<s>{_SEP}(?:epoch|step))?|(?:acc|accuracy)[/_.](?P<p2>train|training))$",
    re.IGNORECASE)
_PREFIX_RANK = {"test": 0, "val": 1, "valid": 2, "validation": 3, "eval": 4, "heldout": 5,
                "held_out": 5, "train": 0, "training": 1, "full_train": 2, "train_full": 2}


def _leaf(name: str) -> str:
    """The last component of a flattened name (``history.test_acc`` → ``test_acc``); a
    namespaced tag (``validation/epoch_accuracy``) is kept whole."""
    return name.rsplit(".", 1)[-1]


def accuracy_rank(name: str, target: str) -> int | None:
    """How well ``name`` fits the accuracy ``target`` (``test_acc`` or ``train_acc``): a rank
    (lower is better) or None when it does not match. ``acc``/``accuracy`` alone is a test
    accuracy of last resort (many single-split loggers call it so)."""
    if name == target:
        return -1  # the canonical name itself: best, if logged as often as the others
    m = (_TEST if target == "test_acc" else _TRAIN).match(_leaf(name))
    if m is None:
        return None
    if m.groupdict().get("bare"):
        return 90
    prefix = (m.group("p") or m.group("p2") or "").lower()
    suffix = 1 if m.group("s") else 0
    return 10 * _PREFIX_RANK.get(prefix, 8) + suffix + (0 if "." not in name else 5)


@dataclass(frozen=True)
class AccuracyChoice:
    """Which column was read as an accuracy, and what else could have been."""

    target: str  #: ``test_acc`` or ``train_acc``
    chosen: str
    points: int  #: logged (non-missing) points of the chosen column
    alternatives: tuple[tuple[str, int], ...]  #: other candidates with their logged points


def choose_accuracy(counts: Mapping[str, int], target: str,
                    exclude: Sequence[str] = ()) -> AccuracyChoice | None:
    """The column to read as ``target`` among ``counts`` (name → logged points), or None.

    Candidates are the names :func:`accuracy_rank` accepts. A column logged at fewer than
    half the points of the most-logged candidate is passed over (a ``train_accuracy`` logged
    once is not preferred to a ``full_train_acc`` logged every step); among the rest, the
    best-ranked name wins, then the most points, then the name."""
    cands = [(n, c) for n, c in counts.items()
             if n not in exclude and c > 0 and accuracy_rank(n, target) is not None]
    if not cands:
        return None
    most = max(c for _, c in cands)
    eligible = [(n, c) for n, c in cands if 2 * c >= most]
    eligible.sort(key=lambda nc: (accuracy_rank(nc[0], target), -nc[1], nc[0]))
    chosen, pts = eligible[0]
    alts = tuple(sorted(((n, c) for n, c in cands if n != chosen), key=lambda nc: nc[0]))
    return AccuracyChoice(target, chosen, pts, alts)


# ------------------------------------------------------------------------------------------
# percent or fraction
# ------------------------------------------------------------------------------------------

#: A value above this is no fraction: tolerance for rounding in a logged 1.0.
FRACTION_MAX = 1.0 + 1e-9


@dataclass(frozen=True)
class ScaleDecision:
    """How one accuracy column is read: divided by ``scale`` (1 or 100), and why."""

    column: str
    scale: float
    maximum: float  #: the column's largest logged value, as stored
    why: str  #: ``fraction``, ``percent`` (a value above 1), ``like_sibling`` or ``option``


#: A value above this is percent beyond doubt (a fraction logged with rounding stays near 1).
PERCENT_MIN = 1.5
#: Values above :data:`PERCENT_MIN` a column needs to be percent: one or two stray values in
#: a column of fractions do not turn it into percent (they are refused as out of range).
PERCENT_MIN_POINTS = 3


def decide_percent(stats: Mapping[str, tuple[float, int]], acc_scale: float | None
                   ) -> dict[str, ScaleDecision]:
    """Percent or fraction for each accuracy column (name → (its largest value, NaN when it
    holds none; how many of its values exceed 1.5)), by one rule in every command:

    * ``acc_scale`` given (``--acc-scale``): every column is divided by it (``option``);
    * a column holding at least 3 values above 1.5 is percent (``percent``);
    * a column that never exceeds 1.5 logged beside a percent column of the same log is
      percent too (``like_sibling``: one logger, one convention — a validation accuracy that
      never passes 1 % next to a train accuracy reaching 100 is not silently a fraction);
    * otherwise a fraction (``fraction``); one above 1 but not above 1.5 is then refused by
      the range check (neither a fraction nor clearly percent: ``--acc-scale`` says which).
    """
    out: dict[str, ScaleDecision] = {}
    maxima = {c: m for c, (m, _) in stats.items()}
    if acc_scale is not None:
        return {c: ScaleDecision(c, float(acc_scale), m, "option") for c, m in maxima.items()}
    pct = {c for c, (m, n) in stats.items() if not math.isnan(m) and m > PERCENT_MIN
           and n >= PERCENT_MIN_POINTS}
    for c, m in maxima.items():
        if c in pct:
            out[c] = ScaleDecision(c, 100.0, m, "percent")
        elif pct and not math.isnan(m):
            out[c] = ScaleDecision(c, 100.0, m, "like_sibling")
        else:
            out[c] = ScaleDecision(c, 1.0, m, "fraction")
    return out


# ------------------------------------------------------------------------------------------
# outcomes
# ------------------------------------------------------------------------------------------

#: Names of per-run values that are results of the run, not conditions it was trained under.
_OUTCOME = re.compile(
    r"(^|[_./ -])(final|best|first|last|peak|runtime|duration|elapsed|flos|per_second)"
    r"([_./ -]|$)"
    r"|grok(king)?[_./ -]?(step|time|epoch|at|delay)"
    r"|(^|[_./ -])t_?(grok|mem|compress)([_./ -]|$)"
    r"|(^|[_./ -])(acc|accuracy|loss)$|^global_step$",
    re.IGNORECASE)
#: Parents whose fields are results (``{"_summary": {...}}``, ``"grokking_summary"``).
_SUMMARY_PARENT = re.compile(r"summary|result|final|outcome|metrics|stats|best",
                             re.IGNORECASE)


def is_outcome_name(name: str) -> bool:
    """True when a per-run value called ``name`` is a result of the run (``final_test_acc``,
    ``first_grok_step``, ``best_metric``, ``train_runtime``) rather than a condition."""
    leaf = _leaf(name)
    if _OUTCOME.search(leaf):
        return True
    parents = name.split(".")[:-1]
    return any(_SUMMARY_PARENT.search(p) for p in parents)


def is_summary_parent(name: str) -> bool:
    """True for the name of an object holding results (``_summary``, ``grokking_summary``)."""
    return bool(_SUMMARY_PARENT.search(name))


def nearly_unique(values: Sequence[object]) -> bool:
    """True when a per-run value differs in (nearly) every run: at least 4 runs and at least
    90 % of them distinct. Such a column cannot split runs into cells of replicates."""
    vals = [v for v in values if v is not None and not (isinstance(v, float) and v != v)]
    n = len(vals)
    return n >= 4 and len(set(vals)) >= 0.9 * n


# ------------------------------------------------------------------------------------------
# conditions written only in run names
# ------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"(?P<key>[A-Za-z][A-Za-z_]*?)[=_-]?(?P<value>[0-9]+(?:\.[0-9]+)?(?:e[-+]?[0-9]+)?|inf)"
                    r"(?=$|[^0-9A-Za-z.]|_)", re.IGNORECASE)
_REPLICATE_KEYS = re.compile(r"^(s|seed|rep|repeat|run|trial|version|v|r|copy|idx|id)$",
                             re.IGNORECASE)


@dataclass(frozen=True)
class NameToken:
    """A ``key<number>`` token that differs between run names (``wd1.0``, ``p=151``)."""

    key: str
    regex: str  #: for ``--cond key=REGEX``
    values: tuple[str, ...]  #: the distinct values seen, in order


def name_tokens(run_ids: Sequence[str]) -> list[NameToken]:
    """Tokens of the run names (their last path part) that look like ``key<number>`` and
    differ between runs, seeds and replicate counters left out: conditions a log may hold
    only in its file or folder names (``SGD_p=151`` vs ``SGD_p=199``). Empty for one run."""
    if len(run_ids) < 2:
        return []
    seen: dict[str, list[str]] = {}
    sep: dict[str, str] = {}
    for rid in run_ids:
        leaf = str(rid).replace("\\", "/").rstrip("/").split("/")[-1]
        for m in _TOKEN.finditer(leaf):
            key = m.group("key").rstrip("_-=")
            if not key or _REPLICATE_KEYS.match(key):
                continue
            seen.setdefault(key, []).append(m.group("value"))
            between = leaf[m.start("key") + len(m.group("key")):m.start("value")]
            sep.setdefault(key, between if between else "")
    out = []
    for key, vals in seen.items():
        distinct = tuple(dict.fromkeys(vals))
        if len(vals) == len(run_ids) and len(distinct) > 1:
            short = re.split(r"[_-]", key)[-1] or key  # SGD_p=151 -> p
            num = "[0-9.e+-]+" if any("e" in v.lower() for v in distinct) else "[0-9.]+"
            num = f"inf|{num}" if "inf" in {v.lower() for v in distinct} else num
            rx = f"{re.escape(short)}{re.escape(sep[key])}({num})"
            out.append(NameToken(short, rx, distinct))
    return out
