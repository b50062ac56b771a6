"""The live audit as a PyTorch Lightning callback (extra ``[lightning]``).

::

    from grokaudit.callbacks.lightning import GrokauditCallback

    trainer = lightning.Trainer(
        max_steps=20_000, val_check_interval=100, check_val_every_n_epoch=None,
        logger=CSVLogger("logs"),
        callbacks=[GrokauditCallback({"emb": "embed.weight"}, stop_when="settled")])

At the end of every validation of a fit (the sanity check excepted) it computes the spectral
metrics of the named parameters, logs them through every logger of the trainer at the step
Lightning logs that validation's metrics at (so they share its row in ``metrics.csv``, its
TensorBoard step, its W&B or MLflow step), puts them in ``trainer.callback_metrics`` (a
``ModelCheckpoint`` can monitor ``emb_erank``), feeds them with the accuracies in
``trainer.callback_metrics`` (``val_acc``… as ``check`` reads them) to its
:class:`~grokaudit.live.LiveRun` (``callback.live``; ``callback.state`` is the last
:class:`~grokaudit.live.LiveState`) and, with ``stop_when="settled"``, sets
``trainer.should_stop`` once :meth:`~grokaudit.live.LiveRun.should_stop` says so. Its rows are
saved in checkpoints: a resumed fit goes on with the same live audit. See ``docs/callbacks.md``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..config import AuditConfig
from ..live import DEFAULT_MARGIN
from . import DEFAULT_METRICS, GrokauditBudgetWarning, LiveAccess, LiveAudit, missing_extra

try:
    import lightning.pytorch as pl
    import torch
    from lightning.pytorch.utilities import rank_zero_info, rank_zero_warn
except ImportError as _exc:  # pragma: no cover - exercised without the extra
    raise missing_extra("Lightning", "lightning", _exc) from _exc

__all__ = ["GrokauditCallback"]


class GrokauditCallback(LiveAccess, pl.Callback):  # type: ignore[misc]  # untyped base
    """Spectral metrics of named parameters at each validation, logged through the trainer's
    loggers, audited live, and (``stop_when="settled"``) a stop once the run's numbers held.

    ``params``: metric prefix → parameter name of the LightningModule
    (``{"emb": "embed.weight"}`` logs ``emb_erank``, ``emb_pr``). ``metrics``: which spectral
    metrics (``erank``, ``erank2``, ``pr``, ``srank``). ``stop_when``: None or ``"settled"``.
    ``margin``: how far past the step the numbers were defined from the run must go before it
    stops, as a share of that step (:data:`grokaudit.live.DEFAULT_MARGIN`). ``budget``: the last
    step, for the one-time warning that the run will end with its numbers undefined (default:
    ``max_steps``, else Lightning's estimate of the stepping batches). ``test_acc`` /
    ``train_acc``: the names in ``trainer.callback_metrics`` to read as the accuracies (default:
    chosen as ``grokaudit check`` chooses among the logged names: ``val_acc``, ``train_acc``…).
    ``run``: the run's name in messages (default: the logger's name and version). Other keyword
    options are the audit's (``grok_threshold=0.95``), as for ``grokaudit check``, and
    ``verbose`` (default True: the state in one line, through ``rank_zero_info``, when it
    changes and at most every ``verbose_every`` seconds, 60, otherwise; False: silent).
    """

    def __init__(self, params: Mapping[str, str], *, metrics: Iterable[str] = DEFAULT_METRICS,
                 stop_when: str | None = None, margin: float = DEFAULT_MARGIN,
                 budget: int | None = None, test_acc: str | None = None,
                 train_acc: str | None = None, run: str | None = None, config: AuditConfig | None = None,
                 **options: Any) -> None:
        super().__init__()
        self.audit = LiveAudit(params, metrics=metrics, stop_when=stop_when, margin=margin,
                               budget=budget, test_acc=test_acc, train_acc=train_acc, run=run,
                               config=config, **options)
        self._budget: int | None = None

    @property
    def state_key(self) -> str:
        return f"GrokauditCallback[{','.join(sorted(self.audit.columns))}]"

    # -- hooks -----------------------------------------------------------------------------
    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        self.audit.check_model(pl_module)

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.audit.begin(_log_step(trainer), _run_name(trainer))

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._budget = _budget(trainer)

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        # nothing here raises into the fit: a refused value and a failed step of the audit are
        # warned (GrokauditValueWarning, GrokauditAuditWarning) and the fit goes on
        if trainer.sanity_checking or trainer.state.fn != "fit":  # not trainer.validate()
            return
        step = _log_step(trainer)
        row: dict[str, Any] = {}
        with self.audit.guard("accuracies", step):
            row = self.audit.accuracies(trainer.callback_metrics)
        if not self.audit.seen(step):
            with self.audit.guard("measure", step):
                values = self.audit.measure(pl_module)
                for logger in trainer.loggers:
                    logger.log_metrics(values, step=step)
                trainer.callback_metrics.update(
                    {k: torch.tensor(v, dtype=torch.float64) for k, v in values.items()})
                row = {**values, **row}
        first = self.audit.stopped_at is None
        stop = False
        with self.audit.guard("audit", step):
            self.audit.update(step, row)
            stop = self.audit.should_stop(step)
        # every process stops when one says so (each audits the same replicated weights); the
        # collective is reached on every process whatever the audit did
        stop = bool(trainer.strategy.reduce_boolean_decision(stop, all=False))
        line: str | None = None
        with self.audit.guard("state line", step):
            line = self.audit.line()
        if line is not None and not stop:
            rank_zero_info(line)
        if stop:
            trainer.should_stop = True
            if self.audit.stopped_at is None:
                self.audit.stopped_at = step
            if first:
                st = self.audit.state
                rank_zero_info(f"grokaudit: stopping at step {step}: "
                               f"{st.describe() if st else 'settled'}")
            return
        msg: str | None = None
        with self.audit.guard("budget warning", step):
            msg = self.audit.budget_message(step, self._budget)
        if msg is not None:
            rank_zero_warn(msg, category=GrokauditBudgetWarning)

    def state_dict(self) -> dict[str, Any]:
        return self.audit.state_dict()

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        with self.audit.guard("restore", None):  # unreadable: warned, the fit goes on
            self.audit.load_state_dict(state_dict)


def _log_step(trainer: pl.Trainer) -> int:
    """The step Lightning logs this validation's metrics at: its count of batches that stepped
    (``global_step`` counts each optimizer's steps, and runs one ahead during validation), so
    the metrics share the validation's row."""
    loop = getattr(getattr(trainer, "fit_loop", None), "epoch_loop", None)
    step = getattr(loop, "_batches_that_stepped", None)
    return int(step) if isinstance(step, int) else int(trainer.global_step)


def _run_name(trainer: pl.Trainer) -> str | None:
    logger = trainer.logger
    if logger is None:
        return None
    try:
        version = logger.version
        return f"{logger.name}/{version if isinstance(version, str) else f'version_{version}'}"
    except Exception:  # a logger without a name or version: the default name stays
        return None


def _budget(trainer: pl.Trainer) -> int | None:
    if trainer.max_steps is not None and trainer.max_steps > 0:
        return int(trainer.max_steps)
    try:
        est = float(trainer.estimated_stepping_batches)
    except Exception:  # no estimate (an infinite dataloader): no budget warning by default
        return None
    return int(est) if est == est and est not in (float("inf"), float("-inf")) and est > 0 \
        else None
