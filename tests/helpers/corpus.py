"""Running grokaudit on the corpus of public logs as a user would.

Every ``check`` of a public log is also an identity test of the ``fast`` extra (issue 44: the
fast path is an install option, never a different answer): where numba is installed, the
same command line is run again with ``--kernel numba`` and must give the same exit code and
the same JSON — or, refused, the same error — but for the trail's record of the kernel and of
the command line."""

from __future__ import annotations

import importlib.util
import json
from typing import Any

from click.testing import CliRunner
from grokaudit.cli import cli

#: Whether the ``fast`` extra's kernels can run here (numba installed).
HAS_NUMBA = importlib.util.find_spec("numba") is not None


def _invoke(args: list[str]) -> tuple[int, dict[str, Any] | None, str]:
    r = CliRunner().invoke(cli, args + ["--json", "-"])
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    doc = json.loads(r.stdout) if r.exit_code in (0, 1) else None
    return r.exit_code, doc, r.stderr


def without_kernel(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` less what ``--kernel`` changes by design: the trail's record of the kernel and
    its command line (``doc`` itself left as it is)."""
    trail = {k: v for k, v in doc["trail"].items() if k not in ("kernel", "command")}
    return {**doc, "trail": trail}


def run(*args: Any) -> tuple[int, dict[str, Any] | None, str]:
    """``grokaudit ARGS --json -``: exit code, the JSON (None on exit 2), stderr. A ``check``
    without ``--kernel`` is run on the numba kernels too, where installed, and must say the
    same (see the module's docstring)."""
    argv = [str(a) for a in args]
    code, doc, err = _invoke(argv)
    if HAS_NUMBA and argv[:1] == ["check"] and "--kernel" not in argv:
        code_nb, doc_nb, err_nb = _invoke([*argv, "--kernel", "numba"])
        assert code_nb == code, (argv, code, code_nb, err_nb)
        if doc is None or doc_nb is None:
            assert (doc, err_nb) == (doc_nb, err), argv
        else:
            assert without_kernel(doc_nb) == without_kernel(doc), argv
            assert doc_nb["trail"].get("kernel") == "numba"
    return code, doc, err
