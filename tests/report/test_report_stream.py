"""The report of a log read in parts (``report --stream``, ``check --stream --report``) draws
the in-memory report's figures, byte for byte: each cell's runs are read again, a batch of
cells at a time, and only each cell's median and seed band is kept. Logs are written by
pyarrow's own writers: one file in row groups that cut runs, and a hive dataset folder."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("matplotlib", reason="the report needs matplotlib: pip install 'grokaudit[report]'")

from grokaudit.api import _config, audit_log, validated_log  # noqa: E402
from grokaudit.figures import Band, DashboardData, dashboard_data  # noqa: E402
from grokaudit.html_report import render_html  # noqa: E402
from grokaudit.loader import read_source  # noqa: E402
from grokaudit.readers import ADAPTERS  # noqa: E402
from grokaudit.stream import audit_stream_with_trajectories  # noqa: E402


def _log() -> pd.DataFrame:
    """Four cells of three seeds; the seeds of a cell log at different steps (the band is
    drawn on their union), one run from step 0 (a log-scaled axis leaves it out), one run
    stops early, one logs its metric only every other row."""
    rng = np.random.default_rng(11)
    frames = []
    for i, wd in enumerate((0.1, 0.5, 1.0, 3.0)):
        for seed in range(3):
            first, cad = (0 if seed == 0 else 40 + 10 * seed), 100 + 30 * seed
            end = 9_000 if (i, seed) == (2, 1) else 24_000
            s = np.arange(first, end, cad, dtype=np.int64)
            grok = 2_000 + 1_500 * i + 150 * seed
            test = np.where(s >= grok, 0.99, 0.05 + 0.01 * rng.random(s.size))
            m = 4.0 + i + 25.0 * np.exp(-np.clip(s - grok, 0, None) / 2_500.0)
            m = m * (1 + 0.003 * rng.standard_normal(s.size))
            if (i, seed) == (1, 2):
                m[1::2] = np.nan
            frames.append(pd.DataFrame({
                "run": f"wd{wd}_s{seed}", "step": s, "test_acc": test,
                "train_acc": np.minimum(1.0, 0.3 + s / 1_000.0), "emb_erank": m,
                "wd": wd, "seed": seed}))
    return pd.concat(frames, ignore_index=True)


def _file(tmp_path: Path) -> Path:
    path = tmp_path / "log.parquet"
    pq.write_table(pa.Table.from_pandas(_log(), preserve_index=False), path,
                   row_group_size=137)  # row groups that cut runs
    return path


def _hive(tmp_path: Path) -> Path:
    root = tmp_path / "sweep"
    pq.write_to_dataset(pa.Table.from_pandas(_log(), preserve_index=False), root,
                        partition_cols=["wd"])
    return root


def _in_memory(path: Path, **options: Any) -> tuple[Any, Any]:
    cfg = _config(None, options)
    log = validated_log(read_source(path, readers=ADAPTERS), cfg, str(path))
    return audit_log(log, cfg), log


def _same_band(a: Band | None, b: Band | None) -> None:
    assert (a is None) == (b is None)
    if a is not None and b is not None:
        assert a.n_runs == b.n_runs
        for f in ("step", "median", "low", "high"):
            x, y = getattr(a, f), getattr(b, f)
            assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True), f


def _same_data(a: list[DashboardData], b: list[DashboardData]) -> None:
    assert len(a) == len(b) > 0
    for da, db in zip(a, b, strict=True):
        assert da.xlim == db.xlim and da.grok_threshold == db.grok_threshold
        assert da.study.to_dict() == db.study.to_dict()
        assert len(da.cells) == len(db.cells)
        for ca, cb in zip(da.cells, db.cells, strict=True):
            assert ca.cell.to_dict() == cb.cell.to_dict()
            for f in ("metric", "test", "train"):
                _same_band(getattr(ca, f), getattr(cb, f))


@pytest.mark.parametrize("where", ["file", "hive"])
@pytest.mark.parametrize("part_rows", [150, 700, 10**6])
@pytest.mark.parametrize("log_steps", [False, True])
def test_streamed_trajectories_are_the_in_memory_trajectories(
        tmp_path: Path, where: str, part_rows: int, log_steps: bool) -> None:
    path = _file(tmp_path) if where == "file" else _hive(tmp_path)
    whole, log = _in_memory(path, by="wd", metrics=["emb_erank"])
    lines: list[str] = []
    streamed, traj = audit_stream_with_trajectories(path, by="wd", metrics=["emb_erank"],
                                                    part_rows=part_rows,
                                                    progress=lines.append)
    assert streamed.to_dict()["studies"] == whole.to_dict()["studies"]
    expected = [dashboard_data(s, log, whole, log_steps=log_steps) for s in whole.studies]
    got = traj.dashboard_data(streamed, log_steps=log_steps)
    _same_data(got, expected)
    batches = [ln for ln in lines if ln.startswith("figures:")]
    # a small part: the cells are read again in several batches; a large one: in one
    assert (len(batches) > 1) == (part_rows < 10**6)


@pytest.mark.parametrize("where", ["file", "hive"])
def test_the_figures_of_a_result_made_elsewhere_find_its_runs_by_name(
        tmp_path: Path, where: str) -> None:
    """The trajectories find a cell's runs by the audit's own run id objects, and by name
    when a result names them with other objects (here the in-memory audit's): the same
    bands either way, no cell left empty."""
    path = _file(tmp_path) if where == "file" else _hive(tmp_path)
    whole, log = _in_memory(path, by="wd", metrics=["emb_erank"])
    streamed, traj = audit_stream_with_trajectories(path, by="wd", metrics=["emb_erank"],
                                                    part_rows=700)
    ids = {id(r) for s in whole.studies for c in s.cells for r in c.runs}
    assert not ids & {id(r) for s in streamed.studies for c in s.cells for r in c.runs}
    expected = [dashboard_data(s, log, whole) for s in whole.studies]
    _same_data(traj.dashboard_data(whole), expected)
    _same_data(traj.dashboard_data(streamed), expected)


def test_a_cell_never_splits_across_batches(tmp_path: Path) -> None:
    """With parts smaller than one run, each batch still holds whole cells: the same bands."""
    path = _file(tmp_path)
    whole, log = _in_memory(path, by="wd", metrics=["emb_erank"])
    lines: list[str] = []
    streamed, traj = audit_stream_with_trajectories(path, by="wd", metrics=["emb_erank"],
                                                    part_rows=1, progress=lines.append)
    _same_data(traj.dashboard_data(streamed),
               [dashboard_data(s, log, whole) for s in whole.studies])
    cells = sum(len(s.cells) for s in whole.studies)
    assert sum(ln.startswith("figures:") for ln in lines) == cells


def test_the_streamed_page_is_the_in_memory_page(tmp_path: Path) -> None:
    path = _hive(tmp_path)
    whole, log = _in_memory(path, by="wd", metrics=["emb_erank"])
    streamed, traj = audit_stream_with_trajectories(path, by="wd", metrics=["emb_erank"],
                                                    part_rows=500)
    streamed = dataclasses.replace(streamed, trail=whole.trail)
    assert render_html(streamed, traj, jobs=1) == render_html(whole, log, jobs=1)


def _cli(*args: str) -> tuple[int, str, str]:
    from click.testing import CliRunner
    from grokaudit.cli import cli

    r = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


def _without_command(html: str) -> str:
    """The page without the trail's command line (it names the flags, which differ)."""
    start = html.index("<li>command: ")
    return html[:start] + html[html.index("</li>", start):]


@pytest.mark.parametrize("how", [["report", "-o"], ["check", "--report"]])
def test_report_stream_writes_the_page_report_writes(tmp_path: Path, how: list[str]) -> None:
    path = _hive(tmp_path)
    pages = {}
    for name, extra in (("whole", []), ("parts", ["--stream", "--part-rows", "400"])):
        out = tmp_path / f"{name}.html"
        code, _, _ = _cli(how[0], str(path), "--by", "wd", "--metric", "emb_erank",
                          how[1], str(out), *extra)
        assert code in (0, 1)
        pages[name] = (code, out.read_text())
    assert pages["whole"][0] == pages["parts"][0]
    assert _without_command(pages["whole"][1]) == _without_command(pages["parts"][1])
    assert "--stream" in pages["parts"][1] and "--stream" not in pages["whole"][1]


@pytest.mark.parametrize("extra, option", [
    (["--part-rows", "500"], "--part-rows"),
    (["--stream", "--format", "table"], "--stream"),
    (["--stream", "--part-rows", "0"], "part_rows"),
])
def test_report_stream_refusals_are_one_line_and_exit_2(tmp_path: Path, extra: list[str],
                                                        option: str) -> None:
    path = _file(tmp_path)
    out = tmp_path / "r.html"
    code, stdout, err = _cli("report", str(path), "--by", "wd", "-o", str(out), *extra)
    assert code == 2 and stdout == "" and not out.exists()
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert option.replace("_", "-") in err


def _bands_by_interpolation(log: Any, rows: list[int], column: str) -> tuple[np.ndarray, ...]:
    """The band as defined: each run's logged points interpolated onto the union of the
    runs' steps (within its own range), then the median, lowest and highest per step."""
    values = {"test_acc": log.test_acc, "train_acc": log.train_acc}.get(column)
    values = log.series[column] if values is None else values
    per_run = []
    for i in rows:
        a, b = int(log.offsets[i]), int(log.offsets[i + 1])
        v, s = values[a:b].astype(float), log.step[a:b].astype(float)
        ok = ~np.isnan(v)
        if ok.any():
            per_run.append((s[ok], v[ok]))
    grid = np.unique(np.concatenate([s for s, _ in per_run]))
    M = np.vstack([np.interp(grid, s, v, left=np.nan, right=np.nan) for s, v in per_run])
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return grid, np.nanmedian(M, axis=0), np.nanmin(M, axis=0), np.nanmax(M, axis=0)


@pytest.mark.parametrize("rows", [[4, 0, 3, 1, 2], [0, 1, 2, 3, 4], [1, 2, 3]],
                         ids=["scattered", "consecutive", "some consecutive"])
@pytest.mark.parametrize("shape", ["one grid", "one grid, float32", "own grids", "a gap",
                                   "a run never logged"])
def test_a_cell_band_is_the_per_run_interpolation(shape: str, rows: list[int]) -> None:
    """Whichever runs and in whatever order: runs consecutive in the log on one grid are
    read as a slice of the column (no gather), and give the band as defined."""
    from grokaudit.figures import _one_grid, cell_band

    rng = np.random.default_rng(3)
    frames = []
    for k in range(5):
        s = np.arange(0, 2_000, 100 if shape != "own grids" else 100 + 7 * k, dtype=np.int64)
        m = 10.0 + k + rng.standard_normal(s.size)
        if shape == "one grid, float32":
            m = m.astype(np.float32)
        if shape == "a gap" and k == 2:
            m[3:6] = np.nan  # a run that misses some steps of the grid
        if shape == "a run never logged" and k == 4:
            m[:] = np.nan
        frames.append(pd.DataFrame({"run": f"r{k}", "step": s, "test_acc": 0.5,
                                    "train_acc": 1.0, "emb_erank": m, "wd": 1.0}))
    cfg = _config(None, {"metrics": ["emb_erank"]})
    log = validated_log(pd.concat(frames, ignore_index=True), cfg)
    if shape == "one grid, float32":
        assert log.series["emb_erank"].dtype == np.float32  # kept as stored
    band = cell_band(log, rows, "emb_erank")
    assert band is not None
    # the slice is read exactly where the runs are consecutive and share one full grid
    sliced = _one_grid(log, np.asarray(rows), log.series["emb_erank"]) is not None
    full = shape.startswith("one grid") or (shape == "a run never logged" and 4 not in rows)
    assert sliced == (full and rows == sorted(rows))
    grid, med, low, high = _bands_by_interpolation(log, rows, "emb_erank")
    assert band.n_runs == len(rows) - (shape == "a run never logged" and 4 in rows)
    for got, want in ((band.step, grid), (band.median, med), (band.low, low),
                      (band.high, high)):
        assert np.array_equal(got, want, equal_nan=True)


def test_a_batch_holds_no_more_rows_than_a_part_unless_one_cell_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cells of long runs beside cells of short ones, in every part: each batch read again
    holds at most ``part_rows`` rows, or one cell (batches were sized by each part's average
    run, and a batch of long runs was 8× the part)."""
    import grokaudit.stream as st

    frames = []
    for k in range(12):
        for cell, n in ((k, 300), (100 + k, 10), (200 + k, 10)):
            for seed in range(2):
                s = np.arange(n, dtype=np.int64) * 10
                frames.append(pd.DataFrame({
                    "run": f"{cell}_s{seed}", "step": s,
                    "test_acc": np.where(s >= s[-1] // 3, 0.99, 0.05), "train_acc": 1.0,
                    "emb_erank": 5 + np.exp(-s / 100.0), "cellid": cell, "seed": seed}))
    path = tmp_path / "log.parquet"
    pq.write_table(pa.Table.from_pandas(pd.concat(frames, ignore_index=True),
                                        preserve_index=False), path, row_group_size=64)
    sizes: list[int] = []
    fetch = st._Stream.fetch

    def counted(self: Any, runs: np.ndarray, columns: Any = None) -> Any:
        out = fetch(self, runs, columns)
        sizes.append(int(out[0].offsets[-1]))
        return out

    part_rows = 1000
    res, traj = audit_stream_with_trajectories(path, by="cellid", metrics=["emb_erank"],
                                               part_rows=part_rows)
    monkeypatch.setattr(st._Stream, "fetch", counted)
    traj.dashboard_data(res)
    assert len(sizes) > 1 and max(sizes) <= part_rows  # the largest cell is 600 rows
    assert sum(sizes) == sum(len(f) for f in frames)
