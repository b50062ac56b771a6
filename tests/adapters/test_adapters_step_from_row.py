"""``--step-from row``: a table with no step column, its rows numbered as its steps.

Keras's ``history.history`` is a dict of lists, one value per epoch, with no epoch key; saved
with ``json.dump`` or ``pd.DataFrame(...).to_csv(index=False)`` it is the most common Keras log
that is no ``CSVLogger`` file. It was refused (MISSING_COLUMN) with a fix that could not work
(``--map COLUMN=step``: no column is a step). Found on public logs
(Rizzhabh/MusicGenreClassifier ``history.json``, Aryan-82/Digit_Recognition
``training_history.csv``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from grokaudit.adapters import read_log
from helpers.hostile import cli, expect_error

EPOCHS, GROK = 40, 25


def _history() -> dict[str, list[float]]:
    return {"accuracy": [min(1.0, 0.3 + e * 0.05) for e in range(EPOCHS)],
            "loss": [1 / (e + 1) for e in range(EPOCHS)],
            "val_accuracy": [0.1 if e < GROK else 0.96 for e in range(EPOCHS)],
            "val_loss": [2 / (e + 1) for e in range(EPOCHS)]}


@pytest.fixture(params=["json", "csv"])
def history(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    p = tmp_path / f"history.{request.param}"
    if request.param == "json":
        p.write_text(json.dumps(_history()))
    else:
        pd.DataFrame(_history()).to_csv(p, index=False)
    return p


def test_a_keras_history_without_steps_names_a_fix_that_works(history: Path) -> None:
    _, message = expect_error(cli(["check", history]), "MISSING_COLUMN")
    assert "--step-from row" in message  # the refusal names the fix, which then works:
    out = cli(["check", history, "--step-from", "row", "--json", "-"])
    assert out.exit_code in (0, 1), out
    run = json.loads(out.stdout)["studies"][0]["runs"][0]
    # the first epoch at val_accuracy >= 0.9, numbered from 0 as Keras's CSVLogger numbers them
    assert run["t_grok"]["value"] == GROK
    assert run["t_mem"]["value"] == next(e for e in range(EPOCHS)
                                         if _history()["accuracy"][e] >= 0.99)


def test_rows_numbered_per_run_and_noted(tmp_path: Path, prov) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path / "two.csv"
    pd.DataFrame({"run": ["a", "b", "a", "b", "a"], "test_acc": [0.1, 0.2, 0.3, 0.4, 0.5]}
                 ).to_csv(p, index=False)
    t = read_log(p, layout={"step_from": "row"})
    df = t.to_pandas().sort_values(["run", "step"])
    assert df[df.run == "a"].step.tolist() == [0, 1, 2]
    assert df[df.run == "b"].step.tolist() == [0, 1]
    np.testing.assert_array_equal(df[df.run == "a"].test_acc, [0.1, 0.3, 0.5])
    assert any("--step-from row" in n for n in prov(t).get("notes", []))


def test_a_file_that_has_steps_or_a_wrong_value_is_refused(tmp_path: Path,
                                                            history: Path) -> None:
    """The option must not pass silently where it would say something the file contradicts,
    nor in a spelling that means nothing."""
    p = tmp_path / "with_steps.csv"
    pd.DataFrame({"epoch": [0, 5, 10], "val_accuracy": [0.1, 0.5, 0.95]}).to_csv(p, index=False)
    expect_error(cli(["check", p, "--step-from", "row"]), "INVALID_OPTION")
    expect_error(cli(["check", history, "--step-from", "rows"]), "INVALID_OPTION")
    expect_error(cli(["convert", history, "--step-from", "index", "-o",
                      tmp_path / "o.parquet"]), "INVALID_OPTION")
    assert not (tmp_path / "o.parquet").exists()


def _epochs(n: int = EPOCHS) -> list[dict[str, float]]:
    h = _history()
    return [{k: h[k][e] for k in ("accuracy", "val_accuracy")} for e in range(n)]


def _t_grok(args: list[object]) -> list[object]:
    out = cli(["check", *args, "--json", "-"])
    assert out.exit_code in (0, 1), out
    return [r["t_grok"]["value"] for s in json.loads(out.stdout)["studies"] for r in s["runs"]]


def test_a_config_record_before_the_epochs_is_no_step(tmp_path: Path) -> None:
    """A JSON-lines log whose first record is its config (``{"lr": 0.1}``): the record was
    numbered step 0, every epoch moved one step later, and ``lr`` became a per-step column
    (the runs pooled as replicates). Only rows of per-step values are numbered; the config
    record gives its run its value, as a record without a step always does."""
    for lr in (0.1, 1.0):
        d = tmp_path / f"lr{lr}"
        d.mkdir()
        (d / "log.jsonl").write_text("\n".join(json.dumps(r) for r in [{"lr": lr},
                                                                         *_epochs()]) + "\n")
    out = cli(["check", tmp_path, "--step-from", "row", "--json", "-"])
    assert out.exit_code in (0, 1), out
    (study,) = json.loads(out.stdout)["studies"]
    assert study["axis"] == "lr"
    assert [r["t_grok"]["value"] for r in study["runs"]] == [GROK, GROK]


@pytest.mark.parametrize("shape", ["train_then_test", "long"])
def test_rows_that_are_no_shared_steps_are_refused(tmp_path: Path, shape: str) -> None:
    """Rows whose positions are not one step of every series: a JSON of a list of train
    records then a list of test records (numbered train first, test from step 40: t_grok 65
    instead of 25), and a long table (one row per step and metric: each metric on alternate
    steps). Refused, never numbered."""
    if shape == "train_then_test":
        p = tmp_path / "hist.json"
        h = _history()
        p.write_text(json.dumps({"train": [{"acc": a} for a in h["accuracy"]],
                                 "test": [{"acc": a} for a in h["val_accuracy"]]}))
    else:
        p = tmp_path / "long.csv"
        pd.DataFrame([{"metric": k, "value": r[v]} for r in _epochs()
                      for k, v in (("train_acc", "accuracy"), ("test_acc", "val_accuracy"))]
                     ).to_csv(p, index=False)
    expect_error(cli(["check", p, "--step-from", "row"]), "INVALID_OPTION")


def test_header_less_text_lines_numbered_and_run_from_path_one_run(tmp_path: Path) -> None:
    """The header-less text reader's refusal named ``--step-from row``, which it then refused
    (a table's option); a table's rows under ``--run-from path`` were numbered per value of
    its ``run`` column (the path's one run stepping back to 0)."""
    txt = tmp_path / "curve.txt"
    h = _history()
    txt.write_text("".join(f"{a} {v}\n" for a, v in zip(h["accuracy"], h["val_accuracy"])))
    _, message = expect_error(cli(["check", txt, "--columns", "train_acc,test_acc"]),
                              "MISSING_COLUMN")
    assert "--step-from row" in message
    assert _t_grok([txt, "--columns", "train_acc,test_acc", "--step-from", "row"]) == [GROK]
    p = tmp_path / "tagged.csv"
    pd.DataFrame([{"run": "ab"[e % 2], **r} for e, r in enumerate(_epochs())]
                 ).to_csv(p, index=False)
    assert _t_grok([p, "--step-from", "row", "--run-from", "path"]) == [GROK]


def test_a_folder_mixing_files_with_and_without_steps(tmp_path: Path) -> None:
    """Each file without a step column is numbered, each with one keeps its steps: one command
    reads the folder. A folder whose every file has steps is refused with the option (it
    would change nothing)."""
    pd.DataFrame(_history()).to_csv(tmp_path / "a.csv", index=False)
    pd.DataFrame({"epoch": range(0, 2 * EPOCHS, 2), **_history()}).to_csv(tmp_path / "b.csv",
                                                                            index=False)
    assert sorted(_t_grok([tmp_path, "--step-from", "row"])) == [GROK, 2 * GROK]
    (tmp_path / "a.csv").unlink()
    expect_error(cli(["check", tmp_path, "--step-from", "row"]), "INVALID_OPTION")


def test_a_table_of_one_row_per_run_is_not_offered_row_steps(tmp_path: Path) -> None:
    """A W&B runs-table export (one row per run, a ``Name`` column naming each; public log
    Bowen-n/GNN): the refusal offered ``--step-from row`` as if its rows were epochs. A table
    whose text column names every row is said to be a table of runs; a history still gets
    the offer."""
    p = tmp_path / "wandb_export.csv"
    pd.DataFrame({"Name": ["a_max", "a_mean", "b_max"], "hidden": [256, 256, 128],
                  "best_test_acc": [0.75, 0.76, 0.70]}).to_csv(p, index=False)
    _, message = expect_error(cli(["check", p]), "MISSING_COLUMN")
    assert "--step-from" not in message
