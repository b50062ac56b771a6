"""The text report for the terminal. Printing only: every number comes from an AuditResult."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .config import REPORT_KEYS
from .reasons import Reason, Severity
from .results import (
    AuditResult,
    CellSummary,
    Finding,
    Interval,
    Ordering,
    RunResult,
    StudyResult,
    format_interval,
    format_number,
)
from .text import cell_label, format_value, safe

_HEAD = ("cell", "runs", "grok", "cens", "t_grok", "m_grok", "F", "floor", "t_compress", "lag",
         "rel_lag", "frac_pre", "infl", "gate")




def _iv(iv: Interval | None) -> str:
    return format_interval(iv, "table")


def _floor(c: CellSummary) -> str:
    """The cell's median floor; ``*`` when it rests on runs that stopped before their
    siblings' floor window (HORIZON_MISMATCH)."""
    return f"{format_number(c.floor)}*" if c.floor_rests_on_short_runs else format_number(c.floor)


def _infl(c: CellSummary) -> str:
    """The cell's median inflation; ``≥`` when it rests on a floor some run never reached."""
    return f"≥{format_number(c.inflation)}" if c.inflation is not None and c.inflation_is_lower_bound \
        else format_number(c.inflation)


def _stab(c: CellSummary) -> str:
    order = ("stable", "indeterminate", "unstable", "none")
    parts = [f"{c.floor_stability[k]}{k[0]}" for k in order if c.floor_stability.get(k)]
    return "/".join(parts) or "—"


def text_table(rows: Sequence[Sequence[str]], indent: str = "") -> list[str]:
    """Rows of text cells as aligned lines (columns two spaces apart, no trailing blanks):
    the one table layout of every text report."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [indent + "  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]


_table = text_table


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
    if s.metric is None:
        return _accuracy_study_lines(s)
    key = ", ".join(f"{k}={format_value(v)}" for k, v in s.study.items()) or "all runs"
    axis = s.axis if s.axis is not None else "none (no condition varies)"
    lines = [f"== study: {key} · metric {s.metric} · axis {axis} =="]
    rows = [_HEAD]
    for c in s.cells:
        gate = ",".join(g.value for g in c.gates) or "pass"
        rows.append((
            cell_label(s.axis, c.axis_value), str(c.n_runs), str(c.n_grokked),
            str(c.n_tc_censored), _iv(c.t_grok), format_number(c.m_grok), _floor(c), _stab(c),
            _iv(c.t_compress), _iv(c.lag), format_number(c.rel_lag), format_number(c.frac_pre), _infl(c), gate,
        ))
    lines += _table(rows)
    if any(c.floor_stability for c in s.cells):  # none under the reference profile
        lines.append("  (floor: s=stable i=indeterminate u=unstable n=no floor, counts of runs; "
                     "stability is conditional on the logged horizon)")
    if any(c.floor_rests_on_short_runs for c in s.cells):
        lines.append("  (F*: the cell floor rests on runs that stopped before the floor window "
                     "of a longer sibling: HORIZON_MISMATCH)")
    bounds_only = any(iv is not None and iv.value is None and not iv.censored
                      for c in s.cells for iv in (c.t_grok, c.t_compress, c.lag))
    if any(c.n_left_censored for c in s.cells):
        lines.append("  (≤N: at or before N, its column's first logged point: LEFT_CENSORED; "
                     "a–b: only bounds are known)")
    elif bounds_only:
        lines.append("  (a–b: only bounds are known: censored runs could move the median "
                     "anywhere between them)")
    if s.axis is None:  # one cell of replicates (or one run): each run, no orderings
        lines.append("runs:")
        lines += _table([_RUN_HEAD] + [_run_row(r) for r in s.runs], indent="  ")
        lines.append("clock verdict: none (no axis: orderings need a condition that varies, "
                     "--by)")
        return lines
    lines.append("orderings over passing cells:")
    lines += [_ordering_line(o) for o in s.orderings]
    verdict = s.verdict.value if s.verdict else "LOW_POWER_DESCRIPTIVE (no clock verdict)"
    lines.append(f"clock verdict: {verdict}")
    return lines


_ACC_HEAD = ("cell", "runs", "grok", "full", "t_grok", "gate")
_ACC_RUN_HEAD = ("run", "t_mem", "t_grok", "sustained", "final_med", "full")


def _accuracy_study_lines(s: StudyResult) -> list[str]:
    """The per-cell table, the t_grok ordering and the run table (no axis) of an accuracy-only
    study: no number of a metric is printed, the compression is said not assessed."""
    key = ", ".join(f"{k}={format_value(v)}" for k, v in s.study.items()) or "all runs"
    axis = s.axis if s.axis is not None else "none (no condition varies)"
    lines = [f"== study: {key} · accuracy only (no metric) · axis {axis} =="]
    rows = [_ACC_HEAD] + [(cell_label(s.axis, c.axis_value), str(c.n_runs), str(c.n_grokked),
                           str(c.n_fully_generalized), _iv(c.t_grok),
                           ",".join(g.value for g in c.gates) or "pass") for c in s.cells]
    lines += _table(rows)
    lines.append("  (compression not assessed: no metric was audited, so no floor, m_grok, "
                 "t_compress, lag, rel_lag, frac_pre or inflation; --metric COLUMN audits one)")
    if any(c.n_left_censored for c in s.cells):
        lines.append("  (≤N: at or before N, its column's first logged point: LEFT_CENSORED; "
                     "a–b: only bounds are known)")
    if s.axis is None:
        lines.append("runs:")
        lines += _table([_ACC_RUN_HEAD] + [_accuracy_run_row(r) for r in s.runs], indent="  ")
        lines.append("clock verdict: none (no axis, and no metric)")
        return lines
    lines.append("orderings over passing cells:")
    lines += [_ordering_line(o) for o in s.orderings]
    lines.append("clock verdict: not assessed (it compares t_grok with t_compress: no metric)")
    return lines


def _sustained(r: RunResult) -> str:
    """Whether the run's grok was sustained; "—" for a run that never grokked (its flag is
    vacuously true in the JSON: nothing fell below the threshold after a grok it never had)."""
    if r.t_grok.censored:
        return "—"
    return "yes" if r.grok_sustained else "no"


def _accuracy_run_row(r: RunResult) -> tuple[str, ...]:
    return (safe(r.run), _iv(r.t_mem), _iv(r.t_grok), _sustained(r),
            format_number(r.final_test_acc), "yes" if r.fully_generalized else "no")


_RUN_HEAD = ("run", "t_grok", "sustained", "m_grok", "floor", "stability", "t_compress", "lag",
             "infl", "snapshot")


def _run_row(r: RunResult) -> tuple[str, ...]:
    infl = format_number(r.inflation)
    if r.inflation is not None and r.inflation_is_lower_bound:
        infl = f"≥{infl}"
    return (safe(r.run), _iv(r.t_grok), _sustained(r), format_number(r.m_grok),
            format_number(r.floor), r.floor_stability, _iv(r.t_compress), _iv(r.lag), infl, r.snapshot)


#: Findings about accuracy alone: the same for every metric of a run group, shown once.
ACCURACY_CODES = frozenset({Reason.NO_GROK, Reason.NO_MEMORIZATION, Reason.GROK_NOT_SUSTAINED,
                            Reason.NOT_FULLY_GENERALIZED, Reason.ACCURACY_CEILING})


def fail_on_words(fail_on: Sequence[str]) -> str:
    """What makes the exit code 1, in words (matches ``--fail-on``)."""
    mode = tuple(fail_on)
    if mode == ("default",):
        return "critical findings fail (fail_on=default)"
    if mode == ("none",):
        return "nothing fails (fail_on=none)"
    if mode == ("warning",):
        return "warnings and critical findings fail (fail_on=warning)"
    return f"these codes fail: {', '.join(mode)}"


def unaudited_words(result: AuditResult) -> str | None:
    """Where nothing could be assessed (``NOTHING_AUDITABLE``), in words: ``this log`` when
    no study could be, else the studies (``arch=tf``); None when every study was assessed.
    The one wording of the text, the HTML page and ``report``'s last line."""
    hits = [f for f in result.findings if f.code is Reason.NOTHING_AUDITABLE]
    if not hits:
        return None
    keys = {_study_label(f.study, None) for f in hits}
    every = {_study_label(s.study, None) for s in result.studies}
    if keys >= every:
        return "this log"
    return "the stud" + ("y " if len(keys) == 1 else "ies ") + ", ".join(sorted(keys))


def result_line(failing: Sequence[Finding], fail_on: Sequence[str],
                unaudited: str | None = None) -> str:
    """The last line of every report: how many findings fail, and the exit code. A result in
    which something could not be audited never reads as a pass, whatever ``fail_on`` says:
    ``unaudited`` names where (:func:`unaudited_words`)."""
    if not failing:
        if unaudited:
            return (f"result: NOTHING_AUDITABLE in {unaudited}: nothing there could be "
                    "assessed, so no finding says the metric is sound; "
                    f"{fail_on_words(fail_on)} (exit 0)")
        return f"result: no failing finding; {fail_on_words(fail_on)} (exit 0)"
    codes = sorted({f.code.value for f in failing})
    return (f"result: {len(failing)} failing finding(s): {', '.join(codes)}; "
            f"{fail_on_words(fail_on)} (exit 1)")


def written_line(result: AuditResult) -> str:
    """The one line ``grokaudit report`` prints after the page is written: the failing
    codes, else where nothing could be assessed, else that nothing fails; and the exit code."""
    where = unaudited_words(result)
    if result.failing:
        codes = sorted({f.code.value for f in result.failing})
        return f"{len(result.failing)} failing finding(s): {', '.join(codes)} (exit 1)"
    if where:  # never "no failing finding" alone where nothing could be assessed
        return f"NOTHING_AUDITABLE in {where}: nothing there could be assessed (exit 0)"
    return "no failing finding (exit 0)"


def _study_label(study: Any, metric: str | None) -> str:
    parts = [f"{k}={format_value(v)}" for k, v in dict(study).items()]
    if metric:
        parts.append(metric)
    return " · ".join(parts) or "all runs"


def _grouped(findings: Sequence[Finding]) -> list[str]:
    """Findings that are not failing, one line per (where, code): the cells joined."""
    groups: dict[tuple[str, str, str], list[Finding]] = {}
    for f in findings:
        where = _where(f.study, f.metric, None)
        groups.setdefault((f.severity.value, where, f.code.value), []).append(f)
    order = {"critical": 0, "warning": 1, "info": 2}
    lines = []
    for (sev, where, code), fs in sorted(groups.items(), key=lambda kv: (order[kv[0][0]],
                                                                          kv[0][1], kv[0][2])):
        if len(fs) == 1 or any(f.cell is None for f in fs):
            for f in fs:
                lines.append(f"  [{sev:<8}] {code:<34} {_where(f.study, f.metric, f.cell)}"
                             f"{f.message}")
            continue
        cells = []
        for f in fs:
            n = f.evidence.get("n_runs") if isinstance(f.evidence, dict) else None
            of = f.evidence.get("of") if isinstance(f.evidence, dict) else None
            frac = f" ({n}/{of})" if n is not None and of is not None else ""
            cells.append(f"{format_value(f.cell)}{frac}")
        lines.append(f"  [{sev:<8}] {code:<34} {where}cells {', '.join(cells)}")
    return lines


def render_text(result: AuditResult, *, verbose: bool = False) -> str:
    """The whole report as text: the effective config and input; a summary (each study's
    verdict and the failing findings); findings about accuracy alone once per run group; then,
    for a single study or with ``verbose``, per study its table, orderings, verdict and
    remaining findings (grouped by code; informational ones only with ``verbose``); the result
    line."""
    failing = set(id(f) for f in result.failing)
    details = verbose or len(result.studies) <= 1
    out = (_header_lines(result) + _summary_lines(result, failing)
           + _accuracy_lines(result, failing) + _detail_lines(result, failing, verbose)
           + _input_lines(result, failing, details and not verbose))
    out += ["", result_line(result.failing, result.fail_on, unaudited_words(result))]
    # every line is one logical line: a control character from the log (a run id, a cell
    # value, a metric name) is escaped, so it can neither move the cursor nor forge a line
    return "\n".join(safe(line) for line in out) + "\n"


def config_keys(cfg: Mapping[str, Any]) -> list[str]:
    """The keys of the effective config (``cfg``, the result's echo) the ``config:`` line
    shows, in order: :data:`grokaudit.config.REPORT_KEYS`, from each option's metadata — the
    accuracy thresholds or the loss levels by the grok criterion, some options only when set."""
    loss = cfg.get("grok_on", "test_acc") != "test_acc"

    def shown(key: str, when: str) -> bool:
        if when == "set":  # not unset, off or empty
            return cfg.get(key) not in (None, "off", [], ())
        return when == "always" or when == ("loss" if loss else "accuracy")

    return [k for k, when in REPORT_KEYS if shown(k, when)]


def _header_lines(result: AuditResult) -> list[str]:
    """The version and profile, the effective config, the trail, the input accounting."""
    cfg = result.config
    trail = result.trail
    out: list[str] = [f"grokaudit {result.version} · profile "
                      f"{trail.profile if trail is not None else cfg.get('profile')}"]
    out.append("config: " + " ".join(f"{k}={_cfgv(cfg.get(k))}" for k in config_keys(cfg)))
    if trail is not None:  # how the result was made: every changed setting, files, command
        out += trail.lines()
    inp = result.input
    aside = ", ".join(f"{k} {v}" for k, v in inp["set_aside"].items()) or "none"
    prov = inp.get("provenance") or {}
    reader = prov.get("set_aside") or {}
    if reader:  # records the reader set aside before the table (a config record, a summary)
        aside += "; by the reader: " + ", ".join(f"{k} {v}" for k, v in sorted(reader.items()))
    out.append(f"input: {inp.get('source') or '<table>'}: {inp['rows_read']} rows read, "
               f"{inp['rows_kept']} kept, set aside: {aside}; {inp['runs_kept']}/"
               f"{inp['runs_read']} runs; metrics "
               f"{', '.join(inp['metrics']) or 'none (accuracy only)'}")
    configs = prov.get("config_files") or []
    if configs:  # where conditions came from, beside the log
        shown = ", ".join(configs[:3]) + (f", … ({len(configs)} in all)" if len(configs) > 3
                                          else "")
        out.append(f"config files read with the log: {shown}")
    return out


def _summary_lines(result: AuditResult, failing: set[int]) -> list[str]:
    """Each study's verdict and failing codes, the failing findings, NOTHING_AUDITABLE."""
    nothing = [f for f in result.findings if f.code is Reason.NOTHING_AUDITABLE]
    # -- summary --------------------------------------------------------------------------
    out = ["", f"summary ({len(result.studies)} stud{'y' if len(result.studies) == 1 else 'ies'};"
            f" {fail_on_words(result.fail_on)}):"]
    rows: list[tuple[str, ...]] = [("study", "verdict", "failing")]
    for s in result.studies:
        fs = [f for f in s.findings if id(f) in failing]
        counts: dict[str, int] = {}
        for f in fs:
            counts[f.code.value] = counts.get(f.code.value, 0) + 1
        fail_txt = ", ".join(f"{c} ×{n}" if n > 1 else c for c, n in sorted(counts.items()))
        rows.append((_study_label(s.study, s.metric if s.metric is not None
                                  else "accuracy only"), s.verdict_label, fail_txt or "—"))
    out += ["  " + r for r in _table(rows)]
    if result.failing:
        out.append("failing findings:")
        for f in result.failing:
            where = _where(f.study, f.metric, f.cell)
            out.append(f"  [{f.severity.value:<8}] {f.code.value:<34} {where}{f.message}")
    for f in nothing:  # shown whatever fail_on says: never read as "the metric is fine"
        if id(f) not in failing:
            out.append(f"  [{f.severity.value:<8}] {f.code.value:<34} "
                       f"{_where(f.study, f.metric, f.cell)}{f.message}")

    return out


def _accuracy_lines(result: AuditResult, failing: set[int]) -> list[str]:
    """Findings about accuracy alone, once per run group (the same for every metric)."""
    out: list[str] = []
    # -- accuracy: once per run group -----------------------------------------------------
    acc_seen: dict[tuple[str, str, str], Finding] = {}
    for f in result.findings:
        if f.code in ACCURACY_CODES and id(f) not in failing:
            acc_seen.setdefault((_study_label(f.study, None), str(f.cell), f.code.value), f)
    if acc_seen:
        every = ("" if all(s.metric is None for s in result.studies)
                 else " (the same for every metric)")
        out += ["", f"accuracy{every}:"]
        by_group: dict[tuple[str, str], list[Finding]] = {}
        for (label, _, code), f in acc_seen.items():
            by_group.setdefault((label, code), []).append(f)
        for (label, code), fs in sorted(by_group.items()):
            if all(f.cell is None for f in fs):  # a study-wide finding: its message
                out += [f"  [{f.severity.value:<8}] {code:<34} ({label}) {f.message}"
                        for f in fs]
                continue
            cells = []
            for f in fs:
                # a cell's NO_GROK gate counts its runs, every one of which did not grok
                n, of = f.evidence.get("n_runs"), f.evidence.get("of", f.evidence.get("n_runs"))
                cells.append(f"{format_value(f.cell)} ({n}/{of})" if n is not None
                             else format_value(f.cell))
            out.append(f"  [{fs[0].severity.value:<8}] {code:<34} ({label}) cells "
                       f"{', '.join(cells)}")

    return out


def _detail_lines(result: AuditResult, failing: set[int], verbose: bool) -> list[str]:
    """Per study (one study, or every one with ``verbose``): its table, orderings, verdict and
    the remaining findings."""
    out: list[str] = []
    # -- details per study: shown for one study, or for several with --verbose ------------
    details = verbose or len(result.studies) <= 1
    for s in result.studies if details else ():
        out.append("")
        out += study_lines(s)
        rest = [f for f in s.findings if id(f) not in failing and f.code not in ACCURACY_CODES
                and (verbose or f.severity is not Severity.INFO or f.scope == "study")]
        if rest:
            out.append("findings:")
            out += _grouped(rest)
    if not details:
        out += ["", f"(the {len(result.studies)} studies' tables, orderings and other findings: "
                "--verbose, or --metric COL for one)"]
    return out


def _input_lines(result: AuditResult, failing: set[int], count_hidden: bool) -> list[str]:
    """The input findings that do not fail, and how many informational findings are hidden
    (``count_hidden``)."""
    out: list[str] = []
    inputs = [f for f in result.findings if f.scope == "input" and id(f) not in failing]
    if inputs:
        out += ["", "input findings:"]
        out += [f"  [{f.severity.value:<8}] {f.code.value:<34} {f.message}" for f in inputs]
    hidden = sum(1 for f in result.findings if f.severity is Severity.INFO
                 and f.scope != "study" and f.scope != "input" and id(f) not in failing)
    if hidden and count_hidden:
        out.append(f"  ({hidden} informational findings not shown; --verbose shows them)")
    return out


def _where(study: dict[str, Any] | Any, metric: str | None, cell: Any) -> str:
    parts = [f"{k}={format_value(v)}" for k, v in dict(study).items()]
    if metric:
        parts.append(metric)
    if cell is not None:
        parts.append(f"cell {format_value(cell)}")
    return f"({'; '.join(parts)}) " if parts else ""


def _cfgv(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return ",".join(str(x) for x in v) or "auto"
    return "auto" if v is None else str(v)
