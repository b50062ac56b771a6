"""The HTML report: one self-contained page drawn from an AuditResult and its log.

``render_html(result, log)`` returns the page; ``write_report(result, log, path)`` writes it
atomically; ``grokaudit report LOGS -o report.html`` is the command (in :mod:`grokaudit.cli`).
The page needs no network and no JavaScript: figures are SVG inlined in the page (matplotlib,
the optional extra ``report``), styles are inline, and a Content-Security-Policy forbids every
external load. Every string from the log is shown with its control characters as visible
escapes (:func:`grokaudit.text.safe`), then HTML-escaped.

Page order: a summary (the outcome, each study's clock verdict in words, the critical findings,
the input counts including everything set aside), one section per study and metric (the verdict
and its reasons, the gate table, the orderings, the dashboard figure, the findings), then the
effective config and the provenance. Every number comes from the AuditResult; the curves are the
log. ``docs/report.md`` documents the page and its SVG hooks (``censored-median``…).
"""

from __future__ import annotations

import html
import json
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ErrorCode, LogFormatError, OutputError, param_value
from .outputs import Output, resolve_output, resolve_output_dir
from .reasons import Reason, Severity
from .report import unaudited_words
from .results import (
    AuditResult,
    Finding,
    Interval,
    Ordering,
    StudyResult,
    format_number,
    outward,
)
from .schema import LogTable
from .text import cell_label, format_value, safe

if TYPE_CHECKING:
    from .figures import Trajectories

#: What each verdict, gate and study-level code means, in words (for readers of the page).
WORDS: dict[str, str] = {
    "TWO_CLOCKS": "Two clocks: the lag is large and t_grok and t_compress are ordered in "
                  "opposite directions along the axis.",
    "ONE_CLOCK_LARGE_LAG": "One clock with a large lag: compression ends well after "
                           "generalization, and both move the same way along the axis.",
    "PARTIALLY_SEPARATED": "Partially separated: the lag is large and both orderings are "
                           "identified, but not both are monotone.",
    "SINGLE_CLOCK_SMALL_LAG": "A single clock: compression follows generalization closely "
                              "(small lag).",
    "LARGE_LAG_ORDERING_UNDETERMINED": "The lag is large, but the t_grok or t_compress ordering "
                                       "cannot be identified from this log: no clock claim.",
    "INCONCLUSIVE_CENSORING": "Inconclusive: too many runs have a censored t_compress (they had "
                              "not settled when the log ended) for a clock verdict.",
    "LOW_POWER_DESCRIPTIVE": "Descriptive only: fewer than two cells pass every gate, so "
                             "nothing comparative can be said.",
    "NO_GROK": "no run of it reached the grok threshold (the cell did not grok)",
    "BOUNDARY_PARTIAL_GENERALIZATION": "some runs grokked, but fewer than half fully generalize",
    "BOUNDARY_NO_COMPRESSION": "more than half of its grokked runs do not compress",
    "HIGH_FLOOR_OUTLIER": "its converged floor is far above the other cells'",
    "COMPRESSION_NOT_ESTABLISHED": "fewer than half of its grokked runs have a stable floor and "
                                   "a settled t_compress",
    "MEDIAN_CENSORED": "half or more runs are censored: only a lower bound of the median is known",
    "SNAPSHOT_TRANSIENT": "the metric read at grok is a transient, well above the converged "
                          "floor",
    "SNAPSHOT_REVERSES_ORDERING": "reading the metric at grok reverses its ordering along the "
                                  "axis compared with the converged floor",
    "SNAPSHOT_HIDES_BOUNDARY": "a boundary cell looks like its neighbours at grok but converges "
                               "elsewhere",
    "FLOOR_UNSTABLE": "the floor is still moving at the end of the log",
    "NOTHING_AUDITABLE": "no run grokked, or no cell passes its gates, for every audited "
                         "metric: nothing was assessed, so nothing here says the metric is sound",
    "LEFT_CENSORED": "the event happened before logging began: only its interval is known",
    "HORIZON_MISMATCH": "runs of the cell stopped before the floor window of a longer sibling: "
                        "their floors describe another stage of training",
    "METRIC_MISSING": "the audited metric is missing in some runs: findings rest on fewer runs",
    "DUPLICATE_RUN": "two run ids hold the same log: a copy counts twice as a replicate",
    "NO_MEMORIZATION": "the run never fit its training data: a failed run, not a late grok",
    "ORDERING_UNDEFINED": "the ordering along the axis cannot be identified from this log",
    "SHARED_ENDPOINT": "the passing cells converge to one shared floor",
}

_CSS = """
:root { --ink:#1b1b1b; --muted:#555; --rule:#ccc; --crit:#D55E00; --warn:#E69F00; --ok:#009E73; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       color: var(--ink); margin: 0 auto; max-width: 1400px; padding: 1rem 2rem 4rem; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; } h2 { margin-top: 2.4rem;
     border-bottom: 2px solid var(--ink); } h3 { margin-bottom: .3rem; }
.muted { color: var(--muted); }
table { border-collapse: collapse; margin: .4rem 0 1rem; font-size: .88rem; }
th, td { border-bottom: 1px solid var(--rule); padding: .22rem .55rem; text-align: left;
         vertical-align: top; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.outcome { border: 3px solid var(--ink); padding: .6rem 1rem; margin: 1rem 0; }
.outcome.fail { border-color: var(--crit); border-style: double; border-width: 6px; }
.outcome.pass { border-color: var(--ok); }
.outcome .head { font-size: 1.25rem; font-weight: 700; }
.sev { font-weight: 700; white-space: nowrap; }
.sev.critical::before { content: "\\2716  "; } .sev.warning::before { content: "\\25B2  "; }
.sev.info::before { content: "\\2139  "; }
.sev.critical { color: var(--crit); } .sev.warning { color: #8a5a00; }
tr.gated td { background: repeating-linear-gradient(135deg, #fff, #fff 6px, #f1f1f1 6px,
              #f1f1f1 12px); }
.gate { font-weight: 700; } .gate.pass::before { content: "\\2714  "; }
.gate.fail::before { content: "\\2716  "; }
code { font-size: .92em; }
figure.dashboard { margin: 1rem 0; } figure.dashboard svg { display: block; height: auto; }
figcaption { font-size: .85rem; color: var(--muted); max-width: 70rem; }
pre { background: #f6f6f6; padding: .6rem; overflow-x: auto; font-size: .8rem; }
nav ul { columns: 2; }
"""


# ------------------------------------------------------------------------------------------
# small formatting helpers
# ------------------------------------------------------------------------------------------

def _e(x: Any) -> str:
    """``x`` for HTML text or a quoted attribute: control characters (ESC, CR, bidirectional
    overrides…) as visible escapes, then ``& < > " '`` escaped."""
    return html.escape(safe(x), quote=True)




def interval_html(iv: Interval | None) -> str:
    """An audit-form interval (a censoring-aware median) as HTML, with what the text styles
    leave out: ``&gt; 20000 (censored)``, a left-censored one with why only its bounds are
    known, a point with the interval it was read in (``1400 (1300, 1400]``); ``—`` when it
    could not be computed. Here, not in :mod:`grokaudit.results`, so that no result builds
    markup; the bounds are :meth:`Interval.format`'s ``compact`` text, escaped."""
    if iv is None:
        return "—"
    if iv.form != "audit":
        raise ValueError("interval_html prints an audit-form interval (a clock or a median)")
    lo, hi = outward(iv.lower, down=True), outward(iv.upper, down=False)
    if iv.censored:
        return f"&gt; {_e(lo)} <span class='muted'>(censored)</span>"
    if iv.left_censored:
        why = "before logging began" if iv.lower == 0 else "only its bounds are known"
        return (f"{_e(iv.format('compact'))} <span class='muted'>({why}: "
                f"({_e(lo)}, {_e(hi)}])</span>")
    if iv.lower is not None and iv.upper is not None and iv.lower != iv.upper:
        return (f"{_e(format_number(iv.value))} "
                f"<span class='muted'>({_e(lo)}, {_e(hi)}]</span>")
    return _e(format_number(iv.value))



def _study_key(s: StudyResult) -> str:
    return ", ".join(f"{k}={format_value(v)}" for k, v in s.study.items()) or "all runs"


def _slug(s: StudyResult) -> str:
    raw = "-".join([*(f"{k}-{v}" for k, v in s.study.items()), s.metric or "accuracy-only"])
    return "study-" + (re.sub(r"[^A-Za-z0-9_-]+", "-", raw).strip("-") or "figure")


def _slugs(result: AuditResult) -> list[str]:
    """One id per study section, in order, unique on the page (and as PNG file names): two
    studies whose keys differ only in characters outside ``[A-Za-z0-9_-]`` get ``-2``, ``-3``."""
    out: list[str] = []
    seen: set[str] = set()
    for s in result.studies:
        base = slug = _slug(s)
        k = 1
        while slug.lower() in seen:  # case-insensitive: PNG names on macOS / Windows
            k += 1
            slug = f"{base}-{k}"
        seen.add(slug.lower())
        out.append(slug)
    return out


def _where(f: Finding) -> str:
    parts = [f"{k}={format_value(v)}" for k, v in dict(f.study).items()]
    if f.metric:
        parts.append(f.metric)
    if f.cell is not None:
        parts.append(f"cell {format_value(f.cell)}")
    ev = dict(f.evidence)
    if ev.get("file"):  # an adapter finding (SOURCE_TRUNCATED…): the file and the byte
        at = f" @ byte {ev['offset']}" if ev.get("offset") is not None else ""
        parts.append(f"file {ev['file']}{at}")
    if f.runs and f.scope == "input":
        parts.append("run " + ", ".join(f.runs))
    return "; ".join(parts) or "input"


def _verdict_code(s: StudyResult) -> str:
    return s.verdict_label


def _table(head: Sequence[str], rows: Iterable[tuple[str, ...]], *, cls: str = "",
           row_classes: Sequence[str] | None = None) -> str:
    out = [f"<table class='{cls}'><thead><tr>"]
    out += [f"<th scope='col'>{h}</th>" for h in head]
    out.append("</tr></thead><tbody>")
    for i, r in enumerate(rows):
        rc = f" class='{row_classes[i]}'" if row_classes and row_classes[i] else ""
        out.append(f"<tr{rc}>" + "".join(f"<td>{v}</td>" for v in r) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _findings_table(findings: Sequence[Finding], cls: str) -> str:
    if not findings:
        return "<p class='muted'>None.</p>"
    rows = [(f"<span class='sev {f.severity.value}'>{f.severity.value}</span>",
             f"<code>{f.code.value}</code>", _e(_where(f)),
             _e(f.message) + (f"<br><span class='muted'>{_e(WORDS[f.code.value])}</span>"
                              if f.code.value in WORDS else ""))
            for f in findings]
    return _table(("severity", "code", "where", "what it means"), rows, cls=cls)


# ------------------------------------------------------------------------------------------
# page sections
# ------------------------------------------------------------------------------------------

def _summary(result: AuditResult, slugs: Sequence[str]) -> str:
    out = ["<section id='summary'><h2>Summary</h2>"]
    nothing = [f for f in result.findings if f.code is Reason.NOTHING_AUDITABLE]
    where = unaudited_words(result)
    if nothing and not result.failing:  # never a PASS: nothing was assessed there
        out.append(
            "<div id='verdict' class='outcome fail' role='status'>"
            f"<div class='head'>&#x2716; NOTHING AUDITABLE in {_e(where)} — nothing there "
            "could be assessed</div>"
            f"<div>{_e(nothing[0].message)} (exit code 0 of <code>grokaudit check</code> "
            "under this <code>fail_on</code>; it is not a pass).</div>")
    elif result.failing:
        codes = sorted({f.code.value for f in result.failing})
        out.append(
            "<div id='verdict' class='outcome fail' role='status'>"
            f"<div class='head'>&#x2716; FAIL — {len(result.failing)} critical finding(s): "
            f"{_e(', '.join(codes))}</div>"
            "<div>This log does not support some of the readings below (exit code 1 of "
            "<code>grokaudit check</code>).</div>")
    else:
        out.append(
            "<div id='verdict' class='outcome pass' role='status'>"
            "<div class='head'>&#x2714; PASS — no critical finding</div>"
            "<div>Exit code 0 of <code>grokaudit check</code>.</div>")
    if nothing and result.failing:
        out.append(f"<div><strong>NOTHING_AUDITABLE in {_e(where)}</strong>: "
                   f"{_e(nothing[0].message)}</div>")
    out.append("<ul class='verdicts'>")
    for s, slug in zip(result.studies, slugs, strict=True):
        code = _verdict_code(s)
        out.append(f"<li><a href='#{slug}'>{_e(_study_key(s))} · {_e(s.metric)}</a>: "
                   f"<strong class='verdict-code'>{_e(code)}</strong> — "
                   f"{_e(WORDS.get(code, code))}</li>")
    out.append("</ul></div>")
    out.append("<h3>Critical findings</h3>")
    crit = [f for f in result.findings if f.severity is Severity.CRITICAL]
    out.append(_findings_table(crit, "critical-findings"))
    out.append(_input_section(result))
    out.append("</section>")
    return "".join(out)


def _input_section(result: AuditResult) -> str:
    inp = result.input
    rows = [("source", _e(inp.get("source") or "<table>")),
            ("rows read", _e(inp.get("rows_read"))), ("rows kept", _e(inp.get("rows_kept"))),
            ("runs read", _e(inp.get("runs_read"))), ("runs kept", _e(inp.get("runs_kept"))),
            ("metrics", _e(", ".join(inp.get("metrics", [])) or "none")),
            ("conditions", _e(", ".join(inp.get("conditions", [])) or "none"))]
    aside = dict(inp.get("set_aside") or {})
    aside_rows = [(f"<code>{_e(k)}</code>", _e(v)) for k, v in aside.items()]
    short = list(inp.get("runs_too_short") or [])
    miss = {k: v for k, v in dict(inp.get("missing_values") or {}).items() if v}
    out = ["<h3>Input</h3>", _table(("", "count"), rows, cls="input-counts")]
    out.append("<p><strong>Set aside:</strong> ")
    if aside_rows:
        out.append("</p>" + _table(("reason", "rows"), aside_rows, cls="set-aside"))
    else:
        out.append("nothing (every row read was kept).</p>")
    if short:
        out.append(f"<p>Runs set aside as too short: {_e(', '.join(short))}</p>")
    if miss:
        out.append("<p class='muted'>Missing (NaN) values, treated as not logged: "
                   + _e(", ".join(f"{k} {v}" for k, v in miss.items())) + "</p>")
    if not inp.get("sorted_input", True):
        out.append("<p class='muted'>Rows were not sorted by run and step; they were sorted.</p>")
    return "".join(out)


def _gate_table(s: StudyResult) -> str:
    head = (_e(s.axis or 'no axis'), "runs", "grokked", "fully gen.", "t_compress censored", "t_grok",
            "m_grok", "floor F ± δ", "floor stability", "t_compress", "lag", "rel_lag",
            "inflation", "gate")
    rows = []
    classes = []
    for c in s.cells:
        gate = ("<span class='gate pass'>passes</span>" if c.passes else
                "<span class='gate fail'>GATED</span>: " + "; ".join(
                    f"<code>{g.value}</code> ({_e(WORDS.get(g.value, ''))})" for g in c.gates))
        if c.notes:
            gate += "<br><span class='muted'>" + "; ".join(
                f"{n.value}: {_e(WORDS.get(n.value, ''))}" for n in c.notes) + "</span>"
        fl = "—" if c.floor is None else f"{format_number(c.floor)} ± {format_number(c.delta)}"
        stab = ", ".join(f"{v} {k}" for k, v in sorted(c.floor_stability.items())) or "—"
        rows.append((_e(c.axis_value if s.axis is not None else 'all runs'), str(c.n_runs), str(c.n_grokked),
                     str(c.n_fully_generalized), str(c.n_tc_censored),
                     interval_html(c.t_grok), format_number(c.m_grok), fl, _e(stab),
                     interval_html(c.t_compress), interval_html(c.lag),
                     format_number(c.rel_lag), ("&ge; " if c.inflation is not None
                                     and c.inflation_is_lower_bound else "")
                     + format_number(c.inflation), gate))
        classes.append("gated" if not c.passes else "passes")
    return _table(head, rows, cls="gate-table", row_classes=classes)


def _ordering_row(o: Ordering) -> tuple[str, ...]:
    if not o.identified:
        sub = o.sub_reason.value if o.sub_reason else ""
        return (f"<code>{o.quantity}</code>", f"<strong>undefined</strong> (<code>{sub}</code>)",
                "not identified: no number is reported", f"C={o.concordant} D={o.discordant} "
                f"U={o.unidentified}", str(o.n_cells))
    arrow = "increases" if o.direction > 0 else "decreases"
    tau = (f"[{o.tau_bounds[0]:+.2f}, {o.tau_bounds[1]:+.2f}]" if o.tau_bounds else "—")
    rho = f"; Spearman {o.spearman:+.2f}" if o.spearman is not None else ""
    return (f"<code>{o.quantity}</code>", f"{o.shape}: {arrow} along the axis",
            f"Kendall tau in {tau}{rho}", f"C={o.concordant} D={o.discordant} "
            f"U={o.unidentified}", str(o.n_cells))


def _study_section(s: StudyResult, k: int, svg: str, slug: str) -> str:
    code = _verdict_code(s)
    out = [f"<section class='study' id='{slug}'>",
           f"<h2>{_e(_study_key(s))} · metric <code>{_e(s.metric)}</code> · axis "
           f"<code>{_e(s.axis or 'no axis')}</code></h2>",
           f"<p class='study-verdict'>Clock verdict: <strong class='verdict-code'>{_e(code)}"
           f"</strong> — {_e(WORDS.get(code, code))}</p>"]
    gated = [c for c in s.cells if not c.passes]
    passing = len(s.cells) - len(gated)
    why = f"{passing} of {len(s.cells)} cells pass every gate"
    if gated:
        why += "; gated (shown, left out of every ordering): " + "; ".join(
            f"{cell_label(s.axis, c.axis_value)} ({', '.join(WORDS.get(g.value, g.value) for g in c.gates)})"
            for c in gated)
    out.append(f"<p>{_e(why)}.</p>")
    out.append("<h3>Gates and cell medians</h3>")
    out.append(_gate_table(s))
    out.append("<p class='muted'>Times are logged steps; a median is the censoring-aware "
               "median interval (lower, upper]. Floor stability is conditional on the logged "
               "horizon.</p>")
    out.append("<h3>Orderings over the passing cells</h3>")
    out.append(_table(("quantity", "ordering", "strength", "pairs", "cells"),
                      [_ordering_row(o) for o in s.orderings], cls="orderings"))
    out.append(f"<figure class='dashboard' id='fig-{k}' data-metric='{_e(s.metric)}' "
               f"data-study='{_e(_study_key(s))}'>{svg}<figcaption>"
               "Top: for each cell, the metric (median over seeds; the shaded band runs from "
               "the lowest to the highest seed), the converged floor band F ± δ (hatched), "
               "t_grok (dashed) and t_compress (dotted) at their cell medians, and below it "
               "test (solid) and train (dashed) accuracy on the same step axis. Gated cells "
               "say GATED in their title and have a grey, dashed frame. "
               "(b) The metric read at grok (triangles) against the converged floor (circles, "
               "± δ); hollow markers and a cross mark gated cells. (c) Cell-median t_grok, "
               "t_compress and lag with their censoring intervals; a censored median is an "
               "open-ended arrow from its known lower bound, never a point."
               "</figcaption></figure>")
    shown = [f for f in s.findings if f.severity is not Severity.INFO]
    info = [f for f in s.findings if f.severity is Severity.INFO]
    out.append("<h3>Findings</h3>")
    out.append(_findings_table(shown, "study-findings"))
    if info:
        out.append(f"<details><summary>{len(info)} informational finding(s)</summary>"
                   + _findings_table(info, "study-info") + "</details>")
    out.append("</section>")
    return "".join(out)


def _config_section(result: AuditResult) -> str:
    cfg = dict(result.config)
    rows = [(f"<code>{_e(k)}</code>", _e(json.dumps(v, default=str)))
            for k, v in cfg.items()]
    prov = dict(result.input.get("provenance") or {})
    trail = result.trail
    profile = trail.profile if trail is not None else cfg.get("profile")
    out = ["<section id='config'><h2>Effective config and provenance</h2>",
           f"<p>grokaudit {_e(result.version)}, profile <code>{_e(profile)}</code>.</p>"]
    if trail is not None:  # how this result was made: what a reviewer checks first
        out.append("<h3>Audit trail</h3><ul class='trail'>"
                   + "".join(f"<li>{_e(line)}</li>" for line in trail.lines()) + "</ul>")
        if trail.inputs:
            out.append(_table(("input file", "bytes", "sha256"),
                              [(_e(f.path), str(f.size), f"<code>{f.sha256}</code>")
                               for f in trail.inputs], cls="trail-inputs"))
    out += [_table(("setting", "value"), rows, cls="config"), "<h3>Provenance</h3>"]
    if prov:
        out.append("<pre>" + _e(json.dumps(prov, indent=2, sort_keys=True, default=str))
                   + "</pre>")
    else:
        out.append("<p class='muted'>The log carries no provenance metadata.</p>")
    # what the reader of the log found (a truncated source names its file and byte offset)
    input_findings = [f for f in result.findings if f.scope == "input"]
    if input_findings:
        out.append("<h3>Input findings</h3>" + _findings_table(input_findings, "input-findings"))
    out.append("</section>")
    return "".join(out)


# ------------------------------------------------------------------------------------------
# public API
# ------------------------------------------------------------------------------------------

def dashboards(result: AuditResult, log: LogTable, *, log_steps: bool = False,
               progress: Callable[[str], None] | None = None) -> list[Any]:
    """One matplotlib Figure per study and metric, in ``result.studies`` order; ``progress``
    (when given) receives one line per figure."""
    from .figures import dashboard

    figs = []
    n = len(result.studies)
    for k, s in enumerate(result.studies):
        if progress is not None:
            progress(f"figure {k + 1}/{n} ({_study_key(s)})")
        figs.append(dashboard(s, log, result, log_steps=log_steps))
    return figs


def default_jobs() -> int:
    """The CPUs this process may run on (at least 1)."""
    from .engine import usable_cpus

    return usable_cpus()


class FigureWorkers:
    """Worker processes that draw the dashboards, one study each, in parallel (processes:
    matplotlib is not thread-safe); a worker returns the figure's page-ready SVG (and PNG
    bytes), never a Figure.

    On Linux the workers are forked from this process once it has imported matplotlib and
    drawn a tiny figure (:func:`~grokaudit.figures.warm_up`): they start warm, and the import
    is paid once, not once per worker; only each study's :class:`~grokaudit.figures.
    DashboardData` is sent to them. Elsewhere the platform's default start method (``spawn``)
    is used and each worker warms up first. Use as a context manager; when processes cannot
    be started (no semaphores in a sandbox…), :attr:`pool` is None and the figures are drawn
    in this process.
    """

    def __init__(self, jobs: int) -> None:
        self.jobs = max(1, jobs)
        self.pool: Any = None
        import concurrent.futures
        import multiprocessing

        from .figures import warm_up

        fork = sys.platform.startswith("linux")
        if fork:
            warm_up()
        try:
            self.pool = concurrent.futures.ProcessPoolExecutor(
                self.jobs, mp_context=multiprocessing.get_context("fork") if fork else None,
                initializer=None if fork else warm_up)
        except (OSError, NotImplementedError, ImportError):  # pragma: no cover - sandboxes
            self.pool = None

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None

    def __enter__(self) -> FigureWorkers:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def figure_outputs(result: AuditResult, log: LogTable | Trajectories, *, log_steps: bool = False,
                   png: bool = False, jobs: int | None = None,
                   workers: FigureWorkers | None = None,
                   progress: Callable[[str], None] | None = None
                   ) -> list[tuple[str, bytes | None]]:
    """Each study's dashboard drawn once: its page-ready SVG (ids prefixed ``f1``, ``f2``…)
    and, with ``png``, its PNG bytes; in ``result.studies`` order.

    Studies are drawn in parallel by ``workers``, else by ``jobs`` worker processes started
    here (None: one per CPU; 1, or a single study: in this process). The output is the same
    either way, byte for byte. ``progress`` receives one line per figure drawn.
    """
    from .figures import Trajectories, dashboard_data, render_dashboard

    studies = result.studies
    n = len(studies)
    data = (log.dashboard_data(result, log_steps=log_steps) if isinstance(log, Trajectories)
            else [dashboard_data(s, log, result, log_steps=log_steps) for s in studies])
    dpi = 120 if png else None
    out: list[tuple[str, bytes | None] | None] = [None] * n

    def done(k: int) -> None:
        if progress is not None:
            progress(f"figure {k + 1}/{n} ({_study_key(studies[k])})")

    own = None
    if workers is None and n > 1:
        j = min(default_jobs() if jobs is None else jobs, n)
        if j > 1:
            workers = own = FigureWorkers(j)
    try:
        if workers is not None and workers.pool is not None:
            import concurrent.futures

            try:
                futures = {workers.pool.submit(render_dashboard, d, f"f{k + 1}",
                                               log_steps=log_steps, png_dpi=dpi): k
                           for k, d in enumerate(data)}
                for fut in concurrent.futures.as_completed(futures):
                    k = futures[fut]
                    out[k] = fut.result()
                    done(k)
            except concurrent.futures.process.BrokenProcessPool:  # a worker died (memory…)
                pass  # the figures still missing are drawn below, in this process
    finally:
        if own is not None:
            own.close()
    for k, d in enumerate(data):
        if out[k] is None:
            out[k] = render_dashboard(d, f"f{k + 1}", log_steps=log_steps, png_dpi=dpi)
            done(k)
    return [o for o in out if o is not None]


def render_html(result: AuditResult, log: LogTable | Trajectories, *,
                log_steps: bool = False, figures: Sequence[Any] | None = None, jobs: int | None = None,
                svgs: Sequence[str] | None = None) -> str:
    """The whole report as one self-contained HTML page (str).

    ``log`` is the validated log the audit read (:func:`grokaudit.schema.build_log_table`), or
    the trajectories of a log audited in parts (:class:`grokaudit.stream.StreamTrajectories`);
    its trajectories are drawn, every marked number comes from ``result``. ``figures`` reuses
    Figures from :func:`dashboards`, ``svgs`` the page-ready SVG of :func:`figure_outputs`;
    otherwise the figures are drawn here (``jobs`` as in :func:`figure_outputs`). Raises
    MissingExtraError without matplotlib, LogFormatError for an accuracy-only result
    (:func:`require_metric`).
    """
    from .figures import figure_svg, svg_for_html

    require_metric(result)
    if svgs is None:
        if figures is not None:
            svgs = [svg_for_html(figure_svg(f), f"f{k}") for k, f in enumerate(figures, 1)]
        else:
            svgs = [svg for svg, _ in figure_outputs(result, log, log_steps=log_steps,
                                                     jobs=jobs)]
    src = result.input.get("source") or "<table>"
    csp = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
           "font-src data:; base-uri 'none'; form-action 'none'")
    head = ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{csp}\">"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<meta name='generator' content='grokaudit {_e(result.version)}'>"
            f"<title>grokaudit report — {_e(src)}</title><style>{_CSS}</style></head><body>")
    parts = [head, "<header><h1>grokaudit report</h1>",
             f"<p class='muted'>{_e(src)} · axis <code>{_e(result.config.get('axis'))}</code>"
             f" · {len(result.studies)} study/metric section(s)</p>"]
    slugs = _slugs(result)
    parts.append("<nav><ul>" + "".join(
        f"<li><a href='#{slug}'>{_e(_study_key(s))} · {_e(s.metric)}</a></li>"
        for s, slug in zip(result.studies, slugs, strict=True))
        + "<li><a href='#config'>config and provenance</a></li></ul></nav></header><main>")
    parts.append(_summary(result, slugs))
    for k, (s, svg, slug) in enumerate(zip(result.studies, svgs, slugs, strict=True), start=1):
        parts.append(_study_section(s, k, svg, slug))
    parts.append(_config_section(result))
    parts.append("</main></body></html>\n")
    return "".join(parts)


def write_report(result: AuditResult, log: LogTable | Trajectories, path: str | Path | Output,
                 png_dir: str | Path | None = None, *, log_steps: bool = False,
                 progress: Callable[[str], None] | None = None, jobs: int | None = None,
                 workers: FigureWorkers | None = None) -> Path:
    """Write the HTML report to ``path`` atomically (temp file, then rename); with ``png_dir``
    also one PNG per study and metric there (named after its section). ``path`` is checked
    like every output (:func:`grokaudit.outputs.resolve_output`) unless it already is an
    :class:`~grokaudit.outputs.Output`. Each figure is drawn once, for the page and its PNG,
    by ``workers`` or ``jobs`` processes (:func:`figure_outputs`). ``progress`` receives one
    line per figure drawn and per PNG written (the command line prints them on stderr).
    Returns the path written. An accuracy-only result is refused (:func:`require_metric`)."""
    require_metric(result)
    out = path if isinstance(path, Output) else resolve_output(
        path, flag="report", allow_stdout=False, suffixes=(".html", ".htm"))
    if out.path is None:
        raise OutputError(f"{out.flag} -: the HTML report cannot go to standard output; name "
                          "a file", code=ErrorCode.OUTPUT_NOT_REGULAR, path="-")
    pngs: list[Output] = []
    if png_dir is not None:  # every PNG path is checked before anything is written
        d = resolve_output_dir(png_dir, flag="--png")
        for slug in _slugs(result):
            pngs.append(resolve_output(d / f"{slug.removeprefix('study-')}.png", flag="--png",
                                       allow_stdout=False, suffixes=(".png",),
                                       others=(out, *pngs)))
    drawn = figure_outputs(result, log, log_steps=log_steps, png=bool(pngs), jobs=jobs,
                           workers=workers, progress=progress)
    text = render_html(result, log, svgs=[svg for svg, _ in drawn])
    out.write_text(text)
    for k, (png, (_, data)) in enumerate(zip(pngs, drawn, strict=False)):
        if progress is not None:
            progress(f"PNG {k + 1}/{len(pngs)} {png.path}")
        if png.path is not None and data is not None:
            png.write_with(_bytes_writer(data))
    return out.path


def require_metric(result: AuditResult) -> None:
    """Refuse (``NO_METRIC``, exit 2) a result without a metric: the page's dashboards draw
    each study's metric, and an accuracy-only audit (``COMPRESSION_NOT_ASSESSED``) has none;
    ``grokaudit check`` reports it as text and JSON."""
    if any(s.metric is None for s in result.studies):
        raise LogFormatError(
            "the HTML report draws each study's representation metric, and no metric column "
            f"was found; pass {param_value('metrics', 'COLUMN')} (`grokaudit check` without "
            "--report audits the accuracy clocks alone)",
            path=result.input.get("source"), param="metrics", code=ErrorCode.NO_METRIC)


def _bytes_writer(data: bytes) -> Callable[[str], object]:
    return lambda tmp: Path(tmp).write_bytes(data)


__all__ = ["WORDS", "FigureWorkers", "dashboards", "default_jobs", "figure_outputs", "render_html",
           "require_metric", "write_report"]
