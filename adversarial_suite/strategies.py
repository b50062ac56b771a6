"""Hypothesis strategies that build grokking logs with a known true answer.

Each strategy is a standalone ``@st.composite`` function; they compose: :func:`metric_shapes`
and :func:`accuracy_shapes` feed :func:`run_specs`, which :func:`studies` calls once per seed
of each cell. A drawn :class:`Study` carries its specs, the audit options it needs, and the
truth of every run (:class:`~.generators.RunTruth`).

Times are drawn as integers plus one half, so that no true event falls exactly on a logged
step (which would test float rounding at the threshold, not the audit).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import strategies as st

from .generators import RunSpec, RunTruth, table, with_levels

LENGTH = 10_000
ACC_SHAPES = ("sharp", "gradual", "partial", "never", "unsustained", "collapse")
METRIC_SHAPES = ("compress", "rebound", "late_collapse", "drift", "none", "still_falling")
CADENCES = ("uniform", "log", "sparse")
ORDER_PATTERNS = ("same", "opposite", "tied", "censored", "random")


@dataclass(frozen=True)
class Study:
    """A drawn study: its runs' specs, the options to audit it with, and the truth."""

    specs: tuple[RunSpec, ...]
    axis: str = "rho"
    pattern: str = "random"  #: how t_grok and t_compress were ordered along the axis

    def table(self) -> pd.DataFrame:
        return table(self.specs)

    def for_config(self, cfg: Any = None) -> Study:
        """The same study with its accuracy levels placed relative to ``cfg``'s grok, full and
        mem thresholds (:func:`~.generators.acc_levels`): a drawn "partial" plateau then lies
        between the user's grok and full thresholds, a "never" run below both."""
        return replace(self, specs=tuple(with_levels(s, cfg) for s in self.specs))

    def truths(self, cfg: Any = None) -> dict[str, RunTruth]:
        """Every run's truth under ``cfg`` (None = the defaults); see
        :meth:`~.generators.RunSpec.truth`."""
        return {s.run: s.truth(cfg) for s in self.for_config(cfg).specs}

    @property
    def options(self) -> dict[str, Any]:
        return {"by": self.axis}


def _half(draw: st.DrawFn, lo: int, hi: int) -> float:
    return draw(st.integers(lo, hi)) + 0.5


@st.composite
def accuracy_shapes(draw: st.DrawFn) -> str:
    """Mostly a sharp grok; sometimes a gradual one, a partial plateau, none, a grok that is
    not sustained, or a late collapse."""
    return draw(st.sampled_from(ACC_SHAPES[:2]) | st.sampled_from(ACC_SHAPES))


@st.composite
def metric_shapes(draw: st.DrawFn) -> str:
    """Mostly compression to a floor; also a rebound, a late second collapse, a slow drift,
    no compression, and a fall that outlasts the log."""
    return draw(st.sampled_from(("compress",)) | st.sampled_from(METRIC_SHAPES))


@st.composite
def cadences(draw: st.DrawFn) -> dict[str, Any]:
    """The logging cadence: ``dt``, uniform/log/sparse, and a sparser metric or accuracy."""
    dt = draw(st.sampled_from((50, 100, 200)))
    cadence = draw(st.sampled_from(("uniform", "uniform", "log", "sparse")))
    metric_every = acc_every = 1
    if cadence == "uniform":
        which = draw(st.sampled_from(("same", "same", "metric_sparser", "acc_sparser")))
        if which == "metric_sparser":
            metric_every = draw(st.sampled_from((2, 4)))
        elif which == "acc_sparser":
            acc_every = 2
    return {"dt": dt, "cadence": cadence, "metric_every": metric_every, "acc_every": acc_every}


@st.composite
def run_specs(draw: st.DrawFn, run: str = "r", conditions: dict[str, Any] | None = None,
              t_grok: float | None = None, t_floor: float | None = None,
              cadence: dict[str, Any] | None = None) -> RunSpec:
    """One run. ``t_grok``/``t_floor`` fix the clocks (a study's ordering); the shapes,
    noise and peak are drawn."""
    cad = cadence if cadence is not None else draw(cadences())
    tg = t_grok if t_grok is not None else _half(draw, 500, 5000)
    acc = draw(accuracy_shapes())
    shape = draw(metric_shapes())
    m_peak = float(draw(st.integers(20, 60)))
    floor = float(draw(st.integers(4, int(m_peak * 0.6))))
    tf = t_floor if t_floor is not None else tg + _half(draw, -400, 3000)
    t_peak = min(tg, tf - 200.0)
    t_peak = max(t_peak, 100.0)
    tf = max(tf, t_peak + 200.0)
    kw: dict[str, Any] = {}
    if shape == "compress":
        tf = min(tf, 0.65 * LENGTH)
    elif shape == "rebound":
        tf = min(tf, 0.45 * LENGTH)
        td = tf + _half(draw, 200, 800)
        tr = td + _half(draw, 300, 1000)
        kw = {"undershoot": floor * draw(st.sampled_from((0.2, 0.3, 0.4))), "t_dip": td,
              "t_return": tr}
    elif shape == "late_collapse":
        tf = min(tf, 0.6 * LENGTH)
        kw = {"floor2": floor * draw(st.sampled_from((0.5, 0.6, 0.75))),
              "t_collapse": _half(draw, int(0.86 * LENGTH), int(0.885 * LENGTH))}
    elif shape == "drift":
        tf = min(tf, 0.4 * LENGTH)
        # a slide of 4–8 band half-widths per 1000 steps, down or up
        sign = draw(st.sampled_from((-1.0, 1.0)))
        kw = {"drift": sign * floor * 0.05 * draw(st.sampled_from((4.0, 6.0, 8.0)))}
        if sign < 0:  # keep the metric positive to the end
            kw["drift"] = max(kw["drift"], -0.6 * floor / ((LENGTH - tf) / 1000.0))
            kw["drift"] = min(kw["drift"], -floor * 0.05 * 3.0)
    elif shape == "none":
        tf = min(tf, 0.6 * LENGTH)
        floor = m_peak * draw(st.sampled_from((0.82, 0.88, 0.95)))
    elif shape == "still_falling":
        # steep enough that the last tenth of the log falls by > 3 band half-widths: the
        # spec's tolerance calls a slower slide (under δ per final window) settled
        tf = _half(draw, int(1.05 * LENGTH), int(1.3 * LENGTH))
        floor = 0.2 * m_peak
    noise = 0.0
    if shape in ("compress", "none") and draw(st.booleans()):
        noise = floor * 0.05 * draw(st.sampled_from((0.02, 0.05, 0.1)))
    spec = RunSpec(run=run, conditions=dict(conditions or {}), t_grok=tg,
                   t_mem=min(300.0, tg), acc_shape=acc, metric_shape=shape,
                   m_start=0.75 * m_peak, m_peak=m_peak, t_peak=t_peak, floor=floor,
                   t_floor=tf, noise=noise, noise_seed=draw(st.integers(0, 2**16)),
                   length=LENGTH, **cad, **kw)
    if acc == "unsustained":
        # the fall starts just before the second logged accuracy point after the grok, so
        # the grok itself is seen (a grok that ends between two logged points is not in the
        # log, and t_grok is the first *logged* crossing)
        acc_steps = spec.grid()[:: spec.acc_every]
        k = int(np.searchsorted(acc_steps, tg))
        if k + 1 < acc_steps.size:
            spec = replace(spec, t_fall=float(acc_steps[k + 1]) - 0.5)
    return spec


@st.composite
def studies(draw: st.DrawFn, min_cells: int = 1, max_cells: int = 4, max_seeds: int = 3,
            patterns: tuple[str, ...] = ORDER_PATTERNS) -> Study:
    """Cells along ``rho`` with a chosen ordering of ``t_grok`` and ``t_compress``: the same
    direction, opposite, tied (within one logged step), censored (a fall that outlasts the
    log), or random. Each cell has 1–``max_seeds`` seeds that share its clocks up to a
    jitter smaller than the cadence."""
    n_cells = draw(st.integers(min_cells, max_cells))
    n_seeds = draw(st.integers(1, max_seeds))
    pattern = draw(st.sampled_from(patterns))
    cad = draw(cadences())
    dt = cad["dt"]
    base_g = _half(draw, 600, 2000)
    step_g = float(draw(st.integers(3, 8)) * dt)
    lag0 = float(draw(st.integers(2, 20)) * dt)
    specs: list[RunSpec] = []
    for i in range(n_cells):
        rho = float(i + 1)
        if pattern == "tied":
            tg, tf = base_g, base_g + lag0
        elif pattern == "same":
            tg, tf = base_g + i * step_g, base_g + i * step_g + lag0
        elif pattern == "opposite":
            tg = base_g + i * step_g
            tf = base_g + (n_cells - 1 - i) * step_g * 2 + lag0 + (n_cells - 1) * step_g
        elif pattern == "censored":
            tg, tf = base_g + i * step_g, _half(draw, int(1.05 * LENGTH), int(1.3 * LENGTH))
        else:
            tg, tf = _half(draw, 500, 5000), _half(draw, 600, 6000)
        for k in range(n_seeds):
            jitter = float(draw(st.integers(-dt // 4, dt // 4)))
            spec = draw(run_specs(run=f"rho={rho}/s{k}", conditions={"rho": rho, "seed": k},
                                  t_grok=tg + jitter, t_floor=tf + jitter, cadence=cad))
            if pattern == "censored":
                spec = replace(spec, metric_shape="still_falling", t_floor=tf + jitter,
                               floor=0.2 * spec.m_peak, noise=0.0)
            specs.append(spec)
    return Study(specs=tuple(specs), pattern=pattern)


# ------------------------------------------------------------------------------------------
# studies with a pre-computed verdict
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ExpectedStudy:
    """What a correct audit must say about a :func:`clock_studies` log, derived from the
    construction by the rules of AUDIT_SPEC §1–§3 (first-passage steps, the settling step of
    the noise-free metric, Kendall pair counts, the clock-verdict table)."""

    t_grok: dict[float, tuple[float, float]]  #: cell → (lower, value) of the logged t_grok
    t_compress: dict[float, tuple[float, float]]  #: cell → (lower, value)
    counts: dict[str, tuple[int, int, int]]  #: quantity → (C, D, U)
    median_rel_lag: float
    verdict: Any  #: a Reason


@st.composite
def clock_studies(draw: st.DrawFn) -> tuple[Study, ExpectedStudy | None]:
    """3–4 clean cells (sharp grok, linear compression to a shared floor, no noise, one
    cadence) whose t_grok and t_compress are ordered along ``rho`` the same way, opposite,
    tied or at random, with the verdict a correct audit must give under the default thresholds
    (None when the construction does not settle cleanly; :func:`expected_clock_study` works it
    out under any config)."""
    n_cells = draw(st.integers(3, 4))
    n_seeds = draw(st.integers(1, 3))
    dt = draw(st.sampled_from((50, 100, 200)))
    pattern = draw(st.sampled_from(("same", "opposite", "tied", "random")))
    specs: list[RunSpec] = []
    base_g = _half(draw, 500, 2500)
    step_g = float(draw(st.integers(0, 6)) * dt)
    lag0 = float(draw(st.integers(1, 30)) * dt)
    for i in range(n_cells):
        rho = float(i + 1)
        if pattern == "tied":
            tg, tf = base_g + float(draw(st.integers(0, dt // 3))), base_g + lag0
        elif pattern == "same":
            tg, tf = base_g + i * step_g, base_g + i * step_g + lag0
        elif pattern == "opposite":
            tg, tf = base_g + i * step_g, base_g + lag0 + (n_cells - i) * 2 * step_g
        else:
            tg, tf = _half(draw, 300, 4000), _half(draw, 400, 6000)
        tf = min(max(tf, tg - 1500.0, 400.5), 0.6 * LENGTH)
        spec = RunSpec("x", t_grok=tg, t_mem=min(300.0, tg), m_start=30.0, m_peak=40.0,
                       t_peak=max(min(tg, tf - 200.0), 100.0), floor=10.0, t_floor=tf, dt=dt,
                       length=LENGTH)
        for s in range(n_seeds):
            specs.append(replace(spec, run=f"rho={rho}/s{s}",
                                 conditions={"rho": rho, "seed": s}))
    study = Study(specs=tuple(specs), pattern=pattern)
    return study, expected_clock_study(study)


def expected_clock_study(study: Study, cfg: Any = None) -> ExpectedStudy | None:
    """What a correct audit must say about a :func:`clock_studies` log under ``cfg``'s
    thresholds (None = the defaults): each cell's logged t_grok, its settling step by the
    plain-loop oracle (``rel_tol``, ``abs_tol``, ``smooth``), the Kendall counts, and the verdict
    (``large_lag``, ``mono_threshold``, ``flat_threshold``). None when the construction does
    not settle cleanly under ``cfg`` (a settle inside the final windows, a drop too small for
    ``min_rel_drop``, a smoothed value on a band edge): the property then says nothing."""
    from grokaudit import AuditConfig

    from .generators import drop_ratio, settle_margin, settle_step, spec_windows
    from .oracle import Iv, clock_verdict, ordering, rel_lags

    cfg = cfg if cfg is not None else AuditConfig()
    study = study.for_config(cfg)
    tgs: dict[float, tuple[float, float]] = {}
    tcs: dict[float, tuple[float, float]] = {}
    run_g: list[Iv] = []
    run_c: list[Iv] = []
    for spec in study.specs:
        rho = float(spec.conditions["rho"])
        if rho not in tgs:
            grid = spec.grid()
            st_ = settle_step(spec, cfg.rel_tol, cfg.smooth, abs_tol=cfg.abs_tol)
            win = spec_windows(spec, cfg)
            if st_ is None or win is None or st_[0] >= win.w2_lo or win.w1_lo < spec.t_floor:
                return None
            ratio, drop = drop_ratio(spec, cfg)
            if not (ratio >= cfg.min_rel_drop + 0.02 and drop >= 1.02 * cfg.min_abs_drop):
                return None
            if settle_margin(spec, cfg.rel_tol, cfg.smooth, abs_tol=cfg.abs_tol) < 0.005:
                return None
            k = int(np.searchsorted(grid, spec.t_grok))
            tgs[rho] = (float(grid[k - 1]) if k > 0 else 0.0, float(grid[k]))
            tcs[rho] = (float(st_[1]), float(st_[0]))
        run_g.append(Iv(*tgs[rho]))
        run_c.append(Iv(*tcs[rho]))
    lo, hi = rel_lags(run_g, run_c)
    cells = sorted(tgs)
    og = ordering([Iv(*tgs[c]) for c in cells], cfg)
    oc = ordering([Iv(*tcs[c]) for c in cells], cfg)
    counts = {q: (o.concordant, o.discordant, o.unidentified)
              for q, o in (("t_grok", og), ("t_compress", oc))}
    verdict = clock_verdict(og, oc, lo, hi, 0, cfg)
    return ExpectedStudy(tgs, tcs, counts, float(np.median(lo)), verdict)
