"""Hostile outputs: every output is resolved before any work and refused (exit 2, its
ErrorCode) when it is an input, inside an input folder, a directory, a symbolic link, a
device, a FIFO, unwritable or of the wrong type; no file changes but the one output asked
for, and no temporary file is left behind."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from grokaudit.errors import ErrorCode
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
ROOT = os.geteuid() == 0 if hasattr(os, "geteuid") else False


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """tmp/in/log.parquet (the input), tmp/out/ (existing outputs), tmp as working dir."""
    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    write_parquet(sweep_df(), tmp_path / "in" / "log.parquet")
    (tmp_path / "out" / "old.json").write_text('{"old": true}\n')
    (tmp_path / "out" / "old.html").write_text("<html>old</html>\n")
    return tmp_path


def _refused(work: Path, args: list, *codes: ErrorCode, real: bool = False) -> str:
    before = snapshot(work)
    out = (sub if real else cli)(args, cwd=work)
    code, _ = expect_error(out, *codes)
    assert_unchanged(before, work)
    return code


LOG = "in/log.parquet"


# -- the output is an input ---------------------------------------------------------------------

def test_json_is_the_input(work: Path) -> None:
    _refused(work, ["check", LOG, "--json", LOG], E.OUTPUT_IS_INPUT)


def test_json_is_the_input_by_another_spelling(work: Path) -> None:
    _refused(work, ["check", LOG, "--json", "./in/../in/log.parquet"], E.OUTPUT_IS_INPUT)
    _refused(work, ["check", LOG, "--json", work / LOG], E.OUTPUT_IS_INPUT)


def test_json_is_a_hard_link_to_the_input(work: Path) -> None:
    os.link(work / LOG, work / "out" / "hard.json")
    _refused(work, ["check", LOG, "--json", "out/hard.json"], E.OUTPUT_IS_INPUT)


def test_json_is_a_symlink_to_the_input(work: Path) -> None:
    (work / "out" / "sym.json").symlink_to(work / LOG)
    _refused(work, ["check", LOG, "--json", "out/sym.json"], E.OUTPUT_IS_INPUT,
             E.OUTPUT_NOT_REGULAR)


def test_input_through_a_symlink_json_is_the_real_file(work: Path) -> None:
    (work / "link.parquet").symlink_to(work / LOG)
    _refused(work, ["check", "link.parquet", "--json", LOG], E.OUTPUT_IS_INPUT)


def test_report_is_the_input(work: Path) -> None:
    html = work / "in" / "log.html"
    shutil.copy(work / LOG, html)  # an input that happens to end in .html
    _refused(work, ["check", "in/log.html", "--format", "table", "--report", "in/log.html"],
             E.OUTPUT_IS_INPUT, E.UNKNOWN_FORMAT, E.FORMAT_MISMATCH, E.UNKNOWN_FILE_TYPE)


def test_json_is_the_config_file(work: Path) -> None:
    (work / "grokaudit.toml").write_text("sustain = 3\n")
    _refused(work, ["check", LOG, "--json", "grokaudit.toml"], E.OUTPUT_IS_INPUT)
    (work / "my.toml").write_text("sustain = 3\n")
    _refused(work, ["check", LOG, "--config", "my.toml", "--json", "my.toml"], E.OUTPUT_IS_INPUT)


def test_json_is_the_pyproject_with_the_config(work: Path) -> None:
    (work / "pyproject.toml").write_text("[tool.grokaudit]\nsustain = 3\n")
    _refused(work, ["check", LOG, "--json", "pyproject.toml"], E.OUTPUT_IS_INPUT)


def test_outputs_inside_an_input_folder(work: Path) -> None:
    shards = work / "shards"
    shards.mkdir()
    df = sweep_df()
    write_parquet(df[df.wd < 2], shards / "a.parquet")
    write_parquet(df[df.wd >= 2], shards / "b.parquet")
    _refused(work, ["check", "shards", "--json", "shards/result.json"], E.OUTPUT_IN_INPUT_DIR)
    _refused(work, ["check", "shards", "--json", "shards/sub/deeper/result.json"],
             E.OUTPUT_IN_INPUT_DIR)
    _refused(work, ["check", "shards", "--report", "shards/r.html"], E.OUTPUT_IN_INPUT_DIR)
    _refused(work, ["report", "shards", "-o", "shards/r.html"], E.OUTPUT_IN_INPUT_DIR)
    _refused(work, ["report", "shards", "-o", "r.html", "--png", "shards/png"],
             E.OUTPUT_IN_INPUT_DIR)
    _refused(work, ["report", "shards", "-o", "r.html", "--png", "shards"],
             E.OUTPUT_IN_INPUT_DIR)
    _refused(work, ["onset", "shards", "--by", "wd", "--json", "shards/x.json"],
             E.OUTPUT_IN_INPUT_DIR)
    _refused(work, ["convert", "shards", "-o", "shards/c.parquet"], E.OUTPUT_IN_INPUT_DIR)


def test_outputs_in_a_folder_linked_from_inside_an_input_folder(work: Path) -> None:
    """The readers walk a linked folder as part of the log (``shards/more -> ext``): an output
    there, by either path, would be read next time (a hostile hunt wrote convert's output into
    the log this way, and the next check refused the folder)."""
    shards = work / "shards"
    shards.mkdir()
    df = sweep_df()
    write_parquet(df[df.wd < 2], shards / "a.parquet")
    write_parquet(df[df.wd >= 2], shards / "b.parquet")
    (work / "ext").mkdir()
    (shards / "more").symlink_to(work / "ext", target_is_directory=True)
    _refused(work, ["convert", "shards", "-o", "shards/more/c.parquet"], E.OUTPUT_IN_INPUT_DIR)
    _refused(work, ["check", "shards", "--json", "ext/r.json"], E.OUTPUT_IN_INPUT_DIR)
    _refused(work, ["report", "shards", "-o", "r.html", "--png", "ext/png"],
             E.OUTPUT_IN_INPUT_DIR)
    expect_audit(cli(["check", "shards", "--json", "out/r.json"], cwd=work))  # elsewhere: fine


def test_json_named_as_the_logs_config_file_is_refused_before_it_exists(work: Path) -> None:
    """``check run.csv --json run.json`` on a log the adapters read (one run, no run column):
    the same-stem JSON beside it is read as its config file, so the next run refused its own
    output. Refused the first time, before any work. A canonical table reads no config file
    beside it: there the name is free, run after run."""
    one = sweep_df()
    one = one[one.run == one.run.iloc[0]].drop(columns=["run"])
    one.to_csv(work / "in" / "run.csv", index=False)
    _refused(work, ["check", "in/run.csv", "--json", "in/run.json"], E.OUTPUT_IS_INPUT)
    _refused(work, ["check", "in/run.csv", "--json", "in/config.json"], E.OUTPUT_IS_INPUT)
    assert not (work / "in" / "run.json").exists()
    for _ in range(2):
        expect_audit(cli(["check", LOG, "--by", "wd", "--json", "in/log.json"], cwd=work))
    trail = json.loads((work / "in" / "log.json").read_text())["trail"]
    assert [Path(f["path"]).name for f in trail["inputs"]] == ["log.parquet"]


# -- not a regular file -------------------------------------------------------------------------

def test_json_is_a_directory(work: Path) -> None:
    _refused(work, ["check", LOG, "--json", "out"], E.OUTPUT_IS_DIRECTORY)
    _refused(work, ["check", LOG, "--json", "out/"], E.OUTPUT_IS_DIRECTORY)
    _refused(work, ["check", LOG, "--json", "."], E.OUTPUT_IS_DIRECTORY)


def _null_device(work: Path) -> str:
    """A character device to write to. As root, a private null device (1, 3) in the test
    folder: a writer that renamed a file over it must not replace the system's /dev/null
    (this happened once, with ``convert -o /dev/null``). Otherwise /dev/null itself, which an
    ordinary user cannot replace."""
    if ROOT and hasattr(os, "mknod"):
        dev = work / "out" / "null"
        os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        return str(dev)
    if not Path("/dev/null").exists():
        pytest.skip("no /dev/null")
    return "/dev/null"


def test_dev_null_and_devices(work: Path) -> None:
    null = _null_device(work)
    _refused(work, ["check", LOG, "--json", null], E.OUTPUT_NOT_REGULAR)
    _refused(work, ["transition", LOG, "--by", "wd", "--json", null], E.OUTPUT_NOT_REGULAR)
    _refused(work, ["report", LOG, "-o", null], E.OUTPUT_NOT_REGULAR, E.OUTPUT_EXTENSION)
    _refused(work, ["convert", LOG, "-o", null], E.OUTPUT_NOT_REGULAR, E.OUTPUT_EXTENSION)


def test_fifo_is_refused_without_blocking(work: Path) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    os.mkfifo(work / "out" / "fifo.json")
    os.mkfifo(work / "out" / "fifo.html")
    os.mkfifo(work / "out" / "fifo.parquet")
    # a real process with a timeout: a writer that opened the FIFO would block forever
    _refused(work, ["check", LOG, "--json", "out/fifo.json"], E.OUTPUT_NOT_REGULAR, real=True)
    _refused(work, ["report", LOG, "-o", "out/fifo.html"], E.OUTPUT_NOT_REGULAR, real=True)
    _refused(work, ["convert", LOG, "-o", "out/fifo.parquet"], E.OUTPUT_NOT_REGULAR, real=True)


def test_symlink_output_is_refused_and_its_target_kept(work: Path) -> None:
    (work / "out" / "link.json").symlink_to(work / "out" / "old.json")
    _refused(work, ["check", LOG, "--json", "out/link.json"], E.OUTPUT_NOT_REGULAR)
    (work / "out" / "dangling.json").symlink_to(work / "nowhere" / "x.json")
    _refused(work, ["check", LOG, "--json", "out/dangling.json"], E.OUTPUT_NOT_REGULAR)


def test_output_under_a_regular_file(work: Path) -> None:
    _refused(work, ["check", LOG, "--json", "out/old.json/x.json"], E.OUTPUT_NOT_WRITABLE)
    _refused(work, ["check", LOG, "--json", "out/old.json/a/b/x.json"], E.OUTPUT_NOT_WRITABLE)
    _refused(work, ["report", LOG, "-o", "out/old.json/r.html"], E.OUTPUT_NOT_WRITABLE)
    _refused(work, ["report", LOG, "-o", "r.html", "--png", "out/old.json"],
             E.OUTPUT_NOT_REGULAR, E.OUTPUT_NOT_WRITABLE)
    _refused(work, ["convert", LOG, "-o", "out/old.json/c.parquet"], E.OUTPUT_NOT_WRITABLE)


@pytest.mark.skipif(ROOT, reason="root ignores permissions")
def test_unwritable_folder_and_file(work: Path) -> None:
    ro = work / "ro"
    ro.mkdir()
    (ro / "r.json").write_text("{}")
    ro.chmod(0o555)
    try:
        _refused(work, ["check", LOG, "--json", "ro/new.json"], E.OUTPUT_NOT_WRITABLE)
        _refused(work, ["check", LOG, "--json", "ro/sub/new.json"], E.OUTPUT_NOT_WRITABLE)
        _refused(work, ["convert", LOG, "-o", "ro/c.parquet"], E.OUTPUT_NOT_WRITABLE)
    finally:
        ro.chmod(0o755)
    (work / "out" / "old.json").chmod(0o444)
    _refused(work, ["check", LOG, "--json", "out/old.json"], E.OUTPUT_NOT_WRITABLE)


@pytest.mark.parametrize("value", ["", " "])
def test_empty_output_path(work: Path, value: str) -> None:
    _refused(work, ["check", LOG, "--json", value], E.OUTPUT_NOT_WRITABLE, E.INVALID_OPTION)
    _refused(work, ["report", LOG, "-o", value], E.OUTPUT_NOT_WRITABLE, E.OUTPUT_EXTENSION,
             E.INVALID_OPTION)


# -- the wrong kind of file ---------------------------------------------------------------------

@pytest.mark.parametrize("name", ["r.json", "r.txt", "r", "r.html.parquet", "r.HTML.bak"])
def test_report_extension(work: Path, name: str) -> None:
    _refused(work, ["report", LOG, "-o", name], E.OUTPUT_EXTENSION)
    _refused(work, ["check", LOG, "--report", name], E.OUTPUT_EXTENSION)


@pytest.mark.parametrize("name", ["c.json", "c.html", "c", "c.parquet.txt", "c.npz"])
def test_convert_extension(work: Path, name: str) -> None:
    _refused(work, ["convert", LOG, "-o", name], E.OUTPUT_EXTENSION)


def test_report_cannot_go_to_stdout(work: Path) -> None:
    _refused(work, ["report", LOG, "-o", "-"], E.OUTPUT_NOT_REGULAR, E.OUTPUT_EXTENSION)
    _refused(work, ["check", LOG, "--report", "-"], E.OUTPUT_NOT_REGULAR, E.OUTPUT_EXTENSION)


def test_two_outputs_name_one_file(work: Path) -> None:
    # --json writes .json and --report .html: one name for both is refused by its extension
    _refused(work, ["check", LOG, "--json", "out/x.html", "--report", "out/x.html"],
             E.OUTPUT_EXTENSION)
    _refused(work, ["check", LOG, "--json", "out/x.html", "--report", "out/../out/x.html"],
             E.OUTPUT_EXTENSION)


@pytest.mark.parametrize("name", ["other.csv", "all.parquet", "out.txt", "noext"])
def test_json_never_replaces_a_file_that_is_not_json(work: Path, name: str) -> None:
    # a found defect: check part1.csv --json part2.csv replaced another log with JSON
    target = work / name
    target.write_text("run,step,test_acc\nr,0,0.1\n")
    before = target.read_bytes()
    _refused(work, ["check", LOG, "--json", str(target)], E.OUTPUT_EXTENSION)
    assert target.read_bytes() == before


def test_convert_onto_its_input(work: Path) -> None:
    sweep_df().to_csv(work / "in" / "log.csv", index=False)
    _refused(work, ["convert", "in/log.csv", "-o", "in/log.csv"], E.OUTPUT_IS_INPUT)
    _refused(work, ["convert", LOG, "-o", LOG], E.OUTPUT_IS_INPUT)


# -- outputs are checked before any work ------------------------------------------------------

def test_output_checked_before_reading_the_log(work: Path) -> None:
    (work / "in" / "bad.parquet").write_bytes(b"PAR1 garbage")
    _refused(work, ["check", "in/bad.parquet", "--json", "out"], E.OUTPUT_IS_DIRECTORY)
    _refused(work, ["check", "in/bad.parquet", "--report", "r.txt"], E.OUTPUT_EXTENSION)
    _refused(work, ["report", "in/bad.parquet", "-o", "out/old.json"], E.OUTPUT_EXTENSION)
    _refused(work, ["convert", "in/bad.parquet", "-o", "out"], E.OUTPUT_IS_DIRECTORY,
             E.OUTPUT_EXTENSION)


# -- what a good output looks like ---------------------------------------------------------------

@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_json_permissions_follow_the_umask(work: Path, umask, mask: int, mode: int) -> None:
    umask(mask)
    before = snapshot(work)
    out = cli(["check", LOG, "--json", "out/new.json"], cwd=work)
    expect_audit(out)
    p = work / "out" / "new.json"
    assert stat.S_IMODE(p.stat().st_mode) == mode
    json.loads(p.read_text())
    assert_unchanged(before, work, allow=[str(p)])


def test_existing_json_replaced_nothing_else_changed(work: Path) -> None:
    before = snapshot(work)
    out = cli(["check", LOG, "--json", "out/old.json"], cwd=work)
    expect_audit(out)
    assert json.loads((work / "out" / "old.json").read_text())["schema"].startswith("grokaudit")
    assert_unchanged(before, work, allow=[str(work / "out" / "old.json")])


def test_json_to_stdout_is_only_json(work: Path) -> None:
    out = cli(["check", LOG, "--json", "-"], cwd=work)
    assert out.exit_code in (0, 1) and out.stderr == "", str(out)
    doc = json.loads(out.stdout)
    assert doc["summary"]["exit_code"] == out.exit_code


def test_json_into_a_new_nested_folder(work: Path) -> None:
    before = snapshot(work)
    out = cli(["check", LOG, "--json", "new/a/b.json"], cwd=work)
    expect_audit(out)
    assert_unchanged(before, work, allow=[str(work / "new" / "a" / "b.json")])


def test_convert_writes_only_its_output(work: Path) -> None:
    before = snapshot(work)
    out = cli(["convert", LOG, "-o", "out/c.parquet"], cwd=work)
    assert out.exit_code == 0 and out.exception is None, str(out)
    assert_unchanged(before, work, allow=[str(work / "out" / "c.parquet")])
    assert stat.S_IMODE((work / "out" / "c.parquet").stat().st_mode) == 0o666 & ~_mask()


def _mask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


def test_suite_json_output_checked_before_running(work: Path) -> None:
    (work / "grokaudit.toml").write_text("sustain = 3\n")
    args = ["suite", "--max-examples", "0", "--json"]
    _refused(work, [*args, "grokaudit.toml"], E.OUTPUT_IS_INPUT)
    _refused(work, ["suite", "--config", "grokaudit.toml", "--max-examples", "0", "--json",
                    "grokaudit.toml"], E.OUTPUT_IS_INPUT)
    _refused(work, [*args, "out"], E.OUTPUT_IS_DIRECTORY)
    _refused(work, [*args, _null_device(work)], E.OUTPUT_NOT_REGULAR)
    _refused(work, [*args, "out/old.json/x.json"], E.OUTPUT_NOT_WRITABLE)


def test_no_output_written_on_an_input_error(work: Path) -> None:
    (work / "in" / "bad.parquet").write_bytes(b"PAR1 garbage")
    bad = "in/bad.parquet"
    _refused(work, ["check", bad, "--json", "out/old.json"], E.FILE_UNREADABLE)
    _refused(work, ["transition", bad, "--by", "wd", "--json", "out/old.json"],
             E.FILE_UNREADABLE)
    _refused(work, ["convert", bad, "-o", "out/c.parquet"], E.FILE_UNREADABLE)
    _refused(work, ["check", LOG, "--json", "out/old.json", "--grok-threshold", "2"],
             E.OPTION_OUT_OF_RANGE)
    _refused(work, ["check", LOG, "--json", "out/new.json", "--metric", "nope"],
             E.METRIC_NOT_FOUND)
    # without the extra, a command that writes a report stops at MISSING_EXTRA first
    pytest.importorskip("matplotlib", reason="the HTML report needs the [report] extra")
    _refused(work, ["check", bad, "--json", "out/new.json", "--report", "out/new.html"],
             E.FILE_UNREADABLE)
    _refused(work, ["report", bad, "-o", "out/old.html", "--png", "out/png"],
             E.FILE_UNREADABLE)


# -- the output's folder swapped after the check (issue 21) ------------------------------------

def _swap_for_symlink(folder: Path, elsewhere: Path) -> Path:
    """Move ``folder`` aside and put a symbolic link to ``elsewhere`` in its place."""
    moved = folder.with_name(folder.name + ".moved")
    folder.rename(moved)
    elsewhere.mkdir(exist_ok=True)
    folder.symlink_to(elsewhere, target_is_directory=True)
    return moved


def test_a_folder_swapped_before_the_write_is_refused(work: Path) -> None:
    from grokaudit.errors import OutputError
    from grokaudit.outputs import resolve_output

    out = resolve_output(work / "out" / "r.json", flag="--json", inputs=[work / LOG])
    moved = _swap_for_symlink(work / "out", work / "elsewhere")
    with pytest.raises(OutputError) as exc:
        out.write_text("{}")
    assert exc.value.code is E.OUTPUT_NOT_WRITABLE
    assert list((work / "elsewhere").iterdir()) == []
    assert sorted(p.name for p in moved.iterdir()) == ["old.html", "old.json"]


def test_a_folder_swapped_during_the_write_is_refused(work: Path) -> None:
    from grokaudit.errors import OutputError
    from grokaudit.outputs import resolve_output

    out = resolve_output(work / "out" / "c.parquet", flag="-o", inputs=[work / LOG])
    moved: list[Path] = []

    def writer(tmp: str) -> None:  # the temporary file is written, then the folder is swapped
        Path(tmp).write_bytes(b"PAR1")
        moved.append(_swap_for_symlink(work / "out", work / "elsewhere"))

    with pytest.raises(OutputError) as exc:
        out.write_with(writer)
    assert exc.value.code is E.OUTPUT_NOT_WRITABLE
    assert list((work / "elsewhere").iterdir()) == []
    # nothing left behind in the folder that was opened: no temporary file, no output
    assert sorted(p.name for p in moved[0].iterdir()) == ["old.html", "old.json"]


def test_check_refuses_an_output_folder_swapped_while_it_audits(work: Path, monkeypatch) -> None:
    import grokaudit.cli as gcli

    real = gcli.audit_log if hasattr(gcli, "audit_log") else None
    import grokaudit.api as api

    real_api = api.audit_log

    def swapping(*a, **k):
        if not (work / "out").is_symlink():
            _swap_for_symlink(work / "out", work / "elsewhere")
        return real_api(*a, **k)

    monkeypatch.setattr(api, "audit_log", swapping)
    if real is not None:
        monkeypatch.setattr(gcli, "audit_log", swapping)
    out = cli(["check", LOG, "--by", "wd", "--json", "out/r.json"], cwd=work)
    expect_error(out, E.OUTPUT_NOT_WRITABLE)
    assert list((work / "elsewhere").iterdir()) == []


def test_an_output_through_a_linked_folder_checked_at_the_start_is_written(work: Path) -> None:
    """A folder that was a symbolic link when checked is resolved then, and written there."""
    (work / "real").mkdir()
    (work / "link").symlink_to(work / "real", target_is_directory=True)
    expect_audit(cli(["check", LOG, "--by", "wd", "--json", "link/r.json"], cwd=work))
    assert json.loads((work / "real" / "r.json").read_text())["schema"].startswith("grokaudit")
