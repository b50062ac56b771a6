"""Values as typed: axis and condition values shown by the shortest text that round-trips in
their stored dtype, booleans as false/true, no numpy reprs; one identity per value: a float32
condition is read as its float32 text, in the tables and in the JSON (issue 19)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
from click.testing import CliRunner
from grokaudit.cli import cli
from grokaudit.text import format_value

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "reference_runs" / "data" / "mlp_wd_sweep_p59.parquet"


def test_format_value_round_trips_in_the_stored_type() -> None:
    assert format_value(np.float32(0.85)) == "0.85"
    assert float(np.float32(format_value(np.float32(0.1) * np.float32(3)))) == \
        np.float32(0.1) * np.float32(3)
    assert format_value(np.float64(1.0)) == "1.0" and format_value(np.int64(64)) == "64"
    assert format_value(np.bool_(False)) == "false" and format_value(True) == "true"
    assert "np." not in format_value(np.float64(0.3))


def test_a_float32_and_boolean_sweep_reads_as_logged(tmp_path: Path) -> None:
    df = pd.read_parquet(LOG)[["run", "step", "test_acc", "train_acc", "emb_pr", "wd", "arch"]]
    df["rho"] = (df["wd"] / 10 + 0.5).astype(np.float32)  # 0.503, 0.8, 0.9, 1.0, 1.15
    df["big"] = df["wd"] > 4.5
    df = df.drop(columns="wd")
    p = tmp_path / "f32.parquet"
    df.to_parquet(p)
    r = CliRunner().invoke(cli, ["check", str(p), "--by", "rho", "--metric", "emb_pr",
                                 "--cell", "arch,big", "-v"])
    assert r.exit_code in (0, 1), r.output
    shown = set(re.findall(r"rho=(\S+)", r.output))
    assert {"0.8", "0.9", "1.15"} <= shown, shown
    assert not [v for v in shown if len(v) > 8], shown  # no float64 expansions
    assert "big=false" in r.output and "big=true" in r.output
    assert "np.float" not in r.output and "0.800000011920929" not in r.output
    doc = json.loads(CliRunner().invoke(cli, ["check", str(p), "--by", "rho", "--metric",
                                              "emb_pr", "--cell", "arch,big", "--json",
                                              "-"]).output)
    axis = [c["axis_value"] for s in doc["studies"] for c in s["cells"]]
    # one identity per value: the float32 0.8 is the number 0.8 in the JSON too, so that a
    # float64 spelling of it in another file is the same cell
    assert 0.8 in axis and float(np.float32(0.8)) not in axis
    assert {s["study"]["big"] for s in doc["studies"]} == {False, True}
