"""RunLogger: canonical rows appended crash-safely, one run per process, audited as a folder.

The acceptance test of issue 12 item 4 is ``test_sweep_from_several_processes_one_killed``: a
sweep written by five real processes, one SIGKILLed mid-run, audits with no flushed row lost.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import grokaudit
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from grokaudit.errors import ConfigError, ErrorCode, GrokauditError, LogFormatError, OutputError
from grokaudit.logger import RunLogger, is_run_folder, read_run_folder, run_file_stem
from grokaudit.schema import build_log_table, read_arrow
from helpers import writer
from helpers.tables import provenance_of as prov

READER = "grokaudit.logger.read_run_folder"





def frame(folder: Path) -> pd.DataFrame:
    df = read_run_folder(folder).to_pandas()
    df["run"] = df["run"].astype(str)
    return df.sort_values(["run", "step"], ignore_index=True)


# ------------------------------------------------------------------------------------------
# one process
# ------------------------------------------------------------------------------------------

def test_rows_round_trip_with_conditions_on_every_row(tmp_path: Path) -> None:
    with RunLogger(tmp_path, run="wd1_s0", conditions={"wd": 1, "seed": 0, "arch": "mlp",
                                                        "tied": True}) as log:
        log.log(0, test_acc=0.1, train_loss=2.5)
        log.log(10, test_acc=np.float32(0.5), emb_erank=np.float64(7.25))
        log.log(20, test_acc=0.75, train_acc=1, emb_erank=None, train_loss=float("nan"))
    t = read_run_folder(tmp_path)
    assert t.schema.field("step").type == "int64"
    assert [t.schema.field(c).type for c in ("wd", "seed", "arch", "tied")] == \
        ["double", "double", "string", "bool"]
    assert t.column_names[:4] == ["run", "step", "test_acc", "train_acc"]
    df = frame(tmp_path)
    assert df["step"].tolist() == [0, 10, 20]
    assert df["test_acc"].tolist() == [0.1, 0.5, 0.75]
    np.testing.assert_array_equal(df["train_acc"], [np.nan, np.nan, 1.0])
    np.testing.assert_array_equal(df["emb_erank"], [np.nan, 7.25, np.nan])
    np.testing.assert_array_equal(df["train_loss"], [2.5, np.nan, np.nan])
    assert (df["wd"] == 1.0).all() and (df["seed"] == 0.0).all()
    assert (df["arch"] == "mlp").all() and df["tied"].all() and (df["run"] == "wd1_s0").all()
    claim = json.loads((tmp_path / f"{run_file_stem('wd1_s0')}.claim").read_text())
    assert claim["closed"] is True and claim["rows"] == 3 and claim["last_step"] == 20
    assert prov(t)["findings"] == [] and prov(t)["reader"] == READER


def test_calls_at_one_step_fill_one_row_and_a_conflict_is_refused(tmp_path: Path) -> None:
    with RunLogger(tmp_path, run="r", flush_every=1) as log:
        log.log(5, test_acc=0.5)
        log.log(5, emb_erank=3.0)  # after a flush: the flushed row is rewritten, not doubled
        log.log(5, test_acc=0.5)  # the same value again: fine
        with pytest.raises(LogFormatError) as e:
            log.log(5, test_acc=0.6)
        assert e.value.code is ErrorCode.DUPLICATE_ROWS
        log.log(6, test_acc=0.7)
    df = frame(tmp_path)
    assert df["step"].tolist() == [5, 6]
    assert df["emb_erank"].tolist()[0] == 3.0 and df["test_acc"].tolist() == [0.5, 0.7]


@pytest.mark.parametrize("step, code", [
    (-1, ErrorCode.NEGATIVE_STEP), (1.0, ErrorCode.NON_INTEGER_STEP),
    (np.float64(2), ErrorCode.NON_INTEGER_STEP), (True, ErrorCode.NON_INTEGER_STEP),
    ("3", ErrorCode.NON_INTEGER_STEP), (2**53 + 1, ErrorCode.STEP_OUT_OF_RANGE),
    (None, ErrorCode.NON_INTEGER_STEP),
])
def test_bad_steps_are_refused(tmp_path: Path, step: object, code: ErrorCode) -> None:
    with RunLogger(tmp_path, run="r") as log:
        with pytest.raises(LogFormatError) as e:
            log.log(step, test_acc=0.5)  # type: ignore[arg-type]
        assert e.value.code is code
        log.log(np.int64(3), test_acc=0.5)  # numpy integers are steps
        with pytest.raises(LogFormatError) as e:
            log.log(2, test_acc=0.5)
        assert e.value.code is ErrorCode.STEP_DECREASING
    assert frame(tmp_path)["step"].tolist() == [3]


@pytest.mark.parametrize("value", ["0.5", b"1", True, np.ones(2), [0.5], 1j, object()])
def test_values_must_be_real_numbers(tmp_path: Path, value: object) -> None:
    with RunLogger(tmp_path, run="r") as log:
        with pytest.raises(LogFormatError) as e:
            log.log(0, test_acc=value)
        assert e.value.code is ErrorCode.BAD_COLUMN_TYPE
        assert log.rows_logged == 0


def test_infinite_values_are_written_as_nan_and_counted(tmp_path: Path) -> None:
    with RunLogger(tmp_path, run="r") as log:
        log.log(0, test_acc=0.1, train_loss=math.inf)
        log.log(1, test_acc=0.2, train_loss=-math.inf)
        log.log(2, test_acc=0.3, train_loss=1.0)
    t = read_run_folder(tmp_path)
    np.testing.assert_array_equal(frame(tmp_path)["train_loss"], [np.nan, np.nan, 1.0])
    assert any("2 ±inf value(s) of 'train_loss'" in w for w in prov(t)["warnings"])
    log_table = build_log_table(t)  # the audit's validation accepts it (it refuses ±inf)
    assert np.isnan(log_table.series["train_loss"][:2]).all()


@pytest.mark.parametrize("kwargs, code", [
    ({"run": ""}, ErrorCode.INVALID_OPTION),
    ({"run": 3}, ErrorCode.INVALID_OPTION),
    ({"run": "r", "conditions": {"test_acc": 1}}, ErrorCode.RESERVED_COLUMN),
    ({"run": "r", "conditions": {"step": 1}}, ErrorCode.RESERVED_COLUMN),
    ({"run": "r", "conditions": {"wd": [1]}}, ErrorCode.BAD_COLUMN_TYPE),
    ({"run": "r", "conditions": {"wd": None}}, ErrorCode.BAD_COLUMN_TYPE),
    ({"run": "r", "conditions": {"wd": math.inf}}, ErrorCode.INFINITE_VALUE),
    ({"run": "r", "conditions": {"seed": 2**60}}, ErrorCode.OPTION_OUT_OF_RANGE),
    ({"run": "r", "flush_every": 0}, ErrorCode.OPTION_OUT_OF_RANGE),
    ({"run": "r", "flush_secs": -1}, ErrorCode.OPTION_OUT_OF_RANGE),
    ({"run": "r", "segment_flushes": 1.5}, ErrorCode.OPTION_OUT_OF_RANGE),
])
def test_bad_options_are_refused_before_any_file_is_written(tmp_path: Path, kwargs: dict,
                                                             code: ErrorCode) -> None:
    with pytest.raises(ConfigError) as e:
        RunLogger(tmp_path / "runs", **kwargs)
    assert e.value.code is code
    assert not (tmp_path / "runs").exists()


def test_value_names_may_not_shadow_the_run_the_step_or_a_condition(tmp_path: Path) -> None:
    with RunLogger(tmp_path, run="r", conditions={"wd": 1.0}) as log:
        for name in ("run", "wd"):
            with pytest.raises(LogFormatError) as e:
                log.log(0, **{name: 1.0})
            assert e.value.code is ErrorCode.RESERVED_COLUMN


def test_a_run_id_is_used_once_per_folder(tmp_path: Path) -> None:
    first = RunLogger(tmp_path, run="wd1_s0")
    with pytest.raises(OutputError) as e:  # while the first is open
        RunLogger(tmp_path, run="wd1_s0")
    assert e.value.code is ErrorCode.RUN_ID_TAKEN and isinstance(e.value, GrokauditError)
    first.log(0, test_acc=0.5)
    first.close()
    with pytest.raises(OutputError):  # after it closed
        RunLogger(tmp_path, run="wd1_s0")
    (tmp_path / f"{run_file_stem('wd1_s0')}.claim").unlink()
    with pytest.raises(OutputError):  # its shard is still there
        RunLogger(tmp_path, run="wd1_s0")
    RunLogger(tmp_path, run="wd1_s1").close()  # another id is fine


@pytest.mark.parametrize("run", ["a/b", "../../escape", ".hidden", "ä ö 100%", "x" * 300,
                                 "*?[]", "A", "a", "CON", "run\nid"])
def test_any_run_id_maps_to_its_own_file_inside_the_folder(tmp_path: Path, run: str) -> None:
    with RunLogger(tmp_path / "runs", run=run) as log:
        log.log(0, test_acc=0.5)
    files = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert len(files) == 2 and all(len(f) < 120 and not f.startswith(".") for f in files)
    assert [p for p in tmp_path.iterdir()] == [tmp_path / "runs"]
    assert frame(tmp_path / "runs")["run"].tolist() == [run]


def test_file_stems_are_distinct_even_on_case_insensitive_file_systems() -> None:
    ids = ["A", "a", "a/b", "a%2Fb", "x" * 300, "x" * 301, ".x", "%2Ex"]
    stems = [run_file_stem(r).lower() for r in ids]
    assert len(set(stems)) == len(ids)


def test_rows_are_on_disk_exactly_when_flushed(tmp_path: Path) -> None:
    log = RunLogger(tmp_path, run="r", flush_every=3, flush_secs=3600)
    log.log(0, test_acc=0.1)
    log.log(1, test_acc=0.2)
    assert not list(tmp_path.glob("*.parquet")) and log.rows_flushed == 0
    log.log(2, test_acc=0.3)  # the third row flushes
    assert log.rows_flushed == 3 and frame(tmp_path)["step"].tolist() == [0, 1, 2]
    log.log(3, test_acc=0.4)
    assert frame(tmp_path)["step"].tolist() == [0, 1, 2]
    log.flush()
    assert frame(tmp_path)["step"].tolist() == [0, 1, 2, 3]
    assert [f["code"] for f in prov(read_run_folder(tmp_path))["findings"]] == ["SOURCE_TRUNCATED"]
    log.close()
    assert prov(read_run_folder(tmp_path))["findings"] == []
    with pytest.raises(ConfigError):
        log.log(4, test_acc=0.5)


def test_flush_secs_flushes_at_the_next_log_call(tmp_path: Path, monkeypatch) -> None:
    now = [1000.0]
    monkeypatch.setattr("grokaudit.logger.time.monotonic", lambda: now[0])
    log = RunLogger(tmp_path, run="r", flush_every=10**6, flush_secs=30)
    log.log(0, test_acc=0.1)
    now[0] += 29
    log.log(1, test_acc=0.2)
    assert log.rows_flushed == 0
    now[0] += 1
    log.log(2, test_acc=0.3)
    assert log.rows_flushed == 3
    log.close()


def test_segments_are_sealed_and_never_rewritten(tmp_path: Path) -> None:
    with RunLogger(tmp_path, run="r", flush_every=1, segment_flushes=4) as log:
        snapshots = {}
        for step in range(10):
            log.log(step, test_acc=step / 10)
            for p in tmp_path.glob("*.parquet"):
                snapshots.setdefault(p.name, []).append(p.read_bytes())
    names = sorted(p.name for p in tmp_path.glob("*.parquet"))
    assert len(names) == 3  # 4 + 4 + 2 rows
    assert [pq.read_metadata(tmp_path / n).num_rows for n in names] == [4, 4, 2]
    for n in names[:-1]:
        final = (tmp_path / n).read_bytes()
        assert snapshots[n][3:] == [final] * (len(snapshots[n]) - 3)  # unchanged once sealed
    df = frame(tmp_path)
    assert df["step"].tolist() == list(range(10))  # every row once
    assert read_arrow(tmp_path).num_rows == 10  # the plain folder reader agrees


@pytest.mark.parametrize("lost", [0, 1, 2])
def test_a_lost_segment_is_refused_naming_run_and_segment(tmp_path: Path, lost: int) -> None:
    """A folder that lost a segment file (a partial copy, a cleanup script) was audited with
    no finding, though each segment stores its number and the close record the count; its
    rows would be left out of the audit: refused (``SEGMENT_MISSING``), by every reader."""
    with RunLogger(tmp_path, run="r", flush_every=1, segment_flushes=4) as log:
        for step in range(10):
            log.log(step, test_acc=step / 10, emb_erank=10.0 - step / 3)
    names = sorted(tmp_path.glob("*.parquet"))
    assert len(names) == 3 and prov(read_run_folder(tmp_path))["findings"] == []
    names[lost].unlink()
    with pytest.raises(LogFormatError) as e:
        read_run_folder(tmp_path)
    assert e.value.code is ErrorCode.SEGMENT_MISSING and e.value.path == str(tmp_path)
    with pytest.raises(LogFormatError) as e:
        grokaudit.audit_path(tmp_path, metrics=["emb_erank"])
    assert e.value.code is ErrorCode.SEGMENT_MISSING


def test_an_exception_in_the_loop_keeps_the_rows_and_is_recorded(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError):
        with RunLogger(tmp_path, run="r", flush_every=100) as log:
            log.log(0, test_acc=0.1)
            log.log(1, test_acc=0.2)
            raise RuntimeError("loss is nan")
    t = read_run_folder(tmp_path)
    assert t.num_rows == 2 and prov(t)["findings"] == []
    assert prov(t)["warnings"] == ["run 'r' ended with RuntimeError: loss is nan"]


def test_a_logger_belongs_to_the_process_that_opened_it(tmp_path: Path, monkeypatch) -> None:
    log = RunLogger(tmp_path, run="r")
    log.log(0, test_acc=0.1)
    monkeypatch.setattr(os, "getpid", lambda: -12345)  # as in a forked child
    with pytest.raises(ConfigError) as e:
        log.log(1, test_acc=0.2)
    assert "belongs to process" in str(e.value)
    log.close()  # a no-op in the child: it writes nothing
    assert not list(tmp_path.glob("*.parquet"))
    monkeypatch.undo()
    log.close()
    assert frame(tmp_path)["step"].tolist() == [0]


def test_an_unwritable_folder_is_one_error(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes anywhere")
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(OutputError) as e:
            RunLogger(tmp_path / "runs", run="r")
        assert e.value.code is ErrorCode.OUTPUT_NOT_WRITABLE
    finally:
        tmp_path.chmod(0o700)


def test_conditions_of_int_and_float_processes_share_one_column_type(tmp_path: Path) -> None:
    for wd, seed in ((1, 0), (1.5, 1), (3, 2)):
        with RunLogger(tmp_path, run=f"wd{wd}_s{seed}", conditions={"wd": wd, "seed": seed}) as g:
            for step in range(3):
                g.log(step, test_acc=0.5)
    t = read_arrow(tmp_path)  # the reader `grokaudit check FOLDER` uses today
    assert t.schema.field("wd").type == "double" and t.num_rows == 9


# ------------------------------------------------------------------------------------------
# what a crash leaves, and how it is reported
# ------------------------------------------------------------------------------------------

def test_an_interrupted_flush_is_ignored_by_every_reader_and_reported(tmp_path: Path) -> None:
    log = RunLogger(tmp_path, run="r", flush_every=2)
    for step in range(4):
        log.log(step, test_acc=0.5)
    seg = log.segment_path(0)
    # what a kill during the third flush leaves: a torn temporary file beside the segment
    torn = tmp_path / f".{seg.name}.4242.tmp"
    torn.write_bytes(seg.read_bytes()[:100])
    t = read_run_folder(tmp_path)
    assert t.num_rows == 4
    codes = [(f["code"], f["file"], f["run"]) for f in prov(t)["findings"]]
    assert ("SOURCE_TRUNCATED", torn.name, "r") in codes
    assert read_arrow(tmp_path).num_rows == 4  # the folder reader never sees the torn file


def test_a_run_that_flushed_nothing_is_reported(tmp_path: Path) -> None:
    RunLogger(tmp_path, run="early")  # "killed" before its first flush: never closed
    with pytest.raises(LogFormatError) as e:
        read_run_folder(tmp_path)
    assert e.value.code is ErrorCode.NO_SHARDS and "1 run(s) started" in str(e.value)
    with RunLogger(tmp_path, run="ok") as g:
        g.log(0, test_acc=0.5)
    f = prov(read_run_folder(tmp_path))["findings"]
    assert [(x["code"], x["run"], x["count"]) for x in f] == [("SOURCE_TRUNCATED", "early", 0)]


def test_an_unreadable_claim_is_a_warning(tmp_path: Path) -> None:
    with RunLogger(tmp_path, run="ok") as g:
        g.log(0, test_acc=0.5)
    (tmp_path / "junk.claim").write_text('{"run": "x", "pi')
    w = prov(read_run_folder(tmp_path))["warnings"]
    assert w == ["junk.claim: unreadable claim file (not written by RunLogger, or cut by a "
                 "crash); ignored"]
    assert is_run_folder(tmp_path) and not is_run_folder(tmp_path / "junk.claim")


# ------------------------------------------------------------------------------------------
# many processes, one killed (the acceptance test)
# ------------------------------------------------------------------------------------------

def spawn(folder: Path, run: str, wd: float, seed: int, mode: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, writer.__file__, str(folder), run, str(wd),
                             str(seed), mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def expected_rows(wd: float, seed: int, last: int) -> pd.DataFrame:
    rows = [{"step": s, **writer.values(s, wd, seed)} for s in writer.STEPS if s <= last]
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("sweep") / "runs"
    runs = {f"wd{wd}_s{seed}": (wd, seed) for wd in (1.5, 3.0) for seed in (0, 1)}
    procs = {r: spawn(folder, r, wd, seed, "complete") for r, (wd, seed) in runs.items()}
    victim = "wd3.0_s2"
    runs[victim] = (3.0, 2)
    vp = spawn(folder, victim, 3.0, 2, "killed")
    flushed_line = vp.stdout.readline().split()
    assert flushed_line[0] == "FLUSHED", vp.stderr.read()
    assert vp.stdout.readline().startswith("LOGGED_MORE")  # more rows logged, never flushed
    vp.send_signal(signal.SIGKILL)
    assert vp.wait(timeout=60) == -signal.SIGKILL
    for p in procs.values():
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    return {"folder": folder, "runs": runs, "victim": victim,
            "victim_rows": int(flushed_line[1]), "victim_last": int(flushed_line[2])}


def test_sweep_from_several_processes_one_killed(sweep: dict) -> None:
    folder = sweep["folder"]
    df = frame(folder)
    assert sorted(df["run"].unique()) == sorted(sweep["runs"])
    for run, (wd, seed) in sweep["runs"].items():
        got = df[df["run"] == run].reset_index(drop=True)
        last = sweep["victim_last"] if run == sweep["victim"] else 12000
        want = expected_rows(wd, seed, last)
        assert len(got) == len(want), run  # no flushed row lost, none doubled
        for col in want.columns:
            np.testing.assert_array_equal(got[col].to_numpy(), want[col].to_numpy(), err_msg=col)
        assert (got["wd"] == wd).all() and (got["seed"] == seed).all()
    assert (df["run"] == sweep["victim"]).sum() == sweep["victim_rows"]
    # the kill is reported, not silent
    findings = prov(read_run_folder(folder))["findings"]
    assert [(f["code"], f["run"], f["count"]) for f in findings] == \
        [("SOURCE_TRUNCATED", sweep["victim"], sweep["victim_rows"])]
    # and the sweep audits
    result = grokaudit.audit_table(read_run_folder(folder), by="wd", metrics=["emb_erank"])
    d = json.loads(result.to_json())
    assert d["input"]["rows_read"] == len(df) and d["input"]["runs_kept"] == 5
    assert d["input"]["set_aside"] == {}
    assert any(f["code"] == "SOURCE_TRUNCATED" and f["runs"] == [sweep["victim"]]
               for f in d["findings"])


def check_cli(folder: Path) -> dict:
    r = subprocess.run([sys.executable, "-m", "grokaudit", "check", str(folder), "--by", "wd",
                        "--metric", "emb_erank", "--json", "-", "-q"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode in (0, 1), r.stderr  # 2 would be an input error
    return json.loads(r.stdout)


def test_grokaudit_check_folder_reads_every_flushed_row_today(sweep: dict) -> None:
    d = check_cli(sweep["folder"])
    assert d["input"]["rows_read"] == 4 * len(writer.STEPS) + sweep["victim_rows"]
    assert d["input"]["runs_kept"] == 5 and d["input"]["set_aside"] == {}


def _hook_installed() -> bool:
    """True once schema.read_arrow hands RunLogger folders to read_run_folder."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        with RunLogger(d, run="probe", fsync=False) as g:
            g.log(0, test_acc=0.5)
        return bool(prov(read_arrow(d)).get("reader") == READER)


# NEEDS THE HOOK in grokaudit/schema.py::read_arrow (see docs/logging.md, "For maintainers"):
# until it is added, `grokaudit check` reads every row but does not show what a kill cut short.
@pytest.mark.xfail(not _hook_installed(), strict=True,
                   reason="needs the read_arrow hook for RunLogger folders")
def test_grokaudit_check_folder_reports_the_killed_run(sweep: dict) -> None:
    d = check_cli(sweep["folder"])
    assert d["input"]["provenance"]["reader"] == READER
    assert any(f["code"] == "SOURCE_TRUNCATED" and f["runs"] == [sweep["victim"]]
               for f in d["findings"])


@pytest.mark.parametrize("kill_after", [3, 11, 26])
def test_a_kill_at_any_moment_of_a_flush_storm_loses_no_flushed_row(tmp_path: Path,
                                                                      kill_after: int) -> None:
    """A flush after every row, killed at an arbitrary point (often inside a flush): every
    reported row is read, the rows form a prefix, and both readers accept the folder."""
    p = spawn(tmp_path, "storm", 1.5, 0, "storm")
    reported = -1
    for _ in range(kill_after):
        line = p.stdout.readline()
        assert line.startswith("F "), p.stderr.read()
        reported = int(line.split()[1])
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=60)
    df = frame(tmp_path)
    steps = df["step"].tolist()
    assert steps == list(range(0, 50 * len(steps), 50))  # a prefix, nothing doubled
    assert steps[-1] >= reported  # every row whose flush returned
    assert read_arrow(tmp_path).num_rows == len(steps)
    f = prov(read_run_folder(tmp_path))["findings"]
    assert f and all(x["code"] == "SOURCE_TRUNCATED" and x["run"] == "storm" for x in f)
