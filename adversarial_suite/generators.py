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
    ``sharp`` (0.05 → 1.0 at ``t_grok``), ``gradual`` (a linear ramp whose 0.90 crossing is
    ``t_grok``), ``partial`` (plateau at 0.93: grokked, never fully generalized), ``never``
    (stays at 0.30), ``unsustained`` (groks, falls to 0.5 for ``fall_points`` logged points at
    ``t_fall``, then recovers), ``collapse`` (groks, then collapses to 0.5 for the last 20%).
metric (``metric_shape``)
    ``compress`` (rises to ``m_peak`` at ``t_peak``, falls linearly to ``floor`` at
    ``t_floor``, flat after), ``rebound`` (as compress, then undershoots to
    ``floor − undershoot`` and comes back at ``t_return``), ``late_collapse`` (as compress,
    then a second drop to ``floor2`` at ``t_collapse``), ``drift`` (as compress, then a slow
    linear drift of ``drift`` per 1000 steps), ``none`` (a shallow fall that is not
    compression: ``floor`` close to ``m_peak``), ``still_falling`` (the fall ends after the
    log does: too short to converge).
cadence
    ``uniform`` (every ``dt`` steps), ``log`` (log-spaced), ``sparse`` (every ``dt`` but with
    a deterministic third of the points dropped); the metric may be logged every
    ``metric_every`` accuracy points (different cadences → NaN rows).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

ACC_LOW = 0.05
#: Metric shapes with no settling time: no compression, a floor that keeps moving, or a fall
#: that outlasts the log.
NO_SETTLE_SHAPES = frozenset({"none", "drift", "late_collapse", "still_falling"})
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
            return np.full(t.shape, 0.30)
        if s == "gradual":
            # linear ramp 0.05 → 1.0 whose 0.90 crossing is exactly t_grok
            a = (0.90 - ACC_LOW) / (ACC_HIGH - ACC_LOW)
            t0 = self.t_grok - a * self.ramp
            x = np.clip((t - t0) / self.ramp, 0.0, 1.0)
            return ACC_LOW + (ACC_HIGH - ACC_LOW) * x
        hi = 0.93 if s == "partial" else ACC_HIGH
        acc = np.where(t >= self.t_grok, hi, ACC_LOW)
        if s == "unsustained" and self.t_fall is not None:
            end = self.t_fall + self.fall_points * self.dt
            acc = np.where((t >= self.t_fall) & (t < end), 0.5, acc)
        if s == "collapse":
            acc = np.where(t >= 0.8 * self.length, 0.5, acc)
        return acc

    def train_acc(self, t: np.ndarray) -> np.ndarray:
        return np.where(np.asarray(t, dtype=float) >= self.t_mem, 1.0, 0.5)

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
        df = pd.DataFrame({
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
    def truth(self, grok_threshold: float = 0.90, rel_tol: float = 0.05) -> RunTruth:
        """What the log says by construction (for the default thresholds of its shapes)."""
        g = self.grid()
        acc_steps = g[np.arange(g.size) % self.acc_every == 0]
        acc_steps = np.unique(np.r_[acc_steps, g[-1]])
        met_steps = g[np.arange(g.size) % self.metric_every == 0]
        met_steps = np.unique(np.r_[met_steps, g[-1]])
        grokked = self.acc_shape != "never" and self.t_grok <= acc_steps[-1]
        if self.acc_shape == "gradual":
            # continuous crossing of the configured threshold
            a = (grok_threshold - ACC_LOW) / (ACC_HIGH - ACC_LOW)
            t0 = self.t_grok - (0.90 - ACC_LOW) / (ACC_HIGH - ACC_LOW) * self.ramp
            tg_true = t0 + a * self.ramp
        else:
            tg_true = self.t_grok
        settles = grokked and self.metric_shape in ("compress", "rebound")
        F = self.floor
        delta = rel_tol * abs(F)
        t_in = math.nan
        if settles:
            if self.metric_shape == "rebound":
                td = self.t_dip if self.t_dip is not None else self.t_floor + 500
                tr = self.t_return if self.t_return is not None else td + 1000
                # the undershoot comes back inside the band delta below the floor
                t_in = tr - (tr - td) * delta / self.undershoot if self.undershoot > delta \
                    else self.t_floor
            else:
                drop = self.m_peak - F
                t_in = self.t_floor - (self.t_floor - self.peak_time) * delta / drop
            # a settle inside the final window is censored by the spec: not a settled truth
            if t_in >= met_steps[-1] - 0.25 * (met_steps[-1] - met_steps[0]):
                settles = False
        interval = float(np.max(np.diff(met_steps))) if met_steps.size > 1 else float(self.dt)
        acc_interval = float(np.max(np.diff(acc_steps))) if acc_steps.size > 1 else float(self.dt)
        clean = (bool(settles) and self.metric_shape == "compress" and self.noise == 0
                 and self.cadence == "uniform" and self.metric_every == 1
                 and self.acc_every == 1 and self.acc_shape in ("sharp", "gradual")
                 and max(self.t_floor, tg_true) <= 0.6 * self.length)
        return RunTruth(
            run=self.run, grokked=bool(grokked), t_grok=float(tg_true),
            no_t_compress=(not grokked) or self.metric_shape in NO_SETTLE_SHAPES,
            clean=clean,
            settles=bool(settles), t_settle=float(t_in) if settles else math.nan,
            floor=F if self.metric_shape in ("compress", "rebound", "none") else math.nan,
            compresses=self.metric_shape != "none",
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


def settle_step(spec: RunSpec, rel_tol: float = 0.05, smooth: int = 3) -> tuple[int, int] | None:
    """The spec's settling step, worked out by hand on the noise-free logged metric.

    A direct transcription of AUDIT_SPEC §1 (rule ``settle``), written as a plain loop so that
    it shares no code with the audit: trailing median of ``smooth`` points, the band
    ``floor ± rel_tol·|floor|`` around the constructed floor, and the step after the last
    exit. Returns ``(value, lower)`` (``lower`` = the last logged step outside the band), or
    None when the smoothed metric never settles.
    """
    g = spec.grid()
    k = np.arange(g.size)
    on = (k % spec.metric_every == 0)
    on[-1] = True
    steps = [int(s) for s in g[on]]
    vals = [float(v) for v in spec.metric(g[on])]
    F = spec.floor if spec.metric_shape != "late_collapse" else float(spec.floor2 or 0.0)
    d = rel_tol * abs(F)
    sm = []
    for i in range(len(vals)):
        w = sorted(vals[max(0, i - smooth + 1): i + 1])
        n = len(w)
        sm.append(w[n // 2] if n % 2 else 0.5 * (w[n // 2 - 1] + w[n // 2]))
    last_out = -1
    for i, v in enumerate(sm):
        if not (F - d <= v <= F + d):
            last_out = i
    if last_out == len(sm) - 1:
        return None
    lower = steps[last_out] if last_out >= 0 else 0
    return steps[last_out + 1], lower


def band_margin(spec: RunSpec, rel_tol: float = 0.05) -> float:
    """The smallest distance of a logged noise-free metric value from a band edge, in units
    of the band half-width: a case whose margin is tiny would test float rounding, not the
    audit, so the named cases keep it above 1%."""
    g = spec.grid()
    v = spec.metric(g)
    F = spec.floor
    d = rel_tol * abs(F)
    return float(np.min(np.minimum(np.abs(v - (F + d)), np.abs(v - (F - d)))) / d)
