"""Long ("tidy") tables — one row per (step, metric) — pivoted to one column per series."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from grokaudit.adapters import read_log
from grokaudit.cli import cli
from grokaudit.errors import ConfigError, ErrorCode, LogFormatError
from helpers.tables import provenance_of


def _long(sweep: pd.DataFrame, run: str, *, tag: str = "tag") -> pd.DataFrame:
    """One run of the shared sweep as a long table ``step, <tag>, value``."""
    g = sweep[sweep["run"] == run]
    out: pd.DataFrame = g.melt(id_vars=["step"], value_vars=["test_acc", "train_acc",
                                                             "emb_erank"],
                               var_name=tag, value_name="value")
    return out


def test_step_tag_value_table_is_pivoted(tmp_path: Path, sweep: pd.DataFrame) -> None:
    run = str(sweep["run"].iloc[0])
    p = tmp_path / "scalars.csv"
    _long(sweep, run).sample(frac=1.0, random_state=0).to_csv(p, index=False)
    t = read_log(p).to_pandas()
    ref = sweep[sweep["run"] == run].sort_values("step").reset_index(drop=True)
    np.testing.assert_array_equal(t["step"].to_numpy(), ref["step"].to_numpy())
    for col in ("test_acc", "train_acc", "emb_erank"):
        np.testing.assert_array_equal(t[col].to_numpy(), ref[col].to_numpy())
    lt = provenance_of(read_log(p))["long_table"]
    assert (lt["name"], lt["value"], lt["keys"], lt["series"]) == ("tag", "value", [], 3)


def test_key_columns_join_the_name_in_file_order(tmp_path: Path) -> None:
    rows = []
    for step in range(0, 500, 100):
        rows += [(step, "test", "accuracy", "", step / 1000),
                 (step, "train", "accuracy", "", 1.0),
                 (step, "general", "weights_l2", "layers.0.weight", 10.0 + step),
                 (step, "general", "weights_l2", "layers.1.weight", 20.0 + step)]
    df = pd.DataFrame(rows, columns=["epoch", "input_type", "metric_name", "layer", "value"])
    p = tmp_path / "metrics.csv"
    df.to_csv(p, index=False)
    t = read_log(p).to_pandas()
    assert {"general/weights_l2/layers.0.weight", "general/weights_l2/layers.1.weight"} \
        <= set(t.columns)
    want = df[df["metric_name"] == "accuracy"]
    np.testing.assert_array_equal(t["test_acc"].to_numpy(),
                                  want[want["input_type"] == "test"]["value"].to_numpy())
    np.testing.assert_array_equal(t["train_acc"].to_numpy(),
                                  want[want["input_type"] == "train"]["value"].to_numpy())
    np.testing.assert_array_equal(t["general/weights_l2/layers.1.weight"].to_numpy(),
                                  df[df["layer"] == "layers.1.weight"]["value"].to_numpy())


def test_long_table_with_run_column_keeps_runs(tmp_path: Path, sweep: pd.DataFrame) -> None:
    frames = [_long(sweep, r, tag="metric").assign(run=r) for r in sweep["run"].unique()]
    p = tmp_path / "all.parquet"
    pd.concat(frames).to_parquet(p, index=False)
    t = read_log(p).to_pandas().sort_values(["run", "step"]).reset_index(drop=True)
    ref = sweep.sort_values(["run", "step"]).reset_index(drop=True)
    assert sorted(t["run"].unique()) == sorted(ref["run"].unique())
    np.testing.assert_array_equal(t["test_acc"].to_numpy(), ref["test_acc"].to_numpy())
    # a `name` constant in each run (each run's model) beside a metric `value`: a wide table
    wide = sweep[["run", "step", "test_acc"]].assign(
        name=lambda d: "model_" + d["run"], value=sweep["emb_erank"])
    q = tmp_path / "runs.csv"
    wide.to_csv(q, index=False)
    w = read_log(q).to_pandas().sort_values(["run", "step"])
    np.testing.assert_array_equal(w["value"].to_numpy(), ref["emb_erank"].to_numpy())
    assert "long_table" not in provenance_of(read_log(q))


def test_long_flag_fixes_the_columns(tmp_path: Path, sweep: pd.DataFrame) -> None:
    run = str(sweep["run"].iloc[0])
    df = _long(sweep, run).rename(columns={"tag": "series", "value": "y"})
    p = tmp_path / "scalars.csv"
    df.to_csv(p, index=False)
    t = read_log(p, layout={"long": "name=series,value=y"}).to_pandas()
    ref = sweep[sweep["run"] == run].sort_values("step")
    np.testing.assert_array_equal(t["test_acc"].to_numpy(), ref["test_acc"].to_numpy())
    with pytest.raises(LogFormatError) as e:
        read_log(p, layout={"long": "name=nope,value=y"})
    assert e.value.code is ErrorCode.MISSING_COLUMN
    with pytest.raises(ConfigError) as c:
        read_log(p, layout={"long": "value=y"})
    assert c.value.code is ErrorCode.INVALID_OPTION


def test_series_logged_twice_with_other_values_is_refused(tmp_path: Path) -> None:
    df = pd.DataFrame({"step": [0, 0, 100, 100, 100], "tag": ["test_acc", "loss", "test_acc",
                                                              "loss", "test_acc"],
                       "value": [0.1, 2.0, 0.5, 1.0, 0.6]})
    p = tmp_path / "scalars.csv"
    df.to_csv(p, index=False)
    with pytest.raises(LogFormatError) as e:
        read_log(p)
    assert e.value.code is ErrorCode.DUPLICATE_ROWS


def test_forced_long_without_its_keys_is_refused_not_merged(tmp_path: Path) -> None:
    # without `split` among the keys, test and train accuracy would be one series
    df = pd.DataFrame({"step": [0, 0, 0, 1, 1, 1],
                       "split": ["test", "train", "train", "test", "train", "train"],
                       "metric": ["acc", "acc", "loss", "acc", "acc", "loss"],
                       "value": [0.1, 0.9, 2.0, 0.2, 1.0, 1.5]})
    p = tmp_path / "scalars.csv"
    df.to_csv(p, index=False)
    with pytest.raises(LogFormatError) as e:
        read_log(p, layout={"long": "name=metric,value=value,keys="})
    assert e.value.code is ErrorCode.DUPLICATE_ROWS
    t = read_log(p).to_pandas()  # detected: `split` is a key
    np.testing.assert_array_equal(t["test_acc"].to_numpy(), [0.1, 0.2])


def test_inspect_shows_the_pivot_and_its_flag(tmp_path: Path, sweep: pd.DataFrame) -> None:
    run = str(sweep["run"].iloc[0])
    p = tmp_path / "scalars.csv"
    _long(sweep, run).to_csv(p, index=False)
    r = CliRunner().invoke(cli, ["inspect", str(p), "--json", "-"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    lt = doc["shape"]["long_table"]
    assert (lt["name"], lt["value"], lt["series"]) == ("tag", "value", 3)
    assert any(f["flag"].startswith("--long name=tag,value=value") for f in doc["flags"])
    r = CliRunner().invoke(cli, ["check", str(p), "--long", "name=tag,value=nope"])
    assert r.exit_code == 2 and "[MISSING_COLUMN]" in r.stderr


def test_long_table_with_run_and_step_columns_is_not_read_as_canonical(
        tmp_path: Path, sweep: pd.DataFrame) -> None:
    frames = [_long(sweep, r).assign(run=r) for r in sweep["run"].unique()]
    p = tmp_path / "all.csv"
    pd.concat(frames).to_csv(p, index=False)
    r = CliRunner().invoke(cli, ["inspect", str(p), "--json", "-"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["runs"]["n"] == sweep["run"].nunique()
    assert doc["shape"]["long_table"]["series"] == 3


def test_an_ambiguous_long_table_is_refused_with_the_flag(tmp_path: Path) -> None:
    # two name-like columns: not detected; the refusal names the --long that reads it
    df = pd.DataFrame({"step": [0, 0, 1, 1], "name": ["m1", "m1", "m1", "m1"],
                       "tag": ["test_acc", "loss", "test_acc", "loss"],
                       "value": [0.1, 2.0, 0.2, 1.0]})
    p = tmp_path / "scalars.csv"
    df.to_csv(p, index=False)
    r = CliRunner().invoke(cli, ["inspect", str(p)])
    assert r.exit_code == 2 and "[NOT_CONSTANT_IN_RUN]" in r.stderr and "--long" in r.stderr
    t = read_log(p, layout={"long": "name=tag,value=value"}).to_pandas()
    np.testing.assert_array_equal(t["test_acc"].to_numpy(), [0.1, 0.2])
    assert set(t["name"]) == {"m1"}  # a constant text column stays a condition



def test_a_text_condition_constant_in_each_run_is_no_key(tmp_path: Path) -> None:
    """An optimizer named per run beside a long table's name and value: it was joined into the
    series names ('adam/test_acc', 'sgd/test_acc') and the table refused (the review)."""
    rows = []
    for run, opt in (("a", "adam"), ("b", "sgd")):
        for s in range(0, 501, 100):
            rows += [{"run": run, "optimizer": opt, "step": s, "metric": "test_acc",
                      "value": min(1.0, s / 400)},
                     {"run": run, "optimizer": opt, "step": s, "metric": "emb",
                      "value": 10 - s / 100}]
    p = tmp_path / "long.csv"
    pd.DataFrame(rows).to_csv(p, index=False)
    t = read_log(p)
    assert {"test_acc", "emb", "optimizer"} <= set(t.column_names)
    assert sorted(t.to_pandas().groupby("run")["optimizer"].first()) == ["adam", "sgd"]


def test_a_long_table_of_metric_value_with_a_checkpoint_per_step_is_read(
        tmp_path: Path, prov) -> None:
    """nokuno's ``weight_metrics.csv``: ``checkpoint_path, condition, step, layer,
    metric_name, metric_value``. ``metric_value`` was no value column, so the table was read
    wide and ``checkpoint_path`` refused, offering ``--run-from checkpoint_path`` (a run per
    step). It is a long table; the checkpoint's path names each step (public log, hunt 10)."""
    rows = []
    for s in range(0, 5000, 500):
        for layer in ("token_embed.weight", "output_head.weight"):
            for metric, v in (("effective_rank", 30.0 - s / 500), ("test_acc", min(1.0, s / 3000))):
                rows.append({"checkpoint_path": f"results/pure/checkpoint_{s}.pt",
                             "condition": "pure", "step": s, "layer": layer,
                             "metric_name": metric, "metric_value": v})
    p = tmp_path / "weight_metrics.csv"
    pd.DataFrame(rows).to_csv(p, index=False)
    t = read_log(p, mapping={"token_embed.weight/test_acc": "test_acc"})
    df = t.to_pandas()
    assert len(df) == 10 and "token_embed.weight/effective_rank" in df
    assert "checkpoint_path" not in df and set(df["condition"]) == {"pure"}
    assert any("checkpoint_path" in n for n in prov(t).get("notes", []))


def test_a_split_column_on_steps_of_its_own_is_a_key_not_a_label(tmp_path: Path) -> None:
    """mmcv-style long rows: train rows every 10 steps, val rows at other steps; the split
    column ``mode`` has one value per step but repeats it over many steps. It was taken as a
    label of the step and dropped, so train and val ``acc`` became one test accuracy."""
    rows = [{"step": s, "mode": "train", "metric": m, "value": min(1.0, s / 500)}
            for s in range(0, 2000, 10) for m in ("acc", "loss")]
    rows += [{"step": s + 5, "mode": "val", "metric": "acc", "value": 0.95 if s >= 1500 else 0.1}
             for s in range(0, 2000, 100)]
    p = tmp_path / "log.csv"
    pd.DataFrame(rows).to_csv(p, index=False)
    df = read_log(p).to_pandas()
    val = df.dropna(subset=["test_acc"])
    assert len(val) == 20 and val["step"].min() == 5 and val["test_acc"].max() == 0.95
