"""A column logged per step in one run is a series in every run, never a condition where it
happened not to change (it was split into X and X_cond and offered as an axis; issue 39,
item 6)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from click.testing import CliRunner
from grokaudit.cli import cli


def test_a_series_constant_in_some_runs_stays_a_series(tmp_path: Path) -> None:
    s = np.arange(0, 6001, 100)
    for i, (wd, schedule) in enumerate([(1.0, True), (2.0, False), (3.0, False)]):
        tg = 3000 / wd
        pd.DataFrame({"step": s, "test_acc": 1 / (1 + np.exp(-(s - tg) / 150)),
                      "train_acc": 1.0, "emb": 6 + 20 / (1 + np.exp((s - tg - 800) / 200)),
                      "lr": np.where(s < 3000, 1e-3, 5e-4) if schedule else 1e-3,
                      "wd": wd}).to_csv(tmp_path / f"r{i}.csv", index=False)
    r = CliRunner().invoke(cli, ["inspect", str(tmp_path), "--json", "-"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    roles = {c["name"]: c["role"] for c in doc["columns"]}
    assert roles["lr"] == "series" and "lr_cond" not in roles
    # every run holds lr at every step it logged: the constant runs included
    rd = CliRunner().invoke(cli, ["check", str(tmp_path), "--metric", "lr", "--json", "-"])
    assert rd.exit_code in (0, 1), rd.output
    runs = json.loads(rd.stdout)["studies"][0]["runs"]
    assert len(runs) == 3 and all("NO_METRIC_POINTS" not in r["reasons"] for r in runs)


def test_a_config_axis_is_never_flattened_into_a_series(tmp_path: Path) -> None:
    """lr from each run's config.json (0.001, 0.001, 0.01, 0.01), one run also logging lr per
    step (a warm-up): the configs' lr became a flat series and the sweep lost its axis."""
    s = np.arange(0, 4001, 100)
    for i, lr in enumerate([0.001, 0.001, 0.01, 0.01]):
        d = tmp_path / f"run{i}"
        d.mkdir()
        cols = {"step": s, "test_acc": 1 / (1 + np.exp(-(s - 2000 + 300 * i) / 150)),
                "emb": 6 + 20 / (1 + np.exp((s - 2600) / 200))}
        if i == 0:
            cols["lr"] = np.minimum(1.0, (s + 100) / 1000) * lr
        pd.DataFrame(cols).to_csv(d / "metrics.csv", index=False)
        (d / "config.json").write_text(json.dumps({"lr": lr, "seed": i}))
    r = CliRunner().invoke(cli, ["inspect", str(tmp_path), "--json", "-"])
    assert r.exit_code == 0, r.output
    roles = {c["name"]: c["role"] for c in json.loads(r.stdout)["columns"]}
    assert roles.get("lr") == "series" and roles.get("lr_cond") == "condition", roles
