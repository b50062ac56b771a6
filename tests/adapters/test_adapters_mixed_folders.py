"""Mixed folders: run logs beside summary tables, images, PDFs and HTML pages; a one-row-per-run
table joined onto the runs with ``--conditions-from FILE --on COL``."""

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

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


def _runs(root: Path, sweep: pd.DataFrame) -> list[str]:
    """One ``metrics.csv`` per run folder (``root/<run>/metrics.csv``), no conditions."""
    for run, g in sweep.groupby("run"):
        d = root / str(run)
        d.mkdir(parents=True)
        g.drop(columns=["run", "wd", "seed"]).to_csv(d / "metrics.csv", index=False)
    return sorted(str(r) for r in sweep["run"].unique())


def _summary(sweep: pd.DataFrame) -> pd.DataFrame:
    """One row per run: its id, its settings, a result."""
    per = sweep.groupby("run").agg(wd=("wd", "first"), seed=("seed", "first"),
                                   final_test_acc=("test_acc", "last")).reset_index()
    out: pd.DataFrame = per.rename(columns={"run": "run_id"})
    return out


def test_non_logs_are_set_aside_with_a_note_each(tmp_path: Path, sweep: pd.DataFrame) -> None:
    root = tmp_path / "sweep"
    runs = _runs(root, sweep)
    _summary(sweep).to_csv(root / "summary.csv", index=False)
    (root / "acc.png").write_bytes(PNG)
    (root / "paper.pdf").write_bytes(b"%PDF-1.4\n%%EOF\n")
    (root / "report.html").write_text("<html><body>runs</body></html>")
    t = read_log(root)
    assert sorted(t.column("run").unique().to_pylist()) == runs
    aside = provenance_of(t)["files_set_aside"]
    assert set(aside) == {"summary.csv", "acc.png", "paper.pdf", "report.html"}
    notes = provenance_of(t)["warnings"]
    for rel in aside:
        assert sum(n.startswith(f"{rel}: set aside") for n in notes) == 1
    # the summary names the runs: proposed as their conditions
    assert provenance_of(t)["conditions_table"]["flag"] == \
        "--conditions-from summary.csv --on run_id"


def test_conditions_from_joins_the_summary_onto_the_runs(tmp_path: Path,
                                                         sweep: pd.DataFrame) -> None:
    root = tmp_path / "sweep"
    _runs(root, sweep)
    summary = _summary(sweep)
    summary.to_csv(root / "summary.csv", index=False)
    t = read_log(root, layout={"conditions_from": "summary.csv", "on": "run_id"}).to_pandas()
    per = t.groupby("run").first()
    for _, row in summary.iterrows():
        assert per.loc[row["run_id"], "wd"] == row["wd"]
        assert per.loc[row["run_id"], "seed"] == row["seed"]
    r = CliRunner().invoke(cli, ["check", str(root), "--conditions-from", "summary.csv",
                                 "--on", "run_id", "--metric", "emb_erank", "--json", "-"])
    assert r.exit_code in (0, 1), r.output
    doc = json.loads(r.stdout)
    assert doc["studies"][0]["axis"] == "wd"
    assert "final_test_acc" in doc["input"]["outcomes"]


def test_conditions_from_with_ids_of_no_run_is_refused(tmp_path: Path,
                                                       sweep: pd.DataFrame) -> None:
    root = tmp_path / "sweep"
    _runs(root, sweep)
    summary = _summary(sweep).assign(run_id=lambda d: "other_" + d["run_id"])
    summary.to_csv(tmp_path / "summary.csv", index=False)
    with pytest.raises(ConfigError) as e:
        read_log(root, layout={"conditions_from": str(tmp_path / "summary.csv"),
                               "on": "run_id"})
    assert e.value.code is ErrorCode.INVALID_OPTION
    with pytest.raises(LogFormatError) as f:
        read_log(root, layout={"conditions_from": str(tmp_path / "summary.csv"), "on": "id"})
    assert f.value.code is ErrorCode.MISSING_COLUMN
    r = CliRunner().invoke(cli, ["check", str(root), "--conditions-from",
                                 str(tmp_path / "summary.csv"), "--on", "run_id"])
    assert r.exit_code == 2 and "[INVALID_OPTION]" in r.stderr


def test_setting_aside_never_hides_a_log_nor_reads_a_folder_of_summaries(
        tmp_path: Path, sweep: pd.DataFrame) -> None:
    root = tmp_path / "sweep"
    runs = _runs(root, sweep)
    _summary(sweep).to_csv(root / "summary.csv", index=False)
    assert sorted(read_log(root).column("run").unique().to_pylist()) == runs
    # a per-step log whose step column has another name: refused, never set aside
    g = sweep[sweep["run"] == runs[0]].drop(columns=["run", "wd", "seed"])
    g.rename(columns={"step": "iteration_count"}).to_csv(root / "extra.csv", index=False)
    with pytest.raises(LogFormatError) as e:
        read_log(root)
    assert e.value.code is ErrorCode.MISSING_COLUMN
    (root / "extra.csv").unlink()
    # W&B chart exports among the tables: refused as before
    steps = np.arange(0, 100, 10)
    pd.DataFrame({"Step": steps, "wd1.5_s0 - test/acc": steps / 100}).to_csv(
        root / "chart.csv", index=False, quoting=1)
    with pytest.raises(LogFormatError) as e:
        read_log(root)
    assert e.value.code is ErrorCode.FORMAT_MISMATCH
    # a folder of summaries and images only: no run log, refused (never an empty audit)
    only = tmp_path / "tables"
    only.mkdir()
    _summary(sweep).to_csv(only / "summary.csv", index=False)
    _summary(sweep).to_parquet(only / "summary2.parquet", index=False)
    (only / "acc.png").write_bytes(PNG)
    with pytest.raises(LogFormatError) as e:
        read_log(only)
    assert e.value.code is ErrorCode.MISSING_COLUMN


def test_inspect_lists_what_was_set_aside(tmp_path: Path, sweep: pd.DataFrame) -> None:
    root = tmp_path / "sweep"
    _runs(root, sweep)
    _summary(sweep).to_csv(root / "summary.csv", index=False)
    (root / "acc.png").write_bytes(PNG)
    r = CliRunner().invoke(cli, ["inspect", str(root), "--json", "-"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert set(doc["shape"]["files_set_aside"]) == {"summary.csv", "acc.png"}
    assert any(f["flag"] == "--conditions-from summary.csv --on run_id" for f in doc["flags"])


def test_the_conditions_table_is_an_input_never_an_output(tmp_path: Path,
                                                          sweep: pd.DataFrame) -> None:
    root = tmp_path / "sweep"
    _runs(root, sweep)
    summary = tmp_path / "summary.json"
    _summary(sweep).to_json(summary, orient="records", lines=True)
    before = summary.read_bytes()
    r = CliRunner().invoke(cli, ["check", str(root), "--conditions-from", str(summary),
                                 "--on", "run_id", "--metric", "emb_erank",
                                 "--json", str(summary)])
    assert r.exit_code == 2 and "[OUTPUT_IS_INPUT]" in r.stderr
    assert summary.read_bytes() == before


def test_a_long_summary_with_a_sorted_seed_column_is_set_aside(tmp_path: Path) -> None:
    """20 rows of seed 0…19: the sorted seed read as a possible step, and the whole folder was
    refused (MISSING_COLUMN, "--map seed=step"; the session's review)."""
    s = np.arange(0, 3001, 100)
    for i in range(3):
        pd.DataFrame({"step": s, "test_acc": 1 / (1 + np.exp(-(s - 1500 - 100 * i) / 100)),
                      "train_acc": 1.0, "emb": 10 + 20 / (1 + np.exp((s - 2000) / 150))}).to_csv(
            tmp_path / f"run{i}.csv", index=False)
    pd.DataFrame({"seed": range(20), "final_acc": np.linspace(0.5, 1, 20)}).to_csv(
        tmp_path / "summary.csv", index=False)
    r = CliRunner().invoke(cli, ["inspect", str(tmp_path), "--json", "-"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["runs"]["ids"] == ["run0", "run1", "run2"]


def test_a_row_never_joins_two_runs_that_share_the_last_part_of_their_ids(
        tmp_path: Path) -> None:
    """Runs lr0.1/seed0 and lr1.0/seed0 both took a 'seed0' row's conditions (the last part
    of the id as a fallback; the session's review): ambiguous, it joins neither."""
    s = np.arange(0, 3001, 100)
    for k, lr in enumerate(("lr0.1", "lr1.0")):
        (tmp_path / lr).mkdir()
        for seed in (0, 1):
            pd.DataFrame({"step": s,
                          "test_acc": 1 / (1 + np.exp(-(s - 1500 - 100 * k - 30 * seed) / 100)),
                          "emb": 10 + 20 / (1 + np.exp((s - 2000) / 150))}).to_csv(
                tmp_path / lr / f"seed{seed}.csv", index=False)
    pd.DataFrame({"run": ["seed0"], "wd": [0.5]}).to_csv(tmp_path / "conds.csv", index=False)
    r = CliRunner().invoke(cli, ["check", str(tmp_path), "--metric", "emb",
                                 "--conditions-from", str(tmp_path / "conds.csv"), "--on", "run"])
    assert r.exit_code == 2 and r.stderr.rstrip().endswith("[INVALID_OPTION]"), r.output


def test_a_manifest_with_a_total_steps_column_is_set_aside(tmp_path: Path,
                                                           sweep: pd.DataFrame) -> None:
    """A sweep's manifest (one row per run: its name, settings, and the total ``steps`` every
    run trained for) was read as a log because ``steps`` is a step column's name: its text
    columns changed "within a run" and the folder was refused (NOT_CONSTANT_IN_RUN) with a
    --run-from that did not work on the real logs. A step column holding one value in every
    row makes a table of one row per run: set aside, proposed as the runs' conditions."""
    root = tmp_path / "sweep"
    runs = _runs(root, sweep)
    manifest = _summary(sweep).assign(steps=100_000, csv_path=lambda d: d["run_id"] + ".csv")
    manifest.to_csv(root / "manifest.csv", index=False)
    t = read_log(root)
    assert sorted(t.column("run").unique().to_pylist()) == runs
    assert set(provenance_of(t)["files_set_aside"]) == {"manifest.csv"}
    assert provenance_of(t)["conditions_table"]["flag"] == \
        "--conditions-from manifest.csv --on run_id"


def test_a_run_of_another_logger_is_named_with_the_accuracy_it_logged(tmp_path: Path) -> None:
    """A folder of JSON histories logging ``test_acc`` and one Lightning CSV logging
    ``val_accuracy``: the Lightning run was set aside as if it had logged no accuracy. It is
    still set aside (the folder's test accuracy is one column), and the notes say which
    accuracy column it logged."""
    root = tmp_path / "mixed"
    for k in range(2):
        d = root / f"json{k}"
        d.mkdir(parents=True)
        steps = list(range(0, 300, 10))
        (d / "history.json").write_text(json.dumps({
            "step": steps, "test_acc": [0.99 if s > 100 else 0.1 for s in steps],
            "train_acc": [1.0] * len(steps)}))
    (root / "lightning").mkdir()
    pd.DataFrame({"step": range(0, 300, 10), "val_accuracy": 0.5,
                  "full_train_acc": 1.0}).to_csv(root / "lightning" / "metrics.csv",
                                                 index=False)
    r = CliRunner().invoke(cli, ["check", str(root), "--json", "-"])
    assert r.exit_code in (0, 1), r.output
    doc = json.loads(r.stdout)
    assert doc["input"]["runs_without_accuracy"] == ["lightning/metrics"]
    assert any(f["code"] == "READER_NOTES" for f in doc["findings"])
    assert provenance_of(read_log(root))["runs_with_another_accuracy"] == {
        "lightning/metrics": "val_accuracy"}


def test_a_run_cut_short_at_one_step_is_a_run_not_a_manifest(tmp_path: Path,
                                                             sweep: pd.DataFrame) -> None:
    """A run that crashed after its first evaluation (two rows at one step: the training
    metrics' row and the validation's) is a run too short to audit, counted as such; only a
    table whose rows are each named (a manifest's run names) is set aside as one row per
    run."""
    root = tmp_path / "sweep"
    runs = _runs(root, sweep)
    (root / "crashed").mkdir()
    pd.DataFrame({"step": [99, 99], "test_acc": [0.1, None], "emb_erank": [None, 40.0]}).to_csv(
        root / "crashed" / "metrics.csv", index=False)
    r = CliRunner().invoke(cli, ["check", str(root), "--metric", "emb_erank", "--json", "-"])
    assert r.exit_code in (0, 1), r.output
    inp = json.loads(r.stdout)["input"]
    assert inp["runs_read"] == len(runs) + 1 and inp["runs_too_short"] == ["crashed"]
