"""Generic tables: CSV, TSV, JSONL, Parquet; one file or a directory; --map, --run-from, --cond."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from grokaudit.adapters import detect_format, read_log
from grokaudit.errors import ErrorCode, LogFormatError
from grokaudit.schema import build_log_table
from helpers.tables import read_as_percent


def test_one_csv_with_run_column_round_trips(tmp_path: Path, sweep: pd.DataFrame, prov) -> None:
    p = tmp_path / "logs.csv"
    sweep.to_csv(p, index=False)
    assert detect_format(p) == "table"
    t = read_log(p)
    log = build_log_table(t, path=str(p))
    assert log.n_runs == 4
    df = t.to_pandas()
    assert set(df.columns) >= {"run", "step", "test_acc", "train_acc", "emb_erank", "wd", "seed"}
    ref = sweep.sort_values(["run", "step"]).reset_index(drop=True)
    np.testing.assert_array_equal(df["test_acc"].to_numpy(), ref["test_acc"].to_numpy())
    assert prov(t)["adapter"] == "table"
    assert prov(t)["findings"] == []


@pytest.mark.parametrize("suffix", [".jsonl", ".tsv", ".parquet"])
def test_directory_one_run_per_file_with_cond(tmp_path: Path, sweep: pd.DataFrame,
                                              suffix: str) -> None:
    # sweep/wd1.5_s0/metrics<suffix>, sweep/wd1.5_s1/metrics<suffix>, ...
    root = tmp_path / "sweep"
    for run, g in sweep.groupby("run"):
        d = root / str(run)
        d.mkdir(parents=True)
        g = g.drop(columns=["run", "wd", "seed"]).rename(columns={"test_acc": "val_acc"})
        f = d / f"metrics{suffix}"
        if suffix == ".jsonl":
            g.to_json(f, orient="records", lines=True)
        elif suffix == ".tsv":
            g.to_csv(f, sep="\t", index=False)
        else:
            g.to_parquet(f, index=False)
    t = read_log(root, mapping={"val_acc": "test_acc"}, run_from="path",
                 cond={"wd": r"wd([0-9.]+)", "seed": r"_s(\d+)"})
    df = t.to_pandas()
    assert sorted(df["run"].unique()) == sorted(sweep["run"].unique())
    per_run = df.groupby("run")[["wd", "seed"]].first()
    assert per_run.loc["wd1.5_s1", "wd"] == 1.5 and per_run.loc["wd1.5_s1", "seed"] == 1
    build_log_table(t)


def test_resumed_run_last_writer_wins(tmp_path: Path, codes, prov) -> None:
    # run.csv then run_resumed.csv in one folder, both with a `run` column: steps 60..100 twice
    a = pd.DataFrame({"run": "r", "step": np.arange(0, 101, 10), "test_acc": 0.1})
    b = pd.DataFrame({"run": "r", "step": np.arange(60, 201, 10), "test_acc": 0.9})
    a.to_csv(tmp_path / "a.csv", index=False)
    b.to_csv(tmp_path / "b.csv", index=False)
    t = read_log(tmp_path)
    df = t.to_pandas().set_index("step")
    assert df.loc[60, "test_acc"] == 0.9 and df.loc[50, "test_acc"] == 0.1
    assert len(df) == 21  # 0..200 by 10: no step lost, none doubled
    assert codes(t) == ["RESUMED_DUPLICATES"]
    assert prov(t)["findings"][0]["count"] == 5


def test_nan_and_sparse_rows_stay_sparse(tmp_path: Path) -> None:
    # accuracy every 10 steps, the metric every 20, one NaN accuracy
    df = pd.DataFrame({"step": np.arange(0, 100, 10), "test_acc": np.linspace(0, 1, 10)})
    df.loc[3, "test_acc"] = np.nan
    df["emb_erank"] = np.where(df["step"] % 20 == 0, 5.0, np.nan)
    p = tmp_path / "run1.csv"
    df.to_csv(p, index=False)
    out = read_log(p).to_pandas()
    assert len(out) == 10
    assert np.isnan(out["test_acc"].iloc[3])
    assert out["emb_erank"].isna().sum() == 5  # not interpolated


def test_percent_accuracy_kept_as_logged_and_read_as_percent(tmp_path: Path, prov) -> None:
    df = pd.DataFrame({"step": np.arange(50), "test_acc": np.linspace(0, 100, 50)})
    p = tmp_path / "r.csv"
    df.to_csv(p, index=False)
    t = read_log(p)
    assert t.column("test_acc").to_numpy().max() == pytest.approx(100.0)
    assert read_as_percent(t) == pytest.approx(1.0)


def test_many_points_read_in_full(tmp_path: Path) -> None:
    n = 150_000
    df = pd.DataFrame({"step": np.arange(n), "test_acc": np.random.default_rng(0).random(n)})
    p = tmp_path / "big.parquet"
    df.to_parquet(p)
    t = read_log(p)
    assert t.num_rows == n
    np.testing.assert_array_equal(t.column("test_acc").to_numpy(), df["test_acc"].to_numpy())


def test_epoch_step_unit_recorded(tmp_path: Path, prov) -> None:
    p = tmp_path / "r.csv"
    pd.DataFrame({"epoch": np.arange(5), "test_acc": 0.5}).to_csv(p, index=False)
    assert prov(read_log(p))["step_unit"] == "epoch"


@pytest.mark.parametrize("content,code", [
    (b"", ErrorCode.FILE_EMPTY),
    (b"a,b\n", ErrorCode.NO_ROWS),
    (b"step,loss\n1,2\n", ErrorCode.MISSING_COLUMN),
    (b"\x00\x01garbage", ErrorCode.FILE_UNREADABLE)])
def test_empty_or_wrong_file_names_the_file(tmp_path: Path, content: bytes,
                                            code: ErrorCode) -> None:
    p = tmp_path / "bad.csv"
    p.write_bytes(content)
    with pytest.raises(LogFormatError) as exc:
        read_log(p)
    assert exc.value.path is not None and "bad.csv" in exc.value.path
    assert exc.value.code is code


def test_truncated_parquet_is_an_error(tmp_path: Path, sweep: pd.DataFrame) -> None:
    p = tmp_path / "logs.parquet"
    sweep.to_parquet(p)
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
    with pytest.raises(LogFormatError) as exc:
        read_log(p)
    assert exc.value.code is ErrorCode.FILE_UNREADABLE


def test_csv_cut_mid_line_is_reported(tmp_path: Path, codes, prov) -> None:
    p = tmp_path / "run.csv"
    pd.DataFrame({"step": np.arange(10), "test_acc": np.full(10, 0.25)}).to_csv(p, index=False)
    data = p.read_bytes()
    p.write_bytes(data[:-2])  # "9,0.25\n" -> "9,0.2"
    t = read_log(p)
    assert codes(t) == ["SOURCE_TRUNCATED"]
    assert prov(t)["findings"][0]["offset"] == data[:-1].rfind(b"\n") + 1


def _run_folders(root: Path, sweep: pd.DataFrame) -> Path:
    for run, g in sweep.groupby("run"):
        (root / str(run)).mkdir(parents=True)
        g.drop(columns=["run", "wd", "seed"]).to_csv(root / str(run) / "metrics.csv",
                                                     index=False)
    return root


def test_a_cond_that_matches_no_run_is_refused(tmp_path: Path, sweep: pd.DataFrame) -> None:
    # a found defect: a typo'd --cond (WD for wd) matched nothing, the sweep's arms were
    # pooled as replicates and check exited 0 where the right pattern exits 1
    from grokaudit.errors import ConfigError

    root = _run_folders(tmp_path / "sweep", sweep)
    with pytest.raises(ConfigError) as exc:
        read_log(root, run_from="path", cond={"wd": r"WD([0-9.]+)"})
    assert exc.value.code is ErrorCode.INVALID_OPTION and exc.value.option == "--cond"
    # one input among several (merged by run): its runs may take the condition elsewhere,
    # but the pattern must match some run of some input
    t = read_log(root, run_from="path", cond={"wd": r"WD([0-9.]+)"}, partial=True)
    assert "wd" not in t.column_names
    from grokaudit.loader import read_any

    other = _run_folders(tmp_path / "more", sweep.assign(run="x" + sweep["run"]))
    with pytest.raises(ConfigError) as exc:
        read_any([root, other], run_from="path", cond={"wd": r"WD([0-9.]+)"})
    assert exc.value.code is ErrorCode.INVALID_OPTION and exc.value.option == "--cond"
    both = read_any([root, other], run_from="path", cond={"wd": r"^wd([0-9.]+)"})
    assert both.column("wd").null_count == both.num_rows // 2  # the x… runs miss: a note


def test_a_map_from_a_column_the_log_lacks_is_noted(tmp_path: Path, sweep: pd.DataFrame
                                                    ) -> None:
    import json

    from grokaudit.schema import PROVENANCE_KEY

    root = _run_folders(tmp_path / "sweep", sweep)
    t = read_log(root, run_from="path", mapping={"nope": "test_acc"},
                 cond={"wd": r"wd([0-9.]+)"})
    prov = json.loads(t.schema.metadata[PROVENANCE_KEY])
    assert [n for n in prov.get("notes", []) if "--map" in n and "'nope'" in n]
    # a source the log holds is renamed, with no note
    t = read_log(root, run_from="path", mapping={"test_acc": "val_acc"},
                 cond={"wd": r"wd([0-9.]+)"})
    prov = json.loads(t.schema.metadata[PROVENANCE_KEY])
    assert not [n for n in prov.get("notes", []) if "--map" in n]


def _keras_csvlogger(path: Path, epochs: int = 30, grok: int = 20) -> Path:
    """What Keras's ``CSVLogger("training.log")`` writes: csv.DictWriter rows, a header of the
    logs' keys (training metrics bare, held-out ones prefixed ``val_``)."""
    import csv

    keys = ["epoch", "accuracy", "loss", "val_accuracy", "val_loss"]
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        for e in range(epochs):
            w.writerow({"epoch": e, "accuracy": min(1.0, 0.5 + e / 20), "loss": 1 / (e + 1),
                        "val_accuracy": 0.1 if e < grok else 0.97, "val_loss": 2 / (e + 1)})
    return path


def test_a_keras_csvlogger_log_is_a_table_and_its_bare_accuracy_the_train_one(
        tmp_path: Path) -> None:
    """Keras's CSVLogger writes ``training.log``: a CSV with a header. It was refused
    (UNKNOWN_FORMAT, and --format table refused the suffix); and its bare ``accuracy`` — the
    training accuracy beside ``val_accuracy`` — was offered as the test accuracy, train_acc
    left missing."""
    log = _keras_csvlogger(tmp_path / "training.log")
    assert detect_format(log) == "table"
    df = read_log(log).to_pandas()
    assert len(df) == 30 and df["step"].tolist() == list(range(30))
    np.testing.assert_array_equal(df["train_acc"], [min(1.0, 0.5 + e / 20) for e in range(30)])
    np.testing.assert_array_equal(df["test_acc"], [0.1] * 20 + [0.97] * 10)
    # a free-text log and a header-less numeric file are no such table
    (tmp_path / "run.log").write_text("Epoch 1/35, Train Loss: 1.2, Test Acc: 59.86%\n"
                                      "Epoch 2/35, Train Loss: 1.1, Test Acc: 61.02%\n")
    (tmp_path / "numbers.txt").write_text("0 0.5 0.1\n1 0.6 0.2\n")
    assert detect_format(tmp_path / "numbers.txt") != "table"
    with pytest.raises(LogFormatError) as exc:
        read_log(tmp_path / "run.log")
    assert exc.value.code is ErrorCode.UNKNOWN_FORMAT


def test_mapping_a_keras_val_accuracy_to_test_acc_keeps_its_bare_twin_the_train_one(
        tmp_path: Path) -> None:
    """``--map val_accuracy=test_acc`` (what inspect's note offers, made explicit) renamed the
    twin before the bare ``accuracy`` was looked at: no train accuracy was read, and t_mem
    went missing. The twin is found under the name it was logged with."""
    log = _keras_csvlogger(tmp_path / "training.log")
    for mapping in ({"val_accuracy": "test_acc"}, None):
        df = read_log(log, mapping=mapping).to_pandas()
        np.testing.assert_array_equal(df["train_acc"],
                                      [min(1.0, 0.5 + e / 20) for e in range(30)])
        np.testing.assert_array_equal(df["test_acc"], [0.1] * 20 + [0.97] * 10)
        assert "accuracy" not in df


def test_a_folder_of_keras_runs_is_read_and_a_log_beside_other_tables_only_named(
        tmp_path: Path, prov) -> None:
    """A sweep of Keras runs, one ``training.log`` per subfolder, was UNKNOWN_FORMAT (folders
    listed tables by suffix): each run is read, named by its folder. Beside ``.csv`` logs a
    ``.log`` table stays a note (it would be a second logger's run); beside TensorBoard events
    the events are read."""
    for lr, epochs, grok in (("0.1", 30, 12), ("0.01", 25, 20)):
        (tmp_path / "sweep" / f"lr{lr}").mkdir(parents=True)
        _keras_csvlogger(tmp_path / "sweep" / f"lr{lr}" / "training.log", epochs, grok)
    (tmp_path / "sweep" / "lr0.1" / "console.txt").write_text("Epoch 1/30 - loss: 0.9\n")
    assert detect_format(tmp_path / "sweep") == "table"
    t = read_log(tmp_path / "sweep")
    df = t.to_pandas()
    assert sorted(set(df.run)) == ["lr0.01", "lr0.1"]
    assert len(df) == 55 and (df.groupby("run").size() == pd.Series({"lr0.01": 25,
                                                                      "lr0.1": 30})).all()
    np.testing.assert_array_equal(df[df.run == "lr0.1"]["train_acc"],
                                  [min(1.0, 0.5 + e / 20) for e in range(30)])
    # the free-text console log is named, not read
    assert any("console.txt" in n for n in prov(t).get("notes", []))
    # beside a CSV log, the .log table is named in the notes and not read
    other = tmp_path / "csvs"
    other.mkdir()
    pd.DataFrame({"run": "a", "step": range(5), "test_acc": 0.5}).to_csv(other / "a.csv",
                                                                         index=False)
    _keras_csvlogger(other / "training.log")
    t = read_log(other)
    assert set(t.to_pandas().run) == {"a"}
    assert any("training.log" in n for n in prov(t).get("notes", []))


def test_keras_logs_read_whatever_keras_wrote_and_a_cut_one_is_flagged(tmp_path: Path,
                                                                        prov) -> None:
    """Keras 3 writes ``NA`` for the validation columns of epochs it did not validate
    (``validation_freq=2``): the first data row was no number, and the file was refused
    (UNKNOWN_FORMAT). A BOM before the header hid it too. A ``.log`` whose last line lost its
    newline (a write cut short) was read without the SOURCE_TRUNCATED the same ``.csv`` gets."""
    rows = ["epoch,accuracy,loss,val_accuracy,val_loss"]
    rows += [f"{e},{min(1.0, 0.5 + e / 20):.4f},{1 / (e + 1):.4f},"
             + (f"{0.1 if e < 20 else 0.97:.4f},0.5" if e % 2 else "NA,NA") for e in range(30)]
    text = "\n".join(rows) + "\n"
    (tmp_path / "freq2.log").write_text(text)
    (tmp_path / "bom.log").write_text("\ufeff" + text, encoding="utf-8")
    for name in ("freq2.log", "bom.log"):
        df = read_log(tmp_path / name).to_pandas()
        assert len(df) == 30 and df["test_acc"].notna().sum() == 15, name
        assert df["train_acc"].notna().sum() == 30, name
    (tmp_path / "cut.log").write_text(text.rstrip("\n")[:-3])
    (tmp_path / "cut.csv").write_text(text.rstrip("\n")[:-3])
    for name in ("cut.log", "cut.csv"):
        codes = [f["code"] for f in prov(read_log(tmp_path / name))["findings"]]
        assert "SOURCE_TRUNCATED" in codes, (name, codes)


@pytest.mark.parametrize(("columns", "train"), [
    (["accuracy", "top_k_categorical_accuracy", "val_accuracy",
      "val_top_k_categorical_accuracy"], "accuracy"),  # two twins: the plain name
    (["test_acc", "acc"], None),  # no val_ twin: acc is not read as the train accuracy
])
def test_which_bare_accuracy_is_the_train_one(tmp_path: Path, columns: list[str],
                                              train: str | None, prov) -> None:
    df = pd.DataFrame({"step": range(20), **{c: np.linspace(0.1, 1.0, 20) for c in columns}})
    df.to_csv(tmp_path / "log.csv", index=False)
    chosen = prov(read_log(tmp_path / "log.csv")).get("accuracy_columns") or {}
    assert (chosen.get("train_acc") or {}).get("column") == train, chosen


def test_inspect_offers_no_step_counter_as_the_metric(tmp_path: Path) -> None:
    """A W&B history with ``_step`` and an ``epoch`` column beside it: inspect proposed
    ``--metric epoch`` (public log 49-22/ANN). A column with a step's name is a second step
    counter, not a representation metric; a loss still is offered."""
    import json

    from click.testing import CliRunner
    from grokaudit.cli import cli

    p = tmp_path / "history.csv"
    pd.DataFrame({"_step": range(0, 100, 10), "epoch": range(10), "val_acc": 0.5, "acc": 0.9,
                  "loss": np.linspace(2, 1, 10)}).to_csv(p, index=False)
    r = CliRunner().invoke(cli, ["inspect", str(p), "--json", "-"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    flags = [x["flag"] for x in doc["flags"]]
    assert "--metric loss" in flags and "--metric epoch" not in flags


def test_a_top_k_accuracy_written_on_its_word_is_an_accuracy(tmp_path: Path) -> None:
    """``acc1`` (top-1) was no accuracy name: a DARTS log whose only accuracy is ``acc1`` was
    refused for a missing test_acc (public log SatriaPriambada/darts). The top-k is read as a
    word: top-1 says nothing more than ``accuracy``, any other k ranks after it."""
    p = tmp_path / "acc_loss_log.csv"
    pd.DataFrame({"epoch": range(5), "acc5": [0.5, 0.6, 0.7, 0.8, 0.9],
                  "acc1": [0.1, 0.2, 0.3, 0.4, 0.5], "loss": 1.0}).to_csv(p, index=False)
    df = read_log(p).to_pandas()
    np.testing.assert_array_equal(df["test_acc"], [0.1, 0.2, 0.3, 0.4, 0.5])
    assert "acc5" in df
    q = tmp_path / "split.csv"
    pd.DataFrame({"epoch": range(3), "train_acc1": [0.5, 0.9, 1.0], "val_acc1": [0.1, 0.2, 0.9],
                  "val_acc5": [0.4, 0.6, 1.0]}).to_csv(q, index=False)
    df = read_log(q).to_pandas()
    np.testing.assert_array_equal(df["test_acc"], [0.1, 0.2, 0.9])
    np.testing.assert_array_equal(df["train_acc"], [0.5, 0.9, 1.0])


def _lightning_metrics(path: Path, epochs: int = 8, per_epoch: int = 3) -> Path:
    """A Lightning ``CSVLogger`` ``metrics.csv`` (its writer is a ``csv.DictWriter`` of every
    key seen): per-step train rows (``on_step``), per-epoch rows (``on_epoch`` aggregates and
    validation), and the final ``trainer.test`` row, each key in the rows it was logged in."""
    import csv

    keys = ["epoch", "step", "train_acc_step", "train_loss_step", "train_acc_epoch",
            "train_loss_epoch", "val_acc", "val_loss", "test_acc", "test_loss"]
    rows: list[dict[str, object]] = []
    step = 0
    for e in range(epochs):
        for _ in range(per_epoch):
            step += 1
            rows.append({"epoch": e, "step": step, "train_acc_step": min(1.0, 0.3 + 0.1 * e),
                         "train_loss_step": 1.0 / (e + 1)})
        rows.append({"epoch": e, "step": step, "val_acc": 0.1 if e < 5 else 0.95,
                     "val_loss": 2.0 / (e + 1)})
        rows.append({"epoch": e, "step": step, "train_acc_epoch": min(1.0, 0.3 + 0.1 * e),
                     "train_loss_epoch": 1.0 / (e + 1)})
    rows.append({"epoch": epochs - 1, "step": step + 1, "test_acc": 0.94, "test_loss": 0.25})
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    return path


def test_a_lightning_final_test_row_and_its_step_and_epoch_accuracies(tmp_path: Path) -> None:
    """Found on public Lightning logs (MostafaKhaled2017/fashion-mnist,
    prithsha/erav2-session13): ``test_loss``, logged once by ``trainer.test``, was written in
    every row of its run and read back as a 76-point series (its name is a known series), and
    inspect offered it as ``--metric``, which check then refused; ``train_acc_step`` and
    ``train_acc_epoch`` tied, so no train accuracy was read (t_mem missing, no note). The
    final test loss is a result of the run (an outcome); the epoch aggregate is the train
    accuracy; no accuracy or outcome is offered as the representation metric."""
    import json

    from click.testing import CliRunner
    from grokaudit.cli import cli
    from grokaudit.schema import build_log_table

    p = _lightning_metrics(tmp_path / "metrics.csv", per_epoch=2)
    log = build_log_table(read_log(p))
    assert "test_loss" not in log.series and "test_loss" in log.summary.outcomes
    assert np.count_nonzero(~np.isnan(log.train_acc)) == 8  # the 8 epoch aggregates
    r = CliRunner().invoke(cli, ["inspect", str(p), "--json", "-"])
    assert r.exit_code == 0, r.stderr
    flags = [x["flag"] for x in json.loads(r.stdout)["flags"]]
    assert "--metric train_loss_epoch" in flags
    assert not [f for f in flags if f.startswith("--metric ") and ("acc" in f or "test_" in f)]


def test_a_one_row_run_beside_others_keeps_its_values_as_values(tmp_path: Path) -> None:
    """A Lightning run cut after its first validation (one row) beside a full run: its
    ``val_loss``, logged once, was read as a result of the run (an outcome), which clashed
    with the other run's per-step ``val_loss`` and was renamed ``val_loss_cond`` (public log
    ayman-fatich/grok_in_context). A value is a result when it is logged once in a run that
    logged other rows; a one-row run is a short run. And the percent finding of a train
    accuracy read as percent beside a percent validation accuracy no longer says it "never"
    passed 1.5 when it did (max 28.1, one value)."""
    from grokaudit.reasons import Reason
    from grokaudit.schema import build_log_table

    for v, rows in (("version_0", [{"epoch": 0, "step": 9, "val_accuracy": 40.3,
                                    "val_loss": 3.17}]),
                    ("version_1", [{"epoch": e, "step": 9 + 10 * e,
                                    "val_accuracy": 2.9 + 10 * e, "val_loss": 3.2 - 0.1 * e,
                                    "train_accuracy": 28.125 if e == 3 else 0.5}
                                   for e in range(8)])):
        (tmp_path / v).mkdir()
        pd.DataFrame(rows).to_csv(tmp_path / v / "metrics.csv", index=False)
    t = read_log(tmp_path)
    assert "val_loss_cond" not in t.column_names
    df = t.to_pandas()
    assert df.loc[df.run == "version_0", "val_loss"].tolist() == [3.17]
    import grokaudit

    res = grokaudit.audit_table(t)
    percent = [f for f in res.findings if f.code is Reason.ACCURACY_IN_PERCENT
               and f.evidence["column"] == "train_acc"]
    assert percent and percent[0].evidence["max"] > 1.5
    assert "never above" not in percent[0].message
    assert build_log_table(t).summary.runs_too_short == ("version_0",)


def test_an_empty_lightning_hparams_file_is_an_empty_config(tmp_path: Path, prov) -> None:
    """Lightning writes ``{}`` (``yaml.dump({})``) to ``hparams.yaml`` when a module has no
    hyperparameters; the file was noted as unreadable ("line 1 is not 'key: value'")
    (public log MostafaKhaled2017/fashion-mnist). It is an empty mapping: no values, no note."""
    run = tmp_path / "version_0"
    run.mkdir()
    (run / "hparams.yaml").write_text("{}\n")
    _lightning_metrics(run / "metrics.csv")
    t = read_log(tmp_path)
    assert not [n for n in prov(t).get("notes", []) if "hparams" in n]
    assert str(run / "hparams.yaml") in prov(t)["config_files"]


def test_a_keras_log_of_a_run_that_never_finished_an_epoch(tmp_path: Path, prov) -> None:
    """Keras's CSVLogger writes its header when the first epoch ends... or its header alone, for
    a run stopped before: alone it was UNKNOWN_FORMAT; beside other runs, its note said to give
    it as its own path to read it as a table, which then failed. Alone it is NO_ROWS; in a
    folder its note says it holds no rows."""
    from helpers.hostile import cli, expect_error

    for run in ("a", "b"):
        (tmp_path / run).mkdir()
    _keras_csvlogger(tmp_path / "a" / "training.log")
    (tmp_path / "b" / "training.log").write_text("epoch,accuracy,loss,val_accuracy,val_loss\n")
    expect_error(cli(["check", tmp_path / "b" / "training.log"]), "NO_ROWS")
    t = read_log(tmp_path)
    assert set(t.to_pandas().run) == {"a"}
    assert "no rows" in prov(t)["files_set_aside"]["b/training.log"]


def test_lightning_training_loop_and_test_loop_accuracies_are_no_test_curve(
        tmp_path: Path) -> None:
    """Public Lightning logs: ``self.log("acc", acc, on_epoch=True)`` in ``training_step``
    writes ``acc_step`` (one value per batch, which only the training loop writes) and
    ``acc_epoch``; the bare ``acc_step`` was read as the TEST accuracy and the run passed as
    fully generalized, exit 0 (Awritrojit/AIOPS). ``trainer.test`` writes ``test_acc_step``
    with the test batch's index as its step, restarting at 0 after training; it was read as
    the test curve, merged onto the training steps (NicoGrassetto/nsMNIST). The first pair is
    the train accuracy; the second is no curve: the test accuracy is then the epoch value."""
    import csv

    p = tmp_path / "metrics.csv"
    with p.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["acc_epoch", "acc_step", "epoch", "step",
                                           "test_acc_step", "test_acc_epoch"])
        w.writeheader()
        step = 0
        for e in range(5):
            for _ in range(4):
                step += 10
                w.writerow({"acc_step": 0.95, "epoch": e, "step": step})
            w.writerow({"acc_epoch": 0.95, "epoch": e, "step": step})
        for b in range(6):  # the test loop: its batch index as the step
            w.writerow({"test_acc_step": 0.9 if b % 2 else 0.1, "step": b})
        w.writerow({"test_acc_epoch": 0.5, "epoch": 4, "step": step + 1})
    df = read_log(p).to_pandas()
    assert df["train_acc"].max() == 0.95 and "acc_step" not in df
    # the test accuracy, if any, is the one epoch value, never the batches nor the train loop
    tested = df["test_acc"].dropna()
    assert tested.tolist() == [0.5]


def test_a_deit_style_log_txt_of_json_lines_is_read(tmp_path: Path) -> None:
    """DeiT, MAE and ConvNeXt write ``log.txt``: ``f.write(json.dumps(log_stats) + "\\n")``
    each epoch. It was UNKNOWN_FORMAT, and no ``--format`` read it (public log samxu29/mae); the
    same bytes named ``.jsonl`` read. A ``.txt``/``.log`` file whose first lines are JSON
    objects is read as JSON lines, alone or one per run folder."""
    import json

    for run, grok in (("lr1e-3", 9), ("lr1e-4", 14)):
        d = tmp_path / run
        d.mkdir()
        with (d / "log.txt").open("w") as f:
            for e in range(20):
                f.write(json.dumps({"train_lr": 0.001, "train_loss": 1.0 / (e + 1),
                                    "test_loss": 2.0 / (e + 1),
                                    "test_acc1": 91.0 if e >= grok else 40.0 + e,
                                    "test_acc5": 99.0, "epoch": e,
                                    "n_parameters": 5717416}) + "\n")
    df = read_log(tmp_path / "lr1e-3" / "log.txt").to_pandas()
    assert df["step"].tolist() == list(range(20)) and df["test_acc"].iloc[9] == 91.0
    df = read_log(tmp_path).to_pandas()
    assert sorted(set(df.run)) == ["lr1e-3", "lr1e-4"]
    assert df.groupby("run")["test_acc"].apply(lambda a: int((a >= 90).values.argmax())
                                               ).to_dict() == {"lr1e-3": 9, "lr1e-4": 14}


def _mmengine_scalars(path: Path, *, iters_per_epoch: int = 7, epochs: int = 12,
                      val_step_is_epoch: bool = True) -> None:
    """MMEngine's ``LocalVisBackend`` ``scalars.json`` of an epoch-based loop: JSON lines
    under a ``.json`` name; a train row per logging interval (``epoch``, ``iter``, ``step`` =
    the iteration), a validation row after each epoch without ``epoch`` or ``iter``, whose
    ``step`` MMEngine writes as the epoch (``val_step_is_epoch``; False: the iteration)."""
    import json

    with path.open("w") as f:
        for e in range(1, epochs + 1):
            for i in range((e - 1) * iters_per_epoch + 1, e * iters_per_epoch + 1):
                if i % 5 == 0:
                    f.write(json.dumps({"lr": 0.01, "loss": 2.0 / i, "data_time": 0.1,
                                        "epoch": e, "iter": i, "step": i}) + "\n")
            f.write(json.dumps({"accuracy/top1": 95.0 if e >= 6 else 10.0 * e,
                                "data_time": 0.2,
                                "step": e if val_step_is_epoch else e * iters_per_epoch})
                    + "\n")


def test_json_lines_under_a_json_name_are_read(tmp_path: Path) -> None:
    """MMEngine (``scalars.json``), mmcv (``*.log.json``) and detectron2 (``metrics.json``)
    write JSON lines under a ``.json`` name. They were FILE_UNREADABLE ("not JSON (Extra
    data…); fix the file"), and no option read them (public logs, hunt 9)."""
    p = tmp_path / "scalars.json"
    _mmengine_scalars(p, val_step_is_epoch=False)
    df = read_log(p).to_pandas()
    assert len(df) == len({*df["step"]}) and df["test_acc"].notna().sum() == 12
    assert df.loc[df["test_acc"].notna(), "step"].tolist() == [7 * e for e in range(1, 13)]
    # a JSON document on several lines is still one document (pandas' records layout)
    doc = tmp_path / "doc.json"
    doc.write_text('[\n{"step": 1, "test_acc": 0.5},\n{"step": 2, "test_acc": 0.9}\n]\n')
    assert read_log(doc).to_pandas()["step"].tolist() == [1, 2]


def test_validation_rows_stepped_by_epoch_among_iterations_are_refused(tmp_path: Path) -> None:
    """MMEngine's epoch-based loop steps a validation row by its epoch and a training row by
    its iteration: validation at epoch 6 landed on step 6, among iterations 5…84, and t_grok
    was read in epochs against a lag in iterations (public MMEngine and MMPose logs)."""
    p = tmp_path / "scalars.json"
    _mmengine_scalars(p)
    with pytest.raises(LogFormatError) as e:
        read_log(p)
    assert e.value.code is ErrorCode.STEP_UNITS_MIXED and e.value.column == "step"


def test_validation_rows_stepped_by_iteration_are_read(tmp_path: Path) -> None:
    # the same log with the validation rows on the iteration clock: one unit, read
    p = tmp_path / "scalars.json"
    _mmengine_scalars(p, val_step_is_epoch=False)
    df = read_log(p).to_pandas()
    assert df["test_acc"].notna().sum() == 12 and df["step"].max() == 84


def test_a_split_column_is_not_offered_as_the_runs(tmp_path: Path) -> None:
    """mmcv 1.x ``*.log.json``: ``{"mode": "train", ...}`` and ``{"mode": "val", ...}`` rows of
    one run. The refusal offered ``--run-from mode``, which reads train and val as two runs
    (and, with ``--on-duplicate``, kept 250 of 5 000 records)."""
    import json

    p = tmp_path / "20220925_081819.log.json"
    with p.open("w") as f:
        for e in range(1, 5):
            for i in (10, 20, 30):
                f.write(json.dumps({"mode": "train", "epoch": e, "iter": i, "loss": 1.0 / e})
                        + "\n")
            f.write(json.dumps({"mode": "val", "epoch": e, "iter": 625,
                                "accuracy_top-1": 20.0 * e}) + "\n")
    with pytest.raises(LogFormatError) as e:
        read_log(p)
    assert e.value.code is ErrorCode.NOT_CONSTANT_IN_RUN and e.value.column == "mode"
    assert "--run-from mode" not in str(e.value)  # the fix offered was that


def test_sacred_metrics_json_series_of_steps_and_values_are_read(tmp_path: Path) -> None:
    """Sacred's ``FileStorageObserver`` writes ``<run>/metrics.json`` as ``{name: {"steps":
    [...], "values": [...], "timestamps": [...]}}`` beside ``config.json``. It was refused with
    ``--run-from training.loss.timestamps`` offered, which made one run per point (public
    Sacred runs, hunt 9). Each series keeps its own steps; the timestamps are named, not read."""
    import json

    for run, grok, lr in (("1", 40, 0.001), ("2", 70, 0.01)):
        d = tmp_path / run
        d.mkdir()
        acc_steps = list(range(0, 100, 10))
        loss_steps = list(range(100))
        (d / "metrics.json").write_text(json.dumps({
            "training.loss": {"steps": loss_steps, "values": [1.0 / (s + 1) for s in loss_steps],
                              "timestamps": [f"2024-02-08T23:02:{s % 60:02d}.0"
                                             for s in loss_steps]},
            "test.accuracy": {"steps": acc_steps,
                              "values": [0.95 if s >= grok else 0.1 for s in acc_steps],
                              "timestamps": ["2024-02-08T23:02:17.0"] * len(acc_steps)},
            "train.accuracy": {"steps": acc_steps, "values": [1.0] * len(acc_steps),
                               "timestamps": ["2024-02-08T23:02:17.0"] * len(acc_steps)}},
            indent=2))
        (d / "config.json").write_text(json.dumps({"lr": lr, "seed": 0}))
    t = read_log(tmp_path)
    df = t.to_pandas()
    assert sorted(set(df.run)) == ["1", "2"] and "training.loss" in df
    one = df[df.run == "1"].set_index("step")
    assert len(one) == 100 and one["training.loss"].notna().sum() == 100
    assert one["test_acc"].dropna().index.tolist() == list(range(0, 100, 10))
    assert one.loc[40, "test_acc"] == 0.95 and one.loc[30, "test_acc"] == 0.1
    assert set(df.loc[df.run == "2", "lr"]) == {0.01}
    assert not any("timestamps" in c for c in df.columns)


def test_a_sacred_series_whose_steps_and_values_differ_in_length_is_refused(
        tmp_path: Path) -> None:
    import json

    p = tmp_path / "metrics.json"
    p.write_text(json.dumps({"test.accuracy": {"steps": [0, 1, 2], "values": [0.1, 0.2]}}))
    with pytest.raises(LogFormatError) as e:
        read_log(p)
    assert e.value.code is ErrorCode.FILE_UNREADABLE and e.value.column == "test.accuracy"


@pytest.mark.parametrize(("series", "code"), [
    # log_scalar without step=: each series counts its own calls; an accuracy per epoch and a
    # loss per iteration would share one axis
    ({"test.accuracy": list(range(60)), "train.loss": list(range(3000))},
     ErrorCode.STEP_UNITS_MIXED),
    ({"test.accuracy": [0, 10, None, 30]}, ErrorCode.NON_INTEGER_STEP),
    ({"test.accuracy": [0, 10, 10, 30]}, ErrorCode.DUPLICATE_ROWS),
])
def test_sacred_series_that_one_axis_cannot_hold_are_refused(tmp_path: Path, series,
                                                              code) -> None:
    import json

    doc = {n: {"steps": st, "values": [0.1 * (k % 7) for k in range(len(st))]}
           for n, st in series.items()}
    p = tmp_path / "metrics.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(LogFormatError) as e:
        read_log(p)
    assert e.value.code is code


def test_sacred_series_on_one_counter_of_equal_length_are_read(tmp_path: Path) -> None:
    import json

    doc = {n: {"steps": list(range(20)), "values": [k / 20 for k in range(20)]}
           for n in ("test.accuracy", "train.accuracy")}
    p = tmp_path / "metrics.json"
    p.write_text(json.dumps(doc))
    df = read_log(p).to_pandas()
    assert df["step"].tolist() == list(range(20)) and df["test_acc"].notna().all()


def test_a_text_column_different_in_every_row_is_not_offered_as_the_runs(
        tmp_path: Path) -> None:
    # --run-from on a per-row text (a time, a message) would make one run of each row
    p = tmp_path / "log.csv"
    pd.DataFrame({"step": range(10), "test_acc": np.linspace(0.1, 1.0, 10),
                  "logged_at": [f"2024-02-08T23:02:{s:02d}" for s in range(10)]}
                 ).to_csv(p, index=False)
    with pytest.raises(LogFormatError) as e:
        read_log(p)
    assert e.value.code is ErrorCode.NOT_CONSTANT_IN_RUN and e.value.column == "logged_at"
    assert "--run-from" not in str(e.value)
    # a text that names a few groups of rows is still offered as the runs' names
    q = tmp_path / "two.csv"
    pd.DataFrame({"step": range(10), "test_acc": np.linspace(0.1, 1.0, 10),
                  "name": ["a"] * 5 + ["b"] * 5}).to_csv(q, index=False)
    with pytest.raises(LogFormatError) as e:
        read_log(q)
    assert "--run-from name" in str(e.value)


def test_a_json_of_results_beside_a_log_is_not_said_to_have_no_log(tmp_path: Path,
                                                                    prov) -> None:
    """A run folder's ``events.json`` (scalars: the run's own event steps) beside its log is
    not its config (the name is no config file's), and was noted as a config file "with no
    log beside or below" it (TransGrokking, hunt 9)."""
    import json

    run = tmp_path / "run"
    run.mkdir()
    pd.DataFrame({"step": range(10), "test_acc": np.linspace(0.1, 1.0, 10)}).to_csv(
        run / "accuracy_curve.csv", index=False)
    (run / "events.json").write_text(json.dumps({"run_id": "x", "t_grok": 7}))
    (tmp_path / "orphan").mkdir()
    (tmp_path / "orphan" / "config.json").write_text(json.dumps({"lr": 0.1}))
    notes = prov(read_log(tmp_path)).get("notes", [])
    beside = [n for n in notes if "'events.json'" in n]
    assert len(beside) == 1 and "no log beside" not in beside[0]
    assert [n for n in notes if "'config.json'" in n and "no log beside" in n]


def test_run_ids_that_tile_the_steps_are_named_as_pieces_of_one_run(tmp_path: Path,
                                                                     codes) -> None:
    """TransGrokking's ``function_metrics.csv``: a ``run_id`` that changes at each resume
    (steps 0–5000, 5050–20000, 20050–50000). Read with ``--run-from run_id`` (the fix the
    refusal offered), the pieces were pooled as three replicates: one never grokked, one
    started after the grok (public log, hunt 10). Replicates, which share their steps, are
    never named."""
    steps = np.arange(0, 50_001, 50)
    piece = np.where(steps <= 5000, "a", np.where(steps <= 20_000, "b", "c"))
    df = pd.DataFrame({"run_id": piece, "step": steps,
                       "test_acc": np.where(steps >= 6300, 0.99, 0.01),
                       "train_acc": np.where(steps >= 100, 1.0, 0.1)})
    p = tmp_path / "function_metrics.csv"
    df.to_csv(p, index=False)
    t = read_log(p, run_from="run_id")
    assert codes(t) == ["RUN_SEGMENTS"]
    # three seeds of one setting, each over the whole axis: replicates, not pieces
    seeds = pd.concat([df.drop(columns="run_id").assign(run_id=f"s{k}") for k in range(3)])
    q = tmp_path / "seeds.csv"
    seeds.to_csv(q, index=False)
    assert codes(read_log(q, run_from="run_id")) == []
    # pieces with a gap of many cadences between them are not one axis tiled
    gap = df[(df.step <= 5000) | (df.step >= 8000)]
    r = tmp_path / "gap.csv"
    gap.to_csv(r, index=False)
    assert codes(read_log(r, run_from="run_id")) == []


def test_a_column_naming_runs_is_offered_before_a_status_column(tmp_path: Path) -> None:
    """TransGrokking's ``function_metrics.csv`` holds a text ``run_id`` and, before it, a
    status column that changes (``not_applicable``, ``verified``): the status was refused
    first and offered as ``--run-from``; with ``--run-from run_id`` given, the status was
    offered again as a second ``--run-from`` (public log, hunt 10)."""
    p = tmp_path / "function_metrics.csv"
    pd.DataFrame({"status": ["not_applicable", "verified"] * 5, "step": range(10),
                  "test_acc": np.linspace(0.1, 1.0, 10),
                  "run_id": ["a"] * 5 + ["b"] * 5}).to_csv(p, index=False)
    with pytest.raises(LogFormatError) as e:
        read_log(p)
    assert e.value.code is ErrorCode.MISSING_COLUMN and e.value.column == "run_id"
    with pytest.raises(LogFormatError) as e:
        read_log(p, run_from="run_id")
    assert e.value.code is ErrorCode.NOT_CONSTANT_IN_RUN and e.value.column == "status"
    assert "--run-from status" not in str(e.value)


def test_a_resume_that_overlaps_the_crashed_tail_is_named_as_pieces(tmp_path: Path,
                                                                    codes) -> None:
    # the new run resumes from the checkpoint at 5000, after the crashed one logged to 5300
    steps_a, steps_b = np.arange(0, 5301, 50), np.arange(5000, 20_001, 50)
    df = pd.DataFrame({"run_id": ["a"] * steps_a.size + ["b"] * steps_b.size,
                       "step": np.r_[steps_a, steps_b],
                       "test_acc": np.r_[np.full(steps_a.size, 0.1),
                                         np.where(steps_b >= 6300, 0.99, 0.1)]})
    p = tmp_path / "resumed.csv"
    df.to_csv(p, index=False)
    assert codes(read_log(p, run_from="run_id")) == ["RUN_SEGMENTS"]
    # two runs that start together (26 and 46) and overlap to the end are no pieces (public
    # log tnediserp/MIML-grokking: two arms whose setting is in their names)
    s1, s2 = np.arange(26, 99_100, 50), np.arange(46, 99_800, 50)
    q = tmp_path / "arms.csv"
    pd.DataFrame({"run_id": ["p151"] * s1.size + ["p199"] * s2.size, "step": np.r_[s1, s2],
                  "test_acc": 0.5}).to_csv(q, index=False)
    assert codes(read_log(q, run_from="run_id")) == []


def test_a_categorical_run_name_column_is_read(tmp_path: Path) -> None:
    """A pandas ``category`` column named like a run id, written to Parquet as a dictionary,
    crashed the run-name check (Arrow counts no distinct values of a dictionary)."""
    p = tmp_path / "log.parquet"
    pd.DataFrame({"step": range(10), "test_acc": np.linspace(0.1, 1.0, 10),
                  "run_name": pd.Categorical(["only"] * 10)}).to_parquet(p)
    assert read_log(p).num_rows == 10
    q = tmp_path / "two.parquet"
    pd.DataFrame({"step": range(10), "test_acc": np.linspace(0.1, 1.0, 10),
                  "run_name": pd.Categorical(["a"] * 5 + ["b"] * 5)}).to_parquet(q)
    with pytest.raises(LogFormatError) as e:
        read_log(q, format="table")
    assert e.value.code is ErrorCode.MISSING_COLUMN and e.value.column == "run_name"
