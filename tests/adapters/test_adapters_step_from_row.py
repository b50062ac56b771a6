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
