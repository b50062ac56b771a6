"""The text report for the terminal. Printing only: every number comes from an AuditResult."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .reasons import Severity
from .results import AuditResult, CellSummary, Interval, Ordering, StudyResult, format_number
from .text import safe

_HEAD = ("cell", "runs", "grok", "cens", "t_grok", "m_grok", "F", "floor", "t_compress", "lag",
         "rel_lag", "frac_pre", "infl", "gate")


_n = format_number


def _iv(iv: Interval | None) -> str:
    if iv is None:
        return "—"
    if iv.censored:
        return f">{_n(iv.lower)} (cens)"
    return _n(iv.value)


def _stab(c: CellSummary) -> str:
    order = ("stable", "indeterminate", "unstable", "none")
    parts = [f"{c.floor_stability[k]}{k[0]}" for k in order if c.floor_stability.get(k)]
    return "/".join(parts) or "—"


def _table(rows: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]


def _ordering_line(o: Ordering) -> str:
    if not o.identified:
        sub = o.sub_reason.value if o.sub_reason else ""
        return f"  {o.quantity:<11} UNDEFINED ({sub}; C={o.concordant} D={o.discordant} U={o.unidentified})"
    arrow = "increasing" if o.direction > 0 else "decreasing"
    tau = (f"tau in [{o.tau_bounds[0]:+.2f}, {o.tau_bounds[1]:+.2f}]" if o.tau_bounds
           else "")
    rho = f"spearman {o.spearman:+.2f}" if o.spearman is not None else ""
    return f"  {o.quantity:<11} {o.shape} {arrow} along the axis  {tau}  {rho}".rstrip()


def study_lines(s: StudyResult) -> list[str]:
    """The per-cell table, orderings and verdict of one study."""
    key = ", ".join(f"{k}={v}" for k, v in s.study.items()) or "all runs"
    lines = [f"== study: {key} · metric {s.metric} · axis {s.axis} =="]
    rows = [_HEAD]
    for c in s.cells:
        gate = ",".join(g.value for g in c.gates) or "pass"
        rows.append((
            f"{s.axis}={c.axis_value}", str(c.n_runs), str(c.n_grokked),
            str(c.n_tc_censored), _iv(c.t_grok), _n(c.m_grok), _n(c.floor), _stab(c),
            _iv(c.t_compress), _iv(c.lag), _n(c.rel_lag), _n(c.frac_pre), _n(c.inflation), gate,
        ))
    lines += _table(rows)
    lines.append("  (floor: s=stable i=indeterminate u=unstable n=no floor, counts of runs; "
                 "stability is conditional on the logged horizon)")
    lines.append("orderings over passing cells:")
    lines += [_ordering_line(o) for o in s.orderings]
    verdict = s.verdict.value if s.verdict else "LOW_POWER_DESCRIPTIVE (no clock verdict)"
    lines.append(f"clock verdict: {verdict}")
    return lines


def render_text(result: AuditResult, *, verbose: bool = False) -> str:
    """The whole report as text (effective config, input, studies, findings, outcome)."""
    cfg = result.config
    out: list[str] = [f"grokaudit {result.version} · profile {cfg.get('profile')}"]
    keys = ("axis", "cell", "metrics", "rule", "grok_threshold", "full_threshold",
            "floor_frac", "rel_tol", "smooth", "transient_threshold", "large_lag",
            "censor_warn", "fail_on")
    out.append("config: " + " ".join(f"{k}={_cfgv(cfg.get(k))}" for k in keys))
    inp = result.input
    aside = ", ".join(f"{k} {v}" for k, v in inp["set_aside"].items()) or "none"
    out.append(f"input: {inp.get('source') or '<table>'}: {inp['rows_read']} rows read, "
               f"{inp['rows_kept']} kept, set aside: {aside}; {inp['runs_kept']}/"
               f"{inp['runs_read']} runs; metrics {', '.join(inp['metrics'])}")
    for s in result.studies:
        out.append("")
        out += study_lines(s)
    out.append("")
    out.append("findings:")
    shown = [f for f in result.findings if verbose or f.severity is not Severity.INFO
             or f.scope == "study"]
    for f in shown:
        where = _where(f.study, f.metric, f.cell)
        out.append(f"  [{f.severity.value:<8}] {f.code.value:<34} {where}{f.message}")
    hidden = len(result.findings) - len(shown)
    if hidden:
        out.append(f"  ({hidden} informational findings not shown; --verbose shows them)")
    out.append("")
    if result.failing:
        codes = sorted({f.code.value for f in result.failing})
        out.append(f"result: {len(result.failing)} critical finding(s): {', '.join(codes)} "
                   "(exit 1)")
    else:
        out.append("result: no critical finding (exit 0)")
    # every line is one logical line: a control character from the log (a run id, a cell
    # value, a metric name) is escaped, so it can neither move the cursor nor forge a line
    return "\n".join(safe(line) for line in out) + "\n"


def _where(study: dict[str, Any] | Any, metric: str | None, cell: Any) -> str:
    parts = [f"{k}={v}" for k, v in dict(study).items()]
    if metric:
        parts.append(metric)
    if cell is not None:
        parts.append(f"cell {cell}")
    return f"({'; '.join(parts)}) " if parts else ""


def _cfgv(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return ",".join(str(x) for x in v) or "auto"
    return "auto" if v is None else str(v)
