"""``--engine ray`` (issue 22): the per-run clocks computed as Ray tasks over groups of runs on
a local Ray instance give the same JSON, byte for byte, as the threads of one process; without
Ray the option is one line naming the extra."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from grokaudit import audit_table
from grokaudit.cli import cli
from grokaudit.engine import engine_named


def _sweep(n_seeds: int = 12) -> pd.DataFrame:
    steps = np.arange(0, 6001, 100)
    s = steps.astype(float)
    frames = []
    for wd in (1.0, 2.0, 3.0):
        for seed in range(n_seeds):
            tg = 3000.0 / wd + 37.0 * seed
            frames.append(pd.DataFrame({
                "run": f"wd{wd}_s{seed}", "step": steps, "wd": wd, "seed": seed,
                "test_acc": 1 / (1 + np.exp(-(s - tg) / 150)),
                "train_acc": 1 / (1 + np.exp(-(s - 300) / 60)),
                "emb_erank": 6 + 20 / (1 + np.exp((s - tg - 800 - 13 * seed) / 200))}))
    return pd.concat(frames, ignore_index=True)


@pytest.fixture(scope="module")
def ray_local():
    ray = pytest.importorskip("ray", reason="the ray extra is not installed")
    yield ray
    ray.shutdown()


@pytest.mark.slow
def test_ray_gives_the_same_json_as_threads(ray_local, tmp_path: Path) -> None:
    df = _sweep()
    log = tmp_path / "log.parquet"
    df.to_parquet(log, index=False)
    threads = audit_table(df, by="wd").to_json()
    ray = engine_named("ray")
    assert len(ray.blocks(len(df["run"].unique()), 61)) > 1  # really several tasks
    on_ray = audit_table(df, by="wd", engine=ray).to_json()
    assert on_ray == threads
    outs = []
    for eng in ("threads", "ray"):
        res = CliRunner().invoke(cli, ["check", str(log), "--by", "wd", "--engine", eng,
                                       "--json", str(tmp_path / f"{eng}.json"), "-q"])
        assert res.exit_code in (0, 1), res.output
        d = json.loads((tmp_path / f"{eng}.json").read_text())
        d["trail"].pop("command")  # the command as typed names the engine: nothing else may
        outs.append(d)
    assert outs[0] == outs[1]


def test_without_ray_the_engine_is_one_line_naming_the_extra(monkeypatch, tmp_path) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    df = _sweep(2)
    log = tmp_path / "log.parquet"
    df.to_parquet(log, index=False)
    res = CliRunner().invoke(cli, ["check", str(log), "--by", "wd", "--engine", "ray"])
    assert res.exit_code == 2
    assert res.stderr.strip().endswith("[MISSING_EXTRA]") and "grokaudit[ray]" in res.stderr
