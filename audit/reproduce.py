"""``grokaudit reproduce``: each seed paper's headline regenerated with the bundled trainer and
audited with grokaudit's own claim commands, the paper's number printed beside ours.

A seed's design (:mod:`grokaudit.seeds`) names its sweep files and its audits. Its logs are the
bundled CPU-scale logs (:func:`reproduce_bundled`) or trained here (:func:`train_plan`, through
``grokaudit train``). Each audit is the ``grokaudit`` command printed in the table, run with
``--json`` by the runner the caller gives (the CLI's ``cli.run_command`` runs it in this
process): the table's numbers are read from that JSON, so the printed command regenerates them
exactly. (This module never imports the CLI: the runners are passed in.) Each headline then gets one verdict (:func:`judge`):

* ``REPRODUCED``: our interval overlaps the paper's (or holds its point), and where the
  headline has a direction (a side of ``null``) ours lies on the same side;
* ``DIRECTION_ONLY``: ours lies on the paper's side of ``null``, and its interval excludes the
  paper's;
* ``NOT_REPRODUCED``: ours lies on the other side, or excludes the paper's value where the
  headline has no direction, or holds the null value while excluding the paper's;
* ``NOT_SUPPORTED_BY_THE_LOG``: the audit gives no value (censored cells, unstable floors,
  too few levels: its codes are listed), the design does not measure it at this scale
  (``NOT_IN_DESIGN``), or our interval holds both the paper's value and no effect
  (``INTERVAL_TOO_WIDE``).
"""

from __future__ import annotations

import math
import os
import shlex
import statistics
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError, ErrorCode, GrokauditError
from .results import Finding, Result
from .seeds import LOGS, SEEDS, Headline, PaperValue, SeedDesign

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

VERDICTS = ("REPRODUCED", "DIRECTION_ONLY", "NOT_REPRODUCED", "NOT_SUPPORTED_BY_THE_LOG")
SCHEMA = "grokaudit.reproduce/1"
SCALES = ("cpu", "paper")


def config_path(rel: str) -> Path:
    """A sweep file of the bundled trainer (importing its package does not import torch)."""
    from .reference_runs import CONFIG_DIR

    return CONFIG_DIR / rel


def bundled_path(rel: str) -> Path:
    """A bundled log."""
    from .reference_runs import DATA_DIR

    return DATA_DIR / rel


# ------------------------------------------------------------------------------------------
# what a row holds
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Measured:
    """Our value of a headline: a point and an interval (``low``/``high``, either None when
    unbounded or unknown), how it was read (``how``), and the codes that explain a missing or
    weak value (the audit's own findings, or ``NOT_IN_DESIGN``)."""

    value: float | None
    low: float | None
    high: float | None
    how: str
    codes: tuple[str, ...] = ()

    @property
    def defined(self) -> bool:
        return self.value is not None or (self.low is not None or self.high is not None)

    def to_dict(self) -> dict[str, Any]:
        return {"value": _num(self.value), "low": _num(self.low), "high": _num(self.high),
                "how": self.how, "codes": list(self.codes)}


@dataclass(frozen=True)
class Row:
    """One headline: the paper's number, ours, the verdict and why, and the command that
    gave ours."""

    seed: str
    key: str
    claim: str
    paper: PaperValue
    ours: Measured
    verdict: str
    reasons: tuple[str, ...]
    command: str
    null: float | None
    unit: str = ""
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"seed": self.seed, "key": self.key, "claim": self.claim,
                "paper": {"text": self.paper.text, "value": self.paper.value,
                          "low": self.paper.low, "high": self.paper.high},
                "ours": self.ours.to_dict(), "verdict": self.verdict,
                "reasons": list(self.reasons), "command": self.command, "null": self.null,
                "unit": self.unit, "note": self.note}


@dataclass(frozen=True)
class SeedRun:
    """Where one seed's logs came from and what was run on them."""

    seed: str
    title: str
    scale: str
    source: str  #: "bundled" or "trained"
    logs: tuple[str, ...]
    train_commands: tuple[str, ...]
    audit_commands: Mapping[str, str]
    audit_exit: Mapping[str, int]
    wall_seconds: float | None  #: training time, from the logs' MANIFESTs
    scale_note: str

    def to_dict(self) -> dict[str, Any]:
        return {"seed": self.seed, "title": self.title, "scale": self.scale,
                "source": self.source, "logs": list(self.logs),
                "train_commands": list(self.train_commands),
                "audit_commands": dict(self.audit_commands),
                "audit_exit": dict(self.audit_exit), "wall_seconds": self.wall_seconds,
                "scale_note": self.scale_note}


@dataclass(frozen=True)
class ReproduceResult(Result):
    """The table: one :class:`Row` per headline, one :class:`SeedRun` per seed. It has no
    findings of its own (the verdicts are its content), so it exits 0; the audits' JSON is
    kept in memory (``audits``) for the figures."""

    rows: tuple[Row, ...]
    seeds: tuple[SeedRun, ...]
    version: str
    audits: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, repr=False)
    findings: tuple[Finding, ...] = ()
    fail_on: tuple[str, ...] = ("default",)

    def counts(self) -> dict[str, int]:
        return {v: sum(r.verdict == v for r in self.rows) for v in VERDICTS}

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "grokaudit_version": self.version,
                "verdicts": self.counts(),
                "seeds": [s.to_dict() for s in self.seeds],
                "rows": [r.to_dict() for r in self.rows]}


def _num(x: float | None) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return float(f"{x:.12g}")


# ------------------------------------------------------------------------------------------
# the verdict
# ------------------------------------------------------------------------------------------

def _side(lo: float | None, hi: float | None, null: float) -> int:
    """+1 when the whole interval lies above ``null``, −1 below, 0 when it holds it."""
    if lo is not None and lo > null:
        return 1
    if hi is not None and hi < null:
        return -1
    return 0


def _overlaps(lo: float | None, hi: float | None, a: float, b: float) -> bool:
    return (lo is None or lo <= b) and (hi is None or hi >= a)


def judge(paper: PaperValue, ours: Measured, null: float | None) -> tuple[str, tuple[str, ...]]:
    """The verdict of one headline and the codes behind it (see the module's docstring)."""
    if not ours.defined:
        return "NOT_SUPPORTED_BY_THE_LOG", ours.codes or ("NO_VALUE",)
    lo, hi = ours.low, ours.high  # an end that is None is unbounded
    if lo is None and hi is None:  # a point reading without an interval
        lo = hi = ours.value
    span = paper.span
    if span is None:  # the paper gives no number: at most a direction, where one is shown
        if null is not None and _side(lo, hi, null) != 0:
            return "DIRECTION_ONLY", ours.codes + ("NO_PAPER_NUMBER",)
        return "NOT_SUPPORTED_BY_THE_LOG", ours.codes + ("NO_PAPER_NUMBER",)
    overlap = _overlaps(lo, hi, *span)
    if null is None:
        return ("REPRODUCED", ours.codes) if overlap else ("NOT_REPRODUCED", ours.codes)
    ref = paper.value if paper.value is not None else (span[0] + span[1]) / 2
    paper_side = 0 if ref == null else (1 if ref > null else -1)
    our_side = _side(lo, hi, null)
    if overlap:
        if paper_side == 0 or our_side == paper_side:
            return "REPRODUCED", ours.codes
        if our_side == -paper_side:  # inside a paper interval that crosses the null, opposite
            return "NOT_REPRODUCED", ours.codes
        return "NOT_SUPPORTED_BY_THE_LOG", ours.codes + ("INTERVAL_TOO_WIDE",)
    if paper_side != 0 and our_side == paper_side:
        return "DIRECTION_ONLY", ours.codes
    return "NOT_REPRODUCED", ours.codes


# ------------------------------------------------------------------------------------------
# reading our value from an audit's JSON
# ------------------------------------------------------------------------------------------

def _study(result: Mapping[str, Any], where: str) -> Mapping[str, Any] | None:
    """The study whose ``--cell`` values are ``where`` (``"loss=ce,p=59"``; "" = the only
    one). Values are compared as text of numbers (59 and 59.0 are one value)."""
    want: dict[str, str] = {}
    for part in filter(None, where.split(",")):
        k, _, v = part.partition("=")
        want[k] = _norm(v)
    for s in result.get("studies", []):
        study = s.get("study", {})
        if all(_norm(study.get(k)) == v for k, v in want.items()):
            found: Mapping[str, Any] = s
            return found
    return None


def _norm(v: Any) -> str:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v).strip().lower()
    return repr(f)


def _codes(result: Mapping[str, Any], study: Mapping[str, Any] | None = None,
           severities: tuple[str, ...] = ("critical", "warning")) -> tuple[str, ...]:
    """The distinct codes of the findings: those of ``study`` (the result's findings whose
    ``study`` is that study's, or that concern no study), else all."""
    fs = result.get("findings", [])
    if study is not None:
        key = {k: _norm(v) for k, v in (study.get("study") or {}).items()}
        fs = [f for f in fs if not f.get("study")
              or {k: _norm(v) for k, v in f["study"].items()} == key]
    seen: list[str] = []
    for f in fs:
        if f.get("severity") in severities and f.get("code") not in seen:
            seen.append(str(f.get("code")))
    return tuple(seen)


#: ``check``'s findings are many (per run and cell): a row lists its critical ones only.
CRITICAL = ("critical",)


def _ci(c: Mapping[str, Any] | None) -> tuple[float | None, float | None]:
    if not c:
        return None, None
    return c.get("low"), c.get("high")


def _absent(what: str, result: Mapping[str, Any], study: Mapping[str, Any] | None
            ) -> Measured:
    if study is None:
        return Measured(None, None, None, what, ("NOT_IN_DESIGN",))
    return Measured(None, None, None, what, _codes(result, study) or ("NO_VALUE",))


def _recovery(result: Mapping[str, Any], arg: str) -> Measured:
    s = _study(result, arg)
    med = s.get("mediation") if s else None
    if not med or med.get("recovery") is None:
        return _absent(f"recovery fraction at {arg}", result, s)
    lo, hi = _ci(med.get("recovery_ci"))
    return Measured(med["recovery"], lo, hi,
                    f"recovery (T1 − T2)/(T1 − T0), {arg}; bootstrap over seeds",
                    _codes(result, s))


def _collapse_r2(result: Mapping[str, Any], arg: str) -> Measured:
    s = _study(result, arg)
    med = s.get("mediation") if s else None
    r2 = (med or {}).get("collapse", {}).get("r2_mediator")
    if r2 is None:
        return _absent(f"R² of ln T on the mediator at {arg}", result, s)
    return Measured(r2, None, None, f"R² of ln T on the mediator, {arg} (no interval)",
                    _codes(result, s))


def _txt(x: float | None) -> str:
    return "?" if x is None else f"{x:.3g}"


def _pair(x: Any) -> tuple[float | None, float | None]:
    """``[low, high]`` or ``{"low": …, "high": …}`` as a pair (None: unknown)."""
    if isinstance(x, Mapping):
        return x.get("low"), x.get("high")
    if isinstance(x, (list, tuple)) and len(x) == 2:
        return x[0], x[1]
    return None, None


def _lambda_c(result: Mapping[str, Any], arg: str) -> Measured:
    s = _study(result, arg)
    b = (s or {}).get("boundary") or {}
    if s is None or not b:
        return _absent("λ_c", result, s)
    if b.get("extrapolated"):
        return Measured(None, None, None, "λ_c lies outside the levels (extrapolated)",
                        _codes(result, s) + ("EXTRAPOLATED",))
    lo, hi = _ci(b.get("ci"))
    how = "λ_c, logistic grok rate over wd; bootstrap interval"
    if lo is None and hi is None and b.get("profile"):
        lo, hi = _pair(b["profile"])
        how = "λ_c's profile-likelihood 95 % set"
    if lo is None and hi is None and b.get("bracket"):
        lo, hi = _pair(b["bracket"])
        how = "λ_c only bracketed by the levels"
    if b.get("lambda_c") is None:
        how += f" (separation {b.get('separation')}: no point estimate)"
    return Measured(b.get("lambda_c"), lo, hi, how, _codes(result, s))


def _nu(result: Mapping[str, Any], arg: str) -> Measured:
    s = _study(result, arg)
    pw = (s or {}).get("power_law") or {}
    if s is None or not pw:
        return _absent("ν", result, s)
    if pw.get("nu") is None and pw.get("nu_range"):
        lo, hi = _pair(pw["nu_range"])
        return Measured(None, None, None,
                        f"ν not identified: its point value runs over ({_txt(lo)}, {_txt(hi)}) "
                        "as λ_c moves over where it may lie, before the noise of the cell "
                        "medians: no interval", _codes(result, s) + ("NU_NOT_IDENTIFIED",))
    if pw.get("nu") is None:
        return _absent("ν", result, s)
    lo, hi = _ci(pw.get("nu_ci"))
    return Measured(pw["nu"], lo, hi, f"ν over {pw.get('n_cells')} grokking cells",
                    _codes(result, s))


def _regressed_at_max(result: Mapping[str, Any], arg: str) -> Measured:
    """The share of the grokked runs at the largest level whose test accuracy fell back (the
    transition command's ``collapse``), with its Wilson interval."""
    from .claims.stats import wilson

    s = _study(result, arg)
    levels = (s or {}).get("levels") or []
    if not levels:
        return _absent("runs that regress at the largest level", result, s)
    top = max(levels, key=lambda lv: float(lv["level"]))
    k = int(top.get("n_regressed") or 0)
    n = int((top.get("grok_rate") or {}).get("k") or 0)
    if not n:
        return Measured(None, None, None, f"no run grokked at wd {top['level']}, so none "
                        "could collapse", _codes(result, s) + ("NO_GROK",))
    w = wilson(k, n)
    return Measured(w.rate, w.low, w.high,
                    f"{k} of the {n} runs that grokked at wd {top['level']} lose it again "
                    f"(phase {top.get('phase')}; Wilson interval)", _codes(result, s))


def _check_ordering(result: Mapping[str, Any], arg: str) -> Measured:
    """The converged value's ordering across the axis: its Kendall τ bounds (both ends; the
    point is their middle). A flat or unidentified ordering shows no direction."""
    studies = result.get("studies") or []
    if not studies:
        return Measured(None, None, None, "no study", _codes(result, severities=CRITICAL) or ("NO_VALUE",))
    s = studies[0]
    for o in s.get("orderings") or []:
        if o.get("quantity") != "floor":
            continue
        what = f"the converged {s.get('metric')}'s ordering across the axis"
        if not o.get("identified") or o.get("shape") == "flat":
            why = tuple(x for x in (o.get("reason"), o.get("sub_reason")) if x)
            if o.get("identified"):
                why = ("ORDERING_FLAT",)
            return Measured(None, None, None, what, _codes(result, severities=CRITICAL) + why)
        lo, hi = _pair(o.get("tau_bounds"))
        mid = None if lo is None or hi is None else (lo + hi) / 2
        return Measured(mid, lo, hi, f"{what}: Kendall τ bounds ({o.get('shape')})",
                        _codes(result, severities=CRITICAL))
    return Measured(None, None, None, "converged value's ordering across the axis",
                    _codes(result, severities=CRITICAL) or ("NO_VALUE",))


def _cells_passing(result: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    studies = result.get("studies") or []
    return [c for s in studies[:1] for c in s.get("cells", []) if c.get("passes")]


def _cell_range(result: Mapping[str, Any], key: str, what: str) -> Measured:
    cells = [c for c in _cells_passing(result) if c.get(key) is not None]
    vals = [float(c[key]) for c in cells]
    if len(vals) < 2:  # one cell is a value, not a range: no interval
        return Measured(None, None, None,
                        f"{what}: {len(vals)} cell(s) that pass the gates"
                        + (f" ({vals[0]:.3g})" if vals else ""),
                        _codes(result, severities=CRITICAL) + ("NO_INTERVAL",))
    bound = key == "inflation" and any(c.get("inflation_is_lower_bound") for c in cells)
    return Measured(statistics.median(vals), min(vals), None if bound else max(vals),
                    f"{what}: median and range over {len(vals)} cells that pass the gates"
                    + ("; a lower bound in some, so the range has no upper end" if bound
                       else ""), ())


def _inflation(result: Mapping[str, Any], arg: str) -> Measured:
    return _cell_range(result, "inflation", "at-grok value / converged floor")


def _rel_lag(result: Mapping[str, Any], arg: str) -> Measured:
    return _cell_range(result, "rel_lag", "(t_compress − t_grok) / t_grok")


def _frac_pre_difference(result: Mapping[str, Any], arg: str) -> Measured:
    studies = result.get("studies") or []
    runs = studies[0].get("runs", []) if studies else []
    on = [r["frac_pre"] for r in runs if _truthy(r.get("cell")) and r.get("frac_pre") is not None]
    off = [r["frac_pre"] for r in runs
           if _truthy(r.get("cell")) is False and r.get("frac_pre") is not None]
    if not on or not off:
        return Measured(None, None, None, f"frac_pre with {arg} on − off",
                        _codes(result, severities=CRITICAL) or ("NO_VALUE",))
    return Measured(statistics.median(on) - statistics.median(off), min(on) - max(off),
                    max(on) - min(off),
                    f"median frac_pre with {arg} − without ({len(on)} and {len(off)} runs); "
                    "the interval spans every pair of runs", ())


def _truthy(v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        return bool(v)
    if isinstance(v, str) and v.strip().lower() in ("true", "false", "1", "0"):
        return v.strip().lower() in ("true", "1")
    return None


def _exponent(result: Mapping[str, Any], arg: str) -> Measured:
    s = _study(result, "")
    if s is None:
        return _absent(f"exponent of {arg}", result, s)
    term = f"log_{arg}"
    for fit_name in ("aft", "ols"):
        fit = ((s.get(fit_name) or {}).get("fit") or {})
        for c in fit.get("coefficients") or []:
            if c.get("name") == term:
                codes = _codes(result, s)
                how = ("censored AFT fit on every run" if fit_name == "aft"
                       else "OLS on the grokked runs (no AFT fit)")
                return Measured(c.get("estimate"), c.get("low"), c.get("high"),
                                f"exponent of {arg}: {how}", codes)
    return _absent(f"exponent of {arg}", result, s)


def _ols_r2(result: Mapping[str, Any], arg: str) -> Measured:
    s = _study(result, "")
    fit = ((s or {}).get("ols") or {}).get("fit") or {}
    if fit.get("r2") is None:
        return _absent("OLS R²", result, s)
    return Measured(fit["r2"], None, None,
                    f"OLS R² on {fit.get('n')} grokked runs (no interval)", _codes(result, s))


def _grok_rate_step(result: Mapping[str, Any], arg: str) -> Measured:
    """``arg`` = ``wd=1``: the grok rate of the runs at wd ≥ 1 minus that below, with the
    conservative interval of the two Wilson intervals (low of one minus high of the other)."""
    from .claims.stats import wilson

    col, _, at = arg.partition("=")
    s = _study(result, "")
    cells = (s or {}).get("cells") or []
    k = {True: 0, False: 0}
    n = {True: 0, False: 0}
    for c in cells:
        v = (c.get("cell") or {}).get(col)
        g = c.get("grok_rate") or {}
        if not isinstance(v, (int, float)) or not g.get("n"):
            continue
        side = float(v) >= float(at)
        k[side] += int(g["k"])
        n[side] += int(g["n"])
    if not n[True] or not n[False]:
        return _absent(f"grok rate at {col} ≥ {at} and below", result, s)
    up, down = wilson(k[True], n[True]), wilson(k[False], n[False])
    if (up.rate is None or down.rate is None or up.low is None or up.high is None
            or down.low is None or down.high is None):
        return _absent(f"grok rate at {col} ≥ {at} and below", result, s)
    return Measured(up.rate - down.rate, up.low - down.high, up.high - down.low,
                    f"grok rate at {col} ≥ {at} ({k[True]}/{n[True]}) minus below "
                    f"({k[False]}/{n[False]}); the interval from the two Wilson intervals",
                    _codes(result, s))


def _fraction_preceding(result: Mapping[str, Any], arg: str) -> Measured:
    s = _study(result, arg)
    if s is None or not s.get("n_scored"):
        return _absent(f"fraction of runs whose signal peaks before grokking ({arg})",
                       result, s)
    n = int(s["n_scored"])
    frac = float(s["fraction_preceding"])
    k = round(frac * n)
    lo, hi = clopper_pearson(k, n)
    return Measured(frac, lo, hi, f"{k}/{n} scored runs, {arg} (Clopper–Pearson interval)",
                    _codes(result, s))


def _relative_shortening(result: Mapping[str, Any], arg: str) -> Measured:
    s = _study(result, "")
    tests = (s or {}).get("tests") or {}
    first = ((s or {}).get("arms") or [None])[0]
    base = [t for t in (_first_t_grok(p) for p in (s or {}).get("pairs") or [])
            if t is not None]
    if not tests or tests.get("mean") is None or not base:
        return _absent("relative shortening", result, s)
    scale = statistics.mean(base)
    lo, hi = _ci(tests.get("mean_ci"))
    return Measured(tests["mean"] / scale, None if lo is None else lo / scale,
                    None if hi is None else hi / scale,
                    f"mean paired difference t_grok({first}) − t_grok(other) over "
                    f"{len(base)} pairs / mean t_grok of {first} ({scale:.6g} steps, held "
                    "fixed); BCa over pairs", _codes(result, s))


def _first_t_grok(pair: Mapping[str, Any]) -> float | None:
    """The first arm's logged grok step in a pair (None when censored)."""
    ts = pair.get("t_grok") or []
    v = ts[0].get("value") if ts and isinstance(ts[0], Mapping) else None
    return float(v) if isinstance(v, (int, float)) else None


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The exact binomial interval of ``k`` successes in ``n``."""
    from scipy import stats

    a = (1 - level) / 2
    lo = 0.0 if k == 0 else float(stats.beta.ppf(a, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - a, k + 1, n - k))
    return lo, hi


#: quantity name (before the ``:``) → the function reading it from the audit's JSON.
EXTRACTORS: Mapping[str, Callable[[Mapping[str, Any], str], Measured]] = {
    "recovery": _recovery, "collapse_r2": _collapse_r2, "lambda_c": _lambda_c, "nu": _nu,
    "regressed_at_max": _regressed_at_max, "check_ordering": _check_ordering,
    "inflation": _inflation, "rel_lag": _rel_lag,
    "frac_pre_difference": _frac_pre_difference, "exponent": _exponent, "ols_r2": _ols_r2,
    "fraction_preceding": _fraction_preceding, "relative_shortening": _relative_shortening,
    "grok_rate_step": _grok_rate_step,
}


def measure(h: Headline, result: Mapping[str, Any] | None) -> Measured:
    """Our value of ``h`` from its audit's JSON (None: the audit was refused)."""
    name, _, arg = h.quantity.partition(":")
    if result is None:
        return Measured(None, None, None, "the audit was refused", ("AUDIT_REFUSED",))
    got = EXTRACTORS[name](result, arg)
    if got.value is not None and got.low is None and got.high is None:
        # an estimate whose interval the audit could not give (too few resamples, a refused
        # bootstrap) is not compared as a point: the point is kept in the text only
        return Measured(None, None, None, f"{got.how}; point {got.value:.6g} without an "
                        "interval", got.codes + ("NO_INTERVAL",))
    return got


# ------------------------------------------------------------------------------------------
# running the audits
# ------------------------------------------------------------------------------------------

def audit_argv(design: SeedDesign, name: str, logs: Sequence[str]) -> list[str]:
    """The ``grokaudit`` arguments of one audit on ``logs``."""
    out: list[str] = []
    for a in design.audits[name]:
        if a == LOGS:
            out.extend(logs)
        elif a.startswith("{log") and a.endswith("}") and a[4:-1].isdigit():
            out.append(logs[int(a[4:-1])])
        else:
            out.append(a)
    return out


#: Runs ``grokaudit ARGV --json FILE --quiet`` and returns its JSON (None when refused), exit
#: code and result (or error) line; the CLI gives it (``cli.run_command``).
AuditRunner = Callable[[Sequence[str]], "tuple[dict[str, Any] | None, int, str]"]
#: Runs a ``grokaudit train`` argument list, raising on failure (``cli.run_train_command``).
TrainRunner = Callable[[Sequence[str]], None]


def command_text(argv: Sequence[str]) -> str:
    return "grokaudit " + " ".join(shlex.quote(a) for a in argv)


def _toml(path: Path) -> dict[str, Any]:
    """A TOML file's table (its errors raised: ``OSError``, ``ValueError``)."""
    data: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    return data


def _manifest(log: str) -> Mapping[str, Any]:
    """The MANIFEST ``grokaudit train`` wrote beside ``log`` ({} when there is none)."""
    if not str(log).endswith(".parquet"):
        return {}
    try:
        return _toml(Path(str(log)[: -len(".parquet")] + ".MANIFEST.toml"))
    except (OSError, ValueError, UnicodeDecodeError):
        return {}


def _manifest_wall(logs: Sequence[str]) -> float | None:
    """The training wall time of ``logs`` in seconds (None when a MANIFEST lacks it)."""
    total = 0.0
    for log in logs:
        w = _manifest(log).get("wall_seconds")
        if not isinstance(w, (int, float)):
            return None
        total += float(w)
    return total


def _manifest_commands(logs: Sequence[str]) -> tuple[str, ...]:
    return tuple(c for c in (_manifest(log).get("command") for log in logs)
                 if isinstance(c, str))


def audit_seed(design: SeedDesign, logs: Sequence[str], run: AuditRunner, *, scale: str,
               source: str, train_commands: Sequence[str] = ()
               ) -> tuple[SeedRun, list[Row], dict[str, Any]]:
    """Run a seed's audits on its logs (through ``run``) and judge its headlines."""
    results: dict[str, dict[str, Any] | None] = {}
    commands: dict[str, str] = {}
    exits: dict[str, int] = {}
    lines: dict[str, str] = {}
    for name in design.audits:
        argv = audit_argv(design, name, logs)
        commands[name] = command_text(argv)
        results[name], exits[name], lines[name] = run(argv)
    rows = []
    for h in design.headlines:
        if scale not in h.scales:
            ours = Measured(None, None, None, h.note or f"not in the {scale}-scale design",
                            ("NOT_IN_DESIGN",))
        else:
            got = results[h.audit]
            ours = (measure(h, got) if got is not None else
                    Measured(None, None, None, lines[h.audit] or "the audit was refused",
                             ("AUDIT_REFUSED",)))
        verdict, reasons = judge(h.paper, ours, h.null)
        rows.append(Row(design.seed, h.key, h.claim, h.paper, ours, verdict, reasons,
                        commands[h.audit], h.null, h.unit, h.note))
    done = SeedRun(design.seed, design.title, scale, source, tuple(logs),
                   tuple(train_commands) or _manifest_commands(logs), commands, exits,
                   _manifest_wall(logs), design.scale_note)
    return done, rows, {f"{design.seed}/{k}": v for k, v in results.items() if v is not None}


def select(seeds: Sequence[str]) -> list[SeedDesign]:
    """The designs of ``seeds`` (all when empty); an unknown seed is one line naming them."""
    if not seeds:
        return list(SEEDS.values())
    out = []
    for s in seeds:
        key = s.strip().zfill(3) if s.strip().isdigit() else s.strip()
        if key not in SEEDS:
            raise ConfigError(f"reproduce: unknown seed {s!r}; the seeds are "
                              f"{', '.join(SEEDS)}", code=ErrorCode.UNKNOWN_VALUE,
                              option="SEED")
        if SEEDS[key] not in out:
            out.append(SEEDS[key])
    return out


def bundled_logs(design: SeedDesign) -> list[str]:
    """The bundled CPU-scale logs of a seed; a missing one is FILE_NOT_FOUND naming it."""
    out = []
    for rel in design.bundled:
        p = bundled_path(rel)
        if not p.is_file():
            raise GrokauditError(f"{p}: the bundled log of seed {design.seed} is missing; "
                                 "reinstall grokaudit, or train it with `grokaudit reproduce "
                                 f"{design.seed} --scale cpu`", code=ErrorCode.FILE_NOT_FOUND)
        out.append(_shown(p))
    return out


def _shown(p: Path) -> str:
    """A path as printed in commands: relative to the working directory when inside it."""
    try:
        return os.path.relpath(p) if not os.path.relpath(p).startswith("..") else str(p)
    except ValueError:
        return str(p)


def reproduce_bundled(run: AuditRunner, seeds: Sequence[str] = ()) -> ReproduceResult:
    """Re-audit the bundled CPU-scale logs of ``seeds`` (all when empty) through ``run``."""
    from .version import __version__

    runs, rows, audits = [], [], {}
    for d in select(seeds):
        one, rs, res = audit_seed(d, bundled_logs(d), run, scale="cpu", source="bundled")
        runs.append(one)
        rows.extend(rs)
        audits.update(res)
    return ReproduceResult(tuple(rows), tuple(runs), __version__, audits)


def reproduce_logs(logs_by_seed: Mapping[str, Sequence[str]], run: AuditRunner, *,
                   scale: str, train_commands: Mapping[str, Sequence[str]] | None = None
                   ) -> ReproduceResult:
    """Audit logs trained here (seed → its logs, in the order of its design's configs)."""
    from .version import __version__

    runs, rows, audits = [], [], {}
    for seed, logs in logs_by_seed.items():
        d = SEEDS[seed]
        one, rs, res = audit_seed(d, list(logs), run, scale=scale, source="trained",
                                  train_commands=(train_commands or {}).get(seed, ()))
        runs.append(one)
        rows.extend(rs)
        audits.update(res)
    return ReproduceResult(tuple(rows), tuple(runs), __version__, audits)



# ------------------------------------------------------------------------------------------
# training a design here
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Plan:
    """What ``reproduce`` will train: per seed, each config with its log path, whether that
    log is already finished (reused under ``--resume``), and the estimated seconds of the
    rest on this device."""

    scale: str
    device: str
    entries: tuple[tuple[str, str, str, bool], ...]  #: (seed, config, log, finished)
    seconds: float
    per_seed: Mapping[str, float]


def log_path(out_dir: Path, seed: str, config: str) -> Path:
    return out_dir / f"seed-{seed}" / (Path(config).stem + ".parquet")


def _provenance(log: Path) -> dict[str, Any] | None:
    """The provenance ``train`` wrote into a Parquet log (None: not such a log)."""
    import pyarrow.parquet as pq

    from .shards import provenance_of

    try:
        prov = provenance_of(pq.read_schema(log), str(log))
    except Exception:  # noqa: BLE001 - unreadable or malformed: not a log train wrote
        return None
    return prov if prov.get("sweep") is not None else None


def _sweep_name(config: str) -> str:
    path = config_path(config)
    return str(_toml(path).get("name", path.stem))


def _state(log: Path, config: str) -> str:
    """What is at a log's path: ``absent``, ``finished`` (a complete log of this config's
    sweep, no checkpoint beside it), ``partial`` (a checkpoint, or a partial log of this
    sweep: ``--resume`` continues it) or ``foreign`` (anything else: never replaced)."""
    ckpt = Path(str(log) + ".ckpt")
    if not os.path.lexists(log):
        return "partial" if ckpt.exists() else "absent"
    prov = _provenance(log) if log.is_file() else None
    if prov is None or prov.get("sweep") != _sweep_name(config):
        return "foreign"
    if prov.get("complete") is True and not ckpt.exists():
        return "finished"
    return "partial"


def plan(designs: Sequence[SeedDesign], *, scale: str, out_dir: Path, resume: bool,
         device: str, threads: int | None,
         say: Callable[[str], None] = lambda s: None) -> Plan:
    """Check the outputs and estimate the training time (a probe per batch group).

    Without ``resume``, an existing log or checkpoint under ``out_dir`` is refused
    (``WORK_WOULD_BE_LOST``) before anything trains."""
    from .reference_runs.estimate import estimate_sweep

    for q in (out_dir, *out_dir.parents):
        if q.exists():
            if not q.is_dir():
                raise ConfigError(f"--out {out_dir}: {q} is not a folder; name a folder for "
                                  "the trained logs", code=ErrorCode.OUTPUT_NOT_WRITABLE,
                                  option="--out")
            break
    entries = []
    per_seed: dict[str, float] = {}
    dev = device
    for d in designs:
        if scale not in d.configs:
            raise ConfigError(f"seed {d.seed} has no {scale}-scale design",
                              code=ErrorCode.INVALID_OPTION, option="--scale")
        per_seed[d.seed] = 0.0
        for cfg in d.configs[scale]:
            log = log_path(out_dir, d.seed, cfg)
            state = _state(log, cfg)
            if state == "foreign":
                raise ConfigError(f"{log} exists and is not a log of {cfg}: it is never "
                                  "replaced; move it, or choose another --out",
                                  code=ErrorCode.WORK_WOULD_BE_LOST, option="--out")
            if state != "absent" and not resume:
                raise ConfigError(f"{log} already exists: pass --resume to reuse finished logs "
                                  "and continue interrupted ones, or choose another --out",
                                  code=ErrorCode.WORK_WOULD_BE_LOST, option="--resume")
            done = state == "finished"
            if not done:
                est = estimate_sweep(config_path(cfg), device, threads)
                dev = est.device
                per_seed[d.seed] += est.seconds
                say(f"seed {d.seed}: {cfg}: {est.runs} runs, {est.run_steps} run-steps, "
                    f"about {duration(est.seconds)} on {est.device}")
            else:
                say(f"seed {d.seed}: {cfg}: finished log {log} reused (--resume)")
            entries.append((d.seed, cfg, str(log), done))
    return Plan(scale, dev, tuple(entries), sum(per_seed.values()), per_seed)


def duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def check_budget(p: Plan, budget_hours: float) -> None:
    """Refuse a plan whose estimate exceeds the budget (``BUDGET_EXCEEDED``): a design is never
    scaled down to fit."""
    if p.seconds > budget_hours * 3600:
        parts = ", ".join(f"{s}: {duration(v)}" for s, v in p.per_seed.items() if v > 0)
        raise ConfigError(f"reproduce --scale {p.scale}: the estimated training time on "
                          f"{p.device} is {duration(p.seconds)} ({parts}), more than "
                          f"--budget-hours {budget_hours:g}; raise --budget-hours, reproduce "
                          "fewer seeds, or use a faster device (designs are never scaled "
                          "down to fit)", code=ErrorCode.BUDGET_EXCEEDED,
                          option="--budget-hours")


def train_argv(config: str, log: str, *, device: str, threads: int | None,
               engine: str, resume: bool) -> list[str]:
    argv = ["train", _shown(config_path(config)), "-o", log, "--device", device,
            "--checkpoint-minutes", "2", "--progress", "lines"]
    if threads is not None:
        argv += ["--threads", str(threads)]
    if engine != "process":
        argv += ["--engine", engine]
    if resume:
        argv.append("--resume")
    return argv


def train_plan(p: Plan, train: TrainRunner, *, device: str, threads: int | None,
               engine: str, say: Callable[[str], None] = lambda s: None
               ) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Train every unfinished config of the plan through ``train``; returns the logs and the
    train commands per seed."""
    logs: dict[str, list[str]] = {}
    cmds: dict[str, list[str]] = {}
    for seed, cfg, log, done in p.entries:
        logs.setdefault(seed, []).append(log)
        partial = Path(str(log) + ".ckpt").exists() or Path(log).exists()
        argv = train_argv(cfg, log, device=device, threads=threads, engine=engine,
                          resume=partial)
        cmds.setdefault(seed, []).append(command_text(argv))
        if done:
            continue
        say(f"seed {seed}: training {cfg} → {log}")
        train(argv)
    return logs, cmds
