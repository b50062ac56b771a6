"""The public sources of benchmarks/reproduce_recipes.py: the compression-clock harness's
metrics.jsonl logs (and the bundled extract of two of them) are read into per-seed trajectories
and T_grok, and the comparison bands and checks behave as documented (docs/trainer.md,
"Reproduction"). Fast: no training."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
EXTRACT = ROOT / "benchmarks" / "public" / "compression_clock_mlp_p59_wd2.json"


@pytest.fixture(scope="module")
def bench():  # type: ignore[no-untyped-def]
    import reproduce_recipes  # benchmarks/, on the tests' path (pyproject pythonpath)

    return reproduce_recipes


def _write_jsonl(path: Path, rows: list[dict[str, float]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _row(step: int, acc: float, sq: float) -> dict[str, float]:
    return {"step": step, "train_acc": 1.0, "test_acc": acc, "embedding.sqnorm": sq,
            "embedding.rv": sq + 5.0}


def test_jsonl_logs_give_common_steps_and_each_seeds_own_t_grok(bench, tmp_path: Path) -> None:
    # seed a stops earlier (the harness's early stop); T_grok is read from all of a seed's rows
    a = _write_jsonl(tmp_path / "a.jsonl", [_row(0, 0.0, 40.0), _row(250, 0.5, 30.0),
                                            _row(500, 0.95, 20.0)])
    b = _write_jsonl(tmp_path / "b.jsonl", [_row(0, 0.0, 41.0), _row(250, 0.2, 35.0),
                                            _row(500, 0.6, 25.0), _row(750, 0.92, 15.0)])
    pub = bench.load_public_jsonl([a, b], "embedding.sqnorm", 0.9)
    assert pub.steps.tolist() == [0, 250, 500]
    assert pub.t_grok.tolist() == [500.0, 750.0]
    assert pub.metric.tolist() == [[40.0, 30.0, 20.0], [41.0, 35.0, 25.0]]
    rv = bench.load_public_jsonl([a, b], "embedding.rv", 0.9)
    np.testing.assert_allclose(rv.metric, pub.metric + 5.0)
    never = _write_jsonl(tmp_path / "c.jsonl", [_row(0, 0.0, 40.0), _row(250, 0.3, 30.0)])
    assert bench.load_public_jsonl([never], "embedding.sqnorm", 0.9).t_grok.tolist() == [-1.0]


def test_bundled_extract_reads_as_the_rows_it_holds(bench) -> None:
    doc = json.loads(EXTRACT.read_text(encoding="utf-8"))
    assert "MIT License" in doc["licence"] and doc["source"].startswith("ClevixLab/")
    cols = doc["columns"]
    pub = bench.load_public_jsonl([EXTRACT], "embedding.sqnorm", 0.9)
    assert pub.metric.shape == (len(doc["runs"]), len(pub.steps))
    for i, rows in enumerate(doc["runs"].values()):
        first = next(r[0] for r in rows if r[cols.index("test_acc")] >= 0.9)
        assert pub.t_grok[i] == first
        by_step = {r[0]: r[cols.index("embedding.sqnorm")] for r in rows}
        assert pub.metric[i].tolist() == [by_step[s] for s in pub.steps]
    # the extract holds every comparison step of the compression-clock mode
    mode = bench.MODES["compression-clock"]
    assert set(mode.check_steps) | set(mode.show_steps) <= set(pub.steps.tolist())


def _trainer(values: dict[int, list[float]], t_grok: list[float]) -> tuple[pd.DataFrame, pd.Series]:
    wide = pd.DataFrame(values).T
    wide.columns = [f"r{i}" for i in range(wide.shape[1])]
    return wide, pd.Series(t_grok, index=wide.columns)


def test_few_public_seeds_are_compared_with_their_full_range(bench, tmp_path: Path) -> None:
    a = _write_jsonl(tmp_path / "a.jsonl", [_row(0, 0.0, 40.0), _row(1000, 0.95, 20.0)])
    b = _write_jsonl(tmp_path / "b.jsonl", [_row(0, 0.0, 44.0), _row(1000, 0.95, 24.0)])
    pub = bench.load_public_jsonl([a, b], "embedding.sqnorm", 0.9)
    assert bench.band_percentiles(2) == (0.0, 100.0) and bench.band_percentiles(20) == (10.0, 90.0)
    inside = _trainer({0: [41.0, 43.0], 1000: [21.0, 23.0]}, [1000.0, 1000.0])
    lines, ok = bench.compare(pub, *inside, check_steps=(1000,), show_steps=())
    assert ok and "min, max" in lines[0] and lines[-2].endswith("| yes |")
    outside = _trainer({0: [41.0, 43.0], 1000: [25.0, 26.0]}, [1000.0, 1000.0])
    lines, ok = bench.compare(pub, *outside, check_steps=(1000,), show_steps=())
    assert not ok and "**no**" in lines[-2]
    # an unchecked step outside the band is shown, not failed; T_grok outside the range fails
    lines, ok = bench.compare(pub, *outside, check_steps=(), show_steps=(1000,))
    assert ok and "(no)" in lines[-2]
    early = _trainer({0: [41.0, 43.0], 1000: [21.0, 23.0]}, [500.0, 500.0])
    _, ok = bench.compare(pub, *early, check_steps=(), show_steps=())
    assert not ok


def test_trainer_test_acc_is_shown_beside_the_metric_when_given(bench, tmp_path: Path) -> None:
    a = _write_jsonl(tmp_path / "a.jsonl", [_row(0, 0.0, 40.0), _row(1000, 0.95, 20.0)])
    pub = bench.load_public_jsonl([a], "embedding.sqnorm", 0.9)
    wide, tg = _trainer({0: [41.0], 1000: [21.0]}, [1000.0])
    acc, _ = _trainer({0: [0.25], 1000: [0.75]}, [1000.0])
    lines, _ = bench.compare(pub, wide, tg, check_steps=(), show_steps=(1000,), acc=acc)
    assert "| 0.25 |" in lines[2] and "| 0.75 |" in lines[3]
    assert all(ln.count("|") == 7 for ln in lines)  # six columns on every row
    plain, _ = bench.compare(pub, wide, tg, check_steps=(), show_steps=(1000,))
    assert all(ln.count("|") == 6 for ln in plain)  # without it, the five published columns
