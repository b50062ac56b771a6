"""Hive-partitioned Parquet datasets (issue 22): conditions come from the folder names that
pyarrow, pandas and Spark write (``wd=0.1/seed=3/part-0.parquet``), with no flag, and the audit
is the one of the same log in one file."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from grokaudit import audit_path
from grokaudit.errors import ErrorCode, LogFormatError


def _flat(sweep: pd.DataFrame, tmp: Path) -> Path:
    p = tmp / "flat.parquet"
    sweep.to_parquet(p, index=False)
    return p


def test_a_pyarrow_dataset_reads_its_partitions_as_conditions(sweep: pd.DataFrame,
                                                               tmp_path: Path) -> None:
    pq.write_to_dataset(pa.Table.from_pandas(sweep, preserve_index=False),
                        tmp_path / "ds", partition_cols=["wd", "seed"])
    assert not any(p.suffix == ".parquet" for p in (tmp_path / "ds").iterdir())
    by_folder = json.loads(audit_path(tmp_path / "ds", by="wd").to_json())
    by_file = json.loads(audit_path(_flat(sweep, tmp_path), by="wd").to_json())
    assert by_folder["studies"] == by_file["studies"]
    assert by_folder["findings"] == by_file["findings"]
    assert set(by_folder["input"]["conditions"]) == {"wd", "seed"}
    assert by_folder["input"]["rows_read"] == len(sweep)


def test_pandas_partitions_with_text_values_and_escapes(sweep: pd.DataFrame,
                                                        tmp_path: Path) -> None:
    df = sweep.copy()
    df["arch"] = ["mlp/wide" if s == 0 else "mlp" for s in df["seed"]]
    df.to_parquet(tmp_path / "ds", partition_cols=["arch", "wd"], index=False)
    res = audit_path(tmp_path / "ds", by="wd", cell=["arch"])
    archs = {s.study.get("arch") for s in res.studies}
    assert archs == {"mlp/wide", "mlp"}  # "/" came back from its percent-escape


def test_a_missing_partition_value_is_a_missing_condition(sweep: pd.DataFrame,
                                                          tmp_path: Path) -> None:
    df = sweep.copy()
    df["wd"] = df["wd"].where(df["seed"] != 0)  # one seed's runs have no wd
    pq.write_to_dataset(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "ds",
                        partition_cols=["wd"])
    assert (tmp_path / "ds" / "wd=__HIVE_DEFAULT_PARTITION__").is_dir()
    with pytest.raises(LogFormatError) as exc:
        audit_path(tmp_path / "ds", by="wd")
    assert exc.value.code is ErrorCode.CONDITION_MISSING


def test_a_nan_partition_value_is_a_missing_condition(sweep: pd.DataFrame,
                                                      tmp_path: Path) -> None:
    """A folder ``wd=NaN`` (a NaN condition, as Spark names it) is a run without its wd,
    refused as such, never "wd is not numeric"."""
    pq.write_to_dataset(pa.Table.from_pandas(sweep, preserve_index=False), tmp_path / "ds",
                        partition_cols=["wd"])
    first = sorted((tmp_path / "ds").iterdir())[0]
    first.rename(first.with_name("wd=NaN"))
    with pytest.raises(LogFormatError) as exc:
        audit_path(tmp_path / "ds", by="wd")
    assert exc.value.code is ErrorCode.CONDITION_MISSING


def _without_source(d: dict[str, object]) -> dict[str, object]:
    d = dict(d)
    d.pop("trail", None)
    inp = dict(d["input"])  # type: ignore[call-overload]
    inp.pop("source")
    inp.pop("provenance")
    d["input"] = inp
    return d


@pytest.mark.parametrize("writer", ["pandas", "pyarrow"])
def test_run_partition_folders_name_the_runs(sweep: pd.DataFrame, tmp_path: Path,
                                             writer: str) -> None:
    """``partition_cols=["run"]``: the files hold no run column, the ``run=ID`` folders name
    the runs. The audit is the one-file audit, in memory and read in parts (it was refused as
    a "random search" over a ``run_cond`` condition in memory, and had no run column in
    parts)."""
    from grokaudit.stream import audit_stream

    if writer == "pandas":
        sweep.to_parquet(tmp_path / "ds", partition_cols=["run"], index=False)
    else:
        pq.write_to_dataset(pa.Table.from_pandas(sweep, preserve_index=False), tmp_path / "ds",
                            partition_cols=["run"])
    assert all(p.name.startswith("run=") for p in (tmp_path / "ds").iterdir())
    by_file = _without_source(audit_path(_flat(sweep, tmp_path), by="wd").to_dict())
    by_folder = _without_source(audit_path(tmp_path / "ds", by="wd").to_dict())
    streamed = _without_source(audit_stream(tmp_path / "ds", by="wd", part_rows=50).to_dict())
    assert by_folder == by_file
    assert streamed == by_file


def test_run_folder_names_stay_text(sweep: pd.DataFrame, tmp_path: Path) -> None:
    """A run id is a name: ``run=007`` and ``run=7`` are two runs, never the number 7."""
    from grokaudit.stream import audit_stream

    first, second = sorted(sweep["run"].unique())[:2]
    df = sweep[sweep["run"].isin([first, second])].copy()
    df["run"] = df["run"].map({first: "007", second: "7"})
    root = tmp_path / "ds"
    for rid, rows in df.groupby("run"):
        (root / f"run={rid}").mkdir(parents=True)
        pq.write_table(pa.Table.from_pandas(rows.drop(columns=["run"]), preserve_index=False),
                       root / f"run={rid}" / "part-0.parquet")
    for res in (audit_path(root, by="wd"), audit_stream(root, by="wd")):
        assert res.to_dict()["input"]["runs_kept"] == 2
        ids = {r for s in res.studies for c in s.cells for r in c.runs}
        assert ids == {"007", "7"}


@pytest.mark.parametrize("case", ["a part outside", "a part with its own run column"])
def test_runs_named_two_ways_are_refused_on_both_paths(sweep: pd.DataFrame, tmp_path: Path,
                                                       case: str) -> None:
    """``run=ID`` folders beside a part in none, or around a part with its own ``run``
    column: refused naming that part, in memory as in parts (in memory the adapters read
    ``run`` as a condition, ``run_cond``, and refused the design as "a random search")."""
    from grokaudit.stream import audit_stream

    root = tmp_path / "ds"
    for k, (rid, rows) in enumerate(sweep.groupby("run")):
        keep = case == "a part with its own run column" and k == 0
        table = pa.Table.from_pandas(rows if keep else rows.drop(columns=["run"]),
                                     preserve_index=False)
        if case == "a part outside" and k == 0:
            root.mkdir(parents=True, exist_ok=True)
            pq.write_table(table, root / "loose.parquet")
            continue
        (root / f"run={rid}").mkdir(parents=True)
        pq.write_table(table, root / f"run={rid}" / "part-0.parquet")
    for audit in (lambda: audit_path(root, by="wd"), lambda: audit_stream(root, by="wd")):
        with pytest.raises(LogFormatError) as exc:
            audit()
        assert exc.value.code is ErrorCode.FORMAT_MISMATCH and exc.value.column == "run"
        assert ("loose.parquet" if case == "a part outside" else "run=") in str(exc.value)
