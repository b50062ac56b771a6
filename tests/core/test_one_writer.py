"""One atomic writer (grokaudit.outputs.atomic_write_with) behind every file the project
replaces: the RunLogger's segments and claim, the trainer's checkpoint and its MANIFEST.

Each former hand-written writer, driven through its real caller, with a real write failure
(the file-size limit makes the write fail with EFBIG part-way): the old file stays as it was,
no temporary file is left, and the error is ``OUTPUT_NOT_WRITABLE``. The MANIFEST is written by
tomli-w and reads back exactly; the adapters share one text-to-condition rule.
"""

from __future__ import annotations

import math
import os
import re
import signal
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from grokaudit.errors import ErrorCode, OutputError
from grokaudit.logger import RunLogger
from grokaudit.outputs import atomic_write, atomic_write_with
from grokaudit.runfolder import read_run_folder

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
#: Keys and strings that a hand-written TOML writer gets wrong: a carriage return, a tab, other
#: control characters, quotes and backslashes, a space or a dot in a key, non-ASCII text.
HOSTILE = ["a\rb", "my key", "a.b", "tab\there", 'q"x', "back\\slash", "nul\x00\x01\x1f\x7f",
           "ünï ☃ 𝔘", "", "[t]", "line\nbreak", "#hash", "=eq"]


@contextmanager
def file_size_limit(nbytes: int) -> Iterator[None]:
    """Writes past ``nbytes`` fail with ``EFBIG`` (an ``OSError``, as a full disk's
    ``ENOSPC``) inside the block: a real write failure part-way through the temporary file."""
    resource = pytest.importorskip("resource")
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    old = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # else the process is killed
    resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, old)


def _files(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file of ``folder``: its bytes and permission bits."""
    return {p.name: (p.read_bytes(), stat.S_IMODE(p.stat().st_mode))
            for p in sorted(folder.iterdir())}


def _temporaries(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(".")]


# ------------------------------------------------------------------------------------------
# the RunLogger
# ------------------------------------------------------------------------------------------

def test_logger_flush_that_fails_keeps_the_segment_and_leaves_no_temporary(
        tmp_path: Path) -> None:
    log = RunLogger(tmp_path, run="r", flush_every=1000)
    log.log(0, test_acc=0.1)
    log.flush()
    seg = log.segment_path(0)
    before = _files(tmp_path)
    log.log(1, test_acc=0.2)
    with file_size_limit(256), pytest.raises(OutputError) as ei:
        log.flush()
    assert ei.value.code is ErrorCode.OUTPUT_NOT_WRITABLE
    assert "the rows stay in memory" in str(ei.value) and str(seg) in str(ei.value)
    assert _files(tmp_path) == before  # the old segment, byte for byte; nothing else
    log.close()  # the rows stayed in memory: all of them are written now
    assert read_run_folder(tmp_path).column("step").to_pylist() == [0, 1]
    assert _temporaries(tmp_path) == []


def test_logger_flush_interrupted_part_way_leaves_no_temporary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C (or SIGTERM, raised by the CLI) while pyarrow writes: pyarrow removes its file
    only on an ``Exception``; the writer removes it on anything."""
    import pyarrow.parquet as pq

    log = RunLogger(tmp_path, run="r", flush_every=1000, fsync=False)
    log.log(0, test_acc=0.1)
    log.flush()
    before = _files(tmp_path)

    def torn(table: Any, where: str, *a: Any, **k: Any) -> None:
        Path(where).write_bytes(b"PAR1 half a segment")
        raise KeyboardInterrupt

    monkeypatch.setattr(pq, "write_table", torn)
    log.log(1, test_acc=0.2)
    with pytest.raises(KeyboardInterrupt):
        log.flush()
    assert _files(tmp_path) == before


def test_logger_temporary_name_is_one_the_folder_reader_reports(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The temporary segment keeps the name the folder's readers know: hidden, with the pid,
    ending in ``.tmp`` (never ``.parquet``): a copy of it, as a kill leaves it, is reported as
    an interrupted flush and never read as rows."""
    import pyarrow.parquet as pq

    names: list[str] = []
    real = pq.write_table

    def spy(table: Any, where: str, *a: Any, **k: Any) -> None:
        names.append(where)
        real(table, where, *a, **k)

    monkeypatch.setattr(pq, "write_table", spy)
    log = RunLogger(tmp_path, run="r", flush_every=1000, fsync=False)
    log.log(0, test_acc=0.5)
    log.flush()
    seg = log.segment_path(0)
    tmp = Path(names[-1])
    assert tmp.parent == tmp_path and not tmp.exists()
    assert tmp.name.startswith(f".{seg.name}.{os.getpid()}.") and tmp.name.endswith(".tmp")
    tmp.write_bytes(seg.read_bytes()[:100])  # what a SIGKILL during the write leaves
    t = read_run_folder(tmp_path)
    assert t.num_rows == 1
    assert any(f["code"] == "SOURCE_TRUNCATED" and f["file"] == tmp.name for f in _findings(t))


def _findings(t: Any) -> list[dict[str, Any]]:
    import json

    from grokaudit.shards import PROVENANCE_KEY

    prov = json.loads(t.schema.metadata[PROVENANCE_KEY])
    return list(prov.get("findings", []))


def test_logger_segments_follow_the_umask(tmp_path: Path,
                                          umask: Callable[[int], int]) -> None:
    umask(0o027)
    with RunLogger(tmp_path, run="r", fsync=False) as log:
        log.log(0, test_acc=0.5)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()}
    assert set(modes.values()) == {0o640} and len(modes) == 2  # the segment and the claim


def test_fsync_is_asked_for_by_the_logger_and_the_checkpoint_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A flush with ``fsync=True`` flushes the file and its folder; without, and for a report
    written by :func:`atomic_write`, nothing is fsync'd."""
    calls: list[int] = []
    real = os.fsync

    def spy(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", spy)
    atomic_write(tmp_path / "r.json", b"{}")
    assert calls == []
    with RunLogger(tmp_path / "nosync", run="r", fsync=False) as log:
        log.log(0, test_acc=0.5)
    assert calls == []
    with RunLogger(tmp_path / "sync", run="r") as log:
        log.log(0, test_acc=0.5)
        n = len(calls)
        log.flush()
        assert len(calls) == n + 2  # the temporary file, then the folder after the rename


# ------------------------------------------------------------------------------------------
# the trainer's checkpoint and MANIFEST
# ------------------------------------------------------------------------------------------

def _manifest(path: Path, command: str = "grokaudit train s.toml",
              sweep: dict[str, Any] | None = None) -> Path:
    from grokaudit.reference_runs.manifest import write_manifest

    return write_manifest(path, command=command, sweep_file="s.toml", sweep=sweep or {},
                          device="cpu", wall_seconds=1.25, n_runs=1, n_rows=2, complete=True)


def test_checkpoint_that_fails_keeps_the_old_one_and_leaves_no_temporary(
        tmp_path: Path) -> None:
    pytest.importorskip("torch")
    import numpy as np
    from grokaudit.reference_runs.checkpoint import load_checkpoint, save_checkpoint

    ckpt = tmp_path / "sweep.ckpt"
    save_checkpoint(ckpt, "id", {}, None)
    assert stat.S_IMODE(ckpt.stat().st_mode) == 0o600  # the sweep's private state
    before = _files(tmp_path)
    big = {0: [{"step": np.zeros(4096)}]}
    with file_size_limit(ckpt.stat().st_size + 64), pytest.raises(OutputError) as ei:
        save_checkpoint(ckpt, "id", big, None)
    assert ei.value.code is ErrorCode.OUTPUT_NOT_WRITABLE and "the checkpoint" in str(ei.value)
    assert _files(tmp_path) == before
    assert load_checkpoint(ckpt, "id") == ({}, None)


def test_checkpoint_interrupted_while_written_leaves_no_temporary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C (or SIGTERM, raised by the CLI) in the middle of ``torch.save``."""
    torch = pytest.importorskip("torch")
    from grokaudit.reference_runs.checkpoint import save_checkpoint

    ckpt = tmp_path / "sweep.ckpt"
    save_checkpoint(ckpt, "id", {}, None)
    before = _files(tmp_path)

    def torn(obj: Any, fh: Any, *a: Any, **k: Any) -> None:
        fh.write(b"PK\x03\x04 half a zip")
        raise KeyboardInterrupt

    monkeypatch.setattr(torch, "save", torn)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(ckpt, "id", {}, None)
    assert _files(tmp_path) == before


def test_manifest_that_fails_keeps_the_old_one_and_leaves_no_temporary(
        tmp_path: Path, umask: Callable[[int], int]) -> None:
    pytest.importorskip("torch", reason="the manifest names torch's version")
    umask(0o027)
    path = _manifest(tmp_path / "log.MANIFEST.toml")
    assert stat.S_IMODE(path.stat().st_mode) == 0o640  # a manifest is shared: the umask's
    before = _files(tmp_path)
    with file_size_limit(64), pytest.raises(OutputError) as ei:
        _manifest(path, command="grokaudit train other.toml")
    assert ei.value.code is ErrorCode.OUTPUT_NOT_WRITABLE and "the MANIFEST" in str(ei.value)
    assert _files(tmp_path) == before


def test_manifest_reads_back_exactly(tmp_path: Path) -> None:
    """What ``train`` writes, with every hostile key and string: tomllib reads the same data
    (the hand-written emitter wrote invalid TOML for some of them)."""
    pytest.importorskip("torch", reason="the manifest names torch's version")
    base: dict[str, Any] = {k or "empty": v for k, v in zip(HOSTILE, reversed(HOSTILE))}
    sweep: dict[str, Any] = {"name": "a\rb", "base": {**base, "lr": 1e-3, "wd": -0.0, "p": 97,
                                       "skip": None, "on": True},
             "grid": {"seed": [0, 1], "my key": ["a.b", "ü\x1b"]}}
    command = "grokaudit train a\rb.toml\t-o 'x y'.parquet \x7f"
    path = _manifest(tmp_path / "log.MANIFEST.toml", command=command, sweep=sweep)
    back = tomllib.loads(path.read_text(encoding="utf-8"))
    assert back["command"] == command and back["wall_seconds"] == 1.2
    assert back["complete"] is True and back["log"] == "log.parquet"
    del sweep["base"]["skip"]  # TOML has no null: a None is left out
    assert back["sweep"] == sweep
    assert math.copysign(1.0, back["sweep"]["base"]["wd"]) == -1.0
    assert set(back["environment"]) >= {"grokaudit", "torch", "python", "device"}


def test_to_toml_nests_and_keeps_floats() -> None:
    from grokaudit.reference_runs.manifest import to_toml

    data = {"t": {"u": {"v": {"a.b": [1.5, "x"], "": 1}}},
            "f": [1e-300, 1.7976931348623157e308, 0.1, -2.5e-7],
            "tuple": (1, 2), "k": {k: k for k in HOSTILE}}
    back = tomllib.loads(to_toml(data))
    assert back == {**data, "tuple": [1, 2]}
    # never in a manifest (every sweep number is checked finite), but exact if it were:
    # TOML's own nan/inf, not the strings "nan" and "inf" (which also lost the sign of -inf)
    inf = tomllib.loads(to_toml({"a": float("-inf"), "b": float("inf"), "c": float("nan")}))
    assert inf["a"] == -math.inf and inf["b"] == math.inf and math.isnan(inf["c"])


def test_to_toml_keeps_numpy_numbers_numbers_and_refuses_keys_that_collide() -> None:
    """A numpy integer or boolean in a manifest (a grid value, a seed) reads back as the number
    or boolean it was, not as its text; two keys that read the same as text are refused, never
    one of them dropped (tomli-w would keep the last)."""
    import numpy as np
    from grokaudit.reference_runs.manifest import to_toml

    back = tomllib.loads(to_toml({"seed": np.int64(3), "ln": np.bool_(True),
                                  "lr": np.float32(0.5), "grid": [np.int32(1), 2]}))
    assert back == {"seed": 3, "ln": True, "lr": 0.5, "grid": [1, 2]}
    assert type(back["seed"]) is int and type(back["ln"]) is bool
    with pytest.raises(ValueError):
        to_toml({"t": {1: "a", "1": "b"}})


def test_bundled_manifests_still_read() -> None:
    """The MANIFESTs written by the old emitter are never rewritten and stay readable."""
    found = sorted((ROOT / "reference_runs" / "data").rglob("*.MANIFEST.toml"))
    assert found
    for p in found:
        assert "command" in tomllib.loads(p.read_text(encoding="utf-8"))


# ------------------------------------------------------------------------------------------
# one writer, one scalar rule
# ------------------------------------------------------------------------------------------

def test_atomic_write_with_options(tmp_path: Path) -> None:
    """The options the callers use: the temporary name, the mode, no folder created."""
    seen: list[str] = []

    def write(tmp: str) -> None:
        seen.append(tmp)
        Path(tmp).write_bytes(b"x")

    p = atomic_write_with(tmp_path / "f.parquet", write, temp_prefix=".f.77.",
                          temp_suffix=".tmp", mode=0o600, fsync=True)
    assert re.fullmatch(r"\.f\.77\.[0-9a-f]{8}\.tmp", Path(seen[0]).name)
    assert stat.S_IMODE(p.stat().st_mode) == 0o600 and p.read_bytes() == b"x"
    with pytest.raises(OutputError) as ei:
        atomic_write_with(tmp_path / "gone" / "f", write, mkdir=False, flag="the log",
                          hint="call flush() again")
    assert ei.value.code is ErrorCode.OUTPUT_NOT_WRITABLE
    assert str(ei.value).endswith("cannot write the log (No such file or directory); "
                                  "call flush() again")
    assert not (tmp_path / "gone").exists()


def test_the_writer_never_changes_the_umask(tmp_path: Path, umask: Callable[[int], int],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The umask's permissions come from the kernel creating the file: ``os.umask(0)`` for a
    moment would hand another thread's new file (a training loop's own checkpoint, while the
    RunLogger flushes) world-writable permissions."""
    umask(0o077)  # (the fixture before monkeypatch: it restores the umask after the undo)

    def refused(mask: int) -> int:
        raise AssertionError("os.umask called")

    monkeypatch.setattr(os, "umask", refused)
    p = atomic_write(tmp_path / "r.json", b"{}")
    with RunLogger(tmp_path / "log", run="r", fsync=False) as log:
        log.log(0, test_acc=0.5)
    assert stat.S_IMODE(p.stat().st_mode) == 0o600
    assert {stat.S_IMODE(q.stat().st_mode) for q in (tmp_path / "log").iterdir()} == {0o600}


def test_one_rename_in_the_writers() -> None:
    """Secondary, on the source: ``os.replace`` is called in the one writer only."""
    hits = sorted(str(p.relative_to(ROOT)) for d in ("audit", "reference_runs", "adapters")
                  for p in (ROOT / d).rglob("*.py")
                  if re.search(r"\bos\.(replace|rename)\(", p.read_text(encoding="utf-8")))
    assert hits == ["audit/outputs.py"]


def test_adapters_read_text_conditions_with_one_rule() -> None:
    from grokaudit.adapters import merge, mlflow

    assert getattr(mlflow, "parse_scalar") is merge.parse_scalar  # noqa: B009 - not exported
    assert [merge.parse_scalar(s) for s in ("3", "1e-3", "0.5", "wd", "1_0")] == \
        [3, 1e-3, 0.5, "wd", 10]
    assert not hasattr(mlflow, "_scalar") and not hasattr(merge, "_parse_scalar")
