"""Training-loop callbacks: the live audit (:mod:`grokaudit.live`) inside Lightning and
``transformers``.

* :class:`grokaudit.callbacks.lightning.GrokauditCallback` — a ``lightning.pytorch.Callback``
  (extra ``[lightning]``);
* :class:`grokaudit.callbacks.transformers.GrokauditCallback` — a ``transformers.
  TrainerCallback``, attached with ``GrokauditCallback.attach(trainer, ...)`` (extra ``[hf]``).

At each evaluation they compute the chosen spectral metrics (:func:`grokaudit.spectral_metrics`)
of named parameters, log them through the trainer's own loggers (as ``<prefix>_<metric>``,
``emb_erank``, ``emb_pr``…: the names ``grokaudit check`` audits by default), feed them with the
accuracies the trainer logged to a :class:`~grokaudit.live.LiveRun`, and, when asked
(``stop_when="settled"``), stop the run once its numbers have been defined and unchanged over a
margin (:meth:`~grokaudit.live.LiveRun.should_stop`), or warn once when the budget will end
before they can be (:meth:`~grokaudit.live.LiveRun.budget_warning`). See ``docs/callbacks.md``.

Once training runs, no hook raises into the training loop: a value the live audit refuses is
left out, warned (:class:`GrokauditValueWarning`) and kept as a gap of the state; a failure of
the audit itself (the spectrum of weights that diverged) is warned
(:class:`GrokauditAuditWarning`) and skipped. Bad options are refused when the callback is
created, and a parameter the model lacks before the first step.

This module needs neither library: it holds what both callbacks share, and names them lazily
(``grokaudit.callbacks.LightningCallback``, ``grokaudit.callbacks.TransformersCallback``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from numbers import Integral
from typing import Any

from ..config import AuditConfig, did_you_mean
from ..errors import ConfigError, ErrorCode, GrokauditWarning, MissingExtraError
from ..live import DEFAULT_MARGIN, LiveRun, LiveState
from ..metrics import METRIC_NAMES, spectral_metrics
from ..roles import accuracy_candidates, accuracy_rank, choose_accuracy
from ..schema import is_known_metric

__all__ = ["DEFAULT_METRICS", "STOP_WHEN", "GrokauditAuditWarning", "GrokauditBudgetWarning",
           "GrokauditValueWarning", "LightningCallback", "TransformersCallback"]

#: The spectral metrics logged by default (``erank``, ``pr``; ``erank2`` and ``srank`` on
#: request).
DEFAULT_METRICS: tuple[str, ...] = ("erank", "pr")
#: The values ``stop_when`` accepts.
STOP_WHEN: tuple[str | None, ...] = (None, "settled")


class GrokauditBudgetWarning(GrokauditWarning):
    """The run's budget ends in its last floor window and its numbers are not defined yet:
    its log will carry a censored ``t_compress`` unless the metric settles now."""


class GrokauditValueWarning(GrokauditWarning):
    """A value the callback fed to the live audit was refused, with the code ``check`` gives it
    (an accuracy below 0 or above 100, a complex or non-numeric value…), and left out: the state
    holds it as a ``VALUE_REFUSED`` gap (the numbers stay undefined, the run is never stopped
    on them) and training goes on. Warned once per name and code."""


class GrokauditAuditWarning(GrokauditWarning):
    """The live audit failed at an evaluation — the spectral metrics of weights that diverged
    (NaN), a logger that refused the values, an error of the audit itself — and was skipped
    there; training goes on (``callback.failures`` lists them). Warned once per kind."""


def __getattr__(name: str) -> Any:  # lazy: importing grokaudit.callbacks needs neither library
    if name == "LightningCallback":
        from .lightning import GrokauditCallback as lightning_callback

        return lightning_callback
    if name == "TransformersCallback":
        from .transformers import GrokauditCallback as transformers_callback

        return transformers_callback
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def missing_extra(library: str, extra: str, exc: ImportError) -> MissingExtraError:
    """The error raised when a callback's library is not installed."""
    return MissingExtraError(
        f"grokaudit's {library} callback needs {library} ({exc}): "
        f"pip install 'grokaudit[{extra}]'")


class LiveAudit:
    """What the Lightning and ``transformers`` callbacks share: the options, checked once; the
    metrics of a model's parameters; the accuracies read from a trainer's logged values; the
    :class:`~grokaudit.live.LiveRun` they feed and the decisions taken on it.

    ``params``: metric prefix → parameter name (``{"emb": "embed.weight"}`` logs ``emb_erank``,
    ``emb_pr``…). ``metrics``: which of :data:`grokaudit.metrics.METRIC_NAMES`.
    ``stop_when``: None (never stop) or ``"settled"``. ``margin``: see
    :meth:`~grokaudit.live.LiveRun.should_stop`. ``budget``: the last step of the run, for the
    budget warning (None: the trainer's own). ``test_acc`` / ``train_acc``: the names of the
    logged values to read as the accuracies (None: chosen as ``grokaudit check`` chooses).
    ``run``: the run's name in messages. ``config`` / ``options``: the audit's settings, as for
    :class:`~grokaudit.live.LiveRun` (``grok_threshold=0.95``).
    """

    def __init__(self, params: Mapping[str, str], *, metrics: Iterable[str] = DEFAULT_METRICS,
                 stop_when: str | None = None, margin: float = DEFAULT_MARGIN,
                 budget: int | None = None, test_acc: str | None = None,
                 train_acc: str | None = None, run: str | None = None, config: AuditConfig | None = None,
                 verbose: bool = True, verbose_every: float = 60.0, **options: Any) -> None:
        self.params = _check_params(params)
        if not isinstance(verbose, bool):
            raise ConfigError(f"verbose={verbose!r}: give True (print the state in one line "
                              "when it changes) or False", code=ErrorCode.INVALID_OPTION,
                              option="verbose")
        if isinstance(verbose_every, bool) or not isinstance(verbose_every, (int, float)) \
                or not (math.isfinite(verbose_every) and verbose_every >= 0):
            raise ConfigError(f"verbose_every={verbose_every!r}: give the seconds between two "
                              "lines of an unchanged state (a number ≥ 0)",
                              code=ErrorCode.OPTION_OUT_OF_RANGE, option="verbose_every")
        self.verbose = verbose
        self.verbose_every = float(verbose_every)
        self._said: tuple[Any, float] | None = None  # (what the last line said, when)
        self.metric_names = _check_metrics(metrics)
        if stop_when not in STOP_WHEN:
            raise ConfigError(f"stop_when={stop_when!r}: give None (never stop) or 'settled' "
                              "(stop once the numbers have held over the margin)",
                              code=ErrorCode.INVALID_OPTION, option="stop_when")
        self.stop_when = stop_when
        if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not (
                math.isfinite(margin) and margin >= 0):
            raise ConfigError(f"margin={margin!r}: give a non-negative number (default "
                              f"{DEFAULT_MARGIN})", code=ErrorCode.OPTION_OUT_OF_RANGE,
                              option="margin")
        self.margin = float(margin)
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, Integral)
                                   or budget <= 0):
            raise ConfigError(f"budget={budget!r}: give the run's last step, a positive integer "
                              "(or None: the trainer's max_steps)",
                              code=ErrorCode.OPTION_OUT_OF_RANGE, option="budget")
        self.budget = None if budget is None else int(budget)
        for opt, key in (("test_acc", test_acc), ("train_acc", train_acc)):
            if key is not None and (not isinstance(key, str) or not key):
                raise ConfigError(f"{opt}={key!r}: give the name of a logged value",
                                  code=ErrorCode.INVALID_OPTION, option=opt)
        self.test_acc_key = test_acc
        self.train_acc_key = train_acc
        self.columns = {f"{p}_{m}": (p, m) for p in self.params for m in self.metric_names}
        self._run_given = run is not None
        self._config = config
        self._options = dict(options)
        self.live = self._new_live(run or "run")
        self.state: LiveState | None = None
        self.stopped_at: int | None = None
        self._counts: dict[str, int] = {}
        self._warned: set[str] = set()
        self._last_step: int | None = None
        self._history: list[dict[str, float]] = []
        #: the evaluations at which the audit failed and was skipped: (step, what, error)
        self.failures: list[tuple[int | None, str, str]] = []

    def _new_live(self, run: str) -> LiveRun:
        return LiveRun(run, metrics=list(self.columns), config=self._config,
                       margin=self.margin, **self._options)

    def line(self, now: float | None = None) -> str | None:
        """The state in one line (:meth:`grokaudit.live.LiveState.line`) when it is to be
        printed: ``verbose``, and what it says (grokked, each metric's compression and floor,
        defined, settled, what is missing) changed since the last line, or ``verbose_every``
        seconds passed; else None."""
        st = self.state
        if not self.verbose or st is None:
            return None
        import time

        t = time.monotonic() if now is None else now
        key = (st.grokked, st.grok_sustained, st.defined, st.settled,
               tuple((m.metric, m.compression, m.floor_stability,
                      m.t_compress is not None and m.t_compress.censored)
                     for m in st.metrics), tuple(sorted({g.code.value for g in st.missing})))
        if self._said is not None and self._said[0] == key \
                and t - self._said[1] < self.verbose_every:
            return None
        self._said = (key, t)
        return f"grokaudit: {st.line()}"

    # -- the model -------------------------------------------------------------------------
    def check_model(self, model: Any) -> None:
        """Refuse a parameter name the model does not have, or one without a spectrum."""
        named = dict(model.named_parameters())
        for prefix, name in self.params.items():
            if name not in named:
                raise ConfigError(
                    f"params[{prefix!r}] = {name!r}: the model has no parameter of that name; "
                    f"{_suggest(name, named)}", code=ErrorCode.UNKNOWN_VALUE, option="params")
            shape = tuple(named[name].shape)
            if len(shape) < 2:
                raise ConfigError(
                    f"params[{prefix!r}] = {name!r} has shape {shape}: a vector has no "
                    "spectrum; name a weight matrix", code=ErrorCode.INVALID_OPTION,
                    option="params")

    def measure(self, model: Any) -> dict[str, float]:
        """The metric columns of ``model``'s parameters now (``{"emb_erank": …}``)."""
        out: dict[str, float] = {}
        for prefix, name in self.params.items():
            w = model.get_parameter(name).detach()
            if w.ndim > 2:  # a convolution's kernel: output channels × the rest
                w = w.reshape(w.shape[0], -1)
            values = spectral_metrics(w)
            for m in self.metric_names:
                out[f"{prefix}_{m}"] = float(values[m])
        return out

    # -- the accuracies --------------------------------------------------------------------
    def accuracies(self, logged: Mapping[str, Any]) -> dict[str, Any]:
        """``{"test_acc": …, "train_acc": …}`` read from the values a trainer logged, by the
        names given, or chosen among every name logged so far as ``check`` would choose them
        (:func:`grokaudit.roles.choose_accuracy`). A value read as a float when it is a real
        scalar (a tensor, a NumPy scalar), else passed on as logged, for the live audit to
        refuse with its code (:meth:`update`); NaN and None are "not logged"."""
        values: dict[str, Any] = {}
        for k, v in logged.items():
            x = _scalar(v)
            if str(k) not in self.columns and v is not None and not (x is not None
                                                                      and math.isnan(x)):
                values[str(k)] = v if x is None else x
        for k in values:
            self._counts[k] = self._counts.get(k, 0) + 1
        out: dict[str, Any] = {}
        test = self._key("test_acc", self.test_acc_key, values)
        train = self._key("train_acc", self.train_acc_key, values, exclude=(test,))
        if test is not None and test in values:
            out["test_acc"] = values[test]
        if train is not None and train in values:
            out["train_acc"] = values[train]
        return out

    def _key(self, target: str, given: str | None, values: Mapping[str, Any],
             exclude: Iterable[str | None] = ()) -> str | None:
        if given is not None:
            if given not in values:
                self._warn_once(f"absent:{target}", (
                    f"grokaudit: {target}={given!r} was not logged at this evaluation (logged: "
                    f"{_names(values)}); the live audit has no {target} here"))
            return given
        # the candidates as check finds them (a bare ``acc`` beside ``val_acc``: the train
        # accuracy)
        counts = {k: c for k, c, _ in accuracy_candidates(
            {k: c for k, c in self._counts.items() if k not in exclude}, target,
            beside=self._counts)}
        choice = choose_accuracy(counts, target, beside=self._counts)
        if choice is None and len(counts) > 1 and target == "test_acc":
            self._warn_once("ambiguous:test_acc", (
                f"grokaudit: several logged values could be the test accuracy "
                f"({_names(counts)}) and none is preferred; name it: test_acc='...'"))
        return None if choice is None else choice.chosen

    # -- the audit -------------------------------------------------------------------------
    def begin(self, step: int, run: str | None) -> None:
        """A fit begins at ``step``: a new run (its steps start below the last one seen) gets a
        new live audit; ``run`` names it unless a name was given."""
        if self._last_step is not None and step < self._last_step:
            self.reset()
        if not self._run_given and run and not self._history:
            self.live.run = run

    def reset(self) -> None:
        """Forget every logged row (a new run)."""
        self.live = self._new_live(self.live.run)
        self.state = None
        self.stopped_at = None
        self._counts.clear()
        self._warned.clear()
        self._said = None
        self._last_step = None
        self._history = []
        self.failures = []

    def seen(self, step: int) -> bool:
        """Whether the parameters were already measured at ``step``."""
        return self._last_step is not None and step <= self._last_step

    def update(self, step: int, row: Mapping[str, Any]) -> LiveState:
        """Feed one evaluation's row (metric columns and accuracies) at ``step``. Never raises
        on a value: one the live audit refuses is left out, warned once
        (:class:`GrokauditValueWarning`) and kept as a ``VALUE_REFUSED`` gap of the state
        (:meth:`grokaudit.live.LiveRun.record`)."""
        refused = self.live.record(step, **{str(k): v for k, v in row.items()})
        for exc in refused:
            name = getattr(exc, "column", None)
            self._warn_once(f"refused:{name}:{exc.code.value}", (
                f"grokaudit: {exc} [{exc.code.value}]; left out of the live audit, which "
                "will not call the run's numbers defined (check refuses such a log); "
                "training goes on"), GrokauditValueWarning)
        if not any(getattr(e, "column", None) in ("step", None) for e in refused):
            self._history.append({"step": float(step), **self.live.row(step)})
        self._last_step = step if self._last_step is None else max(step, self._last_step)
        self.state = self.live.state()
        return self.state

    @contextmanager
    def guard(self, what: str, step: int | None) -> Iterator[None]:
        """Run a hook's audit work (``what``: "measure", "audit"…) without ever raising into
        the training loop: an error is warned once per kind (:class:`GrokauditAuditWarning`),
        listed in :attr:`failures`, and the hook goes on."""
        try:
            yield
        except Exception as exc:  # the user's GPU job must not die of the audit
            self.failures.append((step, what, f"{type(exc).__name__}: {exc}"))
            code = getattr(getattr(exc, "code", None), "value", None)
            self._warn_once(f"failed:{what}:{type(exc).__name__}:{code}", (
                f"grokaudit: the live audit's {what} failed at step {step} "
                f"({type(exc).__name__}: {exc}{f' [{code}]' if code else ''}); skipped there, "
                "training goes on (callback.failures lists each)"), GrokauditAuditWarning)

    def should_stop(self, step: int) -> bool:
        """``stop_when="settled"`` and the numbers have held over the margin; the first step
        it said so is ``stopped_at``. Read from the state :meth:`update` just computed: the
        live state is a function of the rows, and its run was made with this margin (the
        audit is not run again)."""
        st = self.state
        if self.stop_when != "settled" or st is None or not st.settled:
            return False
        if self.stopped_at is None:
            self.stopped_at = step
        return True

    def budget_message(self, step: int, budget: int | None) -> str | None:
        """The budget warning, once per run, when the budget (given or the trainer's) is known
        and its last floor window has begun with the numbers still undefined."""
        b = self.budget if self.budget is not None else budget
        if b is None or b <= 0 or "budget" in self._warned:
            return None
        if step < b - self.live.config.floor_frac * b:  # the window has not begun: no audit
            return None
        msg = self.live.budget_warning(b)
        if msg is not None:
            self._warned.add("budget")
        return msg

    def _warn_once(self, key: str, message: str,
                   category: type[GrokauditWarning] = GrokauditWarning) -> None:
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(message, category, stacklevel=3)

    # -- saved with a checkpoint -----------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The rows fed so far, to restore the live audit when a run resumes."""
        return {"rows": [dict(r) for r in self._history], "run": self.live.run,
                "stopped_at": self.stopped_at}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.reset()
        if not self._run_given and state.get("run"):
            self.live.run = str(state["run"])
        for rec in state.get("rows", ()):
            r = {str(k): v for k, v in dict(rec).items()}
            step = r.pop("step", None)
            with self.guard("restore", None):  # a damaged row is warned, the others restored
                self.update(int(step), r)
        stopped = state.get("stopped_at")
        self.stopped_at = None if stopped is None else int(stopped)


def _check_params(params: Any) -> dict[str, str]:
    if not isinstance(params, Mapping) or not params:
        raise ConfigError(f"params={params!r}: give a mapping of metric prefix to parameter name, "
                          "{'emb': 'embed.weight'} (logs emb_erank, emb_pr…)",
                          code=ErrorCode.INVALID_OPTION, option="params")
    out: dict[str, str] = {}
    for prefix, name in params.items():
        if not isinstance(prefix, str) or not prefix or any(c.isspace() for c in prefix):
            raise ConfigError(f"params: prefix {prefix!r} must be a non-empty name without "
                              "spaces (emb, unemb, layer0)", code=ErrorCode.INVALID_OPTION,
                              option="params")
        if not isinstance(name, str) or not name:
            raise ConfigError(f"params[{prefix!r}] = {name!r}: give a parameter name "
                              "(model.named_parameters())", code=ErrorCode.INVALID_OPTION,
                              option="params")
        for m in METRIC_NAMES:
            col = f"{prefix}_{m}"
            if not is_known_metric(col) or any(accuracy_rank(col, t) is not None
                                               for t in ("test_acc", "train_acc")):
                raise ConfigError(f"params: prefix {prefix!r} would log {col!r}, which "
                                  "grokaudit check would not read as a metric (it names an "
                                  "accuracy); choose another prefix",
                                  code=ErrorCode.RESERVED_COLUMN, option="params")
        out[prefix] = name
    return out


def _check_metrics(metrics: Any) -> tuple[str, ...]:
    if isinstance(metrics, str):
        metrics = (metrics,)
    names = tuple(dict.fromkeys(str(m) for m in metrics))
    bad = [m for m in names if m not in METRIC_NAMES]
    if not names or bad:
        raise ConfigError(f"metrics={tuple(metrics)!r}: choose among {', '.join(METRIC_NAMES)}",
                          code=ErrorCode.INVALID_OPTION, option="metrics")
    return names


def _suggest(name: str, named: Mapping[str, Any]) -> str:
    mats = [k for k, v in named.items() if len(tuple(v.shape)) >= 2]
    close = did_you_mean(name, mats, n=3)
    out = f"{close} " if close else ""
    if not mats:
        return out + "it has no weight matrix"
    more = f" (+{len(mats) - 5} more)" if len(mats) > 5 else ""
    return out + "its weight matrices: " + ", ".join(repr(k) for k in mats[:5]) + more


def _names(values: Iterable[str]) -> str:
    names = sorted(values)
    return ", ".join(names[:8]) + (f" (+{len(names) - 8} more)" if len(names) > 8 else "") \
        if names else "nothing"


def _scalar(v: Any) -> float | None:
    """A logged value as a float (NaN and ±inf included), or None: not a real scalar (a
    boolean, a tensor of several values, a complex number, text)."""
    if isinstance(v, bool):
        return None
    numel = getattr(v, "numel", None)
    try:
        if callable(numel) and numel() != 1:
            return None
        item = getattr(v, "item", None)
        if callable(item):
            v = item()
    except (TypeError, ValueError, RuntimeError):
        return None
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return None
    try:
        return float(v)
    except OverflowError:  # an integer beyond float64: passed on, refused with its code
        return None


class LiveAccess:
    """What callers read from either callback: its live audit, the state at the last
    evaluation and the step it stopped the run at."""

    audit: LiveAudit

    @property
    def live(self) -> LiveRun:
        """The live audit of the run (:class:`grokaudit.live.LiveRun`)."""
        return self.audit.live

    @property
    def state(self) -> LiveState | None:
        """The run's state at the last evaluation (None before the first)."""
        return self.audit.state

    @property
    def failures(self) -> list[tuple[int | None, str, str]]:
        """The evaluations at which the live audit failed and was skipped (training went on):
        ``(step, what, "ErrorType: message")``, ``what`` one of ``accuracies``, ``measure``,
        ``audit``, ``budget warning``, ``restore``."""
        return self.audit.failures

    @property
    def stopped_at(self) -> int | None:
        """The logged step at which this callback first asked the run to stop (None: it did
        not; the trainer stops there unless its minimum steps or epochs are not reached)."""
        return self.audit.stopped_at

