"""Text renderers of the claim audits. Printing only: every number comes from a ClaimResult.

Numbers go through the core's :func:`grokaudit.results.format_number`; every interval and
bound through one formatter here (:func:`known`, :func:`ci`, :func:`interval`), which prints a
censored quantity as a bound (``>x``), an interval as an interval, and never a zero-width
interval or a point where only a bound is known.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..reasons import Severity
from ..report import text_table
from ..results import Interval, format_number
from ..text import format_value, safe
from .compare import TEST_NAMES, CompareBody
from .dose import DoseBody
from .onset import OnsetBody
from .precursor import PrecursorBody
from .results import ClaimResult, ClaimStudy, outward, p_text
from .stats import BootstrapCI, Proportion
from .transition import TransitionBody, jump_words

num = format_number


# ------------------------------------------------------------------------------------------
# the one interval and bound formatter
# ------------------------------------------------------------------------------------------

def interval(low: float | None, high: float | None, *, low_open: bool = False,
             high_open: bool = False, digits: int = 3) -> str:
    """``[low, high]``; an unbounded end (``None``) as ``∞`` with an open bracket. Equal ends
    are not an interval: the value alone is printed. Each end is rounded outwards."""
    if low is not None and high is not None and low == high:
        return num(low, digits)
    lo = "−∞" if low is None else outward(low, digits, down=True)
    hi = "∞" if high is None else outward(high, digits, down=False)
    return (f"{'(' if low_open or low is None else '['}{lo}, {hi}"
            f"{')' if high_open or high is None else ']'}")


def known(x: Interval | None, *, detail: bool = True) -> str:
    """What is known of a quantity (:meth:`Interval.format`, ``claim`` style): its value (with
    its ``(lower, upper]`` when ``detail``), ``>lower`` when censored, ``(low, high)`` when only
    bounded (a claim-form range); ``—`` when nothing is."""
    if x is None:
        return "—"
    return x.format("claim" if detail else "claim_value")


def ci(c: BootstrapCI | None, *, why: bool = False, digits: int = 3) -> str:
    """A bootstrap interval, or ``—`` (``why``: the reason) when there is none."""
    if c is None:
        return "—"
    if not c.identified:
        return f"(no interval: {c.note})" if why and c.note else "—"
    return interval(c.low, c.high, digits=digits)


def _lambda_ci(c: BootstrapCI | None) -> str:
    """λ_c's interval: a level is positive, so an end unbounded below is 0 (open), never
    −∞; the note says where the interval is open and how many resamples gave no boundary."""
    if c is None or not c.identified or not (c.low_unbounded or c.high_unbounded):
        return ci(c, why=True)
    lo = "(0" if c.low_unbounded else f"[{outward(c.low, 3, down=True)}"
    hi = "∞)" if c.high_unbounded else f"{outward(c.high, 3, down=False)}]"
    return f"{lo}, {hi} ({c.note})" if c.note else f"{lo}, {hi}"


def rate(p: Proportion) -> str:
    if not p.n:
        return "0/0"
    return f"{p.k}/{p.n} = {num(p.rate, 2)} {interval(p.low, p.high, digits=2)}"


def percent(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.0f}%"


def yes_no(x: bool | None) -> str:
    return "—" if x is None else ("yes" if x else "no")


def _pl(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _lab(v: Any) -> str:
    """A condition value as a label: numbers compactly (64.0 → 64), anything else as text."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    return num(v, 4)


def _key(v: Any) -> tuple[int, Any]:
    """Sort numbers numerically and put text after them."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return (0, float(v))
    return (1, str(v))


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    return text_table(rows, indent="  ")


# ------------------------------------------------------------------------------------------
# the commands
# ------------------------------------------------------------------------------------------

def _head(r: ClaimResult, s: ClaimStudy, what: str, count: str) -> list[str]:
    where = ", ".join(f"{k}={format_value(v)}" for k, v in s.study.items())
    return [f"grokaudit {r.command} · {what}{' · study ' + where if where else ''} · {count} · "
            f"times in {s.body.step_unit} · grok_threshold {r.config.get('grok_threshold')}"]


def _runs(n: int, r: ClaimResult) -> str:
    total = r.input.get("runs_kept")
    return f"{n} runs" + (f" of {total}" if isinstance(total, int) and total != n else "")


def render_onset(r: ClaimResult, s: ClaimStudy) -> list[str]:
    b: OnsetBody = s.body
    lines = _head(r, s, f"scaling of t_grok on {', '.join(b.by)}", _runs(b.n_runs, r))
    early = any(c.n_stopped_early for c in b.cells)
    rows = [(*b.by, "runs", *(("stopped early",) if early else ()), "grok rate [Wilson]",
             "median t_grok", "median gap")]
    for c in b.cells:
        rows.append((*[_lab(c.cell[k]) for k in b.by], str(c.n_runs),
                     *((str(c.n_stopped_early),) if early else ()), rate(c.grok_rate),
                     known(c.t_grok_median), known(c.gap_median)))
    lines += _table(rows)
    if early:
        lines.append("  (a run stopped early has an unknown outcome: not in its grok rate)")
    pm = b.phase_map
    if pm:
        lines.append(f"phase map (grok rate), rows {pm.rows} × columns {pm.columns}:")
        cols = sorted({c.column for c in pm.cells}, key=_key)
        rws = sorted({c.row for c in pm.cells}, key=_key)
        grid = {(c.row, c.column): c.grok_rate for c in pm.cells}
        t = [(pm.rows, *[_lab(c) for c in cols])]
        for rv in rws:
            t.append((_lab(rv), *[num(grid[(rv, cv)].rate, 2) if (rv, cv) in grid else "·"
                                 for cv in cols]))
        lines += _table(t)
    o, a = b.ols, b.aft
    lines.append(f"scaling of log t_grok ({b.step_unit}):")
    why_out = f": {b.left_out.words()}" if b.left_out and b.left_out.n_runs else ""
    lines.append(f"  as papers do: OLS on the {o.n_runs} grokked runs ({o.n_left_out} censored "
                 f"runs left out{why_out})" + (f"; R² {num(o.fit.r2)}, LOO R² {num(o.fit.loo_r2)}"
                                                if o.fit else f"; refused: {_why(o.refused)}"))
    if a.fit is not None:
        others = ", ".join(f"{fam} {'+' if v - a.fit.aic >= 0 else ''}{num(v - a.fit.aic)}"
                           for fam, v in a.aic.items() if v is not None and fam != a.family)
        shape = f"σ {num(a.fit.sigma)}" + (
            f" (shape {num(a.fit.shape)})" if a.family != "lognormal" else "")
        lines.append(f"  as the log supports: {a.family} AFT (smallest AIC) on all {a.fit.n} "
                     f"runs ({a.fit.n_exact} exact, {a.fit.n_interval} interval-, "
                     f"{a.fit.n_right} right-censored); {shape}, Harrell's C "
                     f"{num(a.fit.concordance)}")
        lines.append(f"    AIC {num(a.fit.aic, 5)}" + (f"; ΔAIC of the others: {others}"
                                                        if others else ""))
    else:
        lines.append(f"  as the log supports: the AFT was refused: {_why(a.refused)}"
                     + (f" ({_AFT_CAUSES[a.cause]})" if a.cause in _AFT_CAUSES else ""))
    rows = [("term", "OLS (grokked only)", "AFT (all runs)", "OLS − AFT",
             "left-out runs' effect", "survivorship bias")]
    for tc in b.comparison:
        def est(e: Any) -> str:
            if e is None:
                return "—"
            if e.low is None or e.high is None or e.low == e.high:
                return f"{num(e.estimate)} (no interval)"
            return f"{num(e.estimate)} {interval(e.low, e.high)}"
        flag = {True: "SURVIVORSHIP_BIAS", False: "no", None: "—"}[tc.survivorship_bias]
        aft_txt = est(tc.aft)
        ex = next((e for e in a.exact_set if e.term == tc.term), None)
        if tc.aft is None and ex is not None:
            aft_txt = "σ → 0: " + interval(ex.low, ex.high)
        rows.append((tc.term, est(tc.ols), aft_txt, ci(tc.difference),
                     ci(tc.left_out_effect), flag))
    lines += _table(rows)
    notes = sorted({c.note for c in b.comparison if c.note})
    lines += [f"  ({n})" for n in notes]
    if b.law_checks:
        lines.append(f"the {a.family} AFT law against the runs it never saw grok (P(≥ k) under "
                     "the law; contradicted below the Bonferroni level):")
        rows = [(*b.by, "situation", "never grokked", "by step", "law's median",
                 "expected", "P(≥ k)", "")]
        for lc in b.law_checks:
            rows.append((*[_lab(lc.cell[k]) for k in b.by],
                         "beyond the horizon" if lc.situation == "beyond_horizon"
                         else "inside the cell", f"{lc.n_censored}/{lc.n_runs}",
                         outward(lc.horizon, down=True), num(lc.predicted_median),
                         num(lc.expected_censored), p_text(lc.p_value, lc.alpha),
                         "CONTRADICTED" if lc.contradicted else "consistent"))
        lines += _table(rows)
    if b.threshold_sensitivity:
        lines.append(f"threshold sensitivity ({a.family} AFT exponents):")
        rows = [("grok_threshold", "grokked", *[c.term for c in b.comparison])]
        for tr in b.threshold_sensitivity:
            rows.append((num(tr.grok_threshold), str(tr.n_grokked),
                         *[_exponent_at(tr, c.term) for c in b.comparison]))
        lines += _table(rows)
    return lines


_AFT_CAUSES = {
    "rank": "the runs that grokked do not vary in every term: censored runs bound a slope on "
            "one side only",
    "degenerate": "σ → 0: a law with no scatter puts every run inside its logged interval, "
                  "the likelihood has no maximum; the table gives each exponent's range over "
                  "those laws, not an estimate",
    "no_se": "a flat likelihood: no finite standard error",
    "too_few_runs": "too few runs for the parameters, or a singular design",
    "no_grok": "no run grokked",
    "no_convergence": "no error family's fit converged",
}


def _exponent_at(tr: Any, term: str) -> str:
    """An AFT exponent at one grok threshold, or its range when the AFT is degenerate."""
    if term in tr.aft_exponents:
        return num(tr.aft_exponents[term])
    ex = next((e for e in tr.exact_set if e.term == term), None)
    return "—" if ex is None else "σ → 0: " + interval(ex.low, ex.high)


def _why(x: Any) -> str:
    return "—" if x is None else str(getattr(x, "value", x))


def render_dose(r: ClaimResult, s: ClaimStudy) -> list[str]:
    b: DoseBody = s.body
    lines = _head(r, s, f"dose–response along {b.by}", _runs(b.n_runs, r))
    rows: list[tuple[str, ...]] = [(b.by, "runs", "grokked", "median t_grok", "bootstrap CI",
                                    "in fit")]
    for c in b.cells:
        rows.append((_lab(c.x), str(c.n_runs), str(c.n_grokked), known(c.median_t_grok),
                     ci(c.median_ci), "yes" if c.in_fit else f"no ({c.left_out})"))
    lines += _table(rows)
    if b.fits:
        cens = any(f.censored_checks for f in b.fits)
        lines.append("laws fitted to ln T on the same cells (k = 3 each):")
        head: tuple[str, ...] = ("model", "parameters", "RSS", "AICc") + (
            ("censored cells",) if cens else ())
        rows = [head]
        for f in b.fits:
            ps = ", ".join(f"{k}={num(v, 4)}" for k, v in (f.params or {}).items()) or \
                (f.refused or "—")
            row: tuple[str, ...] = (f.model, ps, num(f.rss), num(f.aicc, 4))
            if cens:
                bad = [c for c in f.censored_checks if c.contradicted]
                none = all(c.p_value is None for c in f.censored_checks)
                row += (("contradicted at " + ", ".join(_lab(c.x) for c in bad)) if bad
                        else ("not checked" if none else "consistent")
                        if f.censored_checks else "—",)
            rows.append(row)
        lines += _table(rows)
        for d in b.delta_aicc:
            lines.append(f"  ΔAICc {d.models[0]} − {d.models[1]} = {num(d.delta_aicc)}")
        if cens:
            lines.append("each law against the censored cells it left out, run by run (at the "
                         "upper end of its median's bootstrap interval, the end most favourable "
                         "to it; contradicted below the Bonferroni level):")
            rows = [("model", b.by, "never grokked", "by step", "law's median", "upper limit",
                     "P(run censored)", "expected", "P(≥ k)", "")]
            notes: list[str] = []
            for f in b.fits:
                for chk in f.censored_checks:
                    med = "no grok (beyond x₀)" if chk.predicted is None else num(chk.predicted)
                    if chk.p_value is None:
                        hi = p_run = exp = pv = "—"
                        verdict = "not checked"
                        if chk.note and chk.note not in notes:
                            notes.append(chk.note)
                    else:
                        hi = ("—" if chk.predicted is None else "∞"
                              if chk.predicted_high is None else
                              outward(chk.predicted_high, down=False))
                        p_run = p_text(chk.p_run)
                        exp = num(chk.expected_censored)
                        pv = p_text(chk.p_value, chk.alpha)
                        verdict = "CONTRADICTED" if chk.contradicted else "consistent"
                    rows.append((f.model, _lab(chk.x), f"{chk.n_censored}/{chk.n_runs}",
                                 outward(chk.horizon, down=True), med, hi, p_run, exp, pv,
                                 verdict))
            lines += _table(rows)
            lines += [f"  (not checked: {n})" for n in notes]
    if b.best and b.key_parameter:
        kp = b.key_parameter
        contradicted = any(f.contradicted for f in b.fits if f.model == b.best)
        unchecked = any(c.p_value is None for f in b.fits if f.model == b.best
                        for c in f.censored_checks)
        word = ("best" + (" (not checked against the censored cells: no bootstrap interval "
                          "of its prediction)" if unchecked else "")
                if b.identified else "best by AICc, but CONTRADICTED by a censored cell"
                if contradicted else "best by AICc, but NOT identified")
        lines.append(f"{word}: {b.best} (runner-up {b.runner_up}); {kp.name} = "
                     f"{num(kp.ci.estimate, 4)} {ci(kp.ci, why=True, digits=4)} "
                     f"({kp.ci.method}, {kp.ci.n_valid}/{kp.ci.n_resamples} resamples)")
        drop = (f"{kp.n_dropped} of {kp.ci.n_resamples} resamples gave no value and were "
                "dropped" if kp.n_dropped else "none dropped")
        if kp.n_resamples_censored:
            one = kp.n_resamples_censored - kp.n_both_ends
            where = "that cell's dose, x₀'s limit" if kp.name == "x0" else "an open end"
            parts = []
            if one:
                parts.append(f"{one} counted at the limit that cell's censored median pushes "
                             f"{kp.name} to ({where})")
            if kp.n_both_ends:
                parts.append(f"{kp.n_both_ends} at both ends (the way is not known: −∞ for "
                             "the lower end, ∞ for the upper)")
            lines.append(f"  {kp.n_resamples_censored} of {kp.ci.n_resamples} resamples turned "
                         f"a fitted cell's median censored: {', '.join(parts)}; {drop}")
        elif kp.n_dropped:
            lines.append(f"  {drop}")
    m = b.mediation
    if m:
        lines.append(f"mediation by {m.mediator}: T0 = {known(m.T0, detail=False)}, T1 = "
                     f"{known(m.T1, detail=False)}, T2 = {num(m.T2)} at {m.sweep} = "
                     f"{num(m.sweep_at, 4)}; recovery {num(m.recovery)} "
                     f"{ci(m.recovery_ci, why=True)}")
        co = m.collapse
        lines.append(f"  data collapse ({co.n_runs} grokked runs, {co.n_left_out} never grokked "
                     f"left out): R² mediator {num(co.r2_mediator)}, + dose "
                     f"{num(co.r2_mediator_dose)}, increment {num(co.increment)}")
    return lines


def render_transition(r: ClaimResult, s: ClaimStudy) -> list[str]:
    b: TransitionBody = s.body
    lines = _head(r, s, f"phase boundary along {b.by}", _runs(b.n_runs, r))
    rows = [(b.by, "runs", "short", "grok rate [Wilson]", "median t_grok", "phase")]
    for c in b.levels:
        rows.append((num(c.level, 4), str(c.n_runs), str(c.n_insufficient_budget),
                     rate(c.grok_rate), known(c.median_t_grok), c.phase))
    lines += _table(rows)
    bd = b.boundary
    if bd is None:
        lines.append(f"logistic on ln {b.by}: no transition point")
    elif bd.separation != "none":
        lo, hi = bd.bracket or (None, None)
        sides = (f" ({_pl(bd.levels_below, 'level')} at or below, {bd.levels_above} at or "
                 "above)" if lo is not None or hi is not None else "")
        lines.append(f"logistic on ln {b.by}: separated ({bd.separation}); "
                     f"{jump_words(b.by, lo, hi, bd.shared_level)}{sides}: the slope has no "
                     "maximum, no point estimate")
        if bd.profile is not None:
            lines.append(f"  λ_c: profile-likelihood {bd.profile.level:.0%} set "
                         f"{_profile(bd.profile)} (deviance within χ²₁ of its least)")
    else:
        where = (f"an extrapolation: {_pl(bd.levels_below, 'level')} below, {bd.levels_above} "
                 "above" if bd.extrapolated else
                 f"{_pl(bd.levels_below, 'level')} below, {bd.levels_above} above")
        lines.append(f"logistic on ln {b.by}: λ_c = {num(bd.lambda_c, 4)} "
                     f"{_lambda_ci(bd.ci)} ({where})")
        if bd.profile is not None:
            lines.append(f"  profile-likelihood {bd.profile.level:.0%} set of λ_c: "
                         f"{_profile(bd.profile)}")
    p = b.power_law
    if p and p.nu is not None:
        sign = ""
        if p.contradicted:
            sign = " — ν < 0 (its interval lies below 0): time to grok rises away from λ_c"
        elif p.nu < 0:
            sign = (" — ν's point value is < 0, but " + (
                "its interval reaches 0" if p.nu_ci is not None and p.nu_ci.identified
                else "it has no interval") + ": the sign is not established")
        lines.append(f"time to grok ∝ |λ − λ_c|^(−ν): ν = {num(p.nu)} {ci(p.nu_ci, why=True)} "
                     f"over {p.n_cells} levels (empirical; no universality class implied)"
                     + sign)
    elif p and p.nu_range:
        lines.append(f"time to grok ∝ |λ − λ_c|^(−ν): ν not identified — its point value runs "
                     f"over {interval(p.nu_range[0], p.nu_range[1], low_open=True, high_open=True)}"
                     " as λ_c moves over the set where it may lie (up to its open ends); the "
                     "noise of the cell medians widens this further")
    return lines


def _profile(ps: Any) -> str:
    lo = "beyond the lowest level" if ps.low is None else outward(ps.low, 4, down=True)
    hi = "beyond the highest level" if ps.high is None else outward(ps.high, 4, down=False)
    return f"({lo}, {hi})"


def render_precursor(r: ClaimResult, s: ClaimStudy) -> list[str]:
    b: PrecursorBody = s.body
    alpha = r.params.get("alpha")
    lines = _head(r, s, f"signal {b.signal}", _runs(b.n_runs, r))
    rows = [("run", "gate", "peak", "t_grok", "lead", "precedes", "edge")]
    for x in b.runs:
        rows.append((x.run, num(x.gate_step), num(x.peak_step),
                     num(x.t_grok) if x.grokked else "never",
                     num(x.lead) if x.lead is not None or x.lead_range is None
                     else known(x.lead_range),
                     "unknown" if x.precedes is None and x.grokked and x.peak_step is not None
                     else yes_no(x.precedes),
                     "EDGE" if x.peak_at_edge else ""))
    lines += _table(rows)
    lines.append(f"{b.n_scored} grokked runs scored; {b.n_no_grok} never grokked and "
                 f"{b.n_no_memorization} never memorized (counted apart)"
                 + (f"; {b.n_no_signal} grokked runs with no value of {b.signal} in their "
                    "window (not scored)" if b.n_no_signal else ""))
    if not b.n_scored:
        lines.append("no run was scored: the claim is not tested (NOTHING_AUDITABLE)")
    lines.append(f"peak precedes grokking: {percent(b.fraction_preceding)} of scored runs; "
                 f"interior peak preceding (the tested statistic): "
                 f"{percent(b.fraction_preceding_interior)}")
    rng = b.lead_range
    both = rng is not None and rng.low is not None and rng.high is not None and \
        rng.low < 0 < rng.high
    if b.lead_median is None and rng is not None and both:
        lines.append(f"median lead t_grok − t_peak: sign unknown, in {known(rng)} "
                     f"({b.step_unit}: grokking lies between two accuracy evaluations, and the "
                     "log does not say whether the peaks came before it)")
    elif b.lead_median is None and rng is not None:
        lines.append(f"median lead t_grok − t_peak in {known(rng)} {ci(b.lead_ci, why=True)} "
                     f"({b.step_unit}: grokking lies between two accuracy evaluations, which "
                     "bound each lead; no point value)")
    else:
        lines.append(f"median lead t_grok − t_peak {num(b.lead_median)} "
                     f"{ci(b.lead_ci, why=True)} ({b.step_unit})")
    nu = b.null_permuted
    lines.append(f"null, each run's values permuted within its window ({nu.n_perm} draws): "
                 f"mean fraction {percent(nu.mean_fraction)}, p = {p_text(nu.p_value, alpha)}")
    nt = b.null_time
    if nt is not None:
        lines.append(f"null, each run's peak placed uniformly in time over its window "
                     f"({nt.n_perm} draws): mean fraction {percent(nt.mean_fraction)}, p = "
                     f"{p_text(nt.p_value, alpha)} (specific only if both nulls are beaten)")
    pl = b.placebo
    if pl:
        lines.append(f"placebo {pl.signal}: preceding {percent(pl.fraction_preceding)}, "
                     f"interior preceding {percent(pl.fraction_preceding_interior)}, "
                     f"{pl.n_peak_at_edge} edge peaks")
        left = (f" ({pl.n_without_placebo} scored runs without a value of {pl.signal} left "
                "out)" if pl.n_without_placebo else "")
        lines.append(f"  signal vs placebo on the same {pl.n_compared} runs{left}: "
                     f"{pl.n_signal_only} runs only the signal succeeds, {pl.n_placebo_only} "
                     f"only the placebo; exact McNemar p = {p_text(pl.test.p_value, alpha)} "
                     "(one-sided)")
    return lines


def _range_cis(mean_ci: BootstrapCI | None, median_ci: BootstrapCI | None) -> str:
    """The CIs of the mean and median of differences known as ranges: the sampling over the
    pairs on top of each pair's range (``stats.range_bootstrap``)."""
    c = mean_ci or median_ci
    level = f"{100 * c.level:g}% " if c is not None else ""
    return (f"  {level}CI of the mean d {ci(mean_ci, why=True)}, of the median d "
            f"{ci(median_ci, why=True)} (percentile bootstrap over pairs of the range: the "
            "lower ends' low to the upper ends' high, so that it covers wherever in its range "
            "each pair lies)")


def render_compare(r: ClaimResult, s: ClaimStudy) -> list[str]:
    b: CompareBody = s.body
    total = r.input.get("runs_kept", b.n_runs)
    count = f"{_pl(b.n_pairs, 'pair')} ({b.n_runs_paired} runs) of {total} runs"
    lines = _head(r, s, f"paired comparison, d = {b.difference}", count)
    rows = [("pair", "t_grok " + _lab(b.arms[0]), "t_grok " + _lab(b.arms[1]), "d", "kind")]
    for p in b.pairs:
        x, y = p.t_grok
        rows.append((_lab(p.pair), known(x, detail=False), known(y, detail=False), known(p.d),
                     p.kind))
    lines += _table(rows)
    if b.unpaired:
        lines.append(f"unpaired (one arm only): {', '.join(map(str, b.unpaired))}")
    t, c = b.tests, b.censored
    if t is not None:
        lines.append(f"{_pl(t.n, 'pair')}: mean d {num(t.mean)} {ci(t.mean_ci, why=True)} "
                     f"({t.mean_ci.method if t.mean_ci else '—'}), median d {num(t.median)} "
                     f"{ci(t.median_ci, why=True)}")
        lines.append(f"  exact Wilcoxon signed-rank: W+ = {num(t.wilcoxon.statistic)}, p = "
                     f"{p_text(t.wilcoxon.p_value, b.alpha)}; sign-flip permutation: p = "
                     f"{p_text(t.sign_flip.p_value, b.alpha)}; Cohen's d_z = {num(t.cohen_dz)}")
    elif c is not None:
        unres = (f", {c.n_interval + c.n_unresolved} evaluated at different steps in the "
                 f"two arms (a range; {c.n_unresolved} with no known sign)"
                 if c.n_unresolved + c.n_interval else "")
        lines.append(f"{c.n_pairs} pairs, {c.n_bounded} with one arm censored and "
                     f"{c.n_both_censored} with both{unres}: mean d {known(c.mean_d)}, "
                     f"median d {known(c.median_d)} (from each pair's range of d: a "
                     "censored difference has only a bound; what these pairs allow, not a CI)")
        lines.append(_range_cis(c.mean_ci, c.median_ci))
        wb = (f"p ≤ {outward(c.wilcoxon_p_at_most, 3, down=False)}"
              if c.wilcoxon_p_at_most is not None
              else "no bound")
        lines.append(f"  exact sign test on the {c.sign.n} pairs of known sign: "
                     f"{num(c.sign.statistic)} positive, p = {p_text(c.sign.p_value, b.alpha)}; "
                     f"Wilcoxon {wb} ({c.wilcoxon_note}); no effect size")
        cp = b.complete_pairs
        if cp is not None:
            lines.append(f"  the {cp.n} complete pairs alone (a subset the censoring chose; no "
                         f"estimate): exact Wilcoxon p = {p_text(cp.wilcoxon.p_value, b.alpha)}")
    pw = b.power
    how = ("the exact sign test's power, normal differences" if pw.dz_method == "sign_exact"
           else "paired t approximation")
    mde = (f"an effect is detected with {percent(pw.power)} power from d_z ≈ "
           f"{outward(pw.min_detectable_dz, down=False)} ({how})"
           if pw.min_detectable_dz is not None else
           f"no effect is detected with {percent(pw.power)} power with so few usable pairs")
    lines.append(f"power: with {pw.words()} the smallest p the "
                 f"{TEST_NAMES.get(pw.test, pw.test)} test can reach is "
                 f"{num(pw.min_attainable_p)} (α = {b.alpha}; {pw.pairs_needed} usable pairs "
                 f"make α reachable); {mde}")
    pr = b.pairing
    r_txt = "—" if pr.r is None else num(pr.r) + (
        f" {interval(pr.low, pr.high)}" if pr.low is not None else "")
    lines.append(f"pairing: r = {r_txt} between the arms' t_grok over {pr.n} complete pairs "
                 "(pairing gains power only when r > 0)")
    return lines


RENDERERS: dict[str, Callable[[ClaimResult, ClaimStudy], list[str]]] = {
    "onset": render_onset, "dose": render_dose, "transition": render_transition,
    "precursor": render_precursor, "compare": render_compare}


def _footer(r: ClaimResult, verbose: bool) -> list[str]:
    lines = [""]
    if r.trail is not None:  # how the result was made
        lines += [f"trail: grokaudit {r.trail.version} · profile {r.trail.profile}",
                  *(f"  {x}" for x in r.trail.lines()), ""]
    shown = [f for f in r.findings if verbose or f.severity is not Severity.INFO]
    for f in shown:
        where = ", ".join(f"{k}={format_value(v)}" for k, v in f.study.items())
        lines.append(f"[{f.severity.value}] {f.code.value}{' (' + where + ')' if where else ''}"
                     f": {f.message}")
    n_crit = sum(1 for f in r.findings if f.severity is Severity.CRITICAL)
    lines.append(f"result: {len(r.findings)} findings, {n_crit} critical; exit {r.exit_code}")
    return lines


def render_text(r: ClaimResult, verbose: bool = False) -> str:
    """The text report of any claim result, one block per study (control characters from
    the log escaped, line by line)."""
    lines: list[str] = []
    for i, s in enumerate(r.studies):
        if i:
            lines.append("")
        lines += RENDERERS[r.command](r, s)
    lines += _footer(r, verbose)
    return "\n".join(safe(line) for line in lines) + "\n"
