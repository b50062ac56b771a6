"""Text renderers of the claim audits. Printing only: every number comes from a ClaimResult."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..reasons import Severity
from ..text import safe
from .results import ClaimResult


def _n(x: Any, digits: int = 3) -> str:
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return str(x)
    x = float(x)
    if math.isnan(x):
        return "—"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if abs(x) >= 1000:
        return f"{x:.0f}"
    return f"{x:.{digits}g}"


def _ci(ci: Any) -> str:
    if ci is None:
        return "—"
    d = ci.to_dict() if hasattr(ci, "to_dict") else ci
    if d.get("low") is None and d.get("high") is None:
        return "[—]"
    return f"[{_n(d.get('low'))}, {_n(d.get('high'))}]"


def _med(m: Mapping[str, Any]) -> str:
    if m["censored"]:
        return f">{_n(m['lower'])} (cens)"
    return f"{_n(m['upper'])} ({_n(m['lower'])},{_n(m['upper'])}]"


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]


def _lab(v: Any) -> str:
    """A condition value as a label: numbers compactly (64.0 → 64), anything else as text."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    return _n(v, 4)


def _key(v: Any) -> tuple[int, Any]:
    """Sort numbers numerically and put text after them."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return (0, float(v))
    return (1, str(v))


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.0f}%"


def _rate(p: Any) -> str:
    return f"{p.k}/{p.n} = {_n(p.rate, 2)} [{_n(p.low, 2)}, {_n(p.high, 2)}]" if p.n else "0/0"


def _footer(r: ClaimResult, verbose: bool) -> list[str]:
    lines = [""]
    shown = [f for f in r.findings if verbose or f.severity is not Severity.INFO]
    for f in shown:
        lines.append(f"[{f.severity.value}] {f.code.value}: {f.message}")
    n_crit = sum(1 for f in r.findings if f.severity is Severity.CRITICAL)
    lines.append(f"result: {len(r.findings)} findings, {n_crit} critical; exit {r.exit_code}")
    return lines


def _head(r: ClaimResult, what: str) -> list[str]:
    i = r.input
    return [f"grokaudit {r.command} · {what} · {i.get('runs_kept')} runs · times in "
            f"{r.body.get('step_unit', 'steps')} · grok_threshold "
            f"{r.config.get('grok_threshold')}"]


def render_onset(r: ClaimResult, verbose: bool = False) -> str:
    b = r.body
    lines = _head(r, f"scaling of t_grok on {', '.join(b['by'])}")
    rows = [(*b["by"], "runs", "grok rate [Wilson]", "median t_grok", "median gap")]
    for c in b["cells"]:
        g = c["gap_median"]
        rows.append((*[_lab(c["cell"][k]) for k in b["by"]], str(c["n_runs"]),
                     _rate(c["grok_rate"]), _med(c["t_grok_median"]),
                     "—" if not g["n_runs"] else _med(g)))
    lines += _table(rows)
    pm = b.get("phase_map")
    if pm:
        lines.append(f"phase map (grok rate), rows {pm['rows']} × columns {pm['columns']}:")
        cols = sorted({c[pm["columns"]] for c in pm["cells"]}, key=_key)
        rws = sorted({c[pm["rows"]] for c in pm["cells"]}, key=_key)
        grid = {(c[pm["rows"]], c[pm["columns"]]): c["grok_rate"] for c in pm["cells"]}
        t = [(pm["rows"], *[_lab(c) for c in cols])]
        for rv in rws:
            t.append((_lab(rv), *[_n(grid[(rv, cv)].rate, 2) if (rv, cv) in grid else "·"
                                 for cv in cols]))
        lines += _table(t)
    o, a = b["ols"], b["aft"]
    lines.append("scaling of log t_grok:")
    of, af = o["fit"], a["fit"]
    lines.append(f"  as papers do: OLS on the {o['n_runs']} grokked runs ({o['n_left_out']} "
                 f"censored runs left out)" + (f"; R² {_n(of.r2)}, LOO R² {_n(of.loo_r2)}"
                                               if of else f"; refused: {o['refused'].value}"))
    if af is not None and a["refused"] is None:
        lines.append(f"  as the log supports: Weibull AFT on all {af.n} runs ({af.n_exact} exact, "
                     f"{af.n_interval} interval-, {af.n_right} right-censored); shape "
                     f"{_n(af.shape)}, AIC {_n(af.aic, 5)}, Harrell's C {_n(af.concordance)}")
    else:
        why = a["refused"].value if a["refused"] else "—"
        lines.append(f"  as the log supports: Weibull AFT refused: {why}")
    rows = [("term", "OLS (grokked only)", "AFT (all runs)", "bias")]
    for c in b["comparison"]:
        def est(e: Any) -> str:
            return "—" if not e else f"{_n(e['estimate'])} [{_n(e['low'])}, {_n(e['high'])}]"
        flag = {True: "SURVIVORSHIP_BIAS", False: "no", None: "—"}[c["survivorship_bias"]]
        rows.append((c["term"], est(c["ols"]), est(c["aft"]), flag))
    lines += _table(rows)
    if b["threshold_sensitivity"]:
        lines.append("threshold sensitivity (AFT exponents):")
        rows = [("grok_threshold", "grokked", *[c["term"] for c in b["comparison"]])]
        for s in b["threshold_sensitivity"]:
            rows.append((str(s["grok_threshold"]), str(s["n_grokked"]),
                         *[_n(s["aft_exponents"].get(c["term"])) for c in b["comparison"]]))
        lines += _table(rows)
    return "\n".join(lines + _footer(r, verbose)) + "\n"


def render_dose(r: ClaimResult, verbose: bool = False) -> str:
    b = r.body
    lines = _head(r, f"dose–response along {b['by']}")
    rows: list[tuple[str, ...]] = [(b["by"], "runs", "grokked", "median t_grok",
                                    "bootstrap CI", "in fit")]
    fit = set(map(str, b["fit_cells"]))
    for c in b["cells"]:
        rows.append((_lab(c["x"]), str(c["n_runs"]), str(c["n_grokked"]),
                     _med(c["median_interval"]), _ci(c["median_ci"]),
                     "yes" if str(c["x"]) in fit else "no"))
    lines += _table(rows)
    if b["fits"]:
        lines.append("laws fitted to ln T on the same cells (k = 3 each):")
        rows = [("model", "parameters", "RSS", "AICc")]
        for m, f in b["fits"].items():
            ps = ", ".join(f"{k}={_n(v, 4)}" for k, v in (f["params"] or {}).items()) or \
                f.get("refused", "—")
            rows.append((m, ps, _n(f["rss"]), _n(f["aicc"], 4)))
        lines += _table(rows)
        for d in b["delta_aicc"]:
            lines.append(f"  ΔAICc {d['models'][0]} − {d['models'][1]} = {_n(d['delta_aicc'])}")
    if b["best"]:
        kp = b["key_parameter"]
        word = "best" if b["identified"] else "best by AICc, but NOT identified"
        lines.append(f"{word}: {b['best']} (runner-up {b['runner_up']}); {kp['name']} = "
                     f"{_n(kp['ci'].estimate, 4)} {_ci(kp['ci'])} "
                     f"({kp['ci'].method}, {kp['ci'].n_resamples} resamples)")
    m = b.get("mediation")
    if m:
        lines.append(f"mediation by {m['mediator']}: T0 = {_n(m['T0'])}, T1 = {_n(m['T1'])}, "
                     f"T2 = {_n(m['T2'])} at {m['sweep']} = {_n(m['sweep_at'], 4)}; recovery "
                     f"{_n(m['recovery'])} {_ci(m['recovery_ci'])}")
        c = m["collapse"]
        lines.append(f"  data collapse ({c['n_runs']} runs): R² mediator {_n(c['r2_mediator'])},"
                     f" + dose {_n(c['r2_mediator_dose'])}, increment {_n(c['increment'])}")
    return "\n".join(lines + _footer(r, verbose)) + "\n"


def render_transition(r: ClaimResult, verbose: bool = False) -> str:
    b = r.body
    lines = _head(r, f"phase boundary along {b['by']}")
    rows = [(b["by"], "runs", "short", "grok rate [Wilson]", "median t_grok", "phase")]
    for c in b["levels"]:
        rows.append((_n(c["level"], 4), str(c["n_runs"]), str(c["n_insufficient_budget"]),
                     _rate(c["grok_rate"]), _med(c["median_t_grok"]), c["phase"]))
    lines += _table(rows)
    if b["lambda_c"] is not None:
        sc = b["levels_each_side"]
        lines.append(f"logistic on ln {b['by']}: λ_c = {_n(b['lambda_c'], 4)} "
                     f"{_ci(b['lambda_c_ci'])} ({sc['below']} levels below, {sc['above']} above)")
    else:
        lines.append("logistic on ln λ: no transition point")
    p = b["power_law"]
    if p:
        lines.append(f"time to grok ∝ |λ − λ_c|^(−ν): ν = {_n(p['nu'])} {_ci(p['nu_ci'])} over "
                     f"{p['n_cells']} levels (empirical; no universality class implied)")
    return "\n".join(lines + _footer(r, verbose)) + "\n"


def render_precursor(r: ClaimResult, verbose: bool = False) -> str:
    b = r.body
    lines = _head(r, f"signal {b['signal']}")
    rows = [("run", "gate", "peak", "t_grok", "lead", "precedes", "edge")]
    for x in b["runs"]:
        rows.append((x["run"], _n(x["gate_step"]), _n(x["peak_step"]), _n(x["t_grok"]),
                     _n(x["lead"]), _n(x["precedes"]), "EDGE" if x["peak_at_edge"] else ""))
    lines += _table(rows)
    lines.append(f"{b['n_scored']} grokked runs scored; {b['n_no_grok']} never grokked and "
                 f"{b['n_no_memorization']} never memorized (counted apart)")
    lines.append(f"peak precedes grokking: {_pct(b['fraction_preceding'])} of scored runs; "
                 f"interior peak preceding (the tested statistic): "
                 f"{_pct(b['fraction_preceding_interior'])}")
    lines.append(f"median lead t_grok − t_peak {_n(b['lead_median'])} {_ci(b['lead_ci'])}")
    nu = b["null_permuted"]
    lines.append(f"null, time axis permuted within runs ({nu['n_perm']} draws): mean fraction "
                 f"{_pct(nu['mean_fraction'])}, p = {_n(nu['p_value'])}")
    pl = b["null_placebo"]
    if pl:
        lines.append(f"placebo {pl['signal']}: preceding {_pct(pl['fraction_preceding'])}, "
                     f"interior preceding {_pct(pl['fraction_preceding_interior'])}, "
                     f"{pl['n_peak_at_edge']} edge peaks")
    return "\n".join(lines + _footer(r, verbose)) + "\n"


def render_compare(r: ClaimResult, verbose: bool = False) -> str:
    b = r.body
    lines = _head(r, f"paired comparison, d = {b['difference']}")
    rows = [("pair", "t_grok " + _lab(b["arms"][0]), "t_grok " + _lab(b["arms"][1]), "d",
             "kind")]
    for p in b["pairs"]:
        a, c = p["t_grok"]
        d = _n(p["value"]) if p["kind"] == "observed" else (
            f">{_n(p['bound'])}" if p["kind"] == "lower_bound" else
            f"<{_n(p['bound'])}" if p["kind"] == "upper_bound" else "?")
        rows.append((_lab(p["pair"]), a.describe() if a else "—", c.describe() if c else "—", d,
                     p["kind"]))
    lines += _table(rows)
    if b["unpaired"]:
        lines.append(f"unpaired (one arm only): {', '.join(map(str, b['unpaired']))}")
    t = b["tests"]
    lines.append(f"{t['n']} pairs in the tests (censored pairs at their bound): mean d "
                 f"{_n(t['mean'])} {_ci(t['mean_ci'])} (BCa), median d {_n(t['median'])} "
                 f"{_ci(t['median_ci'])}")
    lines.append(f"  exact Wilcoxon signed-rank: W+ = {_n(t['wilcoxon'].statistic)}, p = "
                 f"{_n(t['wilcoxon'].p_value)}; sign-flip permutation: p = "
                 f"{_n(t['sign_flip'].p_value)}; Cohen's d_z = {_n(t['cohen_dz'])}")
    lines.append(f"  smallest attainable p with {t['n']} pairs: {_n(t['min_attainable_p'])} "
                 f"(α = {b['alpha']})")
    c = b["tests_complete_pairs_only"]
    lines.append(f"complete pairs only ({c['n']}): Wilcoxon p = {_n(c['wilcoxon'].p_value)}, "
                 f"mean d {_n(c['mean'])}")
    return "\n".join(lines + _footer(r, verbose)) + "\n"


RENDERERS = {"onset": render_onset, "dose": render_dose, "transition": render_transition,
             "precursor": render_precursor, "compare": render_compare}


def render_text(r: ClaimResult, verbose: bool = False) -> str:
    """The text report of any claim result (control characters from the log escaped, line by
    line)."""
    text = RENDERERS[r.command](r, verbose)
    return "\n".join(safe(line) for line in text.rstrip("\n").split("\n")) + "\n"
