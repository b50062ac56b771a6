"""The ``transformers`` callback (issue 24, item 2), with the real library on a tiny model: a
``Trainer`` run logs its spectral metrics through ``trainer.log`` (every ``report_to``
integration and ``state.log_history``), stops with ``stop_when="settled"`` after its
t_compress, and ``grokaudit check`` audits what the integrations wrote: the MLflow store with
``--by weight_decay`` alone (the Trainer's own hyperparameters are MLflow params), the
TensorBoard folder with no flag; t_compress uncensored and equal to the live answer."""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # ./scripts/test --quick leaves it out

transformers = pytest.importorskip("transformers", reason="the transformers callback needs the "
                                   "[hf] extra: pip install 'grokaudit[hf]'")
pytest.importorskip("accelerate", reason="transformers.Trainer needs accelerate")
torch = pytest.importorskip("torch", reason="transformers.Trainer needs torch")

from click.testing import CliRunner  # noqa: E402
from grokaudit import ConfigError, MissingExtraError, spectral_metrics  # noqa: E402
from grokaudit.callbacks import GrokauditBudgetWarning  # noqa: E402
from grokaudit.callbacks.transformers import GrokauditCallback  # noqa: E402
from grokaudit.cli import cli  # noqa: E402
from grokaudit.errors import ErrorCode  # noqa: E402
from helpers.torch_task import linear_teacher_task  # noqa: E402

MAX_STEPS = 2000
WDS = (0.2, 0.4)
F = torch.nn.functional


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


class _FullBatch(torch.utils.data.Dataset):
    """Every item is the whole set: one item per step, collated by taking it as it is."""

    def __init__(self, x, y, length: int) -> None:
        self.x, self.y, self.length = x, y, length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, i: int):
        return {"x": self.x, "labels": self.y}


class _Net(torch.nn.Module):
    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.embed = torch.nn.Linear(8, 8, bias=False)
        self.head = torch.nn.Linear(8, 2)
        torch.nn.init.zeros_(self.head.weight)
        torch.nn.init.zeros_(self.head.bias)

    def forward(self, x, labels=None):
        logits = self.head(self.embed(x))
        return {"loss": F.cross_entropy(logits, labels), "logits": logits}


def _accuracy(pred) -> dict[str, float]:
    return {"accuracy": float((pred.predictions.argmax(-1) == pred.label_ids).mean())}


def _trainer(root: Path, wd: float, max_steps: int = MAX_STEPS, report_to=(), callbacks=None):
    x_train, y_train, x_test, y_test = linear_teacher_task()
    args = transformers.TrainingArguments(
        output_dir=str(root / "out" / f"wd{wd}"), run_name=f"wd{wd}", max_steps=max_steps,
        per_device_train_batch_size=1, per_device_eval_batch_size=1, learning_rate=0.2,
        weight_decay=wd, optim="sgd", lr_scheduler_type="constant", eval_strategy="steps",
        eval_steps=5, logging_steps=5, save_strategy="no", report_to=list(report_to),
        use_cpu=True, dataloader_num_workers=0, disable_tqdm=True, seed=0)
    return transformers.Trainer(
        model=_Net(), args=args, train_dataset=_FullBatch(x_train, y_train, 10**7),
        eval_dataset=_FullBatch(x_test, y_test, 1), compute_metrics=_accuracy,
        data_collator=lambda items: items[0], callbacks=callbacks)


@pytest.fixture(scope="module")
def quiet_env(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf")
    n = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: threads only contend
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("MLFLOW_TRACKING_URI", (root / "mlruns").as_uri())
        mp.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
        mp.setenv("MLFLOW_EXPERIMENT_NAME", "grokaudit-callbacks")
        before = {k: v for k, v in os.environ.items() if k.startswith(("MLFLOW_", "HF_"))}
        yield root
        # the libraries set variables of their own (MLFLOW_EXPERIMENT_ID…): none may leak into
        # later tests, which would then point at this module's deleted store
        for k in [k for k in os.environ if k.startswith(("MLFLOW_", "HF_"))]:
            if k not in before:
                del os.environ[k]
        if _has("mlflow"):
            import mlflow

            mlflow.end_run()
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def sweep(quiet_env):
    root = quiet_env
    report_to = ["tensorboard"] + (["mlflow"] if _has("mlflow") else [])
    runs = {}
    for wd in WDS:
        trainer = _trainer(root, wd, report_to=report_to)
        cb = GrokauditCallback.attach(trainer, {"emb": "embed.weight"}, stop_when="settled")
        trainer.train()
        runs[wd] = (trainer, cb)
    return root, runs


def _check(path: Path, *args: str) -> dict:
    res = CliRunner().invoke(cli, ["check", str(path), *args, "--json", "-"])
    assert res.exit_code in (0, 1), res.output
    return json.loads(res.stdout)


def _agree(doc: dict, runs: dict, metrics: tuple[str, ...], cell_of) -> None:
    """Every run stopped before its budget, after its t_compress, which check reads
    uncensored and equal to the live answer."""
    audited = {(s["metric"], cell_of(r)): r for s in doc["studies"] for r in s["runs"]}
    assert len(audited) == len(metrics) * len(runs)
    for wd, (trainer, cb) in runs.items():
        assert trainer.state.global_step < MAX_STEPS
        assert cb.stopped_at == trainer.state.global_step  # stopped at the evaluation's step
        assert cb.state is not None and cb.state.defined
        live = {m.metric: m for m in cb.state.metrics}
        for metric in metrics:
            r = audited[(metric, wd)]
            tc = r["t_compress"]
            assert tc is not None and not tc["censored"] and r["floor_stability"] == "stable"
            assert cb.stopped_at >= tc["upper"]
            assert live[metric.rsplit("/", 1)[-1]].t_compress.to_dict() == tc


def test_mlflow_store_audited_by_weight_decay_alone(sweep) -> None:
    pytest.importorskip("mlflow", reason="the MLflow integration needs mlflow")
    root, runs = sweep
    doc = _check(root / "mlruns", "--by", "weight_decay")
    assert set(doc["input"]["metrics"]) == {"emb_erank", "emb_pr"}
    assert doc["config"]["by"] == "weight_decay"
    _agree(doc, runs, ("emb_erank", "emb_pr"), lambda r: r["cell"])


def test_tensorboard_folder_audited_with_no_flag(sweep) -> None:
    """transformers' TensorBoard integration writes every non-eval value under ``train/``: the
    metrics are ``train/emb_erank``…, the accuracy ``eval/accuracy``. Its run folders carry no
    condition (the arguments are a text summary), so each run is audited on its own."""
    root, runs = sweep
    doc = _check(root / "out")
    assert set(doc["input"]["metrics"]) == {"train/emb_erank", "train/emb_pr"}
    by_path = {wd: f"wd{wd}/" for wd in runs}
    _agree(doc, runs, ("train/emb_erank", "train/emb_pr"),
           lambda r: next(wd for wd, p in by_path.items() if r["run"].startswith(p)))


def test_metrics_land_in_the_trainers_logs(sweep) -> None:
    _, runs = sweep
    trainer, cb = runs[WDS[0]]
    ours = [r for r in trainer.state.log_history if "emb_erank" in r]
    evals = [r for r in trainer.state.log_history if "eval_accuracy" in r]
    assert [r["step"] for r in ours] == [r["step"] for r in evals]  # at every evaluation
    assert all("epoch" not in r for r in ours)  # the evaluation's record holds the epoch
    final = spectral_metrics(trainer.model.embed.weight)
    assert ours[-1]["emb_erank"] == pytest.approx(final["erank"], rel=1e-6)
    assert ours[-1]["emb_pr"] == pytest.approx(final["pr"], rel=1e-6)
    tb = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    (events,) = Path(trainer.args.output_dir).glob("runs/*")
    acc = tb.EventAccumulator(str(events), size_guidance={"scalars": 0})
    acc.Reload()
    assert {"train/emb_erank", "train/emb_pr", "eval/accuracy"} <= set(acc.Tags()["scalars"])
    assert [e.step for e in acc.Scalars("train/emb_erank")] == [r["step"] for r in ours]


def test_a_resumed_run_replays_its_log_history(sweep) -> None:
    _, runs = sweep
    trainer, cb = runs[WDS[1]]
    again = GrokauditCallback({"emb": "embed.weight"}, stop_when="settled", trainer=trainer)
    again.on_train_begin(trainer.args, trainer.state, trainer.control, model=trainer.model)
    assert again.state is not None and again.state.to_dict() == cb.state.to_dict()
    trainer.pop_callback(again)


def test_a_short_budget_warns_once_and_does_not_stop(quiet_env) -> None:
    trainer = _trainer(quiet_env / "short", WDS[0], max_steps=40)
    cb = GrokauditCallback.attach(trainer, {"emb": "embed.weight"}, stop_when="settled")
    with pytest.warns(GrokauditBudgetWarning) as seen:
        trainer.train()
    ours = [w for w in seen if issubclass(w.category, GrokauditBudgetWarning)]
    assert len(ours) == 1 and "budget ends at step 40" in str(ours[0].message)
    assert trainer.state.global_step == 40 and cb.stopped_at is None
    assert cb.state is not None and not cb.state.defined


def test_an_unbound_callback_refuses_to_train_and_bind_adds_it_once(quiet_env) -> None:
    cb = GrokauditCallback({"emb": "embed.weight"})
    trainer = _trainer(quiet_env / "unbound", WDS[0], max_steps=5, callbacks=[cb])
    with pytest.raises(ConfigError) as e:
        trainer.train()
    assert e.value.code is ErrorCode.INVALID_OPTION and "attach" in str(e.value)
    cb.bind(trainer)
    assert sum(c is cb for c in trainer.callback_handler.callbacks) == 1


def test_unknown_parameter_refused_before_training(quiet_env) -> None:
    trainer = _trainer(quiet_env / "unknown", WDS[0], max_steps=5)
    GrokauditCallback.attach(trainer, {"emb": "embedding.weight"})
    with pytest.raises(ConfigError) as e:
        trainer.train()
    assert e.value.code is ErrorCode.UNKNOWN_VALUE
    assert "embedding.weight" in str(e.value) and "'embed.weight'" in str(e.value)
    assert trainer.state.global_step == 0


def test_without_transformers_the_error_names_the_extra(monkeypatch) -> None:
    monkeypatch.delitem(sys.modules, "grokaudit.callbacks.transformers", raising=False)
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(MissingExtraError) as e:
        importlib.import_module("grokaudit.callbacks.transformers")
    assert e.value.code is ErrorCode.MISSING_EXTRA and "grokaudit[hf]" in str(e.value)
