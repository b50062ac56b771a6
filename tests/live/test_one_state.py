"""One live state, however often it is computed (issue 41 item 3): the state at a step — "defined
since", settled, the stop step — is a function of the log up to that step. A callback that
evaluates every row, one that evaluates every few rows, ``grokaudit watch`` polling a folder as it
grows, and ``watch --once`` of the stopped log say the same of the same rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from click.testing import CliRunner
from grokaudit import make_config
from grokaudit.cli import cli
from grokaudit.live import LiveRun
from grokaudit.watch import Watcher

DATA = Path(__file__).resolve().parents[2] / "reference_runs" / "data"
COLS = ["step", "test_acc", "train_acc", "emb_erank"]
#: stop settings under which these 8 000-step runs stop before their end (whatever the
#: defaults)
MARGIN = 1.0
GROK_MULTIPLE = 2.0


def _run(name: str) -> pd.DataFrame:
    df = pd.read_parquet(DATA / "mlp_wd_sweep_p59.parquet")
    return df[df["run"] == name].sort_values("step")[["run", *COLS]].reset_index(drop=True)


def _key(st: Any) -> dict[str, Any]:
    d = st.to_dict()
    return {k: d[k] for k in ("step", "defined", "defined_from", "settled", "stop_at",
                              "stop_not_before", "t_grok", "metrics", "missing")}


def _replay(g: pd.DataFrame, every: int) -> dict[float, dict[str, Any]]:
    """The states a loop that logs every row and evaluates every ``every``-th row computes."""
    live = LiveRun("r", metrics=["emb_erank"], margin=MARGIN, grok_multiple=GROK_MULTIPLE)
    out: dict[float, dict[str, Any]] = {}
    for i, rec in enumerate(g[COLS].to_dict("records")):
        s = rec.pop("step")
        live.log(s, **rec)
        if i % every == 0:
            out[float(s)] = _key(live.state())
    return out


@pytest.mark.parametrize("name", ["mlp_wd/wd=3.0,seed=1", "mlp_wd/wd=4.0,seed=1"])
def test_three_cadences_and_watch_give_one_state(name: str) -> None:
    g = _run(name)
    every = _replay(g, 1)
    for k in (3, 7):
        other = _replay(g, k)
        assert other  # and each state computed at a step is the one every row gives there
        for s, st in other.items():
            assert st == every[s], (k, s)
    # the run stops at a step where the state says settled; that the rule fired before the
    # end of this 8 000-step log is what makes the comparison below bite
    stops = [s for s, st in every.items() if st["settled"]]
    assert stops and stops[0] < float(g["step"].max())
    first = stops[0]
    # watch: reads the rows as a folder grows, in uneven bites, whatever arrived by a poll
    cut = [40, 41, 97, 150, len(g) // 2, int((g["step"] <= first).sum()), len(g)]
    reads = iter([pa.Table.from_pandas(g.iloc[:n], preserve_index=False) for n in cut])
    w = Watcher(["log"], make_config(metrics=["emb_erank"]), margin=MARGIN,
                grok_multiple=GROK_MULTIPLE,
                read=lambda: next(reads))
    for n in cut:
        w.poll()
        if w.last:
            line = w.last["r" if "r" in w.last else name]
            st = _key(line.state)
            step = float(g["step"].iloc[n - 1])
            assert st == every[step], (n, step)
            assert line.settled == every[step]["settled"]
        if w.done:
            break
    assert w.done  # the watch ended at the step the loop stopped, as settled
    assert float(next(iter(w.last.values())).state.step) == first


def test_watch_once_of_the_stopped_log_says_what_the_loop_said(tmp_path: Path) -> None:
    g = _run("mlp_wd/wd=3.0,seed=1")
    every = _replay(g, 1)
    first = min(s for s, st in every.items() if st["settled"])
    log = tmp_path / "stopped.csv"
    g[g["step"] <= first].assign(run="r").to_csv(log, index=False)
    res = CliRunner().invoke(cli, ["watch", str(log), "--once", "--jsonl", "--metric",
                                   "emb_erank", "--margin", str(MARGIN),
                                   "--grok-multiple", str(GROK_MULTIPLE)])
    assert res.exit_code == 0, res.output
    line = next(json.loads(x) for x in res.output.splitlines() if '"event": "run"' in x)
    assert line["settled"] and line["step"] == first
    assert line["defined_from"] == every[first]["defined_from"]
    assert line["stop_at"] == every[first]["stop_at"]
    # the same log read once more, one row shorter, is not settled yet (the loop went on)
    before = max(s for s in every if s < first)
    g[g["step"] <= before].assign(run="r").to_csv(log, index=False)
    res = CliRunner().invoke(cli, ["watch", str(log), "--once", "--jsonl", "--metric",
                                   "emb_erank", "--margin", str(MARGIN),
                                   "--grok-multiple", str(GROK_MULTIPLE)])
    line = next(json.loads(x) for x in res.output.splitlines() if '"event": "run"' in x)
    assert not line["settled"] and line["stop_at"] == every[before]["stop_at"]
