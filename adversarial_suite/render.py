"""The text table of a suite run (``grokaudit suite``; the command is in ``grokaudit.cli``).

Printing only: every word comes from a :class:`~.runner.SuiteReport`.
"""

from __future__ import annotations

from grokaudit.report import text_table
from grokaudit.text import safe

from .runner import CaseOutcome, SuiteReport


def _rows(head: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    lines: list[str] = text_table([head, *rows])
    return lines


def _failures(outcomes: tuple[CaseOutcome, ...]) -> list[str]:
    lines = []
    for c in outcomes:
        if not c.passed:
            lines.append(f"\n{c.name}:")
            lines.extend(f"  - {safe(m)}" for m in c.mismatches[:12])
            if len(c.mismatches) > 12:
                lines.append(f"  … {len(c.mismatches) - 12} more")
    return lines


def render_table(report: SuiteReport) -> str:
    """The suite's result as a text table, failures explained, a closing line."""
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
