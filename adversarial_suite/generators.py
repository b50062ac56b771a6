"""Ground-truth generators: synthetic grokking logs built from known parameters.

A run is described by a :class:`RunSpec` (when it memorizes and groks, the shape of its
accuracy curve, the shape of its metric curve, its logging cadence and length). From the spec
the generator writes the logged rows *and* the truth: the continuous-time moment ``test_acc``
crosses the grok threshold, whether the metric settles on a stable floor, where that floor is,
and the continuous-time moment the noise-free metric enters its band for good. Nothing here
calls the audit: the truth comes from the construction, so the audit can be checked against it.

Shapes
------
accuracy (``acc_shape``)
    ``sharp`` (``acc_low`` → 1.0 at ``t_grok``), ``gradual`` (a linear ramp whose 0.90 crossing
    is ``t_grok``), ``partial`` (plateau at ``acc_partial``: grokked, never fully generalized),
    ``never`` (stays at ``acc_never``), ``unsustained`` (groks, falls to ``acc_fall`` for
    ``fall_points`` logged points at ``t_fall``, then recovers), ``collapse`` (groks, then
    collapses to ``acc_fall`` for the last 20%). The levels default to 0.05, 0.93, 0.30 and 0.5
    (train_acc starts at ``train_low`` = 0.5); :func:`acc_levels` places them relative to a
    config's grok, full and mem thresholds, so that each shape means what it says under any
    valid thresholds (a "partial" plateau lies between grok_threshold and full_threshold).
metric (``metric_shape``)
    ``compress`` (rises to ``m_peak`` at ``t_peak``, falls linearly to ``floor`` at
    ``t_floor``, flat after), ``rebound`` (as compress, then undershoots to
    ``floor − undershoot`` and comes back at ``t_return``), ``late_collapse`` (as compress,
    then a second drop to ``floor2`` at ``t_collapse``), ``drift`` (as compress, then a slow
    linear drift of ``drift`` per 1000 steps), ``none`` (a shallow fall that is not
    compression: ``floor`` close to ``m_peak``), ``still_falling`` (the fall ends after the
    log does: too short to converge), ``still_rising`` (the rise to ``m_peak`` ends after the
    log does: a norm that only grows).
cadence
    ``uniform`` (every ``dt`` steps), ``log`` (log-spaced), ``sparse`` (every ``dt`` but with
    a deterministic third of the points dropped); the metric may be logged every
    ``metric_every`` accuracy points (different cadences → NaN rows).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from grokaudit.config import AuditConfig

ACC_LOW = 0.05
#: Metric shapes with no settling time: no compression, a floor that keeps moving, or a fall
#: that outlasts the log.
NO_SETTLE_SHAPES = frozenset({"none", "drift", "late_collapse", "still_falling", "still_rising"})
ACC_HIGH = 1.0


@dataclass(frozen=True)
class RunSpec:
    """One run, from its known parameters. Times are optimizer steps."""

    run: str
    conditions: dict[str, Any] = field(default_factory=dict)
    # -- accuracy ---------------------------------------------------------------------------
    t_grok: float = 2000.0  #: when test_acc crosses 0.90 (continuous time)
    t_mem: float = 500.0  #: when train_acc reaches 1.0
    acc_shape: str = "sharp"
    ramp: float = 400.0  #: width of the ``gradual`` ramp, steps
    t_fall: float | None = None  #: ``unsustained``: when test_acc drops
    fall_points: int = 4
    acc_low: float = 0.05  #: test_acc before grok (below grok_threshold)
    acc_never: float = 0.30  #: ``never``: below grok_threshold and full_threshold
    acc_partial: float = 0.93  #: ``partial``: at or above grok, below full_threshold
    acc_fall: float = 0.5  #: ``unsustained``/``collapse``: below grok_threshold
    train_low: float = 0.5  #: train_acc before t_mem (below mem_threshold)
    # -- metric -----------------------------------------------------------------------------
    metric_shape: str = "compress"
    m_start: float = 30.0
    m_peak: float = 40.0
    t_peak: float | None = None  #: default: ``t_grok``
    floor: float = 10.0
    t_floor: float = 4000.0  #: when the linear fall reaches the floor
    undershoot: float = 3.0  #: ``rebound``: depth below the floor
    t_dip: float | None = None  #: ``rebound``: when the undershoot is deepest
    t_return: float | None = None  #: ``rebound``: when it is back on the floor
    floor2: float | None = None  #: ``late_collapse``: the second floor
    t_collapse: float | None = None
    drift: float = 0.0  #: ``drift``: metric units per 1000 steps after ``t_floor``
    noise: float = 0.0  #: Gaussian noise sd on the metric (seeded by ``noise_seed``)
    noise_seed: int = 0
    # -- logging ----------------------------------------------------------------------------
    dt: int = 100
    length: int = 10000  #: last logged step
    cadence: str = "uniform"
    metric_every: int = 1  #: metric logged on every k-th accuracy point
    acc_every: int = 1  #: accuracy logged on every k-th point of the grid
    metric_name: str = "emb_erank"
    metric_gap: tuple[float, float] | None = None  #: metric not logged in this open range

    # ----------------------------------------------------------------------------------------
    @property
    def peak_time(self) -> float:
        return self.t_grok if self.t_peak is None else self.t_peak

    def grid(self) -> np.ndarray:
        """Every logged step of the run (accuracy and metric together)."""
        if self.cadence == "log":
            n = max(8, self.length // self.dt)
            g = np.unique(np.round(np.geomspace(10, self.length, n)).astype(np.int64))
            return np.concatenate(([0], g))
        g = np.arange(0, self.length + 1, self.dt, dtype=np.int64)
        if self.cadence == "sparse":
            keep = (np.arange(g.size) % 3 != 1) | (g >= self.length - 0.3 * self.length)
            g = g[keep]
        return g

    # ----------------------------------------------------------------------------------------
    def test_acc(self, t: np.ndarray) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        s = self.acc_shape
        if s == "never":
            return np.full(t.shape, self.acc_never)
        lo = self.acc_low
        if s == "gradual":
            # linear ramp acc_low → 1.0 whose 0.90 crossing is exactly t_grok
            a = (0.90 - lo) / (ACC_HIGH - lo)
            t0 = self.t_grok - a * self.ramp
            x = np.clip((t - t0) / self.ramp, 0.0, 1.0)
            return lo + (ACC_HIGH - lo) * x
        hi = self.acc_partial if s == "partial" else ACC_HIGH
        acc = np.where(t >= self.t_grok, hi, lo)
        if s == "unsustained" and self.t_fall is not None:
            end = self.t_fall + self.fall_points * self.dt
            acc = np.where((t >= self.t_fall) & (t < end), self.acc_fall, acc)
        if s == "collapse":
            acc = np.where(t >= 0.8 * self.length, self.acc_fall, acc)
        return acc

    def train_acc(self, t: np.ndarray) -> np.ndarray:
        return np.where(np.asarray(t, dtype=float) >= self.t_mem, 1.0, self.train_low)

    def metric(self, t: np.ndarray) -> np.ndarray:
        """The noise-free metric at steps ``t``."""
        t = np.asarray(t, dtype=float)
        tp, F = self.peak_time, self.floor
        rise = self.m_start + (self.m_peak - self.m_start) * np.clip(t / max(tp, 1.0), 0, 1)
        fall = self.m_peak + (F - self.m_peak) * np.clip((t - tp) / (self.t_floor - tp), 0, 1)
        m = np.where(t <= tp, rise, fall)
        s = self.metric_shape
        if s == "rebound":
            td = self.t_dip if self.t_dip is not None else self.t_floor + 500
            tr = self.t_return if self.t_return is not None else td + 1000
            down = np.clip((t - self.t_floor) / (td - self.t_floor), 0, 1)
            up = np.clip((t - td) / (tr - td), 0, 1)
            m = m - self.undershoot * np.where(t <= td, down, 1 - up)
        elif s == "late_collapse":
            assert self.floor2 is not None and self.t_collapse is not None
            m = np.where(t >= self.t_collapse, self.floor2, m)
        elif s == "drift":
            m = m + self.drift * np.clip(t - self.t_floor, 0, None) / 1000.0
        return m

    # ----------------------------------------------------------------------------------------
    def rows(self) -> pd.DataFrame:
        """The logged rows of this run in the canonical table."""
        g = self.grid()
        k = np.arange(g.size)
        acc_on = k % self.acc_every == 0
        met_on = k % self.metric_every == 0
        if self.metric_gap is not None:
            met_on &= ~((g > self.metric_gap[0]) & (g < self.metric_gap[1]))
        acc_on[-1] = met_on[-1] = True  # both logged at the last step
        m = self.metric(g)
        if self.noise > 0:
            rng = np.random.default_rng(self.noise_seed)
            m = m + rng.normal(0.0, self.noise, size=m.shape)
        df: pd.DataFrame = pd.DataFrame({
            "run": self.run,
            "step": g.astype(np.int64),
            "test_acc": np.where(acc_on, self.test_acc(g), np.nan),
            "train_acc": np.where(acc_on, self.train_acc(g), np.nan),
            self.metric_name: np.where(met_on, m, np.nan),
        })
        for c, v in self.conditions.items():
            df[c] = v
        return df

    # ----------------------------------------------------------------------------------------
    def truth(self, cfg: AuditConfig | None = None) -> RunTruth:
        """What the log says by construction under the thresholds of ``cfg`` (an
        ``AuditConfig``; None = the defaults).

        The accuracy levels must lie on the right sides of the thresholds (:func:`with_levels`).
        Where the construction sits too close to one of ``cfg``'s thresholds for the answer to
        follow from it (a drop of about ``min_rel_drop``, a slide of about one band half-width
        over the final window), the truth abstains: it promises no compression time and rules
        none out (``settles``, ``clean`` and ``no_t_compress`` all False).
        """
        cfg = _config(cfg)
        g_thr = cfg.grok_threshold
        g = self.grid()
        acc_steps = g[np.arange(g.size) % self.acc_every == 0]
        acc_steps = np.unique(np.r_[acc_steps, g[-1]])
        met_steps, met_vals = metric_points(self)
        if self.acc_low >= g_thr:
            raise ValueError(f"{self.run}: acc_low {self.acc_low} is not below grok_threshold "
                             f"{g_thr}; build the spec with with_levels(spec, cfg)")
        top = self.acc_partial if self.acc_shape == "partial" else ACC_HIGH
        grokked = (self.acc_shape != "never" and top >= g_thr
                   and self.t_grok <= acc_steps[-1])
        if self.acc_shape == "gradual":
            # continuous crossing of the configured threshold on the ramp acc_low → 1.0
            lo = self.acc_low
            t0 = self.t_grok - (0.90 - lo) / (ACC_HIGH - lo) * self.ramp
            tg_true = t0 + (g_thr - lo) / (ACC_HIGH - lo) * self.ramp
        else:
            tg_true = self.t_grok
        interval = float(np.max(np.diff(met_steps))) if met_steps.size > 1 else float(self.dt)
        acc_interval = float(np.max(np.diff(acc_steps))) if acc_steps.size > 1 else float(self.dt)
        win = final_windows(met_steps, met_vals, float(g[0]), float(g[-1]), cfg)
        shape = self.metric_shape
        F = self.floor
        delta = band_delta(F, cfg)
        # -- how much the metric compresses, judged as the spec does (smoothed peak up to grok)
        comp = "unclear"
        if grokked and win is not None and shape in ("compress", "rebound", "none"):
            ratio, drop = drop_ratio(self, cfg, tg_true)
            if ratio < cfg.min_rel_drop - 0.02 or drop < 0.98 * cfg.min_abs_drop:
                comp = "none"
            elif ratio >= cfg.min_rel_drop + 0.02 and drop >= 1.02 * cfg.min_abs_drop:
                comp = "yes"
        # -- a floor that keeps moving: unstable when the final windows differ by more than δ
        moving = False
        if grokked and win is not None and shape in ("drift", "late_collapse", "still_falling"):
            d_w = band_delta(win.floor, cfg)
            if shape == "late_collapse" and self.t_collapse is not None \
                    and self.t_collapse >= win.w2_lo:
                moving = False  # the collapse inside W2 itself: not worked out here
            else:
                moving = abs(win.w1_median - win.floor) > 1.05 * d_w
        settles = grokked and comp == "yes" and shape in ("compress", "rebound", "none")
        t_in = math.nan
        if settles:
            if shape == "rebound":
                td = self.t_dip if self.t_dip is not None else self.t_floor + 500
                tr = self.t_return if self.t_return is not None else td + 1000
                # the undershoot comes back inside the band delta below the floor
                t_in = tr - (tr - td) * delta / self.undershoot if self.undershoot > delta \
                    else self.t_floor
            else:
                drop = self.m_peak - F
                t_in = self.t_floor - (self.t_floor - self.peak_time) * delta / drop \
                    if drop > delta else self.peak_time
            # a settle inside (or next to) the final windows is censored by the spec: not a
            # settled truth
            assert win is not None
            end = min(met_steps[-1] - 0.25 * (met_steps[-1] - met_steps[0]), win.w1_lo)
            if t_in >= end:
                settles = False
        no_t = (not grokked) or comp == "none" or moving
        clean = (bool(settles) and shape == "compress" and self.noise == 0
                 and self.cadence == "uniform" and self.metric_every == 1
                 and self.acc_every == 1 and self.acc_shape in ("sharp", "gradual")
                 and max(self.t_floor, tg_true) <= 0.6 * self.length
                 and win is not None
                 and max(self.t_floor, tg_true) + (cfg.smooth + 1) * interval <= win.w1_lo)
        return RunTruth(
            run=self.run, grokked=bool(grokked), t_grok=float(tg_true),
            no_t_compress=bool(no_t), clean=clean,
            settles=bool(settles), t_settle=float(t_in) if settles else math.nan,
            floor=F if shape in ("compress", "rebound", "none") else math.nan,
            compresses=comp != "none",
            metric_interval=interval, acc_interval=acc_interval,
            noise=self.noise,
            fall_rate=abs(self.m_peak - F) / max(self.t_floor - self.peak_time, 1.0),
        )


@dataclass(frozen=True)
class RunTruth:
    """The true answer for one run, known by construction."""

    run: str
    grokked: bool
    t_grok: float  #: continuous time test_acc crosses the grok threshold
    no_t_compress: bool  #: by construction there is no compression time to report
    clean: bool  #: a plain, noise-free settle well before the end: it must be reported
    settles: bool  #: the metric reaches a floor that stays flat to the end of the log
    t_settle: float  #: continuous time the noise-free metric enters the floor band for good
    floor: float  #: the converged floor (NaN when there is none)
    compresses: bool
    metric_interval: float  #: largest gap between logged metric points
    acc_interval: float  #: largest gap between logged accuracy points
    noise: float
    fall_rate: float  #: metric units per step of the linear fall

    def t_compress_tolerance(self, smooth: int = 3) -> float:
        """How far the reported settling step may lie from ``t_settle``: one logging interval
        for the cadence, ``smooth`` more for the trailing median, and the noise's reach."""
        extra = 4 * self.noise / self.fall_rate if self.noise and self.fall_rate else 0.0
        return self.metric_interval * (1 + smooth) + extra


def table(specs: Iterable[RunSpec]) -> pd.DataFrame:
    """The canonical table of several runs (rows ordered by run, then step)."""
    frames = [s.rows() for s in specs]
    return pd.concat(frames, ignore_index=True)


def cell_runs(axis: str, value: Any, n_seeds: int, base: RunSpec, *, prefix: str = "",
              extra: dict[str, Any] | None = None, **per_seed: Sequence[Any]) -> list[RunSpec]:
    """``n_seeds`` runs of one cell: ``base`` with ``axis = value`` and seeds 0..n−1.

    ``per_seed`` gives a field a different value per seed (``t_grok=[1000, 1100]``).
    """
    out = []
    for k in range(n_seeds):
        changes = {f: vals[k] for f, vals in per_seed.items()}
        cond = {axis: value, "seed": k, **(extra or {})}
        rid = f"{prefix}{axis}={value}/s{k}"
        out.append(replace(base, run=rid, conditions=cond, noise_seed=base.noise_seed + k,
                           **changes))
    return out


def step_of(steps: np.ndarray, t: float) -> int:
    """The first logged step at or after ``t`` (where an event at ``t`` is first seen)."""
    i = int(np.searchsorted(steps, t, side="left"))
    return int(steps[i])


def _config(cfg: AuditConfig | None = None) -> AuditConfig:
    """``cfg``, or the default config when None (imported late: nothing here runs the audit)."""
    if cfg is not None:
        return cfg
    from grokaudit.config import AuditConfig

    return AuditConfig()


def _below(nominal: float, *thresholds: float) -> float:
    """``nominal`` when it lies well below every threshold (at most two thirds of it), else
    half the lowest threshold."""
    t = min(thresholds)
    return nominal if nominal <= t / 1.5 else t / 2


def acc_levels(cfg: AuditConfig | None = None) -> dict[str, float]:
    """The accuracy levels of the shapes, placed relative to ``cfg``'s thresholds.

    Each low level keeps its design value (test_acc 0.05 before grok, 0.30 for ``never``, 0.5
    after a fall; train_acc 0.5 before t_mem) while that is at most two thirds of the threshold
    it must stay below (grok; ``never`` also full; train_acc mem), else half the threshold. A
    ``partial`` plateau sits at 0.93 when grok ≤ 0.93 < full, else halfway between the two
    thresholds (at the grok threshold when full ≤ grok). The defaults give the design levels.
    """
    cfg = _config(cfg)
    g, f, m = cfg.grok_threshold, cfg.full_threshold, cfg.mem_threshold
    if g <= 0.93 < f:
        partial = 0.93
    elif g < f:
        partial = 0.5 * (g + f)
    else:
        partial = g
    return {"acc_low": _below(0.05, g), "acc_never": _below(0.30, g, f),
            "acc_fall": _below(0.5, g), "acc_partial": partial, "train_low": _below(0.5, m)}


def with_levels(spec: RunSpec, cfg: AuditConfig | None = None) -> RunSpec:
    """``spec`` with its accuracy levels placed relative to ``cfg``'s thresholds."""
    levels: dict[str, Any] = acc_levels(cfg)  # RunSpec fields by name: replace cannot check them
    return replace(spec, **levels)


def band_delta(floor: float, cfg: AuditConfig | None = None) -> float:
    """The band half-width δ = max(abs_tol, rel_tol·|floor|) of ``cfg``."""
    cfg = _config(cfg)
    delta: float = max(cfg.abs_tol, cfg.rel_tol * abs(floor))
    return delta


def metric_points(spec: RunSpec, noise: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The logged metric steps and values of ``spec`` (noise-free unless ``noise``)."""
    g = spec.grid()
    k = np.arange(g.size)
    on = k % spec.metric_every == 0
    if spec.metric_gap is not None:
        on &= ~((g > spec.metric_gap[0]) & (g < spec.metric_gap[1]))
    on[-1] = True
    m = spec.metric(g)
    if noise and spec.noise > 0:
        rng = np.random.default_rng(spec.noise_seed)
        m = m + rng.normal(0.0, spec.noise, size=m.shape)
    return g[on].astype(float), m[on]


def _median(xs: Sequence[float]) -> float:
    w = sorted(xs)
    n = len(w)
    if n == 0:
        return math.nan
    return w[n // 2] if n % 2 else 0.5 * (w[n // 2 - 1] + w[n // 2])


def trailing_median(values: Iterable[float], smooth: int) -> list[float]:
    """Trailing median of ``smooth`` points (fewer at the start), as a plain loop."""
    vals = [float(v) for v in values]
    return [_median(vals[max(0, i - smooth + 1): i + 1]) for i in range(len(vals))]


@dataclass(frozen=True)
class Windows:
    """The final windows of one run's metric, by AUDIT_SPEC §1 (``floor_window = span``)."""

    w2_lo: float  #: first step of the final window W2
    w1_lo: float  #: first step of W1 (W1 = [w1_lo, w2_lo), as long as W2)
    floor: float  #: median of W2
    w1_median: float  #: median of W1 (NaN when W1 holds no point)
    n_w2: int


def final_windows(steps: Iterable[float], values: Iterable[float], first: float, last: float,
                  cfg: AuditConfig | None = None) -> Windows | None:
    """W2 (the last ``floor_frac`` of the step span ``[first, last]``, widened to the last
    ``min_floor_points`` points when it holds fewer, if those lie within ``max_floor_frac``) and
    W1 (the window as long just before it); None when the run has no floor. A plain loop that
    shares no code with the audit."""
    cfg = _config(cfg)
    st = [float(x) for x in steps]
    vs = [float(v) for v in values]
    n = len(st)
    span = last - first
    if n < cfg.min_floor_points or n == 0:
        return None
    target = last - cfg.floor_frac * span
    n_in = sum(1 for x in st if x >= target)
    if n_in >= cfg.min_floor_points:
        i0, w2_lo = n - n_in, target
    else:
        i0 = n - cfg.min_floor_points
        if st[i0] < last - cfg.max_floor_frac * span:
            return None
        w2_lo = st[i0]
    length = last - w2_lo
    w1_lo = w2_lo - length
    i1 = min(sum(1 for x in st if x < w1_lo), i0)
    return Windows(w2_lo=w2_lo, w1_lo=w1_lo, floor=_median(vs[i0:]),
                   w1_median=_median(vs[i1:i0]), n_w2=n - i0)


def spec_windows(spec: RunSpec, cfg: AuditConfig | None = None, noise: bool = False
                 ) -> Windows | None:
    """:func:`final_windows` of ``spec``'s logged metric."""
    steps, vals = metric_points(spec, noise)
    g = spec.grid()
    return final_windows(steps, vals, float(g[0]), float(g[-1]), cfg)


def drop_ratio(spec: RunSpec, cfg: AuditConfig | None = None, t_grok: float | None = None
               ) -> tuple[float, float]:
    """How much the noise-free metric compresses, as the spec judges it: ``(drop / peak,
    drop)`` with peak the largest smoothed value up to the logged grok step and drop = peak −
    the W2 floor. ``(nan, nan)`` when there is no floor or no metric point before grok."""
    cfg = _config(cfg)
    steps, vals = metric_points(spec)
    win = spec_windows(spec, cfg)
    tg = spec.t_grok if t_grok is None else t_grok
    g = spec.grid()
    acc = g[np.arange(g.size) % spec.acc_every == 0]
    i = int(np.searchsorted(acc, tg, side="left"))
    seen = float(acc[i]) if i < acc.size else float(g[-1])
    sm = trailing_median(vals, cfg.smooth)
    upto = [v for s_, v in zip(steps, sm) if s_ <= seen]
    if win is None or not upto:
        return math.nan, math.nan
    peak = max(upto)
    drop = peak - win.floor
    return (drop / abs(peak) if peak else math.nan), drop  # a share of the magnitude


def settle_step(spec: RunSpec, rel_tol: float = 0.05, smooth: int = 3, *, abs_tol: float = 0.0,
                floor: float | None = None) -> tuple[int, int] | None:
    """The spec's settling step, worked out by hand on the noise-free logged metric.

    A direct transcription of AUDIT_SPEC §1 (rule ``settle``), written as a plain loop so that
    it shares no code with the audit: trailing median of ``smooth`` points, the band
    ``floor ± max(abs_tol, rel_tol·|floor|)`` around the constructed floor (or ``floor``), and
    the step after the last exit. Returns ``(value, lower)`` (``lower`` = the last logged step
    outside the band), or None when the smoothed metric never settles.
    """
    steps_a, vals_a = metric_points(spec)
    steps = [int(s) for s in steps_a]
    if floor is not None:
        F = floor
    else:
        F = spec.floor if spec.metric_shape != "late_collapse" else float(spec.floor2 or 0.0)
    d = max(abs_tol, rel_tol * abs(F))
    sm = trailing_median(vals_a, smooth)
    last_out = -1
    for i, v in enumerate(sm):
        if not (F - d <= v <= F + d):
            last_out = i
    if last_out == len(sm) - 1:
        return None
    lower = steps[last_out] if last_out >= 0 else 0
    return steps[last_out + 1], lower


def settle_margin(spec: RunSpec, rel_tol: float = 0.05, smooth: int = 3, *,
                  abs_tol: float = 0.0, floor: float | None = None) -> float:
    """The smallest distance of a smoothed noise-free metric value from a band edge, in units of
    the band half-width (values exactly on the floor count as far inside): a construction whose
    margin is tiny would test float rounding, not the audit."""
    _, vals = metric_points(spec)
    if floor is not None:
        F = floor
    else:
        F = spec.floor if spec.metric_shape != "late_collapse" else float(spec.floor2 or 0.0)
    d = max(abs_tol, rel_tol * abs(F))
    unit = d if d > 0 else 1e-6 * max(abs(F), 1.0)
    out = math.inf
    for v in trailing_median(vals, smooth):
        if v == F:
            continue
        out = min(out, abs(v - (F + d)) / unit, abs(v - (F - d)) / unit)
    return out


def band_margin(spec: RunSpec, rel_tol: float = 0.05) -> float:
    """The smallest distance of a logged noise-free metric value from a band edge, in units
    of the band half-width: a case whose margin is tiny would test float rounding, not the
    audit, so the named cases keep it above 1%."""
    g = spec.grid()
    v = spec.metric(g)
    F = spec.floor
    d = rel_tol * abs(F)
    return float(np.min(np.minimum(np.abs(v - (F + d)), np.abs(v - (F - d)))) / d)
