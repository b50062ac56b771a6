"""``grokaudit suite``: the adversarial self-test, run against the installed audit and your config.

Imported lazily by the core's CLI (``LAZY_COMMANDS``). hypothesis is imported only for the
property run, so the named cases run without the ``test`` extra.
"""

from __future__ import annotations

import json
import sys
import warnings

import click
from grokaudit.errors import GrokauditError

from .runner import SuiteReport, run_suite


def _table(report: SuiteReport) -> str:
    rows = [("case", "expected", "got", "pass")]
    for c in report.cases:
        rows.append((c.name, c.expected, c.got, "ok" if c.passed else "FAIL"))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]
    for c in report.cases:
        if not c.passed:
            lines.append(f"\n{c.name}:")
            lines.extend(f"  - {m}" for m in c.mismatches[:12])
            if len(c.mismatches) > 12:
                lines.append(f"  … {len(c.mismatches) - 12} more")
    lines.append("")
    if report.properties is None:
        lines.append(f"property run: skipped ({report.skipped})")
    else:
        for p in report.properties:
            status = "ok" if p["pass"] else f"FAIL: {p['error']}"
            lines.append(f"property {p['property']} ({p['examples']} examples): {status}")
    n_fail = sum(not c.passed for c in report.cases)
    lines.append(f"suite ({report.profile} profile): {len(report.cases) - n_fail}/"
                 f"{len(report.cases)} cases pass; {'PASS' if report.passed else 'FAIL'}")
    return "\n".join(lines)


@click.command(name="suite")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), default=None,
              help="config file (default: grokaudit.toml or [tool.grokaudit] in "
                   "pyproject.toml, searched upwards from the working directory)")
@click.option("--profile", type=click.Choice(["default", "reference"]), default=None,
              help="default (AUDIT_SPEC) or reference (shows which cases the public v1.5 "
                   "definitions fail)")
@click.option("--max-examples", type=click.IntRange(min=0), default=25, show_default=True,
              help="generated logs per property (0 skips the property run)")
@click.option("--json", "json_out", default=None, metavar="-",
              help="write the result as JSON to stdout (-) instead of the table")
def suite(config_file: str | None, profile: str | None, max_examples: int,
          json_out: str | None) -> None:
    """Run the named adversarial cases and a bounded property run against the installed
    audit with your config. Exit 0 when every case and property passes, 1 otherwise,
    2 on a config error."""
    from grokaudit.config import build_config

    try:
        cfg = build_config(profile, config_file, {})
    except GrokauditError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = run_suite(cfg, max_examples=max_examples)
    if json_out is not None:
        text = json.dumps(report.to_dict(), indent=2) + "\n"
        if json_out == "-":
            click.echo(text, nl=False)
        else:
            from pathlib import Path

            Path(json_out).write_text(text, encoding="utf-8")
            click.echo(_table(report))
    else:
        click.echo(_table(report))
    sys.exit(0 if report.passed else 1)
