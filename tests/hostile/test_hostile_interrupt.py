"""Ctrl-C in any command: exit 130 and one line, never click's "Aborted!" with exit 1 (which
reads as "critical findings"), never a traceback, and no output file left behind."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner
from grokaudit.cli import cli
from helpers.signals import as_from_a_terminal

LOG = Path(__file__).resolve().parents[2] / "reference_runs" / "data" / "mlp_wd_sweep_p59.parquet"


def _interrupt(*_: object, **__: object) -> None:
    raise KeyboardInterrupt


def test_ctrl_c_during_check_exits_130_and_writes_nothing(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import grokaudit.api

    monkeypatch.setattr(grokaudit.api, "audit_log", _interrupt)
    out = tmp_path / "result.json"
    res = CliRunner().invoke(cli, ["check", str(LOG), "--json", str(out)])
    assert res.exit_code == 130
    assert "Aborted" not in res.output and not isinstance(res.exception, KeyboardInterrupt)
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_a_real_sigint_during_check_exits_130_without_a_traceback(tmp_path: Path) -> None:
    """The signal itself (not a raised exception), sent by the process to itself while the
    audit runs."""
    child = f"""
import os, signal, sys, time
import grokaudit.api
def audit_log(*a, **k):
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(30)  # the signal interrupts this
grokaudit.api.audit_log = audit_log
from grokaudit.cli import main
main(["check", {str(LOG)!r}, "--json", {str(tmp_path / 'r.json')!r}])
"""
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                          timeout=120, preexec_fn=as_from_a_terminal)
    assert proc.returncode == 128 + signal.SIGINT, proc.stderr
    assert "Traceback" not in proc.stderr and "Aborted" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_while_a_command_loads_its_libraries_exits_130(tmp_path: Path) -> None:
    """Start-up loads only the command line (``import grokaudit.cli`` loads neither pandas,
    pyarrow nor numpy): a Ctrl-C while the command then loads them is its interruption,
    exit 130 and one line. It was a traceback and exit 1, since ``import grokaudit`` loaded
    them all before the command line could catch anything."""
    child = f"""
import sys
import grokaudit.cli
loaded = [m for m in ("pandas", "pyarrow", "numpy") if m in sys.modules]
assert not loaded, loaded
class CtrlC:
    def find_spec(self, name, path=None, target=None):
        if name == "pandas":
            raise KeyboardInterrupt
sys.meta_path.insert(0, CtrlC())
grokaudit.cli.main(["check", {str(LOG)!r}, "--json", {str(tmp_path / 'r.json')!r}])
"""
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 128 + signal.SIGINT, proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads sigaction via ctypes")
def test_sigint_stays_pythons_while_check_reads_a_csv(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """pyarrow's CSV reader takes SIGINT from Python for the read and hands it on from a thread
    of its own: a press near the end of a read could be lost, and the audit ran on to its exit
    code. While a command reads, SIGINT's handler is Python's."""
    import ctypes
    import io

    import grokaudit.schema as schema
    import pyarrow.parquet as pq

    class Sigaction(ctypes.Structure):  # Linux: the handler is the first member
        _fields_ = [("handler", ctypes.c_void_p), ("rest", ctypes.c_byte * 512)]

    libc = ctypes.CDLL(None)

    def handler() -> int | None:
        sa = Sigaction()
        assert libc.sigaction(signal.SIGINT, None, ctypes.byref(sa)) == 0
        return sa.handler

    python = handler()
    during: list[int | None] = []
    real_read = schema.pacsv.read_csv

    class Reading(io.BytesIO):
        def read(self, n: int | None = -1) -> bytes:
            during.append(handler())
            return super().read(n)

    def read_csv(source: object, **k: object) -> object:
        # a path, or the bytes the reader read once (grokaudit.csvread)
        data = source.read() if hasattr(source, "read") else Path(str(source)).read_bytes()
        return real_read(Reading(bytes(data)), **k)

    monkeypatch.setattr(schema.pacsv, "read_csv", read_csv)
    log = tmp_path / "log.csv"
    pq.read_table(LOG).to_pandas().to_csv(log, index=False)
    res = CliRunner().invoke(cli, ["check", str(log)])
    assert res.exit_code in (0, 1), res.output
    assert during and all(h == python for h in during)


_CHILD_CHECK = """
import sys
import grokaudit.api
def audit_log(*a, **k):
    raise KeyboardInterrupt if sys.argv[1] == "ctrl-c" else RuntimeError("a bug")
if sys.argv[1] in ("ctrl-c", "bug"):
    grokaudit.api.audit_log = audit_log
from grokaudit.cli import main
main(["check", sys.argv[2]])
"""


@pytest.mark.parametrize(("mode", "code"), [("ctrl-c", 130), ("missing-file", 2), ("bug", 2)])
def test_a_closed_stderr_does_not_turn_the_exit_code_into_1(tmp_path: Path, mode: str,
                                                            code: int) -> None:
    """``grokaudit check LOG 2>&1 | head``, the reader gone: the line cannot be written, and
    the exit code must still say what happened (the failed write reached click: exit 1)."""
    import os

    log = str(tmp_path / "absent.parquet" if mode == "missing-file" else LOG)
    r, w = os.pipe()
    os.close(r)
    try:
        proc = subprocess.run([sys.executable, "-c", _CHILD_CHECK, mode, log], stderr=w,
                              stdout=subprocess.DEVNULL, timeout=120)
    finally:
        os.close(w)
    assert proc.returncode == code


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="POSIX signal masks")
def test_worker_threads_leave_ctrl_c_to_the_main_thread(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A Ctrl-C delivered to an idle worker thread was heard only when the main thread next
    ran Python code: ``test_a_real_sigint…`` slept its 30 s and the audit went on (exit 2,
    then). The clock threads, the column readers and the trail's hashing thread block SIGINT,
    so that the kernel delivers it to the main thread."""
    from grokaudit import blocks
    from grokaudit.trail import HashAhead

    monkeypatch.setenv("GROKAUDIT_THREADS", "2")
    masks = blocks.map_blocks(lambda _: signal.pthread_sigmask(signal.SIG_BLOCK, []),
                              [slice(0, 1), slice(1, 2), slice(2, 3), slice(3, 4)])
    assert all(signal.SIGINT in m for m in masks)
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])  # main: not
    seen: list[set[int]] = []
    import grokaudit.trail as trail

    real = trail._Hashing.step

    def spy(self: trail._Hashing) -> bool:
        if threading.current_thread().name == "grokaudit-sha256":
            seen.append(set(signal.pthread_sigmask(signal.SIG_BLOCK, [])))
        return real(self)

    monkeypatch.setattr(trail._Hashing, "step", spy)
    with HashAhead([str(LOG)]) as h:
        h._thread.join()
        h.files()
    assert seen and signal.SIGINT in seen[0]


@pytest.mark.parametrize("writer", ["output", "checkpoint", "manifest"])
def test_an_interruption_as_the_temporary_file_is_made_leaves_none(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writer: str) -> None:
    """Ctrl-C or SIGTERM acted on just after the temporary file was created, before its name
    was handed back (inside ``tempfile.mkstemp`` the file stayed, its name lost to the
    cleanup): no temporary file is left, for the outputs, the trainer's checkpoint and its
    manifest."""
    import os

    real_open = os.open

    def created_then_interrupted(path: str, flags: int, *a: object, **k: object) -> int:
        fd = real_open(path, flags, *a, **k)
        if flags & os.O_CREAT:  # the file exists now; the signal's handler runs here
            os.close(fd)
            raise KeyboardInterrupt
        return fd

    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setattr(os, "open", created_then_interrupted)
    with pytest.raises(KeyboardInterrupt):
        if writer == "output":
            from grokaudit.outputs import atomic_write_with

            atomic_write_with(out / "r.json", lambda tmp: None)
        elif writer == "checkpoint":
            pytest.importorskip("torch")
            from grokaudit.reference_runs.checkpoint import save_checkpoint

            save_checkpoint(out / "sweep.ckpt", "id", {}, None)
        else:
            pytest.importorskip("torch", reason="the trainer's manifest needs the [train] extra")
            from grokaudit.reference_runs.manifest import write_manifest

            write_manifest(out / "MANIFEST.toml", command="grokaudit train", sweep_file="s.toml",
                           sweep={}, device="cpu", wall_seconds=0.0, n_runs=0, n_rows=0,
                           complete=True)
    monkeypatch.setattr(os, "open", real_open)
    assert sorted(p.name for p in out.iterdir()) == []
