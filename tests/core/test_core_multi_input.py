"""Several paths merged by run: a log split over files (by rows, by columns, across formats)
audits like the canonical file; conflicting rows are refused with the existing rules."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from grokaudit.cli import cli
from grokaudit.errors import ErrorCode, LogFormatError
from grokaudit.loader import read_any

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "reference_runs" / "data" / "mlp_wd_sweep_p59.parquet"
OPTS = ["--by", "wd", "--metric", "emb_pr", "--cell", "arch"]


@pytest.fixture(scope="module")
def log() -> pd.DataFrame:
    return pd.read_parquet(LOG)[["run", "step", "test_acc", "train_acc", "emb_pr", "emb_erank",
                                 "wd", "seed", "arch"]]


def _audit(paths: list[Path]) -> tuple[int, dict]:
    r = CliRunner().invoke(cli, ["check", *map(str, paths), *OPTS, "--json", "-"])
    assert r.exit_code in (0, 1), r.output
    return r.exit_code, json.loads(r.output)


def _comparable(doc: dict) -> tuple:
    return ([f["code"] for f in doc["findings"]],
            [(s["verdict"], s["cells"]) for s in doc["studies"]])


def test_split_by_rows_columns_and_formats_audits_like_the_whole(tmp_path: Path, log) -> None:
    whole = tmp_path / "whole.parquet"
    log.to_parquet(whole)
    code0, doc0 = _audit([whole])
    runs = sorted(log.run.unique())
    a = tmp_path / "a.parquet"
    b = tmp_path / "b.csv"
    log[log.run.isin(runs[:7])].to_parquet(a)
    log[~log.run.isin(runs[:7])].to_csv(b, index=False)
    assert _comparable(_audit([a, b])[1]) == _comparable(doc0)
    # one file per metric, conditions only in one of them (like a panel export)
    acc = tmp_path / "acc.csv"
    met = tmp_path / "metric.parquet"
    log[["run", "step", "test_acc", "train_acc", "wd", "seed", "arch"]].to_csv(acc, index=False)
    log[["run", "step", "test_acc", "emb_pr", "emb_erank"]].to_parquet(met)
    code, doc = _audit([acc, met])
    assert code == code0 and _comparable(doc) == _comparable(doc0)
    # a run split in time over two files
    early, late = tmp_path / "early.parquet", tmp_path / "late.parquet"
    log[log.step <= 4000].to_parquet(early)
    log[log.step > 4000].to_parquet(late)
    assert _comparable(_audit([late, early])[1]) == _comparable(doc0)


def test_conflicting_rows_are_refused_unless_a_rule_is_chosen(tmp_path: Path, log) -> None:
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    log.to_parquet(a)
    changed = log.copy()
    changed.loc[changed.index[5], "emb_pr"] += 1.0
    changed.to_parquet(b)
    with pytest.raises(LogFormatError) as ei:
        read_any([a, b])
    assert ei.value.code is ErrorCode.DUPLICATE_ROWS and ei.value.column == "emb_pr"
    r = CliRunner().invoke(cli, ["check", str(a), str(b), *OPTS])
    assert r.exit_code == 2 and re.search(r"\[DUPLICATE_ROWS\]\s*$", r.output)
    first = read_any([a, b], on_duplicate="first").to_pandas()
    last = read_any([a, b], on_duplicate="last").to_pandas()
    row = (log.run.iloc[5], log.step.iloc[5])
    def pick(d: pd.DataFrame) -> float:
        return float(d[(d.run == row[0]) & (d.step == row[1])].emb_pr.item())

    assert pick(first) == log.emb_pr.iloc[5] and pick(last) == log.emb_pr.iloc[5] + 1.0
    assert len(first) == len(log)


def test_the_same_file_twice_is_refused(tmp_path: Path, log) -> None:
    a = tmp_path / "a.parquet"
    log.to_parquet(a)
    with pytest.raises(LogFormatError) as ei:
        read_any([a, tmp_path / "." / "a.parquet"])
    assert ei.value.code is ErrorCode.INCOMPATIBLE_INPUTS


def test_an_output_over_any_of_the_inputs_is_refused(tmp_path: Path, log) -> None:
    a, b = tmp_path / "a.parquet", tmp_path / "b.csv"
    log.to_parquet(a)
    log.to_csv(b, index=False)
    before = b.read_bytes()
    r = CliRunner().invoke(cli, ["check", str(a), str(b), *OPTS, "--json", str(b)])
    assert r.exit_code == 2 and r.output.strip().endswith("[OUTPUT_IS_INPUT]")
    assert b.read_bytes() == before


def test_a_part_without_accuracy_from_an_adapter_merges_with_its_accuracy(tmp_path: Path) -> None:
    """An NPZ of metrics (read by its adapter) beside a CSV of accuracies: each is a part."""
    import numpy as np

    steps = np.arange(0, 1000, 50)
    np.savez(tmp_path / "sweep.npz", steps=steps,
             emb_pr=np.vstack([np.linspace(40, 20, steps.size)] * 2), wd=np.array(1.0))
    acc = pd.DataFrame({"run": np.repeat(["sweep/s0", "sweep/s1"], steps.size),
                        "step": np.tile(steps, 2),
                        "test_acc": np.tile(np.linspace(0, 1, steps.size), 2)})
    acc.to_csv(tmp_path / "acc.csv", index=False)
    with pytest.raises(LogFormatError) as ei:  # alone, the metrics are not a log
        read_any(tmp_path / "sweep.npz")
    assert ei.value.code is ErrorCode.MISSING_COLUMN
    t = read_any([tmp_path / "acc.csv", tmp_path / "sweep.npz"]).to_pandas()
    assert len(t) == 2 * steps.size
    assert t[["test_acc", "emb_pr"]].notna().all().all()
    assert set(t["run"]) == {"sweep/s0", "sweep/s1"} and set(t["wd"]) == {1.0}
