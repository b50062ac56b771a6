"""The claim audits' named adversarial cases: a simulated truth and its pre-registered answer.

Each case simulates a log from known parameters with a fixed seed (onset times from a Weibull
or log-normal AFT, dose laws, logistic transitions, paired arms, precursor signals), runs one
or more claim commands on it (``onset``, ``dose``, ``transition``, ``compare``, ``precursor``:
the Python API the CLI calls, with small ``n_resamples`` / ``n_perm``), and states before the
audit runs what a correct audit must say: the reason codes that must and must not appear, the
exit code (or the input error: exit 2), and the key numbers of each study's body — exact where
the construction fixes them (a logged step, a count, an exact p-value), with a tolerance or a
bound derived from the simulation's parameters where sampling enters (a slope within four of
its standard errors, an interval that covers the truth).

Nothing here computes an expected number with the audit's code: logged steps come from the
logging grid (the first logged step at or after the true time), medians from the documented
rule (:func:`plain_median`), slopes' tolerances from the design, the bias of OLS on the
survivors from a plain Monte-Carlo of the same truth.

The user's thresholds
---------------------
The claim audits read ``grok_threshold``, ``mem_threshold``, ``interval_censoring`` and
``sustain`` from the config. Every log here is built relative to them (:class:`CK`): test_acc
sits below ``grok_threshold`` until the true grok time and at 1.0 after it, train_acc below
``mem_threshold`` until memorization, so that each run's logged grok and memorization steps —
and every expected answer — are the same under any valid threshold. The one case whose point
is the threshold (``onset_threshold_sensitive``) lists its thresholds relative to the user's
(``0.6·g`` and ``g``) and puts its plateau between them. Lower ends of intervals follow
``interval_censoring``. The design fields (``acc_scale``, ``on_duplicate``, ``fail_on``…) are
the cases' own (:data:`~.cases.DESIGN_DEFAULTS`), as for the core's cases. No claim case has a
threshold it cannot follow.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from grokaudit import AuditConfig, LogFormatError, Reason
from grokaudit.claims.simulate import lognormal_times, weibull_times
from grokaudit.config import make_config
from grokaudit.config import replace as replace_config

from .cases import DESIGN_DEFAULTS
from .expect import Approx, Between, _eq, get_path

R = Reason

#: Claim command → (module, function) of the Python API; looked up at call time, so that a
#: mutant patched into the module is what runs.
COMMANDS: dict[str, tuple[str, str]] = {
    "onset": ("grokaudit.claims.onset", "run_onset"),
    "dose": ("grokaudit.claims.dose", "run_dose"),
    "transition": ("grokaudit.claims.transition", "run_transition"),
    "compare": ("grokaudit.claims.compare", "run_compare"),
    "precursor": ("grokaudit.claims.precursor", "run_precursor"),
}

#: The sd of the standard error variable of each AFT family (for slope tolerances).
SD_W = {"weibull": math.pi / math.sqrt(6), "lognormal": 1.0}
#: The sd of a sample median of n normal values is about this × sd/√n.
MEDIAN_EFF = math.sqrt(math.pi / 2)
#: Tolerances are this many standard errors (derived from the design).
N_SE = 4.0


# ------------------------------------------------------------------------------------------
# the config a claim case is built under
# ------------------------------------------------------------------------------------------

class CK:
    """The thresholds a claim case is built under: accuracy levels that sit below the user's
    grok and memorization thresholds, and whether intervals have a lower end."""

    def __init__(self, cfg: AuditConfig) -> None:
        self.cfg = cfg

    @property
    def acc_low(self) -> float:
        """test_acc before grokking: below the grok threshold (and below ``0.6·g``)."""
        return min(0.05, 0.3 * float(self.cfg.grok_threshold))

    @property
    def train_low(self) -> float:
        """train_acc before memorization: below the memorization threshold."""
        return min(0.5, 0.5 * float(self.cfg.mem_threshold))

    @property
    def interval(self) -> bool:
        return bool(self.cfg.interval_censoring)


# ------------------------------------------------------------------------------------------
# simulated runs and the plain oracles
# ------------------------------------------------------------------------------------------

def grid(every: int, budget: int, *, coarse_after: int | None = None,
         coarse: int = 100) -> np.ndarray:
    """Logged steps ``0, every, … ≤ budget`` (every ``coarse`` steps after ``coarse_after``)."""
    if coarse_after is None:
        return np.arange(0, budget + 1, every, dtype=np.int64)
    fine = np.arange(0, coarse_after, every, dtype=np.int64)
    return np.concatenate((fine, np.arange(coarse_after, budget + 1, coarse, dtype=np.int64)))


@dataclass(frozen=True)
class SimRun:
    """One simulated run: its conditions, true event times (``inf``: never), its logging grid,
    an optional plateau of test_acc before grokking, and per-step signals."""

    run: str
    conditions: Mapping[str, Any]
    t_grok: float
    t_mem: float
    steps: np.ndarray
    plateau: tuple[float, float] | None = None  #: (true time, test_acc level) before grok
    series: Mapping[str, Callable[[np.ndarray], np.ndarray]] = field(default_factory=dict)

    @property
    def last(self) -> int:
        return int(self.steps[-1])

    def seen(self, t: float) -> float:
        """The first logged step at or after ``t`` (``inf`` when the log ends first)."""
        if not math.isfinite(t):
            return math.inf
        i = int(np.searchsorted(self.steps, t, side="left"))
        return float(self.steps[i]) if i < self.steps.size else math.inf

    def before(self, t: float) -> float:
        """The logged step before the one where ``t`` is first seen (the interval's lower
        end); the last logged step when ``t`` is never seen."""
        s = self.seen(t)
        if math.isinf(s):
            return float(self.last)
        i = int(np.searchsorted(self.steps, s, side="left"))
        return float(self.steps[i - 1]) if i > 0 else 0.0

    @property
    def tg(self) -> float:
        """The logged grok step (``inf``: censored)."""
        return self.seen(self.t_grok)

    @property
    def tm(self) -> float:
        return self.seen(self.t_mem)

    def rows(self, k: CK) -> dict[str, np.ndarray]:
        s = self.steps.astype(float)
        acc = np.full(s.shape, k.acc_low)
        if self.plateau is not None:
            acc = np.where(s >= self.plateau[0], self.plateau[1], acc)
        acc = np.where(s >= self.t_grok, 1.0, acc)
        out = {"step": self.steps, "test_acc": acc,
               "train_acc": np.where(s >= self.t_mem, 1.0, k.train_low)}
        for name, fn in self.series.items():
            out[name] = np.asarray(fn(s), dtype=float)
        return out


def log_table(runs: Sequence[SimRun], k: CK) -> pd.DataFrame:
    """The canonical table of ``runs`` (rows by run, then step)."""
    parts = [r.rows(k) for r in runs]
    n = [p["step"].size for p in parts]
    d: dict[str, Any] = {"run": np.repeat([r.run for r in runs], n)}
    for col in parts[0]:
        d[col] = np.concatenate([p[col] for p in parts])
    for col in runs[0].conditions:
        d[col] = np.repeat([r.conditions[col] for r in runs], n)
    out: pd.DataFrame = pd.DataFrame(d)
    return out


def plain_median(runs: Sequence[SimRun], k: CK, what: str = "t_grok") -> dict[str, Any]:
    """The documented cell median of the logged ``t_grok`` (or gap ``t_grok − t_mem``): the
    interval ``[median(L), median(U)]`` with the median of the logged values (censored runs
    ranked last); only the lower bound when half or more of the runs are censored. Without
    interval censoring: the median of the uncensored values. A plain transcription of
    docs/claims.md ("Medians"), sharing no code with the audit."""
    lows, ups, vals = [], [], []
    for r in runs:
        # a grok first seen at logged step s happened in (the step before s, s]; without
        # interval censoring the interval is the point s. Never seen: (last step, ∞).
        g_lo = r.before(r.t_grok) if k.interval or math.isinf(r.tg) else r.tg
        m_lo = r.before(r.t_mem) if k.interval else r.tm
        if what == "t_grok":
            v, lo, up = r.tg, g_lo, r.tg
        else:  # gap = t_grok − t_mem, by interval arithmetic
            v, lo, up = r.tg - r.tm, g_lo - r.tm, r.tg - m_lo
        lows.append(lo)
        ups.append(up)
        vals.append(v)
    n_c = sum(math.isinf(u) for u in ups)
    if not k.interval:
        pts = [u for u in ups if math.isfinite(u)]
        if not pts:
            return {"censored": True, "value": None, "lower": float(np.median(lows))}
        v = float(np.median(pts))
        return {"censored": False, "value": v, "lower": v, "upper": v}
    if 2 * n_c >= len(runs):
        return {"censored": True, "value": None, "lower": float(np.median(lows))}
    return {"censored": False, "value": float(np.median(vals)), "lower": float(np.median(lows)),
            "upper": float(np.median(ups))}


def median_fields(prefix: str, med: Mapping[str, Any]) -> dict[str, Any]:
    """``{prefix.censored: …, prefix.value: …, prefix.lower: …}`` from :func:`plain_median`."""
    return {f"{prefix}.{key}": v for key, v in med.items()}


def slope_se(x: Sequence[float] | np.ndarray, sd: float) -> float:
    """The standard error of a least-squares slope on ``x`` with residual sd ``sd``."""
    a = np.asarray(x, dtype=float)
    return float(sd / math.sqrt(float(np.sum((a - a.mean()) ** 2))))


def covers(prefix: str, truth: float, slack: float) -> dict[str, Any]:
    """An interval at ``prefix`` (``.low``, ``.high``) that covers ``truth`` to within
    ``slack`` (a few of the design's standard errors: a 95% interval misses the truth 1 time in
    20 by a hair, but by a standard error only when its estimate is about 3 off — 1 in 300)."""
    return {f"{prefix}.low": Between(hi=truth + slack),
            f"{prefix}.high": Between(lo=truth - slack)}


# ------------------------------------------------------------------------------------------
# the expectation of one claim command
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class StudyCheck:
    """What must hold in one study (``key``: its ``--cell`` values, ``{}`` without ``--cell``):
    ``fields`` maps a path into the study's body (``aft.family``, ``comparison.0.aft.low``,
    ``fits.0.params.alpha``) to the expected value; codes that must (not) be among the
    study's findings."""

    key: Mapping[str, Any] = field(default_factory=dict)
    fields: Mapping[str, Any] = field(default_factory=dict)
    present: frozenset[Reason] = frozenset()
    absent: frozenset[Reason] = frozenset()


@dataclass(frozen=True)
class ClaimCheck:
    """One claim command on the case's log (``command`` with ``kwargs``, as the CLI passes
    them) and its pre-registered answer: an input error (exit 2), or the exit code, codes that
    must (not) appear, each study's fields, evidence of a finding, and what the text report
    must (not) print."""

    command: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    present: frozenset[Reason] = frozenset()
    absent: frozenset[Reason] = frozenset()
    exit_code: int | None = None
    error: str | None = None  #: expected LogFormatError code (the CLI exits 2)
    n_studies: int | None = None
    studies: tuple[StudyCheck, ...] = ()
    evidence: Mapping[Reason, Mapping[str, Any]] = field(default_factory=dict)
    printed: tuple[str, ...] = ()  #: substrings the text report must contain
    not_printed: tuple[str, ...] = ()  #: … and must not

    @property
    def label(self) -> str:
        if self.error:
            return f"error:{self.error}"
        word = f"exit {self.exit_code}" if self.exit_code is not None else "result"
        return " ".join([word, *sorted(c.value for c in self.present)])

    def got_label(self, result: Any, error: LogFormatError | None) -> str:
        """What the audit said, in the terms of the label: the exit code and the codes this
        check names (present or absent)."""
        if error is not None:
            return f"error:{error.code.value}"
        named = self.present | self.absent
        return " ".join([f"exit {result.exit_code}",
                         *sorted(c.value for c in result.codes & named)])


def _fs(*codes: Reason) -> frozenset[Reason]:
    return frozenset(codes)


def run_check(check: ClaimCheck, table: pd.DataFrame, cfg: AuditConfig
              ) -> tuple[Any, LogFormatError | None]:
    """Run one claim command through its Python API; the input error instead of a result
    when the audit refuses the log."""
    mod, fn = COMMANDS[check.command]
    run = getattr(importlib.import_module(mod), fn)
    try:
        return run(table, cfg, **dict(check.kwargs)), None
    except LogFormatError as exc:
        return None, exc


def compare_check(check: ClaimCheck, result: Any, error: LogFormatError | None) -> list[str]:
    """Every way the result (or the error raised instead) departs from ``check``."""
    where = f"{check.command}: "
    if check.error is not None:
        if error is None:
            return [f"{where}expected input error {check.error}, got a result "
                    f"(exit {result.exit_code})"]
        if error.code.value != check.error:
            return [f"{where}expected input error {check.error}, got {error.code.value}"]
        return []
    if error is not None:
        return [f"{where}unexpected input error {error.code.value}: {error}"]
    bad: list[str] = []
    codes = result.codes
    bad += [f"{where}missing code {c.value}" for c in sorted(check.present - codes,
                                                             key=lambda r: r.value)]
    bad += [f"{where}unexpected code {c.value}" for c in sorted(check.absent & codes,
                                                                key=lambda r: r.value)]
    if check.exit_code is not None and result.exit_code != check.exit_code:
        bad.append(f"{where}exit_code {result.exit_code} != {check.exit_code}")
    if check.n_studies is not None and len(result.studies) != check.n_studies:
        bad.append(f"{where}{len(result.studies)} studies, expected {check.n_studies}")
    for sc in check.studies:
        study = next((s for s in result.studies if dict(s.study) == dict(sc.key)), None)
        at = f"{where}study {dict(sc.key)}: " if sc.key else where
        if study is None:
            bad.append(f"{at}no such study")
            continue
        for path, want in sc.fields.items():
            try:
                got = get_path(study.body, path)
            except AttributeError:
                bad.append(f"{at}{path}: no such field")
                continue
            if not _eq(want, got):
                bad.append(f"{at}{path} = {got!r}, expected {want!r}")
        s_codes = {f.code for f in result.findings if dict(f.study) == dict(sc.key)}
        bad += [f"{at}missing code {c.value}" for c in sorted(sc.present - s_codes,
                                                              key=lambda r: r.value)]
        bad += [f"{at}unexpected code {c.value}" for c in sorted(sc.absent & s_codes,
                                                                 key=lambda r: r.value)]
    for code, ev in check.evidence.items():
        found = [f for f in result.findings if f.code is code]
        if not any(all(_eq(w, f.evidence.get(k_)) for k_, w in ev.items()) for f in found):
            got_ev = [{k_: f.evidence.get(k_) for k_ in ev} for f in found]
            bad.append(f"{where}{code.value} evidence {got_ev}, expected {dict(ev)}")
    if check.printed or check.not_printed:
        from grokaudit.claims.render import render_text

        text = render_text(result)
        bad += [f"{where}the report does not print {s!r}" for s in check.printed
                if s not in text]
        bad += [f"{where}the report prints {s!r}" for s in check.not_printed if s in text]
    return bad


# ------------------------------------------------------------------------------------------
# cases
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ClaimInstance:
    """A claim case built under one config: the log, the checks, the config they run with."""

    case: ClaimCase
    cfg: AuditConfig
    table: pd.DataFrame
    checks: tuple[ClaimCheck, ...]
    notes: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        labels = list(dict.fromkeys(c.label for c in self.checks))
        return labels[0] if len(labels) == 1 else " | ".join(labels)


@dataclass(frozen=True)
class ClaimCase:
    """A named simulated log, the claim commands run on it and what a correct audit says."""

    name: str
    title: str  #: one line: the simulated truth
    why: str  #: what a careless audit would claim, and why the expectation is right
    make: Callable[[CK], tuple[pd.DataFrame, tuple[ClaimCheck, ...]]]

    def config(self, cfg: AuditConfig | None = None) -> AuditConfig:
        """The user's config (default: the defaults) with the cases' own design fields."""
        cfg = make_config() if cfg is None else cfg
        return replace_config(cfg, **DESIGN_DEFAULTS)

    def instance(self, cfg: AuditConfig | None = None) -> ClaimInstance:
        c = self.config(cfg)
        df, checks = self.make(CK(c))
        return ClaimInstance(self, c, df, checks)

    def commands(self, cfg: AuditConfig | None = None) -> str:
        return ",".join(dict.fromkeys(c.command for c in self.instance(cfg).checks))


# -- onset --------------------------------------------------------------------------------

H_LEVELS = (1, 2, 4, 8, 16)
ONSET_T0, ONSET_SLOPE = 300.0, 1.0


def _onset_runs(family: str, sigma: float, n_seeds: int, seed: int, every: int,
                budget: int | None = None) -> tuple[list[SimRun], np.ndarray]:
    """``log t_grok = log 300 + 1.0·log H + σ·W`` (``W`` of ``family``), H = 1…16, memorization
    at a uniform step in (20, 60). Every run is logged to ``budget``; without one, each run
    stops a while after it groks (at 1.25·t_grok + 100: early stopping), so none is censored."""
    rng = np.random.default_rng(seed)
    H = np.repeat(H_LEVELS, n_seeds)
    draw = weibull_times if family == "weibull" else lognormal_times
    T = draw(np.log(ONSET_T0) + ONSET_SLOPE * np.log(H), sigma, rng)
    tm = rng.uniform(20.0, 60.0, H.size)
    shared = None if budget is None else grid(every, budget)

    def steps(t: float) -> np.ndarray:
        return shared if shared is not None else grid(every, int(1.25 * t + 100))

    runs = [SimRun(f"H={int(h)}/s{i % n_seeds}", {"H": int(h), "seed": i % n_seeds},
                   float(t), float(m), steps(float(t)))
            for i, (h, t, m) in enumerate(zip(H, T, tm))]
    return runs, np.log(H.astype(float))


def _onset_cells(runs: Sequence[SimRun], k: CK, gap: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, h in enumerate(H_LEVELS):
        cell = [r for r in runs if r.conditions["H"] == h]
        out[f"cells.{i}.n_runs"] = len(cell)
        out[f"cells.{i}.n_grokked"] = sum(math.isfinite(r.tg) for r in cell)
        out.update(median_fields(f"cells.{i}.t_grok_median", plain_median(cell, k)))
        if gap:
            out.update(median_fields(f"cells.{i}.gap_median", plain_median(cell, k, "gap")))
    return out


def _onset_uncensored(family: str, sigma: float, n_seeds: int, seed: int, every: int
                      ) -> Callable[[CK], tuple[pd.DataFrame, tuple[ClaimCheck, ...]]]:
    def make(k: CK) -> tuple[pd.DataFrame, tuple[ClaimCheck, ...]]:
        runs, x = _onset_runs(family, sigma, n_seeds, seed, every)
        se = slope_se(x, sigma * SD_W[family])
        fields = {
            "aft.family": family, "n_runs": len(runs),
            "ols.n_left_out": 0, "ols.n_runs": len(runs), "aft.n_runs": len(runs),
            "comparison.0.term": "log_H",
            "comparison.0.aft.estimate": Approx(ONSET_SLOPE, N_SE * se),
            **covers("comparison.0.aft", ONSET_SLOPE, se),
            "aft.fit.sigma": Approx(sigma, N_SE * sigma / math.sqrt(2 * len(runs))),
            # nothing was left out of OLS: the survivorship test is not run at all
            "comparison.0.survivorship_bias": None, "comparison.0.difference": None,
            "comparison.0.left_out_effect": None,
            **_onset_cells(runs, k),
        }
        return log_table(runs, k), (ClaimCheck(
            "onset", {"by": ["H"], "n_resamples": 49},
            absent=_fs(R.SURVIVORSHIP_BIAS, R.TOO_FEW_RUNS, R.FIT_FAILED), exit_code=0,
            studies=(StudyCheck(fields=fields),)),)
    return make


ONSET_LOGNORMAL = ClaimCase(
    name="onset_lognormal_uncensored",
    title="log t_grok = log 300 + 1.0·log H + 0.4·Z (log-normal), 5 sizes × 200 seeds, "
          "every run grokked; logged every 20 steps",
    why=("Nothing is censored, so OLS leaves nothing out and there is no survivorship to "
         "test: an audit that flags SURVIVORSHIP_BIAS because OLS and an AFT differ (they do: "
         "OLS reads the logged step, the AFT the interval) calls an estimator difference "
         "survivorship. AIC must pick the log-normal error (the truth), the AFT exponent must "
         "cover 1.0, and each cell's median gap is the median of the runs' logged gaps."),
    make=_onset_uncensored("lognormal", 0.4, 200, 0, 20),
)

ONSET_WEIBULL = ClaimCase(
    name="onset_weibull_uncensored",
    title="log t_grok = log 300 + 1.0·log H + 0.4·W (Weibull), 5 sizes × 20 seeds, every run "
          "grokked; logged every 20 steps",
    why=("The same design with Weibull errors: AIC must choose the Weibull family, the "
         "exponent must cover 1.0, and with nothing left out there is no survivorship test."),
    make=_onset_uncensored("weibull", 0.4, 20, 0, 20),
)


def _ols_on_survivors(family: str, sigma: float, n_seeds: int, every: int, budget: int,
                      reps: int = 300, seed: int = 12345) -> tuple[float, float]:
    """Mean and sd of the OLS slope of log(logged t_grok) on log H over the runs that grok
    within ``budget``, by plain Monte-Carlo of the same truth (numpy only)."""
    rng = np.random.default_rng(seed)
    H = np.repeat(H_LEVELS, n_seeds).astype(float)
    x = np.log(H)
    draw = weibull_times if family == "weibull" else lognormal_times
    slopes = []
    for _ in range(reps):
        T = draw(np.log(ONSET_T0) + ONSET_SLOPE * x, sigma, rng)
        seen = np.ceil(T / every) * every
        ok = seen <= budget
        slopes.append(float(np.polyfit(x[ok], np.log(seen[ok]), 1)[0]))
    return float(np.mean(slopes)), float(np.std(slopes))


def _onset_censored(k: CK) -> tuple[pd.DataFrame, tuple[ClaimCheck, ...]]:
    sigma, n_seeds, every, budget = 0.5, 20, 50, 3000
    runs, x = _onset_runs("weibull", sigma, n_seeds, 0, every, budget)
    n_cens = sum(math.isinf(r.tg) for r in runs)
    ols_mean, ols_sd = _ols_on_survivors("weibull", sigma, n_seeds, every, budget)
    # with censoring the AFT slope is less precise than with full times: 1.5× the SE
    se = 1.5 * slope_se(x, sigma * SD_W["weibull"])
    # (which family AIC picks is not asserted here: with a fifth of the runs censored the
    # Weibull wins only about 9 times in 10; the survivorship test uses whichever it picks)
    fields = {
        "ols.n_left_out": n_cens, "ols.n_runs": len(runs) - n_cens,
        "comparison.0.aft.estimate": Approx(ONSET_SLOPE, N_SE * se),
        **covers("comparison.0.aft", ONSET_SLOPE, se),
        # OLS on the survivors is pulled down by what the budget cut off
        "comparison.0.ols.estimate": Approx(ols_mean, N_SE * ols_sd),
        "comparison.0.survivorship_bias": True,
        "comparison.0.difference.high": Between(hi=0.0),
        "comparison.0.left_out_effect.high": Between(hi=0.0),
        **_onset_cells(runs, k, gap=False),
    }
    return log_table(runs, k), (ClaimCheck(
        "onset", {"by": ["H"], "n_resamples": 49}, present=_fs(R.SURVIVORSHIP_BIAS),
        exit_code=1, studies=(StudyCheck(fields=fields),),
        evidence={R.SURVIVORSHIP_BIAS: {"term": "log_H", "n_left_out": n_cens}}),)


ONSET_CENSORED = ClaimCase(
    name="onset_censored_weibull",
    title="log t_grok = log 300 + 1.0·log H + 0.5·W (Weibull), 5 sizes × 20 seeds, budget "
          "3000 steps: the large sizes are partly (H = 16: mostly) censored",
    why=("OLS on the runs that grokked keeps only the fast runs of the slow cells and "
         "underestimates the exponent (by what a plain simulation of the same truth gives, "
         "about 0.25); the censored AFT recovers 1.0. The gap is survivorship: runs were left "
         "out and the AFT refitted on the survivors moves the same way — SURVIVORSHIP_BIAS "
         "(critical, exit 1), and a cell whose median is censored is only a bound."),
    make=_onset_censored,
)


def _onset_threshold(k: CK) -> tuple[pd.DataFrame, tuple[ClaimCheck, ...]]:
    g = k.cfg.grok_threshold
    t_lo, level = round(0.6 * g, 9), 0.7 * g
    rng = np.random.default_rng(3)
    n, every = 8, 20
    steps = grid(every, 7000)
    z = rng.normal(0.0, 0.05, (3, n))
    runs = [SimRun(f"H=1/s{i}", {"H": 1, "seed": i}, 5000.0 * math.exp(z[0, i]),
                   float(rng.uniform(100, 200)), steps,
                   plateau=(1000.0 * math.exp(z[1, i]), level)) for i in range(n)]
    runs += [SimRun(f"H=2/s{i}", {"H": 2, "seed": i}, 3000.0 * math.exp(z[2, i]),
                    float(rng.uniform(100, 200)), steps) for i in range(n)]
    h1, h2 = runs[:n], runs[n:]
    early = [SimRun(r.run, r.conditions, r.plateau[0], r.t_mem, r.steps)  # type: ignore[index]
             for r in h1]
    fields = {
        # at the user's threshold the plateau does not count: H = 1 groks at ~5000
        "cells.0.t_grok_median.value": plain_median(h1, k)["value"],
        "cells.1.t_grok_median.value": plain_median(h2, k)["value"],
        "threshold_sensitivity.0.grok_threshold": t_lo,
        "threshold_sensitivity.0.cells.0.t_grok_median.value": plain_median(early, k)["value"],
        "threshold_sensitivity.0.cells.1.t_grok_median.value": plain_median(h2, k)["value"],
        "threshold_sensitivity.0.aft_exponents.log_H": Between(lo=0.0),
        "threshold_sensitivity.1.grok_threshold": g,
        "threshold_sensitivity.1.cells.0.t_grok_median.value": plain_median(h1, k)["value"],
        "threshold_sensitivity.1.aft_exponents.log_H": Between(hi=0.0),
    }
    return log_table(runs, k), (ClaimCheck(
        "onset", {"by": ["H"], "thresholds": (t_lo, g), "n_resamples": 49},
        present=_fs(R.THRESHOLD_SENSITIVE), absent=_fs(R.SURVIVORSHIP_BIAS), exit_code=0,
        studies=(StudyCheck(fields=fields),),
        evidence={R.THRESHOLD_SENSITIVE: {
            "exponent_sign_changes": ["log_H"],
            "ordering_flips": [{"cells": [{"H": 1}, {"H": 2}]}]}}),)


ONSET_THRESHOLD = ClaimCase(
    name="onset_threshold_sensitive",
    title="H = 1 reaches a test_acc plateau of 0.7·g at ~1000 and 1.0 at ~5000; H = 2 jumps to "
          "1.0 at ~3000 (g: your grok_threshold); thresholds 0.6·g and g",
    why=("At 0.6·g the small model groks first (1000 < 3000) and the exponent of H is "
         "positive; at g it groks last (5000 > 3000) and the exponent is negative. A scaling "
         "claim that flips with the threshold is THRESHOLD_SENSITIVE, with both the sign "
         "change and the cell ordering flip named."),
    make=_onset_threshold,
)


# -- dose ---------------------------------------------------------------------------------

def _dose_runs(xs: Sequence[float], n_seeds: int, ln_t: Callable[[float], float],
               sigma: float, seed: int, steps: np.ndarray, never: Iterable[float] = (),
               axis: str = "rho", extra: Mapping[str, Any] | None = None,
               prefix: str = "") -> list[SimRun]:
    """``ln t_grok = ln_t(x) + N(0, σ)`` per run; no run of a dose in ``never`` groks."""
    rng = np.random.default_rng(seed)
    nv = set(never)
    out = []
    for x in xs:
        for s in range(n_seeds):
            e = float(rng.normal(0.0, sigma))
            t = math.inf if x in nv else math.exp(ln_t(x) + e)
            out.append(SimRun(f"{prefix}{axis}={x:g}/s{s}", {**(extra or {}), axis: x,
                                                             "seed": s},
                              t, float(rng.uniform(20, 60)), steps))
    return out


def _alpha_tol(xs: Sequence[float], sigma: float, n_seeds: int, rel_grid: float) -> float:
    """N_SE standard errors of a slope fitted to cell medians of ``n_seeds`` runs with
    log-normal noise ``sigma``, plus the largest rounding of a logged step (relative)."""
    return N_SE * slope_se(xs, MEDIAN_EFF * sigma / math.sqrt(n_seeds)) + 2 * rel_grid


def _dose_exponential(k: CK) -> tuple[pd.DataFrame, tuple[ClaimCheck, ...]]:
    xs, n, sigma, alpha = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0), 5, 0.05, 1.0
    steps = grid(5, 6000)
    runs = _dose_runs(xs, n, lambda x: math.log(200) + alpha * x, sigma, 0, steps)
    tol = _alpha_tol(xs, sigma, n, 5 / (200 * math.exp(0.5)))
    fields = {"best": "exponential", "identified": True, "fit_cells": xs,
              "key_parameter.name": "alpha",
              "key_parameter.ci.estimate": Approx(alpha, tol),
              # a percentile bootstrap over 5 seeds per cell is narrow: within half the
              # estimate's tolerance (two standard errors)
              **covers("key_parameter.ci", alpha, tol / 2),
              "fits.0.model": "exponential", "fits.0.params.alpha": Approx(alpha, tol)}
    for i, x in enumerate(xs):
        cell = [r for r in runs if r.conditions["rho"] == x]
        fields.update(median_fields(f"cells.{i}.median_t_grok", plain_median(cell, k)))
    return log_table(runs, k), (ClaimCheck(
        "dose", {"by": "rho", "n_resamples": 99},
        absent=_fs(R.MODELS_INDISTINGUISHABLE, R.LAW_CONTRADICTED, R.MEDIAN_CENSORED,
                   R.TOO_FEW_CELLS),
        exit_code=0, studies=(StudyCheck(fields=fields),)),)


DOSE_EXPONENTIAL = ClaimCase(
    name="dose_exponential",
    title="ln t_grok = ln 200 + 1.0·rho + N(0, 0.05), rho = 0.5…3 (6 cells × 5 seeds)",
    why=("Over a wide dose range the exponential law is a straight line in ln T while the "
         "power law and the saddle-node bend: the exponential must win, be identified, and "
         "recover α = 1.0 inside its bootstrap interval."),
    make=_dose_exponential,
)


def _dose_indistinguishable(k: CK) -> tuple[pd.DataFrame, tuple[ClaimCheck, ...]]:
    xs, n, sigma, alpha = (1.0, 1.05, 1.1, 1.15, 1.2, 1.25, 1.3), 5, 0.1, 0.3
    steps = grid(2, 3000)
    runs = _dose_runs(xs, n, lambda x: math.log(500) + alpha * x, sigma, 0, steps)
    # over so narrow a range every law is a straight line in ln T to within its curvature
    # (the power law bends by about α/x·Δ²/8 ≈ 0.003, the saddle-node by 2α²·Δ²/8 ≈ 0.002),
    # far below the sd of a cell median (1.25·0.1/√5 ≈ 0.056): AICc cannot tell them apart
    return log_table(runs, k), (ClaimCheck(
        "dose", {"by": "rho", "n_resamples": 99}, present=_fs(R.MODELS_INDISTINGUISHABLE),
        absent=_fs(R.LAW_CONTRADICTED, R.TOO_FEW_CELLS), exit_code=1,
        studies=(StudyCheck(fields={"identified": False, "fit_cells": xs}),)),)


DOSE_INDISTINGUISHABLE = ClaimCase(
    name="dose_indistinguishable",
    title="ln t_grok = ln 500 + 0.3·rho + N(0, 0.1) over rho = 1.0…1.3 (7 cells × 5 seeds)",
    why=("Over so narrow a dose range the three laws differ by less than the noise of a "
         "cell median: whichever wins does so by ΔAICc < 2. Calling it a law is the error; "
         "MODELS_INDISTINGUISHABLE (critical) and no identified law."),
    make=_dose_indistinguishable,
)


def _dose_contradicted(k: CK) -> tuple[pd.DataFrame, tuple[ClaimCheck, ...]]:
    xs, n, sigma, budget = (0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5), 5, 0.03, 20000
    steps = grid(5, budget, coarse_after=6000)
    runs = _dose_runs(xs, n, lambda x: math.log(100) + 2.0 * x, sigma, 0, steps, never=(2.5,))
    fit = xs[:-1]
    # the true exponential law at 2.5, and how far its extrapolation may wander
    pred = 100 * math.exp(2.0 * 2.5)
    se = MEDIAN_EFF * sigma / math.sqrt(n) * math.sqrt(
        1 / len(fit) + (2.5 - float(np.mean(fit))) ** 2 / float(np.sum((np.subtract(
            fit, np.mean(fit))) ** 2)))
    ptol = pred * (math.exp(N_SE * se + 0.02) - 1)
    cens = [r for r in runs if r.conditions["rho"] == 2.5]
    bound = plain_median(cens, k)["lower"]  # the last logged step: the median exceeds it
    fields = {"best": "exponential", "identified": False, "fit_cells": fit,
              "cells.7.left_out": "censored", "cells.7.median_t_grok.censored": True,
              "cells.7.median_t_grok.lower": bound, "cells.7.median_ci": None,
              "fits.0.model": "exponential",
              "fits.0.censored_checks.0.x": 2.5,
              "fits.0.censored_checks.0.bound": bound,
              "fits.0.censored_checks.0.predicted": Approx(pred, ptol),
              "fits.0.censored_checks.0.predicted_high": Between(hi=bound),
              "fits.0.censored_checks.0.contradicted": True,
              "fits.0.params.alpha": Approx(2.0, _alpha_tol(fit, sigma, n, 0.02))}
    return log_table(runs, k), (ClaimCheck(
        "dose", {"by": "rho", "n_resamples": 99},
        present=_fs(R.LAW_CONTRADICTED, R.MEDIAN_CENSORED), exit_code=1,
        studies=(StudyCheck(fields=fields),)),)


DOSE_CONTRADICTED = ClaimCase(
    name="dose_law_contradicted",
    title="ln t_grok = ln 100 + 2·rho up to rho = 2; no run groks at rho = 2.5 within 20 000 "
          "steps",
    why=("The censored cell is left out of the fits, and on the others the exponential law "
         "wins by a wide margin. But it predicts a median of about 15 000 steps at 2.5 for a "
         "cell whose median is known to exceed 20 000: the data it left out contradict it "
         "(LAW_CONTRADICTED, critical). Fitting the censored cell at its bound, or not "
         "checking it, calls the law confirmed."),
    make=_dose_contradicted,
)


# -- transition ---------------------------------------------------------------------------

def _transition_runs(levels: Sequence[float], counts: Sequence[int], n: int, seed: int,
                     steps: np.ndarray, t_of: Callable[[float], float]) -> list[SimRun]:
    """``counts[j]`` of the ``n`` runs at ``levels[j]`` grok (the first seeds), at
    ``t_of(λ)·exp(N(0, 0.1))``; the others never do within the log."""
    rng = np.random.default_rng(seed)
    out = []
    for lv, c in zip(levels, counts):
        for s in range(n):
            t = t_of(lv) * math.exp(float(rng.normal(0.0, 0.1))) if s < c else math.inf
            out.append(SimRun(f"wd={lv:g}/s{s}", {"wd": lv, "seed": s}, t,
                              float(rng.uniform(20, 60)), steps))
    return out


def _logistic_counts(levels: Sequence[float], lam_c: float, slope: float, n: int
                     ) -> list[int]:
    """The expected number of grokking runs per level, rounded: ``n·P(λ)`` with
    ``P(λ) = 1/(1 + exp(−slope·ln(λ/λ_c)))``."""
    return [int(round(n / (1 + math.exp(-slope * math.log(lv / lam_c))))) for lv in levels]


def _transition_separated(k: CK) -> tuple[pd.DataFrame, tuple[ClaimCheck, ...]]:
    levels = (0.1, 0.2, 0.5, 1.0, 2.0, 4.0)
    n = 6
    runs = _transition_runs(levels, [0, 0, n, n, n, n], n, 0, grid(10, 4000),
                            lambda lv: 400 * (lv - 0.3) ** -0.5)
    fields = {"boundary.separation": "complete", "boundary.lambda_c": None,
              "boundary.ci": None, "boundary.bracket": (0.2, 0.5),
              "boundary.grok_side": "above", "boundary.levels_below": 2,
              "boundary.levels_above": 4, "power_law.nu": None, "power_law.nu_ci": None,
              "levels.0.phase": "memorization", "levels.2.phase": "grokking"}
    return log_table(runs, k), (ClaimCheck(
        "transition", {"by": "wd", "n_resamples": 99}, present=_fs(R.TRANSITION_SEPARATED),
        absent=_fs(R.TOO_FEW_LEVELS, R.NO_TRANSITION, R.INSUFFICIENT_BUDGET), exit_code=0,
        studies=(StudyCheck(fields=fields),)),)


TRANSITION_SEPARATED = ClaimCase(
    name="transition_separated",
    title="no run groks at wd = 0.1, 0.2; every run groks from 0.5 on (6 levels × 6 seeds)",
    why=("The levels are perfectly separated: the logistic likelihood has no maximum and any "
         "λ_c in (0.2, 0.5) fits as well as any other. A point λ_c (the ridge's geometric "
         "mean) with a bootstrap interval is an optimizer artefact: only the bracket, no "
         "point, no interval, no ν (TRANSITION_SEPARATED)."),
    make=_transition_separated,
)


def _transition_logistic(k: CK) -> tuple[pd.DataFrame, tuple[ClaimCheck, ...]]:
    lam_c, slope, n = 0.7, 3.0, 12
    levels = tuple(round(lam_c * 2 ** (j / 2), 4) for j in range(-4, 4))
    counts = _logistic_counts(levels, lam_c, slope, n)
    runs = _transition_runs(levels, counts, n, 1, grid(10, 5000),
                            lambda lv: 500 * lv ** -0.5)
    fields = {"boundary.separation": "none", "boundary.bracket": None,
              "boundary.lambda_c": Approx(lam_c, 0.15 * lam_c),
              **covers("boundary.ci", lam_c, 0.0), "boundary.grok_side": "above",
              **{f"levels.{j}.grok_rate.k": c for j, c in enumerate(counts)}}
    return log_table(runs, k), (ClaimCheck(
        "transition", {"by": "wd", "n_resamples": 99},
        absent=_fs(R.TRANSITION_SEPARATED, R.TOO_FEW_LEVELS, R.NO_TRANSITION,
                   R.INSUFFICIENT_BUDGET),
        exit_code=0, studies=(StudyCheck(fields=fields),)),)


TRANSITION_LOGISTIC = ClaimCase(
    name="transition_logistic",
    title="P(grok) = logistic(3·ln(wd/0.7)), 8 levels 0.175…1.98 × 12 seeds (the expected "
          "counts, rounded): outcomes overlap",
    why=("With overlapping outcomes the logistic MLE exists: λ_c is a point with a bootstrap "
         "interval, and the interval must cover the true 0.7; no separation, enough levels on "
         "both sides."),
    make=_transition_logistic,
)


def _transition_few(k: CK) -> tuple[pd.DataFrame, tuple[ClaimCheck, ...]]:
    levels, n = (0.35, 0.7, 1.4), 8
    counts = _logistic_counts(levels, 0.7, 2.0, n)  # 2, 4, 6 of 8: overlapping
    runs = _transition_runs(levels, counts, n, 2, grid(10, 5000),
                            lambda lv: 500 * lv ** -0.5)
    return log_table(runs, k), (ClaimCheck(
        "transition", {"by": "wd", "n_resamples": 99}, present=_fs(R.TOO_FEW_LEVELS),
        absent=_fs(R.TRANSITION_SEPARATED), exit_code=1,
        studies=(StudyCheck(fields={"boundary.separation": "none"}),),
        evidence={R.TOO_FEW_LEVELS: {"n_levels": 3, "what": "transition"}}),)


TRANSITION_TOO_FEW_LEVELS = ClaimCase(
    name="transition_too_few_levels",
    title="P(grok) = logistic(2·ln(wd/0.7)) at 3 levels (0.35, 0.7, 1.4) × 8 seeds",
    why=("Three levels cannot bracket a transition with two on each side: whatever the fit "
         "says, TOO_FEW_LEVELS (critical, exit 1)."),
    make=_transition_few,
)


# -- compare ------------------------------------------------------------------------------

ARMS = ("adamw", "cv_adamw")


def _pairs(a_times: Sequence[float] | np.ndarray, b_times: Sequence[float] | np.ndarray,
           steps: np.ndarray) -> list[SimRun]:
    out = []
    for arm, times in zip(ARMS, (a_times, b_times)):
        for s, t in enumerate(times):
            out.append(SimRun(f"{arm}/s{s}", {"method": arm, "seed": s}, float(t),
                              150.0 + 10 * s, steps))
    return out


def _d(runs: Sequence[SimRun], n: int) -> np.ndarray:
    """Observed differences t_grok(adamw) − t_grok(cv_adamw), pair by pair (logged steps)."""
    return np.array([runs[i].tg - runs[n + i].tg for i in range(n)])


COMPARE_KW = {"by": "method", "pair": "seed", "arms": ARMS}


def _compare_effect(k: CK) -> tuple[pd.DataFrame, tuple[ClaimCheck, ...]]:
    n, effect = 12, 800.0
    rng = np.random.default_rng(0)
    base = rng.uniform(3000, 5000, n)
    runs = _pairs(base, base - effect + rng.uniform(-300, 300, n), grid(10, 6000))
    d = _d(runs, n)
    assert (d > 0).all()  # by construction: |noise| < 300 < 800
    p_all = 2 / 2 ** n  # every difference positive: the most extreme of the 2ⁿ patterns
    fields = {"n_pairs": n, "censored": None, "complete_pairs": None, "tests.n": n,
              "tests.median": float(np.median(d)), "tests.mean": float(np.mean(d)),
              "tests.wilcoxon.p_value": Approx(p_all, 1e-12),
              "tests.sign_flip.p_value": Approx(p_all, 1e-12),
              "tests.cohen_dz": Between(lo=0.0),
              # the mean of 12 uniform(−300, 300) deviations has sd 50: within two of them
              **covers("tests.mean_ci", effect, 100.0),
              "power.min_attainable_p": Approx(p_all, 1e-12)}
    return log_table(runs, k), (ClaimCheck(
        "compare", COMPARE_KW, absent=_fs(R.UNDERPOWERED, R.CENSORED_PAIRS), exit_code=0,
        studies=(StudyCheck(fields=fields),), printed=("Cohen's d_z",)),)


COMPARE_EFFECT = ClaimCase(
    name="compare_paired_effect",
    title="cv_adamw groks 800 ± 300 steps sooner than adamw in each of 12 paired seeds",
    why=("Every difference is positive, so the exact signed-rank and sign-flip tests reach "
         "their smallest p (2/2¹²); twelve pairs are enough (no UNDERPOWERED), nothing is "
         "censored, and the mean difference's interval covers the true 800."),
    make=_compare_effect,
)


def _compare_censored(k: CK) -> tuple[pd.DataFrame, tuple[ClaimCheck, ...]]:
    n_obs, budget = 8, 4500
    rng = np.random.default_rng(1)
    base = rng.uniform(3000, 4200, n_obs)
    a = list(base) + [math.inf, math.inf]  # two adamw runs never grok within the budget
    b = list(base - 1500 + rng.uniform(-200, 200, n_obs)) + list(rng.uniform(3200, 3400, 2))
    n = len(a)
    runs = _pairs(a, b, grid(10, budget))
    # what each pair's difference is known to be: a value, or > last step − t_b
    lo = np.array([runs[i].tg - runs[n + i].tg if math.isfinite(runs[i].tg)
                   else runs[i].last - runs[n + i].tg for i in range(n)])
    hi = np.array([lo[i] if math.isfinite(runs[i].tg) else math.inf for i in range(n)])
    med_lo, med_hi = float(np.median(lo)), float(np.median(hi))
    assert med_lo < med_hi  # the censored bounds lie below the middle: the median is a range
    p_sign = 2 / 2 ** n  # every sign known and positive
    fields = {"n_pairs": n, "tests": None, "complete_pairs.n": n_obs,
              "censored.n_bounded": 2, "censored.n_both_censored": 0,
              "censored.mean_d.value": None, "censored.mean_d.low": float(np.mean(lo)),
              "censored.mean_d.high": None,
              "censored.median_d.value": None, "censored.median_d.low": med_lo,
              "censored.median_d.high": med_hi,
              "censored.sign.n": n, "censored.sign.p_value": Approx(p_sign, 1e-12),
              "power.n": n, "power.test": "sign_exact",
              "pairs.8.kind": "lower_bound", "pairs.8.d.value": None,
              "pairs.8.d.low": float(lo[8]), "pairs.8.sign": 1}
    return log_table(runs, k), (ClaimCheck(
        "compare", COMPARE_KW, present=_fs(R.CENSORED_PAIRS), absent=_fs(R.UNDERPOWERED),
        exit_code=0, studies=(StudyCheck(fields=fields),),
        not_printed=("Cohen's d_z",), printed=("mean d >",)),)


COMPARE_CENSORED = ClaimCase(
    name="compare_censored_pairs",
    title="10 paired seeds, cv_adamw ~1500 steps sooner; two adamw runs never grok within "
          "4500 steps",
    why=("A pair whose adamw run never grokked has only a bound, d > 4500 − t_cv: the mean "
         "difference is a bound, the median a range (the bounds fall below the middle), no "
         "d_z is estimated, and the test is the sign test on the ten known signs. Treating a "
         "bound as a value, or printing the median's upper end as the median, claims a "
         "number the log does not hold."),
    make=_compare_censored,
)


def _compare_few(k: CK) -> tuple[pd.DataFrame, tuple[ClaimCheck, ...]]:
    n = 5
    rng = np.random.default_rng(2)
    base = rng.uniform(3000, 4000, n)
    runs = _pairs(base, base - 1000 + rng.uniform(-200, 200, n), grid(10, 5000))
    p_min = 2 / 2 ** n  # 0.0625 ≥ α = 0.05
    fields = {"n_pairs": n, "tests.wilcoxon.p_value": Approx(p_min, 1e-12),
              "power.min_attainable_p": Approx(p_min, 1e-12), "power.pairs_needed": 6,
              "power.alpha": 0.05}
    return log_table(runs, k), (ClaimCheck(
        "compare", COMPARE_KW, present=_fs(R.UNDERPOWERED), absent=_fs(R.CENSORED_PAIRS),
        exit_code=1, studies=(StudyCheck(fields=fields),)),)


COMPARE_FEW = ClaimCase(
    name="compare_too_few_pairs",
    title="5 paired seeds, cv_adamw ~1000 steps sooner in every one",
    why=("Five positive differences out of five is as extreme as five pairs get, and the "
         "exact two-sided test still cannot go below 2/2⁵ = 0.0625 ≥ 0.05: UNDERPOWERED "
         "(critical), with the 6 pairs that would make α reachable."),
    make=_compare_few,
)


# -- pooled arms ----------------------------------------------------------------------------

POOLED_X = (0.5, 1.0, 1.5, 2.0, 2.5)
POOLED_LAWS = {"mlp": (math.log(200), 1.0), "transformer": (math.log(3000), -0.5)}
POOLED_SEEDS, POOLED_SIGMA = 6, 0.05


def _line(c: float, a: float) -> Callable[[float], float]:
    return lambda x: c + a * x


def _pooled_runs() -> list[SimRun]:
    steps = grid(5, 3000)
    out: list[SimRun] = []
    for j, (arch, (c, a)) in enumerate(POOLED_LAWS.items()):
        out += _dose_runs(POOLED_X, POOLED_SEEDS, _line(c, a), POOLED_SIGMA, 10 + j, steps,
                          extra={"arch": arch}, prefix=f"{arch}/")
    return out


def _pooled_kwargs() -> dict[str, dict[str, Any]]:
    return {"onset": {"by": ["rho"], "n_resamples": 49},
            "dose": {"by": "rho", "n_resamples": 49},
            "transition": {"by": "rho", "n_resamples": 49},
            "compare": {"by": "rho", "pair": "seed", "arms": (1.0, 2.0)}}


def _pooled(k: CK) -> tuple[pd.DataFrame, tuple[ClaimCheck, ...]]:
    runs = _pooled_runs()
    return log_table(runs, k), tuple(
        ClaimCheck(cmd, kw, error="DUPLICATE_AXIS_VALUES") for cmd, kw in _pooled_kwargs().items())


POOLED_ARMS = ClaimCase(
    name="pooled_arms",
    title="two architectures share every rho value (mlp: t_grok grows with rho, transformer: "
          "it falls); no --cell",
    why=("Each command would pool the two arms into one cell per rho and fit one law to two "
         "opposite ones. onset, dose, transition and compare must refuse with "
         "DUPLICATE_AXIS_VALUES (exit 2) and name the column to pass to --cell."),
    make=_pooled,
)


def _pooled_split(k: CK) -> tuple[pd.DataFrame, tuple[ClaimCheck, ...]]:
    runs = _pooled_runs()
    kw = {cmd: {**v, "cell": ("arch",)} for cmd, v in _pooled_kwargs().items()}
    tol = _alpha_tol(POOLED_X, POOLED_SIGMA, POOLED_SEEDS, 5 / (200 * math.exp(0.5)))
    mlp, tf = {"arch": "mlp"}, {"arch": "transformer"}
    a_mlp, a_tf = POOLED_LAWS["mlp"][1], POOLED_LAWS["transformer"][1]
    checks = (
        ClaimCheck("onset", kw["onset"], n_studies=2, absent=_fs(R.SURVIVORSHIP_BIAS),
                   exit_code=0, studies=(
                       StudyCheck(mlp, {"comparison.0.aft.estimate": Between(lo=0.0),
                                        "n_runs": 30}),
                       StudyCheck(tf, {"comparison.0.aft.estimate": Between(hi=0.0),
                                       "n_runs": 30}))),
        ClaimCheck("dose", kw["dose"], n_studies=2, exit_code=0,
                   absent=_fs(R.MEDIAN_CENSORED, R.MODELS_INDISTINGUISHABLE), studies=(
            StudyCheck(mlp, {"fits.0.params.alpha": Approx(a_mlp, tol)}),
            StudyCheck(tf, {"fits.0.params.alpha": Approx(a_tf, tol)}))),
        # every run groks in both studies: there is no transition to place
        ClaimCheck("transition", kw["transition"], n_studies=2, exit_code=0, studies=(
            StudyCheck(mlp, {"boundary": None}, present=_fs(R.NO_TRANSITION)),
            StudyCheck(tf, {"boundary": None}, present=_fs(R.NO_TRANSITION)))),
        # d = t(rho=1) − t(rho=2): negative for the mlp, positive for the transformer
        ClaimCheck("compare", kw["compare"], n_studies=2,
                   absent=_fs(R.UNDERPOWERED, R.CENSORED_PAIRS), exit_code=0, studies=(
                       StudyCheck(mlp, {"n_pairs": POOLED_SEEDS, "tests.median": Between(hi=0.0)}),
                       StudyCheck(tf, {"n_pairs": POOLED_SEEDS,
                                       "tests.median": Between(lo=0.0)}))),
    )
    return log_table(runs, k), checks


POOLED_ARMS_SPLIT = ClaimCase(
    name="pooled_arms_split",
    title="the same log with --cell arch: one study per architecture",
    why=("Split, each study is one design: onset's exponent and dose's α have the sign of "
         "their own arm (α = 1.0 and −0.5 recovered), transition finds no transition in "
         "either (every run groks), and compare finds opposite effects with six pairs each."),
    make=_pooled_split,
)


# -- precursor ----------------------------------------------------------------------------

def _hump(center: float, width: float, height: float = 1.0, base: float = 1.0,
          noise: float = 0.0, seed: int = 0) -> Callable[[np.ndarray], np.ndarray]:
    def fn(s: np.ndarray) -> np.ndarray:
        e = np.random.default_rng(seed).normal(0.0, noise, s.size) if noise else 0.0
        return base + height * np.exp(-(((s - center) / width) ** 2)) + e
    return fn


def _decay(s: np.ndarray) -> np.ndarray:
    return 30.0 * np.exp(-s / 4000.0) + 5.0


def _precursor_runs(n: int, n_never: int, seed: int,
                    signal: Callable[[SimRun, int], Callable[[np.ndarray], np.ndarray]],
                    placebo: Callable[[SimRun, int], Callable[[np.ndarray], np.ndarray]] | None
                    ) -> list[SimRun]:
    rng = np.random.default_rng(seed)
    steps = grid(50, 6000)
    out = []
    for i in range(n):
        tg = math.inf if i < n_never else float(rng.uniform(2500, 4500))
        r = SimRun(f"r{i}", {"seed": i}, tg, float(rng.uniform(300, 500)), steps)
        series = {"attn_cv": signal(r, i)}
        if placebo is not None:
            series["weight_norm"] = placebo(r, i)
        out.append(SimRun(r.run, r.conditions, r.t_grok, r.t_mem, steps, series=series))
    return out


def _precursor_genuine(k: CK) -> tuple[pd.DataFrame, tuple[ClaimCheck, ...]]:
    lead = 500.0

    def signal(r: SimRun, i: int) -> Callable[[np.ndarray], np.ndarray]:
        c = r.t_grok - lead if math.isfinite(r.t_grok) else 3000.0
        return _hump(c, 250.0, noise=0.002, seed=i)

    runs = _precursor_runs(12, 2, 0, signal, lambda r, i: _decay)
    n = sum(math.isfinite(r.tg) for r in runs)
    # the peak is the logged step nearest t_grok − 500 (± one step of 50); t_grok is first
    # seen up to 50 steps after it
    fields = {"n_runs": 12, "n_scored": n, "n_no_grok": 2, "n_no_memorization": 0,
              "fraction_preceding": 1.0, "fraction_preceding_interior": 1.0,
              # the accuracy every 50 steps bounds each lead: no point value, the median's
              # range (its lower ends, its first-seen upper ends) one cadence wide around 500
              "lead_median": None,
              "lead_range.low": Between(lead - 75 - 50, lead + 75),
              "lead_range.high": Between(lead - 75, lead + 50 + 75),
              "null_permuted.p_value": Between(hi=0.05),
              "placebo.signal": "weight_norm", "placebo.fraction_preceding_interior": 0.0,
              "placebo.n_signal_only": n, "placebo.n_placebo_only": 0,
              "placebo.test.p_value": Approx(2.0 ** -n, 1e-12)}
    return log_table(runs, k), (ClaimCheck(
        "precursor", {"signal": "attn_cv", "n_perm": 199},
        present=_fs(R.NO_GROK), absent=_fs(R.PRECURSOR_NOT_SPECIFIC, R.PEAK_AT_WINDOW_EDGE),
        exit_code=0, studies=(StudyCheck(fields=fields),)),)


PRECURSOR_GENUINE = ClaimCase(
    name="precursor_genuine",
    title="attn_cv peaks 500 steps before grokking in each of 10 runs (2 more never grok); "
          "weight_norm decays smoothly",
    why=("The signal's peak tracks t_grok: interior, preceding, in every scored run; the "
         "permutation null and the placebo (which only 'peaks' at the gate) both lose, with "
         "the exact McNemar p = 2⁻¹⁰. Specific: no PRECURSOR_NOT_SPECIFIC; the two runs that "
         "never grok are counted apart."),
    make=_precursor_genuine,
)


def _precursor_trivial(k: CK) -> tuple[pd.DataFrame, tuple[ClaimCheck, ...]]:
    def signal(r: SimRun, i: int) -> Callable[[np.ndarray], np.ndarray]:
        return _hump(r.t_mem + 600.0, 200.0, noise=0.002, seed=i)

    def placebo(r: SimRun, i: int) -> Callable[[np.ndarray], np.ndarray]:
        return _hump(r.t_mem + 900.0, 400.0, height=3.0, base=5.0)

    runs = _precursor_runs(10, 0, 1, signal, placebo)
    fields = {"n_scored": 10, "fraction_preceding_interior": 1.0,
              "placebo.fraction_preceding_interior": 1.0, "placebo.n_signal_only": 0,
              "placebo.n_placebo_only": 0, "placebo.test.p_value": 1.0}
    return log_table(runs, k), (ClaimCheck(
        "precursor", {"signal": "attn_cv", "n_perm": 199},
        present=_fs(R.PRECURSOR_NOT_SPECIFIC), absent=_fs(R.PEAK_AT_WINDOW_EDGE), exit_code=1,
        studies=(StudyCheck(fields=fields),),
        evidence={R.PRECURSOR_NOT_SPECIFIC: {"failed": ["placebo"]}}),)


PRECURSOR_TRIVIAL = ClaimCase(
    name="precursor_trivial",
    title="attn_cv peaks 600 steps after memorization, long before grokking (2500–4500); "
          "weight_norm has a smooth hump 900 steps after memorization",
    why=("The signal 'precedes grokking' in every run only because it is tied to "
         "memorization, which always comes first: it beats its own permuted time axis, but a "
         "smooth placebo does exactly as well (no discordant run, McNemar p = 1): "
         "PRECURSOR_NOT_SPECIFIC (critical)."),
    make=_precursor_trivial,
)


def _precursor_monotone(k: CK) -> tuple[pd.DataFrame, tuple[ClaimCheck, ...]]:
    runs = _precursor_runs(10, 0, 2, lambda r, i: _decay, None)
    fields = {"n_scored": 10, "fraction_preceding": 1.0, "fraction_preceding_interior": 0.0,
              "placebo": None, "null_permuted.p_value": Approx(1.0, 1e-12)}
    return log_table(runs, k), (ClaimCheck(
        "precursor", {"signal": "attn_cv", "n_perm": 199},
        present=_fs(R.PEAK_AT_WINDOW_EDGE, R.PRECURSOR_NOT_SPECIFIC), exit_code=1,
        studies=(StudyCheck(fields=fields),),
        evidence={R.PRECURSOR_NOT_SPECIFIC: {"failed": ["permutation", "time"]},
                  R.PEAK_AT_WINDOW_EDGE: {"n_runs": 10, "of": 10}}),)


PRECURSOR_MONOTONE = ClaimCase(
    name="precursor_monotone",
    title="attn_cv decays smoothly from the start in 10 runs (no placebo logged)",
    why=("A falling signal 'peaks' at the memorization gate, which precedes grokking: 100% "
         "on the raw statistic papers quote. The peak is on the window's edge in every run "
         "(PEAK_AT_WINDOW_EDGE); on the tested statistic (interior peaks) it scores 0 and "
         "does no better than either null: its values permuted, or its peak placed "
         "uniformly in time (PRECURSOR_NOT_SPECIFIC)."),
    make=_precursor_monotone,
)


# -- issue 20: every law checked against what it left out, every end honest -----------------

def _onset_beyond_horizon(k: CK) -> tuple[pd.DataFrame, tuple[ClaimCheck, ...]]:
    # the log-normal onset law on H = 1…8 (10 seeds, budget 20 000); at H = 16 no run groks
    # (a phase boundary the law does not know): the law's median there is about 4 800 steps
    runs, _ = _onset_runs("lognormal", 0.3, 10, 5, 20, 20000)
    runs = [r if r.conditions["H"] != 16 else
            SimRun(r.run, r.conditions, math.inf, r.t_mem, r.steps) for r in runs]
    fields = {"law_checks.-1.cell": {"H": 16}, "law_checks.-1.situation": "beyond_horizon",
              "law_checks.-1.n_censored": 10, "law_checks.-1.n_runs": 10,
              "law_checks.-1.horizon": 20000, "law_checks.-1.contradicted": True,
              "law_checks.-1.predicted_median": Between(hi=20000.0),
              "left_out.beyond_horizon": 10, "left_out.inside_cells": 0,
              "left_out.stopped_early": 0}
    return log_table(runs, k), (ClaimCheck(
        "onset", {"by": ["H"], "n_resamples": 19}, present=_fs(R.LAW_CONTRADICTED),
        exit_code=1, studies=(StudyCheck(fields=fields),)),)


ONSET_BEYOND_HORIZON = ClaimCase(
    name="onset_cell_beyond_horizon",
    title="log t_grok = log 300 + log H + 0.3·Z for H = 1…8; no run groks at H = 16 within "
          "20 000 steps (10 seeds each)",
    why=("The AFT keeps the H = 16 runs as censored at 20 000, but its log-linear law still "
         "predicts a median near 4 800 there: ten runs all censored has probability ~0 under "
         "it. The law describes the cells that grokked, not the sweep: LAW_CONTRADICTED "
         "(critical), the cell named as beyond the horizon. Reading the AFT's slope as the "
         "scaling of the sweep is the error."),
    make=_onset_beyond_horizon,
)


def _dose_censored_resamples(k: CK) -> tuple[pd.DataFrame, tuple[ClaimCheck, ...]]:
    # ln T = ln 3000 − 0.4·rho over rho = 1…6 (5 seeds); at rho = 1 two of the five runs never
    # grok by 6 000 steps: the cell's median is logged (3 of 5 grokked), but a resample of it
    # is censored whenever it draws ≥ 3 of the 2 censored runs' copies
    xs, n, B = (1.0, 2.0, 3.0, 4.0, 5.0, 6.0), 5, 199
    runs = _dose_runs(xs, n, lambda x: math.log(3000) - 0.4 * x, 0.05, 1, grid(10, 6000))
    runs = [SimRun(r.run, r.conditions, math.inf, r.t_mem, r.steps)
            if r.conditions["rho"] == 1.0 and r.conditions["seed"] < 2 else r for r in runs]
    p = 1.0 - sum(math.comb(5, j) * 0.4 ** j * 0.6 ** (5 - j) for j in range(3))
    sd = math.sqrt(B * p * (1 - p))
    fields = {"key_parameter.n_resamples_censored": Between(B * p - 4 * sd, B * p + 4 * sd),
              "fit_cells": xs, "best": "exponential",
              # a longer t_grok at the lowest dose steepens the (negative) slope: those
              # resamples (far more than the 2.5 % tail) open the interval's lower end
              "key_parameter.ci.low_unbounded": True, "key_parameter.ci.low": None,
              "key_parameter.ci.high_unbounded": False}
    return log_table(runs, k), (ClaimCheck(
        "dose", {"by": "rho", "n_resamples": B}, studies=(StudyCheck(fields=fields),),
        printed=("resamples turned a fitted cell's median censored",)),)


DOSE_CENSORED_RESAMPLES = ClaimCase(
    name="dose_censored_resamples",
    title="ln t_grok = ln 3000 − 0.4·rho, rho = 1…6; two of five runs at rho = 1 never grok",
    why=("About a third of the bootstrap resamples (P(≥ 3 of 5 draws censored) = 0.32) give "
         "the rho = 1 cell a censored median. Dropping them keeps only the resamples where "
         "that cell grokked early and closes the interval on the side they would have "
         "pushed: they are counted at that end (open), never dropped, and said so."),
    make=_dose_censored_resamples,
)


def _transition_quasi(k: CK) -> tuple[pd.DataFrame, tuple[ClaimCheck, ...]]:
    levels = (0.1, 0.15, 0.2, 0.25, 0.3, 0.35)
    n = 20
    runs = _transition_runs(levels, [0, 0, 19, n, n, n], n, 0, grid(10, 4000),
                            lambda lv: 400.0 * lv ** -0.5)
    fields = {"boundary.separation": "quasi", "boundary.lambda_c": None,
              "boundary.ci": None, "boundary.bracket": (0.15, 0.25),
              # one run of twenty at 0.2 fails: the χ² profile set alone is (0.15…, 0.2),
              # but under separation its cut is not calibrated (such sets missed the true λ_c
              # in 14 of 200 simulated 8 × 8 sweeps, benchmarks/claims_coverage.py): the set
              # printed is widened to the bracket, and says so
              "boundary.profile.low": 0.15, "boundary.profile.high": 0.25,
              "boundary.profile.widened": True,
              "boundary.profile.low_open": True, "boundary.profile.high_open": True}
    return log_table(runs, k), (ClaimCheck(
        "transition", {"by": "wd", "n_resamples": 49}, present=_fs(R.TRANSITION_SEPARATED),
        studies=(StudyCheck(fields=fields),), printed=("profile-likelihood 95% set",)),)


TRANSITION_QUASI = ClaimCase(
    name="transition_quasi_separated",
    title="no run groks at wd = 0.1, 0.15; 19 of 20 at 0.2; every run from 0.25 on",
    why=("Quasi-separation: the logistic slope has no maximum. No point and no bootstrap "
         "interval; the profile-likelihood set (deviance within χ²₁ of its least, the slope "
         "profiled out to its infinite limit) would say (0.15, 0.2), but with an infinite "
         "slope its cut is not calibrated — simulated, such sets missed the true λ_c too "
         "often — so the set printed is widened to the bracket (0.15, 0.25) and says so."),
    make=_transition_quasi,
)


def _precursor_noise(k: CK) -> tuple[pd.DataFrame, tuple[ClaimCheck, ...]]:
    # geometric logging (dense early); a signal that is noise from point to point, its peak
    # at a random logged point; grokking at 20 000 of 60 000 steps
    rng = np.random.default_rng(7)
    steps = np.unique(np.round(np.geomspace(1, 60000, 300)).astype(np.int64))
    runs = []
    for s in range(24):
        noise = rng.random(steps.size)

        def attn_cv(x: np.ndarray, v: np.ndarray = noise) -> np.ndarray:
            return v

        runs.append(SimRun(f"r{s}", {"seed": s}, 20000.0, 20.0, steps,
                           series={"attn_cv": attn_cv}))
    return log_table(runs, k), (ClaimCheck(
        "precursor", {"signal": "attn_cv", "n_perm": 199}, present=_fs(R.PRECURSOR_NOT_SPECIFIC),
        exit_code=1, evidence={R.PRECURSOR_NOT_SPECIFIC: {"failed": ["permutation"]}}),)


PRECURSOR_NOISE = ClaimCase(
    name="precursor_geometric_noise",
    title="a noise signal on a geometric logging grid (most points before grokking), 24 runs",
    why=("Its peak falls on a random logged point, and most logged points lie before "
         "grokking: it 'precedes' grokking in most runs and beats a null that places peaks "
         "uniformly in time. It does no better than its own values permuted: not specific. A "
         "precursor must beat both nulls."),
    make=_precursor_noise,
)


CLAIM_CASES: tuple[ClaimCase, ...] = (
    ONSET_LOGNORMAL, ONSET_WEIBULL, ONSET_CENSORED, ONSET_THRESHOLD,
    DOSE_EXPONENTIAL, DOSE_INDISTINGUISHABLE, DOSE_CONTRADICTED,
    TRANSITION_SEPARATED, TRANSITION_LOGISTIC, TRANSITION_TOO_FEW_LEVELS,
    COMPARE_EFFECT, COMPARE_CENSORED, COMPARE_FEW,
    POOLED_ARMS, POOLED_ARMS_SPLIT,
    PRECURSOR_GENUINE, PRECURSOR_TRIVIAL, PRECURSOR_MONOTONE,
    ONSET_BEYOND_HORIZON, DOSE_CENSORED_RESAMPLES, TRANSITION_QUASI, PRECURSOR_NOISE,
)

CLAIM_CASES_BY_NAME: dict[str, ClaimCase] = {c.name: c for c in CLAIM_CASES}

__all__ = ["CK", "CLAIM_CASES", "CLAIM_CASES_BY_NAME", "ClaimCase", "ClaimCheck",
           "ClaimInstance", "SimRun", "StudyCheck", "compare_check", "log_table",
           "plain_median", "run_check"]
