"""W&B: offline run directories written by wandb itself, hand-made panel CSVs, history exports."""

from __future__ import annotations

import math
import struct
import time
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from grokaudit.adapters import detect_format, read_log
from grokaudit.errors import LogFormatError
from grokaudit.schema import build_log_table

# -- offline runs -------------------------------------------------------------------------------

def read_as_percent(t) -> float:  # type: ignore[no-untyped-def]
    """The reader keeps accuracies as logged; the audit reads them as percent (once, over
    every input): the largest test_acc it then holds."""
    from grokaudit.schema import build_log_table

    log = build_log_table(t)
    assert log.summary.accuracy_scale["test_acc"]["scale"] == 100.0
    return float(np.nanmax(log.test_acc))

def log_offline(root: Path, run_id: str, rows: list[dict], *, name: str | None = None,
                config: dict | None = None, resume: bool = False) -> Path:
    """One ``wandb.init(mode="offline")`` session under ``root``; returns its ``.wandb`` file.

    Creates root/wandb/offline-run-<date>-<run_id>/run-<run_id>.wandb (a second session with the
    same id — a resumed run — creates a second such directory). Returns only once the file is
    complete (:func:`wait_for_wandb_file`): with wandb 0.31, ``run.finish()`` can return while
    the service is still writing it.
    """
    wandb = pytest.importorskip("wandb", reason="the [wandb] extra is not installed")
    before = set(root.glob("wandb/offline-run-*"))
    run = wandb.init(project="grokaudit-tests", id=run_id, name=name, config=config,
                     dir=str(root), mode="offline", resume="allow" if resume else None,
                     settings=wandb.Settings(console="off", x_disable_stats=True,
                                             x_disable_meta=True, disable_git=True))
    steps = set()
    for row in rows:
        step = row.pop("_step")
        steps.add(step)
        run.log(row, step=step)
    run.finish()
    (new,) = set(root.glob("wandb/offline-run-*")) - before
    f = new / f"run-{run_id}.wandb"
    wait_for_wandb_file(f, history=len(steps))
    return f


def wait_for_wandb_file(f: Path, *, history: int, timeout: float = 60.0,
                        poll: float = 0.05) -> None:
    """Wait until the ``.wandb`` file ``f`` itself is complete, or fail after ``timeout`` s.

    Complete means: the project's reader (:func:`grokaudit.adapters.wandb.records`) reads it
    with no ``SOURCE_TRUNCATED`` finding (no record cut short), it holds at least ``history``
    history records, its last record is the run's ``exit`` record (the last one wandb writes),
    and its size did not change between two polls. No fixed sleep: it returns as soon as the
    file is complete (normally at the first poll).
    """
    from grokaudit.adapters.points import Points
    from grokaudit.adapters.wandb import records
    from wandb.proto import wandb_internal_pb2 as pb

    deadline = time.monotonic() + timeout
    last_size = -1
    state = "the file does not exist"
    while True:
        if f.is_file():
            data = f.read_bytes()
            found = Points()
            try:
                payloads = records(data, str(f), found)
            except LogFormatError:  # the header is not written yet
                payloads = []
            stable, last_size = len(data) == last_size, len(data)
            state = f"{len(data)} bytes, {len(payloads)} records, {len(found.findings)} findings"
            if stable and payloads and not found.findings:  # decode only a file at rest
                kinds = [pb.Record.FromString(b).WhichOneof("record_type") for b in payloads]
                n_hist = kinds.count("history")
                if n_hist >= history and kinds[-1] == "exit":
                    return
                state += f", {n_hist} of {history} history records, last {kinds[-1]!r}"
        if time.monotonic() > deadline:
            pytest.fail(f"{f} still incomplete {timeout:g} s after run.finish(): {state}")
        time.sleep(poll)


def test_offline_sweep_matches_canonical(wandb_env: Path, sweep: pd.DataFrame) -> None:
    for run, g in sweep.groupby("run"):
        rows = [{"_step": int(r.step), "test/acc": r.test_acc, "train/acc": r.train_acc,
                 "emb_erank": r.emb_erank} for r in g.itertuples()]
        log_offline(wandb_env, str(run).replace(".", ""), rows, name=str(run),
                    config={"wd": float(g.wd.iloc[0]), "seed": int(g.seed.iloc[0])})
    assert detect_format(wandb_env) == "wandb-offline"
    t = read_log(wandb_env)
    build_log_table(t)
    got = t.to_pandas()
    ref = sweep.sort_values(["run", "step"]).reset_index(drop=True)
    for col in ("test_acc", "train_acc", "emb_erank", "wd", "seed"):
        np.testing.assert_array_equal(got[col].to_numpy(), ref[col].to_numpy())


def test_resumed_offline_run_merged_last_writer_wins(wandb_env: Path, codes, prov) -> None:
    log_offline(wandb_env, "abc", [{"_step": s, "test_acc": 0.1} for s in range(0, 100, 10)],
                name="r")
    log_offline(wandb_env, "abc", [{"_step": s, "test_acc": 0.7} for s in range(50, 160, 10)],
                resume=True)
    t = read_log(wandb_env / "wandb")
    df = t.to_pandas().set_index("step")
    assert len(df) == 16 and set(df.run) == {"r"}
    assert df.loc[40, "test_acc"] == 0.1 and df.loc[50, "test_acc"] == 0.7
    assert codes(t) == ["RESUMED_DUPLICATES"] and prov(t)["findings"][0]["count"] == 5


def test_two_runs_sharing_a_display_name_stay_two_runs(wandb_env: Path, codes) -> None:
    """Runs of a sweep a script names alike (``wandb.init(name="reverse")``) were merged into
    one run by their display name: one run's steps overwrote the other's (a
    RESUMED_DUPLICATES finding, as if resumed). Different ids are different runs, named
    ``<name>/<id>``; one id in two directories (a resume) stays one run."""
    log_offline(wandb_env, "id1", [{"_step": s, "test_acc": 0.1} for s in range(0, 100, 10)],
                name="reverse")
    log_offline(wandb_env, "id2", [{"_step": s, "test_acc": 0.9} for s in range(0, 60, 10)],
                name="reverse")
    log_offline(wandb_env, "id3", [{"_step": s, "test_acc": 0.5} for s in range(0, 30, 10)],
                name="alone")
    t = read_log(wandb_env / "wandb")
    df = t.to_pandas()
    assert sorted(set(df.run)) == ["alone", "reverse/id1", "reverse/id2"]
    assert len(df) == 10 + 6 + 3 and "RESUMED_DUPLICATES" not in codes(t)
    assert set(df[df.run == "reverse/id1"].test_acc) == {0.1}
    assert set(df[df.run == "reverse/id2"].test_acc) == {0.9}


def test_offline_nan_and_percent(wandb_env: Path, prov) -> None:
    rows = [{"_step": s, "test_acc": 10.0 * s, "emb_erank": math.nan if s == 3 else 1.0}
            for s in range(10)]
    log_offline(wandb_env, "nanrun", rows)
    t = read_log(wandb_env)
    df = t.to_pandas()
    assert len(df) == 10 and np.isnan(df["emb_erank"].iloc[3])
    assert df["test_acc"].max() == pytest.approx(90.0)  # as logged
    assert read_as_percent(t) == pytest.approx(0.9)


@pytest.mark.slow  # the writer, not the reader, takes the time
def test_offline_100k_steps_read_in_full(wandb_env: Path) -> None:
    n = 100_001
    log_offline(wandb_env, "big", [{"_step": s, "test_acc": (s % 101) / 101} for s in range(n)])
    t = read_log(wandb_env)
    assert t.num_rows == n
    np.testing.assert_array_equal(t.column("test_acc").to_numpy(), (np.arange(n) % 101) / 101)


@pytest.fixture
def small_offline(wandb_env: Path) -> Path:
    return log_offline(wandb_env, "small",
                       [{"_step": s, "test_acc": s / 400} for s in range(400)])


def _mid_record(data: bytes, target: int) -> int:
    """An offset inside the payload of the first record (leveldb framing: 32 KiB blocks, 7-byte
    heads, a block's last < 7 bytes padding) that ends after ``target``: a cut there always
    leaves a partial record. (A cut at a record boundary or in a block's padding leaves a
    shorter, whole log, which no reader can tell from one that ended there; where a fixed
    fraction of the file falls depends on what wandb wrote, and it once fell on one.)"""
    block = 32768
    pos = 7  # the W&B file header
    while True:
        if block - pos % block < 7:
            pos += block - pos % block  # padding
            continue
        length = struct.unpack_from("<H", data, pos + 4)[0]
        end = pos + 7 + length
        if end > target and length >= 2:
            return pos + 7 + length // 2
        pos = end


def test_truncated_wandb_file_reported_with_offset(small_offline: Path, prov, codes) -> None:
    data = small_offline.read_bytes()
    cut = _mid_record(data, len(data) * 2 // 3)
    small_offline.write_bytes(data[:cut])
    t = read_log(small_offline.parent)
    assert "SOURCE_TRUNCATED" in codes(t)
    f = next(x for x in prov(t)["findings"] if x["code"] == "SOURCE_TRUNCATED")
    assert f["file"] == str(small_offline) and 0 < f["offset"] < cut
    assert 0 < t.num_rows < 400


def test_flipped_byte_fails_leveldb_crc(small_offline: Path, prov, codes) -> None:
    data = bytearray(small_offline.read_bytes())
    # walk the framing to the 40th record of block 0 and corrupt its payload
    pos, k = 7, 0
    while k < 40:
        length = struct.unpack_from("<H", data, pos + 4)[0]
        pos += 7 + length
        k += 1
    crc, length, kind = struct.unpack_from("<IHB", data, pos)
    assert zlib.crc32(bytes(data[pos + 6:pos + 7 + length])) == crc
    data[pos + 7 + length // 2] ^= 0x01
    small_offline.write_bytes(bytes(data))
    t = read_log(small_offline.parent)
    assert "SOURCE_TRUNCATED" in codes(t)
    f = next(x for x in prov(t)["findings"] if x["code"] == "SOURCE_TRUNCATED")
    assert f["offset"] == pos and f["file"] == str(small_offline)
    assert t.num_rows < 400  # the rest of the block is skipped, and that is reported


@pytest.mark.parametrize("content", [b"", b":W&B", b"PK\x03\x04 not a wandb file"])
def test_empty_or_wrong_wandb_file(tmp_path: Path, content: bytes) -> None:
    pytest.importorskip("wandb", reason="the [wandb] extra is not installed")
    d = tmp_path / "offline-run-x-abc"
    d.mkdir()
    f = d / "run-abc.wandb"
    f.write_bytes(content)
    with pytest.raises(LogFormatError) as exc:
        read_log(d, "wandb-offline")
    assert exc.value.path == str(f)


# -- panel CSV exports (hand-made in W&B's layout) ----------------------------------------------

def panel_csv(path: Path, sweep: pd.DataFrame) -> None:
    """Step,"<run> - test/acc","<run> - test/acc__MIN","<run> - test/acc__MAX",... (wide)."""
    wide = pd.DataFrame({"Step": np.sort(sweep["step"].unique())})
    for run, g in sweep.groupby("run"):
        for col, metric in (("test_acc", "test/acc"), ("emb_erank", "emb_erank")):
            v = g.set_index("step")[col].reindex(wide["Step"]).to_numpy()
            wide[f"{run} - {metric}"] = v
            wide[f"{run} - {metric}__MIN"] = v
            wide[f"{run} - {metric}__MAX"] = v
    wide.to_csv(path, index=False)


def test_panel_csv_flagged_downsampled(tmp_path: Path, sweep: pd.DataFrame, prov, codes) -> None:
    p = tmp_path / "panel.csv"
    panel_csv(p, sweep)
    assert detect_format(p) == "wandb-csv"
    t = read_log(p, cond={"wd": r"wd([0-9.]+)", "seed": r"_s(\d+)"})
    build_log_table(t)
    # one finding for the chart, naming every run it holds
    assert codes(t) == ["SOURCE_DOWNSAMPLED"]
    assert sorted(prov(t)["findings"][0]["runs"]) == sorted(sweep["run"].unique())
    assert prov(t)["downsampled_runs"] == sorted(sweep["run"].unique())
    df = t.to_pandas()
    ref = sweep.sort_values(["run", "step"]).reset_index(drop=True)
    np.testing.assert_array_equal(df["test_acc"].to_numpy(), ref["test_acc"].to_numpy())


def test_panel_csv_time_axis_refused(tmp_path: Path) -> None:
    p = tmp_path / "panel.csv"
    pd.DataFrame({"Relative Time (Process)": [0.0, 1.0], "r - test/acc": [0.1, 0.2]}).to_csv(
        p, index=False)
    with pytest.raises(LogFormatError) as exc:
        read_log(p)
    assert exc.value.column == "Relative Time (Process)"


# -- history exports ------------------------------------------------------------------------------

@pytest.mark.parametrize("n_rows", [499, 500, 1500])
def test_history_export_possibly_sampled(tmp_path: Path, n_rows: int, codes) -> None:
    # wd1.5_s0-history.csv: _step,_runtime,_timestamp,test/acc (what run.history() returns)
    p = tmp_path / "wd1.5_s0-history.csv"
    steps = np.arange(n_rows) * 7
    pd.DataFrame({"_step": steps, "_runtime": steps / 10.0, "_timestamp": 1.7e9 + steps,
                  "test/acc": np.linspace(0, 1, n_rows)}).to_csv(p, index=False)
    assert detect_format(p) == "wandb-history"
    t = read_log(p)
    assert t.column("run").to_pylist()[0] == "wd1.5_s0"
    assert codes(t) == ([] if n_rows == 499 else ["POSSIBLY_SAMPLED"])
    assert "_runtime" not in t.column_names


def test_history_sparse_rows_and_resumed(tmp_path: Path, codes) -> None:
    # r-history.jsonl: accuracy every row, the metric every other row; steps 40..60 logged twice
    rows = [{"_step": s, "_timestamp": 1.7e9 + i, "test/acc": 0.1 if i < 7 else 0.9,
             **({"emb_erank": 3.0} if s % 20 == 0 else {})}
            for i, s in enumerate(list(range(0, 70, 10)) + list(range(40, 120, 10)))]
    p = tmp_path / "r-history.jsonl"
    pd.DataFrame(rows).to_json(p, orient="records", lines=True)
    t = read_log(p)
    df = t.to_pandas().set_index("step")
    assert len(df) == 12 and df.loc[50, "test_acc"] == 0.9
    assert df["emb_erank"].notna().sum() == 6
    assert codes(t) == ["RESUMED_DUPLICATES"]


def test_history_with_run_column_flags_each_sampled_run(tmp_path: Path, prov) -> None:
    # histories.parquet: run, _step, test/acc — run "a" has 500 rows (sampled?), "b" 700
    df = pd.concat([pd.DataFrame({"run": r, "_step": np.arange(n), "test/acc": 0.5})
                    for r, n in (("a", 500), ("b", 700))])
    p = tmp_path / "histories.parquet"
    df.to_parquet(p)
    t = read_log(p, "wandb-history")
    assert [(f["code"], f["run"]) for f in prov(t)["findings"]] == [("POSSIBLY_SAMPLED", "a")]


def test_check_detects_a_panel_csv_without_flags(tmp_path: Path, sweep: pd.DataFrame, prov) -> None:
    # `grokaudit check panel.csv` must not read a W&B export as a canonical CSV
    from grokaudit.loader import read_any

    p = tmp_path / "panel.csv"
    panel_csv(p, sweep)
    t = read_any(p)
    assert prov(t)["adapter"] == "wandb-csv"
    assert prov(t)["downsampled_runs"] == sorted(sweep["run"].unique())
