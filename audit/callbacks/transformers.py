"""The live audit as a Hugging Face ``transformers`` callback (extra ``[hf]``).

::

    from grokaudit.callbacks.transformers import GrokauditCallback

    trainer = transformers.Trainer(model, args, train_dataset=..., eval_dataset=...,
                                   compute_metrics=accuracy)   # logs eval_accuracy
    GrokauditCallback.attach(trainer, {"emb": "embed.weight"}, stop_when="settled")
    trainer.train()

A ``TrainerCallback`` sees the trainer's state, not the trainer, and only the trainer can log
to every ``report_to`` integration: the callback is therefore bound to its trainer
(:meth:`GrokauditCallback.attach`, :meth:`GrokauditCallback.bind` or ``trainer=``). After every
evaluation during training it computes the spectral metrics of the named parameters, logs them
with ``trainer.log`` at ``state.global_step`` (the evaluation's step: TensorBoard, W&B, MLflow…
and ``state.log_history`` get them as they get the loss), feeds them with the evaluation's
accuracy (``eval_accuracy``… as ``check`` reads it) to its :class:`~grokaudit.live.LiveRun`
(``callback.live``; ``callback.state``) and, with ``stop_when="settled"``, sets
``control.should_training_stop`` once :meth:`~grokaudit.live.LiveRun.should_stop` says so.
A run resumed from a checkpoint replays its ``log_history`` into the live audit. See
``docs/callbacks.md``.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

from ..config import AuditConfig
from ..errors import ConfigError, ErrorCode
from ..live import DEFAULT_MARGIN
from . import DEFAULT_METRICS, GrokauditBudgetWarning, LiveAccess, LiveAudit, missing_extra

try:
    # an absolute import: the library, not this module
    from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments
except ImportError as _exc:  # pragma: no cover - exercised without the extra
    raise missing_extra("transformers", "hf", _exc) from _exc

__all__ = ["GrokauditCallback"]

_log = logging.getLogger(__name__)
#: Keys of a log record that are not logged values.
_NOT_VALUES = frozenset({"step", "epoch"})


class GrokauditCallback(LiveAccess, TrainerCallback):  # type: ignore[misc]  # untyped base
    """Spectral metrics of named parameters at each evaluation, logged through the trainer,
    audited live, and (``stop_when="settled"``) a stop once the run's numbers held.

    ``params``: metric prefix → parameter name of the model (``{"emb": "embed.weight"}`` logs
    ``emb_erank``, ``emb_pr``). ``metrics``: which spectral metrics (``erank``, ``erank2``,
    ``pr``, ``srank``). ``stop_when``: None or ``"settled"``. ``margin``: how far past the step
    the numbers were defined from the run must go before it stops, as a share of that step
    (:data:`grokaudit.live.DEFAULT_MARGIN`). ``budget``: the last step, for the one-time warning
    that the run will end with its numbers undefined (default: the trainer's ``max_steps``).
    ``test_acc`` / ``train_acc``: the names of the evaluation's metrics to read as the
    accuracies (default: chosen as ``grokaudit check`` chooses: ``eval_accuracy``…).
    ``trainer``: the trainer to log through (or :meth:`attach` / :meth:`bind`). ``run``: the
    run's name in messages (default: ``args.run_name``). ``verbose`` (default True): print the
    state in one line on the main process when it changes, and at most every ``verbose_every``
    seconds (60) otherwise; False: silent. Other keyword options are the audit's
    (``grok_threshold=0.95``), as for ``grokaudit check``.
    """

    def __init__(self, params: Mapping[str, str], *, trainer: Any = None,
                 metrics: Iterable[str] = DEFAULT_METRICS, stop_when: str | None = None,
                 margin: float = DEFAULT_MARGIN, budget: int | None = None,
                 test_acc: str | None = None, train_acc: str | None = None,
                 run: str | None = None, config: AuditConfig | None = None, **options: Any) -> None:
        super().__init__()
        self.audit = LiveAudit(params, metrics=metrics, stop_when=stop_when, margin=margin,
                               budget=budget, test_acc=test_acc, train_acc=train_acc, run=run,
                               config=config, **options)
        self.trainer: Any = None
        self._training = False
        if trainer is not None:
            self.bind(trainer)

    @classmethod
    def attach(cls, trainer: Any, params: Mapping[str, str], **kwargs: Any
               ) -> GrokauditCallback:
        """A callback bound to ``trainer`` and added to its callbacks."""
        return cls(params, trainer=trainer, **kwargs)

    def bind(self, trainer: Any) -> GrokauditCallback:
        """Log through ``trainer``; add this callback to it unless it holds it already (given
        as ``Trainer(callbacks=[callback])``)."""
        if not callable(getattr(trainer, "log", None)) or not hasattr(trainer,
                                                                      "callback_handler"):
            raise ConfigError(f"trainer={type(trainer).__name__}: give the transformers.Trainer "
                              "this callback logs through", code=ErrorCode.INVALID_OPTION,
                              option="trainer")
        self.trainer = trainer
        if not any(cb is self for cb in trainer.callback_handler.callbacks):
            trainer.add_callback(self)
        return self

    # -- hooks -----------------------------------------------------------------------------
    def on_train_begin(self, args: TrainingArguments, state: TrainerState,
                       control: TrainerControl, **kwargs: Any) -> None:
        if self.trainer is None:
            raise ConfigError("GrokauditCallback is not bound to its trainer, so it cannot log "
                              "through it: use GrokauditCallback.attach(trainer, params, ...), "
                              "or callback.bind(trainer) before trainer.train()",
                              code=ErrorCode.INVALID_OPTION, option="trainer")
        model = kwargs.get("model")
        if model is not None:
            self.audit.check_model(model)
        self.audit.begin(int(state.global_step), _run_name(args))
        if state.global_step > 0 and self.audit.state is None:  # resumed from a checkpoint
            with self.audit.guard("restore", int(state.global_step)):
                self._replay(state.log_history)
        self._training = True

    def on_train_end(self, args: TrainingArguments, state: TrainerState,
                     control: TrainerControl, **kwargs: Any) -> None:
        self._training = False

    def on_evaluate(self, args: TrainingArguments, state: TrainerState,
                    control: TrainerControl, metrics: Mapping[str, Any] | None = None,
                    **kwargs: Any) -> None:
        # nothing here raises into training: a refused value and a failed step of the audit
        # are warned (GrokauditValueWarning, GrokauditAuditWarning) and training goes on
        model = kwargs.get("model")
        if not self._training or model is None:  # trainer.evaluate() outside training
            return
        step = int(state.global_step)
        row: dict[str, Any] = {}
        with self.audit.guard("accuracies", step):
            row = self.audit.accuracies(
                {k: v for k, v in (metrics or {}).items() if k not in _NOT_VALUES})
        if not self.audit.seen(step):
            with self.audit.guard("measure", step):
                values = self.audit.measure(model)
                _log_without_epoch(self.trainer, state, values)
                row = {**values, **row}
        first = self.audit.stopped_at is None
        stop = False
        with self.audit.guard("audit", step):
            self.audit.update(step, row)
            stop = self.audit.should_stop(step)
        line: str | None = None
        with self.audit.guard("state line", step):
            line = self.audit.line()
        if line is not None and not stop and state.is_world_process_zero:
            print(line, flush=True)  # transformers' own logging shows warnings only
        if stop:
            control.should_training_stop = True
            if first:
                st = self.audit.state
                said = f"grokaudit: stopping at step {step}: {st.describe() if st else 'settled'}"
                _log.info(said)
                if self.audit.verbose and state.is_world_process_zero:
                    print(said, flush=True)
            return
        msg: str | None = None
        with self.audit.guard("budget warning", step):
            msg = self.audit.budget_message(step, int(state.max_steps) or None)
        if msg is not None and state.is_world_process_zero:
            warnings.warn(msg, GrokauditBudgetWarning, stacklevel=2)

    def _replay(self, history: Iterable[Mapping[str, Any]]) -> None:
        """Feed the rows a resumed run logged before its checkpoint (``state.log_history``)."""
        by_step: dict[int, dict[str, Any]] = {}
        for rec in history:
            s = rec.get("step")
            if isinstance(s, int):
                by_step.setdefault(s, {}).update(
                    {k: v for k, v in rec.items() if k not in _NOT_VALUES})
        for s in sorted(by_step):
            logged = by_step[s]
            ours = {k: v for k, v in logged.items() if k in self.audit.columns}
            if not ours:
                continue
            self.audit.update(s, {**ours, **self.audit.accuracies(logged)})


def _log_without_epoch(trainer: Any, state: TrainerState, values: Mapping[str, float]) -> None:
    """``trainer.log(values)`` (every ``report_to`` integration, ``state.log_history``) without
    the ``epoch`` it adds: the evaluation's own record logged it at this step already, and a
    value written twice at one step reads as a rewound run to a log reader
    (``RESUMED_DUPLICATES``)."""
    epoch = state.epoch
    state.epoch = None  # typed float, None before training
    try:
        trainer.log(dict(values))
    finally:
        state.epoch = epoch


def _run_name(args: TrainingArguments) -> str | None:
    name = getattr(args, "run_name", None) or getattr(args, "output_dir", None)
    return str(name) if name else None
