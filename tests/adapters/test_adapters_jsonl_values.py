"""JSON lines whose values Arrow cannot type on its own: read as numbers where that loses
nothing, exactly as text where it would (issue 39's two regressions)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from click.testing import CliRunner
from grokaudit.cli import cli


def _write(path: Path, runs: list[tuple[Any, dict[str, Any], float]]) -> Path:
    rows = []
    for run, cond, t_grok in runs:
        for s in range(0, 3001, 100):
            rows.append({"run": run, "step": s, "test_acc": 1 / (1 + np.exp(-(s - t_grok) / 100)),
                         "emb": 10 + 20 / (1 + np.exp((s - t_grok - 500) / 100)), **cond})
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def _audit(*args: Any) -> dict[str, Any]:
    r = CliRunner().invoke(cli, ["check", *map(str, args), "--json", "-"])
    assert r.exit_code in (0, 1), r.output
    return json.loads(r.stdout)


def test_a_number_spelt_as_text_in_one_record_is_that_number(tmp_path: Path) -> None:
    # wd 1.0 written "1.0" in its runs' records, numbers elsewhere: it was NOT_NUMERIC
    log = _write(tmp_path / "l.jsonl", [(f"{w}_{k}", {"wd": "1.0" if w == 1.0 else w}, 2000 / w)
                                        for w in (0.5, 1.0, 2.0) for k in range(2)])
    doc = _audit(log, "--by", "wd", "--metric", "emb")
    assert [c["axis_value"] for c in doc["studies"][0]["cells"]] == [0.5, 1.0, 2.0]


def test_run_ids_beyond_int64_stay_two_runs_exactly(tmp_path: Path) -> None:
    # read as floats, two ids became one (1.2345678901234567e+19): merged or DUPLICATE_ROWS
    a, b = 12345678901234567890, 12345678901234567891
    doc = _audit(_write(tmp_path / "l.jsonl", [(a, {}, 1000.0), (b, {}, 1300.0)]),
                 "--metric", "emb")
    assert sorted(r["run"] for r in doc["studies"][0]["runs"]) == [str(a), str(b)]


def test_run_ids_spelt_as_text_and_as_numbers_stay_apart(tmp_path: Path) -> None:
    doc = _audit(_write(tmp_path / "l.jsonl", [("007", {}, 1000.0), (7, {}, 1300.0)]),
                 "--metric", "emb")
    assert sorted(r["run"] for r in doc["studies"][0]["runs"]) == ["007", "7"]
