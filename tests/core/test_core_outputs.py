"""Outputs that cannot hurt (grokaudit.outputs) and safe terminal text (grokaudit.text)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from grokaudit.cli import cli
from grokaudit.errors import ErrorCode, OutputError
from grokaudit.outputs import atomic_write, resolve_output, resolve_output_dir
from grokaudit.text import safe, safe_json

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "reference_runs" / "data" / "mlp_wd_sweep_p59.parquet"


def _refused(value, code: ErrorCode, **kw) -> None:
    with pytest.raises(OutputError) as ei:
        resolve_output(value, flag="--json", **kw)
    assert ei.value.code is code


def test_output_that_is_an_input_is_refused_through_links(tmp_path: Path) -> None:
    log = tmp_path / "log.csv"
    log.write_text("run,step,test_acc\n", encoding="utf-8")
    hard = tmp_path / "hard.csv"
    os.link(log, hard)
    _refused(log, ErrorCode.OUTPUT_IS_INPUT, inputs=[log])
    _refused(hard, ErrorCode.OUTPUT_IS_INPUT, inputs=[log])
    _refused(tmp_path / "sub" / ".." / "log.csv", ErrorCode.OUTPUT_IS_INPUT, inputs=[log])
    link = tmp_path / "link.csv"
    link.symlink_to(log)
    _refused(link, ErrorCode.OUTPUT_NOT_REGULAR, inputs=[])
    folder = tmp_path / "shards"
    folder.mkdir()
    _refused(folder / "out.json", ErrorCode.OUTPUT_IN_INPUT_DIR, inputs=[folder])


def test_special_files_directories_and_unwritable_paths_are_refused(tmp_path: Path) -> None:
    _refused("/dev/null", ErrorCode.OUTPUT_NOT_REGULAR)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    _refused(fifo, ErrorCode.OUTPUT_NOT_REGULAR)
    _refused(tmp_path, ErrorCode.OUTPUT_IS_DIRECTORY)
    afile = tmp_path / "afile"
    afile.write_text("x", encoding="utf-8")
    _refused(afile / "out.json", ErrorCode.OUTPUT_NOT_WRITABLE)
    _refused("", ErrorCode.OUTPUT_NOT_WRITABLE)
    _refused(tmp_path / "x.txt", ErrorCode.OUTPUT_EXTENSION, suffixes=(".html",))
    _refused("-", ErrorCode.OUTPUT_NOT_REGULAR, allow_stdout=False)
    first = resolve_output(tmp_path / "a.json", flag="--json")
    with pytest.raises(OutputError) as ei:
        resolve_output(tmp_path / "a.json", flag="--report", others=[first])
    assert ei.value.code is ErrorCode.OUTPUT_CLASH
    with pytest.raises(OutputError) as ei:
        resolve_output_dir(afile, flag="--png")
    assert ei.value.code is ErrorCode.OUTPUT_NOT_REGULAR
    assert resolve_output("-", flag="--json").is_stdout


def test_atomic_write_uses_the_umask_and_leaves_nothing_behind(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        p = atomic_write(tmp_path / "new" / "r.json", b"{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE(p.stat().st_mode) == 0o644
    assert p.read_bytes() == b"{}"
    ro = tmp_path / "ro"
    ro.mkdir()
    target = ro / "x.json"
    os.chmod(ro, 0o500)
    try:
        if os.access(ro, os.W_OK):  # root ignores permissions: make the rename fail instead
            target.mkdir()
            target = target  # a directory cannot be replaced by a file
        with pytest.raises(OutputError) as ei:
            atomic_write(target, b"{}")
        assert ei.value.code is ErrorCode.OUTPUT_NOT_WRITABLE
    finally:
        os.chmod(ro, 0o700)
    assert not [q for q in ro.rglob("*.tmp")]


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("flag", ["--json", "--report"])
def test_check_never_writes_over_its_input(tmp_path: Path, flag: str) -> None:
    log = tmp_path / "log.html" if flag == "--report" else tmp_path / "log.csv"
    src = tmp_path / "src.parquet"
    src.write_bytes(LOG.read_bytes())
    target = src if flag == "--json" else tmp_path / "report.html"
    if flag == "--report":
        target.symlink_to(src)
    before = _snapshot(tmp_path)
    r = CliRunner().invoke(cli, ["check", str(src), "--by", "wd", "--metric", "emb_pr",
                                 "--cell", "arch", flag, str(target)])
    assert r.exit_code == 2, r.output
    assert r.output.strip().endswith(("[OUTPUT_IS_INPUT]", "[OUTPUT_NOT_REGULAR]"))
    assert _snapshot(tmp_path) == before
    del log


def test_json_file_is_written_with_umask_permissions(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    old = os.umask(0o022)
    try:
        r = CliRunner().invoke(cli, ["check", str(LOG), "--by", "wd", "--metric", "emb_pr",
                                     "--cell", "arch", "--json", str(out)])
    finally:
        os.umask(old)
    assert r.exit_code == 1
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    assert json.loads(out.read_text(encoding="utf-8"))["summary"]["exit_code"] == 1


def test_safe_escapes_every_control_character() -> None:
    forged = "a\x1b[2J\r\nresult: no critical finding (exit 0)\x9b\u202e\t"
    s = safe(forged)
    assert "\n" not in s and "\r" not in s and "\x1b" not in s and "\x9b" not in s
    assert "\u202e" not in s and "\t" not in s
    assert s.startswith("a\\x1b[2J\\r\\nresult")
    doc = json.dumps({"k": forged}, ensure_ascii=False)
    assert json.loads(safe_json(doc)) == {"k": forged}
    assert "\x9b" not in safe_json(doc)
