"""The Lightning callback (issue 24, item 2), with the real library on a tiny model: a run logs
its spectral metrics through the trainer's own loggers (CSV and TensorBoard), stops with
``stop_when="settled"`` after its t_compress, and ``grokaudit check FOLDER --by wd`` audits the
CSVLogger folder (metrics.csv + hparams.yaml) with no other flag, t_compress uncensored and
equal to the live answer; the budget warning; bad options refused with their codes."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # ./scripts/test --quick leaves it out

pl = pytest.importorskip("lightning.pytorch", reason="the Lightning callback needs the "
                         "[lightning] extra: pip install 'grokaudit[lightning]'")
torch = pytest.importorskip("torch", reason="Lightning needs torch")

from click.testing import CliRunner  # noqa: E402
from grokaudit import ConfigError, MissingExtraError, spectral_metrics  # noqa: E402
from grokaudit.callbacks import GrokauditBudgetWarning  # noqa: E402
from grokaudit.callbacks.lightning import GrokauditCallback  # noqa: E402
from grokaudit.cli import cli  # noqa: E402
from grokaudit.errors import ErrorCode, GrokauditWarning  # noqa: E402
from helpers.torch_task import linear_teacher_task  # noqa: E402
from lightning.pytorch.loggers import CSVLogger  # noqa: E402

MAX_STEPS = 2000
WDS = (0.2, 0.4)
F = torch.nn.functional


class _FullBatch(torch.utils.data.Dataset):
    def __init__(self, x, y, length: int) -> None:
        self.x, self.y, self.length = x, y, length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, i: int):
        return self.x, self.y


class _Net(pl.LightningModule):
    def __init__(self, wd: float, lr: float = 0.2, seed: int = 0) -> None:
        super().__init__()
        self.save_hyperparameters()  # -> hparams.yaml beside metrics.csv: the run's conditions
        torch.manual_seed(seed)
        self.embed = torch.nn.Linear(8, 8, bias=False)
        self.head = torch.nn.Linear(8, 2)
        torch.nn.init.zeros_(self.head.weight)
        torch.nn.init.zeros_(self.head.bias)

    def forward(self, x):
        return self.head(self.embed(x))

    def training_step(self, batch, i):
        x, y = batch
        out = self(x)
        loss = F.cross_entropy(out, y)
        self.log("train_loss", loss)
        self.log("train_acc", (out.argmax(1) == y).float().mean())
        return loss

    def validation_step(self, batch, i):
        x, y = batch
        self.log("val_acc", (self(x).argmax(1) == y).float().mean())

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr,
                               weight_decay=self.hparams.wd)


def _fit(root: Path, wd: float, callback: GrokauditCallback, max_steps: int = MAX_STEPS,
         tensorboard: bool = False):
    x_train, y_train, x_test, y_test = linear_teacher_task()
    loggers = [CSVLogger(root / "csv", name=f"wd{wd}")]
    if tensorboard:
        from lightning.pytorch.loggers import TensorBoardLogger

        loggers.append(TensorBoardLogger(root / "tb", name=f"wd{wd}"))
    trainer = pl.Trainer(max_steps=max_steps, val_check_interval=5, check_val_every_n_epoch=None,
                         log_every_n_steps=5, logger=loggers, callbacks=[callback],
                         accelerator="cpu", enable_progress_bar=False,
                         enable_model_summary=False, enable_checkpointing=False)
    model = _Net(wd)
    loader = torch.utils.data.DataLoader
    trainer.fit(model, loader(_FullBatch(x_train, y_train, 10**7), batch_size=None),
                loader(_FullBatch(x_test, y_test, 1), batch_size=None))
    return trainer, model


@pytest.fixture(scope="module")
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: threads only contend
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, one_thread):
    root = tmp_path_factory.mktemp("lightning")
    runs = {}
    for wd in WDS:
        cb = GrokauditCallback({"emb": "embed.weight"}, stop_when="settled")
        trainer, model = _fit(root, wd, cb, tensorboard=(wd == WDS[0]))
        runs[wd] = (trainer, model, cb)
    return root, runs


def _check(path: Path, *args: str) -> tuple[int, dict]:
    res = CliRunner().invoke(cli, ["check", str(path), *args, "--json", "-"])
    assert res.exit_code in (0, 1), res.output
    return res.exit_code, json.loads(res.stdout)


def test_settled_runs_stop_after_t_compress_and_check_agrees(sweep) -> None:
    root, runs = sweep
    _, doc = _check(root / "csv", "--by", "wd")
    assert set(doc["input"]["metrics"]) == {"emb_erank", "emb_pr"}
    assert doc["config"]["by"] == "wd"
    audited = {(s["metric"], r["cell"]): r for s in doc["studies"] for r in s["runs"]}
    assert len(audited) == 2 * len(WDS)
    for wd, (trainer, _, cb) in runs.items():
        assert trainer.global_step < MAX_STEPS  # it stopped, before its budget
        assert cb.stopped_at is not None and cb.state is not None and cb.state.defined
        live = {m.metric: m for m in cb.state.metrics}
        for metric in ("emb_erank", "emb_pr"):
            r = audited[(metric, wd)]
            tc = r["t_compress"]
            assert tc is not None and not tc["censored"] and r["floor_stability"] == "stable"
            assert cb.stopped_at >= tc["upper"]  # the run stopped after its compression clock
            assert live[metric].t_compress.to_dict() == tc  # the live answer is check's


def test_metrics_land_in_the_trainers_loggers(sweep) -> None:
    root, runs = sweep
    trainer, model, cb = runs[WDS[0]]
    csv = Path(trainer.loggers[0].log_dir) / "metrics.csv"
    import pandas as pd

    df = pd.read_csv(csv)
    assert {"emb_erank", "emb_pr", "val_acc", "step"} <= set(df.columns)
    logged = df.dropna(subset=["emb_erank"])
    # the metrics share the validation's rows: every step with a metric has a val_acc
    assert set(logged["step"]) == set(df.dropna(subset=["val_acc"])["step"])
    assert int(logged["step"].max()) == cb.stopped_at
    # the last row holds the weights' metrics as they ended (nothing trained after the stop)
    final = spectral_metrics(model.embed.weight)
    assert logged["emb_erank"].iloc[-1] == pytest.approx(final["erank"], rel=1e-6)
    assert logged["emb_pr"].iloc[-1] == pytest.approx(final["pr"], rel=1e-6)
    assert float(trainer.callback_metrics["emb_erank"]) == pytest.approx(final["erank"])
    # the TensorBoard logger got the same tags at the same steps
    tb = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    acc = tb.EventAccumulator(str(trainer.loggers[1].log_dir), size_guidance={"scalars": 0})
    acc.Reload()
    assert {"emb_erank", "emb_pr", "val_acc"} <= set(acc.Tags()["scalars"])
    assert [e.step for e in acc.Scalars("emb_erank")] == list(logged["step"])


def test_a_short_budget_warns_once_and_does_not_stop(tmp_path, one_thread) -> None:
    cb = GrokauditCallback({"emb": "embed.weight"}, stop_when="settled")
    with pytest.warns(GrokauditBudgetWarning) as seen:
        trainer, _ = _fit(tmp_path, WDS[0], cb, max_steps=40)
    ours = [w for w in seen if issubclass(w.category, GrokauditBudgetWarning)]
    assert len(ours) == 1 and "budget ends at step 40" in str(ours[0].message)
    assert trainer.global_step == 40 and cb.stopped_at is None
    assert cb.state is not None and not cb.state.defined


def test_a_resumed_callback_goes_on_with_the_same_rows(sweep) -> None:
    _, runs = sweep
    cb = runs[WDS[1]][2]
    again = GrokauditCallback({"emb": "embed.weight"}, stop_when="settled")
    again.load_state_dict(cb.state_dict())
    assert again.state is not None and again.state.to_dict() == cb.state.to_dict()
    assert again.stopped_at == cb.stopped_at


def test_unknown_or_flat_parameter_refused_before_training(tmp_path) -> None:
    with pytest.raises(ConfigError) as e:
        _fit(tmp_path, 0.1, GrokauditCallback({"emb": "embedding.weight"}), max_steps=5)
    assert e.value.code is ErrorCode.UNKNOWN_VALUE
    assert "embedding.weight" in str(e.value) and "'embed.weight'" in str(e.value)
    with pytest.raises(ConfigError) as e:
        _fit(tmp_path, 0.1, GrokauditCallback({"b": "head.bias"}), max_steps=5)
    assert e.value.code is ErrorCode.INVALID_OPTION and "head.bias" in str(e.value)


@pytest.mark.parametrize(("kwargs", "code"), [
    ({"stop_when": "converged"}, ErrorCode.INVALID_OPTION),
    ({"metrics": ("erank", "rank")}, ErrorCode.INVALID_OPTION),
    ({"margin": -1.0}, ErrorCode.OPTION_OUT_OF_RANGE),
    ({"budget": 0}, ErrorCode.OPTION_OUT_OF_RANGE),
    ({"grok_threshold": 2.0}, ErrorCode.OPTION_OUT_OF_RANGE),
    ({"no_such_option": 1}, ErrorCode.UNKNOWN_OPTION),
])
def test_bad_options_refused_with_their_code(kwargs, code) -> None:
    with pytest.raises(ConfigError) as e:
        GrokauditCallback({"emb": "embed.weight"}, **kwargs)
    assert e.value.code is code


def test_a_prefix_that_would_read_as_an_accuracy_is_refused() -> None:
    with pytest.raises(ConfigError) as e:
        GrokauditCallback({"val_acc": "embed.weight"})
    assert e.value.code is ErrorCode.RESERVED_COLUMN


def test_accuracies_read_as_check_reads_them() -> None:
    cb = GrokauditCallback({"emb": "embed.weight"})
    logged = {"train_loss": 0.3, "val_acc": torch.tensor(0.75), "train_acc_step": 0.5,
              "emb_erank": 3.0}
    assert cb.audit.accuracies(logged) == {"test_acc": 0.75, "train_acc": 0.5}
    two = GrokauditCallback({"emb": "embed.weight"})
    with pytest.warns(GrokauditWarning, match="name it"):
        assert two.audit.accuracies({"val_a_acc": 0.5, "val_b_acc": 0.6}) == {}
    named = GrokauditCallback({"emb": "embed.weight"}, test_acc="val_acc2")
    with pytest.warns(GrokauditWarning, match="val_acc2"):
        assert named.audit.accuracies(logged) == {"train_acc": 0.5}


def test_without_lightning_the_error_names_the_extra(monkeypatch) -> None:
    for name in [m for m in sys.modules if m == "grokaudit.callbacks.lightning"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "lightning", None)
    monkeypatch.setitem(sys.modules, "lightning.pytorch", None)
    with pytest.raises(MissingExtraError) as e:
        importlib.import_module("grokaudit.callbacks.lightning")
    assert e.value.code is ErrorCode.MISSING_EXTRA
    assert "grokaudit[lightning]" in str(e.value)
