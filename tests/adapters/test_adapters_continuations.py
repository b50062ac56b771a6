"""A run and its own continuation (a file that repeats another run's rows exactly and goes on)
are one run resumed, never two replicates: ``RUN_CONTINUED``, both named (issue 39, item 5)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from grokaudit.cli import cli

HERE = Path(__file__).resolve().parents[1]


def _run(seed: int, end: int) -> pd.DataFrame:
    s = np.arange(0, end + 1, 100)
    rng = np.random.default_rng(seed)
    tg = 1500 + 200 * seed
    return pd.DataFrame({"step": s, "train_acc": 1.0,
                         "test_acc": 1 / (1 + np.exp(-(s - tg) / 100)),
                         "emb": 10 + 20 / (1 + np.exp((s - tg - 600) / 150))
                         + rng.normal(0, 0.01, s.size)})


def _check(path: Path) -> dict[str, Any]:
    r = CliRunner().invoke(cli, ["check", str(path), "--metric", "emb", "--json", "-"])
    assert r.exit_code in (0, 1), r.output
    return json.loads(r.stdout)


def _runs(doc: dict[str, Any]) -> list[str]:
    return sorted(r["run"] for s in doc["studies"] for r in s["runs"])


def test_a_file_that_repeats_a_run_and_goes_on_is_that_run_resumed(tmp_path: Path) -> None:
    long = _run(0, 6000)
    long.iloc[:21].to_csv(tmp_path / "a_20k.csv", index=False)  # steps 0..2000: its start
    long.to_csv(tmp_path / "a_60k.csv", index=False)
    _run(1, 6000).to_csv(tmp_path / "b.csv", index=False)
    doc = _check(tmp_path)
    assert _runs(doc) == ["a_60k", "b"]  # not a_20k beside a_60k as a second replicate
    found = [f for f in doc["findings"] if f["code"] == "RUN_CONTINUED"]
    assert len(found) == 1 and set(found[0]["runs"]) == {"a_20k", "a_60k"}


@pytest.mark.parametrize("change", ["value", "step"])
def test_a_file_that_differs_anywhere_is_another_run(tmp_path: Path, change: str) -> None:
    long = _run(0, 6000)
    start = long.iloc[:21].copy()
    if change == "value":
        start.loc[10, "emb"] += 1e-9  # one value of 21 rows × 4 columns
    else:
        start.loc[20, "step"] = 1999
    start.to_csv(tmp_path / "a_20k.csv", index=False)
    long.to_csv(tmp_path / "a_60k.csv", index=False)
    doc = _check(tmp_path)
    assert _runs(doc) == ["a_20k", "a_60k"]
    assert "RUN_CONTINUED" not in {f["code"] for f in doc["findings"]}


def test_checkpoints_of_one_trainer_state_are_one_run() -> None:
    # a public Hugging Face run: checkpoint-500 ⊂ checkpoint-1000 ⊂ checkpoint-1200
    root = HERE / "corpus" / "AguLeon_LoRA_RoBERTa_AGNews"
    states = {p.parent.name: json.loads(p.read_text())["log_history"]
              for p in root.rglob("trainer_state.json")}
    assert sorted(states) == ["checkpoint-1000", "checkpoint-1200", "checkpoint-500"]
    longest = states["checkpoint-1200"]
    for name in ("checkpoint-500", "checkpoint-1000"):  # an independent reading: prefixes
        assert longest[:len(states[name])] == states[name]
    r = CliRunner().invoke(cli, ["check", str(root), "--metric", "grad_norm", "--json", "-"])
    doc = json.loads(r.stdout)
    assert _runs(doc) == ["results/checkpoint-1200"]
    found = [f for f in doc["findings"] if f["code"] == "RUN_CONTINUED"]
    assert sorted(tuple(sorted(f["runs"])) for f in found) == [
        ("results/checkpoint-1000", "results/checkpoint-1200"),
        ("results/checkpoint-1200", "results/checkpoint-500")]


def test_runs_whose_every_value_is_constant_are_never_merged(tmp_path: Path) -> None:
    # two runs stuck at one accuracy, one logged longer: alike, not one run resumed
    for name, end in (("stuck_a", 2000), ("stuck_b", 4000)):
        s = np.arange(0, end + 1, 100)
        pd.DataFrame({"step": s, "test_acc": 0.0, "emb": 5.0}).to_csv(tmp_path / f"{name}.csv",
                                                                     index=False)
    r = CliRunner().invoke(cli, ["inspect", str(tmp_path), "--json", "-"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["runs"]["ids"] == ["stuck_a", "stuck_b"]
    assert "RUN_CONTINUED" not in {f["code"] for f in doc["findings"]}


def test_runs_set_apart_by_a_condition_are_never_one_run(tmp_path: Path) -> None:
    """wd0.1 logged 11 rows, wd1.0 the same first 5 and stopped: a sweep's two levels, not a
    run and its start (a 2-level sweep read as one run, no axis; the session's review)."""
    long = _run(0, 1000)
    for name, part in (("wd0.1", long), ("wd1.0", long.iloc[:5])):
        (tmp_path / name).mkdir()
        part.to_csv(tmp_path / name / "metrics.csv", index=False)
        (tmp_path / name / "config.json").write_text(json.dumps({"wd": float(name[2:])}))
    r = CliRunner().invoke(cli, ["inspect", str(tmp_path), "--json", "-"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["runs"]["ids"] == ["wd0.1", "wd1.0"]
    assert "RUN_CONTINUED" not in {f["code"] for f in doc["findings"]}


def test_a_checkpoint_saved_after_its_last_logging_step_is_the_later_ones_start(
        tmp_path: Path) -> None:
    """A Hugging Face run saved at step 1200 and again at its end, 1234, with no logging step
    between: the two ``trainer_state.json`` hold the same ``log_history`` and differ only in
    ``global_step``. They were read as two runs (two replicates of one condition; public log
    GulbeycanCagri/IS-584). The earlier checkpoint is the later one's start; chains are
    followed to the end (500 ⊂ 1000 ⊂ 1200 = 1234: each named with 1234). Two plain logs that
    are merely equal stay two runs (DUPLICATE_RUN says they are copies)."""
    import shutil

    src = HERE / "corpus" / "AguLeon_LoRA_RoBERTa_AGNews"
    root = tmp_path / "hf"
    shutil.copytree(src, root, ignore=shutil.ignore_patterns("ORIGIN.md", "*.md"))
    (last,) = [p for p in root.rglob("trainer_state.json") if p.parent.name == "checkpoint-1200"]
    state = json.loads(last.read_text())
    state["global_step"] = 1234
    later = last.parent.parent / "checkpoint-1234"
    later.mkdir()
    (later / "trainer_state.json").write_text(json.dumps(state, indent=2, sort_keys=True))
    r = CliRunner().invoke(cli, ["check", str(root), "--metric", "grad_norm", "--json", "-"])
    doc = json.loads(r.stdout)
    assert _runs(doc) == ["results/checkpoint-1234"]
    found = sorted(tuple(sorted(f["runs"])) for f in doc["findings"]
                   if f["code"] == "RUN_CONTINUED")
    assert found == sorted(tuple(sorted(("results/checkpoint-1234", f"results/checkpoint-{n}")))
                           for n in (500, 1000, 1200))
    plain = tmp_path / "plain"
    plain.mkdir()
    for name in ("a.csv", "b.csv"):
        _run(0, 3000).to_csv(plain / name, index=False)
    doc = _check(plain)
    assert _runs(doc) == ["a", "b"]
    assert "DUPLICATE_RUN" in {f["code"] for f in doc["findings"]}
