"""Shared fixtures for the adapter tests: one small sweep of grokking trajectories.

Every writer test logs these same trajectories, so that the canonical tables (and the audits)
can be compared across formats. Values are rounded to float32 because TensorBoard stores
``simple_value`` as float32; every other format then holds exactly the same numbers.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers.tables import provenance_of

EXTERNAL = Path(__file__).resolve().parents[2] / ".." / "shared" / "external"
NPZ_DIR = EXTERNAL / "critical-norm-grokking" / "grokfss_p59"

WDS = (1.5, 3.0)
SEEDS = (0, 1)
STEPS = np.arange(0, 12001, 50, dtype=np.int64)


def _trajectory(wd: float, seed: int) -> dict[str, np.ndarray]:
    t_grok = 6000.0 / wd + 300.0 * seed
    s = STEPS.astype(np.float64)
    f32 = lambda a: np.asarray(a, dtype=np.float32).astype(np.float64)  # noqa: E731
    return {
        "test_acc": f32(1.0 / (1.0 + np.exp(-(s - t_grok) / 250.0))),
        "train_acc": f32(1.0 / (1.0 + np.exp(-(s - 400.0) / 80.0))),
        "emb_erank": f32(6.0 + 20.0 / (1.0 + np.exp((s - t_grok - 1500.0) / 300.0))),
    }


def run_name(wd: float, seed: int) -> str:
    return f"wd{wd}_s{seed}"


@pytest.fixture(scope="session")
def sweep() -> pd.DataFrame:
    """The canonical table of the shared sweep: 4 runs (wd x seed), 241 steps each."""
    frames = []
    for wd in WDS:
        for seed in SEEDS:
            tr = _trajectory(wd, seed)
            frames.append(pd.DataFrame({"run": run_name(wd, seed), "step": STEPS, **tr,
                                        "seed": seed, "wd": wd}))
    return pd.concat(frames, ignore_index=True)


@pytest.fixture
def wandb_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Offline, silent W&B writing under ``tmp_path`` (no network here or in CI)."""
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_CONSOLE", "off")
    monkeypatch.setenv("WANDB_DISABLE_GIT", "true")
    monkeypatch.setenv("WANDB_CACHE_DIR", str(tmp_path / ".cache"))
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / ".config"))
    return tmp_path


@pytest.fixture
def mlflow_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    os.environ.pop("MLFLOW_TRACKING_URI", None)


@pytest.fixture(scope="session")
def npz_dir() -> Path:
    """The real NPZ sweep files in ../shared/external (skipped with a reason when absent)."""
    if not NPZ_DIR.is_dir():
        pytest.skip(f"real NPZ fixtures not found at {NPZ_DIR} (a clone without ../shared)")
    return NPZ_DIR.resolve()


@pytest.fixture(scope="session")
def prov():  # type: ignore[no-untyped-def]
    """``prov(table)``: the provenance dict of a table read by an adapter."""
    return provenance_of


@pytest.fixture(scope="session")
def codes():  # type: ignore[no-untyped-def]
    """``codes(table)``: the finding codes in a table's provenance, as a sorted list."""
    return lambda t: sorted(f["code"] for f in provenance_of(t)["findings"])


@pytest.fixture(scope="session")
def empty_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An MLflow SQLite store with its tables created once (migrations take seconds)."""
    pytest.importorskip("sqlalchemy", reason="MLflow's SQLite backend needs sqlalchemy")
    pytest.importorskip("alembic", reason="MLflow's SQLite backend needs alembic")
    pytest.importorskip("mlflow", reason="mlflow(-skinny) is not installed (test fixtures)")
    from mlflow.tracking import MlflowClient

    db = tmp_path_factory.mktemp("mlflow") / "template.db"
    MlflowClient(tracking_uri=f"sqlite:///{db}").search_experiments()
    return db
