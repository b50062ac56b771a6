"""Hostile sizes and failures (issue 21): an input that declares more rows or columns than the
cap is refused from its footer before it is read (``TOO_LARGE``, the cap raised by an option or
a config file); memory that runs out, a full disk and a closed pipe are one coded line with exit
2; inputs whose types clash are refused by name, equal values written as text and numbers are
merged; ``GROKAUDIT_THREADS`` takes ASCII digits only."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from grokaudit.errors import ErrorCode, LogFormatError
from grokaudit.limits import Limits, check_declared, declared
from helpers.hostile import (
    assert_unchanged,
    cli,
    expect_audit,
    expect_error,
    snapshot,
    sub,
    sweep_df,
    write_parquet,
)

E = ErrorCode
ROWS = len(sweep_df())  # 9 runs × 61 steps


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return write_parquet(sweep_df(), tmp_path / "log.parquet")


# -- the footer is read first -------------------------------------------------------------------

def test_declared_counts_what_the_real_writer_wrote(tmp_path: Path) -> None:
    df = sweep_df()
    p = write_parquet(df, tmp_path / "a.parquet")
    d = declared(p)
    assert d is not None and (d.rows, d.columns, d.files) == (len(df), len(df.columns), 1)
    assert declared(tmp_path / "nothing.csv") is None


def test_a_folder_sums_the_rows_of_its_parquet_files(tmp_path: Path) -> None:
    df = sweep_df()
    half = len(df) // 2
    (tmp_path / "d" / "sub").mkdir(parents=True)
    write_parquet(df.iloc[:half], tmp_path / "d" / "a.parquet")
    write_parquet(df.iloc[half:], tmp_path / "d" / "sub" / "b.pq")
    d = declared(tmp_path / "d")
    assert d is not None and (d.rows, d.files) == (len(df), 2)
    # each file alone is under the cap, the folder is not
    with pytest.raises(LogFormatError) as exc:
        check_declared(tmp_path / "d", Limits(max_rows=half + 1))
    assert exc.value.code is E.TOO_LARGE
    check_declared(tmp_path / "d" / "a.parquet", Limits(max_rows=half + 1))


@pytest.mark.parametrize("opt", ["--max-rows", "--max-columns"])
def test_check_refuses_a_log_over_the_cap_and_accepts_it_raised(log: Path, opt: str) -> None:
    n = ROWS if opt == "--max-rows" else len(sweep_df().columns)
    before = snapshot(log.parent)
    code, msg = expect_error(cli(["check", log, "--by", "wd", opt, n - 1]), E.TOO_LARGE)
    assert str(n) in msg and opt in msg  # what it declares and the option that raises the cap
    assert_unchanged(before, log.parent)
    expect_audit(cli(["check", log, "--by", "wd", opt, n]))


def test_a_log_over_the_row_cap_is_offered_stream_and_stream_audits_it(log: Path,
                                                                       tmp_path: Path) -> None:
    """TOO_LARGE on the rows names --stream beside --max-rows (issue 44 item 3), and taking
    the advice works: the same command with --stream audits the log (memory bounded by the
    part, no row cap), with the verdicts of the audit with the cap raised."""
    code, msg = expect_error(cli(["check", log, "--by", "wd", "--max-rows", ROWS - 1]),
                             E.TOO_LARGE)
    assert "--stream" in msg and "--max-rows" in msg
    streamed = cli(["check", log, "--by", "wd", "--max-rows", ROWS - 1, "--stream",
                    "--json", tmp_path / "s.json"])
    raised = cli(["check", log, "--by", "wd", "--max-rows", ROWS, "--json", tmp_path / "r.json"])
    # the cap the user typed does not apply to a streamed log, and one stderr line says so
    # (never a silent drop); the audit itself is a correct one
    said = streamed.stderr.strip().splitlines()
    assert len(said) == 1 and "--max-rows" in said[0] and "--stream" in said[0]
    expect_audit(dataclasses.replace(streamed, stderr=""))
    expect_audit(raised, streamed.exit_code)
    verdicts = [[s["verdict"] for s in json.loads((tmp_path / f).read_text())["studies"]]
                for f in ("s.json", "r.json")]
    assert verdicts[0] == verdicts[1] and verdicts[0]


def test_the_cap_is_checked_before_any_data_is_read(log: Path, monkeypatch) -> None:
    import grokaudit.loader as loader

    def boom(*a, **k):  # reading the data at all is a failure of this test
        raise AssertionError("data read before the cap was checked")

    monkeypatch.setattr(loader, "read_arrow", boom)
    expect_error(cli(["check", log, "--by", "wd", "--max-rows", 10]), E.TOO_LARGE)


def test_every_input_is_checked_before_any_is_read(tmp_path: Path, monkeypatch) -> None:
    df = sweep_df()
    small = write_parquet(df[df.wd == 1.0], tmp_path / "small.parquet")
    big = write_parquet(df[df.wd != 1.0], tmp_path / "big.parquet")
    import grokaudit.loader as loader

    read = []
    real = loader._read_one
    monkeypatch.setattr(loader, "_read_one", lambda p, *a, **k: (read.append(p),
                                                                  real(p, *a, **k))[1])
    cap = int((df.wd == 1.0).sum())  # the first input fits, the second does not
    code, msg = expect_error(cli(["check", small, big, "--by", "wd", "--max-rows", cap]),
                             E.TOO_LARGE)
    assert "big.parquet" in msg and read == []


def test_folder_input_over_the_cap(tmp_path: Path) -> None:
    df = sweep_df()
    (tmp_path / "shards").mkdir()
    for i, (_, g) in enumerate(df.groupby("wd")):
        write_parquet(g, tmp_path / "shards" / f"part-{i}.parquet")
    expect_error(cli(["check", tmp_path / "shards", "--by", "wd", "--max-rows", ROWS - 1]),
                 E.TOO_LARGE)
    expect_audit(cli(["check", tmp_path / "shards", "--by", "wd", "--max-rows", ROWS]))


def test_a_config_file_raises_or_lowers_the_cap_and_the_trail_shows_it(log: Path,
                                                                       tmp_path: Path) -> None:
    low = tmp_path / "low.toml"
    low.write_text(f"max_rows = {ROWS - 1}\n")
    expect_error(cli(["check", log, "--by", "wd", "--config", low]), E.TOO_LARGE)
    ok = tmp_path / "ok.toml"
    ok.write_text(f"max_rows = {ROWS}\n")
    out = cli(["check", log, "--by", "wd", "--config", ok, "--json", "-"])
    expect_audit(out)
    trail = json.loads(out.stdout)["trail"]
    assert trail["changed_settings"]["max_rows"] == ROWS


@pytest.mark.parametrize("value", ["0", "-5", "1.5", "many"])
def test_a_bad_cap_is_refused(log: Path, value: str) -> None:
    out = cli(["check", log, "--by", "wd", "--max-rows", value])
    assert out.exit_code == 2 and out.exception is None, out


def test_other_commands_honour_the_cap(log: Path, tmp_path: Path) -> None:
    cap = ["--max-rows", str(ROWS - 1)]
    expect_error(cli(["inspect", log, *cap]), E.TOO_LARGE)
    expect_error(cli(["onset", log, "--by", "wd", *cap]), E.TOO_LARGE)
    # without the extra, `report` stops at MISSING_EXTRA before it reads the log
    pytest.importorskip("matplotlib", reason="the HTML report needs the [report] extra")
    expect_error(cli(["report", log, "--by", "wd", "-o", tmp_path / "r.html", *cap]),
                 E.TOO_LARGE)
    assert not (tmp_path / "r.html").exists()


def test_convert_honours_the_cap(log: Path, tmp_path: Path) -> None:
    out = tmp_path / "c.parquet"
    expect_error(cli(["convert", log, "-o", out, "--max-rows", ROWS - 1]), E.TOO_LARGE)
    assert not out.exists()
    res = cli(["convert", log, "-o", out, "--max-rows", ROWS])
    assert res.exit_code == 0 and pq.read_metadata(out).num_rows == ROWS, res


def test_python_api_honours_the_cap(log: Path) -> None:
    from grokaudit.api import audit_path

    with pytest.raises(LogFormatError) as exc:
        audit_path(log, by="wd", max_rows=ROWS - 1)
    assert exc.value.code is E.TOO_LARGE
    assert audit_path(log, by="wd", max_rows=ROWS).input["rows_read"] == ROWS


def test_a_huge_declared_file_is_refused_from_its_footer(tmp_path: Path) -> None:
    """A file whose footer declares far more rows than the cap: refused in a real process
    without reading its pages (a constant column compresses to almost nothing)."""
    n = 2_000_000
    t = pa.table({"run": pa.array(["r"] * n), "step": pa.array(range(n), pa.int64()),
                  "test_acc": pa.array([0.5] * n), "train_acc": pa.array([1.0] * n),
                  "wd": pa.array([0.1] * n)})
    p = tmp_path / "huge.parquet"
    pq.write_table(t, p, compression="zstd")
    del t
    out = sub(["check", p, "--by", "wd", "--max-rows", n // 2], cwd=tmp_path)
    code, msg = expect_error(out, E.TOO_LARGE)
    assert str(n) in msg


# -- memory, disk and pipes ------------------------------------------------------------------------

def test_memory_that_runs_out_is_one_line_naming_the_input(log: Path, monkeypatch) -> None:
    import grokaudit.loader as loader

    def oom(*a, **k):
        raise pa.ArrowMemoryError("malloc of size 1073741824 failed")

    monkeypatch.setattr(loader, "read_arrow", oom)
    code, msg = expect_error(cli(["check", log, "--by", "wd"]), E.OUT_OF_MEMORY)
    assert log.name in msg and str(ROWS) in msg  # the file and the rows it declares


def test_a_numpy_memory_error_during_the_audit_is_out_of_memory(log: Path, monkeypatch) -> None:
    import grokaudit.cli as gcli

    def oom(*a, **k):
        raise MemoryError

    monkeypatch.setattr(gcli, "audit_log", oom, raising=False)
    import grokaudit.api as api

    monkeypatch.setattr(api, "audit_log", oom)
    expect_error(cli(["check", log, "--by", "wd"]), E.OUT_OF_MEMORY)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_a_full_disk_on_stdout_is_one_line_exit_2(log: Path, tmp_path: Path) -> None:
    import subprocess

    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-m", "grokaudit", "check", str(log), "--by", "wd",
                            "--json", "-"], stdout=full, stderr=subprocess.PIPE,
                           cwd=tmp_path, timeout=120)
    err = p.stderr.decode().rstrip("\n").split("\n")
    assert p.returncode == 2, p.stderr
    assert len(err) == 1 and err[0].endswith(f"[{E.OUTPUT_NOT_WRITABLE.value}]"), p.stderr


def test_a_closed_pipe_is_not_a_traceback(log: Path, tmp_path: Path) -> None:
    import subprocess

    p = subprocess.Popen([sys.executable, "-m", "grokaudit", "check", str(log), "--by", "wd",
                          "--json", "-"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         cwd=tmp_path)
    assert p.stdout is not None and p.stderr is not None
    p.stdout.read(1)  # the first byte, then the reader goes away (`| head -c 1`)
    p.stdout.close()
    err = p.stderr.read().decode()
    rc = p.wait(timeout=120)
    assert "Traceback" not in err and "internal error" not in err, err
    assert rc in (0, 1, 2), rc
    if rc == 2:
        assert err.rstrip("\n").count("\n") == 0 and "[OUTPUT_NOT_WRITABLE]" in err, err


# -- types across inputs and the environment -------------------------------------------------------

def test_numbers_in_one_file_and_text_in_another_is_refused_by_name(tmp_path: Path) -> None:
    df = sweep_df()
    a, b = df[df.wd == 1.0].copy(), df[df.wd != 1.0].copy()
    b["arch"] = "mlp"
    a["arch"] = 3.0
    write_parquet(a, tmp_path / "a.parquet")
    write_parquet(b, tmp_path / "b.parquet")
    code, msg = expect_error(cli(["check", tmp_path / "a.parquet", tmp_path / "b.parquet",
                                  "--by", "wd"]), E.INCOMPATIBLE_INPUTS)
    assert "arch" in msg and "a.parquet" in msg and "b.parquet" in msg


def test_one_value_written_as_text_and_as_a_number_is_one_condition(tmp_path: Path) -> None:
    df = sweep_df()
    a, b = df[df.wd == 1.0].copy(), df[df.wd != 1.0].copy()
    a["lr"], b["lr"] = 0.1, "0.10"
    write_parquet(a, tmp_path / "a.parquet")
    write_parquet(b, tmp_path / "b.parquet")
    from grokaudit.loader import read_any

    t = read_any([tmp_path / "a.parquet", tmp_path / "b.parquet"])
    assert pa.types.is_floating(t.schema.field("lr").type)
    assert set(t.column("lr").to_pylist()) == {0.1}


def test_only_ascii_digits_set_the_thread_count(monkeypatch) -> None:
    from grokaudit import blocks

    monkeypatch.delenv("GROKAUDIT_THREADS", raising=False)
    default = blocks.threads()
    for bad in ("²", "٣", "0", "-1", "two", ""):
        monkeypatch.setenv("GROKAUDIT_THREADS", bad)
        assert blocks.threads() == default, bad
    monkeypatch.setenv("GROKAUDIT_THREADS", "3")
    assert blocks.threads() == 3


def test_rows_read_counts_every_copy_of_a_merged_log(tmp_path: Path) -> None:
    """Two identical copies are merged into one log; the rows read are both copies'."""
    df = sweep_df()
    write_parquet(df, tmp_path / "a.parquet")
    write_parquet(df, tmp_path / "b.parquet")
    out = cli(["check", tmp_path / "a.parquet", tmp_path / "b.parquet", "--by", "wd",
               "--json", "-"])
    expect_audit(out)
    prov = json.loads(out.stdout)
    assert _rows_read(prov) == 2 * len(df)


def _rows_read(doc: dict) -> int:
    for key in ("rows_read", "n_rows_read"):
        for where in (doc, doc.get("provenance", {}), doc.get("input", {})):
            if isinstance(where, dict) and key in where:
                return int(where[key])
    raise AssertionError(f"no rows_read in {sorted(doc)}")


def test_run_ids_shared_by_two_inputs_point_to_run_from_path(tmp_path: Path) -> None:
    """``seed0`` in every condition's file: different runs that share an id. The refusal
    names --run-from path; --on-duplicate (which would drop runs) only for true copies."""
    df = sweep_df()
    for wd in (1.0, 2.0):
        d = df[df.wd == wd].copy()
        d["run"] = "s" + d["seed"].astype(str)
        (tmp_path / f"wd{wd}").mkdir()
        write_parquet(d, tmp_path / f"wd{wd}" / "log.parquet")
    out = cli(["check", tmp_path / "wd1.0" / "log.parquet", tmp_path / "wd2.0" / "log.parquet",
               "--by", "wd"])
    code, msg = expect_error(out, E.DUPLICATE_ROWS)
    assert "--run-from path" in msg
    # two versions of the same runs: --on-duplicate is still offered, for copies
    d = df[df.wd == 1.0]
    write_parquet(d, tmp_path / "a.parquet")
    d2 = d.copy()
    d2["test_acc"] = d2["test_acc"] * 0.5
    write_parquet(d2, tmp_path / "b.parquet")
    code, msg = expect_error(cli(["check", tmp_path / "a.parquet", tmp_path / "b.parquet",
                                  "--by", "wd"]), E.DUPLICATE_ROWS)
    assert "--on-duplicate" in msg


@pytest.mark.parametrize("command", [["check"], ["report", "-o", "r.html"], ["onset", "--by", "wd"]])
def test_stream_without_max_rows_says_nothing_of_the_cap(log: Path, tmp_path: Path,
                                                         command: list[str]) -> None:
    """The line that --max-rows does not apply with --stream comes only when --max-rows was
    typed: a streamed audit without it has an empty stderr, in each command that streams."""
    extra = ["--by", "wd"] if command[0] != "onset" else []
    quiet = cli([*command, log, *extra, "--stream"], cwd=tmp_path)
    typed = cli([*command, log, *extra, "--stream", "--max-rows", 5], cwd=tmp_path)
    assert quiet.exit_code == typed.exit_code and quiet.exit_code in (0, 1), (quiet, typed)
    assert quiet.stderr.strip() == ""
    assert "--max-rows" in typed.stderr and len(typed.stderr.strip().splitlines()) == 1


def test_a_streamed_command_refused_says_only_why(log: Path, tmp_path: Path) -> None:
    """The line that --max-rows does not apply comes once the streamed audit has its result:
    a command refused before that (no such file, a CSV that cannot be streamed) prints its
    one error line alone, exit 2."""
    csv = tmp_path / "log.csv"
    sweep_df().to_csv(csv, index=False)
    for path, code in ((tmp_path / "nope.parquet", E.FILE_NOT_FOUND), (csv, E.FORMAT_MISMATCH)):
        out = cli(["check", path, "--by", "wd", "--stream", "--max-rows", 5])
        expect_error(out, code)
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr
