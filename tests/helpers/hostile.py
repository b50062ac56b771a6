"""Helpers of the hostile-input suite: run the CLI (in process or as a real subprocess), check
the one-line error contract, build small logs, and hash a folder to prove nothing changed.

The contract (issue 10): every hostile input gives exit 2 with ONE line
``error: <message> [CODE]`` on stderr, CODE an :class:`~grokaudit.errors.ErrorCode` (never
an ``internal error``), no traceback and nothing on stdout — or, where the
input is valid, the correct audit (exit 0 or 1). No file changes except the one output asked for.
Each hostile input has ONE correct outcome, pinned by its test: the refusal's exact code
(:func:`expect_error`) or the audit's exit code, verdicts and reason codes
(:func:`expect_audit_verdict`) — never "a refusal or any audit" (issue 43 item 7).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from click.testing import CliRunner
from grokaudit.cli import cli as grokaudit_cli
from grokaudit.errors import ErrorCode

REPO = Path(__file__).resolve().parents[2]
#: A log with critical findings: ``check REFERENCE *FAILING_ARGS`` exits 1.
REFERENCE = REPO / "reference_runs" / "data" / "mlp_wd_sweep_p59.parquet"
FAILING_ARGS = ("--by", "wd", "--metric", "emb_pr", "--cell", "arch")

CODES = frozenset(c.value for c in ErrorCode)
ERROR_LINE = re.compile(r"^error: (?P<msg>.*) \[(?P<code>[A-Z_]+)\]$")
#: What a terminal could interpret: C0 (but \n, \t), DEL, C1, bidi overrides, separators.
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
#: The text a hostile log tries to print as if it were the audit's own result line.
FORGED = "result: no critical finding (exit 0)"


@dataclass
class Outcome:
    """What one command did."""

    args: tuple[str, ...]
    exit_code: int
    stdout: str
    stderr: str
    exception: BaseException | None = None  #: an exception that escaped the CLI (in process)
    exc_text: str = ""
    #: warnings a real process would print on stderr (in process, pytest would swallow them)
    warned: tuple[str, ...] = ()

    def __str__(self) -> str:
        return (f"grokaudit {' '.join(self.args)!r}\n  exit {self.exit_code}\n"
                f"  stdout: {self.stdout[-1500:]!r}\n  stderr: {self.stderr[-3000:]!r}"
                + (f"\n  escaped: {self.exc_text[-3000:]}" if self.exception else "")
                + (f"\n  warnings: {list(self.warned)}" if self.warned else ""))


def cli(args: Sequence[Any], *, cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str | None] | None = None) -> Outcome:
    """Run ``grokaudit ARGS`` in process (click's CliRunner) in the folder ``cwd``."""
    import traceback

    argv = [os.fspath(a) if isinstance(a, os.PathLike) else str(a) for a in args]
    runner = CliRunner()
    old = os.getcwd()
    env = {"GROKAUDIT_TRACEBACK": None, **dict(env or {})}
    try:
        if cwd is not None:
            os.chdir(cwd)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            res = runner.invoke(grokaudit_cli, argv, env=env, catch_exceptions=True)
    finally:
        os.chdir(old)
    exc = res.exception if not isinstance(res.exception, SystemExit) else None
    text = "".join(traceback.format_exception(*res.exc_info)) if exc and res.exc_info else ""
    shown = tuple(f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})"
                  for w in caught if not issubclass(w.category, _HIDDEN))
    return Outcome(tuple(argv), res.exit_code, res.stdout, res.stderr, exc, text, shown)


#: warning categories Python does not print by default (or third-party deprecations)
_HIDDEN = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)


def sub(args: Sequence[Any], *, cwd: str | os.PathLike[str], timeout: float = 120,
        env: Mapping[str, str] | None = None) -> Outcome:
    """Run ``python -m grokaudit ARGS`` as a real process: the real stderr and exit code."""
    argv = [os.fspath(a) if isinstance(a, os.PathLike) else str(a) for a in args]
    full_env = {k: v for k, v in os.environ.items() if k != "GROKAUDIT_TRACEBACK"}
    full_env.update(env or {})
    p = subprocess.run([sys.executable, "-m", "grokaudit", *argv], cwd=cwd, env=full_env,
                       capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    dec = lambda b: b.decode("utf-8", errors="backslashreplace")  # noqa: E731
    return Outcome(tuple(argv), p.returncode, dec(p.stdout), dec(p.stderr))


def _no_escape(out: Outcome) -> None:
    assert out.exception is None, f"an exception escaped the CLI:\n{out}"
    assert not out.warned, f"warnings that a real process prints on stderr:\n{out}"
    both = out.stdout + out.stderr
    assert "Traceback" not in both, f"traceback printed:\n{out}"
    assert "internal error" not in out.stderr, f"an internal error (a bug):\n{out}"


def expect_error(out: Outcome, *codes: ErrorCode | str) -> tuple[str, str]:
    """Exit 2 with one ``error: … [CODE]`` line on stderr, nothing on stdout; CODE a real,
    specific ErrorCode (one of ``codes`` when given). Returns ``(code, message)``."""
    _no_escape(out)
    assert out.exit_code == 2, f"expected exit 2, got {out.exit_code}:\n{out}"
    lines = out.stderr.rstrip("\n").split("\n")
    assert len(lines) == 1 and lines[0], f"stderr is not one line:\n{out}"
    m = ERROR_LINE.match(lines[0])
    assert m, f"stderr is not `error: <message> [CODE]`:\n{out}"
    code = m.group("code")
    assert code in CODES, f"[{code}] is not an ErrorCode:\n{out}"
    assert code in {c.value for c in ErrorCode}, f"error without a known code:\n{out}"
    assert not RAW_CONTROL.search(out.stderr), f"raw control character on stderr:\n{out}"
    assert out.stdout.strip() == "", f"stdout not empty on an error:\n{out}"
    want = {c.value if isinstance(c, ErrorCode) else c for c in codes}
    if want:
        assert code in want, f"expected one of {sorted(want)}, got [{code}]:\n{out}"
    return code, m.group("msg")


def expect_usage_error(out: Outcome) -> None:
    """A command line click cannot parse (a value of the wrong type, a flag that does not
    exist): one coded line like every refusal, ``INVALID_OPTION`` or ``UNKNOWN_OPTION``."""
    expect_error(out, ErrorCode.INVALID_OPTION, ErrorCode.UNKNOWN_OPTION)


def expect_error_or_usage(out: Outcome, *codes: ErrorCode | str) -> str | None:
    """:func:`expect_error` with ``codes``, or a refusal of the command line by its type
    (``INVALID_OPTION``)."""
    return expect_error(out, *codes, ErrorCode.INVALID_OPTION)[0] if codes else \
        expect_error(out)[0]


def expect_audit(out: Outcome, *exit_codes: int) -> None:
    """A correct audit: exit 0 or 1 (one of ``exit_codes`` when given), nothing on stderr."""
    _no_escape(out)
    assert out.exit_code in (exit_codes or (0, 1)), f"expected an audit:\n{out}"
    assert out.stderr.strip() == "", f"stderr not empty on a valid audit:\n{out}"
    assert not RAW_CONTROL.search(out.stdout), f"raw control character on stdout:\n{out}"


def _reason_codes() -> frozenset[str]:
    from grokaudit.reasons import Reason

    return frozenset(r.value for r in Reason)


def finding_codes(doc: Mapping[str, Any]) -> set[str]:
    """The reason codes of the findings of an audit's (or a claim's) JSON document."""
    return {f["code"] for f in doc["findings"]}


def expect_audit_verdict(out: Outcome, doc: Mapping[str, Any] | None = None, *,
                         exit_code: int, verdicts: Sequence[str | None] | None = None,
                         failing: Iterable[str] = (), findings: Iterable[str] = (),
                         absent: Iterable[str] = ()) -> dict[str, Any]:
    """A pinned audit (issue 43 item 7): :func:`expect_audit` with exactly ``exit_code``, and
    its JSON (``doc``, or stdout parsed when the command wrote ``--json -``) says

    * ``summary.exit_code`` is ``exit_code`` and ``summary.failing_codes`` is exactly
      ``failing`` (a set; empty for exit 0 — the pin itself must agree: exit 1 iff failing
      codes, under the default ``--fail-on``);
    * the per-study verdict labels are exactly ``verdicts``, in order (``None``: no clock
      verdict), when given (``check`` only: a claim's JSON has no verdict list);
    * every code of ``findings`` is among its findings and none of ``absent``.

    Codes are reason codes (checked against :class:`~grokaudit.reasons.Reason`), never message
    text. Returns the parsed document."""
    failing, findings, absent = set(failing), set(findings), set(absent)
    unknown = (failing | findings | absent) - _reason_codes()
    assert not unknown, f"not reason codes (a typo in the test?): {sorted(unknown)}"
    assert exit_code in (0, 1) and bool(failing) == (exit_code == 1), (
        f"the pin contradicts itself: exit {exit_code} with failing codes {sorted(failing)}")
    expect_audit(out, exit_code)
    if doc is None:
        doc = json.loads(out.stdout)
    assert isinstance(doc, dict), f"no JSON document:\n{out}"
    summary = doc["summary"]
    assert summary["exit_code"] == exit_code, f"JSON summary exit code:\n{summary}"
    assert set(summary["failing_codes"]) == failing, (
        f"failing codes {sorted(summary['failing_codes'])}, expected {sorted(failing)}:\n{out}")
    if verdicts is not None:
        got = [v["verdict"] for v in summary["verdicts"]]
        assert got == list(verdicts), f"verdicts {got}, expected {list(verdicts)}:\n{out}"
    codes = finding_codes(doc)
    assert findings <= codes, f"findings {sorted(codes)} lack {sorted(findings - codes)}"
    assert not (absent & codes), f"findings {sorted(codes)} hold {sorted(absent & codes)}"
    return doc


def no_forged_lines(text: str, exit_code: int | None = None) -> None:
    """Terminal text that a log cannot forge: no raw control characters, and no line that
    starts like the audit's own clean result line (``FORGED``) unless the command really
    exited 0 — and then only once."""
    assert "\x1b" not in text and "\r" not in text, f"raw ESC/CR printed: {text[-2000:]!r}"
    assert not RAW_CONTROL.search(text), f"raw control character printed: {text[-2000:]!r}"
    forged = [ln for ln in text.split("\n") if ln.lstrip().startswith(FORGED)]
    allowed = 1 if exit_code == 0 else 0
    assert len(forged) <= allowed, (
        f"a forged result line was printed (exit {exit_code}): {text[-3000:]!r}")


# ------------------------------------------------------------------------------------------
# files
# ------------------------------------------------------------------------------------------

def _digest(p: Path) -> str:
    if p.is_symlink():
        return "link:" + os.readlink(p)
    if not p.is_file():
        st = p.lstat()
        return f"special:{st.st_mode:o}"
    return hashlib.sha256(p.read_bytes()).hexdigest()


def snapshot(*roots: str | os.PathLike[str]) -> dict[str, tuple[str, int]]:
    """Every file under ``roots`` (and the roots themselves when files): hash and mode."""
    out: dict[str, tuple[str, int]] = {}
    for root in map(Path, roots):
        items: Iterable[Path] = [root] if not root.is_dir() or root.is_symlink() else (
            p for p in root.rglob("*") if not p.is_dir() or p.is_symlink())
        for p in items:
            out[str(p)] = (_digest(p), p.lstat().st_mode)
    return out


def assert_unchanged(before: Mapping[str, tuple[str, int]], *roots: str | os.PathLike[str],
                     allow: Iterable[str | os.PathLike[str]] = ()) -> None:
    """No file under ``roots`` changed, appeared or vanished, except those in ``allow``; and
    no temporary file of the atomic writer (``.NAME.*.tmp``) was left behind."""
    allowed = {os.fspath(a) for a in allow}
    after = snapshot(*roots)
    changed = sorted(k for k in set(before) | set(after)
                     if before.get(k) != after.get(k) and k not in allowed)
    assert not changed, f"files changed, appeared or vanished: {changed}"
    stray = [k for k in after if re.search(r"/\.[^/]*\.tmp[^/]*$", k)]
    assert not stray, f"temporary files left behind: {stray}"


# ------------------------------------------------------------------------------------------
# logs
# ------------------------------------------------------------------------------------------

STEPS = np.arange(0, 6001, 100, dtype=np.int64)


def trajectory(t_grok: float, steps: np.ndarray = STEPS) -> dict[str, np.ndarray]:
    """A grokking run: train memorizes early, test jumps at ``t_grok``, the metric compresses
    after it."""
    s = steps.astype(np.float64)
    return {
        "test_acc": 1.0 / (1.0 + np.exp(-(s - t_grok) / 150.0)),
        "train_acc": 1.0 / (1.0 + np.exp(-(s - 300.0) / 60.0)),
        "emb_erank": 6.0 + 20.0 / (1.0 + np.exp((s - t_grok - 800.0) / 200.0)),
    }


def sweep_df(wds: Sequence[float] = (1.0, 2.0, 3.0), seeds: Sequence[int] = (0, 1, 2), *,
             steps: np.ndarray = STEPS, run_name: Any = None, arch: str | None = None
             ) -> pd.DataFrame:
    """A canonical log: one grokking run per (wd, seed), ``t_grok`` falling with wd."""
    frames = []
    for wd in wds:
        for seed in seeds:
            name = run_name(wd, seed) if run_name else f"wd{wd}_s{seed}"
            cols: dict[str, Any] = {"run": name, "step": steps,
                                    **trajectory(3000.0 / wd + 40.0 * seed, steps),
                                    "seed": seed, "wd": float(wd)}
            if arch is not None:
                cols["arch"] = arch
            frames.append(pd.DataFrame(cols))
    return pd.concat(frames, ignore_index=True)


def write_parquet(df: pd.DataFrame, path: Path, metadata: Mapping[bytes, bytes] | None = None
                  ) -> Path:
    """Write ``df`` with pyarrow (optionally with raw schema metadata)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = pa.Table.from_pandas(df, preserve_index=False)
    if metadata is not None:
        meta = {k: v for k, v in (t.schema.metadata or {}).items() if k != b"pandas"}
        meta.update(metadata)
        t = t.replace_schema_metadata(meta)
    pq.write_table(t, path)
    return path


def json_values(obj: Any) -> list[Any]:
    """Every key and leaf value in a parsed JSON document."""
    out: list[Any] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.append(k)
            out.extend(json_values(v))
    elif isinstance(obj, list):
        for v in obj:
            out.extend(json_values(v))
    else:
        out.append(obj)
    return out


def load_json(text: str) -> Any:
    return json.loads(text)
