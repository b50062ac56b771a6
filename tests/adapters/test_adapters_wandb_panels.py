"""W&B panel exports as W&B writes them: a folder of charts, or the charts as separate paths.

A W&B workspace exports one CSV per chart (a chart's menu → *Export panel* → *CSV*). The file
is written here the way W&B writes it (:func:`wandb_chart`): named
``wandb_export_<date>T<time>.<ms><tz>.csv``, every field quoted, the x-axis ``Step`` first,
then for each run of the chart ``"<run> - <metric>"``, ``"<run> - <metric>__MIN"``,
``"<run> - <metric>__MAX"``; one row per bucket step of any run, an empty ``""`` cell where a
run has no bucket there. A chart of fewer points than its buckets (as here: 174 or 241 points
per run, W&B draws up to ~1500) holds every logged step with MIN = MAX = the value; a bucketed
chart holds one row per bucket (its first step, the mean, the min and the max).

The acceptance: the bundled real sweep ``reference_runs/data/mlp_wd_sweep_p59.parquet`` (run
names such as ``mlp_wd/wd=0.1,seed=0``: a comma inside a quoted header) audited as the
canonical file, as a folder of its charts, and as the same charts given as separate paths
gives the same reason codes, verdicts and exit code (plus ``SOURCE_DOWNSAMPLED`` for the
charts).
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from grokaudit.adapters import detect_format, read_log
from grokaudit.cli import cli
from grokaudit.errors import ErrorCode, LogFormatError
from grokaudit.loader import read_any

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "reference_runs" / "data" / "mlp_wd_sweep_p59.parquet"
#: the reference sweep's metrics and the names its training script would log them under
CHARTS = {"test_acc": "test/acc", "train_acc": "train/acc", "emb_pr": "emb_pr",
          "emb_erank": "emb_erank"}
REF_COND = ["--cond", r"wd=wd=([0-9.]+)", "--cond", r"seed=seed=(\d+)"]
SWEEP_COND = {"wd": r"wd([0-9.]+)", "seed": r"_s(\d+)"}
OPTS = ["--by", "wd", "--metric", "emb_pr"]


def wandb_chart(path: Path, metric: str, lines: dict[str, tuple[np.ndarray, np.ndarray]], *,
                bucket: int = 1, axis: str = "Step") -> Path:
    """Write one chart's CSV export as W&B does (see the module docstring); ``lines`` maps a
    run name to its logged (steps, values); ``bucket`` logged points make one bucket."""
    columns: list[str] = [axis]
    cells: list[dict[int, tuple[float, float, float]]] = []
    for run, (steps, values) in lines.items():
        columns += [f"{run} - {metric}", f"{run} - {metric}__MIN", f"{run} - {metric}__MAX"]
        by_step = {}
        for k in range(0, len(steps), bucket):
            v = np.asarray(values[k:k + bucket], dtype=np.float64)
            by_step[int(steps[k])] = (float(v.mean()), float(v.min()), float(v.max()))
        cells.append(by_step)
    rows = sorted({s for c in cells for s in c})
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, quoting=csv.QUOTE_ALL, lineterminator="\n")
        w.writerow(columns)
        for i, s in enumerate(rows):
            row: list[object] = [s if axis == "Step" else f"{1.5 * i:.3f}"]
            for c in cells:
                row += [repr(x) for x in c[s]] if s in c else ["", "", ""]
            w.writerow(row)
    return path


def export_charts(folder: Path, log: pd.DataFrame, charts: dict[str, str], *,
                  buckets: dict[str, int] | None = None) -> list[Path]:
    """One chart per metric of ``log`` (canonical columns) under ``folder``, named as the
    browser saves W&B's exports; returns the files in name order."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for i, (col, metric) in enumerate(charts.items()):
        lines = {str(r): (g["step"].to_numpy(), g[col].to_numpy())
                 for r, g in log.groupby("run", sort=True)}
        name = f"wandb_export_2026-03-0{i + 1}T10_1{i}_42.{100 + i}+01_00.csv"
        out.append(wandb_chart(folder / name, metric, lines,
                               bucket=(buckets or {}).get(col, 1)))
    return sorted(out)


def check_json(paths: Sequence[Path], *args: str) -> tuple[int, dict]:
    r = CliRunner().invoke(cli, ["check", *map(str, paths), *OPTS, *args, "--json", "-"])
    assert r.exit_code in (0, 1), r.output
    return r.exit_code, json.loads(r.stdout)


def codes_and_verdicts(doc: dict, *, drop: str | None = None) -> tuple[list, list]:
    """The reason codes of the findings (in their order) and each study's verdict. Not the
    cells' clocks: a downsampled source widens their censoring intervals on purpose."""
    reading = {"ACCURACY_COLUMN_CHOSEN", "READER_NOTES"}  # how the source named its columns
    return ([f["code"] for f in doc["findings"] if f["code"] != drop and f["code"] not in reading],
            [s["verdict"] for s in doc["studies"]])


def frame(table) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    df = table.to_pandas()
    df["run"] = df["run"].astype(str)
    return df[sorted(df.columns)].sort_values(["run", "step"]).reset_index(drop=True)


@pytest.fixture(scope="module")
def reference() -> pd.DataFrame:
    if not REFERENCE.is_file():
        pytest.skip(f"bundled reference log not found at {REFERENCE}")
    return pd.read_parquet(REFERENCE)[["run", "step", *CHARTS, "wd", "seed"]]


# -- the acceptance -------------------------------------------------------------------------------

def test_folder_of_charts_and_separate_paths_audit_like_the_canonical_file(
        tmp_path: Path, reference: pd.DataFrame, prov) -> None:
    canonical = tmp_path / "logs.parquet"
    reference.to_parquet(canonical, index=False)
    charts = export_charts(tmp_path / "charts", reference, CHARTS)
    header = charts[0].read_text().splitlines()[0]
    first = sorted(pd.read_parquet(REFERENCE)["run"].unique())[0]  # e.g. mlp_wd/wd=0.1,seed=0
    assert "," in first  # the quoted comma this test is about
    assert header.startswith(f'"Step","{first} - test/acc","{first} - test/acc__MIN",')
    assert detect_format(tmp_path / "charts") == "wandb-csv"
    assert all(detect_format(c) == "wandb-csv" for c in charts)

    code0, doc0 = check_json([canonical])
    code1, doc1 = check_json([tmp_path / "charts"], *REF_COND)
    code2, doc2 = check_json(charts, *REF_COND)
    assert code0 == code1 == code2
    expected = codes_and_verdicts(doc0)
    assert "SOURCE_DOWNSAMPLED" not in expected[0]
    assert codes_and_verdicts(doc1, drop="SOURCE_DOWNSAMPLED") == expected
    assert codes_and_verdicts(doc2, drop="SOURCE_DOWNSAMPLED") == expected
    # the charts, read as a folder or as paths: the same findings, one SOURCE_DOWNSAMPLED per
    # chart (each chart is bucketed on its own), naming its file and every run it holds
    assert codes_and_verdicts(doc1) == codes_and_verdicts(doc2)
    assert [s["cells"] for s in doc1["studies"]] == [s["cells"] for s in doc2["studies"]]
    down = [f for f in doc1["findings"] if f["code"] == "SOURCE_DOWNSAMPLED"]
    assert len(down) == len(charts)
    assert {f["evidence"]["file"] for f in down} == set(map(str, charts))
    assert all(sorted(f["runs"]) == sorted(reference["run"].unique()) for f in down)

    # the tables: the canonical values, every run downsampled, every chart a source
    folder = read_any(tmp_path / "charts", cond={"wd": r"wd=([0-9.]+)", "seed": r"seed=(\d+)"})
    paths = read_any(charts, cond={"wd": r"wd=([0-9.]+)", "seed": r"seed=(\d+)"})
    pd.testing.assert_frame_equal(frame(folder), frame(paths))
    pd.testing.assert_frame_equal(frame(folder), frame(read_any(canonical)), check_dtype=False)
    for t in (folder, paths):
        assert prov(t)["downsampled_runs"] == sorted(reference["run"].unique())
        assert prov(t)["source_files"] == list(map(str, charts))


def test_charts_bucketed_at_different_steps_join_on_the_union_of_steps(
        tmp_path: Path, sweep: pd.DataFrame, prov) -> None:
    # the accuracy charts hold every step; the metric's chart one bucket per 3 logged points
    cols = {"test_acc": "test/acc", "train_acc": "train/acc", "emb_erank": "emb_erank"}
    charts = export_charts(tmp_path / "charts", sweep, cols, buckets={"emb_erank": 3,
                                                                       "train_acc": 2})
    t = read_log(tmp_path / "charts", cond=SWEEP_COND)
    df = t.to_pandas()
    one = df[df.run == "wd1.5_s0"].set_index("step")
    ref = sweep[sweep.run == "wd1.5_s0"].set_index("step")
    assert list(one.index) == list(ref.index)  # the union of the charts' steps, nothing added
    np.testing.assert_array_equal(one["test_acc"], ref["test_acc"])
    # no interpolation: the metric only at its bucket steps (the bucket's mean), NaN elsewhere
    at = ref.index[::3]
    assert one["emb_erank"].notna().sum() == len(at)
    assert list(one.index[one["emb_erank"].notna()]) == list(at)
    np.testing.assert_allclose(one.loc[at[1], "emb_erank"],
                               ref["emb_erank"].iloc[3:6].mean(), rtol=0, atol=0)
    assert one["train_acc"].notna().sum() == len(ref.index[::2])
    assert prov(t)["downsampled_runs"] == sorted(sweep["run"].unique())
    assert prov(t)["points_replaced"] == 0
    # the same charts as separate paths: the same table and the same audit
    paths = read_any(charts, cond=SWEEP_COND)
    pd.testing.assert_frame_equal(frame(t), frame(paths))
    cond = [a for k, v in SWEEP_COND.items() for a in ("--cond", f"{k}={v}")]
    opts = ["--metric", "emb_erank"]
    r1 = CliRunner().invoke(cli, ["check", str(tmp_path / "charts"), *opts, *cond, "--json", "-"])
    r2 = CliRunner().invoke(cli, ["check", *map(str, charts), *opts, *cond, "--json", "-"])
    assert r1.exit_code == r2.exit_code and r1.exit_code in (0, 1), r1.output
    assert codes_and_verdicts(json.loads(r1.stdout)) == codes_and_verdicts(json.loads(r2.stdout))


# -- what the folder may hold -------------------------------------------------------------------

def test_a_chart_against_time_in_the_folder_is_refused(tmp_path: Path, sweep: pd.DataFrame) -> None:
    export_charts(tmp_path / "charts", sweep, {"test_acc": "test/acc", "emb_erank": "emb_erank"})
    lines = {str(r): (g["step"].to_numpy(), g["train_acc"].to_numpy())
             for r, g in sweep.groupby("run")}
    bad = wandb_chart(tmp_path / "charts" / "wandb_export_2026-03-09T10_00_00.000+01_00.csv",
                      "train/acc", lines, axis="Relative Time (Process)")
    assert detect_format(tmp_path / "charts") == "wandb-csv"
    with pytest.raises(LogFormatError) as ei:
        read_log(tmp_path / "charts")
    assert ei.value.code is ErrorCode.MISSING_COLUMN
    assert ei.value.path == str(bad) and ei.value.column == "Relative Time (Process)"
    r = CliRunner().invoke(cli, ["check", str(tmp_path / "charts")])
    assert r.exit_code == 2 and r.stdout == ""
    assert bad.name in r.stderr and r.stderr.rstrip().endswith("[MISSING_COLUMN]")


def test_an_unrelated_csv_in_the_folder_is_refused_naming_it(tmp_path: Path,
                                                             sweep: pd.DataFrame) -> None:
    # a W&B runs table ("Export CSV" of the runs table) saved next to the charts
    charts = export_charts(tmp_path / "charts", sweep, {"test_acc": "test/acc",
                                                        "emb_erank": "emb_erank"})
    runs = tmp_path / "charts" / "wandb_export_2026-03-09T11_00_00.000+01_00.csv"
    with runs.open("w", newline="") as fh:
        w = csv.writer(fh, quoting=csv.QUOTE_ALL, lineterminator="\n")
        w.writerow(["Name", "State", "Runtime", "wd", "test/acc"])
        w.writerow(["wd1.5_s0", "finished", "5400", "1.5", "0.99"])
    # a folder is classified by all its files: charts beside another table are neither a
    # folder of charts nor a folder of tables, and the refusal names both kinds
    assert detect_format(tmp_path / "charts") == "table"
    with pytest.raises(LogFormatError) as ei:
        read_log(tmp_path / "charts")
    assert ei.value.code is ErrorCode.FORMAT_MISMATCH
    assert ei.value.path == str(tmp_path / "charts")
    assert runs.name in str(ei.value) and charts[0].name in str(ei.value)
    r = CliRunner().invoke(cli, ["check", str(tmp_path / "charts")])
    assert r.exit_code == 2 and r.stdout == ""
    assert re.search(r"mixes .*separate paths.*\[FORMAT_MISMATCH\]$", r.stderr.strip())
    # without it, the folder is read; a file that is no table (the chart's PNG) is reported
    runs.unlink()
    (tmp_path / "charts" / "test-acc.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    t = read_log(tmp_path / "charts")
    warnings = json.loads(t.schema.metadata[b"grokaudit"])["warnings"]
    assert any("not CSV not read: 'test-acc.png'" in w for w in warnings)
    assert json.loads(t.schema.metadata[b"grokaudit"])["source_files"] == list(map(str, charts))


def test_an_empty_csv_in_the_folder_is_refused(tmp_path: Path, sweep: pd.DataFrame) -> None:
    export_charts(tmp_path / "charts", sweep, {"test_acc": "test/acc"})
    (tmp_path / "charts" / "empty.csv").write_bytes(b"")
    with pytest.raises(LogFormatError) as ei:
        read_log(tmp_path / "charts")
    assert ei.value.code is ErrorCode.FILE_EMPTY
    assert ei.value.path == str(tmp_path / "charts" / "empty.csv")


def test_a_line_in_two_charts_is_read_once_or_refused_when_it_differs(
        tmp_path: Path, sweep: pd.DataFrame, codes) -> None:
    # the accuracy in its own chart and again in a chart of both accuracies
    charts = tmp_path / "charts"
    export_charts(charts, sweep, {"test_acc": "test/acc"})
    lines = {str(r): (g["step"].to_numpy(), g["test_acc"].to_numpy())
             for r, g in sweep.groupby("run")}
    again = wandb_chart(charts / "wandb_export_2026-03-09T12_00_00.000+01_00.csv", "test/acc",
                        lines)
    t = read_log(charts, cond=SWEEP_COND)
    assert codes(t) == ["SOURCE_DOWNSAMPLED"] * 2  # one per chart, no RESUMED_DUPLICATES
    assert len(t) == len(sweep)
    # a different value for one (run, step): refused, as the loader refuses it for two paths
    step, v = lines["wd3.0_s1"]
    v = v.copy()
    v[7] += 0.25
    wandb_chart(again, "test/acc", {**lines, "wd3.0_s1": (step, v)})
    with pytest.raises(LogFormatError) as ei:
        read_log(charts)
    assert ei.value.code is ErrorCode.DUPLICATE_ROWS and ei.value.column == "test/acc"
    files = sorted(charts.iterdir())
    with pytest.raises(LogFormatError) as ei:
        read_any(files)
    assert ei.value.code is ErrorCode.DUPLICATE_ROWS
    first = read_any(files, on_duplicate="first").to_pandas()
    assert len(first) == len(sweep)


def test_a_chart_without_the_accuracy_is_a_part_of_a_log(tmp_path: Path,
                                                         sweep: pd.DataFrame) -> None:
    (erank,) = export_charts(tmp_path / "m", sweep, {"emb_erank": "emb_erank"})
    (acc,) = export_charts(tmp_path / "a", sweep, {"test_acc": "test/acc"})
    t = read_log(erank)  # read: the accuracy may come from another path
    assert "test_acc" not in t.column_names and "emb_erank" in t.column_names
    # alone, the audit refuses it (the canonical table needs test_acc); with its accuracy
    # chart, it is audited
    r = CliRunner().invoke(cli, ["check", str(erank)])
    assert r.exit_code == 2 and r.stderr.rstrip().endswith("[MISSING_COLUMN]")
    assert "test_acc" in r.stderr
    r = CliRunner().invoke(cli, ["convert", str(erank), "-o", str(tmp_path / "o.parquet")])
    assert r.exit_code == 2 and r.stderr.rstrip().endswith("[MISSING_COLUMN]")
    assert str(erank) in r.stderr and not (tmp_path / "o.parquet").exists()
    cond = [a for k, v in SWEEP_COND.items() for a in ("--cond", f"{k}={v}")]
    r = CliRunner().invoke(cli, ["check", str(acc), str(erank), "--metric", "emb_erank", *cond])
    assert r.exit_code in (0, 1), r.output
    # a folder of charts without any accuracy: the same
    assert read_log(tmp_path / "m").num_rows == len(sweep)
