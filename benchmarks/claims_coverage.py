"""Coverage of the claim audits' printed 95 % intervals on synthetic logs with known truth
(issue 42).

    python benchmarks/claims_coverage.py [--reps 200] [--seed 0] [--only onset,compare]
        [--markdown] [--write-docs docs/claims.md] [--records PATH.jsonl]

For every design below, each replicate draws runs from a model whose parameters are known,
writes the canonical log with :func:`grokaudit.claims.simulate.make_log` to a real Parquet file
in a temporary folder, runs the command through the CLI (``click.testing.CliRunner`` on
``grokaudit.cli.cli``, ``--json -``) and reads the printed intervals from the JSON. Each
interval of each replicate is one of:

- **covered**: the truth lies inside it (closed ends inclusive; an unbounded end, ``None`` in
  the JSON with ``*_unbounded``, covers on its side; an open finite end is treated as
  inclusive too — the truth is continuous, so this changes nothing);
- **excluded below** (the whole interval lies below the truth) or **excluded above**;
- **refused**: exit 2 (the ``error:`` line's code is recorded), or no interval with a named
  reason code among the command's findings (``TRANSITION_SEPARATED``, ``NOT_IDENTIFIED``,
  ``MODELS_INDISTINGUISHABLE``…; the code is recorded);
- **no interval**: the command printed none and gave no code for it (the JSON's ``note``, or
  what the benchmark saw, is recorded).

Coverage is covered / (replicates with an interval), with its Wilson 95 % interval. The JSON
values are the computed ends; the text rounds every end outwards, so the printed interval
covers whenever the JSON one does (the counts here are, if anything, conservative).

Designs and truths (σ: the scatter of ``ln t_grok``; every run's accuracy crosses the grok
threshold exactly at its drawn ``t_grok``, read at the logged steps):

onset — Weibull AFT ``ln T = ln 300 + β·ln H + 0.5·W``, ``W`` standard minimum extreme value,
``β = 1``; budget 3000 steps, logged every 50 (runs past the budget are right-censored, about
a tenth of them; every grok is interval-censored). Truth: ``β = 1`` for the AFT's Wald CI of
``log_H`` (the family is chosen by AIC among three; the slope is the same parameter in each)
and for the OLS CI, which is fitted on the grokked runs only (the papers' method, printed
beside the AFT for contrast: under censoring its target is not ``β`` — the survivors of the
slow cells are the early ones — so it is expected to undercover; it is benchmarked to show by
how much).
  *small*: ``H ∈ {1, 2, 4, 8}`` × 4 seeds (16 runs). *typical*: 16 levels
  ``H = 2^(3k/15)``, ``k = 0…15`` (1 to 8) × 4 seeds (64 runs; the issue's 88 % design).

transition — ``P(grok | λ) = 1/(1 + exp(−4·(ln λ − ln 0.5)))``: the logistic midpoint
``λ_c = 0.5`` is the truth of the bootstrap CI and of the profile-likelihood set. A run that
groks does so at ``t = 400·|λ − 0.5|^(−ν)``, ``ν = 0.5``, with no scatter, so that each level's
median ``t_grok`` (its runs that never grok count as censored in it, and the median is one of
the grokked runs' common time whenever more than half grokked) lies exactly on
``T ∝ |λ − λ_c|^(−ν)``: the truth of ν's CI is 0.5 (with scatter in ``t``, the median of a
level where only a share ``p`` groks would be the ``1/(2p)`` quantile of ``t`` — a biased
target). Budget 8000 steps (nothing is cut short).
  *small*: ``λ ∈ {0.25, 0.4, 0.63, 1}`` × 6 runs, logged every 50 (the issue's 4 × 6 design,
  88.6 %; two levels per side, so ν is not fitted). *typical*: ``λ ∈ {0.15, 0.22, 0.33, 0.7,
  1, 1.5, 2.2, 3.2}`` × 8 runs, logged every 10 (ν over the five levels above λ_c).

dose — the exponential law ``ln T = ln 300 + α·x + 0.3·Z`` (``Z`` standard normal, per run),
``α = 1.5``, budget 50 000 (nothing is censored), logged every 10. Truths: ``α = 1.5`` for the
key parameter's CI when AICc picks the exponential law (when it picks another law the CI is
of that law's parameter, which has no truth here: recorded as "no interval" with the law
named; ``MODELS_INDISTINGUISHABLE`` as refused); each cell's median CI (a percentile bootstrap
over the cell's seeds) against the median of the first-seen grok step, ``ceil(300·e^{α·x}/10)·10``
(the median of a non-decreasing function of ``T`` is that function of the median; the
continuous median lies at most one cadence below it). Each cell is one instance.
  *small*: ``x ∈ {0.5, 0.75, 1, 1.25, 1.5}`` × 3 seeds. *typical*: ``x ∈ {0.5, 0.75, …, 2.25}``
  (8 cells) × 5 seeds.

precursor — every run memorizes at step 400 and groks at ``t_grok ~ U(2500, 4500)``; the
signal ``attn_cv = 1 + exp(−((s − c)/250)²) + N(0, 0.01²)`` peaks at ``c = t_grok − L``,
``L ~ N(500, 100²)``; a placebo ``weight_norm`` falls smoothly; logged every 50. The lead the
command measures is ``t_grok − t_peak`` with ``t_peak`` the logged step of the maximum (the
grid point nearest ``c``, give or take the noise): ``L`` plus a rounding error symmetric about
0, so its median over runs is 500, the truth of the median lead's CI (a range CI when the
evaluations only bound each ``t_grok``, as here).
  *small*: 10 runs. *typical*: 30 runs.

compare — pairs ``(a, b)`` share a seed: ``t_b ~ U(1500, 2500)``, ``t_a = t_b + D``,
``D ~ N(300, 250²)``; budget 4000 (nothing is censored). Truth: mean and median of ``D``, 300.
On one shared grid (every 10 steps) a pair's printed ``d`` is the difference of the first-seen
steps, ``D`` rounded to a multiple of 10 without bias given ``D`` (``t_b`` is uniform over many
grid steps), so its mean and median are still 300 (300 is on the grid). With the arms logged
every 100 (``a``) and 10 (``b``) steps each pair is a range of ``D`` and the mean and median
get the range CIs (``censored.mean_ci``/``median_ci``).
  *same cadence, small*: 10 pairs (the issue's 88.5 % for BCa). *same cadence, typical*:
  20 pairs. *cadences 100/10, small*: 10 pairs (the issue's 60 % before the range CI).
  *cadences 100/10, typical*: 20 pairs.

Intervals not benchmarked (their target is not a parameter of the generator): onset's
bootstrap CIs of ``β_OLS − β_AFT`` and of the left-out runs' effect (run with 49 resamples to
save time: they do not enter any interval benchmarked here), the grok rates' Wilson intervals,
the AFT's σ, the pairing correlation, dose predictions at censored cells and mediation.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from click.testing import CliRunner
from grokaudit.claims.simulate import make_log, weibull_times
from grokaudit.cli import cli

BEGIN = ("<!-- claims_coverage table: begin (python benchmarks/claims_coverage.py "
         "--write-docs docs/claims.md) -->")
END = "<!-- claims_coverage table: end -->"
COMMANDS = ("onset", "transition", "compare", "dose", "precursor")
Z95 = 1.959963984540054

# ------------------------------------------------------------------------------------------
# what one interval of one replicate gave
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What the command printed for one interval: ``status`` ``interval`` (``low``/``high``,
    None for an unbounded end), ``refused`` (``code``) or ``none`` (``why``)."""

    status: str
    low: float | None = None
    high: float | None = None
    code: str | None = None
    why: str | None = None


@dataclass(frozen=True)
class Observation:
    """One interval of one replicate against its truth."""

    interval: str
    truth: float
    outcome: Outcome

    @property
    def verdict(self) -> str:
        """``covered``, ``below`` (the interval lies below the truth), ``above``,
        ``refused`` or ``none``."""
        o = self.outcome
        if o.status != "interval":
            return o.status
        if o.high is not None and o.high < self.truth:
            return "below"
        if o.low is not None and o.low > self.truth:
            return "above"
        return "covered"


def interval(low: float | None, high: float | None) -> Outcome:
    return Outcome("interval", low=low, high=high)


def refused(code: str, why: str | None = None) -> Outcome:
    return Outcome("refused", code=code, why=why)


def none(why: str) -> Outcome:
    return Outcome("none", why=why)


def from_ci(ci: Mapping[str, Any] | None, codes: Sequence[str] = (),
            why: str = "no interval in the JSON") -> Outcome:
    """A BootstrapCI-like JSON object (``low``, ``high``, ``low_unbounded``,
    ``high_unbounded``, ``note``) as an outcome; when it has no interval, refused with the
    first of ``codes`` found, else no interval with its note."""
    if ci is not None:
        lo_ok = ci.get("low") is not None or bool(ci.get("low_unbounded"))
        hi_ok = ci.get("high") is not None or bool(ci.get("high_unbounded"))
        if lo_ok and hi_ok:
            return interval(_num(ci.get("low")), _num(ci.get("high")))
        why = str(ci.get("note") or why)
    if codes:
        return refused(codes[0], why)
    return none(why)


def _num(v: Any) -> float | None:
    return None if v is None else float(v)


# ------------------------------------------------------------------------------------------
# running a command
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """A command's result: its exit code, its JSON (None on exit 2 or a crash), the reason
    codes of its findings, and its error line."""

    exit_code: int
    doc: Mapping[str, Any] | None
    codes: tuple[str, ...]
    error: str | None

    @property
    def study(self) -> Mapping[str, Any]:
        assert self.doc is not None
        s: Mapping[str, Any] = self.doc["studies"][0]
        return s

    def failed(self) -> Outcome | None:
        """The outcome of every interval when the command printed no JSON."""
        if self.doc is not None:
            return None
        if self.exit_code == 2:
            m = re.search(r"\b([A-Z][A-Z_]{3,})\b", self.error or "")
            return refused(m.group(1) if m else "EXIT_2", self.error)
        return none(f"crash (exit {self.exit_code}): {self.error}")

    def has(self, *codes: str) -> list[str]:
        return [c for c in codes if c in self.codes]


def run_cli(log: pd.DataFrame, folder: Path, args: Sequence[str]) -> Run:
    """Write ``log`` to a Parquet file in ``folder`` and run ``grokaudit ARGS[0] FILE
    ARGS[1:] --json -`` in this process."""
    path = folder / "log.parquet"
    log.to_parquet(path, index=False)
    res = CliRunner().invoke(cli, [args[0], str(path), *args[1:], "--json", "-", "-q"])
    err = (res.stderr or "").strip() if res.stderr_bytes is not None else ""
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        return Run(-1, None, (), f"{type(res.exception).__name__}: {res.exception}")
    if res.exit_code not in (0, 1):
        line = next((ln for ln in err.splitlines() if ln.startswith("error")), err[:300])
        return Run(res.exit_code, None, (), line)
    doc = json.loads(res.stdout)
    codes = tuple(str(f.get("code")) for f in doc.get("findings", []))
    return Run(res.exit_code, doc, codes, None)


# ------------------------------------------------------------------------------------------
# designs
# ------------------------------------------------------------------------------------------

Replicate = Callable[[np.random.Generator, Path], list[Observation]]


@dataclass(frozen=True)
class Design:
    command: str
    name: str
    intervals: tuple[str, ...]  #: the intervals it reports, in order
    replicate: Replicate
    label: str = ""

    @property
    def key(self) -> str:
        return f"{self.command}/{self.name}"


# onset ------------------------------------------------------------------------------------

ONSET_BETA, ONSET_SIGMA, ONSET_BUDGET = 1.0, 0.5, 3000


def onset_replicate(levels: Sequence[float], seeds: int) -> Replicate:
    def rep(rng: np.random.Generator, folder: Path) -> list[Observation]:
        H = np.repeat(np.asarray(levels, dtype=float), seeds)
        T = weibull_times(math.log(300) + ONSET_BETA * np.log(H), ONSET_SIGMA, rng)
        runs = pd.DataFrame({"run": [f"r{i}" for i in range(H.size)], "H": H,
                             "seed": np.tile(np.arange(seeds), len(levels)),
                             "t_grok": np.where(T > ONSET_BUDGET, np.inf, T),
                             "budget": ONSET_BUDGET})
        r = run_cli(make_log(runs, every=50), folder,
                    ["onset", "--by", "H", "--n-resamples", "1"])
        return [Observation("β AFT (log_H)", ONSET_BETA, _onset_coef(r, "aft")),
                Observation("β OLS, grokked runs (papers' method)", ONSET_BETA,
                            _onset_coef(r, "ols"))]
    return rep


def _onset_coef(r: Run, which: str) -> Outcome:
    bad = r.failed()
    if bad is not None:
        return bad
    part = r.study[which]
    if part.get("fit") is None:
        cause = part.get("cause")
        code = str(part.get("refused") or "REFUSED")
        return refused(code, None if cause is None else str(cause))
    for c in part["fit"]["coefficients"]:
        if c["name"] == "log_H":
            if c.get("low") is None or c.get("high") is None:
                return none("coefficient without an interval")
            return interval(float(c["low"]), float(c["high"]))
    return none("no log_H coefficient")


# transition -------------------------------------------------------------------------------

LAMBDA_C, NU, TRANSITION_SLOPE = 0.5, 0.5, 4.0


def transition_replicate(levels: Sequence[float], seeds: int, every: int,
                         with_nu: bool) -> Replicate:
    def rep(rng: np.random.Generator, folder: Path) -> list[Observation]:
        lam = np.repeat(np.asarray(levels, dtype=float), seeds)
        p = 1 / (1 + np.exp(-TRANSITION_SLOPE * (np.log(lam) - math.log(LAMBDA_C))))
        g = rng.random(lam.size) < p
        T = np.where(g, 400 * np.abs(lam - LAMBDA_C) ** -NU, np.inf)
        runs = pd.DataFrame({"run": [f"r{i}" for i in range(lam.size)], "wd": lam,
                             "seed": np.tile(np.arange(seeds), len(levels)),
                             "t_grok": T, "budget": 8000})
        r = run_cli(make_log(runs, every=every), folder, ["transition", "--by", "wd"])
        out = [Observation("λ_c bootstrap CI", LAMBDA_C, _transition_ci(r, "lambda")),
               Observation("λ_c profile-likelihood set", LAMBDA_C, _transition_profile(r))]
        if with_nu:
            out.append(Observation("ν bootstrap CI", NU, _transition_ci(r, "nu")))
        return out
    return rep


_TRANSITION_CODES = ("TRANSITION_SEPARATED", "NO_TRANSITION")


def _transition_ci(r: Run, which: str) -> Outcome:
    bad = r.failed()
    if bad is not None:
        return bad
    s = r.study
    b = s.get("boundary")
    if b is None:
        return from_ci(None, r.has(*_TRANSITION_CODES, "TOO_FEW_LEVELS"),
                       "no boundary (every scored run on one side)")
    if which == "lambda":
        if b.get("separation") != "none":
            return refused("TRANSITION_SEPARATED", f"{b.get('separation')} separation")
        return from_ci(b.get("ci"), (), "λ_c without an interval")
    pl = s.get("power_law")
    if b.get("separation") != "none":
        return refused("TRANSITION_SEPARATED", "ν not identified (only its range)")
    if pl is None:
        return from_ci(None, r.has("TOO_FEW_LEVELS"), "no power law")
    return from_ci(pl.get("nu_ci"), (), "ν without an interval")


def _transition_profile(r: Run) -> Outcome:
    bad = r.failed()
    if bad is not None:
        return bad
    b = r.study.get("boundary")
    if b is None or b.get("profile") is None:
        return from_ci(None, r.has(*_TRANSITION_CODES), "no profile-likelihood set")
    prof = b["profile"]
    return interval(_num(prof.get("low")), _num(prof.get("high")))


# dose -------------------------------------------------------------------------------------

DOSE_ALPHA, DOSE_SIGMA, DOSE_EVERY = 1.5, 0.3, 10


def dose_replicate(xs: Sequence[float], seeds: int) -> Replicate:
    def rep(rng: np.random.Generator, folder: Path) -> list[Observation]:
        x = np.repeat(np.asarray(xs, dtype=float), seeds)
        T = np.exp(math.log(300) + DOSE_ALPHA * x + DOSE_SIGMA * rng.standard_normal(x.size))
        runs = pd.DataFrame({"run": [f"r{i}" for i in range(x.size)], "rho": x,
                             "seed": np.tile(np.arange(seeds), len(xs)), "t_grok": T,
                             "budget": 50_000})
        r = run_cli(make_log(runs, every=DOSE_EVERY), folder, ["dose", "--by", "rho"])
        out = [Observation("α (exponential law)", DOSE_ALPHA, _dose_alpha(r))]
        cells = {} if r.doc is None else {float(c["x"]): c for c in r.study["cells"]}
        for xv in xs:
            truth = math.ceil(300 * math.exp(DOSE_ALPHA * xv) / DOSE_EVERY) * DOSE_EVERY
            bad = r.failed()
            c = cells.get(float(xv))
            o = bad if bad is not None else (
                none("cell missing") if c is None else
                from_ci(c.get("median_ci"), (), f"cell median {c.get('left_out')}"))
            out.append(Observation("cell median t_grok (each cell)", float(truth), o))
        return out
    return rep


def _dose_alpha(r: Run) -> Outcome:
    bad = r.failed()
    if bad is not None:
        return bad
    s = r.study
    if not s.get("identified"):
        codes = r.has("MODELS_INDISTINGUISHABLE", "TOO_FEW_CELLS") or ["NOT_IDENTIFIED"]
        return refused(codes[0], f"best {s.get('best')}, runner-up {s.get('runner_up')}")
    if s.get("best") != "exponential":
        return none(f"AICc picked the {s.get('best')} law (its parameter has no truth here)")
    kp = s.get("key_parameter")
    return from_ci(None if kp is None else kp.get("ci"), (), "no key parameter")


# precursor --------------------------------------------------------------------------------

LEAD, LEAD_SD = 500.0, 100.0


def precursor_replicate(n_runs: int) -> Replicate:
    def rep(rng: np.random.Generator, folder: Path) -> list[Observation]:
        tg = rng.uniform(2500, 4500, n_runs)
        centre = tg - (LEAD + LEAD_SD * rng.standard_normal(n_runs))
        noise_seed = rng.integers(0, 2**31, n_runs)
        runs = pd.DataFrame({"run": [f"r{i}" for i in range(n_runs)], "seed": np.arange(n_runs),
                             "t_grok": tg, "t_mem": 400, "budget": 6000, "centre": centre,
                             "noise": noise_seed})

        def cv(row: pd.Series, s: np.ndarray) -> np.ndarray:
            eps = np.random.default_rng(int(row["noise"])).normal(0, 0.01, s.size)
            out: np.ndarray = 1 + np.exp(-(((s - float(row["centre"])) / 250) ** 2)) + eps
            return out

        def wn(row: pd.Series, s: np.ndarray) -> np.ndarray:
            out: np.ndarray = 30 * np.exp(-s / 4000) + 5
            return out

        log = make_log(runs, every=50, series={"attn_cv": cv, "weight_norm": wn})
        log = log.drop(columns=["centre", "noise"])
        r = run_cli(log, folder, ["precursor", "--signal", "attn_cv", "--n-perm", "99"])
        bad = r.failed()
        if bad is not None:
            return [Observation("median lead CI", LEAD, bad)]
        s = r.study
        return [Observation("median lead CI", LEAD,
                            from_ci(s.get("lead_ci"), r.has("NOTHING_AUDITABLE"),
                                    "no lead CI (sign unknown?)"))]
    return rep


# compare ----------------------------------------------------------------------------------

SHIFT, SHIFT_SD = 300.0, 250.0


def compare_replicate(n_pairs: int, every_a: int, every_b: int) -> Replicate:
    def rep(rng: np.random.Generator, folder: Path) -> list[Observation]:
        t_b = rng.uniform(1500, 2500, n_pairs)
        t_a = t_b + SHIFT + SHIFT_SD * rng.standard_normal(n_pairs)

        def arm(name: str, every: int, ts: np.ndarray) -> pd.DataFrame:
            runs = pd.DataFrame({"run": [f"{name}{i}" for i in range(ts.size)],
                                 "method": name, "seed": range(ts.size), "t_grok": ts,
                                 "budget": 4000})
            return make_log(runs, every=every)

        log = pd.concat([arm("a", every_a, t_a), arm("b", every_b, t_b)], ignore_index=True)
        r = run_cli(log, folder, ["compare", "--by", "method", "--pair", "seed",
                                  "--arms", "a,b"])
        bad = r.failed()
        if bad is not None:
            return [Observation("mean d CI", SHIFT, bad), Observation("median d CI", SHIFT, bad)]
        s = r.study
        part, kind = (s["censored"], "range") if s.get("censored") else (s["tests"], "")
        out = []
        for key, label in (("mean_ci", "mean d"), ("median_ci", "median d")):
            name = f"{label} CI" + (" (range bootstrap)" if kind else
                                    (" (BCa)" if key == "mean_ci" else " (order statistics)"))
            out.append(Observation(name, SHIFT, from_ci(part.get(key), (), "no CI")))
        return out
    return rep


# the list ---------------------------------------------------------------------------------

def _geo(lo: float, hi: float, n: int) -> list[float]:
    return [float(v) for v in np.round(np.geomspace(lo, hi, n), 6)]


DESIGNS: tuple[Design, ...] = (
    Design("onset", "small: H 1–8, 4 levels × 4 seeds",
           ("β AFT (log_H)", "β OLS, grokked runs (papers' method)"),
           onset_replicate([1, 2, 4, 8], 4)),
    Design("onset", "typical: H 1–8, 16 levels × 4 seeds",
           ("β AFT (log_H)", "β OLS, grokked runs (papers' method)"),
           onset_replicate(_geo(1, 8, 16), 4)),
    Design("transition", "small: 4 levels × 6 runs",
           ("λ_c bootstrap CI", "λ_c profile-likelihood set"),
           transition_replicate([0.25, 0.4, 0.63, 1.0], 6, 50, with_nu=False)),
    Design("transition", "typical: 8 levels × 8 runs",
           ("λ_c bootstrap CI", "λ_c profile-likelihood set", "ν bootstrap CI"),
           transition_replicate([0.15, 0.22, 0.33, 0.7, 1.0, 1.5, 2.2, 3.2], 8, 10,
                                with_nu=True)),
    Design("compare", "same cadence (10), 10 pairs",
           ("mean d CI (BCa)", "median d CI (order statistics)"), compare_replicate(10, 10, 10)),
    Design("compare", "same cadence (10), 20 pairs",
           ("mean d CI (BCa)", "median d CI (order statistics)"), compare_replicate(20, 10, 10)),
    Design("compare", "cadences 100/10, 10 pairs",
           ("mean d CI (range bootstrap)", "median d CI (range bootstrap)"),
           compare_replicate(10, 100, 10)),
    Design("compare", "cadences 100/10, 20 pairs",
           ("mean d CI (range bootstrap)", "median d CI (range bootstrap)"),
           compare_replicate(20, 100, 10)),
    Design("dose", "small: 5 cells × 3 seeds",
           ("α (exponential law)", "cell median t_grok (each cell)"),
           dose_replicate([0.5, 0.75, 1.0, 1.25, 1.5], 3)),
    Design("dose", "typical: 8 cells × 5 seeds",
           ("α (exponential law)", "cell median t_grok (each cell)"),
           dose_replicate([0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.25], 5)),
    Design("precursor", "small: 10 runs", ("median lead CI",), precursor_replicate(10)),
    Design("precursor", "typical: 30 runs", ("median lead CI",), precursor_replicate(30)),
)


# ------------------------------------------------------------------------------------------
# tallies
# ------------------------------------------------------------------------------------------


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of ``k`` of ``n`` (``(0, 1)`` when ``n = 0``)."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (0.0 if k == 0 else c - h), (1.0 if k == n else c + h)


@dataclass
class Tally:
    command: str
    design: str
    interval: str
    n: int = 0
    covered: int = 0
    below: int = 0
    above: int = 0
    refused: dict[str, int] = field(default_factory=dict)
    no_interval: dict[str, int] = field(default_factory=dict)

    @property
    def with_interval(self) -> int:
        return self.covered + self.below + self.above

    @property
    def coverage(self) -> float | None:
        return self.covered / self.with_interval if self.with_interval else None

    def add(self, obs: Observation) -> None:
        self.n += 1
        v = obs.verdict
        if v == "covered":
            self.covered += 1
        elif v == "below":
            self.below += 1
        elif v == "above":
            self.above += 1
        elif v == "refused":
            code = obs.outcome.code or "?"
            self.refused[code] = self.refused.get(code, 0) + 1
        else:
            why = _short(obs.outcome.why or "?")
            self.no_interval[why] = self.no_interval.get(why, 0) + 1


def _short(why: str) -> str:
    why = re.sub(r"\d+(\.\d+)?", "N", why)
    return why[:90]


def tally(design: Design, observations: Iterable[Observation]) -> list[Tally]:
    """One tally per interval of ``design``, in its order (others appended as seen)."""
    out = {nm: Tally(design.command, design.name, nm) for nm in design.intervals}
    for o in observations:
        out.setdefault(o.interval, Tally(design.command, design.name, o.interval)).add(o)
    return list(out.values())


def run_design(design: Design, reps: int, seed: int, *, progress: bool = True,
               records: list[dict[str, Any]] | None = None) -> list[Observation]:
    """``reps`` replicates of ``design``; replicate ``i`` draws from the generator seeded
    with ``(seed, crc32(design.key), i)`` (the same draws whatever else is run)."""
    obs: list[Observation] = []
    t0 = time.perf_counter()
    salt = zlib.crc32(design.key.encode())
    every = max(1, reps // 10)
    with tempfile.TemporaryDirectory(prefix="claims_coverage_") as tmp:
        for i in range(reps):
            rng = np.random.default_rng((seed, salt, i))
            got = design.replicate(rng, Path(tmp))
            obs.extend(got)
            if records is not None:
                for o in got:
                    records.append({"design": design.key, "rep": i, "interval": o.interval,
                                    "truth": o.truth, "verdict": o.verdict,
                                    **{k: v for k, v in vars(o.outcome).items()}})
            if progress and ((i + 1) % every == 0 or i + 1 == reps):
                done = tally(design, obs)
                cov = ", ".join(f"{t.covered}/{t.with_interval}" for t in done)
                print(f"[{design.key}] {i + 1}/{reps} ({time.perf_counter() - t0:.0f} s) "
                      f"covered {cov}", file=sys.stderr, flush=True)
    return obs


# ------------------------------------------------------------------------------------------
# the table
# ------------------------------------------------------------------------------------------

HEADER = ("| command | design | interval | replicates | coverage [Wilson 95 %] "
          "| excludes below / above | refused (codes) | no interval |\n"
          "|---|---|---|---|---|---|---|---|")


def _counts(d: Mapping[str, int]) -> str:
    if not d:
        return "0"
    total = sum(d.values())
    return f"{total} (" + "; ".join(f"{k}: {v}" for k, v in sorted(d.items())) + ")"


def row(t: Tally) -> str:
    if t.with_interval:
        lo, hi = wilson(t.covered, t.with_interval)
        cov = (f"{t.covered}/{t.with_interval} = {100 * t.covered / t.with_interval:.1f} % "
               f"[{100 * lo:.1f}, {100 * hi:.1f}]")
    else:
        cov = "— (no interval printed)"
    return (f"| {t.command} | {t.design} | {t.interval} | {t.n} | {cov} | "
            f"{t.below} / {t.above} | {_counts(t.refused)} | "
            f"{_counts(t.no_interval).replace('|', '/')} |")


def markdown(tallies: Sequence[Tally], reps: int, seed: int, seconds: float | None) -> str:
    lines = [f"Coverage of the printed 95 % intervals, {reps} replicates per design, seed "
             f"{seed}" + ("" if seconds is None else f" ({seconds / 60:.1f} min)") +
             "; designs and truths: `benchmarks/claims_coverage.py`. \"excludes below\": the "
             "whole interval lies below the truth. A replicate counts once per interval "
             "(dose's cell medians: once per cell).", "", HEADER]
    lines += [row(t) for t in tallies]
    return "\n".join(lines)


def write_docs(doc: Path, table: str) -> bool:
    """Replace the text between the markers in ``doc``; False (nothing written) when the
    markers are not there."""
    text = doc.read_text(encoding="utf-8")
    i, j = text.find(BEGIN), text.find(END)
    if i < 0 or j < i:
        return False
    doc.write_text(text[:i + len(BEGIN)] + "\n\n" + table + "\n\n" + text[j:], encoding="utf-8")
    return True


def select(only: str | None) -> list[Design]:
    if not only:
        return list(DESIGNS)
    want = [w.strip() for w in only.split(",") if w.strip()]
    bad = [w for w in want if w not in COMMANDS]
    if bad:
        raise SystemExit(f"--only: unknown command(s) {', '.join(bad)} "
                         f"(choose from {', '.join(COMMANDS)})")
    return [d for d in DESIGNS if d.command in want]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--reps", type=int, default=200, help="replicates per design [200]")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", default=None, metavar="CMD[,CMD]",
                    help=f"only these commands ({', '.join(COMMANDS)})")
    ap.add_argument("--markdown", action="store_true", help="print the markdown table")
    ap.add_argument("--write-docs", default=None, metavar="PATH",
                    help="replace the table between the markers in PATH (docs/claims.md)")
    ap.add_argument("--records", default=None, metavar="PATH",
                    help="write every replicate's intervals as JSON lines")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    tallies: list[Tally] = []
    records: list[dict[str, Any]] | None = [] if a.records else None
    for d in select(a.only):
        tallies += tally(d, run_design(d, a.reps, a.seed, records=records))
        if records is not None:
            Path(a.records).write_text("".join(json.dumps(r) + "\n" for r in records),
                                       encoding="utf-8")
    seconds = time.perf_counter() - t0
    table = markdown(tallies, a.reps, a.seed, seconds)
    if a.markdown or not a.write_docs:
        print(table)
    if a.write_docs:
        if write_docs(Path(a.write_docs), table):
            print(f"wrote the table into {a.write_docs}", file=sys.stderr)
        else:
            print(f"{a.write_docs}: the markers are not there; nothing written (add\n{BEGIN}\n"
                  f"{END}\nwhere the table goes)", file=sys.stderr)
            if not a.markdown:
                print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
