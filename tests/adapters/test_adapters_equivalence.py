"""The same trajectories, logged through every writer, give the same audit as canonical Parquet.

Each writer below logs the shared sweep (4 runs: wd in {1.5, 3.0} x seed in {0, 1}) its own way;
the audit of what the adapter reads must equal the audit of the canonical Parquet file: same
verdicts, same per-run and per-cell clocks (``AuditResult.to_dict()`` without the input
section, which names the source and its provenance).

The W&B panel CSV is left out on purpose: it is flagged downsampled, and the audit widens its
censoring intervals for it, so its result is *meant* to differ.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from grokaudit.adapters import read_log

api = pytest.importorskip("grokaudit.api", reason="the audit API has not landed")

COND = {"wd": r"wd([0-9.]+)", "seed": r"_s(\d+)"}
Writer = Callable[[pd.DataFrame, Path, pytest.FixtureRequest], tuple[Path, dict[str, Any]]]


def _runs(sweep: pd.DataFrame):  # type: ignore[no-untyped-def]
    return [(str(r), g) for r, g in sweep.groupby("run")]


def write_csv(sweep, tmp, request):  # type: ignore[no-untyped-def]
    # logs.csv with run, step, test_acc, train_acc, emb_erank, seed, wd
    sweep.to_csv(tmp / "logs.csv", index=False)
    return tmp / "logs.csv", {}


def write_jsonl_dir(sweep, tmp, request):  # type: ignore[no-untyped-def]
    # sweep/wd1.5_s0/metrics.jsonl ... (no run or condition columns: they come from the path)
    for run, g in _runs(sweep):
        (tmp / "sweep" / run).mkdir(parents=True)
        rows = g.drop(columns=["run", "wd", "seed"]).to_dict(orient="records")
        # json.dumps writes shortest round-trip floats (pandas' to_json rounds to 10 digits)
        (tmp / "sweep" / run / "metrics.jsonl").write_text(
            "".join(json.dumps({k: (int(v) if k == "step" else v) for k, v in r.items()}) + "\n"
                    for r in rows))
    return tmp / "sweep", {"run_from": "path", "cond": COND}


def write_npz(sweep, tmp, request):  # type: ignore[no-untyped-def]
    # npz/wd1.5.npz: steps (T,), test_acc/train_acc/emb_erank (2 seeds, T), wd ()
    (tmp / "npz").mkdir()
    for wd, g in sweep.groupby("wd"):
        arrs = {c: np.stack([h[c].to_numpy() for _, h in g.groupby("seed")])
                for c in ("test_acc", "train_acc", "emb_erank")}
        np.savez(tmp / "npz" / f"wd{wd}.npz", steps=np.sort(g.step.unique()), wd=wd, **arrs)
    return tmp / "npz", {}


def write_tensorboard(sweep, tmp, request):  # type: ignore[no-untyped-def]
    # tb/wd1.5_s0/events.out.tfevents.* (torch SummaryWriter.add_scalar)
    tb = pytest.importorskip("torch.utils.tensorboard", reason="torch is not installed")
    for run, g in _runs(sweep):
        w = tb.SummaryWriter(str(tmp / "tb" / run))
        for r in g.itertuples():
            w.add_scalar("test/acc", r.test_acc, r.step)
            w.add_scalar("train/acc", r.train_acc, r.step)
            w.add_scalar("emb_erank", r.emb_erank, r.step)
        w.close()
    return tmp / "tb", {"cond": COND}


def write_wandb_offline(sweep, tmp, request):  # type: ignore[no-untyped-def]
    # wandb/offline-run-<date>-<id>/run-<id>.wandb, config {wd, seed}, display name = run
    wandb = pytest.importorskip("wandb", reason="the [wandb] extra is not installed")
    request.getfixturevalue("wandb_env")
    for run, g in _runs(sweep):
        r = wandb.init(project="eq", id=run.replace(".", ""), name=run, dir=str(tmp),
                       mode="offline", config={"wd": float(g.wd.iloc[0]),
                                               "seed": int(g.seed.iloc[0])},
                       settings=wandb.Settings(console="off", x_disable_stats=True,
                                               x_disable_meta=True, disable_git=True))
        for x in g.itertuples():
            r.log({"test/acc": x.test_acc, "train/acc": x.train_acc, "emb_erank": x.emb_erank},
                  step=int(x.step))
        r.finish()
    return tmp / "wandb", {}


def write_wandb_history(sweep, tmp, request):  # type: ignore[no-untyped-def]
    # history/wd1.5_s0-history.csv with _step, _runtime, _timestamp, test/acc, train/acc, emb_erank
    (tmp / "history").mkdir()
    for run, g in _runs(sweep):
        pd.DataFrame({"_step": g.step, "_runtime": g.step / 100.0,
                      "_timestamp": 1.7e9 + g.step / 100.0, "test/acc": g.test_acc,
                      "train/acc": g.train_acc, "emb_erank": g.emb_erank}).to_csv(
            tmp / "history" / f"{run}-history.csv", index=False)
    return tmp / "history", {"cond": COND}


def _mlflow(sweep, tmp, request, uri: str) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("mlflow", reason="mlflow(-skinny) is not installed")
    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient

    request.getfixturevalue("mlflow_env")
    c = MlflowClient(tracking_uri=uri)
    exp = c.create_experiment("eq")
    ts = int(time.time() * 1000)
    for run, g in _runs(sweep):
        rid = c.create_run(exp, run_name=run).info.run_id
        c.log_batch(rid, params=[Param("wd", str(g.wd.iloc[0])), Param("seed", str(g.seed.iloc[0]))])
        ms = [Metric(k, float(getattr(x, col)), ts + int(x.step), int(x.step))
              for x in g.itertuples()
              for k, col in (("test/acc", "test_acc"), ("train/acc", "train_acc"),
                             ("emb_erank", "emb_erank"))]
        for i in range(0, len(ms), 1000):
            c.log_batch(rid, metrics=ms[i:i + 1000])


def write_mlflow(sweep, tmp, request):  # type: ignore[no-untyped-def]
    # mlruns/<exp>/<run>/{metrics/test/acc, params/wd, tags/mlflow.runName, meta.yaml}
    _mlflow(sweep, tmp, request, (tmp / "mlruns").as_uri())
    return tmp / "mlruns", {}


def write_mlflow_sqlite(sweep, tmp, request):  # type: ignore[no-untyped-def]
    # mlflow.db (metrics, runs, params, tags tables)
    shutil.copy(request.getfixturevalue("empty_sqlite"), tmp / "mlflow.db")
    _mlflow(sweep, tmp, request, f"sqlite:///{tmp / 'mlflow.db'}")
    return tmp / "mlflow.db", {}


WRITERS: dict[str, Writer] = {
    "csv": write_csv, "jsonl-dir": write_jsonl_dir, "npz": write_npz,
    "tensorboard": write_tensorboard, "wandb-offline": write_wandb_offline,
    "wandb-history": write_wandb_history, "mlflow": write_mlflow,
    "mlflow-sqlite": write_mlflow_sqlite,
}


#: Input findings about how a log was read (its accuracy column had another name): they
#: describe the source, not the audit, and a canonical table has none of them.
READING = {"ACCURACY_COLUMN_CHOSEN", "READER_NOTES"}


def _comparable(result: Any) -> str:
    d = result.to_dict()
    d.pop("input", None)
    d.pop("trail", None)  # names the files read: their formats differ by design
    d.pop("summary", None)  # its finding counts include the READING findings
    d["findings"] = [f for f in d["findings"] if f["code"] not in READING]
    text = json.dumps(d, sort_keys=True)
    return re.sub(r"(wd[0-9.]+)/s(\d)", r"\1_s\2", text)  # NPZ run ids: <file stem>/s<seed>


@pytest.fixture(scope="module")
def reference(sweep: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory) -> str:
    p = tmp_path_factory.mktemp("canonical") / "logs.parquet"
    sweep.to_parquet(p, index=False)
    return _comparable(api.audit_path(p))


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_same_audit_as_canonical_parquet(fmt: str, sweep: pd.DataFrame, reference: str,
                                         tmp_path: Path, request: pytest.FixtureRequest) -> None:
    path, kwargs = WRITERS[fmt](sweep, tmp_path, request)
    table = read_log(path, **kwargs)
    assert _comparable(api.audit_table(table, source=str(path))) == reference
