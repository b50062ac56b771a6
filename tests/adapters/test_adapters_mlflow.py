"""MLflow: stores written by MLflow's own client, with a file store and with SQLite."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from grokaudit.adapters import detect_format, read_log
from grokaudit.errors import ErrorCode, LogFormatError
from grokaudit.schema import build_log_table
from helpers.tables import read_as_percent

mlflow = pytest.importorskip("mlflow", reason="mlflow(-skinny) is not installed (test fixtures)")


@pytest.fixture(params=["file", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """(client, path to read): a file store ``tmp/mlruns/`` or a SQLite store ``tmp/mlflow.db``.

    File store tree: mlruns/<exp id>/<run id>/{meta.yaml, metrics/test/acc, params/wd, tags/...}
    """
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    if request.param == "file":
        path = tmp_path / "mlruns"
        uri = path.as_uri()
    else:
        path = tmp_path / "mlflow.db"
        shutil.copy(request.getfixturevalue("empty_sqlite"), path)
        uri = f"sqlite:///{path}"
    client = MlflowClient(tracking_uri=uri)
    return client, path, client.create_experiment("sweep")



def log_run(client, exp: str, name: str, metrics: dict[str, tuple], params: dict | None = None,
            run_id: str | None = None, t0: int | None = None) -> str:
    """Log (steps, values) per key with ``log_batch`` (1000 points a call, like a logger would)."""
    from mlflow.entities import Metric, Param

    rid = run_id or client.create_run(exp, run_name=name).info.run_id
    if params:
        client.log_batch(rid, params=[Param(k, str(v)) for k, v in params.items()])
    ts = t0 if t0 is not None else int(time.time() * 1000)
    batch = [Metric(k, float(v), ts + int(s), int(s))
             for k, (steps, vals) in metrics.items() for s, v in zip(steps, vals)]
    for i in range(0, len(batch), 1000):
        client.log_batch(rid, metrics=batch[i:i + 1000])
    return rid


def test_sweep_matches_canonical(store, sweep: pd.DataFrame) -> None:
    client, path, exp = store
    for run, g in sweep.groupby("run"):
        s = g["step"].to_numpy()
        log_run(client, exp, str(run), {"test/acc": (s, g.test_acc), "train/acc": (s, g.train_acc),
                                        "emb_erank": (s, g.emb_erank)},
                params={"wd": g.wd.iloc[0], "seed": g.seed.iloc[0]})
    assert detect_format(path) in ("mlflow", "mlflow-sqlite")
    t = read_log(path)
    build_log_table(t)
    got = t.to_pandas()
    ref = sweep.sort_values(["run", "step"]).reset_index(drop=True)
    for col in ("test_acc", "train_acc", "emb_erank", "wd", "seed"):
        np.testing.assert_array_equal(got[col].to_numpy(), ref[col].to_numpy())


def test_resumed_run_appended_last_writer_wins(store, codes, prov) -> None:
    client, path, exp = store
    rid = log_run(client, exp, "r", {"test_acc": (np.arange(0, 100, 10), np.full(10, 0.1))},
                  t0=1_000_000)
    log_run(client, exp, "r", {"test_acc": (np.arange(50, 160, 10), np.full(11, 0.7))},
            run_id=rid, t0=2_000_000)
    t = read_log(path)
    df = t.to_pandas().set_index("step")
    assert len(df) == 16 and df.loc[40, "test_acc"] == 0.1 and df.loc[50, "test_acc"] == 0.7
    assert codes(t) == ["RESUMED_DUPLICATES"] and prov(t)["findings"][0]["count"] == 5


def test_nan_and_percent(store, prov) -> None:
    client, path, exp = store
    vals = np.linspace(0, 100, 10)
    vals[3] = np.nan
    log_run(client, exp, "r", {"acc": (np.arange(10), vals), "emb_erank": (np.arange(10),
                                                                            np.ones(10))})
    t = read_log(path)
    df = t.to_pandas()
    assert len(df) == 10 and np.isnan(df["test_acc"].iloc[3])
    assert np.nanmax(df["test_acc"]) == pytest.approx(100.0)  # as logged
    assert read_as_percent(t) == pytest.approx(1.0)


@pytest.mark.slow  # the writer, not the reader, takes the time
def test_100k_points_read_in_full(store) -> None:
    client, path, exp = store
    n = 100_001
    log_run(client, exp, "big", {"test_acc": (np.arange(n), (np.arange(n) % 89) / 89)})
    t = read_log(path)
    assert t.num_rows == n
    np.testing.assert_array_equal(t.column("test_acc").to_numpy(), (np.arange(n) % 89) / 89)


def test_file_store_truncated_metric_line_reported(store, prov, codes) -> None:
    client, path, exp = store
    if not path.is_dir():
        pytest.skip("truncating a line applies to the file store")
    log_run(client, exp, "r", {"test_acc": (np.arange(20), np.linspace(0, 1, 20))})
    (f,) = path.rglob("metrics/test_acc")
    data = f.read_bytes()
    f.write_bytes(data[:-4])
    t = read_log(path)
    assert codes(t) == ["SOURCE_TRUNCATED"]
    (finding,) = prov(t)["findings"]
    assert finding["file"] == str(f) and finding["offset"] == data.rstrip(b"\n").rfind(b"\n") + 1
    assert t.num_rows == 19


def test_sqlite_truncated_or_wrong_is_an_error(store) -> None:
    client, path, exp = store
    if path.is_dir():
        pytest.skip("SQLite only")
    log_run(client, exp, "r", {"test_acc": (np.arange(20), np.linspace(0, 1, 20))})
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    with pytest.raises(LogFormatError) as exc:
        read_log(path, "mlflow-sqlite")
    assert exc.value.path == str(path) and exc.value.code is ErrorCode.FILE_UNREADABLE


def test_empty_store_names_the_path(tmp_path: Path) -> None:
    empty = tmp_path / "mlflow.db"
    empty.write_bytes(b"")
    with pytest.raises(LogFormatError) as exc:
        read_log(empty, "mlflow-sqlite")
    assert exc.value.path == str(empty) and exc.value.code is ErrorCode.FILE_EMPTY
    (tmp_path / "mlruns").mkdir()
    with pytest.raises(LogFormatError) as exc:
        read_log(tmp_path / "mlruns", "mlflow")
    assert exc.value.path == str(tmp_path / "mlruns")
    assert exc.value.code is ErrorCode.FILE_EMPTY
    (tmp_path / "mlruns" / "0").mkdir()
    (tmp_path / "mlruns" / "0" / "meta.yaml").write_text("name: Default\n")
    with pytest.raises(LogFormatError) as exc:
        read_log(tmp_path / "mlruns", "mlflow")
    assert exc.value.code is ErrorCode.FORMAT_MISMATCH
