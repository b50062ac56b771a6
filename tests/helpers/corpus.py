"""Running grokaudit on the corpus of public logs as a user would."""

from __future__ import annotations

import json
from typing import Any

from click.testing import CliRunner
from grokaudit.cli import cli


def run(*args: Any) -> tuple[int, dict[str, Any] | None, str]:
    """``grokaudit ARGS --json -``: exit code, the JSON (None on exit 2), stderr."""
    r = CliRunner().invoke(cli, [str(a) for a in args] + ["--json", "-"])
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    doc = json.loads(r.stdout) if r.exit_code in (0, 1) else None
    return r.exit_code, doc, r.stderr
