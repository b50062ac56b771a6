"""Round 11's paths under hostile input (issue 44): copies of long runs that differ only in
what equality ignores (the sign of a zero, NaN at the same step) are named together as
DUPLICATE_RUN, and a near-copy one value apart is not; thousands of chance fingerprint
candidates change nothing; run ids in odd spellings come out of ``check --json`` and out of
the validated log's conditions exactly as written, in the log's order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from grokaudit.schema import build_log_table
from helpers.hostile import cli, expect_audit, sweep_df, write_parquet


def _check(df: pd.DataFrame, tmp_path: Path, *args: str) -> dict[str, Any]:
    p = write_parquet(df, tmp_path / "log.parquet")
    j = tmp_path / "r.json"
    out = cli(["check", p, "--json", j, *args], cwd=tmp_path)
    expect_audit(out)
    doc: dict[str, Any] = json.loads(j.read_text(encoding="utf-8"))
    return doc


def _codes(doc: dict[str, Any]) -> set[str]:
    return {f["code"] for f in doc["findings"]}


def test_copies_equal_but_for_zero_signs_and_shared_gaps_are_one_run_twice(tmp_path: Path
                                                                           ) -> None:
    df = sweep_df()
    base = df[df["run"] == "wd1.0_s0"].reset_index(drop=True)
    base.loc[5, "emb_erank"] = 0.0
    base.loc[9, "emb_erank"] = np.nan  # a gap at the same step in every copy
    signed = base.assign(run="copy-signed")
    signed.loc[5, "emb_erank"] = -0.0  # -0.0 is 0.0: the same log
    near = base.assign(run="copy-near")
    near.loc[len(near) - 1, "emb_erank"] = float(near["emb_erank"].iloc[-1]) + 1e-9
    rest = df[df["run"] != "wd1.0_s0"]
    doc = _check(pd.concat([rest, base, signed, near], ignore_index=True), tmp_path,
                 "--by", "wd")
    assert "DUPLICATE_RUN" in _codes(doc)
    assert doc["input"]["duplicate_runs"] == [["copy-signed", "wd1.0_s0"]]


def test_many_runs_whose_sums_agree_by_chance_are_not_duplicates(tmp_path: Path) -> None:
    """Runs whose metric holds the same values in another order share every column's sum
    (the fingerprint's candidates): each is compared exactly, none is a duplicate."""
    rng = np.random.default_rng(5)
    df = sweep_df()
    frames = [df]
    base = df[df["run"] == "wd2.0_s1"].reset_index(drop=True)
    for k in range(40):
        shuffled = base.assign(run=f"perm{k}", seed=100 + k)
        vals = base["emb_erank"].to_numpy().copy()
        i, j = rng.choice(len(vals) // 2, 2, replace=False) + len(vals) // 2
        vals[i], vals[j] = vals[j], vals[i]  # a swap late in the run: the sums are the same
        shuffled["emb_erank"] = vals
        frames.append(shuffled)
    log = pd.concat(frames, ignore_index=True)
    doc = _check(log, tmp_path, "--by", "wd")
    metric = {name: g["emb_erank"].to_numpy() for name, g in log.groupby("run")}
    want = sorted(sorted(n for n in metric if np.array_equal(metric[n], metric[first]))
                  for first in metric)
    want = [g for i, g in enumerate(want) if len(g) > 1 and g not in want[:i]]
    assert doc["input"].get("duplicate_runs", []) == want


def test_odd_run_ids_come_out_as_written_in_the_log_order(tmp_path: Path) -> None:
    names = {(1.0, 0): "é s0", (1.0, 1): "日本", (1.0, 2): "a\tb", (2.0, 0): "🙂",
             (2.0, 1): "run 10", (2.0, 2): "run 9", (3.0, 0): "x" * 300, (3.0, 1): "'quote'",
             (3.0, 2): "NaN"}
    df = sweep_df(run_name=lambda wd, s: names[(wd, s)])
    doc = _check(df, tmp_path, "--by", "wd")
    (study,) = doc["studies"]
    assert sorted(r for c in study["cells"] for r in c["runs"]) == sorted(names.values())
    assert sorted(r["run"] for r in study["runs"]) == sorted(names.values())
    log = build_log_table(pd.read_parquet(tmp_path / "log.parquet"))
    order = list(dict.fromkeys(df["run"]))
    assert list(log.conditions.index) == order == [str(r) for r in log.run_ids]
    assert log.conditions.index.dtype == pd.Index(np.asarray(order, dtype=object)).dtype
