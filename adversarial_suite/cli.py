"""``grokaudit suite``: the adversarial self-test, run against the installed audit and your config.

Imported lazily by the core's CLI (``LAZY_COMMANDS``). hypothesis is imported only for the
property run, so the named cases run without the ``test`` extra.
"""

from __future__ import annotations

import json
import sys
import warnings

import click
from grokaudit.text import safe

from .runner import CaseOutcome, SuiteReport, run_suite


def _rows(head: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    rows = [head, *rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]


def _failures(outcomes: tuple[CaseOutcome, ...]) -> list[str]:
    lines = []
    for c in outcomes:
        if not c.passed:
            lines.append(f"\n{c.name}:")
            lines.extend(f"  - {safe(m)}" for m in c.mismatches[:12])
            if len(c.mismatches) > 12:
                lines.append(f"  … {len(c.mismatches) - 12} more")
    return lines


def _table(report: SuiteReport) -> str:
    lines = _rows(("case", "expected", "got", "pass"),
                  [(c.name, c.expected, c.got, "ok" if c.passed else "FAIL")
                   for c in report.cases])
    lines += _failures(report.cases)
    kept = [c for c in report.cases if c.notes]
    if kept:
        lines.append("\nthresholds a case cannot follow (it keeps its own value of them):")
        lines.extend(f"  {c.name}: {safe(n)}" for c in kept for n in c.notes)
    if report.claims:
        lines.append("")
        lines += _rows(("claim case", "command", "expected", "got", "pass"),
                       [(c.name, c.command, c.expected, c.got, "ok" if c.passed else "FAIL")
                        for c in report.claims])
        lines += _failures(report.claims)
    lines.append("")
    if report.properties is None:
        lines.append(f"property run: skipped ({report.skipped})")
    else:
        for p in report.properties:
            status = "ok" if p["pass"] else f"FAIL: {safe(p['error'])}"
            lines.append(f"property {p['property']} ({p['examples']} examples): {status}")
    n_fail = sum(not c.passed for c in report.cases)
    m_fail = sum(not c.passed for c in report.claims)
    claims = (f", {len(report.claims) - m_fail}/{len(report.claims)} claim cases pass"
              if report.claims else "")
    lines.append(f"suite ({report.profile} profile): {len(report.cases) - n_fail}/"
                 f"{len(report.cases)} cases pass{claims}; "
                 f"{'PASS' if report.passed else 'FAIL'}")
    return "\n".join(lines)


@click.command(name="suite")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), default=None,
              help="config file (default: grokaudit.toml or [tool.grokaudit] in "
                   "pyproject.toml, searched upwards from the working directory)")
@click.option("--profile", type=click.Choice(["default", "reference"]), default=None,
              help="default (the audit's definitions) or reference (shows which cases the "
                   "public v1.5 definitions fail)")
@click.option("--max-examples", type=click.IntRange(min=0), default=25, show_default=True,
              help="generated logs per property (0 skips the property run)")
@click.option("--json", "json_out", default=None, metavar="PATH|-",
              help="write the result as JSON to PATH (atomically; the table still goes to "
                   "stdout) or to stdout (-) instead of the table")
def suite(config_file: str | None, profile: str | None, max_examples: int,
          json_out: str | None) -> None:
    """Run the named adversarial cases and a bounded property run against the installed
    audit with your config: every case's log and expected answer follow your thresholds.
    Exit 0 when every case and property passes, 1 otherwise, 2 on a config or output error."""
    from grokaudit.config import build_config, config_file_values
    from grokaudit.outputs import resolve_output
    from grokaudit.text import safe_json

    # errors (GrokauditError: a bad config, an output that cannot be written) propagate to the
    # CLI's one error net: one line on stderr, exit 2. Both are checked before any case runs.
    cfg = build_config(profile, config_file, {})
    out = None
    if json_out is not None:
        found = config_file or config_file_values()[1]
        out = resolve_output(json_out, flag="--json", inputs=[found] if found else [])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = run_suite(cfg, max_examples=max_examples)
    if out is not None:
        out.write_text(safe_json(json.dumps(report.to_dict(), indent=2) + "\n"))
        if out.is_stdout:
            sys.exit(0 if report.passed else 1)
    click.echo(_table(report))
    sys.exit(0 if report.passed else 1)
