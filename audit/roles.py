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

#: Split words of a held-out accuracy, by preference; of a train accuracy.
_TEST_SPLITS = {"test": 0, "val": 1, "valid": 2, "validation": 3, "eval": 4, "evaluation": 4,
                "heldout": 5, "holdout": 5, "dev": 6}
_TRAIN_SPLITS = {"train": 0, "training": 1}
_ACC_WORDS = {"acc", "accuracy"}
#: Words that say nothing about which accuracy a name is (Keras' ``epoch_accuracy``,
#: Lightning's ``val_acc_epoch``, ``full_train_acc``).
_NEUTRAL = {"epoch", "step", "batch", "full", "overall", "mean", "avg", "top1"}
#: A name with no split word (``accuracy``): a candidate only when no named one exists.
BARE_RANK = 900


#: ``acc1``, ``accuracy5``: an accuracy word with its top-k written on (``acc1`` is top-1).
_ACC_TOP_K = re.compile(r"(acc|accuracy)([0-9]+)")


def _tokens(name: str) -> list[str]:
    out = []
    for t in re.split(r"[/._\-\s]+", name.lower()):
        m = _ACC_TOP_K.fullmatch(t)
        out += [m.group(1), f"top{m.group(2)}"] if m else [t] if t else []
    return out


def accuracy_rank(name: str, target: str) -> int | None:
    """How well ``name`` fits the accuracy ``target`` (``test_acc`` or ``train_acc``): a rank
    (lower is better) or None when it cannot be it.

    Every part of the name counts (``val.acc``, ``validation/epoch_accuracy``,
    ``eval_g0_accuracy``): a name holding a train word is never a test accuracy, nor one
    holding a held-out word a train accuracy. ``acc``/``accuracy`` with no split word (Keras'
    training ``accuracy``) is a test accuracy of last resort (:data:`BARE_RANK`), never
    preferred to a named one. Other words (``g0``, ``top5``) rank a name lower."""
    if name == target:
        return -1  # the canonical name itself: best, if logged as often as the others
    toks = _tokens(name)
    if not any(t in _ACC_WORDS for t in toks):
        return None
    tests = [_TEST_SPLITS[t] for t in toks if t in _TEST_SPLITS]
    trains = [_TRAIN_SPLITS[t] for t in toks if t in _TRAIN_SPLITS]
    other = [t for t in toks if t not in _ACC_WORDS and t not in _TEST_SPLITS
             and t not in _TRAIN_SPLITS and t not in _NEUTRAL]
    # Lightning's on_epoch aggregate before its per-batch value (``train_acc_epoch`` before
    # ``train_acc_step``, which would otherwise tie and leave no train accuracy read)
    suffix = 2 if "step" in toks[1:] else 1 if "epoch" in toks[1:] else 0
    if target == "test_acc":
        if trains:
            return None
        if tests and toks[-1] == "step":
            # Lightning's ``test_acc_step``: one value per batch of an evaluation loop, stepped
            # by the batch's index (the test loop's restart at 0 after training): no curve
            return None
        base = 10 * min(tests) if tests else BARE_RANK
    else:
        if tests or not trains:
            return None
        base = 10 * min(trains) + (2 if "full" in toks else 0)
    return base + 15 * len(other) + suffix


@dataclass(frozen=True)
class AccuracyChoice:
    """Which column was read as an accuracy, and what else could have been."""

    target: str  #: ``test_acc`` or ``train_acc``
    chosen: str
    points: int  #: logged (non-missing) points of the chosen column
    alternatives: tuple[tuple[str, int], ...]  #: other candidates with their logged points


#: Rank of a bare accuracy beside its held-out twin as the train accuracy (Keras: ``accuracy``
#: beside ``val_accuracy``): after every name with a train word.
TWIN_TRAIN_RANK = 100
#: The prefixes Keras (and code written like it) gives the held-out twin of a metric.
_TWIN_PREFIXES = ("val_", "validation_", "val/", "validation/")


def _bare_accuracy(toks: Sequence[str]) -> bool:
    """Whether a name's words make an accuracy with no split word (``accuracy``, ``acc_step``,
    ``sparse_categorical_accuracy``)."""
    return any(t in _ACC_WORDS for t in toks) and not any(
        t in _TEST_SPLITS or t in _TRAIN_SPLITS for t in toks)


def is_split_word(value: str) -> bool:
    """Whether ``value`` names a data split (``train``, ``val``, ``test``…): a column of them
    tells a run's train rows from its validation rows, never one run from another."""
    return value.strip().lower() in _TEST_SPLITS or value.strip().lower() in _TRAIN_SPLITS


#: A top-k accuracy's word (``top5``).
_TOP_K = re.compile(r"top[0-9]+")
#: Words that make an accuracy-named value a setting (a threshold, a target).
_SETTING_WORDS = frozenset({"threshold", "thresh", "target", "min", "max", "tol", "goal"})


def is_measured_accuracy(name: str) -> bool:
    """Whether column ``name`` is an accuracy measured on a split or at a top-k
    (``val_acc``, ``metrics/accuracy_top5``, ``test_acc1``): a per-step value whatever it
    does, never a setting -- unlike ``acc_grok`` or ``target_acc``, thresholds a config
    names, or ``final_test_acc``, a run's result."""
    toks = _tokens(name)
    acc = [i for i, t in enumerate(toks) if t in _ACC_WORDS]
    if not acc or is_outcome_name(name) or any(t in _SETTING_WORDS for t in toks):
        return False
    # after the accuracy word only a split, a top-k or a word that says nothing (val_acc_epoch,
    # accuracy_top5): val_acc_patience, test_acc_cutoff, train_acc_stop are settings
    after = toks[acc[-1] + 1:]
    return all(t in _TEST_SPLITS or t in _TRAIN_SPLITS or t in _NEUTRAL or _TOP_K.fullmatch(t)
               for t in after) and any(
        t in _TEST_SPLITS or t in _TRAIN_SPLITS or _TOP_K.fullmatch(t) for t in toks)


def is_bare_accuracy(name: str) -> bool:
    """Whether column ``name`` is an accuracy whose name holds no split word (``accuracy``,
    ``mask_rcnn/accuracy``, ``acc_pose``): read as the test accuracy only as a last resort,
    since a logger's bare accuracy is often measured on its training batches."""
    return _bare_accuracy(_tokens(name))


def _bare_with_twin(name: str, counts: Mapping[str, int]) -> bool:
    """Whether ``name`` is an accuracy with no split word (``accuracy``, ``acc``,
    ``sparse_categorical_accuracy``) logged beside its held-out twin (``val_accuracy``): the
    training accuracy, as Keras names it."""
    return _bare_accuracy(_tokens(name)) and any(counts.get(p + name, 0) > 0
                                                 for p in _TWIN_PREFIXES)


def _training_loop(name: str, counts: Mapping[str, int]) -> bool:
    """Whether ``name`` is a bare accuracy (no split word) that Lightning logged from its
    training loop: ``acc_step`` (``on_step``: one value per batch, which only the training
    loop writes) or ``acc_epoch`` beside it (the same value's epoch aggregate). A training
    accuracy, never a test one (a per-batch train accuracy read as the test curve passed a run
    as fully generalized)."""
    toks = _tokens(name)
    if not _bare_accuracy(toks) or len(toks) < 2:
        return False
    if toks[-1] == "step":
        return True
    return toks[-1] == "epoch" and counts.get(name[:-len("epoch")] + "step", 0) > 0


def accuracy_candidates(counts: Mapping[str, int], target: str,
                        exclude: Sequence[str] = (), beside: Mapping[str, int] | None = None
                        ) -> list[tuple[str, int, int]]:
    """``(name, points, rank)`` of every column that could be ``target``, best first. For the
    train accuracy, a bare accuracy beside its held-out twin (Keras: ``accuracy`` beside
    ``val_accuracy``) is a candidate after every name with a train word; for the test
    accuracy it is not one (its twin is). ``beside``: the columns to find twins among
    (default ``counts``; a caller that has renamed a twin already passes the names read)."""
    cands = []
    for n, c in counts.items():
        if n in exclude or c <= 0:
            continue
        twin = _bare_with_twin(n, counts if beside is None else beside) or \
            _training_loop(n, counts if beside is None else beside)
        # other words rank a twin lower, as they rank any name (``top_k_categorical_accuracy``
        # after ``accuracy``)
        other = sum(t not in _ACC_WORDS and t not in _NEUTRAL for t in _tokens(n))
        r = (TWIN_TRAIN_RANK + 15 * other if twin else None) if target == "train_acc" and \
            accuracy_rank(n, target) is None else (None if twin else accuracy_rank(n, target))
        if r is not None:
            cands.append((n, c, r))
    return sorted(cands, key=lambda x: (x[2], -x[1], x[0]))


def choose_accuracy(counts: Mapping[str, int], target: str,
                    exclude: Sequence[str] = (), beside: Mapping[str, int] | None = None
                    ) -> AccuracyChoice | None:
    """The column to read as ``target`` among ``counts`` (name → logged points), or None
    (no candidate, or several that nothing tells apart).

    A name with a split word always beats a bare ``accuracy``. Among them, a column logged at
    fewer than half the points of the most-logged one is passed over (a ``train_accuracy``
    logged once is not preferred to a ``full_train_acc`` logged every step; a ``test_acc``
    of a final test to the validation curve); then the best-ranked name wins. Two
    candidates of the same rank (``eval_g0_accuracy``, ``eval_g1_accuracy``) are not
    guessed between: None."""
    cands = accuracy_candidates(counts, target, exclude, beside)
    if not cands:
        return None
    named = [c for c in cands if c[2] < BARE_RANK]
    pool = named or cands
    most = max(c for _, c, _ in pool)
    eligible = [x for x in pool if 2 * x[1] >= most]
    best = min(r for _, _, r in eligible)
    tied = [x for x in eligible if x[2] == best]
    if len(tied) > 1:
        return None
    chosen, pts, _ = tied[0]
    alts = tuple(sorted(((n, c) for n, c, _ in cands if n != chosen), key=lambda nc: nc[0]))
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


def decide_percent(stats: Mapping[str, tuple[float, int]], acc_scale: float | None,
                   column_scales: Mapping[str, float] | None = None
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
    if column_scales:  # --acc-scale test_acc=100,train_acc=1: those columns as said
        rest = {c: v for c, v in stats.items() if c not in column_scales}
        out = {c: ScaleDecision(c, float(s), maxima[c], "option")
               for c, s in column_scales.items() if c in maxima}
        return out | decide_percent(rest, acc_scale)
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
#: Only unmistakable ones: ``final_lr``, ``lr_peak``, ``best_of_n``, ``last_layer`` or
#: ``label_smoothing_loss`` are settings.
_OUTCOME = re.compile(
    r"grok(king)?[_./ -]?(step|time|epoch|at|delay|iter)"
    r"|(^|[_./ -])t_?(grok|mem|compress)([_./ -]|$)"
    r"|(^|[_./ -])(memoriz(e|ation)|stopped|converged)[_./ -]?(step|epoch|iter)"
    r"|^(steps|epochs)_run$"
    r"|(^|[_./ -])(final|best|last|peak|max|min)[_./ -]?((test|val|valid|eval|train)[_./ -]?)?"
    r"(acc|accuracy|loss|metric|score)([_./ -]|$)"
    r"|(^|[_./ -])(test|val|valid|eval|train|training)[_./ -]?(acc|accuracy|loss)$"
    r"|^(best_model_checkpoint|best_global_step|global_step|total_flos|num_input_tokens_seen)$"
    r"|(^|_)(runtime|per_second|elapsed[a-z_]*|wall[a-z_]*(time|seconds|secs))$",
    re.IGNORECASE)
#: Parents whose fields are results (``{"_summary": {...}}``, ``"grokking_summary"``); the
#: strict form (inside a config record) only the unmistakable names.
_SUMMARY_PARENT = re.compile(r"summary|result|final|outcome|metrics|stats|best",
                             re.IGNORECASE)
_SUMMARY_PARENT_STRICT = re.compile(r"summary|result|outcome", re.IGNORECASE)
#: Objects whose scalars are the run's conditions (``{"config": {...}}``, ``_meta``, ``args``).
CONFIG_OBJECTS = ("config", "args", "hparams", "params", "cfg", "settings", "hyperparameters",
                  "hyper_parameters", "_meta", "meta", "hp", "conf", "configuration")
#: Config files loggers write beside a run's log (Lightning's ``hparams.yaml``, a training
#: script's ``config.json`` or ``args.json``), whose scalars are the run's conditions.
SIDECAR_NAMES = ("hparams.yaml", "hparams.yml", "hparams.json", "config.json", "config.yaml",
                 "config.yml", "args.json", "args.yaml", "params.json", "params.yaml",
                 "hyperparameters.json", "run_config.json", "meta.json")


def is_config_parent(name: str) -> bool:
    """True for the name of an object that holds conditions (``config``, ``_meta``,
    ``train_config``)."""
    low = name.lower().strip("_")
    return name.lower() in CONFIG_OBJECTS or low in CONFIG_OBJECTS or bool(
        re.search(r"(^|_)(config|cfg|hparams|args|params|settings)$", low))


#: In a log's own scalars (a ``metrics.json`` beside its ``config.json``), a value called
#: ``final_…``, ``best_…``, ``last_…``, ``peak_…`` is a result too (never in a config).
_OUTCOME_IN_LOG = re.compile(r"(^|[_./ -])(final|best|last|peak)([_./ -]|$)", re.IGNORECASE)


def is_outcome_name(name: str, *, in_log: bool = False) -> bool:
    """True when a per-run value called ``name`` is a result of the run (``final_test_acc``,
    ``first_grok_step``, ``best_metric``, ``train_runtime``) rather than a condition.
    ``in_log``: the value is one of a log file's own scalars, not a config's, where
    ``final_gini`` or ``best_epoch`` are results too."""
    leaf = name.rsplit(".", 1)[-1]
    if _OUTCOME.search(leaf) or (in_log and _OUTCOME_IN_LOG.search(leaf)):
        return True
    return any(is_summary_parent(p) for p in name.split(".")[:-1])


def is_summary_parent(name: str, *, strict: bool = False) -> bool:
    """True for the name of an object holding results (``_summary``, ``grokking_summary``);
    ``strict``: only an unmistakable one (inside a config record, ``metrics`` may name what
    to measure)."""
    if is_config_parent(name):
        return False
    return bool((_SUMMARY_PARENT_STRICT if strict else _SUMMARY_PARENT).search(name))


def nearly_unique(values: Sequence[object]) -> bool:
    """True when a per-run value differs in (nearly) every run: at least 4 runs and at least
    90 % of them distinct. Such a column cannot split runs into cells of replicates."""
    vals = [v for v in values if v is not None and not (isinstance(v, float) and v != v)]
    n = len(vals)
    return n >= 4 and len(set(vals)) >= 0.9 * n


# ------------------------------------------------------------------------------------------
# conditions written only in run names
# ------------------------------------------------------------------------------------------

# a value: digits, a decimal point written ``.`` or ``p`` (``0p1``), an exponent whose minus
# may be written ``m`` (``1em3``); the whole token, never a fragment of it (``1em3`` is one
# value, not ``em`` = 3)
_TOKEN = re.compile(r"(?P<key>[A-Za-z][A-Za-z_]*?)[=_-]?"
                    r"(?P<value>[0-9]+(?:[.p][0-9]+)?(?:e[-+m]?[0-9]+)?|inf)"
                    r"(?=$|[^0-9A-Za-z.]|_)", re.IGNORECASE)

#: A number written in a file or folder name: an optional sign (``-`` or ``m``), digits, a
#: decimal point written ``.``, ``p`` or ``_`` (``0.1``, ``0p1``, ``1_5`` = 1.5) and an
#: exponent whose sign may be ``m`` (``1e-3``, ``1em3`` = 0.001, ``2e+4``, ``2e4``).
NAME_NUMBER = re.compile(r"(?P<sign>[-m])?(?P<int>[0-9]+)(?:[.p_](?P<frac>[0-9]+))?"
                         r"(?:e(?P<esign>[-+m])?(?P<exp>[0-9]+))?", re.IGNORECASE)


def name_number(text: str) -> float | None:
    """``text`` read by :data:`NAME_NUMBER` (the whole text, ``1em3`` → 0.001, ``0p1`` →
    0.1, ``3p0`` → 3.0, ``1_5`` → 1.5), as the float ``float()`` gives for the same number
    written plainly; None when it is not such a number."""
    m = NAME_NUMBER.fullmatch(text.strip())
    if m is None:
        return None
    sign = "-" if m.group("sign") else ""
    exp = m.group("exp")
    esign = "-" if (m.group("esign") or "").lower() in ("-", "m") else ""
    plain = f"{sign}{m.group('int')}.{m.group('frac') or '0'}" + (f"e{esign}{exp}" if exp else "")
    return float(plain)
_REPLICATE_KEYS = re.compile(r"^(s|seed|rep|repeat|run|trial|version|v|r|copy|idx|id)$",
                             re.IGNORECASE)


@dataclass(frozen=True)
class NameToken:
    """A ``key<number>`` token that differs between run names (``wd1.0``, ``p=151``)."""

    key: str
    regex: str  #: for ``--cond key=REGEX``
    values: tuple[str, ...]  #: the distinct values seen, in order
    #: values written with ``p``/``m`` (``0p1``, ``1em3``): read with ``:num`` (name_number)
    encoded: bool = False

    @property
    def option(self) -> str:
        """The ``--cond`` value that takes it: ``key='REGEX'``, ``:num`` where encoded."""
        return f"{self.key}='{self.regex}'" + (":num" if self.encoded else "")


def name_tokens(run_ids: Sequence[str]) -> list[NameToken]:
    """Tokens of the run names (every part of their paths) that look like ``key<number>`` and
    differ between runs, seeds and replicate counters left out: conditions a log may hold
    only in its file or folder names (``SGD_p=151`` vs ``SGD_p=199``, ``wd0.1/seed0``).
    Empty for one run."""
    if len(run_ids) < 2:
        return []
    seen: dict[str, list[str]] = {}
    sep: dict[str, str] = {}
    for rid in run_ids:
        leaf = str(rid).replace("\\", "/").strip("/")
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
            encoded = any(re.search(r"[pm]", v, re.IGNORECASE) for v in distinct
                          if v.lower() != "inf")
            num = ("[0-9pme+-]+" if encoded else
                   "[0-9.e+-]+" if any("e" in v.lower() for v in distinct) else "[0-9.]+")
            num = f"inf|{num}" if "inf" in {v.lower() for v in distinct} else num
            rx = f"{re.escape(short)}{re.escape(sep[key])}({num})"
            out.append(NameToken(short, rx, distinct, encoded))
    return out
