"""Hand-built trajectories whose true answer is known by construction.

Metrics are piecewise constant so that the trailing median of 3 points is exact: a step down
from level a to level b at logged step s is seen by the smoothed series one logged point
later (the median of (a, b, b) is b).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

CAD = 100  # default logging cadence, steps
END = 40_000


def grid(end: int = END, cad: int = CAD) -> np.ndarray:
    return np.arange(0, end + 1, cad, dtype=np.int64)


def step_acc(steps: np.ndarray, t_grok: float | None, hi: float = 1.0, lo: float = 0.05
             ) -> np.ndarray:
    """Accuracy ``lo`` before ``t_grok`` and ``hi`` from it on (never if ``t_grok`` is None)."""
    if t_grok is None:
        return np.full(steps.shape, lo)
    return np.where(steps >= t_grok, hi, lo)


def piecewise(steps: np.ndarray, levels: Sequence[tuple[float, float]]) -> np.ndarray:
    """``levels`` = [(from_step, value), ...] ascending: the value from each step on."""
    out = np.full(steps.shape, np.nan)
    for start, v in levels:
        out[steps >= start] = v
    return out


def run_frame(run: str, steps: np.ndarray, test_acc: np.ndarray, metric: np.ndarray,
              train_acc: np.ndarray | None = None, metric_name: str = "emb_erank",
              **conds: object) -> pd.DataFrame:
    d = {"run": run, "step": steps, "test_acc": test_acc,
         "train_acc": np.ones(steps.shape) if train_acc is None else train_acc,
         metric_name: metric}
    df = pd.DataFrame(d)
    for k, v in conds.items():
        df[k] = v
    return df


def compressing_run(run: str, t_grok: int | None, t_settle: int, *, peak: float = 40.0,
                    mid: float | None = None, floor: float = 10.0, acc_hi: float = 1.0,
                    end: int = END, cad: int = CAD, **conds: object) -> pd.DataFrame:
    """Metric ``peak`` until ``t_grok``, ``mid`` until ``t_settle``, then ``floor`` to the end.

    The settling time under rule ``settle`` is ``t_settle + cad`` (one point of smoothing
    delay), interval ``(t_settle, t_settle + cad]``.
    """
    s = grid(end, cad)
    mid = (peak + floor) / 2 if mid is None else mid
    tg = t_grok if t_grok is not None else end + 1
    m = piecewise(s, [(0, peak), (tg, mid), (t_settle, floor)])
    return run_frame(run, s, step_acc(s, t_grok, hi=acc_hi), m, **conds)


def flat_run(run: str, t_grok: int | None, level: float = 40.0, *, acc_hi: float = 1.0,
             end: int = END, cad: int = CAD, **conds: object) -> pd.DataFrame:
    """A run whose metric never compresses."""
    s = grid(end, cad)
    return run_frame(run, s, step_acc(s, t_grok, hi=acc_hi), np.full(s.shape, level), **conds)


def study(cells: dict[float, Sequence[pd.DataFrame]]) -> pd.DataFrame:
    return pd.concat([df for runs in cells.values() for df in runs], ignore_index=True)


def cells_from(spec: Sequence[tuple[float, int, int]], seeds: int = 3, axis: str = "rho",
               **kw: object) -> pd.DataFrame:
    """Cells ``(axis_value, t_grok, t_settle)`` with ``seeds`` identical runs each."""
    frames = []
    for a, tg, ts in spec:
        for s in range(seeds):
            frames.append(compressing_run(f"{axis}{a}_s{s}", tg, ts, seed=s, **{axis: a}, **kw))
    return pd.concat(frames, ignore_index=True)


def censored_study() -> pd.DataFrame:
    """Four cells that grok and compress (two tied), one that never compresses (flat at 40),
    and one whose floor is still moving when the log ends (a late second collapse: its
    t_compress is censored)."""
    frames = [cells_from([(1.0, 2000, 9000), (1.1, 2000, 9000), (1.2, 3000, 12_000),
                          (1.3, 2500, 8000)])]
    frames += [flat_run(f"f{s}", 3000, level=40.0, rho=1.4, seed=s) for s in range(3)]
    s = grid()
    late = piecewise(s, [(0, 40), (3000, 20), (37_000, 10)])
    frames += [run_frame(f"c{k}", s, step_acc(s, 2600), late, rho=1.5, seed=k)
               for k in range(3)]
    return pd.concat(frames, ignore_index=True)
